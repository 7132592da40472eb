/*
 * The public test harness (include/ardea_test.h) on components with
 * declarations: a bolt (config, emits with anchors, acks, fails, logs,
 * metrics, state before and after, tick, finish, a failing tuple, the
 * declaration checks, the manifest) and a spout (next with a budget, ack,
 * fail, activate, deactivate, done).
 */
#include <stdlib.h>

#include "test_util.h"

/* ---- a bolt: prefixes and upper-cases "line"; "boom" ARDEA_FAILs,
 * "abort" aborts, "drop" fails its tuple, "cfg" reads an undeclared
 * config key, "other" an undeclared field ---- */

static const char *prefix;
static int ticks;

static int up_prepare(const ardea_context *c) {
    prefix = ardea_config_or(c, "prefix", "");
    ardea_log_info("prepared %s", c->component.ptr);
    return ARDEA_OK;
}

static int up_execute(const ardea_tuple *t) {
    ardea_str in = ardea_tuple_str_by_name(t, "line");
    if (ardea_str_eq(in, "boom")) {
        ardea_state_put("boom", 4, "x", 1);
        ardea_emit(ARDEA_VALUES(ardea_val_cstr("lost")));
        ARDEA_FAIL("boom on %s", "purpose");
    }
    if (ardea_str_eq(in, "abort"))
        abort();
    if (ardea_str_eq(in, "drop")) {
        ardea_fail_tuple(t);
        return ARDEA_OK;
    }
    if (ardea_str_eq(in, "cfg"))
        (void)ardea_config_get(ardea_get_context(), "undeclared");
    if (ardea_str_eq(in, "other"))
        (void)ardea_tuple_str_by_name(t, "other");
    char buf[256];
    size_t n = (size_t)snprintf(buf, sizeof buf, "%s%.*s", prefix, (int)in.len, in.ptr);
    for (size_t i = 0; i < n; i++)
        if (buf[i] >= 'a' && buf[i] <= 'z')
            buf[i] = (char)(buf[i] - 'a' + 'A');
    ardea_emit(ARDEA_VALUES(ardea_val_strn(buf, n)));
    ardea_emit_to("lengths", ARDEA_VALUES(ardea_val_int((int64_t)in.len)));
    ardea_state_add_int("lines", 5, 1);
    ardea_metric("up.lines", 1);
    ardea_gauge("up.last", (double)in.len);
    ardea_observe("up.len", (int64_t)in.len);
    return ARDEA_OK;
}

static int up_tick(void) {
    ticks++;
    ardea_emit_to("lengths", ARDEA_VALUES(ardea_val_int(-1)));
    return ARDEA_OK;
}

static int up_finish(void) {
    int64_t n = 0;
    ardea_state_get_int("lines", 5, &n);
    ardea_emit_to("lengths", ARDEA_VALUES(ardea_val_int(1000 + n)));
    return ARDEA_OK;
}

static const ardea_bolt up_bolt = {.prepare = up_prepare, .execute = up_execute, .tick = up_tick, .finish = up_finish};
static const ardea_component up_comp = {
    0, &up_bolt,
    (const ardea_decl[]){ARDEA_EMITS("default", "line"), ARDEA_EMITS("lengths", "n"), ARDEA_READS("line"),
                         ARDEA_CONFIG("prefix"), ARDEA_READS("line"), {ARDEA_DECL_END, 0}}};

static bool str_is(ardea_str s, const char *want) { return ardea_str_eq(s, want); }

