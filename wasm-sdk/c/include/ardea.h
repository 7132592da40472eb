/* SPDX-License-Identifier: Apache-2.0
 * ardea.h - the Ardea guest SDK for C (ABI v1, see wasm-sdk/ABI.md).
 *
 * Write a spout or a bolt as a struct of callbacks, register it with
 * ARDEA_REGISTER_BOLT or ARDEA_REGISTER_SPOUT (with its declarations:
 * ARDEA_EMITS, ARDEA_READS, ARDEA_CONFIG), and build the module as a WASI
 * reactor together with src/ardea.c:
 *
 *     clang --target=wasm32-wasi -mexec-model=reactor -O2 -I wasm-sdk/c/include \
 *         -Wl,--strip-debug -o bolt.wasm bolt.c wasm-sdk/c/src/ardea.c
 *
 * or simply `ardea build DIR` for a folder of .c files (the SDK is
 * embedded in the ardea binary). Test it natively with the harness,
 * ardea_test.h. Documentation: docs/sdk/c.md.
 *
 * The SDK has no dependencies besides wasi-libc. It implements the ABI's
 * encodings itself, batches every emit of a host call into one buffer
 * (one ardea.emit call when the call returns), and keeps a write-back
 * cache of the task's host-side state (one state_write per host call).
 *
 * Conventions:
 *   - Callbacks return ARDEA_OK (0) on success. To fail the call return
 *     ardea_errorf(...) or ARDEA_ERROR(...), which record the error text
 *     and return ARDEA_ERR (-1). A failed execute fails its tuple (the
 *     host knows which from the cursor the SDK exports); any other failed
 *     call fails the task instance.
 *   - ardea_str is a view: a pointer and a length, not NUL-terminated
 *     unless documented. Views of input tuples are valid only during the
 *     callback that received the tuple.
 *   - A misuse that cannot be returned as an error (a wrong field kind, an
 *     index out of range, out of memory) reports its text to the host and
 *     traps, like a Go panic: see ardea_fatal.
 *   - The SDK is single-threaded, like the module's host calls.
 */
#ifndef ARDEA_H
#define ARDEA_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ABI version this SDK implements (the module's ardea_abi_version). */
#define ARDEA_ABI_VERSION 1

/* This SDK's version (the manifest's sdk.version). */
#define ARDEA_SDK_VERSION "0.1.0"

/* Return codes of callbacks. */
#define ARDEA_OK 0
#define ARDEA_ERR (-1)

/* A spout's next() status. */
typedef enum ardea_status {
    ARDEA_MORE = 0, /* emitted zero or more tuples; call again */
    ARDEA_IDLE = 1, /* nothing to emit now; the host backs off briefly */
    ARDEA_DONE = 2  /* input exhausted; next is never called again */
} ardea_status;

/* Field kinds (the ABI's tags). */
typedef enum ardea_kind {
    ARDEA_NULL = 0,
    ARDEA_BYTES = 1,
    ARDEA_STRING = 2,
    ARDEA_INT = 3,
    ARDEA_FLOAT = 4,
    ARDEA_BOOL = 5
} ardea_kind;

/* Log levels, as Go's log/slog. */
#define ARDEA_LEVEL_DEBUG (-4)
#define ARDEA_LEVEL_INFO 0
#define ARDEA_LEVEL_WARN 4
#define ARDEA_LEVEL_ERROR 8

/* Direct task id meaning "not direct". */
#define ARDEA_NO_TASK 0xFFFFFFFFu

/* A view of bytes (a string's are UTF-8). */
typedef struct ardea_str {
    const char *ptr;
    size_t len;
} ardea_str;

/* ardea_s("text"): a view of a NUL-terminated string. */
static inline ardea_str ardea_s(const char *s) {
    ardea_str r = {s, s ? strlen(s) : 0};
    return r;
}

/* ardea_str_eq(a, "text"): whether a view equals a C string. */
static inline bool ardea_str_eq(ardea_str a, const char *s) {
    size_t n = strlen(s);
    return a.len == n && memcmp(a.ptr, s, n) == 0;
}

