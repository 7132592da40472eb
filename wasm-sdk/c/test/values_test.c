/*
 * The values.txt and batch.txt vectors: decoding tuples and batches, and
 * re-encoding values through the emit API.
 */
#include "test_util.h"

/* ---- values.txt ---- */
static const spec *cur_spec;
static const char *cur_name;
static const uint8_t *cur_raw;
static size_t cur_rawlen;

static int exec_values(const ardea_tuple *t) {
    check_tuple(cur_name, t, cur_spec);
    ardea_str raw = ardea_tuple_raw(t);
    CHECK(raw.len == cur_rawlen && memcmp(raw.ptr, cur_raw, raw.len) == 0, "%s: raw differs", cur_name);
    /* Encode: the spec through the public emit API. */
    ardea_emit(cur_spec->v, (size_t)cur_spec->n);
    /* Re-emit what the accessors decoded. */
    ardea_value *back = calloc((size_t)cur_spec->n + 1, sizeof(ardea_value));
    for (size_t i = 0; i < ardea_tuple_len(t); i++)
        back[i] = ardea_tuple_value(t, i);
    /* by name, through a reused buffer (the name cache must not be fooled) */
    char name[16];
    for (size_t i = 0; i < ardea_tuple_len(t) && i < 50; i++) {
        snprintf(name, sizeof name, "f%zu", i);
        CHECK(ardea_tuple_index(t, name) == (int)i, "%s: index of %s", cur_name, name);
        if (ardea_tuple_kind(t, i) == ARDEA_INT)
            CHECK(ardea_tuple_int_by_name(t, name) == ardea_tuple_int(t, i), "%s: int by name", cur_name);
        if (ardea_tuple_kind(t, i) == ARDEA_FLOAT) {
            double a = ardea_tuple_float_by_name(t, name), b = ardea_tuple_float(t, i);
            CHECK(memcmp(&a, &b, 8) == 0, "%s: float by name", cur_name);
        }
        if (ardea_tuple_kind(t, i) == ARDEA_BOOL)
            CHECK(ardea_tuple_bool_by_name(t, name) == ardea_tuple_bool(t, i), "%s: bool by name", cur_name);
        if (ardea_tuple_kind(t, i) == ARDEA_STRING || ardea_tuple_kind(t, i) == ARDEA_BYTES) {
            ardea_str x = ardea_tuple_str_by_name(t, name), y = ardea_tuple_bytes_by_name(t, name);
            CHECK(x.ptr == y.ptr && x.len == y.len && x.ptr == ardea_tuple_str(t, i).ptr, "%s: str by name", cur_name);
        }
    }
    CHECK(ardea_tuple_index(t, "nope") == -1, "%s: undeclared name", cur_name);
    /* a clone keeps the values */
    ardea_tuple c;
    CHECK(ardea_tuple_clone(t, &c) == 0, "clone");
    CHECK(ardea_tuple_len(&c) == ardea_tuple_len(t) && ardea_tuple_raw(&c).len == raw.len &&
              memcmp(ardea_tuple_raw(&c).ptr, raw.ptr, raw.len) == 0 && ardea_tuple_raw(&c).ptr != raw.ptr,
          "%s: clone", cur_name);
    ardea_tuple_free(&c);
    ardea_emit_to("default", back, ardea_tuple_len(t));
    free(back);
    return 0;
}

