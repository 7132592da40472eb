/*
 * The ops.txt vectors: every emit, ack and fail variant of the bolt and
 * spout APIs encodes the vector's op bytes, and a decoder of op sequences
 * as the host reads them (also used by invalid_test.c).
 */
#include "test_util.h"

/* ---- ops.txt ---- */
typedef struct {
    int code; /* 1 emit, 2 ack, 3 fail */
    unsigned stream;
    uint32_t direct;
    uint64_t msgid;
    ardea_tuple anchors[16];
    int nanchors;
    spec vals;
} vop;
static vop *o_ops;
static int o_nops;
static const char *stream_names[8] = {"default", "s1", "s2", "s3", "s4", "s5", "s6", "s7"};

static int exec_ops(const ardea_tuple *t) {
    (void)t;
    for (int i = 0; i < o_nops; i++) {
        vop *o = &o_ops[i];
        const char *stream = stream_names[o->stream];
        ardea_tuple idt;
        memset(&idt, 0, sizeof idt);
        idt.id = o->msgid;
        if (o->code == 2)
            ardea_ack_tuple(&idt);
        else if (o->code == 3)
            ardea_fail_tuple(&idt);
        else if (o->direct != ARDEA_NO_TASK)
            ardea_emit_direct_anchored(o->direct, stream, o->anchors, (size_t)o->nanchors, o->vals.v,
                                       (size_t)o->vals.n);
        else if (o->nanchors == 1 && o->stream == 0)
            ardea_emit_anchored(&o->anchors[0], o->vals.v, (size_t)o->vals.n);
        else if (o->nanchors == 1)
            ardea_emit_anchored_to(stream, &o->anchors[0], o->vals.v, (size_t)o->vals.n);
        else if (o->nanchors == 0 && o->stream == 0)
            ardea_emit(o->vals.v, (size_t)o->vals.n);
        else if (o->nanchors == 0)
            ardea_emit_to(stream, o->vals.v, (size_t)o->vals.n);
        else
            ardea_emit_multi_anchored(stream, o->anchors, (size_t)o->nanchors, o->vals.v, (size_t)o->vals.n);
    }
    return 0;
}

static int next_ops(void) {
    for (int i = 0; i < o_nops; i++) {
        vop *o = &o_ops[i];
        const char *stream = stream_names[o->stream];
        if (o->direct != ARDEA_NO_TASK)
            ardea_emit_direct_with_id(o->direct, stream, o->msgid, o->vals.v, (size_t)o->vals.n);
        else if (o->stream == 0)
            ardea_emit_with_id(o->msgid, o->vals.v, (size_t)o->vals.n);
        else
            ardea_emit_to_with_id(stream, o->msgid, o->vals.v, (size_t)o->vals.n);
    }
    return ARDEA_DONE;
}

/* ops_valid is a decoder for op sequences as the host reads them (the
 * SDK only encodes ops): it checks that the vectors are well-formed and
 * that the invalid ones are not. */
static bool values_valid(const uint8_t *b, size_t n, size_t *used) {
    if (n < 2)
        return false;
    size_t cnt = rd16(b), off = 2;
    for (size_t i = 0; i < cnt; i++) {
        if (off >= n)
            return false;
        size_t left = n - off;
        switch (b[off]) {
        case 0:
            off += 1;
            break;
        case 1:
        case 2:
            if (left < 5 || left - 5 < rd32(b + off + 1))
                return false;
            off += 5 + rd32(b + off + 1);
            break;
        case 3:
        case 4:
            if (left < 9)
                return false;
            off += 9;
            break;
        case 5:
            if (left < 2 || b[off + 1] > 1)
                return false;
            off += 2;
            break;
        default:
            return false;
        }
    }
    *used = off;
    return true;
}

