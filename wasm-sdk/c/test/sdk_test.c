/*
 * Native tests of the C SDK: ardea.c compiled for the host with the wasm
 * imports replaced by the test double below. Loads every file of the
 * shared vectors (wasm-sdk/testdata, formats in its README.md) and checks
 * that what the SDK encodes equals their bytes and what it decodes equals
 * their specs, then checks runtime behaviour (state cache, errors, spout
 * loop). Run by sdk_test.go; by hand:
 *
 *     cc -std=c11 -O1 -Wall -Wextra -Werror -I wasm-sdk/c/include -o /tmp/sdk_test \
 *         wasm-sdk/c/test/sdk_test.c wasm-sdk/c/src/ardea.c && /tmp/sdk_test wasm-sdk/testdata
 *
 * It prints "N passed, N failed" and exits non-zero on any failure.
 */
#define _DEFAULT_SOURCE 1
#include "ardea.h"

#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the SDK's test hooks (ardea.c, native build) ---- */
extern const ardea_component *ardea_test_component;
void *ardea_export_buffer(int32_t size);
int32_t ardea_export_abi_version(void);
int32_t ardea_export_open(int32_t n);
int32_t ardea_export_prepare(int32_t n);
int32_t ardea_export_next(int32_t max);
int32_t ardea_export_ack(int32_t n);
int32_t ardea_export_fail(int32_t n);
int32_t ardea_export_activate(void);
int32_t ardea_export_deactivate(void);
int32_t ardea_export_execute(int32_t n);
int32_t ardea_export_tick(void);
int32_t ardea_export_finish(void);
int32_t ardea_export_close(void);

/* ---- results ---- */
static int passed, failed;
static const char *cur_test = "";
static int cur_failures;

#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (!(cond)) {                                                   \
            fprintf(stderr, "FAIL %s:%d [%s]: ", __FILE__, __LINE__, cur_test); \
            fprintf(stderr, __VA_ARGS__);                                \
            fputc('\n', stderr);                                         \
            cur_failures++;                                              \
        }                                                                \
    } while (0)

static void start(const char *name) {
    cur_test = name;
    cur_failures = 0;
}

static void finish_test(void) {
    if (cur_failures)
        failed++;
    else
        passed++;
    printf("%s %s\n", cur_failures ? "FAIL" : "ok  ", cur_test);
}

/* ---- byte buffers ---- */
typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;

static void bput(buf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n)
            c *= 2;
        b->p = realloc(b->p, c);
        if (!b->p)
            abort();
        b->cap = c;
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void bu8(buf *b, uint8_t v) { bput(b, &v, 1); }
static void bu16(buf *b, uint16_t v) {
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    bput(b, x, 2);
}
static void bu32(buf *b, uint32_t v) {
    uint8_t x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    bput(b, x, 4);
}
static void bu64(buf *b, uint64_t v) {
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    bput(b, x, 8);
}
static void bstr(buf *b, const void *p, size_t n) {
    bu32(b, (uint32_t)n);
    bput(b, p, n);
}
static void bcstr(buf *b, const char *s) { bstr(b, s, strlen(s)); }
static uint64_t rd64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* ---- the host test double ---- */
static buf h_ops;     /* every emitted op, concatenated */
static int h_emits;   /* emit calls */
static char h_error[4096];
static int h_errors;
static char h_log[64][256];
static int h_log_level[64];
static int h_nlog;
static int h_state_gets, h_state_writes;
typedef struct {
    char *k;
    size_t kn;
    uint8_t *v;
    size_t vn;
    bool gone; /* deleted (the entry keeps its index cell) */
} kv;
static kv *h_state;
static int h_nstate, h_capstate;
static int *h_idx; /* open addressing: entry + 1, 0 empty */
static size_t h_idxsize;
static char h_metric_name[16][64];
static int64_t h_metric_delta[16];
static int h_nmetric;

static void host_reset(void) {
    h_ops.n = 0;
    h_emits = 0;
    h_error[0] = 0;
    h_errors = 0;
    h_nlog = 0;
    h_state_gets = h_state_writes = 0;
    for (int i = 0; i < h_nstate; i++) {
        free(h_state[i].k);
        free(h_state[i].v);
    }
    h_nstate = 0;
    if (h_idx)
        memset(h_idx, 0, h_idxsize * sizeof(int));
    h_nmetric = 0;
}

void ardea_host_emit(const void *ops, uint32_t len) {
    h_emits++;
    bput(&h_ops, ops, len);
}
void ardea_host_log(int32_t level, const void *msg, uint32_t len) {
    if (h_nlog < 64) {
        snprintf(h_log[h_nlog], sizeof h_log[0], "%.*s", (int)len, (const char *)msg);
        h_log_level[h_nlog++] = level;
    }
}
void ardea_host_error(const void *msg, uint32_t len) {
    h_errors++;
    snprintf(h_error, sizeof h_error, "%.*s", (int)len, (const char *)msg);
}
static size_t key_hash(const void *k, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const uint8_t *)k)[i]) * 0x100000001b3ull;
    return (size_t)h;
}

/* state_cell returns the index cell of a key (holding 0 if absent). */
static int *state_cell(const void *k, size_t n) {
    size_t i = key_hash(k, n) & (h_idxsize - 1);
    for (;; i = (i + 1) & (h_idxsize - 1)) {
        int e = h_idx[i];
        if (e == 0 || (h_state[e - 1].kn == n && memcmp(h_state[e - 1].k, k, n) == 0))
            return &h_idx[i];
    }
}

static int state_find(const void *k, size_t n) {
    if (h_idxsize == 0)
        return -1;
    int e = *state_cell(k, n);
    return e == 0 || h_state[e - 1].gone ? -1 : e - 1;
}