static void harness_bolt(void) {
    start("harness/bolt");
    ardea_test *h = ardea_test_new_component(&up_comp);
    CHECK(strcmp(ardea_test_manifest(h),
                 "{\"manifest\":1,\"sdk\":{\"language\":\"c\",\"version\":\"" ARDEA_SDK_VERSION "\"},\"kind\":\"bolt\","
                 "\"outputs\":[{\"stream\":\"default\",\"fields\":[\"line\"]},{\"stream\":\"lengths\",\"fields\":[\"n\"]}],"
                 "\"inputs\":[\"line\"],\"config\":[\"prefix\"]}") == 0,
          "manifest %s", ardea_test_manifest(h));
    ardea_test_config(h, "prefix", "> ");
    ardea_test_state_put_int(h, "lines", 5, 10); /* state before */
    CHECK(ardea_test_start(h) == ARDEA_OK, "start: %s", ardea_test_error(h));
    CHECK(ardea_test_logged(h, "prepared test"), "prepare's log");

    CHECK(ardea_test_execute(h, ARDEA_VALUES(ardea_val_cstr("hello"))) == ARDEA_OK, "execute: %s", ardea_test_error(h));
    uint64_t id = ardea_test_last_id(h);
    CHECK(id == 1, "first id %" PRIu64, id);
    CHECK(ardea_test_emits(h, "default") == 1 && ardea_test_emits(h, "lengths") == 1 && ardea_test_emits(h, NULL) == 2,
          "emits per stream");
    const ardea_test_emit *e = ardea_test_emit_at(h, "default", 0);
    CHECK(e && str_is(ardea_tuple_str_by_name(&e->tuple, "line"), "> HELLO"), "emitted line");
    CHECK(e && ardea_test_anchored_on(e, id) && e->nanchors == 1 && e->task == ARDEA_NO_TASK, "anchored on the input");
    e = ardea_test_emit_at(h, "lengths", 0);
    CHECK(e && ardea_tuple_int_by_name(&e->tuple, "n") == 5 && strcmp(e->stream, "lengths") == 0, "lengths");
    CHECK(ardea_test_acks(h) == 1 && ardea_test_acked(h, id) && ardea_test_fails(h) == 0, "acked once");
    int64_t n = 0;
    CHECK(ardea_test_state_get_int(h, "lines", 5, &n) && n == 11, "state after: %" PRId64, n);
    double g = 0;
    const int64_t *obs;
    CHECK(ardea_test_counter(h, "up.lines") == 1 && ardea_test_gauge(h, "up.last", &g) && g == 5 &&
              ardea_test_observations(h, "up.len", &obs) == 1 && obs[0] == 5,
          "metrics");

    CHECK(ardea_test_execute(h, ARDEA_VALUES(ardea_val_cstr("drop"))) == ARDEA_OK, "drop");
    CHECK(ardea_test_failed(h, 2) && !ardea_test_acked(h, 2), "drop fails its tuple");

    /* a failing tuple: failed, its emits and state writes dropped, the
     * component started again */
    ardea_test_clear(h);
    CHECK(ardea_test_execute(h, ARDEA_VALUES(ardea_val_cstr("boom"))) == ARDEA_ERR, "boom");
    CHECK(ardea_test_trapped(h), "boom traps");
    CHECK(ardea_test_error(h) && strstr(ardea_test_error(h), "Execute: ") &&
              strstr(ardea_test_error(h), "harness_test.c:30: boom on purpose"),
          "boom error %s", ardea_test_error(h));
    CHECK(ardea_test_failed(h, 3) && ardea_test_emits(h, NULL) == 0 && !ardea_test_state_get(h, "boom", 4, NULL),
          "boom: the tuple failed, nothing of it kept");
    CHECK(ardea_test_logged(h, "prepared test"), "started again after the failed tuple");
    CHECK(ardea_test_execute(h, ARDEA_VALUES(ardea_val_cstr("abort"))) == ARDEA_ERR && ardea_test_trapped(h) &&
              strstr(ardea_test_error(h), "abort() called") && ardea_test_failed(h, 4),
          "abort: %s", ardea_test_error(h));
    CHECK(ardea_test_execute(h, ARDEA_VALUES(ardea_val_cstr("after"))) == ARDEA_OK, "after: %s", ardea_test_error(h));
    e = ardea_test_emit_at(h, "default", 0);
    CHECK(e && str_is(ardea_tuple_str(&e->tuple, 0), "> AFTER"), "the instance works after failed tuples");

    /* declarations are checked while it runs */
    CHECK(ardea_test_execute(h, ARDEA_VALUES(ardea_val_cstr("cfg"))) == ARDEA_ERR &&
              strstr(ardea_test_error(h), "reads config key \"undeclared\", but declares ARDEA_CONFIG(prefix)"),
          "undeclared config: %s", ardea_test_error(h));
    CHECK(ardea_test_execute(h, ARDEA_VALUES(ardea_val_cstr("other"))) == ARDEA_ERR &&
              strstr(ardea_test_error(h), "harness_test.c:41: ardea: no field \"other\" in the tuple from "
                                          "upstream/default (its fields: line)"),
          "absent field: %s", ardea_test_error(h));
    CHECK(ardea_test_execute(h, ARDEA_VALUES(ardea_val_cstr("a"), ardea_val_int(1))) == ARDEA_ERR &&
              strstr(ardea_test_error(h), "2 values, but input 0 (upstream/default) has 1 fields [line]"),
          "value count: %s", ardea_test_error(h));

    /* tick and finish */
    ardea_test_clear(h);
    CHECK(ardea_test_tick(h) == ARDEA_OK && ticks == 1, "tick");
    CHECK(ardea_test_finish(h) == ARDEA_OK, "finish");
    CHECK(ardea_test_emits(h, "lengths") == 2 &&
              ardea_tuple_int(&ardea_test_emit_at(h, "lengths", 0)->tuple, 0) == -1 &&
              ardea_tuple_int(&ardea_test_emit_at(h, "lengths", 1)->tuple, 0) == 1012,
          "tick and finish emits");
    CHECK(ardea_test_close(h) == ARDEA_OK, "close");
    ardea_test_free(h);

    /* untracked: no anchors, no acks */
    h = ardea_test_new_component(&up_comp);
    ardea_test_untracked(h);
    CHECK(ardea_test_start(h) == ARDEA_OK, "start untracked");
    CHECK(ardea_test_execute(h, ARDEA_VALUES(ardea_val_cstr("x"))) == ARDEA_OK && ardea_test_last_id(h) == 0 &&
              ardea_test_emit_at(h, NULL, 0)->nanchors == 0 && ardea_test_acks(h) == 0,
          "untracked");
    ardea_test_free(h);

    /* what the test declares is checked against the declarations */
    h = ardea_test_new_component(&up_comp);
    ardea_test_input(h, "split", "default", ARDEA_FIELDS("word"));
    CHECK(ardea_test_start(h) == ARDEA_ERR &&
              strstr(ardea_test_error(h), "input 0 (split/default) has fields [word], but the component reads "
                                          "[line] (ARDEA_READS): no field \"line\""),
          "input mismatch: %s", ardea_test_error(h));
    ardea_test_free(h);
    h = ardea_test_new_component(&up_comp);
    ardea_test_output(h, "default", ARDEA_FIELDS("word"));
    CHECK(ardea_test_start(h) == ARDEA_ERR &&
              strstr(ardea_test_error(h), "output 0: the test declares stream \"default\" with fields [word], the "
                                          "component emits \"default\" with [line] (ARDEA_EMITS)"),
          "output mismatch: %s", ardea_test_error(h));
    ardea_test_free(h);
    h = ardea_test_new_component(&up_comp);
    ardea_test_config(h, "prefx", "x");
    CHECK(ardea_test_start(h) == ARDEA_ERR &&
              strstr(ardea_test_error(h), "config key \"prefx\" is not one the component reads (ARDEA_CONFIG(prefix))"),
          "config mismatch: %s", ardea_test_error(h));
    ardea_test_free(h);
    /* the same, declared as the component does: accepted */
    h = ardea_test_new_component(&up_comp);
    ardea_test_output(h, "default", ARDEA_FIELDS("line"));
    ardea_test_output(h, "lengths", ARDEA_FIELDS("n"));
    ardea_test_input(h, "split", "s", ARDEA_FIELDS("id", "line"));
    ardea_test_names(h, "topo", "up");
    ardea_test_task(h, 9, 1, 3);
    CHECK(ardea_test_start(h) == ARDEA_OK && ardea_test_logged(h, "prepared up"), "start: %s", ardea_test_error(h));
    CHECK(ardea_test_execute_from(h, 0, 4, 77, ARDEA_VALUES(ardea_val_int(1), ardea_val_cstr("x"))) == ARDEA_OK &&
              ardea_test_acked(h, 77) && ardea_test_anchored_on(ardea_test_emit_at(h, "default", 0), 77),
          "execute_from: %s", ardea_test_error(h));
    ardea_test_free(h);
    finish_test();
}

