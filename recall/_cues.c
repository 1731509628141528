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

#include "_text.h"

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

/* The buffer grows by PyMem_RawRealloc (free it by PyMem_RawFree): said_cues' background thread lowers into one
 * without the interpreter lock. -1 when out of memory, no exception set (grow sets it). */
static int reserve_raw(Lowered *b, Py_ssize_t n) {
    if (n <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < n)
        cap *= 2;
    Py_UCS4 *data = PyMem_RawRealloc(b->data, (size_t)cap * sizeof(Py_UCS4));
    if (!data)
        return -1;
    b->data = data, b->cap = cap;
    return 0;
}

static int reserve(Lowered *b, Py_ssize_t n) {
    if (reserve_raw(b, n) < 0) {
        PyErr_NoMemory();
        return -1;
    }
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

/* The simple lower case of a text's characters (kind, data, n; ascii: the text is ASCII) into b: 0 when it is
 * str.lower's, 1 when the text holds U+0130 or U+03A3 (str.lower must lower it), -1 out of memory (no exception
 * set). Makes no Python object: said_cues' background thread calls it without the interpreter lock. */
static int lower_chars(Lowered *b, int kind, const void *data, Py_ssize_t n, int ascii) {
    if (reserve_raw(b, n) < 0)
        return -1;
    if (ascii) {
        const Py_UCS1 *s = data;
        for (Py_ssize_t i = 0; i < n; i++)
            b->data[i] = s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32u : s[i];
        b->len = n;
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 128)
            b->data[i] = c >= 'A' && c <= 'Z' ? c + 32u : c;
        else if (c == CAPITAL_I_DOT || c == CAPITAL_SIGMA)
            return 1;
        else
            b->data[i] = Py_UNICODE_TOLOWER(c);
    }
    b->len = n;
    return 0;
}

/* text.lower() into b: by character where the simple lower case is the full one, else by str.lower. */
static int lower_into(Lowered *b, PyObject *text) {
    const int rc = lower_chars(b, PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text),
                               PyUnicode_IS_ASCII(text));
    if (rc < 0) {
        PyErr_NoMemory();
        return -1;
    }
    if (rc == 0)
        return 0;
    PyObject *low = PyObject_CallMethod(text, "lower", NULL);
    const int copied = low ? copy_chars(b, low) : -1;
    Py_XDECREF(low);
    return copied;
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
    unsigned char *masks;                   /* needle j's families (said_cues), or NULL */
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
    PyMem_Free(s->masks);
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

/* The families (an OR of the masks) of the sorted needles a .. b - 1 that begin at p of text (n characters). */
static unsigned families_at(const Needles *s, const Py_UCS4 *text, Py_ssize_t n, Py_ssize_t p, Py_ssize_t a,
                            Py_ssize_t b) {
    unsigned found = 0;
    for (Py_ssize_t k = a; k < b; k++) {
        const Py_ssize_t j = s->sorted[k].j, len = s->from[j + 1] - s->from[j];
        if (p + len > n || (s->masks[j] & ~found) == 0)
            continue;
        const Py_UCS4 *needle = s->chars + s->from[j];
        Py_ssize_t i = 1;
        while (i < len && needle[i] == text[p + i])
            i++;
        if (i == len)
            found |= s->masks[j];
    }
    return found;
}

/* The families of every needle text (n characters) holds: holds_needle's walk, not stopped at the first needle
 * found (a text holding a cue word is asked which families' words it holds) but once every family is found. */
static unsigned families_of(const Needles *s, const Py_UCS4 *text, Py_ssize_t n, unsigned all) {
    unsigned found = 0;
    for (Py_ssize_t p = 0; p < n && found != all; p++) {
        const Py_UCS4 c = text[p];
        if (c < 128) {
            const Py_UCS4 c1 = p + 1 < n ? text[p + 1] : SOLO;
            const int paired = c1 < SOLO && (s->pair[c][c1 >> 3] & (1u << (c1 & 7)));
            if (!paired && s->solo[c] == s->hi[c])
                continue;
            found |= families_at(s, text, n, p, s->solo[c], s->hi[c]);
            if (paired) {
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
                found |= families_at(s, text, n, p, a, b);
            }
            continue;
        }
        if (!(s->firsts[(c & 1023) >> 6] >> (c & 63) & 1))
            continue;
        Py_ssize_t a = s->other, b = s->n;
        while (a < b) {
            const Py_ssize_t mid = a + (b - a) / 2;
            if (s->sorted[mid].first < c)
                a = mid + 1;
            else
                b = mid;
        }
        for (b = a; b < s->n && s->sorted[b].first == c; b++)
            ;
        found |= families_at(s, text, n, p, a, b);
    }
    return found;
}

/* A needle's families are bits 0..4 of its mask; said_cues keeps the bits above for what it found of the text. */
#define FAMILIES_ALL 31u
#define CUE_FAMILY 1u /* the family a text must hold a word of to be cued at all (provenance._MAY_CUE) */

