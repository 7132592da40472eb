/*
 * Helpers of the C SDK's native tests: results, byte buffers, the input
 * blobs the host passes (context, batches), and the parser of the shared
 * vector files (wasm-sdk/testdata, formats in its README.md).
 */
#include "test_util.h"

/* ---- results ---- */
int passed, failed;
const char *cur_test = "";
int cur_failures;

#define CHECK(cond, ...)                                                 \
    do {                                                                 \
        if (!(cond)) {                                                   \
            fprintf(stderr, "FAIL %s:%d [%s]: ", __FILE__, __LINE__, cur_test); \
            fprintf(stderr, __VA_ARGS__);                                \
            fputc('\n', stderr);                                         \
            cur_failures++;                                              \
        }                                                                \
    } while (0)

void start(const char *name) {
    cur_test = name;
    cur_failures = 0;
}

void finish_test(void) {
    if (cur_failures)
        failed++;
    else
        passed++;
    printf("%s %s\n", cur_failures ? "FAIL" : "ok  ", cur_test);
}

/* ---- byte buffers ---- */
void bput(buf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n)
            c *= 2;
        b->p = realloc(b->p, c);
        if (!b->p)
            abort();
        b->cap = c;
    }
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}
void bu8(buf *b, uint8_t v) { bput(b, &v, 1); }
void bu16(buf *b, uint16_t v) {
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    bput(b, x, 2);
}
void bu32(buf *b, uint32_t v) {
    uint8_t x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    bput(b, x, 4);
}
void bu64(buf *b, uint64_t v) {
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    bput(b, x, 8);
}
void bstr(buf *b, const void *p, size_t n) {
    bu32(b, (uint32_t)n);
    bput(b, p, n);
}
void bcstr(buf *b, const char *s) { bstr(b, s, strlen(s)); }
uint64_t rd64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}
uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
/* ---- input helpers ---- */
int32_t put_input(const buf *b) {
    uint8_t *p = ardea_export_buffer((int32_t)b->n);
    if (b->n)
        memcpy(p, b->p, b->n);
    return (int32_t)b->n;
}

/* ctx_blob encodes a context: outputs and inputs as decls (inputs are
 * named component "c<i>", stream "s<i>"). */
void ctx_blob(buf *b, const decl *outs, int nout, const decl *ins, int nin) {
    b->n = 0;
    bcstr(b, "topo");
    bcstr(b, "comp");
    bu32(b, 7);
    bu32(b, 1);
    bu32(b, 2);
    bu32(b, 2);
    bcstr(b, "a.int");
    bcstr(b, " -42 ");
    bcstr(b, "prefix");
    bcstr(b, "pre-");
    const decl *all[2] = {outs, ins};
    int cnt[2] = {nout, nin};
    for (int side = 0; side < 2; side++) {
        bu16(b, (uint16_t)cnt[side]);
        for (int i = 0; i < cnt[side]; i++) {
            const decl *d = &all[side][i];
            char tmp[32];
            if (side == 1) {
                snprintf(tmp, sizeof tmp, "c%d", i);
                bcstr(b, tmp);
                snprintf(tmp, sizeof tmp, "s%d", i);
                bcstr(b, tmp);
            } else {
                bcstr(b, d->name);
            }
            bu16(b, (uint16_t)d->nfields);
            for (int j = 0; j < d->nfields; j++) {
                if (d->fields) {
                    bcstr(b, d->fields[j]);
                } else {
                    snprintf(tmp, sizeof tmp, "f%d", j);
                    bcstr(b, tmp);
                }
            }
        }
    }
}

int32_t prepare_with(const ardea_component *c, const decl *outs, int nout, const decl *ins, int nin) {
    buf b = {0};
    ctx_blob(&b, outs, nout, ins, nin);
    ardea_test_component = c;
    int32_t rc = c->spout ? ardea_export_open(put_input(&b)) : ardea_export_prepare(put_input(&b));
    free(b.p);
    return rc;
}

void batch_one(buf *b, uint16_t input, uint32_t src, uint64_t id, const uint8_t *vals, size_t n) {
    b->n = 0;
    bu32(b, 1);
    bu32(b, (uint32_t)(14 + n));
    bu16(b, input);
    bu32(b, src);
    bu64(b, id);
    bput(b, vals, n);
}

/* ---- vector files ---- */
char *vdir;

