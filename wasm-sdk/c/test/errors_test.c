/*
 * Errors: a returned error drops the call's output, and every kind of
 * failure (returned, emit misuse, accessor traps, ardea_fatal) reaches the
 * host with its text.
 */
#include "test_util.h"

static int exec_fail_after_put(const ardea_tuple *t) {
    (void)t;
    ardea_state_add_int("lost", 4, 1);
    ardea_emit(ARDEA_VALUES(ardea_val_cstr("w"), ardea_val_int(1)));
    return ardea_errorf("probe error: %s", "bad word");
}

void test_errors(void) {
    start("errors");
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    buf b = {0};
    const char *w[] = {"x"};
    words_batch(&b, w, 1, 9);

    /* a returned error: text, no emits, no state */
    host_reset();
    prepare_with(&bolt_comp, &out, 1, &in, 1);
    t_execute = exec_fail_after_put;
    CHECK(ardea_export_execute(put_input(&b)) < 0, "error accepted");
    CHECK(strstr(h_error, "probe error: bad word") && strstr(h_error, "Execute: tuple 9 from c0/s0 task 3"),
          "error text %s", h_error);
    CHECK(h_ops.n == 0 && h_state_writes == 0, "a failed call sent ops or state");
    finish_test();
    free(b.p);
}

static int exec_undeclared(const ardea_tuple *t) {
    ardea_emit_anchored_to("nope", t, ARDEA_VALUES(ardea_val_cstr("w")));
    return 0;
}
static int exec_count_mismatch(const ardea_tuple *t) {
    ardea_emit_anchored(t, ARDEA_VALUES(ardea_val_cstr("w")));
    return 0;
}
static int exec_not_direct(const ardea_tuple *t) {
    (void)t;
    ardea_emit_direct(ARDEA_NO_TASK, "default", ARDEA_VALUES(ardea_val_cstr("w"), ardea_val_int(1)));
    return 0;
}
static int exec_wrong_kind(const ardea_tuple *t) {
    (void)ardea_tuple_int(t, 0);
    return 0;
}
static int exec_bad_name(const ardea_tuple *t) {
    (void)ardea_tuple_str_by_name(t, "nope");
    return 0;
}
static int exec_fatal(const ardea_tuple *t) {
    (void)t;
    ardea_fatal("probe panic");
}
static int exec_no_text(const ardea_tuple *t) {
    (void)t;
    return -3;
}

static void expect_failure(const char *what, int (*exec)(const ardea_tuple *), bool traps, const char *text) {
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    buf b = {0};
    const char *w[] = {"x"};
    words_batch(&b, w, 1, 9);
    host_reset();
    prepare_with(&bolt_comp, &out, 1, &in, 1);
    t_execute = exec;
    trapped = 0;
    int32_t rc = 0;
    trap_armed = 1;
    if (setjmp(trap_jb) == 0)
        rc = ardea_export_execute(put_input(&b));
    trap_armed = 0;
    CHECK(traps ? trapped == 1 : (rc < 0 && trapped == 0), "%s: rc %d trapped %d", what, rc, trapped);
    CHECK(strstr(h_error, text) != NULL, "%s: error text %s, want %s", what, h_error, text);
    CHECK(h_ops.n == 0, "%s: ops sent", what);
    free(b.p);
}

void test_failures(void) {
    start("errors/kinds");
    expect_failure("undeclared", exec_undeclared, false, "emit on undeclared stream \"nope\" (declared: \"default\")");
    expect_failure("count", exec_count_mismatch, false, "emit on stream \"default\": 1 values for 2 declared fields");
    expect_failure("direct", exec_not_direct, false, "is not a direct target");
    expect_failure("returned", exec_fail_after_put, false, "Execute: tuple 9 from c0/s0 task 3: probe error: bad word");
    expect_failure("no text", exec_no_text, false, "returned -3 without an error text");
    expect_failure("kind", exec_wrong_kind, true, "Execute: ardea: field 0 (word) is string, not int64");
    expect_failure("name", exec_bad_name, true, "ardea: stream c0/s0 has no field \"nope\"");
    expect_failure("fatal", exec_fatal, true, "Execute: probe panic");
    finish_test();
}