int32_t ardea_host_state_get(const void *key, uint32_t klen, void *val, uint32_t vcap) {
    h_state_gets++;
    int i = state_find(key, klen);
    if (i < 0)
        return -1;
    if (h_state[i].vn <= vcap)
        memcpy(val, h_state[i].v, h_state[i].vn);
    return (int32_t)h_state[i].vn;
}
static void state_set(const void *k, size_t kn, const void *v, size_t vn) {
    if (2 * ((size_t)h_nstate + 1) > h_idxsize) {
        h_idxsize = h_idxsize ? 2 * h_idxsize : 1024;
        free(h_idx);
        h_idx = calloc(h_idxsize, sizeof(int));
        for (int j = 0; j < h_nstate; j++)
            *state_cell(h_state[j].k, h_state[j].kn) = j + 1;
    }
    int *cell = state_cell(k, kn);
    int i = *cell - 1;
    if (i < 0) {
        if (h_nstate == h_capstate) {
            h_capstate = h_capstate ? 2 * h_capstate : 256;
            h_state = realloc(h_state, (size_t)h_capstate * sizeof(kv));
        }
        i = h_nstate++;
        *cell = i + 1;
        h_state[i].k = malloc(kn + 1);
        memcpy(h_state[i].k, k, kn);
        h_state[i].kn = kn;
    } else {
        free(h_state[i].v);
    }
    h_state[i].gone = false;
    h_state[i].v = malloc(vn + 1);
    memcpy(h_state[i].v, v, vn);
    h_state[i].vn = vn;
}
static void state_del(const void *k, size_t kn) {
    int i = state_find(k, kn);
    if (i >= 0)
        h_state[i].gone = true;
}
void ardea_host_state_write(const void *ops, uint32_t len) {
    h_state_writes++;
    const uint8_t *p = ops, *end = p + len;
    while (p < end) {
        uint8_t op = p[0];
        uint32_t kl = rd32(p + 1);
        const uint8_t *k = p + 5;
        uint32_t vl = rd32(k + kl);
        const uint8_t *v = k + kl + 4;
        if (op == 1)
            state_set(k, kl, v, vl);
        else
            state_del(k, kl);
        p = v + vl;
    }
}
static int kv_cmp(const void *a, const void *b) {
    const kv *x = a, *y = b;
    size_t n = x->kn < y->kn ? x->kn : y->kn;
    int c = memcmp(x->k, y->k, n);
    return c ? c : (x->kn > y->kn) - (x->kn < y->kn);
}
int32_t ardea_host_state_scan(const void *prefix, uint32_t plen, void *out, uint32_t cap) {
    kv *sorted = malloc(((size_t)h_nstate + 1) * sizeof(kv));
    int ns = 0;
    for (int i = 0; i < h_nstate; i++)
        if (!h_state[i].gone)
            sorted[ns++] = h_state[i];
    qsort(sorted, (size_t)ns, sizeof(kv), kv_cmp);
    buf b = {0};
    uint32_t count = 0;
    bu32(&b, 0);
    for (int i = 0; i < ns; i++) {
        if (sorted[i].kn >= plen && memcmp(sorted[i].k, prefix, plen) == 0) {
            count++;
            bstr(&b, sorted[i].k, sorted[i].kn);
            bstr(&b, sorted[i].v, sorted[i].vn);
        }
    }
    free(sorted);
    for (int i = 0; i < 4; i++)
        b.p[i] = (uint8_t)(count >> (8 * i));
    int32_t n = (int32_t)b.n;
    if (b.n <= cap)
        memcpy(out, b.p, b.n);
    free(b.p);
    return n;
}
void ardea_host_metric(const void *name, uint32_t len, int64_t delta) {
    if (h_nmetric < 16) {
        snprintf(h_metric_name[h_nmetric], 64, "%.*s", (int)len, (const char *)name);
        h_metric_delta[h_nmetric++] = delta;
    }
}
int64_t ardea_host_now(void) { return 1234567890123456789LL; }

static jmp_buf trap_jb;
static int trap_armed, trapped;
void ardea_test_trap(void) {
    trapped++;
    if (trap_armed)
        longjmp(trap_jb, 1);
    fprintf(stderr, "unexpected trap: %s\n", h_error);
    abort();
}

/* ---- components under test: function pointers set per test ---- */
static int (*t_execute)(const ardea_tuple *t);
static int (*t_prepare)(const ardea_context *ctx);
static int (*t_tick)(void);
static int (*t_finish)(void);
static int (*t_next)(void);
static void (*t_ack)(uint64_t);
static void (*t_fail)(uint64_t);

static int d_prepare(const ardea_context *c) { return t_prepare ? t_prepare(c) : 0; }
static int d_execute(const ardea_tuple *t) {
    if (!t_execute) {
        ardea_ack_tuple(t);
        return 0;
    }
    return t_execute(t);
}
static int d_tick(void) { return t_tick ? t_tick() : 0; }
static int d_finish(void) { return t_finish ? t_finish() : 0; }
static int d_next(void) { return t_next(); }
static void d_ack(uint64_t id) { t_ack(id); }
static void d_fail(uint64_t id) { t_fail(id); }

static const ardea_bolt test_bolt = {.prepare = d_prepare, .execute = d_execute, .tick = d_tick, .finish = d_finish};
static const ardea_bolt plain_bolt = {0}; /* execute NULL: acks */
static const ardea_spout spout_obj = {.next = d_next, .ack = d_ack, .fail = d_fail};
static const ardea_component bolt_comp = {0, &test_bolt};
static const ardea_component plain_comp = {0, &plain_bolt};
static const ardea_component spout_comp = {&spout_obj, 0};

/* The module's registered component (the tests swap it). */
ARDEA_REGISTER_BOLT(plain_bolt);

