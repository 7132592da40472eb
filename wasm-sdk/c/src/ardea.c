/* SPDX-License-Identifier: Apache-2.0
 * ardea.c - the Ardea guest SDK for C: the ABI v1 runtime (exports,
 * imports, codec, emit buffer, state cache). See ardea.h for the API and
 * wasm-sdk/ABI.md for the contract.
 *
 * Built for wasm32-wasi it declares the host imports (module "ardea") and
 * the lifecycle exports. Built natively (tests) the imports are plain
 * extern functions named ardea_host_* that a test double provides, the
 * exports are callable as ardea_export_*, and a trap calls
 * ardea_test_trap().
 */
#define _DEFAULT_SOURCE 1 /* getentropy */
#include "ardea.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__wasm__)
#define ARDEA_IMPORT(name) __attribute__((import_module("ardea"), import_name(name)))
#define ARDEA_EXPORT(name) __attribute__((export_name(name)))
#define ARDEA_TRAP() __builtin_trap()
#define READ_HOOK(what, name) ((void)0)
#else
#define ARDEA_IMPORT(name)
#define ARDEA_EXPORT(name)
__attribute__((noreturn)) void ardea_test_trap(void);
#define ARDEA_TRAP() ardea_test_trap()
/* Tests swap the registered component through this pointer. */
const ardea_component *ardea_test_component;
/* The test harness (ardea_test.c) watches reads by name: what 0 is an
 * input field (by-name accessors), 1 a config key. */
void (*ardea_test_read_hook)(int what, const char *name);
#define READ_HOOK(what, name)                                                                          \
    do {                                                                                               \
        if (ardea_test_read_hook)                                                                      \
            ardea_test_read_hook(what, name);                                                          \
    } while (0)
#endif

/* badabi.wasm (a test guest) is built with -DARDEA_TEST_ABI_VERSION=2. */
#ifndef ARDEA_TEST_ABI_VERSION
#define ARDEA_TEST_ABI_VERSION ARDEA_ABI_VERSION
#endif

/* ---- host imports (module "ardea") ---------------------------------- */

ARDEA_IMPORT("emit") void ardea_host_emit(const void *ops, uint32_t len);
ARDEA_IMPORT("log") void ardea_host_log(int32_t level, const void *msg, uint32_t len);
ARDEA_IMPORT("error") void ardea_host_error(const void *msg, uint32_t len);
ARDEA_IMPORT("state_get")
int32_t ardea_host_state_get(const void *key, uint32_t klen, void *val, uint32_t vcap);
ARDEA_IMPORT("state_write") void ardea_host_state_write(const void *ops, uint32_t len);
ARDEA_IMPORT("state_scan")
int32_t ardea_host_state_scan(const void *prefix, uint32_t plen, void *buf, uint32_t cap);
ARDEA_IMPORT("metric") void ardea_host_metric(const void *name, uint32_t len, int64_t delta);
ARDEA_IMPORT("gauge") void ardea_host_gauge(const void *name, uint32_t len, double value);
ARDEA_IMPORT("observe") void ardea_host_observe(const void *name, uint32_t len, int64_t value);
ARDEA_IMPORT("now") int64_t ardea_host_now(void);

/* ---- little-endian helpers ------------------------------------------ */

static inline uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t le32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}
static inline uint64_t le64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}
static inline uint8_t *put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}
static inline uint8_t *put32(uint8_t *p, uint32_t v) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    memcpy(p, &v, 4);
    return p + 4;
}
static inline uint8_t *put64(uint8_t *p, uint64_t v) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
    return p + 8;
}

/* ---- runtime ---------------------------------------------------------- */

#define OUT_FLUSH (64u << 10) /* pending emit ops are sent at this size */
#define ERR_CAP 2048

/* Per-input cache of the last field name looked up (a hot path names a
 * field with the same constant every time: compare the pointer). */
typedef struct {
    const char *last;
    int idx;
} name_cache;

typedef struct {
    char *name;
    size_t len;
    int64_t delta;
} metric_entry;

#define MAX_METRICS 64

static struct {
    uint8_t *in; /* input buffer handed out by ardea_buffer */
    size_t incap;
    uint8_t *out; /* pending emit ops */
    size_t outlen, outcap;

    ardea_context ctx;
    void *ctxmem;
    bool have_ctx;
    name_cache *incache;
    const char *last_stream; /* stream name cache for emits */
    int last_si;
    int def_stream; /* index of "default", or -1 */
    size_t def_fields;

    bool ready, done, can_emit;
    /* Acking: manual mode; the tuple being executed (0: none), whether it
     * was acked or failed during the call, what plain emits anchor on. */
    bool manual_ack, cur_done;
    uint64_t cur, auto_anchor;
    const char *call; /* current lifecycle call, for messages */

    bool has_err; /* the call's error text (ardea_errorf) */
    char err[ERR_CAP];
    bool has_emit_err;
    char emit_err[ERR_CAP];

    uint32_t *offs; /* field offsets of the current tuple */
    size_t offscap;
    size_t max, emitted; /* spout budget */

    metric_entry metrics[MAX_METRICS];
    size_t nmetrics;
} rt = {.def_stream = -1, .call = ""};

static void state_flush(void);
static void state_discard(void);
static void state_end_call(void);

/* One reference to the registration, so that a module without one gets
 * one link error (undefined symbol: ardea_registered_component) rather
 * than one per use. */
static const ardea_component *volatile registered = &ardea_registered_component;

static const ardea_component *component(void) {
#if !defined(__wasm__)
    if (ardea_test_component)
        return ardea_test_component;
#endif
    return registered;
}

/* report sends text to the host's error import. */
static void report(const char *msg) { ardea_host_error(msg, (uint32_t)strlen(msg)); }

void ardea_fatal(const char *msg) {
    static char buf[ERR_CAP];
    if (rt.call[0])
        snprintf(buf, sizeof buf, "%s: %s", rt.call, msg);
    else
        snprintf(buf, sizeof buf, "%s", msg);
    report(buf);
    ARDEA_TRAP();
}

void ardea_fatalf(const char *fmt, ...) {
    char buf[ERR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    ardea_fatal(buf);
}

/* at_prefix writes "file:line: " to buf (cap bytes) and returns its length. */
static size_t at_prefix(char *buf, size_t cap, const char *file, int line) {
    int n = snprintf(buf, cap, "%s:%d: ", file ? file : "?", line);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

void ardea_fatal_at(const char *file, int line, const char *fmt, ...) {
    char buf[ERR_CAP];
    size_t n = at_prefix(buf, sizeof buf, file, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - n, fmt, ap);
    va_end(ap);
    ardea_fatal(buf);
}

#if defined(__wasm__) && !defined(ARDEA_NO_ABORT_HOOK)
/* A failed assert() says which, where, before it traps (wasi-libc's
 * prints to stderr and aborts). */
__attribute__((noreturn)) void __assert_fail(const char *expr, const char *file, int line, const char *func) {
    ardea_fatalf("%s:%d: assertion failed: %s (in %s)", file, line, expr, func);
}
#endif

#if defined(__wasm__) && !defined(ARDEA_NO_ABORT_HOOK)
/* abort() (also reached from a failed assert) says so before it traps,
 * so the host's error names it; wasi-libc's abort traps silently. */
void abort(void) {
    ardea_fatal("abort() called");
}
#endif

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p)
        ardea_fatal("ardea: out of memory");
    return p;
}

static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q)
        ardea_fatal("ardea: out of memory");
    return q;
}

int ardea_error(const char *msg) {
    snprintf(rt.err, sizeof rt.err, "%s", msg);
    rt.has_err = true;
    return ARDEA_ERR;
}

int ardea_errorf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt.err, sizeof rt.err, fmt, ap);
    va_end(ap);
    rt.has_err = true;
    return ARDEA_ERR;
}

int ardea_errorf_at(const char *file, int line, const char *fmt, ...) {
    size_t n = at_prefix(rt.err, sizeof rt.err, file, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt.err + n, sizeof rt.err - n, fmt, ap);
    va_end(ap);
    rt.has_err = true;
    return ARDEA_ERR;
}

__attribute__((format(printf, 1, 2))) static void set_emit_err(const char *fmt, ...) {
    if (rt.has_emit_err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt.emit_err, sizeof rt.emit_err, fmt, ap);
    va_end(ap);
    rt.has_emit_err = true;
}

const char *ardea_emit_error(void) { return rt.has_emit_err ? rt.emit_err : NULL; }

static void begin(const char *call, bool may_emit) {
    rt.call = call;
    rt.can_emit = may_emit;
    rt.has_err = false;
    rt.has_emit_err = false;
}

static void flush_out(void) {
    if (rt.outlen > 0) {
        ardea_host_emit(rt.out, (uint32_t)rt.outlen);
        rt.outlen = 0;
    }
}

static void flush_metrics(void) {
    for (size_t i = 0; i < rt.nmetrics; i++) {
        metric_entry *m = &rt.metrics[i];
        if (m->delta != 0) {
            ardea_host_metric(m->name, (uint32_t)m->len, m->delta);
            m->delta = 0;
        }
    }
}

/* fail reports msg as the call's error and drops what the call had not
 * sent yet (emit ops, dirty state). */
