/*
 * abort: a bolt whose execute calls abort(); the host must fail the
 * instance with a trap (the SDK reports "abort() called" first).
 * Build (wasm-sdk/c/build.sh), from the repository root:
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -I wasm-sdk/c/include -ffile-prefix-map=$PWD=. \
 *       -Wl,--strip-debug -Wl,--stack-first -Wl,-z,stack-size=1048576 \
 *       -o wasm-sdk/c/testdata/abort.wasm wasm-sdk/c/testdata/abort.c wasm-sdk/c/src/ardea.c
 */
#include <stdlib.h>

#include "ardea.h"

static int execute(const ardea_tuple *t) {
    (void)t;
    abort();
}

static const ardea_bolt bolt = {.execute = execute};

ARDEA_REGISTER_BOLT(bolt);
