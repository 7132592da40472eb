/*
 * count: the word-count example's count bolt in C. It is fields-grouped
 * on "word" and keeps each word's count in the task's host-side state
 * under the word's own bytes (the ABI's rule for state that moves with
 * its keys; int64 little endian, absent = 0), so counts survive a module
 * restart or swap - also to another language's count - and follow their
 * words when the component is rescaled. The SDK's write-back cache sends
 * a batch's changed counts to the host in one state_write. Each time a
 * count changes it emits ("word", "count"), anchored, and acks the word.
 *
 * Build (wasm-sdk/c/build.sh; see ../BUILD.md), from the repository root:
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -I wasm-sdk/c/include -ffile-prefix-map=$PWD=. \
 *       -Wl,--strip-debug -Wl,--stack-first -Wl,-z,stack-size=1048576 \
 *       -o examples/wordcount/c/count.wasm examples/wordcount/c/count/count.c wasm-sdk/c/src/ardea.c
 *
 * or: ardea build examples/wordcount/c/count -o examples/wordcount/c/count.wasm
 */
#include "ardea.h"

static int execute(const ardea_tuple *t) {
    /* For a single string field the state key is the word itself: a view
     * of the input, copied only when the word is new to the cache. */
    ardea_str word = ardea_state_key_view(t, "word");
    int64_t n = ardea_state_add_int(word.ptr, word.len, 1);
    ardea_emit_anchored(t, ARDEA_VALUES(ardea_val_str(word), ardea_val_int(n)));
    ardea_ack_tuple(t);
    return ARDEA_OK;
}

static const ardea_bolt count = {.execute = execute};

ARDEA_REGISTER_BOLT(count, ARDEA_EMITS("default", "word", "count"), ARDEA_READS("word"));