/* ---- a spout: "count" lines, replays failed ones, pauses ---- */

static int64_t sp_count, sp_next;
static bool sp_active;

static int sp_open(const ardea_context *c) {
    sp_next = 1;
    sp_active = true;
    return ardea_config_int(c, "count", 10, &sp_count);
}

static void sp_emit(int64_t i) {
    char line[32];
    snprintf(line, sizeof line, "line %" PRId64, i);
    ardea_emit_with_id((uint64_t)i, ARDEA_VALUES(ardea_val_cstr(line)));
}

static int sp_next_fn(void) {
    if (sp_next > sp_count)
        return ARDEA_DONE;
    if (!sp_active)
        return ARDEA_IDLE;
    sp_emit(sp_next++);
    return ARDEA_MORE;
}

static void sp_fail(uint64_t id) { sp_emit((int64_t)id); }
static void sp_ack(uint64_t id) { ardea_metric("acked", (int64_t)id); }
static void sp_activate(void) { sp_active = true; }
static void sp_deactivate(void) { sp_active = false; }

static const ardea_spout lines_spout = {.open = sp_open,
                                        .next = sp_next_fn,
                                        .ack = sp_ack,
                                        .fail = sp_fail,
                                        .activate = sp_activate,
                                        .deactivate = sp_deactivate};
