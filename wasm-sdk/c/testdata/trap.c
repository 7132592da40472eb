/*
 * trap: a bolt that fails on chosen words in each way a C component can,
 * for the cursor and error-text tests (sdk_test.go TestGuestCursor):
 *   "abort"  abort()
 *   "assert" a failed assert()
 *   "fail"   ARDEA_FAIL (the message carries this file:line)
 *   "error"  returns ARDEA_ERROR (the same, without trapping)
 *   "trap"   __builtin_trap() (no message)
 * Any other word is emitted again, anchored, and acked.
 * Build (wasm-sdk/c/build.sh), from the repository root:
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -I wasm-sdk/c/include -ffile-prefix-map=$PWD=. \
 *       -Wl,--strip-debug -Wl,--stack-first -Wl,-z,stack-size=1048576 \
 *       -o wasm-sdk/c/testdata/trap.wasm wasm-sdk/c/testdata/trap.c wasm-sdk/c/src/ardea.c
 */
#include <assert.h>
#include <stdlib.h>

#include "ardea.h"

static int execute(const ardea_tuple *t) {
    ardea_str w = ardea_tuple_str(t, 0);
    if (ardea_str_eq(w, "abort"))
        abort();
    if (ardea_str_eq(w, "assert"))
        assert(w.len == 0);
    if (ardea_str_eq(w, "fail"))
        ARDEA_FAIL("bad word %.*s", (int)w.len, w.ptr); /* line 28 */
    if (ardea_str_eq(w, "error"))
        return ARDEA_ERROR("bad word %.*s", (int)w.len, w.ptr); /* line 30 */
    if (ardea_str_eq(w, "trap"))
        __builtin_trap();
    ardea_emit_anchored(t, ARDEA_VALUES(ardea_val_str(w)));
    return ARDEA_OK;
}

static const ardea_bolt bolt = {.execute = execute};

ARDEA_REGISTER_BOLT(bolt, ARDEA_EMITS("default", "word"));
