/* SPDX-License-Identifier: Apache-2.0
 * ardea_test.c - the C SDK's test harness (see include/ardea_test.h): the
 * host's imports for a native build of src/ardea.c, and the harness that
 * drives the component through the SDK's exports as the host would.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE 1
#include "ardea_test.h"

#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__wasm__)
#error "ardea_test.c is the native test harness: compile it with cc, not for wasm"
#endif

/* ---- the SDK's native hooks and exports (src/ardea.c) ---- */
extern const ardea_component *ardea_test_component;
extern void (*ardea_test_read_hook)(int what, const char *name);
void ardea_test_reset(void);
void *ardea_export_buffer(int32_t size);
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
uint32_t *ardea_export_cursor(void);
uint8_t *ardea_export_manifest(void);

/* ---- small helpers ---- */

static void *xalloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "ardea_test: out of memory\n");
        exit(2);
    }
    return p;
}

static void *xgrow(void *p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    p = realloc(p, c * size);
    if (!p) {
        fprintf(stderr, "ardea_test: out of memory\n");
        exit(2);
    }
    *cap = c;
    return p;
}

static char *xstrndup(const void *s, size_t n) {
    char *d = xalloc(n + 1);
    if (n)
        memcpy(d, s, n);
    return d;
}

static char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

typedef struct {
    uint8_t *p;
    size_t n, cap;
} tbuf;

static void tput(tbuf *b, const void *p, size_t n) {
    b->p = xgrow(b->p, &b->cap, b->n + n, 1);
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void tu8(tbuf *b, uint8_t v) { tput(b, &v, 1); }
static void tle(tbuf *b, uint64_t v, int n) {
    uint8_t x[8];
    for (int i = 0; i < n; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    tput(b, x, (size_t)n);
}
static void tstr(tbuf *b, const void *p, size_t n) {
    tle(b, n, 4);
    tput(b, p, n);
}
static uint64_t rle(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* ---- checks ---- */

static int n_checks, n_failed;

bool ardea_test_check_at(bool ok, const char *file, int line, const char *fmt, ...) {
    n_checks++;
    if (ok)
        return true;
    n_failed++;
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return false;
}

int ardea_test_failures(void) { return n_failed; }

int ardea_test_report(void) {
    printf("%d checks, %d failed\n", n_checks, n_failed);
    return n_failed ? 1 : 0;
}

/* ---- the harness's records ---- */

typedef struct {
    char *name;
    char **fields;
    size_t n;
} sdecl;

typedef struct {
    char *component, *stream;
    char **fields;
    size_t n;
} idecl;

typedef struct {
    uint8_t *k;
    size_t kn;
    uint8_t *v;
    size_t vn;
    bool gone;
} skv;

typedef struct {
    uint8_t *k;
    size_t kn;
    bool had;
    uint8_t *v;
    size_t vn;
} undo;

typedef struct {
    char *name;
    int64_t total;
    bool has_gauge;
    double gauge;
    int64_t *obs;
    size_t nobs, obscap;
} metric;

static const char *const import_names[] = {"emit",  "log",    "error",   "state_get", "state_write", "state_scan",
                                           "metric", "gauge", "observe", "now"};
#define N_IMPORTS (sizeof import_names / sizeof import_names[0])
enum { I_EMIT, I_LOG, I_ERROR, I_STATE_GET, I_STATE_WRITE, I_STATE_SCAN, I_METRIC, I_GAUGE, I_OBSERVE, I_NOW };

struct ardea_test {
    const ardea_component *comp;
    /* setup */
    char *topology, *component;
    uint32_t task_id, task_index, parallelism;
    char **cfg_k, **cfg_v;
    size_t ncfg, cfgcap;
    sdecl *outs;
    size_t nouts, outcap;
    bool outs_set;
    idecl *ins;
    size_t nins, incap;
    bool untracked;
    int64_t now;
    uint64_t next_id, last_id;
    tbuf ctx; /* the context blob of start */
    bool started;

    /* the current call */
    bool in_call, armed;
    sigjmp_buf jb;
    char *error;
    bool trapped;
    char *violation;
    tbuf pending; /* emit ops of the call */
    undo *undos;
    size_t nundo, undocap;

    /* results */
    tbuf ops;
    ardea_test_emit *emits;
    size_t nemits, emitcap;
    ardea_input **streams; /* owned copies of the output streams emits point to */
    size_t nstreams, streamcap;
    uint64_t *acks, *fails;
    size_t nacks, ackcap, nfails, failcap;
    char **logs;
    int *levels;
    size_t nlogs, logcap, levelcap;
    metric *metrics;
    size_t nmetrics, metriccap;
    size_t calls[N_IMPORTS];
    char *manifest;

    /* host-side state: entries and an open-addressing index (entry + 1) */
    skv *st;
    size_t nst, stcap, live;
    size_t *idx;
    size_t isize;
};

static ardea_test H = {.task_id = 1, .parallelism = 1, .now = 1234567890123456789LL};

/* ---- host-side state ---- */

static size_t key_hash(const void *k, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const uint8_t *)k)[i]) * 0x100000001b3ull;
    return (size_t)h;
}

static size_t *state_cell(ardea_test *h, const void *k, size_t n) {
    size_t i = key_hash(k, n) & (h->isize - 1);
    for (;; i = (i + 1) & (h->isize - 1)) {
        size_t e = h->idx[i];
        if (e == 0 || (h->st[e - 1].kn == n && memcmp(h->st[e - 1].k, k, n) == 0))
            return &h->idx[i];
    }
}

static skv *state_find(const ardea_test *h, const void *k, size_t n) {
    if (h->isize == 0)
        return NULL;
    size_t e = *state_cell((ardea_test *)h, k, n);
    return e == 0 || h->st[e - 1].gone ? NULL : &h->st[e - 1];
}

