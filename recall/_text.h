/* What recall/_scan.c and recall/_cues.c both read a text with: re.ASCII's \w (the cue patterns' word
 * edges: a non-ASCII character is not one) and a text's characters by index, 0 outside it. One copy,
 * included by both extensions (each its own compilation unit). */
#ifndef HINDBRAIN_RECALL_TEXT_H
#define HINDBRAIN_RECALL_TEXT_H

#include <Python.h>

static inline int a_word(Py_UCS4 c) {
    return c < 128 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
}

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
} Text;

static inline Py_UCS4 at(const Text *t, Py_ssize_t i) {
    return (i >= 0 && i < t->n) ? PyUnicode_READ(t->kind, t->data, i) : 0; /* outside: no class holds 0 */
}

/* [A-Za-z0-9+/_-]: a character of a base64 run (recall/disguise.py _MAY_RUN). */
static inline int base64_char(Py_UCS4 c) {
    return c < 128 && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' ||
                       c == '/' || c == '_' || c == '-');
}

/* Whether a text (kind, data, n characters) may be disguised (_scan.maybe_disguised's test): it holds "&", a
 * character whose bit is set in bits (n_bits of them, a bit per code point) or past them, or 16 characters of
 * the base64 alphabet in a row. Reads the characters only: no Python object is made, so _cues.c calls it
 * without the interpreter lock. */
static inline int disguise_suspect(int kind, const void *data, Py_ssize_t n, const unsigned char *bits,
                                   Py_ssize_t n_bits) {
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        run = base64_char(c) ? run + 1 : 0;
        if (c == '&' || run >= 16 || (c >= 128 && ((Py_ssize_t)c >= n_bits || (bits[c >> 3] >> (c & 7) & 1))))
            return 1;
    }
    return 0;
}

#endif