/* needles_of, and each needle's families: masks, a tuple of ints 1..31 as long as needles. */
static int masked_needles_of(Needles *s, PyObject *needles, PyObject *masks, const char *who) {
    if (PyTuple_GET_SIZE(masks) != PyTuple_GET_SIZE(needles)) {
        PyErr_Format(PyExc_ValueError, "%s: needles and masks differ in length", who);
        return -1;
    }
    if (needles_of(s, needles, who) < 0)
        return -1;
    if (!(s->masks = PyMem_Malloc((size_t)s->n + 1))) {
        needles_free(s);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t j = 0; j < s->n; j++) {
        const long mask = PyLong_AsLong(PyTuple_GET_ITEM(masks, j));
        if (mask < 1 || mask > FAMILIES_ALL) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "%s: a mask must be an int of 1..31", who);
            needles_free(s);
            return -1;
        }
        s->masks[j] = (unsigned char)mask;
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
    PyMem_RawFree(low.data);
    needles_free(&s);
    return found;
}


/* ---- the exact cues a text's characters decide (recall/cues.py exact_cues_many) --------------- */

/* re.ASCII's \d and the classes the cue patterns read beside \w (a_word, with Text and at, in
 * recall/_text.h): a non-ASCII character is none of them. */
static inline int a_digit(Py_UCS4 c) { return c >= '0' && c <= '9'; }
static inline int a_upper(Py_UCS4 c) { return c >= 'A' && c <= 'Z'; }
static inline int a_lower(Py_UCS4 c) { return c >= 'a' && c <= 'z'; }

/* Each returns the match's end at p, or -1; p is where the pattern's first character must be. The
 * patterns (recall/cues.py) and why each is decided without backtracking are in cue_scan's comment. */
static Py_ssize_t http_at(const Text *t, Py_ssize_t p) {
    Py_UCS4 c = at(t, p), b = at(t, p - 1);
    if (!(c == '4' || c == '5') || a_word(b) || b == '.' || b == ',' || b == '/' || b == ':' || b == '#' || b == '+')
        return -1;
    if (p >= 2 && b == '-' && a_digit(at(t, p - 2)))
        return -1;
    if (!a_digit(at(t, p + 1)) || !a_digit(at(t, p + 2)))
        return -1;
    Py_UCS4 e = at(t, p + 3);
    if (a_word(e) || ((e == '.' || e == ',') && a_digit(at(t, p + 4))))
        return -1;
    return p + 3;
}

static inline int upper_start(const Text *t, Py_ssize_t p) { /* [A-Z](?<![\w-][A-Z]) */
    Py_UCS4 b = at(t, p - 1);
    return a_upper(at(t, p)) && !(a_word(b) || b == '-');
}

static Py_ssize_t allcaps_at(const Text *t, Py_ssize_t p) {
    Py_ssize_t i = p + 1;
    while (i < t->n && (a_upper(at(t, i)) || a_digit(at(t, i))))
        i++;
    Py_ssize_t run = i - p - 1;
    if (run < 1 || run > 5 || a_word(at(t, i)) || (at(t, i) == '-' && a_digit(at(t, i + 1))))
        return -1;
    return i;
}

static Py_ssize_t camel_at(const Text *t, Py_ssize_t p) {
    Py_ssize_t i = p + 1;
    while (i < t->n && a_lower(at(t, i)))
        i++;
    if (i == p + 1 || !a_upper(at(t, i)))
        return -1;
    while (i < t->n && (a_upper(at(t, i)) || a_lower(at(t, i)) || a_digit(at(t, i))))
        i++;
    return at(t, i) == '_' ? -1 : i;
}

static Py_ssize_t digit_code_at(const Text *t, Py_ssize_t p) {
    Py_ssize_t i = p + 1;
    while (i < t->n && a_upper(at(t, i)))
        i++;
    if (i - p - 1 > 2)
        return -1;
    Py_ssize_t d = i;
    while (d < t->n && a_digit(at(t, d)))
        d++;
    if (d - i < 3 || d - i > 6 || a_word(at(t, d)))
        return -1;
    return d;
}

static const char *const ERRNOS[] = {"NOENT", "ACCES", "PERM", "EXIST", "PIPE", "CONNREFUSED", "CONNRESET",
                                     "CONNABORTED", "TIMEDOUT", "ADDRINUSE", NULL};

static Py_ssize_t errno_at(const Text *t, Py_ssize_t p) {
    if (at(t, p) != 'E' || a_word(at(t, p - 1)))
        return -1;
    for (int k = 0; ERRNOS[k]; k++) {
        Py_ssize_t len = (Py_ssize_t)strlen(ERRNOS[k]), j = 0;
        while (j < len && at(t, p + 1 + j) == (Py_UCS4)ERRNOS[k][j])
            j++;
        if (j == len && !a_word(at(t, p + 1 + len)))
            return p + 1 + len;
    }
    return -1;
}

