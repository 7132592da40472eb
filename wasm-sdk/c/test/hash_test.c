/*
 * The hash.txt vectors: fields hashes, state keys, key groups and the
 * tasks that own them.
 */
#include "test_util.h"

/* ---- hash.txt ---- */
static const size_t *h_fields;
static size_t h_nfields;
static uint64_t h_hash;
static char h_key[4096];
static size_t h_keylen;

static int exec_hash(const ardea_tuple *t) {
    h_hash = ardea_fields_hash(t, h_fields, h_nfields);
    h_keylen = ardea_state_key_at(t, h_fields, h_nfields, h_key, sizeof h_key);
    /* the same by field names, and into a short buffer */
    const char *names[16];
    char nb[16][8];
    for (size_t k = 0; k < h_nfields; k++) {
        snprintf(nb[k], sizeof nb[k], "f%zu", h_fields[k]);
        names[k] = nb[k];
    }
    char byname[4096], shortbuf[3];
    size_t n2 = ardea_state_key(t, names, h_nfields, byname, sizeof byname);
    CHECK(n2 == h_keylen && memcmp(byname, h_key, n2) == 0, "state_key by name differs");
    size_t n3 = ardea_state_key_at(t, h_fields, h_nfields, shortbuf, sizeof shortbuf);
    CHECK(n3 == h_keylen && memcmp(shortbuf, h_key, n3 < 3 ? n3 : 3) == 0, "state_key into a short buffer");
    if (h_nfields == 1) {
        ardea_str v = ardea_state_key_view_at(t, h_fields[0]);
        CHECK(v.len == h_keylen && memcmp(v.ptr, h_key, v.len) == 0, "state_key_view_at differs");
    }
    return 0;
}

static void check_groups(const char *name, uint64_t hash, const char *kg, const char *tasks) {
    static const uint32_t par[6] = {1, 2, 3, 7, 100, 256};
    uint32_t g = ardea_key_group(hash, 256);
    CHECK(g == (uint32_t)strtoul(kg, NULL, 10), "%s: key group %" PRIu32 ", want %s", name, g, kg);
    char copy[128];
    snprintf(copy, sizeof copy, "%s", tasks);
    char *p[6];
    int n = split(copy, ',', p, 6);
    CHECK(n == 6, "%s: tasks column", name);
    for (int i = 0; i < n; i++)
        CHECK(ardea_key_group_task(g, par[i], 256) == (uint32_t)strtoul(p[i], NULL, 10), "%s: task for p=%u", name,
              par[i]);
}

void test_hash(void) {
    start("vectors/hash");
    vfile f = load("hash.txt");
    buf enc = {0}, batch = {0}, key = {0};
    for (int l = 0; l < f.n; l++) {
        char *col[9];
        int nc = split(f.lines[l], '\t', col, 9);
        if (strcmp(col[0], "key") == 0 && nc == 6) {
            unhex(&key, col[2]);
            uint64_t h = ardea_state_key_hash(key.p ? (const void *)key.p : "", key.n);
            CHECK(h == strtoull(col[3], NULL, 16), "%s: state key hash %016" PRIx64 ", want %s", col[1], h, col[3]);
            check_groups(col[1], strtoull(col[3], NULL, 16), col[4], col[5]);
            continue;
        }
        if (strcmp(col[0], "tuple") != 0 || nc != 9) {
            CHECK(0, "line %d: kind %s", l, col[0]);
            continue;
        }
        spec s = parse_spec(col[2]);
        size_t fields[16], nf = 0;
        char *fp[16];
        int n = split(col[3], ',', fp, 16);
        for (int i = 0; i < n; i++)
            fields[nf++] = strtoul(fp[i], NULL, 10);
        decl out = {"default", s.n, NULL}, in = {"", s.n, NULL};
        host_reset();
        enc.n = 0;
        /* the tuple's values block is the encoding the vectors pin (values.txt) */
        bu16(&enc, (uint16_t)s.n);
        for (int i = 0; i < s.n; i++) {
            ardea_value *v = &s.v[i];
            bu8(&enc, (uint8_t)v->kind);
            switch (v->kind) {
            case ARDEA_STRING:
            case ARDEA_BYTES:
                bstr(&enc, v->u.s.ptr, v->u.s.len);
                break;
            case ARDEA_INT:
                bu64(&enc, (uint64_t)v->u.i);
                break;
            case ARDEA_FLOAT: {
                uint64_t u;
                memcpy(&u, &v->u.f, 8);
                bu64(&enc, u);
                break;
            }
            case ARDEA_BOOL:
                bu8(&enc, v->u.b ? 1 : 0);
                break;
            default:
                break;
            }
        }
        prepare_with(&bolt_comp, &out, 1, &in, 1);
        h_fields = fields;
        h_nfields = nf;
        t_execute = exec_hash;
        batch_one(&batch, 0, 1, 0, enc.p, enc.n);
        CHECK(ardea_export_execute(put_input(&batch)) == 0, "%s: execute: %s", col[1], h_error);
        CHECK(h_hash == strtoull(col[4], NULL, 16), "%s: hash %016" PRIx64 ", want %s", col[1], h_hash, col[4]);
        check_groups(col[1], h_hash, col[5], col[6]);
        unhex(&key, col[7]);
        CHECK(h_keylen == key.n && memcmp(h_key, key.p ? (const void *)key.p : "", key.n) == 0, "%s: state key differs",
              col[1]);
        uint64_t kh = ardea_state_key_hash(h_key, h_keylen);
        CHECK(kh == strtoull(col[8], NULL, 16), "%s: state key hash %016" PRIx64 ", want %s", col[1], kh, col[8]);
        free_spec(&s);
    }
    free(enc.p);
    free(batch.p);
    free(key.p);
    finish_test();
}