static void journal(ardea_test *h, const void *k, size_t kn) {
    if (!h->in_call)
        return;
    h->undos = xgrow(h->undos, &h->undocap, h->nundo + 1, sizeof(undo));
    undo *u = &h->undos[h->nundo++];
    skv *e = state_find(h, k, kn);
    u->k = (uint8_t *)xstrndup(k, kn);
    u->kn = kn;
    u->had = e != NULL;
    u->v = e ? (uint8_t *)xstrndup(e->v, e->vn) : NULL;
    u->vn = e ? e->vn : 0;
}

static void state_set(ardea_test *h, const void *k, size_t kn, const void *v, size_t vn) {
    journal(h, k, kn);
    if (2 * (h->nst + 1) > h->isize) {
        h->isize = h->isize ? 2 * h->isize : 1024;
        free(h->idx);
        h->idx = xalloc(h->isize * sizeof(size_t));
        for (size_t j = 0; j < h->nst; j++)
            *state_cell(h, h->st[j].k, h->st[j].kn) = j + 1;
    }
    size_t *cell = state_cell(h, k, kn);
    skv *e;
    if (*cell == 0) {
        h->st = xgrow(h->st, &h->stcap, h->nst + 1, sizeof(skv));
        e = &h->st[h->nst++];
        *cell = h->nst;
        e->k = (uint8_t *)xstrndup(k, kn);
        e->kn = kn;
        e->v = NULL;
        e->gone = true;
    } else {
        e = &h->st[*cell - 1];
        free(e->v);
    }
    if (e->gone)
        h->live++;
    e->gone = false;
    e->v = (uint8_t *)xstrndup(v, vn);
    e->vn = vn;
}

static void state_del(ardea_test *h, const void *k, size_t kn) {
    skv *e = state_find(h, k, kn);
    if (!e)
        return;
    journal(h, k, kn);
    e->gone = true;
    h->live--;
}

static void rollback(ardea_test *h) {
    bool in = h->in_call;
    h->in_call = false; /* no journal while undoing */
    while (h->nundo > 0) {
        undo *u = &h->undos[--h->nundo];
        if (u->had)
            state_set(h, u->k, u->kn, u->v, u->vn);
        else
            state_del(h, u->k, u->kn);
        free(u->k);
        free(u->v);
    }
    h->in_call = in;
}

static void forget_undo(ardea_test *h) {
    for (size_t i = 0; i < h->nundo; i++) {
        free(h->undos[i].k);
        free(h->undos[i].v);
    }
    h->nundo = 0;
}

static void state_free(ardea_test *h) {
    for (size_t i = 0; i < h->nst; i++) {
        free(h->st[i].k);
        free(h->st[i].v);
    }
    free(h->st);
    free(h->idx);
    h->st = NULL;
    h->idx = NULL;
    h->nst = h->stcap = h->live = h->isize = 0;
}

static int skv_cmp(const void *a, const void *b) {
    const skv *x = *(const skv *const *)a, *y = *(const skv *const *)b;
    size_t n = x->kn < y->kn ? x->kn : y->kn;
    int c = memcmp(x->k, y->k, n);
    return c ? c : (x->kn > y->kn) - (x->kn < y->kn);
}

/* ---- results ---- */

static void set_error(ardea_test *h, const char *msg, size_t n) {
    free(h->error);
    h->error = xstrndup(msg, n);
}

static metric *metric_of(ardea_test *h, const char *name, size_t n) {
    for (size_t i = 0; i < h->nmetrics; i++)
        if (strlen(h->metrics[i].name) == n && memcmp(h->metrics[i].name, name, n) == 0)
            return &h->metrics[i];
    h->metrics = xgrow(h->metrics, &h->metriccap, h->nmetrics + 1, sizeof(metric));
    metric *m = &h->metrics[h->nmetrics++];
    memset(m, 0, sizeof *m);
    m->name = xstrndup(name, n);
    return m;
}

static const metric *metric_find(const ardea_test *h, const char *name) {
    for (size_t i = 0; i < h->nmetrics; i++)
        if (strcmp(h->metrics[i].name, name) == 0)
            return &h->metrics[i];
    return NULL;
}

/* stream_of returns an owned copy of output stream si of the SDK's
 * current context, so that emitted tuples can be read by name. */
static ardea_input *stream_of(ardea_test *h, size_t si) {
    const ardea_context *c = ardea_get_context();
    const char *name = "?";
    const ardea_stream *o = NULL;
    if (c && si < c->noutputs) {
        o = &c->outputs[si];
        name = o->name.ptr;
    }
    for (size_t i = 0; i < h->nstreams; i++) {
        ardea_input *s = h->streams[i];
        if (strcmp(s->stream.ptr, name) != 0 || s->nfields != (o ? o->nfields : 0))
            continue;
        bool same = true;
        for (size_t f = 0; o && f < o->nfields && same; f++)
            same = strcmp(s->fields[f].ptr, o->fields[f].ptr) == 0;
        if (same)
            return s;
    }
    ardea_input *s = xalloc(sizeof *s);
    s->component = ardea_s(xstrdup(c ? c->component.ptr : "?"));
    s->stream = ardea_s(xstrdup(name));
    s->nfields = o ? o->nfields : 0;
    ardea_str *f = xalloc((s->nfields ? s->nfields : 1) * sizeof(ardea_str));
    for (size_t i = 0; i < s->nfields; i++)
        f[i] = ardea_s(xstrdup(o->fields[i].ptr));
    s->fields = f;
    h->streams = xgrow(h->streams, &h->streamcap, h->nstreams + 1, sizeof(ardea_input *));
    h->streams[h->nstreams++] = s;
    return s;
}

/* values_len returns the length of the values block at p (at most n
 * bytes) and each field's offset, or 0 if malformed. */