static int32_t fail_msg(const char *msg) {
    static char buf[ERR_CAP + 64];
    rt.can_emit = false;
    rt.outlen = 0;
    state_discard();
    flush_metrics();
    snprintf(buf, sizeof buf, "%s: %s", rt.call, msg);
    report(buf);
    rt.call = "";
    return -1;
}

__attribute__((format(printf, 1, 2))) static int32_t failf(const char *fmt, ...) {
    char buf[ERR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return fail_msg(buf);
}

/* user_error is the text of a callback that returned rc < 0. */
static const char *user_error(int rc) {
    static char buf[128];
    if (rt.has_err)
        return rt.err;
    snprintf(buf, sizeof buf, "returned %d without an error text (return ardea_errorf(...))", rc);
    return buf;
}

/* end completes a successful call: one state_write with the dirty state,
 * then the pending emit ops, then metrics. A deferred emit error fails it. */
static int32_t end(int32_t status) {
    if (rt.has_emit_err)
        return fail_msg(rt.emit_err);
    rt.can_emit = false;
    state_flush();
    flush_out();
    flush_metrics();
    state_end_call();
    rt.call = "";
    return status;
}

/* ---- context ------------------------------------------------------------ */

typedef struct {
    const uint8_t *p;
    size_t left;
    bool ok;
} reader;

static uint32_t rd32(reader *r) {
    if (!r->ok || r->left < 4) {
        r->ok = false;
        return 0;
    }
    uint32_t v = le32(r->p);
    r->p += 4;
    r->left -= 4;
    return v;
}

static uint16_t rd16(reader *r) {
    if (!r->ok || r->left < 2) {
        r->ok = false;
        return 0;
    }
    uint16_t v = le16(r->p);
    r->p += 2;
    r->left -= 2;
    return v;
}

/* rdstr reads a "str"; with fill set it copies it (NUL-terminated) to
 * *chars and returns its view there. */
static ardea_str rdstr(reader *r, size_t *nchars, char **chars) {
    ardea_str s = {"", 0};
    uint32_t n = rd32(r);
    if (!r->ok || r->left < n) {
        r->ok = false;
        return s;
    }
    *nchars += (size_t)n + 1;
    if (chars) {
        memcpy(*chars, r->p, n);
        (*chars)[n] = 0;
        s.ptr = *chars;
        s.len = n;
        *chars += (size_t)n + 1;
    }
    r->p += n;
    r->left -= n;
    return s;
}

typedef struct {
    size_t nconfig, noutputs, ninputs, nfields, nchars;
} ctx_sizes;

/* parse_context reads a context blob. Pass 1 (mem NULL) validates and
 * sizes it; pass 2 fills ctx from one block of sz bytes. */
static const char *parse_context(const uint8_t *b, size_t n, ctx_sizes *sz, ardea_context *ctx,
                                 void *mem) {
    reader r = {b, n, true};
    ardea_config_entry *cfg = NULL;
    ardea_stream *outs = NULL;
    ardea_input *ins = NULL;
    ardea_str *fields = NULL;
    char *chars = NULL, **cp = NULL;
    size_t nchars = 0;
    if (mem) {
        cfg = (ardea_config_entry *)mem;
        outs = (ardea_stream *)(cfg + sz->nconfig);
        ins = (ardea_input *)(outs + sz->noutputs);
        fields = (ardea_str *)(ins + sz->ninputs);
        chars = (char *)(fields + sz->nfields);
        cp = &chars;
    }
    ardea_context c;
    memset(&c, 0, sizeof c);
    size_t nfields = 0;
    c.topology = rdstr(&r, &nchars, cp);
    c.component = rdstr(&r, &nchars, cp);
    c.task_id = rd32(&r);
    c.task_index = rd32(&r);
    c.parallelism = rd32(&r);
    uint32_t ncfg = rd32(&r);
    for (uint32_t i = 0; r.ok && i < ncfg; i++) {
        ardea_str k = rdstr(&r, &nchars, cp);
        ardea_str v = rdstr(&r, &nchars, cp);
        if (cfg) {
            cfg[i].key = k;
            cfg[i].value = v;
        }
    }
    uint16_t nout = rd16(&r);
    for (uint16_t i = 0; r.ok && i < nout; i++) {
        ardea_str name = rdstr(&r, &nchars, cp);
        uint16_t nf = rd16(&r);
        if (outs) {
            outs[i].name = name;
            outs[i].nfields = nf;
            outs[i].fields = fields + nfields;
        }
        for (uint16_t j = 0; r.ok && j < nf; j++) {
            ardea_str f = rdstr(&r, &nchars, cp);
            if (fields)
                fields[nfields] = f;
            nfields++;
        }
    }
    uint16_t nin = rd16(&r);
    for (uint16_t i = 0; r.ok && i < nin; i++) {
        ardea_str comp = rdstr(&r, &nchars, cp);
        ardea_str stream = rdstr(&r, &nchars, cp);
        uint16_t nf = rd16(&r);
        if (ins) {
            ins[i].component = comp;
            ins[i].stream = stream;
            ins[i].nfields = nf;
            ins[i].fields = fields + nfields;
        }
        for (uint16_t j = 0; r.ok && j < nf; j++) {
            ardea_str f = rdstr(&r, &nchars, cp);
            if (fields)
                fields[nfields] = f;
            nfields++;
        }
    }
    if (!r.ok)
        return "context: truncated";
    if (r.left != 0)
        return "context: trailing bytes";
    if (!mem) {
        sz->nconfig = ncfg;
        sz->noutputs = nout;
        sz->ninputs = nin;
        sz->nfields = nfields;
        sz->nchars = nchars;
        return NULL;
    }
    for (size_t i = 0; i < nout; i++)
        for (size_t j = 0; j < i; j++)
            if (outs[i].name.len == outs[j].name.len &&
                memcmp(outs[i].name.ptr, outs[j].name.ptr, outs[i].name.len) == 0)
                return "context: an output stream is declared twice";
    c.nconfig = ncfg;
    c.config = cfg;
    c.noutputs = nout;
    c.outputs = outs;
    c.ninputs = nin;
    c.inputs = ins;
    *ctx = c;
    return NULL;
}

static int32_t setup(int32_t n) {
    if (n < 0 || (size_t)n > rt.incap)
        return failf("input length %" PRId32 " exceeds the %zu-byte buffer from ardea_buffer", n, rt.incap);
    ctx_sizes sz;
    const char *why = parse_context(rt.in, (size_t)n, &sz, NULL, NULL);
    if (why)
        return fail_msg(why);
    size_t bytes = sz.nconfig * sizeof(ardea_config_entry) + sz.noutputs * sizeof(ardea_stream) +
                   sz.ninputs * sizeof(ardea_input) + sz.nfields * sizeof(ardea_str) + sz.nchars;
    void *mem = xmalloc(bytes);
    ardea_context c;
    if ((why = parse_context(rt.in, (size_t)n, &sz, &c, mem)) != NULL) {
        free(mem);
        return fail_msg(why);
    }
    free(rt.ctxmem);
    free(rt.incache);
    rt.ctxmem = mem;
    rt.ctx = c;
    rt.have_ctx = true;
    rt.incache = (name_cache *)calloc(c.ninputs ? c.ninputs : 1, sizeof(name_cache));
    if (!rt.incache)
        ardea_fatal("ardea: out of memory");
    rt.last_stream = NULL;
    rt.def_stream = -1;
    rt.def_fields = 0;
    for (size_t i = 0; i < c.noutputs; i++) {
        if (ardea_str_eq(c.outputs[i].name, "default")) {
            rt.def_stream = (int)i;
            rt.def_fields = c.outputs[i].nfields;
        }
    }
    rt.ready = false;
    rt.done = false;
    state_discard();
    return 0;
}

const ardea_context *ardea_get_context(void) { return rt.have_ctx ? &rt.ctx : NULL; }

static const ardea_config_entry *config_entry(const ardea_context *ctx, const char *key) {
    READ_HOOK(1, key);
    if (!ctx)
        return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < ctx->nconfig; i++)
        if (ctx->config[i].key.len == n && memcmp(ctx->config[i].key.ptr, key, n) == 0)
            return &ctx->config[i];
    return NULL;
}

const char *ardea_config_get(const ardea_context *ctx, const char *key) {
    const ardea_config_entry *e = config_entry(ctx, key);
    return e ? e->value.ptr : NULL;
}

const char *ardea_config_or(const ardea_context *ctx, const char *key, const char *def) {
    const char *v = ardea_config_get(ctx, key);
    return v ? v : def;
}

int ardea_config_int(const ardea_context *ctx, const char *key, int64_t def, int64_t *out) {
    *out = def;
    const ardea_config_entry *e = config_entry(ctx, key);
    if (!e)
        return ARDEA_OK;
    const char *s = e->value.ptr, *end = s + e->value.len;
    while (s < end && (*s == ' ' || (*s >= '\t' && *s <= '\r')))
        s++;
    while (end > s && (end[-1] == ' ' || (end[-1] >= '\t' && end[-1] <= '\r')))
        end--;
    bool neg = false;
    const char *d = s;
    if (d < end && (*d == '+' || *d == '-'))
        neg = *d++ == '-';
    uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    bool ok = d < end;
    for (; ok && d < end; d++) {
        if (*d < '0' || *d > '9' || v > (lim - (uint64_t)(*d - '0')) / 10) {
            ok = false;
            break;
        }
        v = v * 10 + (uint64_t)(*d - '0');
    }
    if (!ok)
        return ardea_errorf("config %s of component %s: %s is not an int64", key, ctx->component.ptr,
                            e->value.ptr);
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return ARDEA_OK;
}

