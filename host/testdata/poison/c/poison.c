/*
 * The poison bolt with the C SDK: it upper-cases field 0 ("line"), emits
 * it anchored and acks the line; a line holding "poison" fails with
 * ARDEA_FAIL (the message and this file's line, then a trap), and the host
 * fails that tuple (the SDK exports ardea_cursor).
 * Build: host/testdata/poison/build.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "ardea.h"

static char buf[4096];

static int execute(const ardea_tuple *t) {
    ardea_str line = ardea_tuple_str(t, 0);
    size_t n = line.len < sizeof buf ? line.len : sizeof buf;
    for (size_t i = 0; i < n; i++) {
        char ch = line.ptr[i];
        buf[i] = ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch;
    }
    for (size_t i = 0; i + 6 <= line.len; i++) {
        if (memcmp(line.ptr + i, "poison", 6) == 0)
            ARDEA_FAIL("poison tuple: %.*s", (int)line.len, line.ptr);
    }
    ardea_emit_anchored(t, ARDEA_VALUES(ardea_val_strn(buf, n)));
    ardea_ack_tuple(t);
    return ARDEA_OK;
}

static const ardea_bolt upper = {.execute = execute};

ARDEA_REGISTER_BOLT(upper, ARDEA_EMITS("default", "line"), ARDEA_READS("line"));