static size_t values_len(const uint8_t *p, size_t n, uint32_t **offs, uint32_t *nf) {
    if (n < 2)
        return 0;
    size_t cnt = (size_t)rle(p, 2), off = 2;
    *offs = xalloc((cnt ? cnt : 1) * sizeof(uint32_t));
    for (size_t i = 0; i < cnt; i++) {
        if (off >= n)
            return 0;
        (*offs)[i] = (uint32_t)off;
        switch (p[off]) {
        case ARDEA_NULL:
            off += 1;
            break;
        case ARDEA_BYTES:
        case ARDEA_STRING:
            if (n - off < 5 || n - off - 5 < rle(p + off + 1, 4))
                return 0;
            off += 5 + (size_t)rle(p + off + 1, 4);
            break;
        case ARDEA_INT:
        case ARDEA_FLOAT:
            off += 9;
            break;
        case ARDEA_BOOL:
            off += 2;
            break;
        default:
            return 0;
        }
        if (off > n)
            return 0;
    }
    *nf = (uint32_t)cnt;
    return off;
}

/* commit records a sequence of emit ops. */
static void commit(ardea_test *h, const uint8_t *p, size_t n) {
    tput(&h->ops, p, n);
    size_t off = 0;
    while (off < n) {
        uint8_t code = p[off];
        if ((code == 2 || code == 3) && n - off >= 9) {
            uint64_t id = rle(p + off + 1, 8);
            if (code == 2) {
                h->acks = xgrow(h->acks, &h->ackcap, h->nacks + 1, sizeof(uint64_t));
                h->acks[h->nacks++] = id;
            } else {
                h->fails = xgrow(h->fails, &h->failcap, h->nfails + 1, sizeof(uint64_t));
                h->fails[h->nfails++] = id;
            }
            off += 9;
            continue;
        }
        if (code != 1 || n - off < 17) {
            fprintf(stderr, "ardea_test: malformed emit op at byte %zu\n", off);
            return;
        }
        const uint8_t *q = p + off + 1;
        size_t si = (size_t)rle(q, 2), na = (size_t)rle(q + 14, 2);
        if (n - off < 17 + 8 * na) {
            fprintf(stderr, "ardea_test: malformed emit op at byte %zu\n", off);
            return;
        }
        ardea_test_emit e;
        memset(&e, 0, sizeof e);
        ardea_input *s = stream_of(h, si);
        e.stream = s->stream.ptr;
        e.task = (uint32_t)rle(q + 2, 4);
        e.msgid = rle(q + 6, 8);
        e.nanchors = na;
        uint64_t *anchors = xalloc((na ? na : 1) * sizeof(uint64_t));
        for (size_t i = 0; i < na; i++)
            anchors[i] = rle(q + 16 + 8 * i, 8);
        e.anchors = anchors;
        const uint8_t *vals = q + 16 + 8 * na;
        uint32_t *offs = NULL, nf = 0;
        size_t vl = values_len(vals, n - (size_t)(vals - p), &offs, &nf);
        if (vl == 0) {
            fprintf(stderr, "ardea_test: malformed values in emit op at byte %zu\n", off);
            free(offs);
            free(anchors);
            return;
        }
        e.tuple.raw = (const uint8_t *)xstrndup(vals, vl);
        e.tuple.rawlen = (uint32_t)vl;
        e.tuple.nfields = nf;
        e.tuple.offs = offs;
        e.tuple.in = s;
        e.tuple.source_task = h->task_id;
        h->emits = xgrow(h->emits, &h->emitcap, h->nemits + 1, sizeof(ardea_test_emit));
        h->emits[h->nemits++] = e;
        off = (size_t)(vals - p) + vl;
    }
}

/* ---- the host's imports (module "ardea"), native ---- */

void ardea_host_emit(const void *ops, uint32_t len) {
    H.calls[I_EMIT]++;
    if (H.in_call)
        tput(&H.pending, ops, len);
    else
        commit(&H, ops, len);
}

void ardea_host_log(int32_t level, const void *msg, uint32_t len) {
    H.calls[I_LOG]++;
    H.logs = xgrow(H.logs, &H.logcap, H.nlogs + 1, sizeof(char *));
    H.levels = xgrow(H.levels, &H.levelcap, H.nlogs + 1, sizeof(int));
    H.levels[H.nlogs] = level;
    H.logs[H.nlogs++] = xstrndup(msg, len);
}

void ardea_host_error(const void *msg, uint32_t len) {
    H.calls[I_ERROR]++;
    set_error(&H, msg, len);
}

int32_t ardea_host_state_get(const void *key, uint32_t klen, void *val, uint32_t vcap) {
    H.calls[I_STATE_GET]++;
    skv *e = state_find(&H, key, klen);
    if (!e)
        return -1;
    if (e->vn <= vcap && e->vn)
        memcpy(val, e->v, e->vn);
    return (int32_t)e->vn;
}

void ardea_host_state_write(const void *ops, uint32_t len) {
    H.calls[I_STATE_WRITE]++;
    const uint8_t *p = ops, *end = p + len;
    while (end - p >= 9) {
        uint8_t op = p[0];
        uint32_t kl = (uint32_t)rle(p + 1, 4);
        const uint8_t *k = p + 5;
        uint32_t vl = (uint32_t)rle(k + kl, 4);
        const uint8_t *v = k + kl + 4;
        if (op == 1)
            state_set(&H, k, kl, v, vl);
        else
            state_del(&H, k, kl);
        p = v + vl;
    }
}

int32_t ardea_host_state_scan(const void *prefix, uint32_t plen, void *out, uint32_t cap) {
    H.calls[I_STATE_SCAN]++;
    skv **sorted = xalloc((H.nst + 1) * sizeof(skv *));
    size_t ns = 0;
    for (size_t i = 0; i < H.nst; i++)
        if (!H.st[i].gone && H.st[i].kn >= plen && memcmp(H.st[i].k, prefix, plen) == 0)
            sorted[ns++] = &H.st[i];
    qsort(sorted, ns, sizeof(skv *), skv_cmp);
    tbuf b = {0};
    tle(&b, ns, 4);
    for (size_t i = 0; i < ns; i++) {
        tstr(&b, sorted[i]->k, sorted[i]->kn);
        tstr(&b, sorted[i]->v, sorted[i]->vn);
    }
    free(sorted);
    int32_t n = (int32_t)b.n;
    if (b.n <= cap)
        memcpy(out, b.p, b.n);
    free(b.p);
    return n;
}