/* ---- logging, metrics, time -------------------------------------------- */

void ardea_log_str(int level, ardea_str msg) { ardea_host_log(level, msg.ptr, (uint32_t)msg.len); }

void ardea_vlog(int level, const char *fmt, va_list ap) {
    char buf[1024];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    if ((size_t)n < sizeof buf) {
        ardea_host_log(level, buf, (uint32_t)n);
    } else {
        char *big = xmalloc((size_t)n + 1);
        vsnprintf(big, (size_t)n + 1, fmt, ap2);
        ardea_host_log(level, big, (uint32_t)n);
        free(big);
    }
    va_end(ap2);
}

void ardea_log(int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ardea_vlog(level, fmt, ap);
    va_end(ap);
}

void ardea_metric(const char *name, int64_t delta) {
    size_t n = strlen(name);
    for (size_t i = 0; i < rt.nmetrics; i++) {
        metric_entry *m = &rt.metrics[i];
        if (m->len == n && memcmp(m->name, name, n) == 0) {
            m->delta += delta;
            return;
        }
    }
    if (rt.nmetrics == MAX_METRICS) { /* many names: send this one now */
        ardea_host_metric(name, (uint32_t)n, delta);
        return;
    }
    metric_entry *m = &rt.metrics[rt.nmetrics++];
    m->name = xmalloc(n + 1);
    memcpy(m->name, name, n + 1);
    m->len = n;
    m->delta = delta;
}

void ardea_gauge(const char *name, double value) { ardea_host_gauge(name, (uint32_t)strlen(name), value); }

void ardea_observe(const char *name, int64_t value) { ardea_host_observe(name, (uint32_t)strlen(name), value); }

int64_t ardea_now(void) { return ardea_host_now(); }

/* ---- tuples -------------------------------------------------------------- */

static const char *kind_name(int k) {
    switch (k) {
    case ARDEA_NULL:
        return "null";
    case ARDEA_BYTES:
        return "bytes";
    case ARDEA_STRING:
        return "string";
    case ARDEA_INT:
        return "int64";
    case ARDEA_FLOAT:
        return "float64";
    case ARDEA_BOOL:
        return "bool";
    }
    return "unknown";
}

static const char *field_name(const ardea_tuple *t, size_t i) {
    if (t->in && i < t->in->nfields)
        return t->in->fields[i].ptr;
    return NULL;
}

/* The caller's location during a by-name accessor (NULL otherwise), put
 * before the text of its fatal errors. */
static const char *at_file;
static int at_line;

__attribute__((noreturn, format(printf, 1, 2))) static void fatal_here(const char *fmt, ...) {
    char buf[ERR_CAP];
    size_t n = at_file ? at_prefix(buf, sizeof buf, at_file, at_line) : 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, sizeof buf - n, fmt, ap);
    va_end(ap);
    at_file = NULL;
    ardea_fatal(buf);
}

__attribute__((noreturn)) static void bad_index(const ardea_tuple *t, size_t i) {
    fatal_here("ardea: field index %zu out of range (the tuple has %" PRIu32 " fields)", i, t->nfields);
}

__attribute__((noreturn)) static void wrong_kind(const ardea_tuple *t, size_t i, int got, const char *want) {
    const char *name = field_name(t, i);
    if (name)
        fatal_here("ardea: field %zu (%s) is %s, not %s", i, name, kind_name(got), want);
    fatal_here("ardea: field %zu is %s, not %s", i, kind_name(got), want);
}

static inline const uint8_t *field_at(const ardea_tuple *t, size_t i) {
    if (i >= t->nfields)
        bad_index(t, i);
    return t->raw + t->offs[i];
}

ardea_str ardea_tuple_component(const ardea_tuple *t) {
    ardea_str e = {"", 0};
    return t->in ? t->in->component : e;
}

ardea_str ardea_tuple_stream(const ardea_tuple *t) {
    ardea_str e = {"", 0};
    return t->in ? t->in->stream : e;
}

int ardea_tuple_index(const ardea_tuple *t, const char *field) {
    if (!t->in)
        return -1;
    name_cache *c = NULL;
    if (rt.incache && rt.have_ctx && t->input < rt.ctx.ninputs && t->in == &rt.ctx.inputs[t->input]) {
        c = &rt.incache[t->input];
        /* The same pointer usually holds the same name (a constant); check
         * the text too, in case a buffer was reused for another name. */
        if (c->last == field && strcmp(field, t->in->fields[c->idx].ptr) == 0)
            return c->idx;
    }
    size_t n = strlen(field);
    for (size_t i = 0; i < t->in->nfields; i++) {
        if (t->in->fields[i].len == n && memcmp(t->in->fields[i].ptr, field, n) == 0) {
            if (c) {
                c->last = field;
                c->idx = (int)i;
            }
            return (int)i;
        }
    }
    return -1;
}

static size_t must_index(const ardea_tuple *t, const char *field) {
    READ_HOOK(0, field);
    int i = ardea_tuple_index(t, field);
    if (i < 0) {
        ardea_str c = ardea_tuple_component(t), s = ardea_tuple_stream(t);
        char names[512] = "";
        size_t at = 0, n = t->in ? t->in->nfields : 0;
        for (size_t k = 0; k < n && at < sizeof names; k++)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s%s", k ? ", " : "", t->in->fields[k].ptr);
        fatal_here("ardea: no field \"%s\" in the tuple from %s/%s (its fields: %s)", field, c.len ? c.ptr : "?",
                   s.len ? s.ptr : "?", n ? names : "none declared");
    }
    return (size_t)i;
}

ardea_kind ardea_tuple_kind(const ardea_tuple *t, size_t i) { return (ardea_kind)*field_at(t, i); }

bool ardea_tuple_is_null(const ardea_tuple *t, size_t i) { return *field_at(t, i) == ARDEA_NULL; }

static inline ardea_str text_at(const ardea_tuple *t, size_t i, const char *want) {
    const uint8_t *p = field_at(t, i);
    ardea_str s = {"", 0};
    if (*p == ARDEA_STRING || *p == ARDEA_BYTES) {
        s.ptr = (const char *)p + 5;
        s.len = le32(p + 1);
    } else if (*p != ARDEA_NULL) {
        wrong_kind(t, i, *p, want);
    }
    return s;
}

ardea_str ardea_tuple_str(const ardea_tuple *t, size_t i) { return text_at(t, i, "string"); }
ardea_str ardea_tuple_bytes(const ardea_tuple *t, size_t i) { return text_at(t, i, "bytes"); }

static inline const uint8_t *fixed_at(const ardea_tuple *t, size_t i, int want) {
    const uint8_t *p = field_at(t, i);
    if (*p == want)
        return p + 1;
    if (*p != ARDEA_NULL)
        wrong_kind(t, i, *p, kind_name(want));
    return NULL;
}

int64_t ardea_tuple_int(const ardea_tuple *t, size_t i) {
    const uint8_t *p = fixed_at(t, i, ARDEA_INT);
    return p ? (int64_t)le64(p) : 0;
}

double ardea_tuple_float(const ardea_tuple *t, size_t i) {
    const uint8_t *p = fixed_at(t, i, ARDEA_FLOAT);
    double f = 0;
    if (p) {
        uint64_t u = le64(p);
        memcpy(&f, &u, 8);
    }
    return f;
}

bool ardea_tuple_bool(const ardea_tuple *t, size_t i) {
    const uint8_t *p = fixed_at(t, i, ARDEA_BOOL);
    return p && *p == 1;
}

char *ardea_tuple_strdup(const ardea_tuple *t, size_t i) {
    ardea_str s = text_at(t, i, "string");
    char *d = xmalloc(s.len + 1);
    memcpy(d, s.ptr, s.len);
    d[s.len] = 0;
    return d;
}

ardea_value ardea_tuple_value(const ardea_tuple *t, size_t i) {
    const uint8_t *p = field_at(t, i);
    switch (*p) {
    case ARDEA_BYTES: {
        ardea_str s = text_at(t, i, "bytes");
        return ardea_val_bytes(s.ptr, s.len);
    }
    case ARDEA_STRING:
        return ardea_val_str(text_at(t, i, "string"));
    case ARDEA_INT:
        return ardea_val_int(ardea_tuple_int(t, i));
    case ARDEA_FLOAT:
        return ardea_val_float(ardea_tuple_float(t, i));
    case ARDEA_BOOL:
        return ardea_val_bool(ardea_tuple_bool(t, i));
    }
    return ardea_val_null();
}

/* The by-name accessors: the header's macros call the *_at forms with
 * the caller's location; the plain functions remain for callers that
 * take their address or #undef the macros. */