/* ---- input helpers ---- */
static int32_t put_input(const buf *b) {
    uint8_t *p = ardea_export_buffer((int32_t)b->n);
    if (b->n)
        memcpy(p, b->p, b->n);
    return (int32_t)b->n;
}

typedef struct {
    const char *name;
    int nfields;
    const char **fields; /* NULL: f0..f(n-1) */
} decl;

/* ctx_blob encodes a context: outputs and inputs as decls (inputs are
 * named component "c<i>", stream "s<i>"). */
static void ctx_blob(buf *b, const decl *outs, int nout, const decl *ins, int nin) {
    b->n = 0;
    bcstr(b, "topo");
    bcstr(b, "comp");
    bu32(b, 7);
    bu32(b, 1);
    bu32(b, 2);
    bu32(b, 2);
    bcstr(b, "a.int");
    bcstr(b, " -42 ");
    bcstr(b, "prefix");
    bcstr(b, "pre-");
    const decl *all[2] = {outs, ins};
    int cnt[2] = {nout, nin};
    for (int side = 0; side < 2; side++) {
        bu16(b, (uint16_t)cnt[side]);
        for (int i = 0; i < cnt[side]; i++) {
            const decl *d = &all[side][i];
            char tmp[32];
            if (side == 1) {
                snprintf(tmp, sizeof tmp, "c%d", i);
                bcstr(b, tmp);
                snprintf(tmp, sizeof tmp, "s%d", i);
                bcstr(b, tmp);
            } else {
                bcstr(b, d->name);
            }
            bu16(b, (uint16_t)d->nfields);
            for (int j = 0; j < d->nfields; j++) {
                if (d->fields) {
                    bcstr(b, d->fields[j]);
                } else {
                    snprintf(tmp, sizeof tmp, "f%d", j);
                    bcstr(b, tmp);
                }
            }
        }
    }
}

static int32_t prepare_with(const ardea_component *c, const decl *outs, int nout, const decl *ins, int nin) {
    buf b = {0};
    ctx_blob(&b, outs, nout, ins, nin);
    ardea_test_component = c;
    int32_t rc = c->spout ? ardea_export_open(put_input(&b)) : ardea_export_prepare(put_input(&b));
    free(b.p);
    return rc;
}

static void batch_one(buf *b, uint16_t input, uint32_t src, uint64_t id, const uint8_t *vals, size_t n) {
    b->n = 0;
    bu32(b, 1);
    bu32(b, (uint32_t)(14 + n));
    bu16(b, input);
    bu32(b, src);
    bu64(b, id);
    bput(b, vals, n);
}

/* ---- vector files ---- */
typedef struct {
    char **lines;
    int n;
} vfile;

static char *vdir;