/* prefix + the ASCII characters begin .. end - 1 of t, lowered when lower: a new str (every span is ASCII). */
static PyObject *ascii_cue(const char *prefix, const Text *t, Py_ssize_t begin, Py_ssize_t end, int lower) {
    const Py_ssize_t head = (Py_ssize_t)strlen(prefix);
    PyObject *s = PyUnicode_New(head + end - begin, 127);
    if (!s)
        return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(s);
    memcpy(out, prefix, (size_t)head);
    for (Py_ssize_t i = begin; i < end; i++) {
        Py_UCS4 c = at(t, i);
        out[head + i - begin] = (Py_UCS1)(lower && a_upper(c) ? c + 32 : c);
    }
    return s;
}

static int add_cue(PyObject *into, const char *prefix, const Text *t, Py_ssize_t begin, Py_ssize_t end) {
    PyObject *cue = ascii_cue(prefix, t, begin, end, 1);
    int rc = cue ? PySet_Add(into, cue) : -1;
    Py_XDECREF(cue);
    return rc;
}

/* _ALLCAPS's word at begin .. end is a system unless it is a shout (not_systems), has one letter (the rest
 * digits: recall/cues.py _two_letters) or is a code: a code equal to it begins where it does (the digit and
 * errno codes' look-behinds are no stricter than _ALLCAPS's, their look-aheads no looser, and every other
 * code holds "-", "_", a leading "0" or no letter), so the codes found at begin are the ones to ask. */
static int add_system(PyObject *into, PyObject *not_systems, const Text *t, Py_ssize_t begin, Py_ssize_t end) {
    int letters = 0;
    for (Py_ssize_t i = begin + 1; i < end && !letters; i++)
        letters = !a_digit(at(t, i));
    if (!letters)
        return 0;
    PyObject *word = ascii_cue("", t, begin, end, 0);
    int shout = word ? PySet_Contains(not_systems, word) : -1;
    Py_XDECREF(word);
    if (shout)
        return shout < 0 ? -1 : 0;
    return add_cue(into, "system:", t, begin, end);
}

static int append_int(PyObject *list, Py_ssize_t k) {
    PyObject *no = PyLong_FromSsize_t(k);
    int rc = no ? PyList_Append(list, no) : -1;
    Py_XDECREF(no);
    return rc;
}

static int append_span(PyObject *list, Py_ssize_t k, Py_ssize_t begin, Py_ssize_t end) {
    PyObject *span = Py_BuildValue("(nnn)", k, begin, end);
    int rc = span ? PyList_Append(list, span) : -1;
    Py_XDECREF(span);
    return rc;
}

/* One text's part of cue_scan: 1 when it is to be read alone, else its cues added to into. */
static int scan_text(const Text *t, PyObject *into, PyObject *not_systems, Py_ssize_t k, PyObject *http,
                     int *holds_dash, int *holds_under, int *holds_hex) {
    for (Py_ssize_t p = 0; p < t->n; p++) { /* "@", "/", or a dot before a letter or digit (_HOST_DOT) */
        Py_UCS4 c = PyUnicode_READ(t->kind, t->data, p);
        if (c == '@' || c == '/' || (c == '.' && a_word(at(t, p + 1)) && at(t, p + 1) != '_'))
            return 1;
        *holds_dash |= c == '-';
        *holds_under |= c == '_';
        *holds_hex |= c == '0' && (at(t, p + 1) == 'x' || at(t, p + 1) == 'X');
    }
    for (Py_ssize_t p = 0; p < t->n; p++) {
        Py_UCS4 c = PyUnicode_READ(t->kind, t->data, p);
        if (c > 'Z' || c < '4')
            continue; /* every family's first character is 4, 5 or a capital */
        Py_ssize_t end;
        if (c == '4' || c == '5') {
            if ((end = http_at(t, p)) >= 0 && append_span(http, k, p, end) < 0)
                return -1;
            continue;
        }
        if (!a_upper(c))
            continue;
        Py_ssize_t coded = -1; /* the end of the code found at p */
        if (c == 'E' && (coded = errno_at(t, p)) >= 0 && add_cue(into, "code:", t, p, coded) < 0)
            return -1;
        if (!upper_start(t, p))
            continue;
        if ((end = digit_code_at(t, p)) >= 0) {
            if (add_cue(into, "code:", t, p, end) < 0)
                return -1;
            coded = end > coded ? end : coded;
        }
        end = allcaps_at(t, p);
        if (end >= 0 && end != coded && add_system(into, not_systems, t, p, end) < 0)
            return -1;
        if ((end = camel_at(t, p)) >= 0 && add_cue(into, "system:", t, p, end) < 0)
            return -1;
    }
    return 0;
}

