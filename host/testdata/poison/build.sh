#!/usr/bin/env bash
# Rebuilds the poison-tuple bolts (host/testdata/poison/<lang>.wasm) from
# source, reproducibly. Run from anywhere. Each upper-cases lines and
# fails on a line holding "poison" (docs/delivery.md, "A failing tuple").
# They keep their name section (trap reports name their functions), and
# the C one has DWARF line tables (-g: reports show file:line). Needs the
# toolchains of wasm-sdk/*/build.sh: Go, Debian's rustc with its
# wasm32-wasi std, clang with wasi-libc, and asc (npm ci in
# wasm-sdk/assemblyscript).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$root"
p=host/testdata/poison
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# raw: Go on the raw ABI (host/testdata/guestabi), no SDK.
GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -trimpath -buildmode=c-shared -o $p/raw.wasm ./$p/raw
# go: the Go SDK.
GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -trimpath -buildmode=c-shared -o $p/go.wasm ./$p/go
# gocount: the word count's count bolt with a poison word, the Go SDK.
GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 go build -trimpath -buildmode=c-shared -o $p/gocount.wasm ./$p/gocount

# rust: the Rust SDK, with wasm-sdk/rust/build.sh's flags but the symbols
# kept.
rustc=${RUSTC:-/usr/bin/rustc}
common=(--edition 2021 --target wasm32-wasi -C opt-level=3 -C panic=abort -C codegen-units=1 -C debuginfo=0)
"$rustc" "${common[@]}" --crate-type rlib --crate-name ardea --remap-path-prefix "$root/wasm-sdk/rust=ardea" --remap-path-prefix "$tmp=tmp" \
	-o "$tmp/libardea.rlib" wasm-sdk/rust/src/lib.rs
"$rustc" "${common[@]}" --crate-type cdylib --crate-name poison -C lto \
	--remap-path-prefix "$root/wasm-sdk/rust=ardea" --remap-path-prefix "$root/$p/rust=poison" --remap-path-prefix "$tmp=tmp" \
	--extern ardea="$tmp/libardea.rlib" -L "dependency=$tmp" -o "$tmp/poison.wasm" $p/rust/src/lib.rs
mv "$tmp/poison.wasm" $p/rust.wasm

# c: the C SDK, with wasm-sdk/c/build.sh's flags, not stripped, with -g.
${CLANG:-clang} --target=wasm32-wasi -mexec-model=reactor -O2 -g -I wasm-sdk/c/include "-ffile-prefix-map=$root=." \
	-Wl,--stack-first -Wl,-z,stack-size=1048576 -o $p/c.wasm $p/c/poison.c wasm-sdk/c/src/ardea.c

# assemblyscript: the AssemblyScript SDK, as wasm-sdk/assemblyscript/build.sh
# builds its modules.
as=wasm-sdk/assemblyscript
if [ ! -x "$as/node_modules/.bin/asc" ]; then
	(cd "$as" && npm ci --no-audit --no-fund)
fi
mkdir -p "$tmp/lib/ardea-sdk/assembly"
cp "$as/package.json" "$as/index.ts" "$as/exports.ts" "$tmp/lib/ardea-sdk/"
cp "$as"/assembly/*.ts "$tmp/lib/ardea-sdk/assembly/"
echo '{}' >"$tmp/asconfig.json"
mapfile -t flags < <(node -e 'for (const f of JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))) console.log(f)' "$as/asc-flags.json")
(cd $p/assemblyscript && "$root/$as/node_modules/.bin/asc" assembly/index.ts "${flags[@]}" \
	--config "$tmp/asconfig.json" --path "$tmp/lib" --noColors -o "$tmp/out.wasm")
mv "$tmp/out.wasm" $p/assemblyscript.wasm
