/*
 * The host of the SDK's tests: the public test harness (ardea_test.c,
 * which implements the ardea.* imports of ardea.c's native build), and
 * the components under test, whose callbacks each test sets.
 */
#include "test_util.h"

/* ---- the host: the public harness (ardea_test.c) ---- */
ardea_test *H;

buf hops(void) {
    buf b = {0};
    b.p = (uint8_t *)ardea_test_ops(H, &b.n);
    return b;
}

const char *herr(void) {
    const char *e = ardea_test_error(H);
    return e ? e : "";
}

void host_reset(void) { H = ardea_test_new_component(&plain_comp); }

bool guarded(void (*fn)(void *), void *arg) { return ardea_test_protect(H, fn, arg); }

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
const ardea_component bolt_comp = {0, &test_bolt, 0};
const ardea_component plain_comp = {0, &plain_bolt, 0};
const ardea_component spout_comp = {&spout_obj, 0, 0};

/* The module's registered component (the tests swap it). */
ARDEA_REGISTER_BOLT(plain_bolt);
