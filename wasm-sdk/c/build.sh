#!/usr/bin/env bash
# Rebuilds every .wasm of the C SDK: its test guests (testdata/) and the
# word-count example (examples/wordcount/c/). Run from any directory:
#
#   bash wasm-sdk/c/build.sh
#
# Needs Debian's clang, lld, wasi-libc and libclang-rt-14-dev-wasm32
# (apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32).
# Builds are reproducible: no debug info (--strip-debug; the name section
# stays, so a trap's stack names the functions), paths relative to the
# repository root (and -ffile-prefix-map for any absolute one), so a second
# run gives the same bytes. The flags are those of `ardea build` for C
# (internal/build/c.go); the word-count modules built by either are equal.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

CLANG="${CLANG:-clang}"
if ! command -v "$CLANG" >/dev/null 2>&1; then
    echo "build.sh: $CLANG not found; install: apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32" >&2
    exit 1
fi

sdk=wasm-sdk/c
flags=(-O2 -I "$sdk/include" "-ffile-prefix-map=$root=." -Wl,--strip-debug -Wl,--stack-first -Wl,-z,stack-size=1048576)

# reactor OUT [FLAG...] SRC...: a WASI reactor module of SRC and the SDK.
reactor() {
    local out="$1"
    shift
    echo "build $out" >&2
    "$CLANG" --target=wasm32-wasi -mexec-model=reactor "${flags[@]}" -o "$out" "$@" "$sdk/src/ardea.c"
}

reactor "$sdk/testdata/probe_bolt.wasm" "$sdk/testdata/probe_bolt.c"
reactor "$sdk/testdata/probe_spout.wasm" "$sdk/testdata/probe_spout.c"
reactor "$sdk/testdata/abort.wasm" "$sdk/testdata/abort.c"
reactor "$sdk/testdata/failall.wasm" "$sdk/testdata/failall.c"
reactor "$sdk/testdata/trap.wasm" "$sdk/testdata/trap.c"
reactor "$sdk/testdata/badabi.wasm" -DARDEA_TEST_ABI_VERSION=2 "$sdk/testdata/badabi.c"

# A WASI command (exports _start), which the host must refuse.
echo "build $sdk/testdata/command.wasm" >&2
"$CLANG" --target=wasm32-wasi "${flags[@]}" -o "$sdk/testdata/command.wasm" "$sdk/testdata/command.c" "$sdk/src/ardea.c"

reactor examples/wordcount/c/split.wasm examples/wordcount/c/split/split.c
reactor examples/wordcount/c/count.wasm examples/wordcount/c/count/count.c
