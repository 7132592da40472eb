/*
 * badabi: a valid bolt whose ardea_abi_version returns 2; the host must
 * refuse it with "ABI version mismatch". The SDK's ardea.c is compiled
 * with -DARDEA_TEST_ABI_VERSION=2 for it.
 * Build (wasm-sdk/c/build.sh), from the repository root:
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -I wasm-sdk/c/include -ffile-prefix-map=$PWD=. \
 *       -Wl,--strip-debug -Wl,--stack-first -Wl,-z,stack-size=1048576 \
 *       -o wasm-sdk/c/testdata/badabi.wasm -DARDEA_TEST_ABI_VERSION=2 wasm-sdk/c/testdata/badabi.c wasm-sdk/c/src/ardea.c
 */
#include "ardea.h"

static int execute(const ardea_tuple *t) {
    ardea_ack_tuple(t);
    return ARDEA_OK;
}

static const ardea_bolt bolt = {.execute = execute};

ARDEA_REGISTER_BOLT(bolt);
