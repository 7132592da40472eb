/* SPDX-License-Identifier: Apache-2.0
 * ardea_test.h - the C SDK's test harness: runs a spout or a bolt
 * natively, with no wasm runtime. src/ardea_test.c stands in for the host
 * (the ardea.* imports), so a unit test is the component's .c files, the
 * SDK (src/ardea.c) and the harness, compiled by the system's cc:
 *
 *     cc -std=c11 -I ardea-sdk/include -o upper_test upper_test.c upper.c \
 *         ardea-sdk/src/ardea.c ardea-sdk/src/ardea_test.c && ./upper_test
 *
 * A test:
 *
 *     ardea_test *h = ardea_test_new();          // the registered component
 *     ardea_test_config(h, "prefix", ">");
 *     ARDEA_CHECK(ardea_test_start(h) == ARDEA_OK);             // prepare/open
 *     ARDEA_CHECK(ardea_test_execute(h, ARDEA_VALUES(ardea_val_cstr("hi"))) == ARDEA_OK);
 *     const ardea_test_emit *e = ardea_test_emit_at(h, "default", 0);
 *     ARDEA_CHECK(ardea_str_eq(ardea_tuple_str_by_name(&e->tuple, "line"), ">hi"));
 *     ARDEA_CHECK(ardea_test_anchored_on(e, ardea_test_last_id(h)));
 *     ARDEA_CHECK(ardea_test_acked(h, ardea_test_last_id(h)));
 *     ardea_test_free(h);
 *     return ardea_test_report();                // prints the summary; exit status
 *
 * What the harness does as the host does (ABI.md):
 *   - The context: outputs, inputs and config from the component's
 *     declarations (ARDEA_EMITS, ARDEA_READS, ARDEA_CONFIG), or as the test
 *     sets them; then it checks them against each other as `ardea run`
 *     checks a topology against the manifest, and fails start naming both
 *     field lists on a mismatch.
 *   - A bolt reading a field by name that it did not declare with
 *     ARDEA_READS, or a config key missing from ARDEA_CONFIG (when it
 *     declares any), fails the call, naming it.
 *   - A call's emits, acks, fails and state writes count only if it
 *     succeeds. A failed execute (an error returned, ardea_fatal,
 *     ARDEA_FAIL, abort(), a failed assert()) fails its tuple: it is listed
 *     among the fails, and the harness starts the component again as a
 *     fresh instance (prepared with the same context, state kept). Native
 *     code is not a fresh instance: file-scope variables keep their values.
 *   - Tracked input tuples get ids 1, 2, ... (ardea_test_untracked: 0).
 *
 * The SDK's runtime is a single instance: one harness at a time.
 */
#ifndef ARDEA_TEST_H
#define ARDEA_TEST_H

#include "ardea.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ardea_test ardea_test;

/* ---- checks -------------------------------------------------------- */

/* ARDEA_CHECK(cond) / ARDEA_CHECKF(cond, fmt, ...): a failed check prints
 * file:line and the condition (or message) and is counted; the test goes
 * on. ardea_test_report prints "N checks, N failed" and returns the
 * exit status (0 if none failed).
 *
 * cond is evaluated first, then, only if it is false, the message's
 * arguments (the ?: is a sequence point; a function's arguments have no
 * order), so a check may print what the call in cond left behind:
 *     ARDEA_CHECKF(ardea_test_start(h) == ARDEA_OK, "open: %s", ardea_test_error(h)); */
