#!/usr/bin/env bash
# Rebuilds every Rust .wasm this SDK owns, reproducibly, with Debian's
# rustc 1.63 and its wasm32-wasi std (apt-get install rustc
# libstd-rust-dev-wasm32):
#
#   wasm-sdk/rust/testdata/probe_bolt.wasm, probe_spout.wasm, command.wasm
#   examples/wordcount/rust/split.wasm, count.wasm
#
# Run from any directory: wasm-sdk/rust/build.sh
# RUSTC=/path/to/rustc overrides the compiler (it needs the wasm32-wasi
# target); ARDEA_WASM_OUT=DIR writes every module to DIR instead of next
# to its source (sdk_test.go compares them with the committed ones). The flags are the ones `ardea build` uses on its rustc path
# (internal/build/rust.go), so both give the same bytes.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rustc="${RUSTC:-/usr/bin/rustc}"
target=wasm32-wasi

if ! "$rustc" --print sysroot >/dev/null 2>&1; then
	echo "build.sh: $rustc not found: apt-get install rustc libstd-rust-dev-wasm32" >&2
	exit 1
fi
if [ ! -d "$("$rustc" --print sysroot)/lib/rustlib/$target" ]; then
	echo "build.sh: $rustc has no $target std: apt-get install libstd-rust-dev-wasm32" >&2
	exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

outdir="${ARDEA_WASM_OUT:-}"
# dest PATH: where a module goes.
dest() {
	if [ -n "$outdir" ]; then
		echo "$outdir/$(basename "$1")"
	else
		echo "$1"
	fi
}

# Shared flags: optimized, panics abort (the SDK's panic hook reports the
# message with ardea.error first), no debug info, source paths remapped
# so that the bytes do not depend on where the tree is checked out.
# Components are linked with -C strip=debuginfo, not strip=symbols: the
# wasm name section stays, so a trap's stack trace names the functions
# (about 16 KB more for the word count's bolts).
common=(--edition 2021 --target "$target" -C opt-level=3 -C panic=abort -C codegen-units=1 -C debuginfo=0)

# The SDK, once, as an rlib.
"$rustc" "${common[@]}" --crate-type rlib --crate-name ardea \
	--remap-path-prefix "$here=ardea" \
	-o "$tmp/libardea.rlib" "$here/src/lib.rs"

# component NAME SRCDIR OUT: a cdylib reactor using the SDK.
component() {
	local name="$1" dir="$2" out="$3"
	"$rustc" "${common[@]}" --crate-type cdylib --crate-name "$name" \
		-C lto -C strip=debuginfo \
		--remap-path-prefix "$here=ardea" --remap-path-prefix "$dir=$name" \
		--extern ardea="$tmp/libardea.rlib" -L "dependency=$tmp" \
		-o "$tmp/$name.wasm" "$dir/src/lib.rs"
	out="$(dest "$out")"
	mv "$tmp/$name.wasm" "$out"
	echo "built $out ($(wc -c <"$out") bytes)"
}

component split "$root/examples/wordcount/rust/split" "$root/examples/wordcount/rust/split.wasm"
component count "$root/examples/wordcount/rust/count" "$root/examples/wordcount/rust/count.wasm"
component probe_bolt "$here/testdata/probe_bolt" "$here/testdata/probe_bolt.wasm"
component probe_spout "$here/testdata/probe_spout" "$here/testdata/probe_spout.wasm"

# A valid bolt built as a WASI command (bin crate), which the host must
# refuse as not a reactor.
"$rustc" "${common[@]}" --crate-type bin --crate-name command -C lto -C strip=debuginfo \
	--remap-path-prefix "$here=ardea" --remap-path-prefix "$here/testdata/command=command" \
	--extern ardea="$tmp/libardea.rlib" -L "dependency=$tmp" \
	-o "$tmp/command.wasm" "$here/testdata/command/src/main.rs"
out="$(dest "$here/testdata/command.wasm")"
mv "$tmp/command.wasm" "$out"
echo "built $out ($(wc -c <"$out") bytes)"