/* ---------------------------------------------------------------------
 * Context: the task's topology, component, position, config and streams.
 * Every string in it is also NUL-terminated. Valid from open/prepare on.
 * ------------------------------------------------------------------- */

typedef struct ardea_config_entry {
    ardea_str key, value;
} ardea_config_entry;

/* A declared output stream; outputs[i] is stream index i. */
typedef struct ardea_stream {
    ardea_str name;
    size_t nfields;
    const ardea_str *fields;
} ardea_stream;

/* A subscribed (component, stream) pair with its declared fields;
 * inputs[i] is input index i. */
typedef struct ardea_input {
    ardea_str component, stream;
    size_t nfields;
    const ardea_str *fields;
} ardea_input;

typedef struct ardea_context {
    ardea_str topology, component;
    uint32_t task_id;     /* global task id (a tuple's source task downstream) */
    uint32_t task_index;  /* index among the component's tasks, from 0 */
    uint32_t parallelism; /* number of tasks of the component */
    size_t nconfig;       /* config entries, ascending by key */
    const ardea_config_entry *config;
    size_t noutputs;
    const ardea_stream *outputs;
    size_t ninputs;
    const ardea_input *inputs;
} ardea_context;

/* The current context (NULL before open/prepare). */
const ardea_context *ardea_get_context(void);

/* A config value as a NUL-terminated string, or NULL if it is not set. */
const char *ardea_config_get(const ardea_context *ctx, const char *key);
/* A config value, or def if it is not set. */
const char *ardea_config_or(const ardea_context *ctx, const char *key, const char *def);
/* An integer config value (decimal, surrounding spaces allowed) in *out,
 * or def if it is not set. Returns ARDEA_OK, or ARDEA_ERR with the call's
 * error text set if the value is not an int64 (then *out = def). */
int ardea_config_int(const ardea_context *ctx, const char *key, int64_t def, int64_t *out);

/* ---------------------------------------------------------------------
 * Tuples. A tuple views the input batch in the SDK's buffer: its values
 * are valid only during the execute call that received it. A copy of the
 * struct keeps id, source task and input valid (enough to anchor on it or
 * ack it later); ardea_tuple_clone keeps its values too.
 * ------------------------------------------------------------------- */

typedef struct ardea_tuple {
    /* Private: use the accessors. */
    const uint8_t *raw;    /* the encoded values block */
    uint32_t rawlen;
    uint32_t nfields;
    const uint32_t *offs;  /* offset of each field's tag in raw */
    const ardea_input *in; /* declared input, or NULL */
    uint64_t id;
    uint32_t source_task;
    uint16_t input;
} ardea_tuple;

/* The tuple id: 0 unless the topology tracks delivery. The SDK drops
 * anchors on, and acks and fails of, id 0. */
static inline uint64_t ardea_tuple_id(const ardea_tuple *t) { return t->id; }
/* The id of the task that emitted the tuple. */
static inline uint32_t ardea_tuple_source_task(const ardea_tuple *t) { return t->source_task; }
/* The input index (position in ctx->inputs). */
static inline size_t ardea_tuple_input(const ardea_tuple *t) { return t->input; }
/* The upstream component and stream ("" if unknown). */
ardea_str ardea_tuple_component(const ardea_tuple *t);
ardea_str ardea_tuple_stream(const ardea_tuple *t);
/* The number of fields. */
static inline size_t ardea_tuple_len(const ardea_tuple *t) { return t->nfields; }
/* The encoded values block (ABI "values"). */
static inline ardea_str ardea_tuple_raw(const ardea_tuple *t) {
    ardea_str r = {(const char *)t->raw, t->rawlen};
    return r;
}
/* The position of a declared field, or -1. */
int ardea_tuple_index(const ardea_tuple *t, const char *field);

/* Accessors by field index (0-based). An index out of range or a field of
 * another kind is fatal (see ardea_fatal); a null field reads as the zero
 * value (an empty view). ardea_tuple_str accepts string and bytes fields
 * and returns a view without copying. */