#define BY_NAME(type, name, get)                                                                       \
    type(name)(const ardea_tuple * t, const char *f) { return get(t, must_index(t, f)); }              \
    type name##_at(const ardea_tuple *t, const char *f, const char *file, int line) {                  \
        at_file = file;                                                                                \
        at_line = line;                                                                                \
        type v = get(t, must_index(t, f));                                                             \
        at_file = NULL;                                                                                \
        return v;                                                                                      \
    }
BY_NAME(ardea_str, ardea_tuple_str_by_name, ardea_tuple_str)
BY_NAME(ardea_str, ardea_tuple_bytes_by_name, ardea_tuple_bytes)
BY_NAME(int64_t, ardea_tuple_int_by_name, ardea_tuple_int)
BY_NAME(double, ardea_tuple_float_by_name, ardea_tuple_float)
BY_NAME(bool, ardea_tuple_bool_by_name, ardea_tuple_bool)
#undef BY_NAME

int ardea_tuple_clone(const ardea_tuple *t, ardea_tuple *dst) {
    size_t ob = (size_t)t->nfields * sizeof(uint32_t);
    uint8_t *m = malloc(ob + t->rawlen + 1);
    if (!m)
        return ardea_error("ardea_tuple_clone: out of memory");
    memcpy(m, t->offs, ob);
    memcpy(m + ob, t->raw, t->rawlen);
    *dst = *t;
    dst->offs = (const uint32_t *)(void *)m;
    dst->raw = m + ob;
    return ARDEA_OK;
}

void ardea_tuple_free(ardea_tuple *t) {
    free((void *)t->offs);
    t->offs = NULL;
    t->raw = NULL;
    t->nfields = 0;
    t->rawlen = 0;
}

/* payload is field i's bytes after the tag and length prefix. */
static ardea_str payload(const ardea_tuple *t, size_t i) {
    const uint8_t *p = field_at(t, i);
    ardea_str s = {(const char *)p + 1, 0};
    switch (*p) {
    case ARDEA_BYTES:
    case ARDEA_STRING:
        s.ptr = (const char *)p + 5;
        s.len = le32(p + 1);
        break;
    case ARDEA_INT:
    case ARDEA_FLOAT:
        s.len = 8;
        break;
    case ARDEA_BOOL:
        s.len = 1;
        break;
    }
    return s;
}

ardea_str ardea_state_key_view_at(const ardea_tuple *t, size_t i) { return payload(t, i); }

ardea_str ardea_state_key_view(const ardea_tuple *t, const char *field) {
    return payload(t, must_index(t, field));
}

size_t ardea_state_key_at(const ardea_tuple *t, const size_t *fields, size_t nfields, char *buf, size_t cap) {
    size_t n = 0;
    for (size_t k = 0; k < nfields; k++) {
        if (k > 0) {
            if (n < cap)
                buf[n] = 0;
            n++;
        }
        ardea_str p = payload(t, fields[k]);
        if (n < cap)
            memcpy(buf + n, p.ptr, p.len <= cap - n ? p.len : cap - n);
        n += p.len;
    }
    return n;
}

size_t ardea_state_key(const ardea_tuple *t, const char *const *fields, size_t nfields, char *buf, size_t cap) {
    size_t idx[64];
    if (nfields > 64)
        ardea_fatal("ardea_state_key: more than 64 fields");
    for (size_t k = 0; k < nfields; k++)
        idx[k] = must_index(t, fields[k]);
    return ardea_state_key_at(t, idx, nfields, buf, cap);
}

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= FNV_PRIME;
    }
    return h;
}

uint64_t ardea_fields_hash(const ardea_tuple *t, const size_t *fields, size_t nfields) {
    uint64_t h = FNV_OFFSET;
    for (size_t k = 0; k < nfields; k++) {
        if (k > 0)
            h = fnv(h, "", 1);
        ardea_str p = payload(t, fields[k]);
        h = fnv(h, p.ptr, p.len);
    }
    return h;
}

uint64_t ardea_state_key_hash(const void *key, size_t klen) {
    const void *sep = memchr(key, ARDEA_KEY_SEP, klen);
    if (sep)
        klen = (size_t)((const char *)sep - (const char *)key);
    return fnv(FNV_OFFSET, key, klen);
}

/* scan_values validates a values block that must span all of b and
 * records the offset of every field's tag. It accepts exactly what the
 * reference codec accepts; on error it returns the reason. */
static const char *scan_values(const uint8_t *b, size_t n, uint32_t *nf) {
    static char why[96];
    if (n < 2)
        return "values: short header";
    size_t cnt = le16(b), off = 2;
    if (cnt > rt.offscap) {
        size_t c = rt.offscap ? rt.offscap : 16;
        while (c < cnt)
            c *= 2;
        rt.offs = xrealloc(rt.offs, c * sizeof(uint32_t));
        rt.offscap = c;
    }
    for (size_t i = 0; i < cnt; i++) {
        if (off >= n)
            goto short_field;
        rt.offs[i] = (uint32_t)off;
        size_t left = n - off;
        switch (b[off]) {
        case ARDEA_NULL:
            off++;
            break;
        case ARDEA_BYTES:
        case ARDEA_STRING: {
            if (left < 5)
                goto short_field;
            uint32_t l = le32(b + off + 1);
            if (left - 5 < l)
                goto short_field;
            off += 5 + (size_t)l;
            break;
        }
        case ARDEA_INT:
        case ARDEA_FLOAT:
            if (left < 9)
                goto short_field;
            off += 9;
            break;
        case ARDEA_BOOL:
            if (left < 2)
                goto short_field;
            if (b[off + 1] > 1) {
                snprintf(why, sizeof why, "field %zu: bool payload %u is not 0 or 1", i, b[off + 1]);
                return why;
            }
            off += 2;
            break;
        default:
            snprintf(why, sizeof why, "field %zu: unknown kind %u", i, b[off]);
            return why;
        }
        continue;
    short_field:
        snprintf(why, sizeof why, "field %zu: truncated", i);
        return why;
    }
    if (off != n) {
        snprintf(why, sizeof why, "%zu trailing bytes after %zu fields", n - off, cnt);
        return why;
    }
    *nf = (uint32_t)cnt;
    return NULL;
}

/* ---- emitting ---------------------------------------------------------- */

static void out_reserve(size_t need) {
    if (rt.outlen + need <= rt.outcap)
        return;
    flush_out();
    if (need > rt.outcap) {
        size_t c = rt.outcap ? rt.outcap : OUT_FLUSH + 1024;
        while (c < need)
            c *= 2;
        free(rt.out);
        rt.out = xmalloc(c);
        rt.outcap = c;
    }
}

/* stream_index resolves a stream name (with a pointer cache for
 * constants), or returns -1 after setting the emit error. */
static int stream_index(const char *stream) {
    if (!rt.can_emit) {
        set_emit_err("emit on stream \"%s\" during %s: the ABI allows emitting only in open, next, ack, fail, "
                     "prepare, execute, tick and finish",
                     stream ? stream : "default", rt.call);
        return -1;
    }
    if (stream == NULL)
        return rt.def_stream >= 0 ? rt.def_stream : (set_emit_err("emit on undeclared stream \"default\""), -1);
    if (stream == rt.last_stream && strcmp(stream, rt.ctx.outputs[rt.last_si].name.ptr) == 0)
        return rt.last_si;
    size_t n = strlen(stream);
    for (size_t i = 0; i < rt.ctx.noutputs; i++) {
        if (rt.ctx.outputs[i].name.len == n && memcmp(rt.ctx.outputs[i].name.ptr, stream, n) == 0) {
            rt.last_stream = stream;
            rt.last_si = (int)i;
            return (int)i;
        }
    }
    char names[512] = "";
    size_t at = 0;
    for (size_t i = 0; i < rt.ctx.noutputs && at < sizeof names; i++)
        at += (size_t)snprintf(names + at, sizeof names - at, "%s\"%s\"", i ? ", " : "", rt.ctx.outputs[i].name.ptr);
    set_emit_err("emit on undeclared stream \"%s\" (declared: %s)", stream, rt.ctx.noutputs ? names : "none");
    return -1;
}

/* emit_op appends one emit op. stream NULL is "default". Anchors are
 * either one id (anchor, 0: none) or an array of tuples (ids 0 dropped). */
