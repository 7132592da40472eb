/*
 * command: a valid bolt built as a WASI command (without
 * -mexec-model=reactor, so it exports _start and runs main); the host
 * must refuse it as not a reactor.
 * Build (wasm-sdk/c/build.sh), from the repository root:
 *
 *   clang --target=wasm32-wasi -O2 -I wasm-sdk/c/include -ffile-prefix-map=$PWD=. \
 *       -Wl,--strip-debug -Wl,--stack-first -Wl,-z,stack-size=1048576 \
 *       -o wasm-sdk/c/testdata/command.wasm wasm-sdk/c/testdata/command.c wasm-sdk/c/src/ardea.c
 */
#include "ardea.h"

static int execute(const ardea_tuple *t) {
    ardea_ack_tuple(t);
    return ARDEA_OK;
}

static const ardea_bolt bolt = {.execute = execute};

ARDEA_REGISTER_BOLT(bolt);

int main(void) { return 0; }
