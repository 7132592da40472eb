/*
 * Runtime behaviour: untracked tuples, the spout's next loop, and the
 * context helpers, logs, metrics, now, tick, finish and close.
 */
#include "test_util.h"

/* untracked tuples (id 0): anchors dropped, no acks */
static int exec_untracked(const ardea_tuple *t) {
    ardea_emit_anchored(t, ARDEA_VALUES(ardea_val_cstr("w"), ardea_val_int(1)));
    ardea_tuple two[2] = {*t, *t};
    two[1].id = 77;
    ardea_emit_multi_anchored("default", two, 2, ARDEA_VALUES(ardea_val_cstr("w"), ardea_val_int(2)));
    ardea_ack_tuple(t);
    ardea_fail_tuple(t);
    return 0;
}

void test_untracked(void) {
    start("emit/untracked");
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    buf b = {0}, want = {0};
    const char *w[] = {"x"};
    words_batch(&b, w, 1, 0);
    host_reset();
    prepare_with(&bolt_comp, &out, 1, &in, 1);
    t_execute = exec_untracked;
    CHECK(ardea_export_execute(put_input(&b)) == 0, "execute: %s", h_error);
    for (int k = 1; k <= 2; k++) {
        bu8(&want, 1);
        bu16(&want, 0);
        bu32(&want, 0xFFFFFFFFu);
        bu64(&want, 0);
        bu16(&want, k == 2);
        if (k == 2)
            bu64(&want, 77);
        bu16(&want, 2);
        bu8(&want, 2);
        bstr(&want, "w", 1);
        bu8(&want, 3);
        bu64(&want, (uint64_t)k);
    }
    CHECK(h_ops.n == want.n && memcmp(h_ops.p, want.p, want.n) == 0, "ops differ");
    free(b.p);
    free(want.p);
    finish_test();
}

/* the spout loop: next is called again while it emits within max */
static int sp_i, sp_calls;
static int next_counting(void) {
    sp_calls++;
    if (sp_i >= 10)
        return ARDEA_DONE;
    sp_i++;
    ardea_emit_with_id((uint64_t)sp_i, ARDEA_VALUES(ardea_val_cstr("w"), ardea_val_int(sp_i)));
    return ARDEA_MORE;
}

void test_spout(void) {
    start("spout/next loop");
    decl out = {"default", 2, count_fields};
    host_reset();
    CHECK(prepare_with(&spout_comp, &out, 1, NULL, 0) == 0, "open: %s", h_error);
    t_next = next_counting;
    sp_i = sp_calls = 0;
    CHECK(ardea_export_next(4) == ARDEA_MORE, "next 1");
    CHECK(sp_i == 4 && sp_calls == 4 && h_emits == 1, "after next(4): %d emitted in %d calls", sp_i, sp_calls);
    CHECK(ardea_export_next(100) == ARDEA_DONE, "next 2");
    CHECK(sp_i == 10, "emitted %d", sp_i);
    int calls = sp_calls;
    CHECK(ardea_export_next(100) == ARDEA_DONE && sp_calls == calls, "next after done called the spout");
    CHECK(ardea_export_execute(4) < 0 && strstr(h_error, "ardea_execute is a bolt export, but this module registers a spout"),
          "execute on a spout: %s", h_error);
    finish_test();
}

/* context helpers, logs, metrics, now, tick, finish */
static int prep_misc(const ardea_context *c) {
    int64_t v = 0;
    CHECK(ardea_config_int(c, "a.int", 5, &v) == 0 && v == -42, "config_int %" PRId64, v);
    CHECK(ardea_config_int(c, "absent", 5, &v) == 0 && v == 5, "config_int default");
    CHECK(ardea_config_int(c, "prefix", 5, &v) == ARDEA_ERR && v == 5, "config_int of a non-number");
    CHECK(strcmp(ardea_config_or(c, "prefix", "x"), "pre-") == 0 && strcmp(ardea_config_or(c, "nope", "x"), "x") == 0,
          "config_or");
    CHECK(ardea_config_get(c, "nope") == NULL, "config_get absent");
    ardea_log_info("prepared %s task %" PRIu32 " of %" PRIu32, c->component.ptr, c->task_id, c->parallelism);
    CHECK(ardea_now() == 1234567890123456789LL, "now");
    return 0;
}
static int tick_misc(void) {
    ardea_metric("m.a", 2);
    ardea_metric("m.b", 1);
    ardea_metric("m.a", 3);
    ardea_gauge("g", 2.5);
    ardea_observe("h", 7);
    ardea_observe("h", 1000);
    ardea_log_warn("tick");
    return 0;
}
static int finish_emit(void) {
    ardea_emit(ARDEA_VALUES(ardea_val_cstr("fin"), ardea_val_int(1)));
    return 0;
}

void test_misc(void) {
    start("context, log, metric, tick, finish");
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    host_reset();
    t_prepare = prep_misc;
    CHECK(prepare_with(&bolt_comp, &out, 1, &in, 1) == 0, "prepare: %s", h_error);
    t_prepare = NULL;
    int level = -1;
    const char *line = ardea_test_log_at(H, 0, &level);
    CHECK(ardea_test_logs(H) == 1 && strcmp(line, "prepared comp task 7 of 2") == 0 && level == 0, "log %s", line);
    t_tick = tick_misc;
    CHECK(ardea_export_tick() == 0, "tick");
    t_tick = NULL;
    CHECK(ardea_test_calls(H, "metric") == 2 && ardea_test_counter(H, "m.a") == 5 && ardea_test_counter(H, "m.b") == 1,
          "metrics: one call per name, deltas summed");
    double g = 0;
    CHECK(ardea_test_gauge(H, "g", &g) && g == 2.5, "gauge g = %g", g);
    const int64_t *obs = NULL;
    CHECK(ardea_test_observations(H, "h", &obs) == 2 && obs[0] == 7 && obs[1] == 1000,
          "observe: every value reaches the host");
    CHECK(ardea_test_logs(H) == 2 && ardea_test_log_at(H, 1, &level) && level == 4, "warn log");
    t_finish = finish_emit;
    CHECK(ardea_export_finish() == 0 && h_emits == 1, "finish emit");
    t_finish = NULL;
    CHECK(ardea_export_close() == 0, "close");
    CHECK(ardea_export_tick() < 0 && strstr(h_error, "called before a successful ardea_prepare"), "tick after close");
    CHECK(ardea_export_abi_version() == 1, "abi version");
    finish_test();
}