ardea_kind ardea_tuple_kind(const ardea_tuple *t, size_t i);
bool ardea_tuple_is_null(const ardea_tuple *t, size_t i);
ardea_str ardea_tuple_str(const ardea_tuple *t, size_t i);
ardea_str ardea_tuple_bytes(const ardea_tuple *t, size_t i); /* same as _str */
int64_t ardea_tuple_int(const ardea_tuple *t, size_t i);
double ardea_tuple_float(const ardea_tuple *t, size_t i);
bool ardea_tuple_bool(const ardea_tuple *t, size_t i);
/* Field i (string or bytes) as a malloc'd NUL-terminated copy; free() it. */
char *ardea_tuple_strdup(const ardea_tuple *t, size_t i);

/* The same by declared field name. A name the tuple's stream does not
 * declare is fatal, with the caller's file:line, the name and the
 * stream's fields in the message; in execute that fails the tuple (see
 * ardea_fatal). Declare the names a bolt reads with ARDEA_READS. (These
 * are macros passing __FILE__ and __LINE__ to the *_at functions.) */
ardea_str ardea_tuple_str_by_name(const ardea_tuple *t, const char *field);
ardea_str ardea_tuple_bytes_by_name(const ardea_tuple *t, const char *field);
int64_t ardea_tuple_int_by_name(const ardea_tuple *t, const char *field);
double ardea_tuple_float_by_name(const ardea_tuple *t, const char *field);
bool ardea_tuple_bool_by_name(const ardea_tuple *t, const char *field);
ardea_str ardea_tuple_str_by_name_at(const ardea_tuple *t, const char *field, const char *file, int line);
ardea_str ardea_tuple_bytes_by_name_at(const ardea_tuple *t, const char *field, const char *file, int line);
int64_t ardea_tuple_int_by_name_at(const ardea_tuple *t, const char *field, const char *file, int line);
double ardea_tuple_float_by_name_at(const ardea_tuple *t, const char *field, const char *file, int line);
bool ardea_tuple_bool_by_name_at(const ardea_tuple *t, const char *field, const char *file, int line);
#define ardea_tuple_str_by_name(t, f) ardea_tuple_str_by_name_at(t, f, __FILE__, __LINE__)
#define ardea_tuple_bytes_by_name(t, f) ardea_tuple_bytes_by_name_at(t, f, __FILE__, __LINE__)
#define ardea_tuple_int_by_name(t, f) ardea_tuple_int_by_name_at(t, f, __FILE__, __LINE__)
#define ardea_tuple_float_by_name(t, f) ardea_tuple_float_by_name_at(t, f, __FILE__, __LINE__)
#define ardea_tuple_bool_by_name(t, f) ardea_tuple_bool_by_name_at(t, f, __FILE__, __LINE__)

/* A copy of t that owns its values (one malloc); release it with
 * ardea_tuple_free. Returns ARDEA_OK, or ARDEA_ERR if out of memory. */
int ardea_tuple_clone(const ardea_tuple *t, ardea_tuple *dst);
void ardea_tuple_free(ardea_tuple *t);

/* ---------------------------------------------------------------------
 * Values to emit. Build an array and pass it with its length, or use
 * ARDEA_VALUES(...) which expands to both:
 *
 *     ardea_emit_anchored(t, ARDEA_VALUES(ardea_val_str(w), ardea_val_int(n)));
 *
 * Values only point to their bytes: the SDK copies them when it emits.
 * ------------------------------------------------------------------- */

typedef struct ardea_value {
    ardea_kind kind;
    union {
        int64_t i;
        double f;
        bool b;
        ardea_str s; /* string or bytes */
    } u;
} ardea_value;

