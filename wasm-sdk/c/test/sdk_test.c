/*
 * Native tests of the C SDK: ardea.c compiled for the host with the wasm
 * imports served by the public test harness (src/ardea_test.c). Loads every file of the
 * shared vectors (wasm-sdk/testdata, formats in its README.md) and checks
 * that what the SDK encodes equals their bytes and what it decodes equals
 * their specs, then checks runtime behaviour (state cache, errors, spout
 * loop). Run by sdk_test.go, which compiles every .c file of this folder;
 * by hand, from wasm-sdk/c/test:
 *
 *     cc -std=c11 -O1 -Wall -Wextra -Werror -I ../include -o /tmp/sdk_test \
 *         *.c ../src/ardea.c ../src/ardea_test.c && /tmp/sdk_test ../../testdata
 *
 * It prints "N passed, N failed" and exits non-zero on any failure.
 *
 * This file holds main; the rest of the test program:
 *
 *     test_util.h      shared declarations
 *     test_util.c      results, byte buffers, input blobs, vector-file parser
 *     fake_host.c      the host (the public harness, src/ardea_test.c) and the
 *                      components under test
 *     values_test.c    vectors: values.txt, batch.txt
 *     ops_test.c       vectors: ops.txt (and the test's ops decoder)
 *     context_test.c   vectors: context.txt, msgids.txt
 *     hash_test.c      vectors: hash.txt
 *     invalid_test.c   vectors: invalid.txt
 *     state_test.c     state: write-back cache, API, cache bound
 *     errors_test.c    errors and their texts
 *     runtime_test.c   untracked emits, the spout loop, context/log/metric/tick/finish
 *     harness_test.c   the public harness on a bolt and a spout with declarations
 */
#include "test_util.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s TESTDATA_DIR\n", argv[0]);
        return 2;
    }
    vdir = argv[1];
    host_reset();
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
    test_cursor();
    test_untracked();
    test_spout();
    test_misc();
    test_harness();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
