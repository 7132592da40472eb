/*
 * split: the word-count example's split bolt in C. For each input tuple
 * it splits field 0 ("line", a string) on Unicode white space exactly
 * like Go's strings.Fields and emits one tuple ("word") per word,
 * anchored on the line, then acks the line. Words are emitted as views
 * of the input line: splitting copies and allocates nothing per word.
 *
 * Build (wasm-sdk/c/build.sh; see ../BUILD.md), from the repository root:
 *
 *   clang --target=wasm32-wasi -mexec-model=reactor -O2 -I wasm-sdk/c/include -ffile-prefix-map=$PWD=. \
 *       -Wl,--strip-debug -Wl,--stack-first -Wl,-z,stack-size=1048576 \
 *       -o examples/wordcount/c/split.wasm examples/wordcount/c/split/split.c wasm-sdk/c/src/ardea.c
 *
 * or: ardea build examples/wordcount/c/split -o examples/wordcount/c/split.wasm
 */
#include <stdint.h>

#include "ardea.h"

/* The ASCII white space of unicode.IsSpace: \t \n \v \f \r and space. */
static const uint8_t ascii_space[128] = {['\t'] = 1, ['\n'] = 1, ['\v'] = 1, ['\f'] = 1, ['\r'] = 1, [' '] = 1};

/*
 * space_len is the length of the non-ASCII white space character that
 * starts at p (n bytes left), or 0. The white space of unicode.IsSpace
 * above ASCII is U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029,
 * U+202F, U+205F and U+3000. Matching their UTF-8 bytes is exactly Go's
 * decoding here: a byte that does not start a valid sequence is one
 * non-space character (utf8.RuneError, width 1), and no byte inside a
 * valid sequence (0x80..0xBF) can start one of these.
 */
static inline size_t space_len(const uint8_t *p, size_t n) {
    switch (p[0]) {
    case 0xC2: /* U+0085, U+00A0 */
        return n >= 2 && (p[1] == 0x85 || p[1] == 0xA0) ? 2 : 0;
    case 0xE1: /* U+1680 */
        return n >= 3 && p[1] == 0x9A && p[2] == 0x80 ? 3 : 0;
    case 0xE2:
        if (n < 3)
            return 0;
        if (p[1] == 0x80) /* U+2000..U+200A, U+2028, U+2029, U+202F */
            return (p[2] >= 0x80 && p[2] <= 0x8A) || p[2] == 0xA8 || p[2] == 0xA9 || p[2] == 0xAF ? 3 : 0;
        return p[1] == 0x81 && p[2] == 0x9F ? 3 : 0; /* U+205F */
    case 0xE3: /* U+3000 */
        return n >= 3 && p[1] == 0x80 && p[2] == 0x80 ? 3 : 0;
    }
    return 0;
}

static void emit_word(const ardea_tuple *t, const uint8_t *w, size_t n) {
    ardea_emit_anchored(t, ARDEA_VALUES(ardea_val_strn(w, n)));
}

static int execute(const ardea_tuple *t) {
    ardea_str line = ardea_tuple_str(t, 0);
    const uint8_t *p = (const uint8_t *)line.ptr;
    size_t n = line.len, i = 0, start = 0;
    int in_word = 0;
    while (i < n) {
        uint8_t b = p[i];
        size_t sp = b < 0x80 ? ascii_space[b] : space_len(p + i, n - i);
        if (sp) {
            if (in_word) {
                emit_word(t, p + start, i - start);
                in_word = 0;
            }
            i += sp;
        } else {
            if (!in_word) {
                start = i;
                in_word = 1;
            }
            i++;
        }
    }
    if (in_word)
        emit_word(t, p + start, n - start);
    ardea_ack_tuple(t);
    return ARDEA_OK;
}

static const ardea_bolt split = {.execute = execute};

ARDEA_REGISTER_BOLT(split, ARDEA_EMITS("default", "word"));