/* cue_scan(texts, out, not_systems) -> (alone, dashed, underscored, hexed, http): recall/cues.py exact_cues_many's
 * pass over each text. alone: the texts holding "@", "/" or a dot before a letter or digit (exact_cues reads
 * them: the URL, e-mail, handle, host and path families rewrite the text the others read); of the others,
 * dashed, underscored and hexed: those holding "-", "_", "0x" or "0X" (the dash, underscore and hex code
 * families' needs); http: (text, start, end) of each _HTTP match, whose context the caller judges; and into
 * out[k] (a set) the cues these patterns give (re.ASCII):
 *   _CODES[3]   [A-Z](?<![\w-][A-Z])[A-Z]{0,2}\d{3,6}(?!\w)                                   code:<lower>
 *   _CODES[4]   E(?<!\wE)(?:NOENT|ACCES|PERM|EXIST|PIPE|CONN(?:REFUSED|RESET|ABORTED)|TIMEDOUT|ADDRINUSE)(?!\w)
 *   _ALLCAPS    [A-Z](?<![\w-][A-Z])[A-Z0-9]{1,5}(?!\w|-\d)       system:<lower>, not a shout, a code, one letter
 *   _CAMEL      [A-Z](?<![\w-][A-Z])[a-z]+(?:[A-Z][a-z0-9]*)+(?!\w)                             system:<lower>
 *   _HTTP       ([45](?<![\w.,/:#+][45])(?<!\d-[45])\d\d)(?!\w|[.,]\d)
 * Each is finditer's list: a match is decided at its first character without backtracking (every repetition
 * is followed by a character outside its class or by a look-ahead refusing \w, so giving a character back can
 * only fail), and no match can begin inside another (each match's inner characters follow a \w, which every
 * look-behind refuses), so testing every position gives finditer's matches. An empty text is passed. */
static PyObject *cues_cue_scan(PyObject *self, PyObject *args) {
    PyObject *texts, *out, *not_systems;
    if (!PyArg_ParseTuple(args, "O!O!O!:cue_scan", &PyList_Type, &texts, &PyList_Type, &out, &PyFrozenSet_Type,
                          &not_systems))
        return NULL;
    const Py_ssize_t n = PyList_GET_SIZE(texts);
    if (PyList_GET_SIZE(out) != n) {
        PyErr_SetString(PyExc_ValueError, "cue_scan: texts and out differ in length");
        return NULL;
    }
    PyObject *alone = PyList_New(0), *dashed = PyList_New(0), *underscored = PyList_New(0), *hexed = PyList_New(0),
             *http = PyList_New(0);
    if (!alone || !dashed || !underscored || !hexed || !http)
        goto fail;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *text = PyList_GET_ITEM(texts, k), *into = PyList_GET_ITEM(out, k);
        if (!PyUnicode_Check(text) || !PySet_Check(into)) {
            PyErr_SetString(PyExc_TypeError, "cue_scan: a text must be str and its cues a set");
            goto fail;
        }
        const Text t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)};
        int dash = 0, under = 0, hex = 0;
        int rc = scan_text(&t, into, not_systems, k, http, &dash, &under, &hex);
        if (rc < 0 || (rc == 1 && append_int(alone, k) < 0))
            goto fail;
        if (rc == 0 && ((dash && append_int(dashed, k) < 0) || (under && append_int(underscored, k) < 0) ||
                        (hex && append_int(hexed, k) < 0)))
            goto fail;
    }
    return Py_BuildValue("(NNNNN)", alone, dashed, underscored, hexed, http);
fail:
    Py_XDECREF(alone);
    Py_XDECREF(dashed);
    Py_XDECREF(underscored);
    Py_XDECREF(hexed);
    Py_XDECREF(http);
    return NULL;
}

/* ---- NFKC's quick check, a text at a time (issue 28, round nineteen) -------------------------- */

/* nfkc_unsure(texts, bits) -> list of int: the texts (numbers, in order) holding a character outside bits,
 * a bit per BMP code point (little-endian bytes, 8 kB) set where the character has no decomposition, a
 * combining class of 0 and composes with nothing before it (recall/disguise.py _nfkc_plain_bits). A text of
 * such characters only is its own NFKC: nothing to decompose, reorder or compose. An ASCII text is one
 * (its kind says so: no read); a character past the BMP makes a text unsure. recall.disguise.revealed_many
 * asks unicodedata.is_normalized of the unsure texts alone, not of the batch joined. */
static int nfkc_plain_chars(int kind, const void *data, Py_ssize_t n, int ascii, const uint8_t *bits) {
    if (ascii)
        return 1;
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *s = data;
        for (Py_ssize_t i = 0; i < n; i++)
            if (!(bits[s[i] >> 3] >> (s[i] & 7) & 1))
                return 0;
        return 1;
    }
    if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *s = data;
        for (Py_ssize_t i = 0; i < n; i++)
            if (!(bits[s[i] >> 3] >> (s[i] & 7) & 1))
                return 0;
        return 1;
    }
    return 0; /* a character past the BMP: the caller asks unicodedata */
}

static int nfkc_plain(PyObject *text, const uint8_t *bits) {
    return nfkc_plain_chars(PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text),
                            PyUnicode_IS_ASCII(text), bits);
}