void ardea_host_metric(const void *name, uint32_t len, int64_t delta) {
    H.calls[I_METRIC]++;
    metric_of(&H, name, len)->total += delta;
}

void ardea_host_gauge(const void *name, uint32_t len, double value) {
    H.calls[I_GAUGE]++;
    metric *m = metric_of(&H, name, len);
    m->has_gauge = true;
    m->gauge = value;
}

void ardea_host_observe(const void *name, uint32_t len, int64_t value) {
    H.calls[I_OBSERVE]++;
    metric *m = metric_of(&H, name, len);
    m->obs = xgrow(m->obs, &m->obscap, m->nobs + 1, sizeof(int64_t));
    m->obs[m->nobs++] = value < 0 ? 0 : value;
}

int64_t ardea_host_now(void) {
    H.calls[I_NOW]++;
    return H.now;
}

/* The SDK's trap (ardea_fatal): back to the harness call. */
__attribute__((noreturn)) void ardea_test_trap(void) {
    if (H.armed)
        siglongjmp(H.jb, 1);
    fprintf(stderr, "ardea_test: the component trapped outside a harness call: %s\n", H.error ? H.error : "");
    abort();
}

static void on_abort(int sig) {
    (void)sig;
    if (H.armed)
        siglongjmp(H.jb, 2);
}

bool ardea_test_protect(ardea_test *h, void (*fn)(void *), void *arg) {
    (void)h;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_abort;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGABRT, &sa, &old);
    H.armed = true;
    int j = sigsetjmp(H.jb, 1);
    if (j == 0)
        fn(arg);
    H.armed = false;
    sigaction(SIGABRT, &old, NULL);
    if (j) {
        H.trapped = true;
        if (j == 2 && !H.error)
            set_error(&H, "abort() called", 14);
        ardea_test_reset();
    }
    return j != 0;
}

/* ---- declarations ---- */

static const ardea_decl *decls(const ardea_test *h) { return h->comp ? h->comp->decls : NULL; }

static bool declares(const ardea_test *h, ardea_decl_kind kind) {
    for (const ardea_decl *d = decls(h); d && d->kind != ARDEA_DECL_END; d++)
        if (d->kind == kind)
            return true;
    return false;
}

static bool declared(const ardea_test *h, ardea_decl_kind kind, const char *name) {
    for (const ardea_decl *d = decls(h); d && d->kind != ARDEA_DECL_END; d++)
        if (d->kind == kind && d->names)
            for (const char *const *n = d->names; *n; n++)
                if (strcmp(*n, name) == 0)
                    return true;
    return false;
}

/* decl_list writes the declared names of a kind ("a, b") to buf. */
static void decl_list(const ardea_test *h, ardea_decl_kind kind, char *buf, size_t cap) {
    size_t at = 0;
    buf[0] = 0;
    for (const ardea_decl *d = decls(h); d && d->kind != ARDEA_DECL_END; d++)
        if (d->kind == kind && d->names)
            for (const char *const *n = d->names; *n && at < cap; n++) {
                bool dup = false; /* listed before? */
                for (const char *p = buf; !dup && (p = strstr(p, *n)) != NULL; p += strlen(*n))
                    dup = (p == buf || p[-1] == ' ') && (p[strlen(*n)] == ',' || p[strlen(*n)] == 0);
                if (!dup)
                    at += (size_t)snprintf(buf + at, cap - at, "%s%s", at ? ", " : "", *n);
            }
}

static void on_read(int what, const char *name) {
    if (!H.in_call || H.violation)
        return;
    ardea_decl_kind kind = what == 0 ? ARDEA_DECL_READS : ARDEA_DECL_CONFIG;
    if (!declares(&H, kind) || declared(&H, kind, name))
        return;
    char list[512], msg[1024];
    decl_list(&H, kind, list, sizeof list);
    if (what == 0)
        snprintf(msg, sizeof msg, "the component reads input field \"%s\" by name, but declares ARDEA_READS(%s)",
                 name, list);
    else
        snprintf(msg, sizeof msg, "the component reads config key \"%s\", but declares ARDEA_CONFIG(%s)", name, list);
    H.violation = xstrdup(msg);
}

static void fields_list(char *const *f, size_t n, char *buf, size_t cap) {
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", i ? ", " : "", f[i]);
}

static void add_output(ardea_test *h, const char *stream, const char *const *fields, size_t n) {
    h->outs = xgrow(h->outs, &h->outcap, h->nouts + 1, sizeof(sdecl));
    sdecl *o = &h->outs[h->nouts++];
    o->name = xstrdup(stream);
    o->n = n;
    o->fields = xalloc((n ? n : 1) * sizeof(char *));
    for (size_t i = 0; i < n; i++)
        o->fields[i] = xstrdup(fields[i]);
}

static void add_input(ardea_test *h, const char *component, const char *stream, const char *const *fields, size_t n) {
    h->ins = xgrow(h->ins, &h->incap, h->nins + 1, sizeof(idecl));
    idecl *in = &h->ins[h->nins++];
    in->component = xstrdup(component);
    in->stream = xstrdup(stream);
    in->n = n;
    in->fields = xalloc((n ? n : 1) * sizeof(char *));
    for (size_t i = 0; i < n; i++)
        in->fields[i] = xstrdup(fields[i]);
}

/* check_decls compares what the test set with what the component
 * declares, as `ardea run` compares a topology with the manifest. It
 * returns an error text, or NULL. */
