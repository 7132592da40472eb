/*
 * probe_bolt: the C SDK's conformance bolt (wasm-sdk/conformance/SPEC.md).
 * Build (wasm-sdk/c/build.sh), from the repository root:
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -I wasm-sdk/c/include -ffile-prefix-map=$PWD=. \
 *       -Wl,--strip-debug -Wl,--stack-first -Wl,-z,stack-size=1048576 \
 *       -o wasm-sdk/c/testdata/probe_bolt.wasm wasm-sdk/c/testdata/probe_bolt.c wasm-sdk/c/src/ardea.c
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ardea.h"

static const ardea_context *ctx;
static const char *prefix;
static int ticks;
static int executed;
static ardea_tuple prev; /* only its id is used: a copied struct keeps it */
static bool has_prev;

static int prepare(const ardea_context *c) {
    ctx = c;
    prefix = ardea_config_or(c, "prefix", "");
    if (strcmp(ardea_config_or(c, "ack", ""), "manual") == 0)
        ardea_manual_ack();
    ardea_log_info("prepared %s task %" PRIu32 " of %" PRIu32, c->component.ptr, c->task_id, c->parallelism);
    return ARDEA_OK;
}

static bool has_prefix(ardea_str w, const char *p, ardea_str *rest) {
    size_t n = strlen(p);
    if (w.len < n || memcmp(w.ptr, p, n) != 0)
        return false;
    rest->ptr = w.ptr + n;
    rest->len = w.len - n;
    return true;
}

static int emit_state(ardea_str key, ardea_str value, void *arg) {
    const ardea_tuple *t = arg;
    int64_t v = 0;
    if (value.len == 8)
        memcpy(&v, value.ptr, 8); /* wasm32 is little endian, as the value */
    char line[512];
    int n = snprintf(line, sizeof line, "%.*s=%" PRId64, (int)key.len, key.ptr, v);
    ardea_emit_anchored_to("events", t, ARDEA_VALUES(ardea_val_cstr("state"), ardea_val_strn(line, (size_t)n)));
    return 0;
}

static int run(const ardea_tuple *t) {
    executed++;
    ardea_str w = ardea_tuple_str(t, 0), rest;
    if (ardea_str_eq(w, "fail")) {
        ardea_fail_tuple(t);
        return ARDEA_OK;
    }
    if (ardea_str_eq(w, "auto")) {
        ardea_emit(ARDEA_VALUES(ardea_val_cstr("auto"), ardea_val_int(0)));
        return ARDEA_OK;
    }
    if (ardea_str_eq(w, "twice")) {
        ardea_ack_tuple(t);
        ardea_ack_tuple(t);
        return ARDEA_OK;
    }
    if (ardea_str_eq(w, "error"))
        return ardea_error("probe error: bad word");
    if (ardea_str_eq(w, "panic"))
        ardea_fatal("probe panic");
    if (ardea_str_eq(w, "log")) {
        ardea_log_warn("probe log");
    } else if (ardea_str_eq(w, "metrics")) {
        ardea_gauge("probe.gauge", 2.5);
        ardea_observe("probe.size", 7);
        ardea_observe("probe.size", 1000);
        ardea_metric("probe.words", 0);
    } else if (ardea_str_eq(w, "config")) {
        char pairs[4096];
        size_t at = 0;
        for (size_t i = 0; i < ctx->nconfig && at < sizeof pairs; i++)
            at += (size_t)snprintf(pairs + at, sizeof pairs - at, "%s%s=%s", i ? "," : "", ctx->config[i].key.ptr,
                                   ctx->config[i].value.ptr);
        ardea_emit_anchored_to("events", t, ARDEA_VALUES(ardea_val_cstr("config"), ardea_val_cstr(pairs)));
    } else if (ardea_str_eq(w, "scan")) {
        ardea_state_scan("", 0, emit_state, (void *)t);
    } else if (has_prefix(w, "delete:", &rest)) {
        ardea_state_delete(rest.ptr, rest.len);
        ardea_emit_anchored_to("events", t, ARDEA_VALUES(ardea_val_cstr("deleted"), ardea_val_str(rest)));
    } else if (has_prefix(w, "direct:", &rest)) {
        char num[16];
        if (rest.len == 0 || rest.len >= sizeof num)
            return ardea_errorf("bad direct task %.*s", (int)rest.len, rest.ptr);
        memcpy(num, rest.ptr, rest.len);
        num[rest.len] = 0;
        char *end;
        unsigned long task = strtoul(num, &end, 10);
        if (*end || task > UINT32_MAX)
            return ardea_errorf("bad direct task %s", num);
        ardea_emit_direct_anchored((uint32_t)task, "default", t, 1, ARDEA_VALUES(ardea_val_str(w), ardea_val_int(0)));
    } else if (ardea_str_eq(w, "multi")) {
        ardea_tuple anchors[2] = {*t, prev};
        ardea_emit_multi_anchored("default", anchors, has_prev ? 2 : 1,
                                  ARDEA_VALUES(ardea_val_cstr("multi"), ardea_val_int(2)));
    } else {
        int64_t n = ardea_state_add_int(w.ptr, w.len, 1);
        char word[1024];
        int len = snprintf(word, sizeof word, "%s%.*s", prefix, (int)w.len, w.ptr);
        if (len < 0 || (size_t)len >= sizeof word)
            return ardea_error("word too long");
        ardea_emit_anchored(t, ARDEA_VALUES(ardea_val_strn(word, (size_t)len), ardea_val_int(n)));
        ardea_metric("probe.words", 1);
    }
    ardea_ack_tuple(t);
    return ARDEA_OK;
}

/* The previous tuple this task executed is kept for "multi". */
static int execute(const ardea_tuple *t) {
    int rc = run(t);
    prev = *t;
    has_prev = true;
    return rc;
}

static int tick(void) {
    char n[16];
    snprintf(n, sizeof n, "%d", ++ticks);
    ardea_emit_to("events", ARDEA_VALUES(ardea_val_cstr("tick"), ardea_val_cstr(n)));
    return ARDEA_OK;
}

static int finish(void) {
    char n[16];
    snprintf(n, sizeof n, "%d", executed);
    ardea_emit_to("events", ARDEA_VALUES(ardea_val_cstr("finish"), ardea_val_cstr(n)));
    return ARDEA_OK;
}

static const ardea_bolt probe = {
    .prepare = prepare,
    .execute = execute,
    .tick = tick,
    .finish = finish,
};

ARDEA_REGISTER_BOLT(probe);
