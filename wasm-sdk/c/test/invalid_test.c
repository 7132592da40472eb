/*
 * The invalid.txt vectors: every malformed input is rejected with an error
 * text.
 */
#include "test_util.h"

/* ---- invalid.txt ---- */
void test_invalid(void) {
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
