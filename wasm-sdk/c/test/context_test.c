/*
 * The context.txt and msgids.txt vectors: prepare's context blob and the
 * spout's ack/fail id lists.
 */
#include "test_util.h"

/* ---- context.txt ---- */
static const ardea_context *got_ctx;
static int prep_capture(const ardea_context *c) {
    got_ctx = c;
    return 0;
}

static void hexstr(buf *b, const ardea_str s) {
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < s.len; i++) {
        bu8(b, (uint8_t)d[(uint8_t)s.ptr[i] >> 4]);
        bu8(b, (uint8_t)d[(uint8_t)s.ptr[i] & 15]);
    }
}

void test_context(void) {
    start("vectors/context");
    vfile f = load("context.txt");
    buf enc = {0}, got = {0};
    for (int l = 0; l < f.n; l++) {
        char *col[10];
        if (split(f.lines[l], '\t', col, 10) != 10) {
            CHECK(0, "line %d: columns", l);
            continue;
        }
        unhex(&enc, col[9]);
        host_reset();
        got_ctx = NULL;
        t_prepare = prep_capture;
        ardea_test_component = &bolt_comp;
        int32_t rc = ardea_export_prepare(put_input(&enc));
        t_prepare = NULL;
        CHECK(rc == 0 && got_ctx, "%s: prepare = %d: %s", col[0], rc, h_error);
        if (!got_ctx)
            continue;
        CHECK(got_ctx == ardea_get_context(), "%s: ardea_get_context", col[0]);
        got.n = 0;
        hexstr(&got, got_ctx->topology);
        bu8(&got, '\t');
        hexstr(&got, got_ctx->component);
        char tmp[128];
        snprintf(tmp, sizeof tmp, "\t%" PRIu32 "\t%" PRIu32 "\t%" PRIu32 "\t", got_ctx->task_id, got_ctx->task_index,
                 got_ctx->parallelism);
        bput(&got, tmp, strlen(tmp));
        if (got_ctx->nconfig == 0)
            bu8(&got, '-');
        for (size_t i = 0; i < got_ctx->nconfig; i++) {
            const ardea_config_entry *e = &got_ctx->config[i];
            if (i)
                bu8(&got, ',');
            hexstr(&got, e->key);
            bu8(&got, '=');
            hexstr(&got, e->value);
            /* lookups by key agree with the entries (keys without NUL) */
            if (memchr(e->key.ptr, 0, e->key.len) == NULL) {
                const char *v = ardea_config_get(got_ctx, e->key.ptr);
                CHECK(v && strlen(v) <= e->value.len && memcmp(v, e->value.ptr, strlen(v)) == 0 &&
                          e->key.ptr[e->key.len] == 0 && e->value.ptr[e->value.len] == 0,
                      "%s: config_get(%s)", col[0], e->key.ptr);
            }
        }
        bu8(&got, '\t');
        if (got_ctx->noutputs == 0)
            bu8(&got, '-');
        for (size_t i = 0; i < got_ctx->noutputs; i++) {
            const ardea_stream *o = &got_ctx->outputs[i];
            if (i)
                bu8(&got, ',');
            hexstr(&got, o->name);
            for (size_t j = 0; j < o->nfields; j++) {
                bu8(&got, ':');
                hexstr(&got, o->fields[j]);
            }
        }
        bu8(&got, '\t');
        if (got_ctx->ninputs == 0)
            bu8(&got, '-');
        for (size_t i = 0; i < got_ctx->ninputs; i++) {
            const ardea_input *in = &got_ctx->inputs[i];
            if (i)
                bu8(&got, ',');
            hexstr(&got, in->component);
            bu8(&got, ':');
            hexstr(&got, in->stream);
            for (size_t j = 0; j < in->nfields; j++) {
                bu8(&got, ':');
                hexstr(&got, in->fields[j]);
            }
        }
        bu8(&got, 0);
        buf want = {0};
        for (int c = 1; c <= 8; c++) {
            bput(&want, col[c], strlen(col[c]));
            bu8(&want, c == 8 ? 0 : '\t');
        }
        CHECK(strcmp((char *)got.p, (char *)want.p) == 0, "%s: context\n got %s\nwant %s", col[0], got.p, want.p);
        free(want.p);
    }
    free(enc.p);
    free(got.p);
    finish_test();
}

/* ---- msgids.txt ---- */
static uint64_t m_acked[512], m_failed[512];
static int m_nacked, m_nfailed;
void rec_ack(uint64_t id) {
    if (m_nacked < 512)
        m_acked[m_nacked++] = id;
}
void rec_fail(uint64_t id) {
    if (m_nfailed < 512)
        m_failed[m_nfailed++] = id;
}

void test_msgids(void) {
    start("vectors/msgids");
    vfile f = load("msgids.txt");
    buf enc = {0};
    decl out = {"default", 1, NULL};
    for (int l = 0; l < f.n; l++) {
        char *col[3];
        split(f.lines[l], '\t', col, 3);
        uint64_t want[512];
        int nwant = 0;
        if (strcmp(col[1], "-") != 0) {
            char *ids[512];
            int n = split(col[1], ',', ids, 512);
            for (int i = 0; i < n; i++)
                want[nwant++] = strtoull(ids[i], NULL, 10);
        }
        host_reset();
        prepare_with(&spout_comp, &out, 1, NULL, 0);
        t_ack = rec_ack;
        t_fail = rec_fail;
        m_nacked = m_nfailed = 0;
        unhex(&enc, col[2]);
        CHECK(ardea_export_ack(put_input(&enc)) == 0, "%s: ack: %s", col[0], h_error);
        CHECK(ardea_export_fail(put_input(&enc)) == 0, "%s: fail: %s", col[0], h_error);
        CHECK(m_nacked == nwant && m_nfailed == nwant && memcmp(m_acked, want, sizeof(uint64_t) * (size_t)nwant) == 0 &&
                  memcmp(m_failed, want, sizeof(uint64_t) * (size_t)nwant) == 0,
              "%s: acked %d failed %d, want %d ids", col[0], m_nacked, m_nfailed, nwant);
    }
    free(enc.p);
    finish_test();
}