static void emit_op(const char *stream, uint32_t direct, uint64_t msgid, uint64_t anchor,
                    const ardea_tuple *anchors, size_t nanchors, const ardea_value *v, size_t n) {
    int si;
    if (stream == NULL && rt.can_emit && rt.def_stream >= 0)
        si = rt.def_stream;
    else if ((si = stream_index(stream)) < 0)
        return;
    const ardea_stream *o = &rt.ctx.outputs[si];
    if (n != o->nfields) {
        set_emit_err("emit on stream \"%s\": %zu values for %zu declared fields", o->name.ptr, n, o->nfields);
        return;
    }
    size_t na = 0;
    if (anchors) {
        for (size_t i = 0; i < nanchors; i++)
            na += anchors[i].id != 0;
    } else {
        na = anchor != 0;
    }
    size_t size = 1 + 2 + 4 + 8 + 2 + 8 * na + 2;
    for (size_t i = 0; i < n; i++) {
        switch (v[i].kind) {
        case ARDEA_NULL:
            size += 1;
            break;
        case ARDEA_BYTES:
        case ARDEA_STRING:
            if (v[i].u.s.len > UINT32_MAX) {
                set_emit_err("emit on stream \"%s\": field %zu (%s): %zu bytes is too long", o->name.ptr, i,
                             o->fields[i].ptr, v[i].u.s.len);
                return;
            }
            size += 5 + v[i].u.s.len;
            break;
        case ARDEA_INT:
        case ARDEA_FLOAT:
            size += 9;
            break;
        case ARDEA_BOOL:
            size += 2;
            break;
        default:
            set_emit_err("emit on stream \"%s\": field %zu (%s): unknown value kind %d", o->name.ptr, i,
                         o->fields[i].ptr, (int)v[i].kind);
            return;
        }
    }
    out_reserve(size);
    uint8_t *p = rt.out + rt.outlen;
    *p++ = 1;
    p = put16(p, (uint16_t)si);
    p = put32(p, direct);
    p = put64(p, msgid);
    p = put16(p, (uint16_t)na);
    if (anchors) {
        for (size_t i = 0; i < nanchors; i++)
            if (anchors[i].id != 0)
                p = put64(p, anchors[i].id);
    } else if (anchor != 0) {
        p = put64(p, anchor);
    }
    p = put16(p, (uint16_t)n);
    for (size_t i = 0; i < n; i++) {
        *p++ = (uint8_t)v[i].kind;
        switch (v[i].kind) {
        case ARDEA_BYTES:
        case ARDEA_STRING:
            p = put32(p, (uint32_t)v[i].u.s.len);
            if (v[i].u.s.len)
                memcpy(p, v[i].u.s.ptr, v[i].u.s.len);
            p += v[i].u.s.len;
            break;
        case ARDEA_INT:
            p = put64(p, (uint64_t)v[i].u.i);
            break;
        case ARDEA_FLOAT: {
            uint64_t u;
            memcpy(&u, &v[i].u.f, 8);
            p = put64(p, u);
            break;
        }
        case ARDEA_BOOL:
            *p++ = v[i].u.b ? 1 : 0;
            break;
        default:
            break;
        }
    }
    rt.outlen = (size_t)(p - rt.out);
    rt.emitted++;
    if (rt.outlen >= OUT_FLUSH)
        flush_out();
}

static bool check_direct(uint32_t task, const char *stream) {
    if (task == ARDEA_NO_TASK) {
        set_emit_err("emit on stream \"%s\": task id %" PRIu32 " is not a direct target", stream ? stream : "default",
                     task);
        return false;
    }
    return true;
}

void ardea_emit(const ardea_value *v, size_t n) { emit_op(NULL, ARDEA_NO_TASK, 0, rt.auto_anchor, NULL, 0, v, n); }

void ardea_emit_to(const char *stream, const ardea_value *v, size_t n) {
    emit_op(stream ? stream : "default", ARDEA_NO_TASK, 0, rt.auto_anchor, NULL, 0, v, n);
}

void ardea_emit_direct(uint32_t task, const char *stream, const ardea_value *v, size_t n) {
    if (check_direct(task, stream))
        emit_op(stream ? stream : "default", task, 0, rt.auto_anchor, NULL, 0, v, n);
}

void ardea_manual_ack(void) { rt.manual_ack = true; }

void ardea_emit_anchored(const ardea_tuple *anchor, const ardea_value *v, size_t n) {
    emit_op(NULL, ARDEA_NO_TASK, 0, anchor ? anchor->id : 0, NULL, 0, v, n);
}

void ardea_emit_anchored_to(const char *stream, const ardea_tuple *anchor, const ardea_value *v, size_t n) {
    emit_op(stream ? stream : "default", ARDEA_NO_TASK, 0, anchor ? anchor->id : 0, NULL, 0, v, n);
}

void ardea_emit_multi_anchored(const char *stream, const ardea_tuple *anchors, size_t nanchors,
                               const ardea_value *v, size_t n) {
    static const ardea_tuple none;
    emit_op(stream ? stream : "default", ARDEA_NO_TASK, 0, 0, anchors ? anchors : &none, anchors ? nanchors : 0,
            v, n);
}

void ardea_emit_direct_anchored(uint32_t task, const char *stream, const ardea_tuple *anchors, size_t nanchors,
                                const ardea_value *v, size_t n) {
    static const ardea_tuple none;
    if (check_direct(task, stream))
        emit_op(stream ? stream : "default", task, 0, 0, anchors ? anchors : &none, anchors ? nanchors : 0, v, n);
}

void ardea_emit_with_id(uint64_t msgid, const ardea_value *v, size_t n) {
    emit_op(NULL, ARDEA_NO_TASK, msgid, 0, NULL, 0, v, n);
}

void ardea_emit_to_with_id(const char *stream, uint64_t msgid, const ardea_value *v, size_t n) {
    emit_op(stream ? stream : "default", ARDEA_NO_TASK, msgid, 0, NULL, 0, v, n);
}

void ardea_emit_direct_with_id(uint32_t task, const char *stream, uint64_t msgid, const ardea_value *v,
                               size_t n) {
    if (check_direct(task, stream))
        emit_op(stream ? stream : "default", task, msgid, 0, NULL, 0, v, n);
}

static void ack_fail(uint8_t op, uint64_t id) {
    if (id == 0)
        return;
    if (id == rt.cur) {
        /* The tuple being executed is acked or failed at most once per
         * call (and automatic mode then leaves it alone). */
        if (rt.cur_done)
            return;
        rt.cur_done = true;
    }
    if (!rt.can_emit) {
        set_emit_err("ack or fail during %s: not allowed there by the ABI", rt.call);
        return;
    }
    out_reserve(9);
    uint8_t *p = rt.out + rt.outlen;
    *p++ = op;
    put64(p, id);
    rt.outlen += 9;
    if (rt.outlen >= OUT_FLUSH)
        flush_out();
}

void ardea_ack_tuple(const ardea_tuple *t) { ack_fail(2, t->id); }
void ardea_fail_tuple(const ardea_tuple *t) { ack_fail(3, t->id); }

size_t ardea_emitted(void) { return rt.emitted; }
size_t ardea_remaining(void) { return rt.emitted < rt.max ? rt.max - rt.emitted : 0; }

/* ---- state: write-back cache ------------------------------------------- */

#define CACHE_ENTRIES (1u << 16)
#define CACHE_BYTES (8u << 20) /* keys + values */
#define INLINE_VALUE 16
#define MAX_PROBE 64

typedef struct {
    uint32_t hash;
    uint32_t koff, klen;
    int32_t vlen; /* -1: absent */
    uint32_t bigcap;
    uint8_t dirty;
    union {
        uint8_t inl[INLINE_VALUE];
        uint8_t *big; /* vlen > INLINE_VALUE */
    } v;
} slot;

static struct {
    uint32_t *index; /* open addressing; slot number + 1, 0 empty */
    size_t isize;    /* power of two, >= 2 * slots */
    slot *slots;
    size_t nslots, slotcap;
    uint8_t *keys;
    size_t keylen, keycap;
    uint32_t *dirty; /* slots with unwritten changes, in first-write order */
    size_t ndirty, dirtycap;
    size_t bytes; /* keys + values */
    uint64_t seed;
    bool seeded;
    uint8_t *vbuf; /* state_get */
    size_t vcap;
    uint8_t *sbuf; /* state_scan */
    size_t scap;
    uint8_t *wbuf; /* state_write */
    size_t wcap;
    void **grave; /* value blocks dropped by a reset, freed at the call's end */
    size_t ngrave, gravecap;
} st;

static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint32_t hash_key(const uint8_t *k, size_t n) {
    uint64_t x = st.seed ^ (uint64_t)n * 0x9e3779b97f4a7c15ull;
    if (n > 8) {
        const uint8_t *r = k;
        size_t left = n;
        while (left > 8) {
            x = rotl((x ^ le64(r)) * 0x9e3779b97f4a7c15ull, 29);
            r += 8;
            left -= 8;
        }
        x ^= le64(k + n - 8);
    } else if (n >= 4) {
        x ^= (uint64_t)le32(k) | (uint64_t)le32(k + n - 4) << 32;
    } else if (n > 0) {
        x ^= (uint64_t)k[0] | (uint64_t)k[n / 2] << 8 | (uint64_t)k[n - 1] << 16;
    }
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (uint32_t)x;
}

static void seed_cache(void) {
    if (st.seeded)
        return;
    uint64_t s = 0;
    if (getentropy(&s, sizeof s) != 0)
        s = (uint64_t)ardea_host_now();
    st.seed = s | 1;
    st.seeded = true;
}

static inline bool key_eq(const slot *e, uint32_t h, const uint8_t *k, size_t n) {
    return e->hash == h && e->klen == n && memcmp(st.keys + e->koff, k, n) == 0;
}

/* find returns the slot number of a cached key, or -1 with *cell the
 * index cell where it would go (isize: no index, or further than
 * MAX_PROBE from its home). */
static long find(const uint8_t *k, size_t n, uint32_t h, size_t *cell) {
    if (st.isize == 0) {
        *cell = 0;
        return -1;
    }
    size_t mask = st.isize - 1, i = h & mask;
    for (size_t probe = 0;; probe++) {
        uint32_t c = st.index[i];
        if (c == 0) {
            *cell = probe > MAX_PROBE ? st.isize : i;
            return -1;
        }
        if (key_eq(&st.slots[c - 1], h, k, n))
            return (long)c - 1;
        i = (i + 1) & mask;
    }
}