static PyObject *cues_nfkc_unsure(PyObject *self, PyObject *args) {
    PyObject *texts, *out = NULL;
    Py_buffer bits = {0};
    if (!PyArg_ParseTuple(args, "O!y*:nfkc_unsure", &PyList_Type, &texts, &bits))
        return NULL;
    if (bits.len != 0x10000 / 8) {
        PyErr_SetString(PyExc_ValueError, "bits must be 8192 bytes: a bit per BMP code point");
        goto done;
    }
    if (!(out = PyList_New(0)))
        goto done;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(texts); k++) {
        PyObject *text = PyList_GET_ITEM(texts, k);
        if (!PyUnicode_Check(text)) {
            PyErr_SetString(PyExc_TypeError, "a text must be str");
            Py_CLEAR(out);
            goto done;
        }
        if (nfkc_plain(text, bits.buf))
            continue;
        PyObject *no = PyLong_FromSsize_t(k);
        if (!no || PyList_Append(out, no) < 0) {
            Py_XDECREF(no);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(no);
    }
done:
    PyBuffer_Release(&bits);
    return out;
}


/* ---- the quarantine's cue words of a batch's said texts, on another core (issue 28, round twenty-two) ---- */

/* recall/provenance.py instruction_cues reads each judged text as recall.disguise.revealed_many shows it,
 * lowered, for the cue words of five families (_MAY_CUE, and of a text holding one, which of the injection,
 * payment, account-word and directive prefilters). Those were five C scans (maybe_disguised, nfkc_unsure,
 * lowered_holding, then the four families over the hits joined) on the caller's thread, ~0.8 µs an event of its
 * ~29 at 100k. Here one walk a text says all of it, and for a batch it runs on a thread of its own without the
 * interpreter lock while the caller makes the batch's cue terms (recall/index.py _event_parts); the caller
 * joins it where the verdicts are read. The walk makes no Python object and reads only the texts' characters
 * (str is immutable; the tuple held keeps every text alive) and tables built before it starts.
 *
 * Per text, one byte: the families of the words its lower case holds (bits 0..4), or one of: */
#define SAID_DISGUISED 0x20u /* _scan.maybe_disguised's test holds: revealed may show other words */
#define SAID_UNSURE 0x40u    /* NFKC may change it (_nfkc_plain_bits): unicodedata decides, revealed if so */
#define SAID_BY_PYTHON 0x80u /* it holds U+0130 or U+03A3: only str.lower lowers it as str.lower does */
/* A text flagged is not scanned: the caller scans it as revealed shows it (cued_families, with the lock). */

#include <pthread.h>

typedef struct {
    const void *data;
    Py_ssize_t n; /* 0: None or "", no cue */
    int kind, ascii;
} Said;

typedef struct {
    PyObject_HEAD
    PyObject *texts, *masking, *plain; /* the texts (a tuple) and the two bit tables (bytes), held while read */
    Said *said;
    unsigned char *flags;
    Py_ssize_t n;
    Needles needles;
    unsigned all;
    Lowered low; /* sized for the longest text by the caller: the walk allocates nothing (no arena of its own) */
    pthread_t thread;
    int running, failed;
} SaidCues;

static void said_cues_walk(SaidCues *self) {
    const unsigned char *masking = (const unsigned char *)PyBytes_AS_STRING(self->masking);
    const Py_ssize_t masking_bits = PyBytes_GET_SIZE(self->masking) * 8;
    const uint8_t *plain = (const uint8_t *)PyBytes_AS_STRING(self->plain);
    Lowered *low = &self->low;
    for (Py_ssize_t k = 0; k < self->n; k++) {
        const Said *t = &self->said[k];
        unsigned flags = 0;
        if (t->n == 0) {
        } else if (disguise_suspect(t->kind, t->data, t->n, masking, masking_bits)) {
            flags = SAID_DISGUISED;
        } else if (!nfkc_plain_chars(t->kind, t->data, t->n, t->ascii, plain)) {
            flags = SAID_UNSURE;
        } else {
            const int rc = lower_chars(low, t->kind, t->data, t->n, t->ascii);
            if (rc < 0) {
                self->failed = 1;
                break;
            }
            flags = rc ? SAID_BY_PYTHON : families_of(&self->needles, low->data, low->len, self->all);
        }
        self->flags[k] = (unsigned char)flags;
    }
}

static void *said_cues_thread(void *arg) {
    said_cues_walk(arg);
    return NULL;
}

/* Waits for a batch's walk on its own thread, if one runs (the lock released meanwhile: a walk never
   takes it); SaidCues' and Holding's. */
static void walk_join(pthread_t thread, int *running) {
    if (!*running)
        return;
    Py_BEGIN_ALLOW_THREADS
    pthread_join(thread, NULL);
    Py_END_ALLOW_THREADS
    *running = 0;
}

