#!/usr/bin/env bash
# Rebuilds every AssemblyScript .wasm of the repository, reproducibly (asc
# embeds no paths; the same sources give the same bytes):
#   wasm-sdk/assemblyscript/testdata/{probe_bolt,probe_spout,abort}.wasm
#   examples/wordcount/assemblyscript/{split,count}.wasm
#   examples/polyglot/upper.wasm
# Runs `npm ci` here first if the compiler is not installed. Each module is
# compiled exactly as `ardea build DIR` does it (internal/build/assemblyscript.go):
#   asc assembly/index.ts <the flags in asc-flags.json> \
#     --config <empty> --path <dir holding ardea-sdk> --noColors -o OUT
# Usage: wasm-sdk/assemblyscript/build.sh   (from any directory)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

if [ ! -x "$here/node_modules/.bin/asc" ]; then
  (cd "$here" && npm ci --no-audit --no-fund)
fi
asc="$here/node_modules/.bin/asc"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/lib"
# The SDK package as ardea build lays it out (the files embed.go embeds).
mkdir -p "$tmp/lib/ardea-sdk/assembly"
cp "$here/package.json" "$here/index.ts" "$here/exports.ts" "$tmp/lib/ardea-sdk/"
cp "$here"/assembly/*.ts "$tmp/lib/ardea-sdk/assembly/"
echo '{}' > "$tmp/asconfig.json"
# The flags of asc-flags.json, as ardea build (embed.go's Flags) and the
# test harness use them.
mapfile -t flags < <(node -e 'for (const f of JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))) console.log(f)' "$here/asc-flags.json")

build() { # build SOURCE_DIR OUT.wasm
  local src=$1 out=$2
  echo "asc $src -> $out"
  (cd "$src" && "$asc" assembly/index.ts "${flags[@]}" \
    --config "$tmp/asconfig.json" --path "$tmp/lib" --noColors -o "$tmp/out.wasm")
  mv "$tmp/out.wasm" "$out"
}

for g in probe_bolt probe_spout abort; do
  build "$here/testdata/$g" "$here/testdata/$g.wasm"
done
for c in split count; do
  build "$root/examples/wordcount/assemblyscript/$c" "$root/examples/wordcount/assemblyscript/$c.wasm"
done
build "$root/examples/polyglot/upper" "$root/examples/polyglot/upper.wasm"