static char *check_decls(ardea_test *h) {
    char msg[2048], a[512], b[512];
    if (h->outs_set && declares(h, ARDEA_DECL_EMITS)) {
        size_t k = 0;
        for (const ardea_decl *d = decls(h); d && d->kind != ARDEA_DECL_END; d++) {
            if (d->kind != ARDEA_DECL_EMITS || !d->names || !d->names[0])
                continue;
            size_t nf = 0;
            while (d->names[1 + nf])
                nf++;
            bool same = k < h->nouts && strcmp(h->outs[k].name, d->names[0]) == 0 && h->outs[k].n == nf;
            for (size_t i = 0; same && i < nf; i++)
                same = strcmp(h->outs[k].fields[i], d->names[1 + i]) == 0;
            if (!same) {
                fields_list((char *const *)(d->names + 1), nf, a, sizeof a);
                if (k < h->nouts) {
                    fields_list(h->outs[k].fields, h->outs[k].n, b, sizeof b);
                    snprintf(msg, sizeof msg,
                             "output %zu: the test declares stream \"%s\" with fields [%s], the component emits "
                             "\"%s\" with [%s] (ARDEA_EMITS)",
                             k, h->outs[k].name, b, d->names[0], a);
                } else {
                    snprintf(msg, sizeof msg,
                             "the component emits stream \"%s\" with fields [%s] (ARDEA_EMITS), which the test does "
                             "not declare",
                             d->names[0], a);
                }
                return xstrdup(msg);
            }
            k++;
        }
        if (k < h->nouts) {
            snprintf(msg, sizeof msg, "the test declares output stream \"%s\", which the component does not emit",
                     h->outs[k].name);
            return xstrdup(msg);
        }
    }
    if (declares(h, ARDEA_DECL_READS)) {
        for (size_t i = 0; i < h->nins; i++) {
            for (const ardea_decl *d = decls(h); d && d->kind != ARDEA_DECL_END; d++) {
                if (d->kind != ARDEA_DECL_READS || !d->names)
                    continue;
                for (const char *const *n = d->names; *n; n++) {
                    bool found = false;
                    for (size_t f = 0; f < h->ins[i].n && !found; f++)
                        found = strcmp(h->ins[i].fields[f], *n) == 0;
                    if (!found) {
                        fields_list(h->ins[i].fields, h->ins[i].n, a, sizeof a);
                        decl_list(h, ARDEA_DECL_READS, b, sizeof b);
                        snprintf(msg, sizeof msg,
                                 "input %zu (%s/%s) has fields [%s], but the component reads [%s] (ARDEA_READS): "
                                 "no field \"%s\"",
                                 i, h->ins[i].component, h->ins[i].stream, a, b, *n);
                        return xstrdup(msg);
                    }
                }
            }
        }
    }
    if (declares(h, ARDEA_DECL_CONFIG)) {
        for (size_t i = 0; i < h->ncfg; i++) {
            if (!declared(h, ARDEA_DECL_CONFIG, h->cfg_k[i])) {
                decl_list(h, ARDEA_DECL_CONFIG, a, sizeof a);
                snprintf(msg, sizeof msg, "config key \"%s\" is not one the component reads (ARDEA_CONFIG(%s))",
                         h->cfg_k[i], a);
                return xstrdup(msg);
            }
        }
    }
    return NULL;
}

/* ---- setting up ---- */

static void free_records(ardea_test *h) {
    for (size_t i = 0; i < h->nemits; i++) {
        free((void *)h->emits[i].anchors);
        free((void *)h->emits[i].tuple.raw);
        free((void *)h->emits[i].tuple.offs);
    }
    free(h->emits);
    h->emits = NULL;
    h->nemits = h->emitcap = 0;
    free(h->acks);
    free(h->fails);
    h->acks = h->fails = NULL;
    h->nacks = h->ackcap = h->nfails = h->failcap = 0;
    for (size_t i = 0; i < h->nlogs; i++)
        free(h->logs[i]);
    free(h->logs);
    free(h->levels);
    h->logs = NULL;
    h->levels = NULL;
    h->nlogs = h->logcap = h->levelcap = 0;
    for (size_t i = 0; i < h->nmetrics; i++) {
        free(h->metrics[i].name);
        free(h->metrics[i].obs);
    }
    free(h->metrics);
    h->metrics = NULL;
    h->nmetrics = h->metriccap = 0;
    free(h->ops.p);
    memset(&h->ops, 0, sizeof h->ops);
    memset(h->calls, 0, sizeof h->calls);
}

void ardea_test_clear(ardea_test *h) { free_records(h); }

void ardea_test_free(ardea_test *h) {
    if (!h)
        return;
    free_records(h);
    state_free(h);
    forget_undo(h);
    free(h->undos);
    free(h->topology);
    free(h->component);
    for (size_t i = 0; i < h->ncfg; i++) {
        free(h->cfg_k[i]);
        free(h->cfg_v[i]);
    }
    free(h->cfg_k);
    free(h->cfg_v);
    for (size_t i = 0; i < h->nouts; i++) {
        for (size_t f = 0; f < h->outs[i].n; f++)
            free(h->outs[i].fields[f]);
        free(h->outs[i].fields);
        free(h->outs[i].name);
    }
    free(h->outs);
    for (size_t i = 0; i < h->nins; i++) {
        for (size_t f = 0; f < h->ins[i].n; f++)
            free(h->ins[i].fields[f]);
        free(h->ins[i].fields);
        free(h->ins[i].component);
        free(h->ins[i].stream);
    }
    free(h->ins);
    for (size_t i = 0; i < h->nstreams; i++) {
        ardea_input *s = h->streams[i];
        for (size_t f = 0; f < s->nfields; f++)
            free((void *)s->fields[f].ptr);
        free((void *)s->fields);
        free((void *)s->component.ptr);
        free((void *)s->stream.ptr);
        free(s);
    }
    free(h->streams);
    free(h->ctx.p);
    free(h->pending.p);
    free(h->error);
    free(h->violation);
    free(h->manifest);
    memset(h, 0, sizeof *h);
    h->task_id = 1;
    h->parallelism = 1;
    h->now = 1234567890123456789LL;
    ardea_test_read_hook = NULL;
    ardea_test_component = NULL;
    ardea_test_reset();
}

