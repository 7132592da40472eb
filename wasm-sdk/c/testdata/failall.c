/*
 * failall: a bolt that fails every input tuple and emits nothing (no trap):
 * a swapped-in version whose failure rate makes its canary roll back.
 * Build (wasm-sdk/c/build.sh), from the repository root:
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -I wasm-sdk/c/include -ffile-prefix-map=$PWD=. \
 *       -Wl,--strip-debug -Wl,--stack-first -Wl,-z,stack-size=1048576 \
 *       -o wasm-sdk/c/testdata/failall.wasm wasm-sdk/c/testdata/failall.c wasm-sdk/c/src/ardea.c
 */
#include "ardea.h"

static int execute(const ardea_tuple *t) {
    ardea_fail_tuple(t);
    return ARDEA_OK;
}

static const ardea_bolt bolt = {.execute = execute};

ARDEA_REGISTER_BOLT(bolt);