static void said_cues_join(SaidCues *self) {
    walk_join(self->thread, &self->running);
}

static void said_cues_dealloc(SaidCues *self) {
    said_cues_join(self); /* the thread reads what is freed below */
    PyMem_Free(self->said);
    PyMem_Free(self->flags);
    PyMem_RawFree(self->low.data);
    needles_free(&self->needles);
    Py_XDECREF(self->texts);
    Py_XDECREF(self->masking);
    Py_XDECREF(self->plain);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *append_pair(PyObject *list, Py_ssize_t k, unsigned mask) {
    PyObject *pair = Py_BuildValue("(nI)", k, mask);
    int rc = pair ? PyList_Append(list, pair) : -1;
    Py_XDECREF(pair);
    return rc < 0 ? NULL : list;
}

/* result() -> (disguised, unsure, cued): after the walk, the texts (numbers, in order) flagged SAID_DISGUISED;
 * those flagged SAID_UNSURE or SAID_BY_PYTHON; and (k, families) of each other text holding a word of
 * CUE_FAMILY. */
static PyObject *said_cues_result(SaidCues *self, PyObject *unused) {
    said_cues_join(self);
    if (self->failed)
        return PyErr_NoMemory();
    PyObject *disguised = PyList_New(0), *unsure = PyList_New(0), *cued = PyList_New(0);
    for (Py_ssize_t k = 0; disguised && unsure && cued && k < self->n; k++) {
        const unsigned flags = self->flags[k];
        if (flags & SAID_DISGUISED) {
            if (append_int(disguised, k) < 0)
                Py_CLEAR(disguised);
        } else if (flags & (SAID_UNSURE | SAID_BY_PYTHON)) {
            if (append_int(unsure, k) < 0)
                Py_CLEAR(unsure);
        } else if ((flags & CUE_FAMILY) && !append_pair(cued, k, flags)) {
            Py_CLEAR(cued);
        }
    }
    if (!disguised || !unsure || !cued) {
        Py_XDECREF(disguised);
        Py_XDECREF(unsure);
        Py_XDECREF(cued);
        return NULL;
    }
    return Py_BuildValue("(NNN)", disguised, unsure, cued);
}

static PyMethodDef said_cues_methods[] = {
    {"result", (PyCFunction)said_cues_result, METH_NOARGS,
     "result() -> (disguised, unsure, cued): waits for the walk; the texts flagged disguised, those NFKC may "
     "change or only str.lower lowers, and (k, families) of each other text holding a cue word."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SaidCuesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hindbrain.recall._cues.SaidCues",
    .tp_basicsize = sizeof(SaidCues),
    .tp_dealloc = (destructor)said_cues_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A batch's said texts walked for the quarantine's cue words (said_cues).",
    .tp_methods = said_cues_methods,
};

/* said_cues(texts, needles, masks, masking, plain, background) -> SaidCues: the walk of texts (a list of str or
 * None) started, on a thread of its own when background is true, else done here. needles, masks: as
 * cued_families; masking: recall.disguise._masking_bits(); plain: _nfkc_plain_bits() (8192 bytes). */
static PyObject *cues_said_cues(PyObject *module, PyObject *args) {
    PyObject *texts, *needles, *masks, *masking, *plain;
    int background;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!p:said_cues", &PyList_Type, &texts, &PyTuple_Type, &needles,
                          &PyTuple_Type, &masks, &PyBytes_Type, &masking, &PyBytes_Type, &plain, &background))
        return NULL;
    if (PyBytes_GET_SIZE(plain) != 0x10000 / 8) {
        PyErr_SetString(PyExc_ValueError, "said_cues: plain must be 8192 bytes: a bit per BMP code point");
        return NULL;
    }
    SaidCues *self = PyObject_New(SaidCues, &SaidCuesType);
    if (!self)
        return NULL;
    self->texts = NULL, self->said = NULL, self->flags = NULL, self->running = self->failed = 0;
    memset(&self->needles, 0, sizeof(self->needles));
    memset(&self->low, 0, sizeof(self->low));
    Py_INCREF(masking), Py_INCREF(plain);
    self->masking = masking, self->plain = plain;
    if (!(self->texts = PyList_AsTuple(texts)))
        goto fail;
    self->n = PyTuple_GET_SIZE(self->texts);
    self->said = PyMem_Malloc((size_t)self->n * sizeof(Said) + 1);
    self->flags = PyMem_Malloc((size_t)self->n + 1);
    if (!self->said || !self->flags) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t k = 0; k < self->n; k++) {
        PyObject *text = PyTuple_GET_ITEM(self->texts, k);
        if (text == Py_None) {
            self->said[k] = (Said){NULL, 0, 0, 0};
        } else if (PyUnicode_Check(text)) {
            self->said[k] = (Said){PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), PyUnicode_KIND(text),
                                   PyUnicode_IS_ASCII(text)};
        } else {
            PyErr_Format(PyExc_TypeError, "said_cues: a text must be str or None, not %.100s", Py_TYPE(text)->tp_name);
            goto fail;
        }
    }
    Py_ssize_t longest = 0;
    for (Py_ssize_t k = 0; k < self->n; k++)
        longest = self->said[k].n > longest ? self->said[k].n : longest;
    if (reserve(&self->low, longest) < 0 || masked_needles_of(&self->needles, needles, masks, "said_cues") < 0)
        goto fail;
    self->all = 0;
    for (Py_ssize_t j = 0; j < self->needles.n; j++)
        self->all |= self->needles.masks[j];
    if (background && self->n > 0 && pthread_create(&self->thread, NULL, said_cues_thread, self) == 0)
        self->running = 1;
    else
        said_cues_walk(self); /* a small batch, or no thread to be had: the same walk here */
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* cued_families(texts, needles, masks) -> list of (k, families): each text (str or None) of the list lowered as
 * str.lower lowers it, and the families (an OR of masks) of the needles it holds, for each text holding a needle
 * of CUE_FAMILY; needles: a tuple of non-empty str, masks: each needle's families (ints 1..31). */