static vfile load(const char *name) {
    vfile f = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", vdir, name);
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int cap_lines = 0;
    while ((len = getline(&line, &cap, fp)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = 0;
        if (len == 0 || line[0] == '#')
            continue;
        if (f.n == cap_lines) {
            cap_lines = cap_lines ? 2 * cap_lines : 64;
            f.lines = realloc(f.lines, (size_t)cap_lines * sizeof(char *));
        }
        f.lines[f.n++] = strdup(line);
    }
    free(line);
    fclose(fp);
    if (f.n == 0) {
        fprintf(stderr, "%s: no vectors\n", name);
        exit(2);
    }
    return f;
}

/* split cuts s in place at sep into at most max parts. */
static int split(char *s, char sep, char **out, int max) {
    int n = 0;
    out[n++] = s;
    for (char *p = s; *p && n < max; p++) {
        if (*p == sep) {
            *p = 0;
            out[n++] = p + 1;
        }
    }
    return n;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

static void unhex(buf *b, const char *s) {
    b->n = 0;
    size_t n = strlen(s);
    if (n % 2) {
        fprintf(stderr, "odd hex %s\n", s);
        exit(2);
    }
    for (size_t i = 0; i < n; i += 2) {
        int hi = hexval(s[i]), lo = hexval(s[i + 1]);
        if (hi < 0 || lo < 0) {
            fprintf(stderr, "bad hex %s\n", s);
            exit(2);
        }
        bu8(b, (uint8_t)(hi << 4 | lo));
    }
}

/* A parsed values spec: values point into their own byte buffers. */
typedef struct {
    ardea_value *v;
    buf *bytes;
    int n;
} spec;

static spec parse_spec(const char *text) {
    spec s = {0};
    if (strcmp(text, "-") == 0)
        return s;
    char *copy = strdup(text);
    int cnt = 1;
    for (char *p = copy; *p; p++)
        cnt += *p == ' ';
    s.v = calloc((size_t)cnt, sizeof(ardea_value));
    s.bytes = calloc((size_t)cnt, sizeof(buf));
    char *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *arg = strchr(tok, ':');
        if (!arg) {
            fprintf(stderr, "bad spec token %s\n", tok);
            exit(2);
        }
        arg++;
        ardea_value *v = &s.v[s.n];
        switch (tok[0]) {
        case 'n':
            *v = ardea_val_null();
            break;
        case 's':
        case 'x':
            unhex(&s.bytes[s.n], arg);
            *v = tok[0] == 's' ? ardea_val_strn(s.bytes[s.n].p ? (const char *)s.bytes[s.n].p : "", s.bytes[s.n].n)
                               : ardea_val_bytes(s.bytes[s.n].p ? (const char *)s.bytes[s.n].p : "", s.bytes[s.n].n);
            break;
        case 'i':
            *v = ardea_val_int(strtoll(arg, NULL, 10));
            break;
        case 'f':
            *v = ardea_val_float(strtod(arg, NULL));
            break;
        case 'b':
            *v = ardea_val_bool(arg[0] == '1');
            break;
        default:
            fprintf(stderr, "bad spec token %s\n", tok);
            exit(2);
        }
        s.n++;
    }
    free(copy);
    return s;
}

static void free_spec(spec *s) {
    for (int i = 0; i < s->n; i++)
        free(s->bytes[i].p);
    free(s->bytes);
    free(s->v);
}

/* check_tuple compares a tuple's accessors with a spec. */
static void check_tuple(const char *name, const ardea_tuple *t, const spec *want) {
    CHECK(ardea_tuple_len(t) == (size_t)want->n, "%s: %zu fields, want %d", name, ardea_tuple_len(t), want->n);
    if (ardea_tuple_len(t) != (size_t)want->n)
        return;
    for (int i = 0; i < want->n; i++) {
        const ardea_value *v = &want->v[i];
        bool ok = ardea_tuple_kind(t, (size_t)i) == v->kind;
        switch (v->kind) {
        case ARDEA_NULL:
            ok = ok && ardea_tuple_is_null(t, (size_t)i);
            break;
        case ARDEA_STRING:
        case ARDEA_BYTES: {
            ardea_str s = v->kind == ARDEA_STRING ? ardea_tuple_str(t, (size_t)i) : ardea_tuple_bytes(t, (size_t)i);
            ok = ok && s.len == v->u.s.len && memcmp(s.ptr, v->u.s.ptr, s.len) == 0;
            char *d = ardea_tuple_strdup(t, (size_t)i);
            ok = ok && memcmp(d, v->u.s.ptr, s.len) == 0 && d[s.len] == 0;
            free(d);
            break;
        }
        case ARDEA_INT:
            ok = ok && ardea_tuple_int(t, (size_t)i) == v->u.i;
            break;
        case ARDEA_FLOAT: {
            double f = ardea_tuple_float(t, (size_t)i);
            ok = ok && memcmp(&f, &v->u.f, 8) == 0;
            break;
        }
        case ARDEA_BOOL:
            ok = ok && ardea_tuple_bool(t, (size_t)i) == v->u.b;
            break;
        }
        CHECK(ok, "%s: field %d differs from the spec (kind %d)", name, i, (int)v->kind);
    }
}

/* emit_header is an unanchored, undirected emit op header on stream 0. */
static void emit_header(buf *b, size_t nvals) {
    bu8(b, 1);
    bu16(b, 0);
    bu32(b, 0xFFFFFFFFu);
    bu64(b, 0);
    bu16(b, 0);
    (void)nvals;
}

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

static void test_values(void) {
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

static void test_batch(void) {
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

/* ---- ops.txt ---- */
typedef struct {
    int code; /* 1 emit, 2 ack, 3 fail */
    unsigned stream;
    uint32_t direct;
    uint64_t msgid;
    ardea_tuple anchors[16];
    int nanchors;
    spec vals;
} vop;
static vop *o_ops;
static int o_nops;
static const char *stream_names[8] = {"default", "s1", "s2", "s3", "s4", "s5", "s6", "s7"};

static int exec_ops(const ardea_tuple *t) {
    (void)t;
    for (int i = 0; i < o_nops; i++) {
        vop *o = &o_ops[i];
        const char *stream = stream_names[o->stream];
        ardea_tuple idt;
        memset(&idt, 0, sizeof idt);
        idt.id = o->msgid;
        if (o->code == 2)
            ardea_ack_tuple(&idt);
        else if (o->code == 3)
            ardea_fail_tuple(&idt);
        else if (o->direct != ARDEA_NO_TASK)
            ardea_emit_direct_anchored(o->direct, stream, o->anchors, (size_t)o->nanchors, o->vals.v,
                                       (size_t)o->vals.n);
        else if (o->nanchors == 1 && o->stream == 0)
            ardea_emit_anchored(&o->anchors[0], o->vals.v, (size_t)o->vals.n);
        else if (o->nanchors == 1)
            ardea_emit_anchored_to(stream, &o->anchors[0], o->vals.v, (size_t)o->vals.n);
        else if (o->nanchors == 0 && o->stream == 0)
            ardea_emit(o->vals.v, (size_t)o->vals.n);
        else if (o->nanchors == 0)
            ardea_emit_to(stream, o->vals.v, (size_t)o->vals.n);
        else
            ardea_emit_multi_anchored(stream, o->anchors, (size_t)o->nanchors, o->vals.v, (size_t)o->vals.n);
    }
    return 0;
}

static int next_ops(void) {
    for (int i = 0; i < o_nops; i++) {
        vop *o = &o_ops[i];
        const char *stream = stream_names[o->stream];
        if (o->direct != ARDEA_NO_TASK)
            ardea_emit_direct_with_id(o->direct, stream, o->msgid, o->vals.v, (size_t)o->vals.n);
        else if (o->stream == 0)
            ardea_emit_with_id(o->msgid, o->vals.v, (size_t)o->vals.n);
        else
            ardea_emit_to_with_id(stream, o->msgid, o->vals.v, (size_t)o->vals.n);
    }
    return ARDEA_DONE;
}

/* ops_valid is a decoder for op sequences as the host reads them (the
 * SDK only encodes ops): it checks that the vectors are well-formed and
 * that the invalid ones are not. */
static bool values_valid(const uint8_t *b, size_t n, size_t *used) {
    if (n < 2)
        return false;
    size_t cnt = rd16(b), off = 2;
    for (size_t i = 0; i < cnt; i++) {
        if (off >= n)
            return false;
        size_t left = n - off;
        switch (b[off]) {
        case 0:
            off += 1;
            break;
        case 1:
        case 2:
            if (left < 5 || left - 5 < rd32(b + off + 1))
                return false;
            off += 5 + rd32(b + off + 1);
            break;
        case 3:
        case 4:
            if (left < 9)
                return false;
            off += 9;
            break;
        case 5:
            if (left < 2 || b[off + 1] > 1)
                return false;
            off += 2;
            break;
        default:
            return false;
        }
    }
    *used = off;
    return true;
}

static bool ops_valid(const uint8_t *b, size_t n) {
    size_t off = 0;
    while (off < n) {
        uint8_t code = b[off];
        size_t left = n - off;
        if (code == 2 || code == 3) {
            if (left < 9)
                return false;
            off += 9;
        } else if (code == 1) {
            if (left < 17)
                return false;
            size_t na = rd16(b + off + 15);
            if (left - 17 < 8 * na)
                return false;
            size_t used;
            if (!values_valid(b + off + 17 + 8 * na, left - 17 - 8 * na, &used))
                return false;
            off += 17 + 8 * na + used;
        } else {
            return false;
        }
    }
    return true;
}

static void test_ops(void) {
    start("vectors/ops");
    vfile f = load("ops.txt");
    buf enc = {0}, batch = {0};
    for (int l = 0; l < f.n; l++) {
        char *col[3];
        split(f.lines[l], '\t', col, 3);
        char *ops[1024];
        int n = split(col[1], '|', ops, 1024);
        o_ops = calloc((size_t)n, sizeof(vop));
        o_nops = n;
        bool spout = true;
        int nfields[8] = {0}, maxs = 0;
        for (int i = 0; i < n; i++) {
            vop *o = &o_ops[i];
            char *p[6];
            int np = split(ops[i], ',', p, 6);
            if (strcmp(p[0], "emit") != 0) {
                o->code = strcmp(p[0], "ack") == 0 ? 2 : 3;
                o->msgid = strtoull(p[1], NULL, 10);
                spout = false;
                continue;
            }
            if (np != 6) {
                CHECK(0, "%s: op %d", col[0], i);
                continue;
            }
            o->code = 1;
            o->stream = (unsigned)strtoul(p[1], NULL, 10);
            o->direct = (uint32_t)strtoul(p[2], NULL, 10);
            o->msgid = strtoull(p[3], NULL, 10);
            if (strcmp(p[4], "-") != 0) {
                spout = false;
                char *a[16];
                int na = split(p[4], ':', a, 16);
                for (int k = 0; k < na; k++)
                    o->anchors[k].id = strtoull(a[k], NULL, 10);
                o->nanchors = na;
            }
            o->vals = parse_spec(p[5]);
            if (o->stream >= 8) {
                CHECK(0, "%s: stream %u", col[0], o->stream);
                o->stream = 0;
            }
            nfields[o->stream] = o->vals.n;
            if ((int)o->stream > maxs)
                maxs = (int)o->stream;
        }
        decl outs[8];
        for (int s = 0; s <= maxs; s++) {
            outs[s].name = stream_names[s];
            outs[s].nfields = nfields[s];
            outs[s].fields = NULL;
        }
        decl in = {"", 1, NULL};
        host_reset();
        unhex(&enc, col[2]);
        CHECK(ops_valid(enc.p, enc.n), "%s: the test's ops decoder rejects the vector", col[0]);
        if (spout) {
            CHECK(prepare_with(&spout_comp, outs, maxs + 1, NULL, 0) == 0, "%s: open: %s", col[0], h_error);
            t_next = next_ops;
            int32_t rc = ardea_export_next(1000);
            CHECK(rc == ARDEA_DONE, "%s: next = %d: %s", col[0], rc, h_error);
        } else {
            CHECK(prepare_with(&bolt_comp, outs, maxs + 1, &in, 1) == 0, "%s: prepare: %s", col[0], h_error);
            t_execute = exec_ops;
            uint8_t v[] = {1, 0, 0};
            batch_one(&batch, 0, 1, 0, v, sizeof v);
            int32_t rc = ardea_export_execute(put_input(&batch));
            CHECK(rc == 0, "%s: execute = %d: %s", col[0], rc, h_error);
        }
        CHECK(h_ops.n == enc.n && memcmp(h_ops.p, enc.p, enc.n) == 0, "%s: emitted ops differ (%zu bytes, want %zu)",
              col[0], h_ops.n, enc.n);
        for (int i = 0; i < n; i++)
            free_spec(&o_ops[i].vals);
        free(o_ops);
    }
    free(enc.p);
    free(batch.p);
    finish_test();
}

/* ---- context.txt ---- */
static const ardea_context *got_ctx;
static int prep_capture(const ardea_context *c) {
    got_ctx = c;
    return 0;
}

static void hexstr(buf *b, const ardea_str s) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < s.len; i++) {
        bu8(b, (uint8_t)d[(uint8_t)s.ptr[i] >> 4]);
        bu8(b, (uint8_t)d[(uint8_t)s.ptr[i] & 15]);
    }
}

static void test_context(void) {
    start("vectors/context");
    vfile f = load("context.txt");
    buf enc = {0}, got = {0};
    for (int l = 0; l < f.n; l++) {
        char *col[10];
        if (split(f.lines[l], '\t', col, 10) != 10) {
            CHECK(0, "line %d: columns", l);
            continue;
        }
        unhex(&enc, col[9]);
        host_reset();
        got_ctx = NULL;
        t_prepare = prep_capture;
        ardea_test_component = &bolt_comp;
        int32_t rc = ardea_export_prepare(put_input(&enc));
        t_prepare = NULL;
        CHECK(rc == 0 && got_ctx, "%s: prepare = %d: %s", col[0], rc, h_error);
        if (!got_ctx)
            continue;
        CHECK(got_ctx == ardea_get_context(), "%s: ardea_get_context", col[0]);
        got.n = 0;
        hexstr(&got, got_ctx->topology);
        bu8(&got, '\t');
        hexstr(&got, got_ctx->component);
        char tmp[128];
        snprintf(tmp, sizeof tmp, "\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu32 "\t", got_ctx->task_id, got_ctx->task_index,
                 got_ctx->parallelism);
        bput(&got, tmp, strlen(tmp));
        if (got_ctx->nconfig == 0)
            bu8(&got, '-');
        for (size_t i = 0; i < got_ctx->nconfig; i++) {
            const ardea_config_entry *e = &got_ctx->config[i];
            if (i)
                bu8(&got, ',');
            hexstr(&got, e->key);
            bu8(&got, '=');
            hexstr(&got, e->value);
            /* lookups by key agree with the entries (keys without NUL) */
            if (memchr(e->key.ptr, 0, e->key.len) == NULL) {
                const char *v = ardea_config_get(got_ctx, e->key.ptr);
                CHECK(v && strlen(v) <= e->value.len && memcmp(v, e->value.ptr, strlen(v)) == 0 &&
                          e->key.ptr[e->key.len] == 0 && e->value.ptr[e->value.len] == 0,
                      "%s: config_get(%s)", col[0], e->key.ptr);
            }
        }
        bu8(&got, '\t');
        if (got_ctx->noutputs == 0)
            bu8(&got, '-');
        for (size_t i = 0; i < got_ctx->noutputs; i++) {
            const ardea_stream *o = &got_ctx->outputs[i];
            if (i)
                bu8(&got, ',');
            hexstr(&got, o->name);
            for (size_t j = 0; j < o->nfields; j++) {
                bu8(&got, ':');
                hexstr(&got, o->fields[j]);
            }
        }
        bu8(&got, '\t');
        if (got_ctx->ninputs == 0)
            bu8(&got, '-');
        for (size_t i = 0; i < got_ctx->ninputs; i++) {
            const ardea_input *in = &got_ctx->inputs[i];
            if (i)
                bu8(&got, ',');
            hexstr(&got, in->component);
            bu8(&got, ':');
            hexstr(&got, in->stream);
            for (size_t j = 0; j < in->nfields; j++) {
                bu8(&got, ':');
                hexstr(&got, in->fields[j]);
            }
        }
        bu8(&got, 0);
        buf want = {0};
        for (int c = 1; c <= 8; c++) {
            bput(&want, col[c], strlen(col[c]));
            bu8(&want, c == 8 ? 0 : '\t');
        }
        CHECK(strcmp((char *)got.p, (char *)want.p) == 0, "%s: context\n got %s\nwant %s", col[0], got.p, want.p);
        free(want.p);
    }
    free(enc.p);
    free(got.p);
    finish_test();
}

/* ---- msgids.txt ---- */
static uint64_t m_acked[512], m_failed[512];
static int m_nacked, m_nfailed;
static void rec_ack(uint64_t id) {
    if (m_nacked < 512)
        m_acked[m_nacked++] = id;
}
static void rec_fail(uint64_t id) {
    if (m_nfailed < 512)
        m_failed[m_nfailed++] = id;
}

static void test_msgids(void) {
    start("vectors/msgids");
    vfile f = load("msgids.txt");
    buf enc = {0};
    decl out = {"default", 1, NULL};
    for (int l = 0; l < f.n; l++) {
        char *col[3];
        split(f.lines[l], '\t', col, 3);
        uint64_t want[512];
        int nwant = 0;
        if (strcmp(col[1], "-") != 0) {
            char *ids[512];
            int n = split(col[1], ',', ids, 512);
            for (int i = 0; i < n; i++)
                want[nwant++] = strtoull(ids[i], NULL, 10);
        }
        host_reset();
        prepare_with(&spout_comp, &out, 1, NULL, 0);
        t_ack = rec_ack;
        t_fail = rec_fail;
        m_nacked = m_nfailed = 0;
        unhex(&enc, col[2]);
        CHECK(ardea_export_ack(put_input(&enc)) == 0, "%s: ack: %s", col[0], h_error);
        CHECK(ardea_export_fail(put_input(&enc)) == 0, "%s: fail: %s", col[0], h_error);
        CHECK(m_nacked == nwant && m_nfailed == nwant && memcmp(m_acked, want, sizeof(uint64_t) * (size_t)nwant) == 0 &&
                  memcmp(m_failed, want, sizeof(uint64_t) * (size_t)nwant) == 0,
              "%s: acked %d failed %d, want %d ids", col[0], m_nacked, m_nfailed, nwant);
    }
    free(enc.p);
    finish_test();
}

/* ---- hash.txt ---- */
static const size_t *h_fields;
static size_t h_nfields;
static uint64_t h_hash;
static char h_key[4096];
static size_t h_keylen;

static int exec_hash(const ardea_tuple *t) {
    h_hash = ardea_fields_hash(t, h_fields, h_nfields);
    h_keylen = ardea_state_key_at(t, h_fields, h_nfields, h_key, sizeof h_key);
    /* the same by field names, and into a short buffer */
    const char *names[16];
    char nb[16][8];
    for (size_t k = 0; k < h_nfields; k++) {
        snprintf(nb[k], sizeof nb[k], "f%zu", h_fields[k]);
        names[k] = nb[k];
    }
    char byname[4096], shortbuf[3];
    size_t n2 = ardea_state_key(t, names, h_nfields, byname, sizeof byname);
    CHECK(n2 == h_keylen && memcmp(byname, h_key, n2) == 0, "state_key by name differs");
    size_t n3 = ardea_state_key_at(t, h_fields, h_nfields, shortbuf, sizeof shortbuf);
    CHECK(n3 == h_keylen && memcmp(shortbuf, h_key, n3 < 3 ? n3 : 3) == 0, "state_key into a short buffer");
    if (h_nfields == 1) {
        ardea_str v = ardea_state_key_view_at(t, h_fields[0]);
        CHECK(v.len == h_keylen && memcmp(v.ptr, h_key, v.len) == 0, "state_key_view_at differs");
    }
    return 0;
}

static void check_groups(const char *name, uint64_t hash, const char *kg, const char *tasks) {
    static const uint32_t par[6] = {1, 2, 3, 7, 100, 256};
    uint32_t g = ardea_key_group(hash, 256);
    CHECK(g == (uint32_t)strtoul(kg, NULL, 10), "%s: key group %" PRIu32 ", want %s", name, g, kg);
    char copy[128];
    snprintf(copy, sizeof copy, "%s", tasks);
    char *p[6];
    int n = split(copy, ',', p, 6);
    CHECK(n == 6, "%s: tasks column", name);
    for (int i = 0; i < n; i++)
        CHECK(ardea_key_group_task(g, par[i], 256) == (uint32_t)strtoul(p[i], NULL, 10), "%s: task for p=%u", name,
              par[i]);
}

static void test_hash(void) {
    start("vectors/hash");
    vfile f = load("hash.txt");
    buf enc = {0}, batch = {0}, key = {0};
    for (int l = 0; l < f.n; l++) {
        char *col[9];
        int nc = split(f.lines[l], '\t', col, 9);
        if (strcmp(col[0], "key") == 0 && nc == 6) {
            unhex(&key, col[2]);
            uint64_t h = ardea_state_key_hash(key.p ? (const void *)key.p : "", key.n);
            CHECK(h == strtoull(col[3], NULL, 16), "%s: state key hash %016" PRIx64 ", want %s", col[1], h, col[3]);
            check_groups(col[1], strtoull(col[3], NULL, 16), col[4], col[5]);
            continue;
        }
        if (strcmp(col[0], "tuple") != 0 || nc != 9) {
            CHECK(0, "line %d: kind %s", l, col[0]);
            continue;
        }
        spec s = parse_spec(col[2]);
        size_t fields[16], nf = 0;
        char *fp[16];
        int n = split(col[3], ',', fp, 16);
        for (int i = 0; i < n; i++)
            fields[nf++] = strtoul(fp[i], NULL, 10);
        decl out = {"default", s.n, NULL}, in = {"", s.n, NULL};
        host_reset();
        enc.n = 0;
        /* the tuple's values block is the encoding the vectors pin (values.txt) */
        bu16(&enc, (uint16_t)s.n);
        for (int i = 0; i < s.n; i++) {
            ardea_value *v = &s.v[i];
            bu8(&enc, (uint8_t)v->kind);
            switch (v->kind) {
            case ARDEA_STRING:
            case ARDEA_BYTES:
                bstr(&enc, v->u.s.ptr, v->u.s.len);
                break;
            case ARDEA_INT:
                bu64(&enc, (uint64_t)v->u.i);
                break;
            case ARDEA_FLOAT: {
                uint64_t u;
                memcpy(&u, &v->u.f, 8);
                bu64(&enc, u);
                break;
            }
            case ARDEA_BOOL:
                bu8(&enc, v->u.b ? 1 : 0);
                break;
            default:
                break;
            }
        }
        prepare_with(&bolt_comp, &out, 1, &in, 1);
        h_fields = fields;
        h_nfields = nf;
        t_execute = exec_hash;
        batch_one(&batch, 0, 1, 0, enc.p, enc.n);
        CHECK(ardea_export_execute(put_input(&batch)) == 0, "%s: execute: %s", col[1], h_error);
        CHECK(h_hash == strtoull(col[4], NULL, 16), "%s: hash %016" PRIx64 ", want %s", col[1], h_hash, col[4]);
        check_groups(col[1], h_hash, col[5], col[6]);
        unhex(&key, col[7]);
        CHECK(h_keylen == key.n && memcmp(h_key, key.p ? (const void *)key.p : "", key.n) == 0, "%s: state key differs",
              col[1]);
        uint64_t kh = ardea_state_key_hash(h_key, h_keylen);
        CHECK(kh == strtoull(col[8], NULL, 16), "%s: state key hash %016" PRIx64 ", want %s", col[1], kh, col[8]);
        free_spec(&s);
    }
    free(enc.p);
    free(batch.p);
    free(key.p);
    finish_test();
}

/* ---- invalid.txt ---- */
static void test_invalid(void) {
    start("vectors/invalid");
    vfile f = load("invalid.txt");
    buf src = {0}, batch = {0};
    decl out = {"default", 1, NULL}, in = {"", 1, NULL};
    int n = 0;
    for (int l = 0; l < f.n; l++) {
        char *col[3];
        int nc = split(f.lines[l], '\t', col, 3);
        unhex(&src, nc == 3 ? col[2] : "");
        const char *kind = col[1];
        int32_t rc;
        host_reset();
        if (strcmp(kind, "values") == 0) {
            prepare_with(&plain_comp, &out, 1, &in, 1);
            batch_one(&batch, 0, 1, 0, src.p, src.n);
            rc = ardea_export_execute(put_input(&batch));
        } else if (strcmp(kind, "batch") == 0) {
            prepare_with(&plain_comp, &out, 1, &in, 1);
            rc = ardea_export_execute(put_input(&src));
        } else if (strcmp(kind, "context") == 0) {
            ardea_test_component = &plain_comp;
            rc = ardea_export_prepare(put_input(&src));
        } else if (strcmp(kind, "msgids") == 0) {
            prepare_with(&spout_comp, &out, 1, NULL, 0);
            t_ack = rec_ack;
            rc = ardea_export_ack(put_input(&src));
        } else if (strcmp(kind, "ops") == 0) {
            rc = ops_valid(src.p, src.n) ? 0 : -1; /* hosts decode ops; checked with the test's decoder */
        } else {
            CHECK(0, "%s: unknown kind %s", col[0], kind);
            continue;
        }
        n++;
        CHECK(rc < 0, "%s (%s): accepted", col[0], kind);
        if (strcmp(kind, "ops") != 0)
            CHECK(h_errors == 1 && h_error[0], "%s (%s): no error text reported", col[0], kind);
    }
    CHECK(n > 0, "no invalid vectors checked");
    free(src.p);
    free(batch.p);
    finish_test();
}

/* ---- behaviour ---- */
static const char *word_fields[] = {"word"};
static const char *count_fields[] = {"word", "count"};

static int exec_count(const ardea_tuple *t) {
    ardea_str w = ardea_state_key_view(t, "word");
    int64_t n = ardea_state_add_int(w.ptr, w.len, 1);
    ardea_emit_anchored(t, ARDEA_VALUES(ardea_val_str(w), ardea_val_int(n)));
    ardea_ack_tuple(t);
    return 0;
}

static void words_batch(buf *b, const char *const *words, int n, uint64_t first_id) {
    b->n = 0;
    bu32(b, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        size_t l = strlen(words[i]);
        bu32(b, (uint32_t)(14 + 2 + 5 + l));
        bu16(b, 0);
        bu32(b, 3);
        bu64(b, first_id ? first_id + (uint64_t)i : 0);
        bu16(b, 1);
        bu8(b, 2);
        bstr(b, words[i], l);
    }
}

static int64_t host_int(const char *k) {
    int i = state_find(k, strlen(k));
    if (i < 0 || h_state[i].vn != 8)
        return -1;
    return (int64_t)rd64(h_state[i].v);
}

static void test_state_cache(void) {
    start("state/write-back cache");
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    host_reset();
    CHECK(prepare_with(&bolt_comp, &out, 1, &in, 1) == 0, "prepare: %s", h_error);
    state_set("the", 3, "\x05\0\0\0\0\0\0\0", 8); /* counts survive in the host */
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
    h_state_gets = h_state_writes = 0;
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

static void test_state_api(void) {
    start("state/api");
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    host_reset();
    state_set("gone", 4, "x", 1);
    prepare_with(&bolt_comp, &out, 1, &in, 1);
    t_execute = exec_state_api;
    buf b = {0};
    const char *w[] = {"x"};
    words_batch(&b, w, 1, 0);
    CHECK(ardea_export_execute(put_input(&b)) == 0, "execute: %s", h_error);
    CHECK(state_find("k1copy", 6) < 0 && state_find("gone", 4) < 0 && state_find("k1", 2) >= 0, "host state after call");
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

static void test_state_bounds(void) {
    start("state/cache bound");
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    host_reset();
    prepare_with(&bolt_comp, &out, 1, &in, 1);
    t_execute = exec_many;
    buf b = {0};
    const char *w[] = {"x"};
    words_batch(&b, w, 1, 0);
    CHECK(ardea_export_execute(put_input(&b)) == 0, "execute: %s", h_error);
    CHECK(h_state_writes == 2, "%d state_write calls, want 2 (one at the bound)", h_state_writes);
    (void)0;
    finish_test();
}

static int exec_fail_after_put(const ardea_tuple *t) {
    (void)t;
    ardea_state_add_int("lost", 4, 1);
    ardea_emit(ARDEA_VALUES(ardea_val_cstr("w"), ardea_val_int(1)));
    return ardea_errorf("probe error: %s", "bad word");
}

static void test_errors(void) {
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

static void test_failures(void) {
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

static void test_untracked(void) {
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

static void test_spout(void) {
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
    ardea_log_warn("tick");
    return 0;
}
static int finish_emit(void) {
    ardea_emit(ARDEA_VALUES(ardea_val_cstr("fin"), ardea_val_int(1)));
    return 0;
}

static void test_misc(void) {
    start("context, log, metric, tick, finish");
    decl out = {"default", 2, count_fields}, in = {"", 1, word_fields};
    host_reset();
    t_prepare = prep_misc;
    CHECK(prepare_with(&bolt_comp, &out, 1, &in, 1) == 0, "prepare: %s", h_error);
    t_prepare = NULL;
    CHECK(h_nlog == 1 && strcmp(h_log[0], "prepared comp task 7 of 2") == 0 && h_log_level[0] == 0, "log %s",
          h_log[0]);
    t_tick = tick_misc;
    CHECK(ardea_export_tick() == 0, "tick");
    t_tick = NULL;
    CHECK(h_nmetric == 2 && strcmp(h_metric_name[0], "m.a") == 0 && h_metric_delta[0] == 5 &&
              strcmp(h_metric_name[1], "m.b") == 0 && h_metric_delta[1] == 1,
          "metrics");
    CHECK(h_nlog == 2 && h_log_level[1] == 4, "warn log");
    t_finish = finish_emit;
    CHECK(ardea_export_finish() == 0 && h_emits == 1, "finish emit");
    t_finish = NULL;
    CHECK(ardea_export_close() == 0, "close");
    CHECK(ardea_export_tick() < 0 && strstr(h_error, "called before a successful ardea_prepare"), "tick after close");
    CHECK(ardea_export_abi_version() == 1, "abi version");
    finish_test();
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s TESTDATA_DIR\n", argv[0]);
        return 2;
    }
    vdir = argv[1];
    test_values();
    test_batch();
    test_ops();
    test_context();
    test_msgids();
    test_hash();
    test_invalid();
    test_state_cache();
    test_state_api();
    test_state_bounds();
    test_errors();
    test_failures();
    test_untracked();
    test_spout();
    test_misc();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
