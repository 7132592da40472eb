/*
 * The host test double: the ardea.* imports that ardea.c calls in its
 * native build (emit, log, error, state, metric, now), the trap, and the
 * components under test, whose callbacks each test sets.
 */
#include "test_util.h"

/* ---- the host test double ---- */
buf h_ops;     /* every emitted op, concatenated */
int h_emits;   /* emit calls */
char h_error[4096];
int h_errors;
char h_log[64][256];
int h_log_level[64];
int h_nlog;
int h_state_gets, h_state_writes;
kv *h_state;
static int h_nstate, h_capstate;
static int *h_idx; /* open addressing: entry + 1, 0 empty */
static size_t h_idxsize;
char h_metric_name[16][64];
int64_t h_metric_delta[16];
int h_nmetric;
char h_gauge_name[64];
double h_gauge_value;
char h_observe_name[16][64];
int64_t h_observe_value[16];
int h_nobserve;

void host_reset(void) {
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
    h_gauge_name[0] = 0;
    h_gauge_value = 0;
    h_nobserve = 0;
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

int state_find(const void *k, size_t n) {
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
void state_set(const void *k, size_t kn, const void *v, size_t vn) {
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
void ardea_host_gauge(const void *name, uint32_t len, double value) {
    snprintf(h_gauge_name, sizeof h_gauge_name, "%.*s", (int)len, (const char *)name);
    h_gauge_value = value;
}
void ardea_host_observe(const void *name, uint32_t len, int64_t value) {
    if (h_nobserve < 16) {
        snprintf(h_observe_name[h_nobserve], 64, "%.*s", (int)len, (const char *)name);
        h_observe_value[h_nobserve++] = value;
    }
}
int64_t ardea_host_now(void) { return 1234567890123456789LL; }

jmp_buf trap_jb;
int trap_armed, trapped;
void ardea_test_trap(void) {
    trapped++;
    if (trap_armed)
        longjmp(trap_jb, 1);
    fprintf(stderr, "unexpected trap: %s\n", h_error);
    abort();
}

/* ---- components under test: function pointers set per test ---- */
int (*t_execute)(const ardea_tuple *t);
int (*t_prepare)(const ardea_context *ctx);
int (*t_tick)(void);
int (*t_finish)(void);
int (*t_next)(void);
void (*t_ack)(uint64_t);
void (*t_fail)(uint64_t);

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
const ardea_component bolt_comp = {0, &test_bolt};
const ardea_component plain_comp = {0, &plain_bolt};
const ardea_component spout_comp = {&spout_obj, 0};

/* The module's registered component (the tests swap it). */
ARDEA_REGISTER_BOLT(plain_bolt);