static const ardea_component lines_comp = {
    &lines_spout, 0, (const ardea_decl[]){ARDEA_EMITS("default", "line"), ARDEA_CONFIG("count"), {ARDEA_DECL_END, 0}}};

static void harness_spout(void) {
    start("harness/spout");
    ardea_test *h = ardea_test_new_component(&lines_comp);
    CHECK(strstr(ardea_test_manifest(h), "\"kind\":\"spout\"") && !strstr(ardea_test_manifest(h), "\"inputs\""),
          "manifest %s", ardea_test_manifest(h));
    ardea_test_config(h, "count", "5");
    CHECK(ardea_test_start(h) == ARDEA_OK, "open: %s", ardea_test_error(h));
    CHECK(ardea_test_next(h, 3) == ARDEA_MORE && ardea_test_emits(h, "default") == 3, "next(3): %zu",
          ardea_test_emits(h, "default"));
    const ardea_test_emit *e = ardea_test_emit_at(h, "default", 2);
    CHECK(e && e->msgid == 3 && str_is(ardea_tuple_str_by_name(&e->tuple, "line"), "line 3"), "third line");
    CHECK(ardea_test_deactivate(h) == ARDEA_OK && ardea_test_next(h, 3) == ARDEA_IDLE &&
              ardea_test_emits(h, NULL) == 3,
          "deactivated");
    CHECK(ardea_test_activate(h) == ARDEA_OK, "activate");
    CHECK(ardea_test_ack(h, 1) == ARDEA_OK && ardea_test_counter(h, "acked") == 1, "ack");
    CHECK(ardea_test_fail(h, 2) == ARDEA_OK && ardea_test_emits(h, NULL) == 4 &&
              ardea_test_emit_at(h, NULL, 3)->msgid == 2,
          "fail replays");
    CHECK(ardea_test_next(h, 100) == ARDEA_DONE && ardea_test_emits(h, NULL) == 6, "done after 5: %zu",
          ardea_test_emits(h, NULL));
    CHECK(ardea_test_next(h, 100) == ARDEA_DONE && ardea_test_emits(h, NULL) == 6, "done stays done");
    ardea_test_free(h);

    h = ardea_test_new_component(&lines_comp);
    ardea_test_config(h, "count", "many");
    CHECK(ardea_test_start(h) == ARDEA_ERR && strstr(ardea_test_error(h), "Open: config count of component test: many is "
                                                                          "not an int64"),
          "bad count: %s", ardea_test_error(h));
    ardea_test_free(h);
    finish_test();
}

void test_harness(void) {
    harness_bolt();
    harness_spout();
    host_reset();
}