static PyObject *cues_cued_families(PyObject *module, PyObject *args) {
    PyObject *texts, *needles, *masks;
    if (!PyArg_ParseTuple(args, "O!O!O!:cued_families", &PyList_Type, &texts, &PyTuple_Type, &needles, &PyTuple_Type,
                          &masks))
        return NULL;
    Needles s;
    if (masked_needles_of(&s, needles, masks, "cued_families") < 0)
        return NULL;
    unsigned all = 0;
    for (Py_ssize_t j = 0; j < s.n; j++)
        all |= s.masks[j];
    Lowered low = {0};
    PyObject *found = PyList_New(0);
    for (Py_ssize_t k = 0; found && k < PyList_GET_SIZE(texts); k++) {
        PyObject *text = PyList_GET_ITEM(texts, k);
        if (text == Py_None)
            continue;
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "cued_families: a text must be str or None, not %.100s",
                         Py_TYPE(text)->tp_name);
            Py_CLEAR(found);
            break;
        }
        if (lower_into(&low, text) < 0) {
            Py_CLEAR(found);
            break;
        }
        const unsigned families = families_of(&s, low.data, low.len, all);
        if ((families & CUE_FAMILY) && !append_pair(found, k, families))
            Py_CLEAR(found);
    }
    PyMem_RawFree(low.data);
    needles_free(&s);
    return found;
}


/* ---- the account hints of a batch's texts, on another core (issue 28, round twenty-two) ------------------ */

/* recall/cues.py exact_cues_many asks which texts' lower case holds an account hint (_hinted: lowered_holding,
 * ~0.25 µs an event on the caller's thread). started_holding walks the texts the same way, without the
 * interpreter lock, on a thread of its own for a large batch: recall/index.py _event_parts starts it with the
 * quarantine's walk and exact_cues_many joins it after its own scan. A text holding U+0130 or U+03A3 (only
 * str.lower lowers it as str.lower does) is left to the join, which lowers it by str.lower. */
typedef struct {
    PyObject_HEAD
    PyObject *texts; /* a tuple: the texts read, alive while the thread reads them */
    Said *said;
    unsigned char *held; /* 1: holds a needle, 2: left to the join */
    Py_ssize_t n;
    Needles needles;
    Lowered low; /* sized for the longest text by the caller: the walk allocates nothing (no arena of its own) */
    pthread_t thread;
    int running, failed;
} Holding;

static void holding_walk(Holding *self) {
    Lowered *low = &self->low;
    for (Py_ssize_t k = 0; k < self->n; k++) {
        const Said *t = &self->said[k];
        int held = 0;
        if (t->n > 0) {
            const int rc = lower_chars(low, t->kind, t->data, t->n, t->ascii);
            if (rc < 0) {
                self->failed = 1;
                break;
            }
            held = rc ? 2 : holds_needle(&self->needles, low->data, low->len);
        }
        self->held[k] = (unsigned char)held;
    }
}

static void *holding_thread(void *arg) {
    holding_walk(arg);
    return NULL;
}

static void holding_join(Holding *self) {
    walk_join(self->thread, &self->running);
}

