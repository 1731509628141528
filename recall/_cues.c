/* The event documents' cue words, a batch's texts each read once (issue 28, round eighteen).
 *
 * recall/provenance.py's cue words and recall/cues.py's account hints are looked for in each text's
 * lower case. Before, a batch's texts were lowered one by one (str.lower, a new string each), joined,
 * their offsets counted in Python and the join scanned (_scan.holding_any): three passes and two copies
 * of every text for a test most texts fail. Here each text is lowered character by character into one
 * reused buffer while it is scanned: the same answer, one pass, no Python object a text.
 *
 * A separate extension from recall/_scan.c on purpose: the helpers working on the rest of ingest edit
 * that file, and this one stays theirs to merge without a conflict. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- a text's lower case, as str.lower gives it --------------------------------------------- */

/* str.lower maps each character by Unicode's full lower case, which is its simple one (what
 * Py_UNICODE_TOLOWER gives) for every character but two: U+0130 (İ, full: "i" + U+0307, simple: "i") and
 * U+03A3 (Σ, final or not by its neighbours). A text holding either is lowered by str.lower itself;
 * tests/recall/test_cue_words_lowered.py holds the two equal over every code point. */
#define CAPITAL_I_DOT 0x130
#define CAPITAL_SIGMA 0x3A3

typedef struct {
    Py_UCS4 *data;
    Py_ssize_t len, cap;
} Lowered;

static int reserve(Lowered *b, Py_ssize_t n) {
    if (n <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < n)
        cap *= 2;
    Py_UCS4 *data = PyMem_Realloc(b->data, (size_t)cap * sizeof(Py_UCS4));
    if (!data) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data, b->cap = cap;
    return 0;
}

/* Copies every character of s (a str) into b, as is. */
static int copy_chars(Lowered *b, PyObject *s) {
    const int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (reserve(b, n) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        b->data[i] = PyUnicode_READ(kind, data, i);
    b->len = n;
    return 0;
}

/* text.lower() into b: by character where the simple lower case is the full one, else by str.lower. */
static int lower_into(Lowered *b, PyObject *text) {
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (reserve(b, n) < 0)
        return -1;
    if (PyUnicode_IS_ASCII(text)) {
        const Py_UCS1 *s = data;
        for (Py_ssize_t i = 0; i < n; i++)
            b->data[i] = s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32u : s[i];
        b->len = n;
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 128) {
            b->data[i] = c >= 'A' && c <= 'Z' ? c + 32u : c;
        } else if (c == CAPITAL_I_DOT || c == CAPITAL_SIGMA) {
            PyObject *low = PyObject_CallMethod(text, "lower", NULL);
            int rc = low ? copy_chars(b, low) : -1;
            Py_XDECREF(low);
            return rc;
        } else {
            b->data[i] = Py_UNICODE_TOLOWER(c);
        }
    }
    b->len = n;
    return 0;
}

/* ---- needles: literals looked for at each position ----------------------------------------- */

/* The needles sorted by their first two characters: at an ASCII position only those beginning with it and
 * the character after it are tried (and those of one character, or whose second is not ASCII: SOLO), at
 * another only those beginning with it (a binary search, after a 1024-bit filter of the first characters):
 * most positions are passed by one or two table reads. */
#define SOLO 128u

typedef struct {
    Py_UCS4 first, second;
    Py_ssize_t j;
} Key;

typedef struct {
    Py_UCS4 *chars;    /* the needles end to end: needle j is chars[from[j] .. from[j + 1]] */
    Py_ssize_t *from;
    Key *sorted;
    Py_ssize_t n, other; /* other: the first sorted needle beginning with a non-ASCII character */
    Py_ssize_t lo[128], hi[128], solo[128]; /* ASCII c0's needles: lo .. hi - 1, the SOLO ones from solo on */
    unsigned char pair[128][16];            /* bit c1 of pair[c0]: a needle begins with c0 then ASCII c1 */
    uint64_t firsts[16];                    /* bit (c & 1023): a needle begins with non-ASCII c */
} Needles;

static int by_first(const void *a, const void *b) {
    const Key *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    if (x->second != y->second)
        return x->second < y->second ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

static void needles_free(Needles *s) {
    PyMem_Free(s->chars);
    PyMem_Free(s->from);
    PyMem_Free(s->sorted);
}

static int needles_of(Needles *s, PyObject *needles, const char *who) {
    memset(s, 0, sizeof(*s));
    s->n = PyTuple_GET_SIZE(needles);
    Py_ssize_t total = 0;
    for (Py_ssize_t j = 0; j < s->n; j++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, j);
        if (!PyUnicode_Check(needle) || PyUnicode_GET_LENGTH(needle) == 0) {
            PyErr_Format(PyExc_ValueError, "%s: each needle must be a non-empty str", who);
            return -1;
        }
        total += PyUnicode_GET_LENGTH(needle);
    }
    s->chars = PyMem_Malloc((size_t)(total + 1) * sizeof(Py_UCS4));
    s->from = PyMem_Malloc((size_t)(s->n + 1) * sizeof(Py_ssize_t));
    s->sorted = PyMem_Malloc((size_t)(s->n + 1) * sizeof(Key));
    if (!s->chars || !s->from || !s->sorted) {
        needles_free(s);
        PyErr_NoMemory();
        return -1;
    }
    s->from[0] = 0;
    for (Py_ssize_t j = 0; j < s->n; j++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, j);
        const Py_ssize_t len = PyUnicode_GET_LENGTH(needle);
        for (Py_ssize_t i = 0; i < len; i++)
            s->chars[s->from[j] + i] = PyUnicode_READ_CHAR(needle, i);
        s->from[j + 1] = s->from[j] + len;
        const Py_UCS4 c0 = s->chars[s->from[j]];
        const Py_UCS4 c1 = len > 1 && c0 < 128 && s->chars[s->from[j] + 1] < 128 ? s->chars[s->from[j] + 1] : SOLO;
        s->sorted[j] = (Key){c0, c1, j};
    }
    qsort(s->sorted, (size_t)s->n, sizeof(Key), by_first);
    for (s->other = 0; s->other < s->n && s->sorted[s->other].first < 128; s->other++) {
        const Py_UCS4 c0 = s->sorted[s->other].first, c1 = s->sorted[s->other].second;
        if (s->hi[c0] == 0)
            s->lo[c0] = s->solo[c0] = s->other;
        s->hi[c0] = s->other + 1;
        if (c1 < SOLO) {
            s->solo[c0] = s->other + 1;
            s->pair[c0][c1 >> 3] |= (unsigned char)(1u << (c1 & 7));
        }
    }
    for (Py_ssize_t j = s->other; j < s->n; j++) {
        const Py_UCS4 c = s->sorted[j].first & 1023;
        s->firsts[c >> 6] |= 1ull << (c & 63);
    }
    return 0;
}

