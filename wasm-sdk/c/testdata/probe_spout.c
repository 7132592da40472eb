/*
 * probe_spout: the C SDK's conformance spout (wasm-sdk/conformance/SPEC.md).
 * Build (wasm-sdk/c/build.sh), from the repository root:
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -I wasm-sdk/c/include -ffile-prefix-map=$PWD=. \
 *       -Wl,--strip-debug -Wl,--stack-first -Wl,-z,stack-size=1048576 \
 *       -o wasm-sdk/c/testdata/probe_spout.wasm wasm-sdk/c/testdata/probe_spout.c wasm-sdk/c/src/ardea.c
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ardea.h"

static uint64_t count;       /* tuples to emit */
static uint64_t last;        /* last new tuple emitted */
static uint64_t *replay;     /* failed ids waiting to be emitted again */
static size_t nreplay, capreplay;

static int open_(const ardea_context *ctx) {
    int64_t n;
    if (ardea_config_int(ctx, "count", 5, &n) < 0)
        return ARDEA_ERR;
    count = n > 0 ? (uint64_t)n : 0;
    ardea_log_info("opened %s task %" PRIu32, ctx->component.ptr, ctx->task_id);
    return ARDEA_OK;
}

static void emit(uint64_t id) {
    char w[32];
    int n = snprintf(w, sizeof w, "w%" PRIu64, id);
    ardea_emit_with_id(id, ARDEA_VALUES(ardea_val_strn(w, (size_t)n), ardea_val_int((int64_t)id)));
}

static int next(void) {
    size_t used = 0;
    while (ardea_remaining() > 0 && used < nreplay)
        emit(replay[used++]);
    for (size_t i = used; i < nreplay; i++)
        replay[i - used] = replay[i];
    nreplay -= used;
    while (ardea_remaining() > 0 && last < count)
        emit(++last);
    if (last >= count && nreplay == 0)
        return ARDEA_DONE;
    return ARDEA_MORE;
}

static void ack(uint64_t id) {
    (void)id;
    ardea_metric("probe.acked", 1);
}

static void fail(uint64_t id) {
    if (nreplay == capreplay) {
        capreplay = capreplay ? 2 * capreplay : 16;
        replay = realloc(replay, capreplay * sizeof *replay);
        if (!replay)
            ardea_fatal("out of memory");
    }
    replay[nreplay++] = id;
}

static void activate(void) { ardea_log_info("activated"); }
static void deactivate(void) { ardea_log_info("deactivated"); }

static const ardea_spout probe = {
    .open = open_,
    .next = next,
    .ack = ack,
    .fail = fail,
    .activate = activate,
    .deactivate = deactivate,
};

ARDEA_REGISTER_SPOUT(probe);