ardea_test *ardea_test_new_component(const ardea_component *c) {
    ardea_test_free(&H);
    H.comp = c;
    ardea_test_component = c;
    ardea_test_read_hook = on_read;
    H.next_id = 1;
    return &H;
}

ardea_test *ardea_test_new(void) { return ardea_test_new_component(&ardea_registered_component); }

void ardea_test_config(ardea_test *h, const char *key, const char *value) {
    for (size_t i = 0; i < h->ncfg; i++) {
        if (strcmp(h->cfg_k[i], key) == 0) {
            free(h->cfg_v[i]);
            h->cfg_v[i] = xstrdup(value);
            return;
        }
    }
    size_t cap = h->cfgcap;
    h->cfg_k = xgrow(h->cfg_k, &cap, h->ncfg + 1, sizeof(char *));
    cap = h->cfgcap;
    h->cfg_v = xgrow(h->cfg_v, &cap, h->ncfg + 1, sizeof(char *));
    h->cfgcap = cap;
    h->cfg_k[h->ncfg] = xstrdup(key);
    h->cfg_v[h->ncfg++] = xstrdup(value);
}

void ardea_test_output(ardea_test *h, const char *stream, const char *const *fields, size_t n) {
    h->outs_set = true;
    add_output(h, stream, fields, n);
}

void ardea_test_input(ardea_test *h, const char *component, const char *stream, const char *const *fields,
                      size_t n) {
    add_input(h, component, stream, fields, n);
}

void ardea_test_names(ardea_test *h, const char *topology, const char *component) {
    free(h->topology);
    free(h->component);
    h->topology = xstrdup(topology);
    h->component = xstrdup(component);
}

void ardea_test_task(ardea_test *h, uint32_t task_id, uint32_t task_index, uint32_t parallelism) {
    h->task_id = task_id;
    h->task_index = task_index;
    h->parallelism = parallelism;
}

void ardea_test_untracked(ardea_test *h) { h->untracked = true; }
void ardea_test_set_now(ardea_test *h, int64_t ns) { h->now = ns; }

/* ---- calls ---- */

enum call_kind { C_OPEN, C_PREPARE, C_NEXT, C_ACK, C_FAIL, C_ACTIVATE, C_DEACTIVATE, C_EXECUTE, C_TICK, C_FINISH, C_CLOSE };

typedef struct {
    enum call_kind kind;
    int32_t arg, rc;
} call;

static void do_call(void *arg) {
    call *c = arg;
    switch (c->kind) {
    case C_OPEN:
        c->rc = ardea_export_open(c->arg);
        break;
    case C_PREPARE:
        c->rc = ardea_export_prepare(c->arg);
        break;
    case C_NEXT:
        c->rc = ardea_export_next(c->arg);
        break;
    case C_ACK:
        c->rc = ardea_export_ack(c->arg);
        break;
    case C_FAIL:
        c->rc = ardea_export_fail(c->arg);
        break;
    case C_ACTIVATE:
        c->rc = ardea_export_activate();
        break;
    case C_DEACTIVATE:
        c->rc = ardea_export_deactivate();
        break;
    case C_EXECUTE:
        c->rc = ardea_export_execute(c->arg);
        break;
    case C_TICK:
        c->rc = ardea_export_tick();
        break;
    case C_FINISH:
        c->rc = ardea_export_finish();
        break;
    case C_CLOSE:
        c->rc = ardea_export_close();
        break;
    }
}

/* input copies b into the SDK's buffer. */
static int32_t input(const tbuf *b) {
    uint8_t *p = ardea_export_buffer((int32_t)b->n);
    if (b->n)
        memcpy(p, b->p, b->n);
    return (int32_t)b->n;
}

static int fail_call(ardea_test *h, const char *msg) {
    set_error(h, msg, strlen(msg));
    return ARDEA_ERR;
}

static int run(ardea_test *h, enum call_kind kind, int32_t arg);

/* restart starts the component again as a fresh instance (after a failed
 * tuple), with the same context and the state kept. */
static void restart(ardea_test *h) {
    char *err = h->error;
    bool trapped = h->trapped;
    h->error = NULL;
    ardea_test_reset();
    int rc = run(h, h->comp && h->comp->spout ? C_OPEN : C_PREPARE, input(&h->ctx));
    if (rc < 0)
        fprintf(stderr, "ardea_test: starting the component again after a failed tuple failed: %s\n",
                h->error ? h->error : "");
    free(h->error);
    h->error = err;
    h->trapped = trapped;
}

static int run(ardea_test *h, enum call_kind kind, int32_t arg) {
    call c = {kind, arg, 0};
    free(h->error);
    free(h->violation);
    h->error = h->violation = NULL;
    h->trapped = false;
    h->pending.n = 0;
    forget_undo(h);
    h->in_call = true;
    bool trapped = ardea_test_protect(h, do_call, &c);
    h->in_call = false;
    int rc = trapped ? ARDEA_ERR : c.rc;
    if (rc >= 0 && h->violation) {
        rc = ARDEA_ERR;
        set_error(h, h->violation, strlen(h->violation));
    }
    if (rc < 0) {
        rollback(h);
        h->pending.n = 0;
        if (!trapped)
            ardea_test_reset(); /* the instance is gone, as under the host */
        if (kind == C_EXECUTE) {
            /* The host fails the tuple at the cursor and starts a fresh
             * instance (ABI.md "A failing tuple"); the harness executes
             * one tuple per call. */
            if (h->last_id) {
                h->fails = xgrow(h->fails, &h->failcap, h->nfails + 1, sizeof(uint64_t));
                h->fails[h->nfails++] = h->last_id;
            }
            restart(h);
        } else {
            h->started = false;
        }
        if (!h->error)
            set_error(h, "the call failed without an error text", 38);
        return ARDEA_ERR;
    }
    forget_undo(h);
    if (h->pending.n)
        commit(h, h->pending.p, h->pending.n);
    h->pending.n = 0;
    return rc;
}