bool ops_valid(const uint8_t *b, size_t n) {
    size_t off = 0;
    while (off < n) {
        uint8_t code = b[off];
        size_t left = n - off;
        if (code == 2 || code == 3) {
            if (left < 9)
                return false;
            off += 9;
        } else if (code == 1) {
            if (left < 17)
                return false;
            size_t na = rd16(b + off + 15);
            if (left - 17 < 8 * na)
                return false;
            size_t used;
            if (!values_valid(b + off + 17 + 8 * na, left - 17 - 8 * na, &used))
                return false;
            off += 17 + 8 * na + used;
        } else {
            return false;
        }
    }
    return true;
}

void test_ops(void) {
    start("vectors/ops");
    vfile f = load("ops.txt");
    buf enc = {0}, batch = {0};
    for (int l = 0; l < f.n; l++) {
        char *col[3];
        split(f.lines[l], '\t', col, 3);
        char *ops[1024];
        int n = split(col[1], '|', ops, 1024);
        o_ops = calloc((size_t)n, sizeof(vop));
        o_nops = n;
        bool spout = true;
        int nfields[8] = {0}, maxs = 0;
        for (int i = 0; i < n; i++) {
            vop *o = &o_ops[i];
            char *p[6];
            int np = split(ops[i], ',', p, 6);
            if (strcmp(p[0], "emit") != 0) {
                o->code = strcmp(p[0], "ack") == 0 ? 2 : 3;
                o->msgid = strtoull(p[1], NULL, 10);
                spout = false;
                continue;
            }
            if (np != 6) {
                CHECK(0, "%s: op %d", col[0], i);
                continue;
            }
            o->code = 1;
            o->stream = (unsigned)strtoul(p[1], NULL, 10);
            o->direct = (uint32_t)strtoul(p[2], NULL, 10);
            o->msgid = strtoull(p[3], NULL, 10);
            if (strcmp(p[4], "-") != 0) {
                spout = false;
                char *a[16];
                int na = split(p[4], ':', a, 16);
                for (int k = 0; k < na; k++)
                    o->anchors[k].id = strtoull(a[k], NULL, 10);
                o->nanchors = na;
            }
            o->vals = parse_spec(p[5]);
            if (o->stream >= 8) {
                CHECK(0, "%s: stream %u", col[0], o->stream);
                o->stream = 0;
            }
            nfields[o->stream] = o->vals.n;
            if ((int)o->stream > maxs)
                maxs = (int)o->stream;
        }
        decl outs[8];
        for (int s = 0; s <= maxs; s++) {
            outs[s].name = stream_names[s];
            outs[s].nfields = nfields[s];
            outs[s].fields = NULL;
        }
        decl in = {"", 1, NULL};
        host_reset();
        unhex(&enc, col[2]);
        CHECK(ops_valid(enc.p, enc.n), "%s: the test's ops decoder rejects the vector", col[0]);
        if (spout) {
            CHECK(prepare_with(&spout_comp, outs, maxs + 1, NULL, 0) == 0, "%s: open: %s", col[0], h_error);
            t_next = next_ops;
            int32_t rc = ardea_export_next(1000);
            CHECK(rc == ARDEA_DONE, "%s: next = %d: %s", col[0], rc, h_error);
        } else {
            CHECK(prepare_with(&bolt_comp, outs, maxs + 1, &in, 1) == 0, "%s: prepare: %s", col[0], h_error);
            t_execute = exec_ops;
            uint8_t v[] = {1, 0, 0};
            batch_one(&batch, 0, 1, 0, v, sizeof v);
            int32_t rc = ardea_export_execute(put_input(&batch));
            CHECK(rc == 0, "%s: execute = %d: %s", col[0], rc, h_error);
        }
        CHECK(h_ops.n == enc.n && memcmp(h_ops.p, enc.p, enc.n) == 0, "%s: emitted ops differ (%zu bytes, want %zu)",
              col[0], h_ops.n, enc.n);
        for (int i = 0; i < n; i++)
            free_spec(&o_ops[i].vals);
        free(o_ops);
    }
    free(enc.p);
    free(batch.p);
    finish_test();
}