static inline ardea_value ardea_val_null(void) {
    ardea_value v;
    v.kind = ARDEA_NULL;
    v.u.i = 0;
    return v;
}
/* A string field from a view (for example of an input field). */
static inline ardea_value ardea_val_str(ardea_str s) {
    ardea_value v;
    v.kind = ARDEA_STRING;
    v.u.s = s;
    return v;
}
/* A string field from a NUL-terminated string. */
static inline ardea_value ardea_val_cstr(const char *s) { return ardea_val_str(ardea_s(s)); }
/* A string field from a pointer and a length. */
static inline ardea_value ardea_val_strn(const void *p, size_t n) {
    ardea_str s = {(const char *)p, n};
    return ardea_val_str(s);
}
/* A bytes field. */
static inline ardea_value ardea_val_bytes(const void *p, size_t n) {
    ardea_value v;
    v.kind = ARDEA_BYTES;
    v.u.s.ptr = (const char *)p;
    v.u.s.len = n;
    return v;
}
static inline ardea_value ardea_val_int(int64_t i) {
    ardea_value v;
    v.kind = ARDEA_INT;
    v.u.i = i;
    return v;
}
static inline ardea_value ardea_val_float(double f) {
    ardea_value v;
    v.kind = ARDEA_FLOAT;
    v.u.f = f;
    return v;
}
static inline ardea_value ardea_val_bool(bool b) {
    ardea_value v;
    v.kind = ARDEA_BOOL;
    v.u.i = 0;
    v.u.b = b;
    return v;
}

/* ARDEA_VALUES(v1, v2, ...) expands to "array, count" for the emit
 * functions' last two parameters. */
#define ARDEA_VALUES(...)                                                 \
    ((const ardea_value[]){__VA_ARGS__}),                                 \
        (sizeof((const ardea_value[]){__VA_ARGS__}) / sizeof(ardea_value))

/* Field i as a value of its kind (string and bytes as views), for
 * example to emit it again. */
ardea_value ardea_tuple_value(const ardea_tuple *t, size_t i);

/* ---------------------------------------------------------------------
 * Emitting. Allowed in open, next, ack, fail (spouts) and prepare,
 * execute, tick, finish (bolts). An emit error (an undeclared stream, a
 * value count that differs from the stream's declared fields, an unknown
 * kind, emitting where the ABI does not allow it) drops that tuple and
 * fails the current call when it returns; ardea_emit_error reports the
 * first one so far. Streams are named by their declared names.
 * ------------------------------------------------------------------- */

/* On the "default" stream. In a bolt's execute in automatic ack mode (the
 * default) these three are anchored on the tuple being executed, and the
 * SDK acks that tuple when execute returns ARDEA_OK unless the bolt acked
 * or failed it itself; the tuple being executed is acked or failed at most
 * once per call. */
void ardea_emit(const ardea_value *values, size_t n);
/* On a declared stream. */
void ardea_emit_to(const char *stream, const ardea_value *values, size_t n);
/* To one task of a subscriber that uses direct grouping. */
void ardea_emit_direct(uint32_t task, const char *stream, const ardea_value *values, size_t n);
/* Bolts: switch to manual acking (call it in prepare): plain emits are
 * unanchored and only the bolt's own acks and fails are sent (for bolts
 * that keep tuples across calls: joins, windows). */
void ardea_manual_ack(void);

/* Bolts: anchored on an input tuple, so that a failure downstream fails
 * the anchor's tuple tree. */
void ardea_emit_anchored(const ardea_tuple *anchor, const ardea_value *values, size_t n);
void ardea_emit_anchored_to(const char *stream, const ardea_tuple *anchor, const ardea_value *values,
                            size_t n);
/* Anchored on several tuples (an array of nanchors tuples). */
void ardea_emit_multi_anchored(const char *stream, const ardea_tuple *anchors, size_t nanchors,
                               const ardea_value *values, size_t n);
/* Direct, anchored on several tuples. */
void ardea_emit_direct_anchored(uint32_t task, const char *stream, const ardea_tuple *anchors,
                                size_t nanchors, const ardea_value *values, size_t n);
/* Ack or fail an input tuple (no-ops for an untracked tuple, id 0). */
void ardea_ack_tuple(const ardea_tuple *t);
void ardea_fail_tuple(const ardea_tuple *t);

/* Spouts: a tracked tuple with a message id; the host later calls the
 * spout's ack or fail with it. */
void ardea_emit_with_id(uint64_t msgid, const ardea_value *values, size_t n);
void ardea_emit_to_with_id(const char *stream, uint64_t msgid, const ardea_value *values, size_t n);
void ardea_emit_direct_with_id(uint32_t task, const char *stream, uint64_t msgid,
                               const ardea_value *values, size_t n);
/* Tuples emitted during the current host call. */
size_t ardea_emitted(void);
/* How many more tuples the host asked for in the current next call. */
size_t ardea_remaining(void);