static void value_free(slot *e) {
    if (e->vlen > INLINE_VALUE)
        free(e->v.big);
}

static void reset_cache(void) {
    /* A value view from get may still be in use (put(k2, v) with v from
     * get(k1)): keep the blocks until the call ends. */
    for (size_t i = 0; i < st.nslots; i++) {
        slot *e = &st.slots[i];
        if (e->vlen > INLINE_VALUE) {
            if (st.ngrave == st.gravecap) {
                st.gravecap = st.gravecap ? 2 * st.gravecap : 16;
                st.grave = xrealloc(st.grave, st.gravecap * sizeof(void *));
            }
            st.grave[st.ngrave++] = e->v.big;
        }
    }
    if (st.index)
        memset(st.index, 0, st.isize * sizeof(uint32_t));
    st.nslots = 0;
    st.keylen = 0;
    st.ndirty = 0;
    st.bytes = 0;
}

static void grow_index(void) {
    size_t n = st.isize ? 2 * st.isize : 64;
    while (n < 2 * (st.nslots + 1))
        n *= 2;
    free(st.index);
    st.index = calloc(n, sizeof(uint32_t));
    if (!st.index)
        ardea_fatal("ardea: out of memory");
    st.isize = n;
    size_t mask = n - 1;
    for (size_t j = 0; j < st.nslots; j++) {
        size_t i = st.slots[j].hash & mask;
        while (st.index[i] != 0)
            i = (i + 1) & mask;
        st.index[i] = (uint32_t)(j + 1);
    }
}

/* insert adds an absent slot for a key that is not cached; cell is where
 * find would put it; vlen the size of the value to come. */
static size_t insert(const uint8_t *k, size_t n, uint32_t h, size_t cell, size_t vlen) {
    if (cell >= st.isize || st.nslots >= CACHE_ENTRIES || st.bytes + n + vlen > CACHE_BYTES) {
        if (st.nslots > 0) {
            state_flush();
            reset_cache();
        }
        cell = SIZE_MAX;
    }
    if (2 * (st.nslots + 1) > st.isize) {
        grow_index();
        cell = SIZE_MAX;
    }
    if (cell == SIZE_MAX) {
        if (find(k, n, h, &cell) >= 0 || cell >= st.isize)
            ardea_fatal("ardea: state cache: no free cell");
    }
    if (st.nslots == st.slotcap) {
        st.slotcap = st.slotcap ? 2 * st.slotcap : 64;
        st.slots = xrealloc(st.slots, st.slotcap * sizeof(slot));
    }
    if (st.keylen + n > st.keycap) {
        size_t c = st.keycap ? st.keycap : 4096;
        while (c < st.keylen + n)
            c *= 2;
        st.keys = xrealloc(st.keys, c);
        st.keycap = c;
    }
    slot *e = &st.slots[st.nslots];
    e->hash = h;
    e->koff = (uint32_t)st.keylen;
    e->klen = (uint32_t)n;
    e->vlen = -1;
    e->bigcap = 0;
    e->dirty = 0;
    if (n)
        memcpy(st.keys + st.keylen, k, n);
    st.keylen += n;
    st.index[cell] = (uint32_t)(st.nslots + 1);
    st.bytes += n;
    return st.nslots++;
}

static const uint8_t *value_ptr(const slot *e) { return e->vlen > INLINE_VALUE ? e->v.big : e->v.inl; }

/* store sets a slot's value (present), copying v; v may alias the slot's
 * own value. */
static void store(slot *e, const void *v, size_t n) {
    size_t old = e->vlen > 0 ? (size_t)e->vlen : 0;
    st.bytes += n;
    st.bytes -= old;
    if (n <= INLINE_VALUE) {
        uint8_t tmp[INLINE_VALUE];
        if (n)
            memcpy(tmp, v, n);
        value_free(e);
        e->bigcap = 0;
        memcpy(e->v.inl, tmp, n);
    } else if (e->vlen > INLINE_VALUE && e->bigcap >= n && e->bigcap <= 2 * n + 64) {
        memmove(e->v.big, v, n);
    } else {
        uint8_t *b = xmalloc(n);
        memcpy(b, v, n);
        value_free(e);
        e->v.big = b;
        e->bigcap = (uint32_t)n;
    }
    e->vlen = (int32_t)n;
}

static void drop(slot *e) {
    if (e->vlen > 0)
        st.bytes -= (size_t)e->vlen;
    value_free(e);
    e->bigcap = 0;
    e->vlen = -1;
}

static void touch(size_t i) {
    slot *e = &st.slots[i];
    if (e->dirty)
        return;
    e->dirty = 1;
    if (st.ndirty == st.dirtycap) {
        st.dirtycap = st.dirtycap ? 2 * st.dirtycap : 64;
        st.dirty = xrealloc(st.dirty, st.dirtycap * sizeof(uint32_t));
    }
    st.dirty[st.ndirty++] = (uint32_t)i;
}

/* lookup returns the slot of a key, loading it from the host on a miss. */
static size_t lookup(const uint8_t *k, size_t n) {
    seed_cache();
    uint32_t h = hash_key(k, n);
    size_t cell;
    long i = find(k, n, h, &cell);
    if (i >= 0)
        return (size_t)i;
    if (!st.vbuf) {
        st.vcap = 256;
        st.vbuf = xmalloc(st.vcap);
    }
    int32_t vn;
    for (;;) {
        vn = ardea_host_state_get(k, (uint32_t)n, st.vbuf, (uint32_t)st.vcap);
        if (vn < 0 || (size_t)vn <= st.vcap)
            break;
        free(st.vbuf);
        st.vcap = (size_t)vn;
        st.vbuf = xmalloc(st.vcap);
    }
    size_t j = insert(k, n, h, cell, vn > 0 ? (size_t)vn : 0);
    if (vn >= 0)
        store(&st.slots[j], st.vbuf, (size_t)vn);
    return j;
}

/* entry returns the slot of a key about to get a value of vlen bytes (or
 * be deleted): a miss does not read the host. */
static size_t entry(const uint8_t *k, size_t n, size_t vlen) {
    seed_cache();
    uint32_t h = hash_key(k, n);
    size_t cell;
    long i = find(k, n, h, &cell);
    if (i >= 0)
        return (size_t)i;
    return insert(k, n, h, cell, vlen);
}

bool ardea_state_get(const void *key, size_t klen, ardea_str *value) {
    size_t at = lookup(key, klen); /* may grow st.slots: index it after */
    slot *e = &st.slots[at];
    if (e->vlen < 0) {
        if (value) {
            value->ptr = "";
            value->len = 0;
        }
        return false;
    }
    if (value) {
        value->ptr = (const char *)value_ptr(e);
        value->len = (size_t)e->vlen;
    }
    return true;
}

void ardea_state_put(const void *key, size_t klen, const void *value, size_t vlen) {
    uint8_t tmp[INLINE_VALUE];
    /* A value viewed in the slot array (from get) would move if an insert
     * grew the array. */
    if (vlen <= INLINE_VALUE && st.slots && (const uint8_t *)value >= (const uint8_t *)st.slots &&
        (const uint8_t *)value < (const uint8_t *)(st.slots + st.slotcap)) {
        memcpy(tmp, value, vlen);
        value = tmp;
    }
    size_t i = entry(key, klen, vlen);
    store(&st.slots[i], value, vlen);
    touch(i);
}

void ardea_state_delete(const void *key, size_t klen) {
    size_t i = entry(key, klen, 0);
    drop(&st.slots[i]);
    touch(i);
}

bool ardea_state_get_int(const void *key, size_t klen, int64_t *v) {
    size_t at = lookup(key, klen); /* may grow st.slots: index it after */
    slot *e = &st.slots[at];
    if (e->vlen != 8)
        return false;
    *v = (int64_t)le64(e->v.inl);
    return true;
}

void ardea_state_put_int(const void *key, size_t klen, int64_t v) {
    uint8_t b[8];
    put64(b, (uint64_t)v);
    size_t i = entry(key, klen, 8);
    store(&st.slots[i], b, 8);
    touch(i);
}

int64_t ardea_state_add_int(const void *key, size_t klen, int64_t delta) {
    size_t i = lookup(key, klen);
    slot *e = &st.slots[i];
    if (e->vlen != 8) {
        static const uint8_t zero[8];
        store(e, zero, 8);
    }
    int64_t v = (int64_t)((uint64_t)le64(e->v.inl) + (uint64_t)delta);
    put64(e->v.inl, (uint64_t)v);
    touch(i);
    return v;
}