/* Whether one of the sorted needles a .. b - 1 begins at p of text (n characters). */
static int needle_at(const Needles *s, const Py_UCS4 *text, Py_ssize_t n, Py_ssize_t p, Py_ssize_t a,
                     Py_ssize_t b) {
    for (Py_ssize_t k = a; k < b; k++) {
        const Py_ssize_t j = s->sorted[k].j, len = s->from[j + 1] - s->from[j];
        if (p + len > n)
            continue;
        const Py_UCS4 *needle = s->chars + s->from[j];
        Py_ssize_t i = 1;
        while (i < len && needle[i] == text[p + i])
            i++;
        if (i == len)
            return 1;
    }
    return 0;
}

/* Whether text (n characters) holds one of the needles. */
static int holds_needle(const Needles *s, const Py_UCS4 *text, Py_ssize_t n) {
    for (Py_ssize_t p = 0; p < n; p++) {
        const Py_UCS4 c = text[p];
        if (c < 128) {
            const Py_UCS4 c1 = p + 1 < n ? text[p + 1] : SOLO;
            const int paired = c1 < SOLO && (s->pair[c][c1 >> 3] & (1u << (c1 & 7)));
            if (!paired && s->solo[c] == s->hi[c])
                continue;
            if (needle_at(s, text, n, p, s->solo[c], s->hi[c]))
                return 1;
            if (paired) { /* the needles beginning with c c1: a binary search for the first */
                Py_ssize_t a = s->lo[c], b = s->solo[c];
                while (a < b) {
                    const Py_ssize_t mid = a + (b - a) / 2;
                    if (s->sorted[mid].second < c1)
                        a = mid + 1;
                    else
                        b = mid;
                }
                for (b = a; b < s->solo[c] && s->sorted[b].second == c1; b++)
                    ;
                if (needle_at(s, text, n, p, a, b))
                    return 1;
            }
            continue;
        }
        if (!(s->firsts[(c & 1023) >> 6] >> (c & 63) & 1))
            continue;
        Py_ssize_t a = s->other, b = s->n; /* c's needles: a binary search for the first */
        while (a < b) {
            const Py_ssize_t mid = a + (b - a) / 2;
            if (s->sorted[mid].first < c)
                a = mid + 1;
            else
                b = mid;
        }
        for (b = a; b < s->n && s->sorted[b].first == c; b++)
            ;
        if (a < b && needle_at(s, text, n, p, a, b))
            return 1;
    }
    return 0;
}

/* lowered_holding(texts, needles) -> list of int: the texts (numbers, in order) whose lower case
 * (str.lower) holds one of needles (a tuple of non-empty str): recall.literals.Prefilter.may_match of each
 * text's lower case, without the lowered copies. */
static PyObject *cues_lowered_holding(PyObject *self, PyObject *args) {
    PyObject *texts, *needles;
    if (!PyArg_ParseTuple(args, "O!O!:lowered_holding", &PyList_Type, &texts, &PyTuple_Type, &needles))
        return NULL;
    Needles s;
    if (needles_of(&s, needles, "lowered_holding") < 0)
        return NULL;
    Lowered low = {0};
    PyObject *found = PyList_New(0);
    for (Py_ssize_t k = 0; found && k < PyList_GET_SIZE(texts); k++) {
        PyObject *text = PyList_GET_ITEM(texts, k);
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "lowered_holding: a text must be str, not %.100s", Py_TYPE(text)->tp_name);
            Py_CLEAR(found);
            break;
        }
        if (lower_into(&low, text) < 0) {
            Py_CLEAR(found);
            break;
        }
        if (!holds_needle(&s, low.data, low.len))
            continue;
        PyObject *no = PyLong_FromSsize_t(k);
        if (!no || PyList_Append(found, no) < 0)
            Py_CLEAR(found);
        Py_XDECREF(no);
    }
    PyMem_Free(low.data);
    needles_free(&s);
    return found;
}

static PyMethodDef methods[] = {
    {"lowered_holding", cues_lowered_holding, METH_VARARGS,
     "lowered_holding(texts, needles) -> list of int: the texts (numbers, in order) whose str.lower() holds one "
     "of needles (a tuple of non-empty str), each text lowered while it is scanned."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cues",
                                    "The event documents' cue words, each text read once (issue 28).", -1, methods};

PyMODINIT_FUNC PyInit__cues(void) { return PyModule_Create(&module); }