int ardea_test_start(ardea_test *h) {
    if (!h->comp || (!h->comp->bolt && !h->comp->spout))
        return fail_call(h, "ardea_test_start: no component registered");
    /* outputs and inputs from the declarations unless the test set them */
    if (!h->outs_set && h->nouts == 0)
        for (const ardea_decl *d = decls(h); d && d->kind != ARDEA_DECL_END; d++)
            if (d->kind == ARDEA_DECL_EMITS && d->names && d->names[0]) {
                size_t nf = 0;
                while (d->names[1 + nf])
                    nf++;
                add_output(h, d->names[0], d->names + 1, nf);
            }
    if (h->comp->bolt && h->nins == 0) {
        const char *fields[64];
        size_t nf = 0;
        for (const ardea_decl *d = decls(h); d && d->kind != ARDEA_DECL_END; d++)
            if (d->kind == ARDEA_DECL_READS && d->names)
                for (const char *const *n = d->names; *n && nf < 64; n++) {
                    bool dup = false;
                    for (size_t i = 0; i < nf && !dup; i++)
                        dup = strcmp(fields[i], *n) == 0;
                    if (!dup)
                        fields[nf++] = *n;
                }
        add_input(h, "upstream", "default", fields, nf);
    }
    char *why = check_decls(h);
    if (why) {
        free(h->error);
        h->error = why;
        return ARDEA_ERR;
    }
    /* the context blob (ABI.md), config sorted by key */
    tbuf *b = &h->ctx;
    b->n = 0;
    const char *topo = h->topology ? h->topology : "test", *comp = h->component ? h->component : "test";
    tstr(b, topo, strlen(topo));
    tstr(b, comp, strlen(comp));
    tle(b, h->task_id, 4);
    tle(b, h->task_index, 4);
    tle(b, h->parallelism, 4);
    tle(b, h->ncfg, 4);
    bool *done = xalloc(h->ncfg + 1);
    for (size_t k = 0; k < h->ncfg; k++) {
        size_t min = SIZE_MAX;
        for (size_t i = 0; i < h->ncfg; i++)
            if (!done[i] && (min == SIZE_MAX || strcmp(h->cfg_k[i], h->cfg_k[min]) < 0))
                min = i;
        done[min] = true;
        tstr(b, h->cfg_k[min], strlen(h->cfg_k[min]));
        tstr(b, h->cfg_v[min], strlen(h->cfg_v[min]));
    }
    free(done);
    tle(b, h->nouts, 2);
    for (size_t i = 0; i < h->nouts; i++) {
        tstr(b, h->outs[i].name, strlen(h->outs[i].name));
        tle(b, h->outs[i].n, 2);
        for (size_t f = 0; f < h->outs[i].n; f++)
            tstr(b, h->outs[i].fields[f], strlen(h->outs[i].fields[f]));
    }
    tle(b, h->nins, 2);
    for (size_t i = 0; i < h->nins; i++) {
        tstr(b, h->ins[i].component, strlen(h->ins[i].component));
        tstr(b, h->ins[i].stream, strlen(h->ins[i].stream));
        tle(b, h->ins[i].n, 2);
        for (size_t f = 0; f < h->ins[i].n; f++)
            tstr(b, h->ins[i].fields[f], strlen(h->ins[i].fields[f]));
    }
    int rc = run(h, h->comp->spout ? C_OPEN : C_PREPARE, input(b));
    h->started = rc == ARDEA_OK;
    return rc;
}

static void put_values(tbuf *b, const ardea_value *v, size_t n) {
    tle(b, n, 2);
    for (size_t i = 0; i < n; i++) {
        tu8(b, (uint8_t)v[i].kind);
        switch (v[i].kind) {
        case ARDEA_BYTES:
        case ARDEA_STRING:
            tstr(b, v[i].u.s.ptr, v[i].u.s.len);
            break;
        case ARDEA_INT:
            tle(b, (uint64_t)v[i].u.i, 8);
            break;
        case ARDEA_FLOAT: {
            uint64_t u;
            memcpy(&u, &v[i].u.f, 8);
            tle(b, u, 8);
            break;
        }
        case ARDEA_BOOL:
            tu8(b, v[i].u.b ? 1 : 0);
            break;
        default:
            break;
        }
    }
}

int ardea_test_execute_from(ardea_test *h, size_t input_index, uint32_t source_task, uint64_t id,
                            const ardea_value *values, size_t n) {
    if (input_index >= h->nins) {
        char msg[128];
        snprintf(msg, sizeof msg, "ardea_test_execute: input %zu, but the bolt has %zu inputs", input_index, h->nins);
        return fail_call(h, msg);
    }
    const idecl *in = &h->ins[input_index];
    if (n != in->n) {
        char msg[1024], list[512];
        fields_list(in->fields, in->n, list, sizeof list);
        snprintf(msg, sizeof msg,
                 "ardea_test_execute: %zu values, but input %zu (%s/%s) has %zu fields [%s] (set them with "
                 "ardea_test_input)",
                 n, input_index, in->component, in->stream, in->n, list);
        return fail_call(h, msg);
    }
    tbuf b = {0}, vals = {0};
    put_values(&vals, values, n);
    tle(&b, 1, 4);
    tle(&b, 14 + vals.n, 4);
    tle(&b, input_index, 2);
    tle(&b, source_task, 4);
    tle(&b, id, 8);
    tput(&b, vals.p, vals.n);
    h->last_id = id;
    int rc = run(h, C_EXECUTE, input(&b));
    free(b.p);
    free(vals.p);
    return rc;
}

int ardea_test_execute(ardea_test *h, const ardea_value *values, size_t n) {
    uint64_t id = h->untracked ? 0 : h->next_id++;
    return ardea_test_execute_from(h, 0, 2, id, values, n);
}