void test_values(void) {
    start("vectors/values");
    vfile f = load("values.txt");
    buf enc = {0}, batch = {0}, want = {0};
    for (int l = 0; l < f.n; l++) {
        char *col[3];
        if (split(f.lines[l], '\t', col, 3) != 3) {
            CHECK(0, "line %d: columns", l);
            continue;
        }
        spec s = parse_spec(col[1]);
        unhex(&enc, col[2]);
        decl out = {"default", s.n, NULL}, in = {"", s.n, NULL};
        host_reset();
        CHECK(prepare_with(&bolt_comp, &out, 1, &in, 1) == 0, "%s: prepare: %s", col[0], h_error);
        cur_spec = &s;
        cur_name = col[0];
        cur_raw = enc.p;
        cur_rawlen = enc.n;
        t_execute = exec_values;
        batch_one(&batch, 0, 1, 0, enc.p, enc.n);
        int32_t rc = ardea_export_execute(put_input(&batch));
        CHECK(rc == 0, "%s: execute = %d: %s", col[0], rc, h_error);
        want.n = 0;
        for (int k = 0; k < 2; k++) {
            emit_header(&want, (size_t)s.n);
            bput(&want, enc.p, enc.n);
        }
        CHECK(h_ops.n == want.n && memcmp(h_ops.p, want.p, want.n) == 0,
              "%s: emitted ops differ from the vector (%zu bytes, want %zu)", col[0], h_ops.n, want.n);
        CHECK(h_emits == 1 || want.n > (64u << 10), "%s: %d emit calls", col[0], h_emits);
        free_spec(&s);
    }
    free(enc.p);
    free(batch.p);
    free(want.p);
    finish_test();
}

/* ---- batch.txt ---- */
typedef struct {
    unsigned input;
    uint32_t src;
    uint64_t id;
    spec vals;
} vrec;
static vrec *b_recs;
static int b_nrecs, b_seen;

static int exec_batch(const ardea_tuple *t) {
    if (b_seen >= b_nrecs) {
        CHECK(0, "%s: more than %d records", cur_name, b_nrecs);
        return 0;
    }
    vrec *w = &b_recs[b_seen];
    char cname[8];
    snprintf(cname, sizeof cname, "c%u", w->input);
    CHECK(ardea_tuple_input(t) == w->input && ardea_tuple_source_task(t) == w->src && ardea_tuple_id(t) == w->id &&
              ardea_str_eq(ardea_tuple_component(t), cname),
          "%s: record %d: input %zu source %" PRIu32 " id %" PRIu64, cur_name, b_seen, ardea_tuple_input(t),
          ardea_tuple_source_task(t), ardea_tuple_id(t));
    check_tuple(cur_name, t, &w->vals);
    b_seen++;
    return 0;
}

void test_batch(void) {
    start("vectors/batch");
    vfile f = load("batch.txt");
    buf enc = {0};
    for (int l = 0; l < f.n; l++) {
        char *col[3];
        split(f.lines[l], '\t', col, 3);
        b_nrecs = 0;
        b_seen = 0;
        b_recs = NULL;
        if (strcmp(col[1], "-") != 0) {
            char *recs[4096];
            int nr = split(col[1], '|', recs, 4096);
            b_recs = calloc((size_t)nr, sizeof(vrec));
            for (int r = 0; r < nr; r++) {
                char *p[4];
                split(recs[r], ',', p, 4);
                b_recs[r].input = (unsigned)strtoul(p[0], NULL, 10);
                b_recs[r].src = (uint32_t)strtoul(p[1], NULL, 10);
                b_recs[r].id = strtoull(p[2], NULL, 10);
                b_recs[r].vals = parse_spec(p[3]);
            }
            b_nrecs = nr;
        }
        unhex(&enc, col[2]);
        decl out = {"default", 0, NULL};
        decl ins[3] = {{"", 0, NULL}, {"", 0, NULL}, {"", 0, NULL}};
        host_reset();
        prepare_with(&bolt_comp, &out, 1, ins, 3);
        cur_name = col[0];
        t_execute = exec_batch;
        int32_t rc = ardea_export_execute(put_input(&enc));
        CHECK(rc == 0, "%s: execute = %d: %s", col[0], rc, h_error);
        CHECK(b_seen == b_nrecs, "%s: %d records, want %d", col[0], b_seen, b_nrecs);
        for (int r = 0; r < b_nrecs; r++)
            free_spec(&b_recs[r].vals);
        free(b_recs);
    }
    free(enc.p);
    finish_test();
}