static void state_flush(void) {
    if (st.ndirty == 0)
        return;
    size_t need = 0;
    for (size_t d = 0; d < st.ndirty; d++) {
        slot *e = &st.slots[st.dirty[d]];
        need += 9 + e->klen + (e->vlen > 0 ? (size_t)e->vlen : 0);
    }
    if (need > st.wcap) {
        free(st.wbuf);
        st.wcap = need < 4096 ? 4096 : need;
        st.wbuf = xmalloc(st.wcap);
    }
    uint8_t *p = st.wbuf;
    for (size_t d = 0; d < st.ndirty; d++) {
        slot *e = &st.slots[st.dirty[d]];
        e->dirty = 0;
        *p++ = e->vlen < 0 ? 2 : 1;
        p = put32(p, e->klen);
        memcpy(p, st.keys + e->koff, e->klen);
        p += e->klen;
        size_t vl = e->vlen > 0 ? (size_t)e->vlen : 0;
        p = put32(p, (uint32_t)vl);
        if (vl)
            memcpy(p, value_ptr(e), vl);
        p += vl;
    }
    st.ndirty = 0;
    ardea_host_state_write(st.wbuf, (uint32_t)(p - st.wbuf));
    if (st.wcap > (4u << 20)) {
        free(st.wbuf);
        st.wbuf = NULL;
        st.wcap = 0;
    }
}

static void state_end_call(void) {
    for (size_t i = 0; i < st.ngrave; i++)
        free(st.grave[i]);
    st.ngrave = 0;
}

static void state_discard(void) {
    if (st.nslots > 0 || st.ndirty > 0)
        reset_cache();
    state_end_call();
}

int ardea_state_scan(const void *prefix, size_t plen, ardea_scan_fn fn, void *arg) {
    state_flush();
    uint8_t *buf = st.sbuf;
    size_t cap = st.scap;
    st.sbuf = NULL; /* a nested scan gets its own buffer */
    st.scap = 0;
    if (!buf) {
        cap = 4096;
        buf = xmalloc(cap);
    }
    int32_t n;
    for (;;) {
        n = ardea_host_state_scan(prefix, (uint32_t)plen, buf, (uint32_t)cap);
        if (n < 4)
            ardea_fatalf("ardea: state_scan returned %" PRId32, n);
        if ((size_t)n <= cap)
            break;
        free(buf);
        cap = (size_t)n;
        buf = xmalloc(cap);
    }
    uint32_t count = le32(buf);
    size_t off = 4, end = (size_t)n;
    int rc = 0;
    for (uint32_t i = 0; i < count && rc == 0; i++) {
        ardea_str kv[2];
        for (int j = 0; j < 2; j++) {
            if (end - off < 4)
                ardea_fatal("ardea: malformed state_scan result");
            uint32_t l = le32(buf + off);
            off += 4;
            if (end - off < l)
                ardea_fatal("ardea: malformed state_scan result");
            kv[j].ptr = (const char *)buf + off;
            kv[j].len = l;
            off += l;
        }
        rc = fn(kv[0], kv[1], arg);
    }
    if (st.sbuf) { /* a nested scan left its buffer: keep the bigger */
        if (st.scap >= cap) {
            free(buf);
            return rc;
        }
        free(st.sbuf);
    }
    st.sbuf = buf;
    st.scap = cap;
    return rc;
}

/* ---- manifest ------------------------------------------------------------ */

typedef struct {
    char *p;
    size_t n, cap;
} sbuf;

