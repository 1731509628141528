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

#endif