static void holding_dealloc(Holding *self) {
    holding_join(self); /* the thread reads what is freed below */
    PyMem_Free(self->said);
    PyMem_Free(self->held);
    PyMem_RawFree(self->low.data);
    needles_free(&self->needles);
    Py_XDECREF(self->texts);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* result() -> list of int: after the walk, the texts (numbers, in order) whose str.lower() holds a needle. */
static PyObject *holding_result(Holding *self, PyObject *unused) {
    holding_join(self);
    if (self->failed)
        return PyErr_NoMemory();
    Lowered low = {0};
    PyObject *found = PyList_New(0);
    for (Py_ssize_t k = 0; found && k < self->n; k++) {
        int held = self->held[k];
        if (held == 2) {
            if (lower_into(&low, PyTuple_GET_ITEM(self->texts, k)) < 0) {
                Py_CLEAR(found);
                break;
            }
            held = holds_needle(&self->needles, low.data, low.len);
        }
        if (held && append_int(found, k) < 0)
            Py_CLEAR(found);
    }
    PyMem_RawFree(low.data);
    return found;
}

static PyMethodDef holding_methods[] = {
    {"result", (PyCFunction)holding_result, METH_NOARGS,
     "result() -> list of int: waits for the walk; the texts (numbers, in order) whose str.lower() holds a needle."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject HoldingType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hindbrain.recall._cues.Holding",
    .tp_basicsize = sizeof(Holding),
    .tp_dealloc = (destructor)holding_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A batch's texts walked for needles in their lower case (started_holding).",
    .tp_methods = holding_methods,
};

/* started_holding(texts, needles, background) -> Holding: lowered_holding's walk of texts (a list of str) started,
 * on a thread of its own when background is true, else done here; its result() is lowered_holding's answer. */
static PyObject *cues_started_holding(PyObject *module, PyObject *args) {
    PyObject *texts, *needles;
    int background;
    if (!PyArg_ParseTuple(args, "O!O!p:started_holding", &PyList_Type, &texts, &PyTuple_Type, &needles, &background))
        return NULL;
    Holding *self = PyObject_New(Holding, &HoldingType);
    if (!self)
        return NULL;
    self->texts = NULL, self->said = NULL, self->held = NULL, self->running = self->failed = 0;
    memset(&self->needles, 0, sizeof(self->needles));
    memset(&self->low, 0, sizeof(self->low));
    if (!(self->texts = PyList_AsTuple(texts)))
        goto fail;
    self->n = PyTuple_GET_SIZE(self->texts);
    self->said = PyMem_Malloc((size_t)self->n * sizeof(Said) + 1);
    self->held = PyMem_Malloc((size_t)self->n + 1);
    if (!self->said || !self->held) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t k = 0; k < self->n; k++) {
        PyObject *text = PyTuple_GET_ITEM(self->texts, k);
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "started_holding: a text must be str, not %.100s", Py_TYPE(text)->tp_name);
            goto fail;
        }
        self->said[k] = (Said){PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), PyUnicode_KIND(text),
                               PyUnicode_IS_ASCII(text)};
    }
    Py_ssize_t longest = 0;
    for (Py_ssize_t k = 0; k < self->n; k++)
        longest = self->said[k].n > longest ? self->said[k].n : longest;
    if (reserve(&self->low, longest) < 0 || needles_of(&self->needles, needles, "started_holding") < 0)
        goto fail;
    if (background && self->n > 0 && pthread_create(&self->thread, NULL, holding_thread, self) == 0)
        self->running = 1;
    else
        holding_walk(self);
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static PyMethodDef methods[] = {
    {"cue_scan", cues_cue_scan, METH_VARARGS,
     "cue_scan(texts, out, not_systems) -> (alone, dashed, underscored, hexed, http): recall.cues.exact_cues_many's "
     "pass over each text: the texts exact_cues must read, those holding '-', '_', '0x', the _HTTP spans "
     "(text, start, end), and into out[k] the digit and errno codes and the _ALLCAPS and _CAMEL systems."},
    {"lowered_holding", cues_lowered_holding, METH_VARARGS,
     "lowered_holding(texts, needles) -> list of int: the texts (numbers, in order) whose str.lower() holds one "
     "of needles (a tuple of non-empty str), each text lowered while it is scanned."},
    {"nfkc_unsure", cues_nfkc_unsure, METH_VARARGS,
     "nfkc_unsure(texts, bits) -> list of int: the texts (numbers, in order) holding a character outside bits "
     "(a bit per BMP code point, 8192 bytes: those a text can hold and be its own NFKC)."},
    {"said_cues", cues_said_cues, METH_VARARGS,
     "said_cues(texts, needles, masks, masking, plain, background) -> SaidCues: the quarantine's walk of a batch's "
     "said texts (disguise suspects, NFKC's quick check, the cue words' families), on a thread of its own when "
     "background is true; its result() joins it."},
    {"started_holding", cues_started_holding, METH_VARARGS,
     "started_holding(texts, needles, background) -> Holding: lowered_holding's walk of texts, on a thread of its "
     "own when background is true; its result() joins it and is lowered_holding's answer."},
    {"cued_families", cues_cued_families, METH_VARARGS,
     "cued_families(texts, needles, masks) -> list of (k, families): each text lowered as str.lower lowers it and "
     "the families (OR of masks) of the needles it holds, for the texts holding a needle of family 1."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cues",
                                    "The event documents' cue words, each text read once (issue 28).", -1, methods};

PyMODINIT_FUNC PyInit__cues(void) {
    if (PyType_Ready(&SaidCuesType) < 0 || PyType_Ready(&HoldingType) < 0)
        return NULL;
    return PyModule_Create(&module);
}