/* The first emit error of the current call (NUL-terminated), or NULL. */
const char *ardea_emit_error(void);

/* ---------------------------------------------------------------------
 * Errors, logging, metrics, time.
 * ------------------------------------------------------------------- */

/* Record the current call's error text and return ARDEA_ERR:
 *     if (bad) return ardea_errorf("bad word %s", w);                   */
int ardea_errorf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int ardea_error(const char *msg);

/* ARDEA_ERROR(fmt, ...): ardea_errorf with the caller's file:line before
 * the text ("split.c:12: bad word x"):
 *     if (bad) return ARDEA_ERROR("bad word %s", w);                    */
#define ARDEA_ERROR(...) ardea_errorf_at(__FILE__, __LINE__, __VA_ARGS__)
int ardea_errorf_at(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Report msg to the host (ardea.error) and trap, like a Go panic. In a
 * bolt's execute this fails the tuple being executed: the host reads
 * which one from the SDK's cursor (export ardea_cursor), fails it by the
 * topology's delivery mode, and runs the rest of the batch in a fresh
 * instance (guest memory is lost; host-side state is kept). Elsewhere it
 * fails the instance. abort() and a failed assert() do the same, with
 * "abort() called" and the assertion's text and file:line. */
__attribute__((noreturn)) void ardea_fatal(const char *msg);
__attribute__((noreturn, format(printf, 1, 2))) void ardea_fatalf(const char *fmt, ...);
/* ARDEA_FAIL(fmt, ...): ardea_fatalf with the caller's file:line before
 * the text, so the host's report points at the line:
 *     if (!ok) ARDEA_FAIL("no state for %s", key);                       */
#define ARDEA_FAIL(...) ardea_fatal_at(__FILE__, __LINE__, __VA_ARGS__)
__attribute__((noreturn, format(printf, 3, 4))) void ardea_fatal_at(const char *file, int line, const char *fmt,
                                                                    ...);

/* A log line (printf-style) at a level; the host tags it with the
 * topology, component and task. */
void ardea_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ardea_vlog(int level, const char *fmt, va_list ap);
/* A log line given as bytes. */
void ardea_log_str(int level, ardea_str msg);
#define ardea_log_debug(...) ardea_log(ARDEA_LEVEL_DEBUG, __VA_ARGS__)
#define ardea_log_info(...) ardea_log(ARDEA_LEVEL_INFO, __VA_ARGS__)
#define ardea_log_warn(...) ardea_log(ARDEA_LEVEL_WARN, __VA_ARGS__)
#define ardea_log_error(...) ardea_log(ARDEA_LEVEL_ERROR, __VA_ARGS__)

/* Add delta to the component's custom counter name. Deltas are summed in
 * the guest and sent once per host call. */
void ardea_metric(const char *name, int64_t delta);

/* Set the task's user gauge name to value (the last value set in a metrics
 * interval is exported). Sent to the host at once. */
void ardea_gauge(const char *name, double value);

/* Record value in the task's user histogram name (exported as the
 * interval's mean and <name>.count; use nanoseconds for durations). Sent
 * to the host at once. */
void ardea_observe(const char *name, int64_t value);

/* The host's wall clock, Unix nanoseconds. */
int64_t ardea_now(void);

/* ---------------------------------------------------------------------
 * State: the task's key/value state, held by the host (it survives a
 * module restart or swap). The SDK keeps a write-back cache:
 *   - get reads through the cache (a miss asks the host once and caches
 *     the value or its absence);
 *   - put and delete change only the cache;
 *   - when a host call returns successfully, every changed entry goes to
 *     the host in ONE state_write, before the call's emits;
 *   - scan first writes the changed entries, then asks the host;
 *   - if the call fails, its unwritten changes are dropped.
 * Keys and values are any bytes. A value view from get is the cache's:
 * do not modify it, and do not keep it past the next state call.
 * ------------------------------------------------------------------- */

/* Look a key up: true and *value if present, false if absent. */
bool ardea_state_get(const void *key, size_t klen, ardea_str *value);
/* Store a value (copied). */
void ardea_state_put(const void *key, size_t klen, const void *value, size_t vlen);
/* Remove a key. */
void ardea_state_delete(const void *key, size_t klen);
/* An int64 stored by put_int/add_int (8 bytes little endian): true and
 * *v, or false if absent or not 8 bytes. */
bool ardea_state_get_int(const void *key, size_t klen, int64_t *v);
void ardea_state_put_int(const void *key, size_t klen, int64_t v);
/* Add delta to the int64 under key (absent counts as 0), store it and
 * return the new value. */
int64_t ardea_state_add_int(const void *key, size_t klen, int64_t delta);

/* Call fn for every key starting with prefix, in ascending key order,
 * until fn returns non-zero (which scan then returns; 0 otherwise). The
 * views are valid only during fn; writes made during the scan are not
 * seen by it. */
typedef int (*ardea_scan_fn)(ardea_str key, ardea_str value, void *arg);
int ardea_state_scan(const void *prefix, size_t plen, ardea_scan_fn fn, void *arg);

/* The state key of a single field by the ABI's "rule for state that
 * moves with its keys": the field's payload (a string's bytes, an int64
 * or float64 as 8 bytes little endian, a bool as 1 byte, null as
 * nothing), as a view of the input. Use the fields-grouping field so that
 * a key's state moves with its tuples when the component is rescaled. */
ardea_str ardea_state_key_view(const ardea_tuple *t, const char *field);
ardea_str ardea_state_key_view_at(const ardea_tuple *t, size_t i);
/* The state key of several fields (payloads joined with 0x00) written to
 * buf (cap bytes). Returns the key's length; if it exceeds cap, buf holds
 * only its first cap bytes. */
size_t ardea_state_key_at(const ardea_tuple *t, const size_t *fields, size_t nfields, char *buf,
                          size_t cap);
/* The same with declared field names (at most 64). */
size_t ardea_state_key(const ardea_tuple *t, const char *const *fields, size_t nfields, char *buf,
                       size_t cap);
/* Separates a state key's routing part from an optional suffix. */
#define ARDEA_KEY_SEP '\x1f'

/* Hashing as the host's fields grouping and key groups (ABI "State"):
 * FNV-1a 64 over the grouping fields' payloads joined with 0x00; a state
 * key's hash stops at its first 0x1F byte. */
uint64_t ardea_fields_hash(const ardea_tuple *t, const size_t *fields, size_t nfields);
uint64_t ardea_state_key_hash(const void *key, size_t klen);
static inline uint32_t ardea_key_group(uint64_t hash, uint32_t max_key_groups) {
    return (uint32_t)(hash % max_key_groups);
}
static inline uint32_t ardea_key_group_task(uint32_t key_group, uint32_t parallelism,
                                            uint32_t max_key_groups) {
    return (uint32_t)((uint64_t)key_group * parallelism / max_key_groups);
}

/* ---------------------------------------------------------------------
 * Components. Fill the callbacks you need; NULL ones do nothing (a NULL
 * bolt execute acks its tuple, a NULL spout next reports ARDEA_DONE).
 * ------------------------------------------------------------------- */

typedef struct ardea_bolt {
    /* Called once before anything else. */
    int (*prepare)(const ardea_context *ctx);
    /* One input tuple; t and its views are valid only during the call.
     * To fail just this tuple call ardea_fail_tuple and return ARDEA_OK. */
    int (*execute)(const ardea_tuple *t);
    /* Every topology.tick.tuple.freq.ms. */
    int (*tick)(void);
    /* Every upstream task has finished (finite input): final results. */
    int (*finish)(void);
    /* The task is stopping; may not emit. */
    int (*close)(void);
} ardea_bolt;

typedef struct ardea_spout {
    /* Called once before anything else. */
    int (*open)(const ardea_context *ctx);
    /* Emit up to ardea_remaining() tuples; return an ardea_status, or
     * ARDEA_ERR. While it returns ARDEA_MORE and emits, the SDK calls it
     * again within the same host call until the host's budget is used. */
    int (*next)(void);
    /* The tuple tree of a message id was fully processed, or failed or
     * timed out. Both may emit (for example to replay). */
    void (*ack)(uint64_t msgid);
    void (*fail)(uint64_t msgid);
    /* Resume and pause emitting (next is not called while paused). */
    void (*activate)(void);
    void (*deactivate)(void);
    /* The task is stopping; may not emit. */
    int (*close)(void);
} ardea_spout;

/* ---------------------------------------------------------------------
 * Declarations: what the component emits, reads and is configured with.
 * `ardea build` stores them in the module (its manifest, the export
 * ardea_manifest, ABI.md); `ardea inspect` prints them; `ardea run` and
 * `ardea submit` check the topology against them before anything starts
 * (a topology may then omit the component's `outputs:`). Optional: a
 * module without declarations runs unchecked. Give them to
 * ARDEA_REGISTER_BOLT / ARDEA_REGISTER_SPOUT after the component:
 *
 *     ARDEA_REGISTER_BOLT(upper, ARDEA_EMITS("default", "line"), ARDEA_READS("line"));
 *     ARDEA_REGISTER_SPOUT(lines, ARDEA_EMITS("default", "line"), ARDEA_CONFIG("count"));
 * ------------------------------------------------------------------- */

typedef enum ardea_decl_kind {
    ARDEA_DECL_END = 0,    /* ends the list */
    ARDEA_DECL_EMITS = 1,  /* names: the stream, then its fields */
    ARDEA_DECL_READS = 2,  /* names: input fields read by name */
    ARDEA_DECL_CONFIG = 3  /* names: config keys read */
} ardea_decl_kind;

typedef struct ardea_decl {
    ardea_decl_kind kind;
    const char *const *names; /* NULL-terminated */
} ardea_decl;

/* ARDEA_EMITS(stream, field...): an output stream and its fields, in
 * order (stream index i is the i-th ARDEA_EMITS). */
#define ARDEA_EMITS(...) {ARDEA_DECL_EMITS, (const char *const[]){__VA_ARGS__, NULL}}
/* ARDEA_READS(field...): input fields the bolt reads by name. */
#define ARDEA_READS(...) {ARDEA_DECL_READS, (const char *const[]){__VA_ARGS__, NULL}}
/* ARDEA_CONFIG(key...): config keys the component reads. */
#define ARDEA_CONFIG(...) {ARDEA_DECL_CONFIG, (const char *const[]){__VA_ARGS__, NULL}}

/* The module's component: exactly one of spout and bolt is set. */
typedef struct ardea_component {
    const ardea_spout *spout;
    const ardea_bolt *bolt;
    const ardea_decl *decls; /* ends with ARDEA_DECL_END; NULL: none */
} ardea_component;

/* Defined by ARDEA_REGISTER_BOLT / ARDEA_REGISTER_SPOUT: a module that
 * registers none fails to link (undefined ardea_registered_component),
 * one that registers two has a duplicate symbol. */
extern const ardea_component ardea_registered_component;

/* Register this module's component, at file scope, with the name of an
 * ardea_bolt or ardea_spout object and optional declarations:
 *
 *     static const ardea_bolt split = { .execute = split_execute };
 *     ARDEA_REGISTER_BOLT(split, ARDEA_EMITS("default", "word"), ARDEA_READS("line"));
 */
#define ARDEA_REGISTER_BOLT(...)                                                                       \
    const ardea_component ardea_registered_component = {                                               \
        0, &(ARDEA_FIRST_(__VA_ARGS__, 0)), (const ardea_decl[]){ARDEA_REST_(__VA_ARGS__, {ARDEA_DECL_END, 0})}}
#define ARDEA_REGISTER_SPOUT(...)                                                                      \
    const ardea_component ardea_registered_component = {                                               \
        &(ARDEA_FIRST_(__VA_ARGS__, 0)), 0, (const ardea_decl[]){ARDEA_REST_(__VA_ARGS__, {ARDEA_DECL_END, 0})}}
#define ARDEA_FIRST_(a, ...) a
#define ARDEA_REST_(a, ...) __VA_ARGS__

/* The manifest's JSON (ABI.md "Manifest") of the registered component,
 * NUL-terminated, valid until the next call. */
const char *ardea_manifest_json(void);

#ifdef __cplusplus
}
#endif

#endif /* ARDEA_H */