uint64_t ardea_test_last_id(const ardea_test *h) { return h->last_id; }
int ardea_test_tick(ardea_test *h) { return run(h, C_TICK, 0); }
int ardea_test_finish(ardea_test *h) { return run(h, C_FINISH, 0); }
int ardea_test_close(ardea_test *h) { return run(h, C_CLOSE, 0); }
int ardea_test_next(ardea_test *h, int max) { return run(h, C_NEXT, max); }
int ardea_test_activate(ardea_test *h) { return run(h, C_ACTIVATE, 0); }
int ardea_test_deactivate(ardea_test *h) { return run(h, C_DEACTIVATE, 0); }

static int msgids(ardea_test *h, enum call_kind kind, uint64_t id) {
    tbuf b = {0};
    tle(&b, 1, 4);
    tle(&b, id, 8);
    int rc = run(h, kind, input(&b));
    free(b.p);
    return rc;
}

int ardea_test_ack(ardea_test *h, uint64_t msgid) { return msgids(h, C_ACK, msgid); }
int ardea_test_fail(ardea_test *h, uint64_t msgid) { return msgids(h, C_FAIL, msgid); }

const char *ardea_test_error(const ardea_test *h) { return h->error; }
bool ardea_test_trapped(const ardea_test *h) { return h->trapped; }

/* ---- results ---- */

size_t ardea_test_emits(const ardea_test *h, const char *stream) {
    if (!stream)
        return h->nemits;
    size_t n = 0;
    for (size_t i = 0; i < h->nemits; i++)
        n += strcmp(h->emits[i].stream, stream) == 0;
    return n;
}

const ardea_test_emit *ardea_test_emit_at(const ardea_test *h, const char *stream, size_t i) {
    for (size_t k = 0; k < h->nemits; k++)
        if (!stream || strcmp(h->emits[k].stream, stream) == 0)
            if (i-- == 0)
                return &h->emits[k];
    return NULL;
}

bool ardea_test_anchored_on(const ardea_test_emit *e, uint64_t id) {
    for (size_t i = 0; e && i < e->nanchors; i++)
        if (e->anchors[i] == id)
            return true;
    return false;
}

size_t ardea_test_acks(const ardea_test *h) { return h->nacks; }
uint64_t ardea_test_ack_at(const ardea_test *h, size_t i) { return i < h->nacks ? h->acks[i] : 0; }
bool ardea_test_acked(const ardea_test *h, uint64_t id) {
    for (size_t i = 0; i < h->nacks; i++)
        if (h->acks[i] == id)
            return true;
    return false;
}
size_t ardea_test_fails(const ardea_test *h) { return h->nfails; }
uint64_t ardea_test_fail_at(const ardea_test *h, size_t i) { return i < h->nfails ? h->fails[i] : 0; }
bool ardea_test_failed(const ardea_test *h, uint64_t id) {
    for (size_t i = 0; i < h->nfails; i++)
        if (h->fails[i] == id)
            return true;
    return false;
}

size_t ardea_test_logs(const ardea_test *h) { return h->nlogs; }
const char *ardea_test_log_at(const ardea_test *h, size_t i, int *level) {
    if (i >= h->nlogs)
        return NULL;
    if (level)
        *level = h->levels[i];
    return h->logs[i];
}
bool ardea_test_logged(const ardea_test *h, const char *text) {
    for (size_t i = 0; i < h->nlogs; i++)
        if (strstr(h->logs[i], text))
            return true;
    return false;
}

int64_t ardea_test_counter(const ardea_test *h, const char *name) {
    const metric *m = metric_find(h, name);
    return m ? m->total : 0;
}
bool ardea_test_gauge(const ardea_test *h, const char *name, double *value) {
    const metric *m = metric_find(h, name);
    if (!m || !m->has_gauge)
        return false;
    if (value)
        *value = m->gauge;
    return true;
}
size_t ardea_test_observations(const ardea_test *h, const char *name, const int64_t **values) {
    const metric *m = metric_find(h, name);
    if (values)
        *values = m ? m->obs : NULL;
    return m ? m->nobs : 0;
}

/* ---- state ---- */

bool ardea_test_state_get(const ardea_test *h, const void *key, size_t klen, ardea_str *value) {
    skv *e = state_find(h, key, klen);
    if (value) {
        value->ptr = e ? (const char *)e->v : "";
        value->len = e ? e->vn : 0;
    }
    return e != NULL;
}

bool ardea_test_state_get_int(const ardea_test *h, const void *key, size_t klen, int64_t *value) {
    skv *e = state_find(h, key, klen);
    if (!e || e->vn != 8)
        return false;
    *value = (int64_t)rle(e->v, 8);
    return true;
}

void ardea_test_state_put(ardea_test *h, const void *key, size_t klen, const void *value, size_t vlen) {
    state_set(h, key, klen, value, vlen);
}

void ardea_test_state_put_int(ardea_test *h, const void *key, size_t klen, int64_t value) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)((uint64_t)value >> (8 * i));
    state_set(h, key, klen, b, 8);
}

void ardea_test_state_delete(ardea_test *h, const void *key, size_t klen) { state_del(h, key, klen); }
size_t ardea_test_state_len(const ardea_test *h) { return h->live; }

/* ---- manifest, low level ---- */

const char *ardea_test_manifest(const ardea_test *h) {
    ardea_test *m = (ardea_test *)h;
    const uint8_t *p = ardea_export_manifest();
    free(m->manifest);
    m->manifest = xstrndup(p + 4, (size_t)rle(p, 4));
    return m->manifest;
}

const uint8_t *ardea_test_ops(const ardea_test *h, size_t *len) {
    if (len)
        *len = h->ops.n;
    return h->ops.p;
}

size_t ardea_test_calls(const ardea_test *h, const char *import) {
    for (size_t i = 0; i < N_IMPORTS; i++)
        if (strcmp(import_names[i], import) == 0)
            return h->calls[i];
    return 0;
}