static void sput(sbuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? 2 * b->cap : 256;
        while (c < b->n + n + 1)
            c *= 2;
        b->p = xrealloc(b->p, c);
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void scat(sbuf *b, const char *s) { sput(b, s, strlen(s)); }

/* sjson appends s as a JSON string. */
static void sjson(sbuf *b, const char *s) {
    scat(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[8];
        if (*p == '"' || *p == '\\') {
            e[0] = '\\';
            e[1] = (char)*p;
            sput(b, e, 2);
        } else if (*p < 0x20) {
            snprintf(e, sizeof e, "\\u%04x", *p);
            scat(b, e);
        } else {
            sput(b, (const char *)p, 1);
        }
    }
    scat(b, "\"");
}

/* names_json appends the names of every declaration of a kind, once each
 * in first-declared order, as a JSON array; it returns false if none. */
static bool names_json(sbuf *b, const ardea_decl *d, ardea_decl_kind kind) {
    bool any = false;
    for (const ardea_decl *x = d; x && x->kind != ARDEA_DECL_END; x++) {
        if (x->kind != kind || !x->names)
            continue;
        for (const char *const *n = x->names; *n; n++) {
            bool seen = false;
            for (const ardea_decl *y = d; y <= x && !seen; y++) {
                if (y->kind != kind || !y->names)
                    continue;
                for (const char *const *m = y->names; *m && (y < x || m < n); m++)
                    if (strcmp(*m, *n) == 0) {
                        seen = true;
                        break;
                    }
            }
            if (seen)
                continue;
            scat(b, any ? "," : "[");
            sjson(b, *n);
            any = true;
        }
    }
    if (any)
        scat(b, "]");
    return any;
}

static sbuf manifest;

const char *ardea_manifest_json(void) {
    const ardea_component *c = component();
    const ardea_decl *d = c->decls;
    sbuf *b = &manifest;
    b->n = 0;
    scat(b, "{\"manifest\":1,\"sdk\":{\"language\":\"c\",\"version\":");
    sjson(b, ARDEA_SDK_VERSION);
    scat(b, "},\"kind\":");
    sjson(b, c->bolt ? "bolt" : c->spout ? "spout" : "");
    bool outs = false;
    for (const ardea_decl *x = d; x && x->kind != ARDEA_DECL_END; x++) {
        if (x->kind != ARDEA_DECL_EMITS || !x->names || !x->names[0])
            continue;
        scat(b, outs ? ",{\"stream\":" : ",\"outputs\":[{\"stream\":");
        sjson(b, x->names[0]);
        scat(b, ",\"fields\":[");
        for (const char *const *n = x->names + 1; *n; n++) {
            if (n > x->names + 1)
                scat(b, ",");
            sjson(b, *n);
        }
        scat(b, "]}");
        outs = true;
    }
    if (outs)
        scat(b, "]");
    size_t mark = b->n;
    scat(b, ",\"inputs\":");
    if (!names_json(b, d, ARDEA_DECL_READS))
        b->n = mark;
    mark = b->n;
    scat(b, ",\"config\":");
    if (!names_json(b, d, ARDEA_DECL_CONFIG))
        b->n = mark;
    scat(b, "}");
    return b->p;
}

/* ardea_manifest returns u32 len, then the JSON (ABI "Manifest"). It
 * calls no host import. */
ARDEA_EXPORT("ardea_manifest") uint8_t *ardea_export_manifest(void) {
    static uint8_t *out;
    const char *j = ardea_manifest_json();
    size_t n = strlen(j);
    free(out);
    out = xmalloc(4 + n);
    put32(out, (uint32_t)n);
    memcpy(out + 4, j, n);
    return out;
}

/* ---- lifecycle ------------------------------------------------------------ */

static int32_t kind_error(const char *export, bool want_bolt) {
    const ardea_component *c = component();
    if (!c->spout && !c->bolt)
        return failf("%s: no component registered (use ARDEA_REGISTER_%s)", export, want_bolt ? "BOLT" : "SPOUT");
    return failf("%s is a %s export, but this module registers a %s", export, want_bolt ? "bolt" : "spout",
                 want_bolt ? "spout" : "bolt");
}

/* check verifies that a lifecycle export fits the registered component;
 * it returns 0, or the failed call's code. */
static int32_t check(const char *export, bool bolt) {
    const ardea_component *c = component();
    if ((bolt && !c->bolt) || (!bolt && !c->spout))
        return kind_error(export, bolt);
    if (!rt.ready)
        return failf("%s called before a successful %s", export, bolt ? "ardea_prepare" : "ardea_open");
    return 0;
}

ARDEA_EXPORT("ardea_abi_version") int32_t ardea_export_abi_version(void) { return ARDEA_TEST_ABI_VERSION; }

ARDEA_EXPORT("ardea_buffer") void *ardea_export_buffer(int32_t size) {
    if (size < 0)
        return NULL;
    if ((size_t)size > rt.incap || !rt.in) {
        size_t n = 2 * rt.incap;
        if (n < (size_t)size)
            n = (size_t)size;
        if (n < (64u << 10))
            n = 64u << 10;
        free(rt.in);
        rt.in = xmalloc(n);
        rt.incap = n;
    }
    return rt.in;
}

ARDEA_EXPORT("ardea_open") int32_t ardea_export_open(int32_t n) {
    begin("Open", false);
    const ardea_spout *s = component()->spout;
    if (!s)
        return kind_error("ardea_open", false);
    if (setup(n) < 0)
        return -1;
    rt.can_emit = true;
    rt.max = rt.emitted = 0;
    if (s->open) {
        int rc = s->open(&rt.ctx);
        if (rc < 0)
            return fail_msg(user_error(rc));
    }
    rt.ready = true;
    return end(0);
}

ARDEA_EXPORT("ardea_prepare") int32_t ardea_export_prepare(int32_t n) {
    begin("Prepare", false);
    const ardea_bolt *b = component()->bolt;
    if (!b)
        return kind_error("ardea_prepare", true);
    if (setup(n) < 0)
        return -1;
    rt.can_emit = true;
    if (b->prepare) {
        int rc = b->prepare(&rt.ctx);
        if (rc < 0)
            return fail_msg(user_error(rc));
    }
    rt.ready = true;
    return end(0);
}

ARDEA_EXPORT("ardea_next") int32_t ardea_export_next(int32_t max) {
    begin("Next", true);
    int32_t rc = check("ardea_next", false);
    if (rc)
        return rc;
    if (rt.done)
        return end(ARDEA_DONE);
    const ardea_spout *s = component()->spout;
    rt.max = max > 0 ? (size_t)max : 0;
    rt.emitted = 0;
    if (!s->next) {
        rt.done = true;
        return end(ARDEA_DONE);
    }
    for (;;) {
        size_t before = rt.emitted;
        int st_ = s->next();
        switch (st_) {
        case ARDEA_MORE:
            if (rt.emitted == before || rt.emitted >= rt.max || rt.has_emit_err)
                return end(ARDEA_MORE);
            break;
        case ARDEA_IDLE:
            return end(ARDEA_IDLE);
        case ARDEA_DONE:
            rt.done = true;
            return end(ARDEA_DONE);
        default:
            if (st_ < 0)
                return fail_msg(user_error(st_));
            return failf("unknown status %d", st_);
        }
    }
}

static int32_t ack_fail_ids(int32_t n, bool failed) {
    begin(failed ? "Fail" : "Ack", true);
    int32_t rc = check(failed ? "ardea_fail" : "ardea_ack", false);
    if (rc)
        return rc;
    if (n < 0 || (size_t)n > rt.incap)
        return failf("input length %" PRId32 " exceeds the %zu-byte buffer from ardea_buffer", n, rt.incap);
    size_t len = (size_t)n;
    if (len < 4 || (uint64_t)(len - 4) != 8 * (uint64_t)le32(rt.in))
        return failf("malformed message id list (%zu bytes)", len);
    const ardea_spout *s = component()->spout;
    rt.max = rt.emitted = 0;
    void (*fn)(uint64_t) = failed ? s->fail : s->ack;
    for (size_t i = 4; i < len; i += 8) {
        uint64_t id = le64(rt.in + i);
        if (fn)
            fn(id);
    }
    return end(0);
}

ARDEA_EXPORT("ardea_ack") int32_t ardea_export_ack(int32_t n) { return ack_fail_ids(n, false); }
ARDEA_EXPORT("ardea_fail") int32_t ardea_export_fail(int32_t n) { return ack_fail_ids(n, true); }

static int32_t activate(bool on) {
    begin(on ? "Activate" : "Deactivate", false);
    int32_t rc = check(on ? "ardea_activate" : "ardea_deactivate", false);
    if (rc)
        return rc;
    const ardea_spout *s = component()->spout;
    void (*fn)(void) = on ? s->activate : s->deactivate;
    if (fn)
        fn();
    return end(0);
}

ARDEA_EXPORT("ardea_activate") int32_t ardea_export_activate(void) { return activate(true); }
ARDEA_EXPORT("ardea_deactivate") int32_t ardea_export_deactivate(void) { return activate(false); }

#define RECORD_HEADER (4 + 2 + 4 + 8)

/* The index of the batch record being executed (ABI "A failing tuple"):
 * stored once per record, read by the host after a failed or trapped
 * ardea_execute. Volatile so that the store is in memory before user
 * code runs, whatever it inlines. */
static volatile uint32_t cursor;

ARDEA_EXPORT("ardea_cursor") uint32_t *ardea_export_cursor(void) { return (uint32_t *)(uintptr_t)&cursor; }

ARDEA_EXPORT("ardea_execute") int32_t ardea_export_execute(int32_t n) {
    begin("Execute", true);
    int32_t rc = check("ardea_execute", true);
    if (rc)
        return rc;
    if (n < 0 || (size_t)n > rt.incap)
        return failf("input length %" PRId32 " exceeds the %zu-byte buffer from ardea_buffer", n, rt.incap);
    const uint8_t *src = rt.in;
    size_t len = (size_t)n;
    cursor = 0;
    if (len < 4)
        return failf("batch: %zu-byte header", len);
    int (*exec)(const ardea_tuple *) = component()->bolt->execute;
    const ardea_input *inputs = rt.ctx.inputs;
    size_t ninputs = rt.ctx.ninputs, off = 4;
    if (rt.offscap == 0) {
        rt.offscap = 16;
        rt.offs = xmalloc(rt.offscap * sizeof(uint32_t));
    }
    uint32_t count = le32(src);
    for (uint32_t r = 0; r < count; r++) {
        cursor = r;
        if (len - off < RECORD_HEADER)
            return failf("batch record %" PRIu32 ": truncated header (%" PRIu32 " records announced)", r, count);
        uint32_t l = le32(src + off);
        if (l < RECORD_HEADER - 4 || len - off - 4 < l)
            return failf("batch record %" PRIu32 ": bad length %" PRIu32, r, l);
        const uint8_t *rec = src + off + 4;
        off += 4 + (size_t)l;
        uint16_t idx = le16(rec);
        if (idx >= ninputs)
            return failf("batch record %" PRIu32 ": input index %u, but the context declares %zu inputs", r, idx,
                         ninputs);
        const uint8_t *vals = rec + RECORD_HEADER - 4;
        size_t vlen = l - (RECORD_HEADER - 4);
        ardea_tuple t;
        if (vlen >= 7 && vals[0] == 1 && vals[1] == 0 && (vals[2] == ARDEA_STRING || vals[2] == ARDEA_BYTES) &&
            (uint64_t)le32(vals + 3) == (uint64_t)(vlen - 7)) {
            /* One string or bytes field (split's lines, count's words). */
            rt.offs[0] = 2;
            t.nfields = 1;
        } else {
            const char *why = scan_values(vals, vlen, &t.nfields);
            if (why)
                return failf("batch record %" PRIu32 " from %s/%s task %" PRIu32 ": %s", r,
                             inputs[idx].component.ptr, inputs[idx].stream.ptr, le32(rec + 2), why);
        }
        t.raw = vals;
        t.rawlen = (uint32_t)vlen;
        t.offs = rt.offs;
        t.in = &inputs[idx];
        t.id = le64(rec + 6);
        t.source_task = le32(rec + 2);
        t.input = idx;
        rt.cur = t.id;
        rt.cur_done = false;
        rt.auto_anchor = rt.manual_ack ? 0 : t.id;
        if (exec) {
            int erc = exec(&t);
            if (erc < 0) {
                rt.cur = rt.auto_anchor = 0;
                return failf("tuple %" PRIu64 " from %s/%s task %" PRIu32 ": %s", t.id, t.in->component.ptr,
                             t.in->stream.ptr, t.source_task, user_error(erc));
            }
            if (!rt.manual_ack && !rt.cur_done)
                ack_fail(2, t.id);
        } else {
            ardea_ack_tuple(&t);
        }
        rt.cur = rt.auto_anchor = 0;
    }
    if (off != len)
        return failf("batch: %zu trailing bytes after %" PRIu32 " records", len - off, count);
    return end(0);
}

static int32_t bolt_call(const char *call, const char *export, int (*pick)(const ardea_bolt *)) {
    begin(call, true);
    int32_t rc = check(export, true);
    if (rc)
        return rc;
    int urc = pick(component()->bolt);
    if (urc < 0)
        return fail_msg(user_error(urc));
    return end(0);
}

static int call_tick(const ardea_bolt *b) { return b->tick ? b->tick() : 0; }
static int call_finish(const ardea_bolt *b) { return b->finish ? b->finish() : 0; }

ARDEA_EXPORT("ardea_tick") int32_t ardea_export_tick(void) { return bolt_call("Tick", "ardea_tick", call_tick); }
ARDEA_EXPORT("ardea_finish") int32_t ardea_export_finish(void) {
    return bolt_call("Finish", "ardea_finish", call_finish);
}

ARDEA_EXPORT("ardea_close") int32_t ardea_export_close(void) {
    begin("Close", false);
    const ardea_component *c = component();
    int rc = 0;
    if (c->spout)
        rc = c->spout->close ? c->spout->close() : 0;
    else if (c->bolt)
        rc = c->bolt->close ? c->bolt->close() : 0;
    else
        return fail_msg("ardea_close: no component registered");
    if (rc < 0)
        return fail_msg(user_error(rc));
    rt.ready = false;
    return end(0);
}

#if !defined(__wasm__)
/* ardea_test_reset makes the SDK as a fresh instance's (native builds):
 * what a host does after a trap, by starting a new instance. The test
 * harness calls it after a trap and before preparing again. */
void ardea_test_reset(void) {
    free(rt.in);
    free(rt.out);
    free(rt.ctxmem);
    free(rt.incache);
    free(rt.offs);
    for (size_t i = 0; i < rt.nmetrics; i++)
        free(rt.metrics[i].name);
    memset(&rt, 0, sizeof rt);
    rt.def_stream = -1;
    rt.call = "";
    for (size_t i = 0; i < st.nslots; i++)
        value_free(&st.slots[i]);
    for (size_t i = 0; i < st.ngrave; i++)
        free(st.grave[i]);
    free(st.index);
    free(st.slots);
    free(st.keys);
    free(st.dirty);
    free(st.vbuf);
    free(st.sbuf);
    free(st.wbuf);
    free(st.grave);
    memset(&st, 0, sizeof st);
    /* The cursor stays: the host reads it after the failed call. */
}
#endif
