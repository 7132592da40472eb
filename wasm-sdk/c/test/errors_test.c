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

typedef struct {
    int32_t n, rc;
} exec_call;

static void call_execute(void *arg) {
    exec_call *c = arg;
    c->rc = ardea_export_execute(c->n);
}

static void expect_failure(const char *what, int (*exec)(const ardea_tuple *), bool traps, const char *text) {
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    buf b = {0};
    const char *w[] = {"x"};
    words_batch(&b, w, 1, 9);
    host_reset();
    prepare_with(&bolt_comp, &out, 1, &in, 1);
    t_execute = exec;
    exec_call c = {put_input(&b), 0};
    bool trapped = guarded(call_execute, &c);
    int32_t rc = c.rc;
    CHECK(traps ? trapped : (rc < 0 && !trapped), "%s: rc %d trapped %d", what, rc, trapped);
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
    expect_failure("name", exec_bad_name, true, "errors_test.c:52: ardea: no field \"nope\" in the tuple from c0/s0 (its fields: word)");
    expect_failure("fatal", exec_fatal, true, "Execute: probe panic");
    finish_test();
}

/* The cursor: the index of the record being executed, seen by user code
 * and left on the failing record for the host. */
static uint32_t seen[8];
static int nseen;
static const char *fail_word;
static int fail_how; /* 0 fatal, 1 returned ARDEA_ERROR, 2 ARDEA_FAIL */
static int fail_line;

static int exec_cursor(const ardea_tuple *t) {
    if (nseen < 8)
        seen[nseen++] = *ardea_export_cursor();
    if (ardea_str_eq(ardea_tuple_str(t, 0), fail_word)) {
        switch (fail_how) {
        case 1:
            fail_line = __LINE__ + 1;
            return ARDEA_ERROR("bad word %s", fail_word);
        case 2:
            fail_line = __LINE__ + 1;
            ARDEA_FAIL("bad word %s", fail_word);
        default:
            ardea_fatal("probe panic");
        }
    }
    return 0;
}

void test_cursor(void) {
    start("errors/cursor");
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    buf b = {0};
    const char *w[] = {"a", "b", "c", "d"};
    words_batch(&b, w, 4, 9);
    uint32_t *cur = ardea_export_cursor();
    CHECK(cur == ardea_export_cursor(), "the cursor moved");

    /* a batch that succeeds: one index per record */
    host_reset();
    prepare_with(&bolt_comp, &out, 1, &in, 1);
    t_execute = exec_cursor;
    nseen = 0;
    fail_word = "none";
    CHECK(ardea_export_execute(put_input(&b)) == 0, "execute: %s", h_error);
    CHECK(nseen == 4 && seen[0] == 0 && seen[1] == 1 && seen[2] == 2 && seen[3] == 3, "cursor seen %d: %u %u %u %u",
          nseen, seen[0], seen[1], seen[2], seen[3]);

    for (fail_how = 0; fail_how < 3; fail_how++) {
        char want[128];
        host_reset();
        prepare_with(&bolt_comp, &out, 1, &in, 1);
        nseen = 0;
        fail_word = "c";
        exec_call c = {put_input(&b), 0};
        bool trapped = guarded(call_execute, &c);
        int32_t rc = c.rc;
        CHECK(fail_how == 1 ? (rc < 0 && !trapped) : trapped, "how %d: rc %d trapped %d", fail_how, rc, trapped);
        CHECK(*cur == 2, "how %d: cursor %u after failing on record 2", fail_how, *cur);
        CHECK(h_errors == 1, "how %d: %d error reports", fail_how, h_errors);
        if (fail_how == 0)
            snprintf(want, sizeof want, "Execute: probe panic");
        else if (fail_how == 1)
            snprintf(want, sizeof want, "Execute: tuple 11 from c0/s0 task 3: %s:%d: bad word c", __FILE__, fail_line);
        else
            snprintf(want, sizeof want, "Execute: %s:%d: bad word c", __FILE__, fail_line);
        CHECK(strcmp(h_error, want) == 0, "how %d: error %s, want %s", fail_how, h_error, want);
    }
    free(b.p);
    finish_test();
}