vfile load(const char *name) {
    vfile f = {0};
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", vdir, name);
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int cap_lines = 0;
    while ((len = getline(&line, &cap, fp)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = 0;
        if (len == 0 || line[0] == '#')
            continue;
        if (f.n == cap_lines) {
            cap_lines = cap_lines ? 2 * cap_lines : 64;
            f.lines = realloc(f.lines, (size_t)cap_lines * sizeof(char *));
        }
        f.lines[f.n++] = strdup(line);
    }
    free(line);
    fclose(fp);
    if (f.n == 0) {
        fprintf(stderr, "%s: no vectors\n", name);
        exit(2);
    }
    return f;
}

/* split cuts s in place at sep into at most max parts. */
int split(char *s, char sep, char **out, int max) {
    int n = 0;
    out[n++] = s;
    for (char *p = s; *p && n < max; p++) {
        if (*p == sep) {
            *p = 0;
            out[n++] = p + 1;
        }
    }
    return n;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

void unhex(buf *b, const char *s) {
    b->n = 0;
    size_t n = strlen(s);
    if (n % 2) {
        fprintf(stderr, "odd hex %s\n", s);
        exit(2);
    }
    for (size_t i = 0; i < n; i += 2) {
        int hi = hexval(s[i]), lo = hexval(s[i + 1]);
        if (hi < 0 || lo < 0) {
            fprintf(stderr, "bad hex %s\n", s);
            exit(2);
        }
        bu8(b, (uint8_t)(hi << 4 | lo));
    }
}

spec parse_spec(const char *text) {
    spec s = {0};
    if (strcmp(text, "-") == 0)
        return s;
    char *copy = strdup(text);
    int cnt = 1;
    for (char *p = copy; *p; p++)
        cnt += *p == ' ';
    s.v = calloc((size_t)cnt, sizeof(ardea_value));
    s.bytes = calloc((size_t)cnt, sizeof(buf));
    char *save = NULL;
    for (char *tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *arg = strchr(tok, ':');
        if (!arg) {
            fprintf(stderr, "bad spec token %s\n", tok);
            exit(2);
        }
        arg++;
        ardea_value *v = &s.v[s.n];
        switch (tok[0]) {
        case 'n':
            *v = ardea_val_null();
            break;
        case 's':
        case 'x':
            unhex(&s.bytes[s.n], arg);
            *v = tok[0] == 's' ? ardea_val_strn(s.bytes[s.n].p ? (const char *)s.bytes[s.n].p : "", s.bytes[s.n].n)
                               : ardea_val_bytes(s.bytes[s.n].p ? (const char *)s.bytes[s.n].p : "", s.bytes[s.n].n);
            break;
        case 'i':
            *v = ardea_val_int(strtoll(arg, NULL, 10));
            break;
        case 'f':
            *v = ardea_val_float(strtod(arg, NULL));
            break;
        case 'b':
            *v = ardea_val_bool(arg[0] == '1');
            break;
        default:
            fprintf(stderr, "bad spec token %s\n", tok);
            exit(2);
        }
        s.n++;
    }
    free(copy);
    return s;
}

void free_spec(spec *s) {
    for (int i = 0; i < s->n; i++)
        free(s->bytes[i].p);
    free(s->bytes);
    free(s->v);
}

/* check_tuple compares a tuple's accessors with a spec. */
void check_tuple(const char *name, const ardea_tuple *t, const spec *want) {
    CHECK(ardea_tuple_len(t) == (size_t)want->n, "%s: %zu fields, want %d", name, ardea_tuple_len(t), want->n);
    if (ardea_tuple_len(t) != (size_t)want->n)
        return;
    for (int i = 0; i < want->n; i++) {
        const ardea_value *v = &want->v[i];
        bool ok = ardea_tuple_kind(t, (size_t)i) == v->kind;
        switch (v->kind) {
        case ARDEA_NULL:
            ok = ok && ardea_tuple_is_null(t, (size_t)i);
            break;
        case ARDEA_STRING:
        case ARDEA_BYTES: {
            ardea_str s = v->kind == ARDEA_STRING ? ardea_tuple_str(t, (size_t)i) : ardea_tuple_bytes(t, (size_t)i);
            ok = ok && s.len == v->u.s.len && memcmp(s.ptr, v->u.s.ptr, s.len) == 0;
            char *d = ardea_tuple_strdup(t, (size_t)i);
            ok = ok && memcmp(d, v->u.s.ptr, s.len) == 0 && d[s.len] == 0;
            free(d);
            break;
        }
        case ARDEA_INT:
            ok = ok && ardea_tuple_int(t, (size_t)i) == v->u.i;
            break;
        case ARDEA_FLOAT: {
            double f = ardea_tuple_float(t, (size_t)i);
            ok = ok && memcmp(&f, &v->u.f, 8) == 0;
            break;
        }
        case ARDEA_BOOL:
            ok = ok && ardea_tuple_bool(t, (size_t)i) == v->u.b;
            break;
        }
        CHECK(ok, "%s: field %d differs from the spec (kind %d)", name, i, (int)v->kind);
    }
}

/* emit_header is an unanchored, undirected emit op header on stream 0. */
void emit_header(buf *b, size_t nvals) {
    bu8(b, 1);
    bu16(b, 0);
    bu32(b, 0xFFFFFFFFu);
    bu64(b, 0);
    bu16(b, 0);
    (void)nvals;
}
/* ---- the behaviour tests' word and count bolts ---- */
const char *word_fields[] = {"word"};
const char *count_fields[] = {"word", "count"};
void words_batch(buf *b, const char *const *words, int n, uint64_t first_id) {
    b->n = 0;
    bu32(b, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        size_t l = strlen(words[i]);
        bu32(b, (uint32_t)(14 + 2 + 5 + l));
        bu16(b, 0);
        bu32(b, 3);
        bu64(b, first_id ? first_id + (uint64_t)i : 0);
        bu16(b, 1);
        bu8(b, 2);
        bstr(b, words[i], l);
    }
}
