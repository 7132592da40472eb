/*
 * Shared declarations of the C SDK's native tests (see sdk_test.c): the
 * SDK's test hooks, the results and CHECK, byte buffers, the host test
 * double (fake_host.c), the vector-file parser and input helpers
 * (test_util.c), and one function per test (the *_test.c files).
 */
#ifndef ARDEA_TEST_UTIL_H
#define ARDEA_TEST_UTIL_H

#define _DEFAULT_SOURCE 1
#include "ardea.h"
#include "ardea_test.h"

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
uint32_t *ardea_export_cursor(void);
void ardea_test_reset(void);

/* ---- results (test_util.c) ---- */
extern int passed, failed;
extern const char *cur_test;
extern int cur_failures;

#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (!(cond)) {                                                   \
            fprintf(stderr, "FAIL %s:%d [%s]: ", __FILE__, __LINE__, cur_test); \
            fprintf(stderr, __VA_ARGS__);                                \
            fputc('\n', stderr);                                         \
            cur_failures++;                                              \
        }                                                                \
    } while (0)

void start(const char *name);
void finish_test(void);

/* ---- byte buffers (test_util.c) ---- */
typedef struct {
    uint8_t *p;
    size_t n, cap;
} buf;

void bput(buf *b, const void *p, size_t n);
void bu8(buf *b, uint8_t v);
void bu16(buf *b, uint16_t v);
void bu32(buf *b, uint32_t v);
void bu64(buf *b, uint64_t v);
void bstr(buf *b, const void *p, size_t n);
void bcstr(buf *b, const char *s);
uint64_t rd64(const uint8_t *p);
uint32_t rd32(const uint8_t *p);
uint16_t rd16(const uint8_t *p);

/* ---- the host: the public test harness (include/ardea_test.h) ----
 * The tests drive the SDK's exports directly and read the harness's
 * records through these names (fake_host.c). */
extern ardea_test *H;
buf hops(void);          /* every emitted op, concatenated */
const char *herr(void);  /* the last error text reported, or "" */
#define h_ops (hops())
#define h_error (herr())
#define h_emits ((int)ardea_test_calls(H, "emit"))
#define h_errors ((int)ardea_test_calls(H, "error"))
#define h_state_gets ((int)ardea_test_calls(H, "state_get"))
#define h_state_writes ((int)ardea_test_calls(H, "state_write"))

/* host_reset starts a new harness: no records, no state. */
void host_reset(void);
/* guarded calls fn(arg) and returns whether the SDK trapped. */
bool guarded(void (*fn)(void *), void *arg);

/* ---- components under test: function pointers set per test (fake_host.c) ---- */
extern int (*t_execute)(const ardea_tuple *t);
extern int (*t_prepare)(const ardea_context *ctx);
extern int (*t_tick)(void);
extern int (*t_finish)(void);
extern int (*t_next)(void);
extern void (*t_ack)(uint64_t);
extern void (*t_fail)(uint64_t);

extern const ardea_component bolt_comp;  /* the test_bolt: t_prepare, t_execute, t_tick, t_finish */
extern const ardea_component plain_comp; /* execute NULL: acks */
extern const ardea_component spout_comp; /* t_next, t_ack, t_fail */

/* ---- input helpers (test_util.c) ---- */
int32_t put_input(const buf *b);

typedef struct {
    const char *name;
    int nfields;
    const char **fields; /* NULL: f0..f(n-1) */
} decl;

void ctx_blob(buf *b, const decl *outs, int nout, const decl *ins, int nin);
int32_t prepare_with(const ardea_component *c, const decl *outs, int nout, const decl *ins, int nin);
void batch_one(buf *b, uint16_t input, uint32_t src, uint64_t id, const uint8_t *vals, size_t n);

extern const char *word_fields[];
extern const char *count_fields[];
void words_batch(buf *b, const char *const *words, int n, uint64_t first_id);

/* ---- vector files (test_util.c) ---- */
typedef struct {
    char **lines;
    int n;
} vfile;

extern char *vdir;

vfile load(const char *name);
int split(char *s, char sep, char **out, int max);
void unhex(buf *b, const char *s);

/* A parsed values spec: values point into their own byte buffers. */
typedef struct {
    ardea_value *v;
    buf *bytes;
    int n;
} spec;

spec parse_spec(const char *text);
void free_spec(spec *s);
void check_tuple(const char *name, const ardea_tuple *t, const spec *want);
void emit_header(buf *b, size_t nvals);

/* ---- helpers shared between test files ---- */
bool ops_valid(const uint8_t *b, size_t n); /* ops_test.c */
void rec_ack(uint64_t id);                  /* context_test.c */
void rec_fail(uint64_t id);                 /* context_test.c */

/* ---- the tests, in the order main runs them ---- */
void test_values(void);       /* values_test.c */
void test_batch(void);        /* values_test.c */
void test_ops(void);          /* ops_test.c */
void test_context(void);      /* context_test.c */
void test_msgids(void);       /* context_test.c */
void test_hash(void);         /* hash_test.c */
void test_invalid(void);      /* invalid_test.c */
void test_state_cache(void);  /* state_test.c */
void test_state_api(void);    /* state_test.c */
void test_state_bounds(void); /* state_test.c */
void test_errors(void);       /* errors_test.c */
void test_failures(void);     /* errors_test.c */
void test_cursor(void);       /* errors_test.c */
void test_untracked(void);    /* runtime_test.c */
void test_spout(void);        /* runtime_test.c */
void test_misc(void);         /* runtime_test.c */
void test_harness(void);      /* harness_test.c */

#endif
