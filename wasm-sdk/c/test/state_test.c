/*
 * State: the write-back cache, the state API (get, put, delete, scan) and
 * the cache's bound.
 */
#include "test_util.h"

static int exec_count(const ardea_tuple *t) {
    ardea_str w = ardea_state_key_view(t, "word");
    int64_t n = ardea_state_add_int(w.ptr, w.len, 1);
    ardea_emit_anchored(t, ARDEA_VALUES(ardea_val_str(w), ardea_val_int(n)));
    ardea_ack_tuple(t);
    return 0;
}

static int64_t host_int(const char *k) {
    int64_t v;
    return ardea_test_state_get_int(H, k, strlen(k), &v) ? v : -1;
}

static bool host_has(const char *k) { return ardea_test_state_get(H, k, strlen(k), NULL); }

void test_state_cache(void) {
    start("state/write-back cache");
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    host_reset();
    CHECK(prepare_with(&bolt_comp, &out, 1, &in, 1) == 0, "prepare: %s", h_error);
    ardea_test_state_put_int(H, "the", 3, 5); /* counts survive in the host */
    t_execute = exec_count;
    const char *words[] = {"the", "cat", "the", "a", "cat", "the"};
    buf b = {0};
    words_batch(&b, words, 6, 100);
    CHECK(ardea_export_execute(put_input(&b)) == 0, "execute: %s", h_error);
    CHECK(h_state_writes == 1, "%d state_write calls, want 1", h_state_writes);
    CHECK(h_state_gets == 3, "%d state_get calls, want 3 (one per new key)", h_state_gets);
    CHECK(host_int("the") == 8 && host_int("cat") == 2 && host_int("a") == 1, "host counts the=%" PRId64,
          host_int("the"));
    CHECK(h_emits == 1, "%d emit calls, want 1", h_emits);
    /* the last op is ack 105; the emit before it: ("the", 8) anchored on 105 */
    CHECK(h_ops.n > 9 && h_ops.p[h_ops.n - 9] == 2 && rd64(h_ops.p + h_ops.n - 8) == 105, "last op is not ack 105");
    /* second batch: cached, no gets; one write */
    ardea_test_clear(H); /* the records and call counts */
    CHECK(ardea_export_execute(put_input(&b)) == 0, "execute 2: %s", h_error);
    CHECK(h_state_gets == 0 && h_state_writes == 1, "gets %d writes %d", h_state_gets, h_state_writes);
    CHECK(host_int("the") == 11, "the = %" PRId64, host_int("the"));
    /* a failed call drops its unwritten changes and the cache */
    free(b.p);
    finish_test();
}

static int scan_collect(ardea_str k, ardea_str v, void *arg) {
    buf *b = arg;
    bput(b, k.ptr, k.len);
    bu8(b, '=');
    bput(b, v.ptr, v.len);
    bu8(b, ';');
    return 0;
}

static int exec_state_api(const ardea_tuple *t) {
    (void)t;
    ardea_str v;
    CHECK(!ardea_state_get("k1", 2, &v), "k1 present before put");
    ardea_state_put("k1", 2, "v1", 2);
    CHECK(ardea_state_get("k1", 2, &v) && v.len == 2 && memcmp(v.ptr, "v1", 2) == 0, "k1 after put");
    /* a long value, then a value copied from another key's view */
    char big[100];
    memset(big, 'x', sizeof big);
    ardea_state_put("big", 3, big, sizeof big);
    CHECK(ardea_state_get("big", 3, &v) && v.len == 100, "big");
    ardea_state_put("big2", 4, v.ptr, v.len);
    CHECK(ardea_state_get("k1", 2, &v), "k1");
    ardea_state_put("k1copy", 6, v.ptr, v.len);
    ardea_state_put_int("n", 1, -7);
    int64_t n = 0;
    CHECK(ardea_state_get_int("n", 1, &n) && n == -7, "get_int %" PRId64, n);
    CHECK(!ardea_state_get_int("k1", 2, &n), "get_int of a 2-byte value");
    ardea_state_delete("gone", 4);
    buf seen = {0};
    ardea_state_scan("", 0, scan_collect, &seen);
    bu8(&seen, 0);
    char want[512];
    snprintf(want, sizeof want, "big=%.100s;big2=%.100s;k1=v1;k1copy=v1;n=\xf9\xff\xff\xff\xff\xff\xff\xff;", big, big);
    CHECK(strcmp((char *)seen.p, want) == 0,
          "scan saw %s (%zu bytes)", seen.p, seen.n);
    seen.n = 0;
    ardea_state_scan("k1", 2, scan_collect, &seen);
    bu8(&seen, 0);
    CHECK(strcmp((char *)seen.p, "k1=v1;k1copy=v1;") == 0, "prefix scan saw %s", seen.p);
    free(seen.p);
    ardea_state_delete("k1copy", 6);
    CHECK(!ardea_state_get("k1copy", 6, &v), "k1copy after delete");
    return 0;
}

void test_state_api(void) {
    start("state/api");
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    host_reset();
    ardea_test_state_put(H, "gone", 4, "x", 1);
    prepare_with(&bolt_comp, &out, 1, &in, 1);
    t_execute = exec_state_api;
    buf b = {0};
    const char *w[] = {"x"};
    words_batch(&b, w, 1, 0);
    CHECK(ardea_export_execute(put_input(&b)) == 0, "execute: %s", h_error);
    CHECK(!host_has("k1copy") && !host_has("gone") && host_has("k1"), "host state after call");
    free(b.p);
    finish_test();
}

/* cache bounds: more keys than the cache holds still count right */
static int exec_many(const ardea_tuple *t) {
    (void)t;
    char k[16];
    for (int i = 0; i < 70000; i++) {
        int n = snprintf(k, sizeof k, "k%d", i);
        ardea_state_add_int(k, (size_t)n, 1);
    }
    return 0;
}

void test_state_bounds(void) {
    start("state/cache bound");
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    host_reset();
    prepare_with(&bolt_comp, &out, 1, &in, 1);
    t_execute = exec_many;
    buf b = {0};
    const char *w[] = {"x"};
    words_batch(&b, w, 1, 0);
    CHECK(ardea_export_execute(put_input(&b)) == 0, "execute: %s", h_error);
    /* The cache flushes when it is full (65536 entries) and may flush
     * earlier when a probe runs long: its hash is seeded at random, so
     * the exact number of writes varies. What must hold: at least one
     * flush before the end, and every key counted exactly once. */
    CHECK(h_state_writes >= 2, "%d state_write calls, want at least 2 (one at the bound)", h_state_writes);
    char k[16], first_bad[16] = "";
    int bad = 0;
    for (int i = 0; i < 70000; i++) {
        int n = snprintf(k, sizeof k, "k%d", i);
        int64_t v = 0;
        ardea_test_state_get_int(H, k, (size_t)n, &v);
        if (v != 1 && bad++ == 0)
            memcpy(first_bad, k, sizeof k);
    }
    CHECK(bad == 0, "%d keys not counted once in the host state (first: %s)", bad, first_bad);
    finish_test();
}