#define ARDEA_CHECK(cond) ardea_test_check_at(!!(cond), __FILE__, __LINE__, "%s", #cond)
#define ARDEA_CHECKF(cond, ...)                                                                        \
    ((cond) ? ardea_test_check_at(true, __FILE__, __LINE__, "%s", #cond)                               \
            : ardea_test_check_at(false, __FILE__, __LINE__, __VA_ARGS__))
bool ardea_test_check_at(bool ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int ardea_test_report(void);
/* The number of failed checks so far. */
int ardea_test_failures(void);

/* ---- setting up ---------------------------------------------------- */

/* A harness for the module's registered component, or for c. Ends the
 * previous harness if one is open. */
ardea_test *ardea_test_new(void);
ardea_test *ardea_test_new_component(const ardea_component *c);
void ardea_test_free(ardea_test *h);

/* Before start: a config entry (value copied). */
void ardea_test_config(ardea_test *h, const char *key, const char *value);
/* ARDEA_FIELDS("a", "b") expands to "array, count" for the next two. */
#define ARDEA_FIELDS(...)                                                                              \
    ((const char *const[]){__VA_ARGS__}), (sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))
/* Before start: declare an output stream (the first call replaces the
 * component's ARDEA_EMITS; the harness then checks they agree). */
void ardea_test_output(ardea_test *h, const char *stream, const char *const *fields, size_t n);
/* Before start: declare an input (component, stream, fields); input i is
 * the i-th. Without any, a bolt has one input "upstream"/"default" whose
 * fields are its ARDEA_READS. */
void ardea_test_input(ardea_test *h, const char *component, const char *stream, const char *const *fields,
                      size_t n);
/* Before start: names and position (defaults "test", "test", task 1,
 * index 0, parallelism 1). */
void ardea_test_names(ardea_test *h, const char *topology, const char *component);
void ardea_test_task(ardea_test *h, uint32_t task_id, uint32_t task_index, uint32_t parallelism);
/* Input tuples get id 0, as under at-most-once (no anchors, no acks). */
void ardea_test_untracked(ardea_test *h);
/* The host's clock (ardea_now), Unix nanoseconds. */
void ardea_test_set_now(ardea_test *h, int64_t ns);

/* ---- driving the component -------------------------------------------
 * Each returns what the component's call returned: ARDEA_OK (next: an
 * ardea_status) or ARDEA_ERR; then ardea_test_error has the text. */

/* open (spout) or prepare (bolt) with the context. */
int ardea_test_start(ardea_test *h);
/* One tuple on input 0 from task 2, with the next id. */
int ardea_test_execute(ardea_test *h, const ardea_value *values, size_t n);
/* One tuple with everything given (id 0: untracked). */
int ardea_test_execute_from(ardea_test *h, size_t input, uint32_t source_task, uint64_t id,
                            const ardea_value *values, size_t n);
/* The id of the last tuple executed. */
uint64_t ardea_test_last_id(const ardea_test *h);
int ardea_test_tick(ardea_test *h);
int ardea_test_finish(ardea_test *h);
int ardea_test_close(ardea_test *h);
/* Spouts: next with a budget of max tuples; ack and fail a message id
 * (as the host does when its tuple tree completes or fails). */
int ardea_test_next(ardea_test *h, int max);
int ardea_test_ack(ardea_test *h, uint64_t msgid);
int ardea_test_fail(ardea_test *h, uint64_t msgid);
int ardea_test_activate(ardea_test *h);
int ardea_test_deactivate(ardea_test *h);

/* The error text of the last call (what the component reported with
 * ardea.error, or the harness's own), or NULL if it succeeded. */
const char *ardea_test_error(const ardea_test *h);
/* Whether the last call trapped (ardea_fatal, ARDEA_FAIL, abort()). */
bool ardea_test_trapped(const ardea_test *h);

/* ---- results: everything since start (or ardea_test_clear) ---------- */

typedef struct ardea_test_emit {
    const char *stream;   /* the stream's name */
    uint32_t task;        /* direct target, or ARDEA_NO_TASK */
    uint64_t msgid;       /* spouts: the message id (0: none) */
    size_t nanchors;
    const uint64_t *anchors;
    ardea_tuple tuple;    /* read it with ardea_tuple_* (by index or name) */
} ardea_test_emit;

/* Tuples emitted on stream (NULL: every stream), and the i-th of them. */
size_t ardea_test_emits(const ardea_test *h, const char *stream);
const ardea_test_emit *ardea_test_emit_at(const ardea_test *h, const char *stream, size_t i);
/* Whether an emitted tuple is anchored on an input tuple's id. */
bool ardea_test_anchored_on(const ardea_test_emit *e, uint64_t id);

/* Acks and fails of input tuples, in order. */
size_t ardea_test_acks(const ardea_test *h);
uint64_t ardea_test_ack_at(const ardea_test *h, size_t i);
bool ardea_test_acked(const ardea_test *h, uint64_t id);
size_t ardea_test_fails(const ardea_test *h);
uint64_t ardea_test_fail_at(const ardea_test *h, size_t i);
bool ardea_test_failed(const ardea_test *h, uint64_t id);

/* Log lines, in order: the i-th line's text and (if level) its level;
 * whether some line contains text. */
size_t ardea_test_logs(const ardea_test *h);
const char *ardea_test_log_at(const ardea_test *h, size_t i, int *level);
bool ardea_test_logged(const ardea_test *h, const char *text);

/* User metrics: a counter's total, a gauge's last value (false if never
 * set), a histogram's observations. */
int64_t ardea_test_counter(const ardea_test *h, const char *name);
bool ardea_test_gauge(const ardea_test *h, const char *name, double *value);
size_t ardea_test_observations(const ardea_test *h, const char *name, const int64_t **values);

/* Forget the results (not the state). */
void ardea_test_clear(ardea_test *h);

/* ---- host-side state: set it before, read it after -------------------- */

bool ardea_test_state_get(const ardea_test *h, const void *key, size_t klen, ardea_str *value);
bool ardea_test_state_get_int(const ardea_test *h, const void *key, size_t klen, int64_t *value);
void ardea_test_state_put(ardea_test *h, const void *key, size_t klen, const void *value, size_t vlen);
void ardea_test_state_put_int(ardea_test *h, const void *key, size_t klen, int64_t value);
void ardea_test_state_delete(ardea_test *h, const void *key, size_t klen);
/* The number of keys. */
size_t ardea_test_state_len(const ardea_test *h);

/* ---- the manifest and low level ------------------------------------ */

/* The component's manifest JSON (ABI.md), as `ardea build` stores it. */
const char *ardea_test_manifest(const ardea_test *h);
/* Every emit op the component sent (ABI encoding), and how many times it
 * called a host import by its name ("emit", "state_get", ...). */
const uint8_t *ardea_test_ops(const ardea_test *h, size_t *len);
size_t ardea_test_calls(const ardea_test *h, const char *import);
/* Run fn(arg) (for example direct calls of the exports in the SDK's own
 * tests); true if it trapped, after which the SDK is reset as a fresh
 * instance would be. */
bool ardea_test_protect(ardea_test *h, void (*fn)(void *), void *arg);

#ifdef __cplusplus
}
#endif

#endif /* ARDEA_TEST_H */
