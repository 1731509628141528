"""BM25 over an append-only in-memory corpus, scored with numpy.

Postings grow in place (amortised doubling), so adding a document is O(its terms) and a
query touches only the postings of its own terms. Scores are Okapi BM25 (k1=1.2, b=0.75)
with the Lucene idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``, which is never negative.
"""

from __future__ import annotations

import hashlib
import math
import threading
from array import array
from collections import Counter, OrderedDict
from itertools import islice
from pathlib import Path
from typing import NamedTuple

import numpy as np

from hindbrain.recall import _scan, sorted_sets

K1, B = 1.2, 0.75
ROW_SHARE = 1 / 16  # a term in at least this share of the documents is kept as a dense row
ROW_BYTES = 64 << 20  # at most this much of them (160 rows at 100k documents, 16 at 1M)
VISIBLE_VIEWS = 4  # masks whose visible documents are kept (``visible_scores``): the agents recalling most
VIEW_ROW_BYTES = ROW_BYTES // 4  # at most this much of common terms' rows over those masks' documents, all masks


_NO_DOCS, _NO_TFS = np.empty(0, dtype=np.int32), np.empty(0, dtype=np.float32)
_NO_DOCS.flags.writeable = _NO_TFS.flags.writeable = False
# An empty tail, shared: most terms of a bulk-built index (a ticket number, a case id) never get
# a tail (``add_many`` writes segments), and a bytearray each cost ~65 bytes an event at 100k
# events (tracemalloc, design.md §issue-28). ``add`` gives a term its own bytearray on its first write.
_NO_TAIL = b""
_TAIL = 256  # postings a term collects in its tail before they move into its arrays
_PAIR = np.dtype("<i4")  # a tail is little-endian int32 pairs (doc, tf)
_TF_BYTES = [tf.to_bytes(4, "little") for tf in range(256)]


class _Segment(NamedTuple):
    """An immutable block of postings added in bulk: for each term id in ``terms`` (sorted),
    its postings are ``docs[starts[i]:starts[i + 1]]`` with frequencies ``tfs[...]``."""

    terms: np.ndarray  # int64, sorted, unique
    starts: np.ndarray  # int64, len(terms) + 1
    docs: np.ndarray  # int32
    tfs: np.ndarray  # float32

    @classmethod
    def of_documents(cls, flat: np.ndarray, lengths: np.ndarray, first: int, n_terms: int) -> _Segment:
        """The postings of documents ``first, first + 1, …`` given as their term numbers (``flat``,
        grouped by document, ``lengths[d]`` each; every number below ``n_terms``): one counting sort
        in C (``_scan.postings``), the same arrays as ``py_segment`` (issue 28, ingest round nine:
        ``np.unique`` sorted the batch's ~30 keys a document)."""
        terms, starts, docs, tfs = _scan.postings(flat, lengths, first, n_terms)
        return cls(np.frombuffer(terms, dtype=np.int64), np.frombuffer(starts, dtype=np.int64),
                   np.frombuffer(docs, dtype=np.int32), np.frombuffer(tfs, dtype=np.float32))

    @classmethod
    def py_segment(cls, flat: np.ndarray, lengths: np.ndarray, first: int) -> _Segment:
        """``of_documents`` by numpy (the oracle): the sorted unique ``term << 32 | doc`` keys and
        their counts; the terms' boundaries are where the high half changes."""
        docs = np.repeat(np.arange(first, first + len(lengths), dtype=np.int64), lengths)
        keys, counts = np.unique((flat << 32) | docs, return_counts=True)
        term_ids = keys >> 32
        starts = np.concatenate(([0], np.flatnonzero(term_ids[1:] != term_ids[:-1]) + 1, [len(keys)]))
        return cls(term_ids[starts[:-1]], starts, (keys & 0xFFFFFFFF).astype(np.int32), counts.astype(np.float32))

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray] | None:
        i = int(np.searchsorted(self.terms, term))
        if i == len(self.terms) or self.terms[i] != term:
            return None
        start, end = self.starts[i], self.starts[i + 1]
        return self.docs[start:end], self.tfs[start:end]

    def merged(self, newer: _Segment) -> _Segment:
        """Both segments' postings as one, in the same layout (by term, then document), given
        that ``newer``'s documents all follow this one's (``add_texts`` numbers them in order):
        one pass in C over the two vocabularies, each term's runs copied whole
        (``_scan.merge_postings``; the same arrays as ``py_merged``). numpy's fancy indexes moved
        every posting one at a time through ~5 temporaries of the postings' length, whose fresh
        pages a ``Brain`` faults in: 3.1 -> 0.65 µs an event of ingest at 100k (issue 28, round
        fifteen; ``bench/bm25_merge.py``, with the pages reused, x0.42)."""
        terms, starts, docs, tfs = _scan.merge_postings(*self, *newer)
        return _Segment(np.frombuffer(terms, dtype=np.int64), np.frombuffer(starts, dtype=np.int64),
                        np.frombuffer(docs, dtype=np.int32), np.frombuffer(tfs, dtype=np.float32))

    def py_merged(self, newer: _Segment) -> _Segment:
        """``merged`` by numpy (the oracle). Each posting moves to its term's place in the union of the
        two vocabularies: linear, where sorting the concatenated postings made the merges ~1/3 of
        ``add_texts`` at 20k."""
        terms = sorted_sets.union(self.terms, newer.terms)  # both sorted: a merge, not np.union1d's hash table
        mine, theirs = np.searchsorted(terms, self.terms), np.searchsorted(terms, newer.terms)
        count_a, count_b = np.diff(self.starts), np.diff(newer.starts)
        before = np.zeros(len(terms), dtype=np.int64)  # each term's postings from this segment
        before[mine] = count_a
        total = before.copy()
        total[theirs] += count_b
        starts = np.zeros(len(terms) + 1, dtype=np.int64)
        np.cumsum(total, out=starts[1:])
        to_a = np.repeat(starts[mine] - self.starts[:-1], count_a) + np.arange(len(self.docs))
        to_b = np.repeat(starts[theirs] + before[theirs] - newer.starts[:-1], count_b) + np.arange(len(newer.docs))
        docs = np.empty(len(self.docs) + len(newer.docs), dtype=np.int32)
        tfs = np.empty(len(docs), dtype=np.float32)
        docs[to_a], docs[to_b] = self.docs, newer.docs
        tfs[to_a], tfs[to_b] = self.tfs, newer.tfs
        return _Segment(terms, starts, docs, tfs)


def term_hash(term: str) -> int:
    """A term's key in a saved vocabulary (``_Base``): stable across processes (``hash()`` is
    salted), as a signed int64, numpy's native sort order."""
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=8).digest(), "little", signed=True)


_BASE_FILES = ("hash", "voff", "vocab", "starts", "docs", "tfs", "len")


class _Base(NamedTuple):
    """A saved index, mapped read-only (``BM25Index.mapped``): the vocabulary sorted by
    ``term_hash`` (each term's UTF-8 bytes in ``vocab[voff[i]:voff[i + 1]]``, checked on lookup,
    so a hash collision never merges two terms) and, per vocabulary entry, its postings
    ``docs[starts[i]:starts[i + 1]]`` with frequencies ``tfs[...]``: one segment, keyed by term
    string instead of this process's term numbers."""

    hashes: np.ndarray  # int64, sorted
    voff: np.ndarray  # int64, len(hashes) + 1
    vocab: np.ndarray  # uint8
    starts: np.ndarray  # int64, len(hashes) + 1
    docs: np.ndarray  # int32
    tfs: np.ndarray  # float32

    def find(self, term: str) -> int:
        """The vocabulary entry of ``term``, or -1."""
        h = term_hash(term)
        i = int(np.searchsorted(self.hashes, h))
        raw = None
        while i < len(self.hashes) and self.hashes[i] == h:
            raw = raw or term.encode()
            if self.vocab[self.voff[i] : self.voff[i + 1]].tobytes() == raw:
                return i
            i += 1
        return -1

    def postings(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        start, end = self.starts[i], self.starts[i + 1]
        return self.docs[start:end], self.tfs[start:end]

    def terms(self) -> list[str]:
        """Every vocabulary term, in entry order (the owner re-saving a restored index)."""
        raw, off = self.vocab.tobytes(), self.voff.tolist()
        return [raw[off[i] : off[i + 1]].decode() for i in range(len(self.hashes))]


# A one-off term's key in ``_OneOffs``: ``str``'s own hash, cached in the string (the batch's new terms
# were just hashed as dict keys). Salted per process, which is enough: the table is never saved
# (``BM25Index.save`` writes the terms as strings).
one_off_hash = hash


class _OneOffs:
    """Terms a bulk add met in one document only (a ticket or case number), held as a hash and
    UTF-8 bytes in arrays instead of a ``BM25Index._terms`` entry (a dict slot, a ``str`` and an
    ``int``: ~140 bytes a term; two such terms an event made ~250 bytes an event at 100k, issue 28).
    Each keeps its term number, so its postings stay where they are (the segments) and a term that
    recurs takes its number back: every term has one number, whichever map holds it.

    Entries are appended in order (``_blob``, ``_ends``, ``_numbers``); ``_runs`` index them by
    ``one_off_hash`` (sorted runs merged like the segments, so a lookup searches O(log n) of them)
    and a lookup compares the bytes, so a hash collision never merges two terms."""

    def __init__(self):
        self._blob = bytearray()  # the terms' UTF-8 bytes, in the order held
        self._ends = array("q")  # entry i's bytes end at _ends[i] (and start at _ends[i - 1], or 0)
        self._numbers = array("i")  # entry i's term number
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []  # (hashes ascending int64, their entries int32)

    def __len__(self) -> int:
        return len(self._numbers)

    def hold(self, terms: list[str], numbers: np.ndarray, hashes: np.ndarray) -> None:
        """Holds ``terms`` (absent so far) with their term numbers and ``one_off_hashes``."""
        if not terms:
            return
        first = len(self._numbers)
        joined = "".join(terms)
        if joined.isascii():  # a byte a character: one encode for all
            self._blob += joined.encode()
            lengths = np.fromiter(map(len, terms), dtype=np.int64, count=len(terms))
        else:
            raw = [term.encode(errors="surrogatepass") for term in terms]  # a lone surrogate is a term too
            self._blob += b"".join(raw)
            lengths = np.fromiter(map(len, raw), dtype=np.int64, count=len(raw))
        ends = np.cumsum(lengths)
        ends += len(self._blob) - int(ends[-1])
        self._ends.frombytes(ends.tobytes())
        self._numbers.frombytes(np.asarray(numbers, dtype=np.int32).tobytes())
        order = np.argsort(hashes, kind="stable")
        runs = self._runs
        runs.append((hashes[order], (first + order).astype(np.int32)))
        while len(runs) >= 2 and 4 * len(runs[-1][0]) >= len(runs[-2][0]):
            runs[-1] = merged_runs(runs[-2], runs.pop())

    def number(self, term: str) -> int:
        """``term``'s number, or -1 if it is not held."""
        h, raw = one_off_hash(term), None
        for hashes, entries in self._runs:
            i = int(np.searchsorted(hashes, h))
            while i < len(hashes) and hashes[i] == h:
                raw = raw or term.encode(errors="surrogatepass")
                entry = int(entries[i])
                if self._blob[self._ends[entry - 1] if entry else 0 : self._ends[entry]] == raw:
                    return self._numbers[entry]
                i += 1
        return -1

    def numbers(self, terms: list[str], hashes: np.ndarray) -> np.ndarray:
        """Each term's number (int64), -1 for a term not held (``hashes``: theirs): one search of
        every run for all of them, in hash order (numpy's binary search then starts where the last
        one ended), then ``number`` for the few whose hash some entry has."""
        found = np.full(len(terms), -1, dtype=np.int64)
        if not self._runs or not terms:
            return found
        order = np.argsort(hashes)
        ordered = hashes[order]
        maybe = np.zeros(len(terms), dtype=bool)
        for run, _ in self._runs:
            at = np.minimum(np.searchsorted(run, ordered), len(run) - 1)
            maybe[order] |= run[at] == ordered
        for i in np.flatnonzero(maybe).tolist():
            found[i] = self.number(terms[i])
        return found

    def items(self) -> list[tuple[int, str]]:
        """(number, term) of every entry, in the order held."""
        raw, ends = bytes(self._blob), self._ends.tolist()
        starts = [0, *ends][: len(ends)]
        return [(number, raw[a:b].decode(errors="surrogatepass"))
                for number, a, b in zip(self._numbers.tolist(), starts, ends, strict=True)]


SAMPLE_STRIDE = 8  # best_hits' sample: every 8th document


def best_hits(scores: np.ndarray, k: int) -> np.ndarray:
    """The numbers of the ``k`` best documents with a positive score, best first, equal scores
    newest (highest number) first: ``sorted(positives, key=(-score, -no))[:k]``
    (``tests/recall/test_best_hits.py`` holds the two against each other). Before, ``argpartition``
    picked among the documents tied at the cut as its pivots fell: templated events tie there in
    most recalls at 100k (65 documents share the 64th best score, median); now the newer of two
    equal matches is kept, as the newer memory is the one an agent would act on.

    A common query word scores most visible documents (34k of 100k at 100k events), and
    ``argpartition`` over them cost ~0.35 ms a recall. The ``k``-th best score of every
    ``SAMPLE_STRIDE``-th document is a lower bound of the ``k``-th best of all (a subset's
    ``k``-th largest is never above the whole's), so only the documents at or above it
    (~``k × SAMPLE_STRIDE``) are selected among, exactly."""
    if k <= 0:
        return np.zeros(0, dtype=np.intp)
    sample = scores[::SAMPLE_STRIDE]
    sample = sample[sample > 0]
    if len(sample) >= k:
        floor = np.partition(sample, len(sample) - k)[len(sample) - k]
        found = np.flatnonzero(scores >= floor)
    else:
        found = np.flatnonzero(scores > 0)
    values = scores[found]
    if len(found) > k:  # the k-th best value: all above it, then the newest of those equal to it
        kth = np.partition(values, len(found) - k)[len(found) - k]
        above = values > kth
        tied = np.flatnonzero(values == kth)[len(found) - k - int((values < kth).sum()):]  # the last of them
        keep = np.sort(np.concatenate([np.flatnonzero(above), tied]))
        found, values = found[keep], values[keep]
    found, values = found[::-1], values[::-1]  # the stable sort keeps equal scores in this order: newest first
    return found[np.argsort(-values, kind="stable")]


def _read(path: Path, dtype) -> np.ndarray:
    """A saved column mapped read-only (an empty file cannot be mapped: an empty array), as a plain
    ndarray view of the mapping: ``np.memmap``'s indexing and slicing go through a Python
    ``__getitem__`` (~100 a first-time recall at 100k: the vocabulary's binary search in ``find``,
    the graph's ``docs_with`` counts), ~0.2 ms a recall, paired A/B ×0.98 (docs/speed.md, round eleven)."""
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=dtype)
    return np.asarray(np.memmap(path, dtype=dtype, mode="r"))


def merged_runs(older: tuple[np.ndarray, np.ndarray],
                newer: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Two of ``_OneOffs``' runs as one, an equal hash's older entries first, in one C pass
    (``_scan.merge_hash_runs``; numpy's ``np.insert`` of the newer at their ``searchsorted`` places, the
    oracle in the test, was ~0.3 µs an event of a 100k import)."""
    hashes, entries = _scan.merge_hash_runs(*older, *newer)
    return np.frombuffer(hashes, dtype=np.int64), np.frombuffer(entries, dtype=np.int32)


def one_off_hashes(terms: list[str]) -> np.ndarray:
    """``one_off_hash`` of each term (int64)."""
    return np.fromiter(map(one_off_hash, terms), dtype=np.int64, count=len(terms))


def _renumbered(flat: np.ndarray, first_number: int, numbers: np.ndarray) -> np.ndarray:
    """``flat`` with each number from ``first_number`` on replaced by ``numbers[number - first_number]``."""
    flat = flat.copy()
    fresh = flat >= first_number
    flat[fresh] = numbers[flat[fresh] - first_number]
    return flat


def _dense_row(docs: np.ndarray, tfs: np.ndarray, norms: np.ndarray, weight: float) -> np.ndarray:
    """A term's BM25 parts (``weight`` = idf × its count in the query) as a dense row, zeros
    elsewhere: adding it to the scores gives the bits ``bm25_add`` would."""
    row = np.zeros(len(norms), dtype=np.float32)
    _scan.bm25_add(row, docs, tfs, norms, weight, K1 + 1.0)
    return row


def _visible_postings(visible: np.ndarray, docs: np.ndarray, tfs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A term's postings (``docs`` ascending, ``tfs``) among the ``visible`` documents (ascending),
    numbered by their place there: (places int32, their tfs float32)."""
    at = np.searchsorted(visible, docs)
    seen = at < len(visible)
    seen[seen] = visible[at[seen]] == docs[seen]
    return np.ascontiguousarray(at[seen], dtype=np.int32), np.ascontiguousarray(tfs[seen], dtype=np.float32)


class _TermPart(NamedTuple):
    """A common term's part of the scores, kept: over all documents (``BM25Index._rows``) or over a
    view's (``BM25Index._view_rows``). A dense ``row`` (4 bytes a document), or, when under half the
    documents hold the term, its postings among them (``at`` their places, ``tfs``: 8 bytes a holder),
    the smaller. api.py's common query terms are each in 12-37 % of the documents (one in all), so
    dense rows were mostly zeros: the rows over views held 131 B an event at 100k (docs/speed.md,
    round fourteen). Postings are added with ``bm25_add``, the float32 operations a dense row is made
    with, so the scores keep their bits either way; kept, they spare the postings' gathering."""

    row: np.ndarray | None
    at: np.ndarray | None
    tfs: np.ndarray | None
    idf: float

    @property
    def nbytes(self) -> int:
        return self.row.nbytes if self.row is not None else self.at.nbytes + self.tfs.nbytes

    def add_to(self, scores: np.ndarray, norms: np.ndarray, weight: float) -> None:
        """Adds this part to ``scores`` over the view (``norms``: its documents' norms; ``weight``: idf × the
        term's count in the query, which a dense row was made with)."""
        if self.row is not None:
            scores += self.row
        else:
            _scan.bm25_add(scores, self.at, self.tfs, norms, weight, K1 + 1.0)


class _KeptParts(OrderedDict):
    """Common terms' parts by key (``_TermPart``), oldest use first, with the bytes they hold (``nbytes``):
    ``BM25Index``'s parts over all documents and over its views."""

    def __init__(self):
        super().__init__()
        self.nbytes = 0

    def used(self, key: tuple) -> _TermPart | None:
        """The part kept under ``key``, now the most recently used; None if none is."""
        part = self.get(key)
        if part is not None:
            self.move_to_end(key)
        return part

    def keep(self, key: tuple, part: _TermPart, budget: int) -> _TermPart:
        """Keeps ``part``; the least recently used go while the parts hold more than ``budget`` bytes."""
        self[key] = part
        self.nbytes += part.nbytes
        while self.nbytes > budget:
            self.nbytes -= self.popitem(last=False)[1].nbytes
        return part

    def clear(self) -> None:
        super().clear()
        self.nbytes = 0


class _View(NamedTuple):
    """A mask recent recalls used (``BM25Index.visible_scores``), kept while the corpus stays as it
    is: the mask (compared at every use, not hashed) and, once it recurs, the visible documents'
    numbers (ascending) and norms. Common terms' rows over them are in ``BM25Index._view_rows``."""

    number: int  # names its rows in ``BM25Index._view_rows``
    mask: np.ndarray  # bool, one per document
    docs: np.ndarray | None  # int32 (as postings number documents), ascending; None until the mask recurs
    norms: np.ndarray | None  # float32, ``_doc_norms()[docs]``


class BM25Index:
    """Per term (numbered in ``_terms``): numpy arrays of doc numbers and term frequencies
    for scoring, filled up to ``_settled[t]``, plus a tail of recent (doc, tf) pairs.

    Appending to a tail (a ``bytearray``) is ~10x cheaper than setting one element of a
    numpy array, so ``add`` only appends; a tail moves into its term's arrays (one slice
    assignment, amortised doubling) when it is full or when a query reads the term.
    Neither numpy arrays nor bytearrays are tracked by the garbage collector, so a large
    index does not slow down the process's full collections.
    """

    def __init__(self):
        self._terms: dict[str, int] = {}  # term → number; the one-off terms of bulk adds are in ``_one_offs``
        self._one_offs = _OneOffs()
        self._docs: list[np.ndarray] = []
        self._tfs: list[np.ndarray] = []
        self._settled: list[int] = []
        self._tails: list[bytearray | bytes] = []  # ``_NO_TAIL`` until the term's first ``add``
        self._segments: list[_Segment] = []  # bulk-added postings, newest last
        self._base: _Base | None = None  # a saved index this one continues (``mapped``): documents 0 .. its n - 1
        self._lengths = np.empty(1024, dtype=np.float32)
        self._n = 0
        self._hidden = 0  # the last documents added ``hidden``: numbered and posted, not searchable until ``publish``
        self._total_length = 0
        self._norms = np.empty(0, dtype=np.float32)  # see _doc_norms
        self._norms_of = (0, 0)  # (documents, total length) the norms and rows were computed for
        self._rows = _KeptParts()  # (term, qtf) → a common term's part over all documents: see _row
        self._views: list[_View] = []  # see visible_scores; most recently used first
        self._views_made = 0
        # (view number, term, qtf) → a common term's part over the view's documents (``_TermPart``)
        self._view_rows = _KeptParts()
        self._lock = threading.Lock()  # adding and scoring (which settles tails) exclude each other

    def __len__(self) -> int:
        return self._n

    def publish(self) -> None:
        """The documents added ``hidden`` become searchable. A tenant's index numbers and posts a batch
        before its rows are in its document table (the rows' numbers come from here): a recall beside
        that fold found postings of documents past the table and raised ``IndexError`` reading them
        (bench/log_lock.py, 2 runs in 6). Hidden, they are found by no ``scores`` or ``docs_with``
        until the table holds them."""
        with self._lock:
            self._hidden = 0

    def add(self, terms: list[str], hidden: bool = False) -> int:
        """Index one document's terms; returns its number (0, 1, 2 ...). ``hidden``: not searchable
        until ``publish`` (see there)."""
        with self._lock:
            self._hidden += hidden
            doc = self._n
            if doc == len(self._lengths):
                self._lengths = np.resize(self._lengths, doc * 2)
            self._lengths[doc] = len(terms)
            self._total_length += len(terms)
            doc_bytes = doc.to_bytes(4, "little", signed=True)
            term_ids, tails = self._terms, self._tails
            for term, tf in Counter(terms).items():
                t = term_ids.get(term)
                if t is None:  # new, or a one-off of a bulk add that recurs: its number back
                    t = self._one_offs.number(term) if self._one_offs else -1
                    term_ids[term] = t = self._new_term() if t < 0 else t
                tail = tails[t]
                if tail is _NO_TAIL:
                    tail = tails[t] = bytearray()
                tail += doc_bytes
                tail += _TF_BYTES[tf] if tf < 256 else tf.to_bytes(4, "little", signed=True)
                if len(tail) >= 8 * _TAIL:
                    self._settle(t)
            self._n += 1
        return doc

    def add_many(self, docs_terms: list[list[str]]) -> int:
        """Index many documents at once (each a list of terms); returns the number of the first.
        ``add_texts`` with no texts."""
        return self.add_texts(None, docs_terms)

    def add_texts(self, texts: list[str] | None, terms: list[list[str]] | None = None, hidden: bool = False) -> int:
        """Index many documents at once; returns the number of the first. Document ``d``'s terms
        are ``tokens(texts[d])`` followed by ``terms[d]`` (either list may be None).

        The batch is tokenised and numbered in one C call (``recall/_scan.c``: no Python string
        list per document, ~1.5 µs a document for what cost ~15) and becomes one immutable segment
        built with numpy; segments merge when the newer is at least a quarter of the older, so a
        query sees O(log n) of them (an LSM-style policy, like Lucene's tiered merges). The batch's
        new terms found in one of its documents only leave ``_terms`` for ``_one_offs``. ``hidden``: not
        searchable until ``publish``.
        """
        with self._lock:
            known, first_number = len(self._terms), len(self._tails)
            try:
                flat, lengths = _scan.term_ids(texts, terms, self._terms, first_number)
            finally:  # a bad document raises after earlier ones numbered new terms: they get their lists
                fresh = self._newest_terms(len(self._terms) - known)
                hashes = one_off_hashes(fresh)
                numbers, new = self._take_back(fresh, hashes, first_number)
                self._new_terms(len(new))
            flat = np.frombuffer(flat, dtype=np.int64)
            if numbers is not None:
                flat = _renumbered(flat, first_number, numbers)
                hashes = hashes[numbers >= first_number]
            first, segment = self._add_numbered(flat, np.frombuffer(lengths, dtype=np.int64))
            if segment is not None:
                self._demote_one_offs(new, hashes, first_number, segment)
            self._hidden += len(lengths) if hidden else 0
            return first

    def _newest_terms(self, count: int) -> list[str]:
        """The last ``count`` terms ``_terms`` took, in the order taken (their numbering order)."""
        return list(islice(reversed(self._terms), count))[::-1] if count else []

    def _take_back(self, fresh: list[str], hashes: np.ndarray,
                   first_number: int) -> tuple[np.ndarray | None, list[str]]:
        """``term_ids`` numbered ``fresh`` (terms ``_terms`` lacked; ``hashes``: their
        ``one_off_hashes``) ``first_number``, + 1, ...: a one-off that recurs takes its number back
        and the truly new are renumbered in order from ``first_number``. Returns the map (fresh term
        i → its number; None when nothing was held again) and the truly new terms."""
        held = self._one_offs.numbers(fresh, hashes)
        back = held >= 0
        if not back.any():
            return None, fresh
        new = np.flatnonzero(~back)
        held[new] = first_number + np.arange(len(new))
        start = int(np.argmax(back))  # the numbers before the first term taken back are unchanged
        for term, number in zip(fresh[start:], held[start:].tolist(), strict=True):
            self._terms[term] = number
        return held, [fresh[i] for i in new.tolist()]

    def _demote_one_offs(self, new: list[str], hashes: np.ndarray, first_number: int, segment: _Segment) -> None:
        """The batch's new terms (numbered ``first_number`` + their place in ``new``; ``hashes``:
        their ``one_off_hashes``) that only one of its documents holds move from ``_terms`` to
        ``_one_offs``."""
        if not new:
            return
        once = (segment.terms >= first_number) & (np.diff(segment.starts) == 1)
        numbers = segment.terms[once]
        places = numbers - first_number
        terms = [new[i] for i in places.tolist()]
        self._one_offs.hold(terms, numbers, hashes[places])
        for term in terms:
            del self._terms[term]

    def _add_numbered(self, flat: np.ndarray, lengths: np.ndarray) -> tuple[int, _Segment | None]:
        """Documents given as their terms' numbers (``flat``, grouped by document) and counts: the
        first's number and the batch's own segment (None without terms)."""
        first, m = self._n, len(lengths)
        if first + m > len(self._lengths):
            self._lengths = np.resize(self._lengths, max(2 * len(self._lengths), first + m))
        self._lengths[first : first + m] = lengths
        self._total_length += int(lengths.sum())
        self._n += m
        if not len(flat):
            return first, None
        segment = _Segment.of_documents(flat, lengths, first, len(self._tails))
        segments = self._segments
        segments.append(segment)
        while len(segments) >= 2 and 4 * len(segments[-1].docs) >= len(segments[-2].docs):
            newer = segments.pop()
            segments[-1] = segments[-1].merged(newer)
        return first, segment

    def _new_terms(self, count: int) -> None:
        """Room for ``count`` terms just numbered (``len(self._tails)`` onwards)."""
        if count:
            self._docs.extend([_NO_DOCS] * count)
            self._tfs.extend([_NO_TFS] * count)
            self._settled.extend([0] * count)
            self._tails.extend([_NO_TAIL] * count)

    def _new_term(self) -> int:
        self._docs.append(_NO_DOCS)  # shared and empty: the first settle allocates
        self._tfs.append(_NO_TFS)
        self._settled.append(0)
        self._tails.append(_NO_TAIL)
        return len(self._tails) - 1

    def _settle(self, t: int) -> int:
        """Move term ``t``'s tail into its arrays; returns its document frequency."""
        tail, n = self._tails[t], self._settled[t]
        if not tail:
            return n
        pairs = np.frombuffer(tail, dtype=_PAIR).reshape(-1, 2)
        end = n + len(pairs)
        if end > len(self._docs[t]):
            size = max(end, 4, 2 * len(self._docs[t]))
            self._docs[t] = np.resize(self._docs[t], size)
            self._tfs[t] = np.resize(self._tfs[t], size)
        self._docs[t][n:end] = pairs[:, 0]
        self._tfs[t][n:end] = pairs[:, 1]
        self._settled[t] = end
        self._tails[t] = _NO_TAIL
        return end

    def scores(self, terms: list[str]) -> tuple[np.ndarray, dict[str, float]]:
        """BM25 score of every document (zeros where no term matched) and each query
        term's idf (terms absent from the corpus are left out).

        Each term's postings are scored and added in one C pass (``_scan.bm25_add``: the same
        float32 operations in the same order as numpy's expression, so the same bits) over the
        documents' length norms, computed once per corpus state (``_doc_norms``); a common term's
        pass fills a dense row that later queries add (``_row``). numpy's ~10 passes and
        temporaries a term made a 1M-document recall's lexical stage ~2x slower (bench/lexical_ab.py)."""
        with self._lock:
            scores, idfs = self._scores(terms)
            return (scores[: self._n - self._hidden] if self._hidden else scores), idfs

    def _scores(self, terms: list[str]) -> tuple[np.ndarray, dict[str, float]]:
        """``scores`` with the lock held."""
        n = self._n
        scores = np.zeros(n, dtype=np.float32)
        idfs: dict[str, float] = {}
        if n == 0:
            return scores, idfs
        norms = self._doc_norms()
        for term, qtf in Counter(terms).items():
            kept = self._rows.used((term, qtf))
            if kept is not None:  # a common term, its part kept
                idfs[term] = kept.idf
                kept.add_to(scores, norms, kept.idf * qtf)
                continue
            found = self._term_postings(term, n)
            if found is None:
                continue
            docs, tfs, idf = found
            idfs[term] = idf
            if len(docs) >= n * ROW_SHARE:
                self._row((term, qtf), docs, tfs, norms, idf).add_to(scores, norms, idf * qtf)
            else:
                _scan.bm25_add(scores, docs, tfs, norms, idf * qtf, K1 + 1.0)
        return scores, idfs

    def _term_postings(self, term: str, n: int) -> tuple[np.ndarray, np.ndarray, float] | None:
        """A term's postings (document numbers int32, term frequencies float32, contiguous) and its
        idf over ``n`` documents, or None for a term no document holds."""
        t, b = self._lookup(term)
        if t is None and b < 0:
            return None
        docs, tfs = self._postings(t, b)
        df = len(docs)
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        return np.ascontiguousarray(docs, dtype=np.int32), np.ascontiguousarray(tfs, dtype=np.float32), idf

    def visible_scores(self, terms: list[str], mask: np.ndarray
                       ) -> tuple[np.ndarray | None, np.ndarray, dict[str, float]]:
        """``scores(terms)`` of the documents ``mask`` (bool by document; those past its end are hidden) lets a
        recall see, and each term's idf: (their numbers ascending, their scores), bit for bit
        ``scores(terms)`` at those numbers (each visible document gets the same float32 additions in
        the same order); or, for a mask no recent recall used, (None, ``scores(terms)`` with the
        hidden documents' zeroed), as the engine scored before. A recall's mask hides most documents
        (agent-1 sees 34 k of 100 k), and scoring all of them, zeroing the hidden ones and selecting
        among the whole array was most of the lexical stage. The last ``VISIBLE_VIEWS`` masks are
        kept; one that recurs keeps its documents, and common terms keep their rows over those
        (``VIEW_ROW_BYTES`` in all), until the corpus changes. Such a row is taken from the term's
        whole row, which only ``scores`` keeps (a mask not seen lately): made here, it is dropped.
        Agents taking turns beyond that pay the mask's compare and copy (~0.05 ms at 100 k) over
        the scoring as before."""
        mask = np.asarray(mask)
        if mask.dtype != np.bool_ or mask.ndim != 1:
            raise TypeError(f"visible_scores: a bool mask by document expected, got {mask.dtype} of shape {mask.shape}")
        with self._lock:
            n = self._n
            if len(mask) < n:
                # documents added after the recall took its mask (a bulk import beside it): hidden from
                # it, as the vector index treats keys past its ``allowed`` mask
                mask = np.concatenate([mask, np.zeros(n - len(mask), dtype=bool)])
            if n == 0:
                return None, np.zeros(0, dtype=np.float32), {}
            norms = self._doc_norms()  # first: a changed corpus drops the kept masks
            view = self._view(mask if len(mask) == n else mask[:n], norms)
            if view.docs is None:  # not seen lately: scored whole, the hidden documents zeroed
                scores, idfs = self._scores(terms)
                np.multiply(scores, mask[:n], out=scores)
                return None, scores, idfs
            idfs: dict[str, float] = {}
            scores = np.zeros(len(view.docs), dtype=np.float32)
            for term, qtf in Counter(terms).items():
                kept = self._view_rows.used((view.number, term, qtf))
                if kept is not None:  # a common term: its part over the visible documents
                    idfs[term] = kept.idf
                    kept.add_to(scores, view.norms, kept.idf * qtf)
                    continue
                found = self._term_postings(term, n)
                if found is None:
                    continue
                docs, tfs, idf = found
                idfs[term] = idf
                at, seen_tfs = _visible_postings(view.docs, docs, tfs)
                if len(docs) >= n * ROW_SHARE:  # a common term: its part over the visible documents, kept
                    part = self._view_row(view, term, qtf, docs, tfs, norms, idf, at, seen_tfs)
                    kept = self._view_rows.keep((view.number, term, qtf), part, VIEW_ROW_BYTES)
                    kept.add_to(scores, view.norms, idf * qtf)
                else:  # the postings of visible documents, numbered by their place among them
                    _scan.bm25_add(scores, at, seen_tfs, view.norms, idf * qtf, K1 + 1.0)
        return view.docs, scores, idfs

    def _view_row(self, view: _View, term: str, qtf: int, docs: np.ndarray, tfs: np.ndarray, norms: np.ndarray,
                  idf: float, at: np.ndarray, seen_tfs: np.ndarray) -> _TermPart:
        """A common term's part over ``view``'s documents, in the smaller form (``_TermPart``): its
        postings there (``at``, ``seen_tfs``) when under half of them hold it, else a dense row taken
        from the whole row ``scores`` keeps, or from one made for this and dropped (kept too, the whole
        rows of every term the views used held ~380 B a document at 100k)."""
        if 2 * len(at) < len(view.docs):
            return _TermPart(None, at, seen_tfs, idf)
        whole = self._rows.get((term, qtf))
        row = whole.row if whole is not None and whole.row is not None else _dense_row(docs, tfs, norms, idf * qtf)
        return _TermPart(row[view.docs], None, None, idf)

    def _view(self, mask: np.ndarray, norms: np.ndarray) -> _View:
        """The kept view of ``mask`` (equal masks share one), its documents found the second time
        it is used; a new mask is kept without them, the oldest kept one dropped."""
        for i, view in enumerate(self._views):
            # a read-only mask kept as itself (``TenantIndex.visible_mask``'s) is known by identity, unread
            if view.mask is mask or np.array_equal(view.mask, mask):
                if view.docs is None:
                    # int32, not flatnonzero's int64: half the bytes (a 34 % mask at 100k: 136 kB a view,
                    # not 272), and the postings' int32 numbers are searched in it without a cast
                    docs = np.flatnonzero(mask).astype(np.int32)
                    view = view._replace(docs=docs, norms=norms[docs])
                self._views.pop(i)
                self._views.insert(0, view)
                return view
        self._views_made += 1
        # a read-only mask that owns its data cannot change under the view: kept as itself, not copied
        kept = mask if not mask.flags.writeable and mask.base is None else mask.copy()
        self._views.insert(0, _View(self._views_made, kept, None, None))
        del self._views[VISIBLE_VIEWS:]  # their rows are never read again: the oldest, they go first
        return self._views[0]

    def _row(self, key: tuple[str, int], docs: np.ndarray, tfs: np.ndarray, norms: np.ndarray,
             idf: float) -> _TermPart:
        """A common term's part over all documents, kept (``_TermPart``: its postings when under half the
        documents hold it, else a dense row, zeros elsewhere): adding a row costs a fraction of a pass
        over its postings, and the terms every document shares ("ticket", "system", "the") recur in most
        queries; a sparser term's postings, kept gathered, spare their gathering from the segments. Kept
        until the next add; the oldest go beyond ``ROW_BYTES``."""
        if 2 * len(docs) < len(norms):
            part = _TermPart(None, docs, tfs, idf)
        else:
            part = _TermPart(_dense_row(docs, tfs, norms, idf * key[1]), None, None, idf)
        return self._rows.keep(key, part, ROW_BYTES)

    def _doc_norms(self) -> np.ndarray:
        """``K1 * (1 - B + B * length / avgdl)`` of every document, float32 as numpy computes it
        element by element; kept until an add changes the corpus (4 bytes a document)."""
        n, total = self._n, self._total_length
        if self._norms_of != (n, total):
            self._rows.clear()
            self._views.clear()
            self._view_rows.clear()
            avgdl = total / n or 1.0
            self._norms = K1 * (1.0 - B + B * self._lengths[:n] / avgdl)
            self._norms_of = (n, total)
        return self._norms

    def _lookup(self, term: str) -> tuple[int | None, int]:
        """``term``'s number in this process (None: no posting since the base) and its base
        vocabulary entry (-1: not in the base)."""
        t = self._terms.get(term)
        if t is None and self._one_offs:
            t = self._one_offs.number(term)
            t = None if t < 0 else t
        return t, -1 if self._base is None else self._base.find(term)

    def _term_list(self) -> list[str]:
        """Every term numbered in this process, by number (``_terms`` and ``_one_offs``)."""
        terms: list[str | None] = [None] * len(self._tails)
        for number, term in self._one_offs.items():
            terms[number] = term
        for term, number in self._terms.items():
            terms[number] = term
        return terms

    def _postings(self, t: int | None, b: int = -1) -> tuple[np.ndarray, np.ndarray]:
        """All postings of a term (``_lookup``): the base's, the bulk segments' and the single adds'."""
        docs, tfs = [], []
        if b >= 0:
            found = self._base.postings(b)
            docs.append(found[0])
            tfs.append(found[1])
        if t is None:
            return docs[0], tfs[0]
        live = self._settle(t)
        docs.append(self._docs[t][:live])
        tfs.append(self._tfs[t][:live])
        for segment in self._segments:
            found = segment.postings(t)
            if found is not None:
                docs.append(found[0])
                tfs.append(found[1])
        if len(docs) == 1:
            return docs[0], tfs[0]
        return np.concatenate(docs), np.concatenate(tfs)

    def docs_with(self, term: str, max_df: int | None = None) -> np.ndarray | None:
        """The documents holding ``term`` (e.g. a cue term such as ``@entity:iam``); None
        when more than ``max_df`` hold it (counted without gathering the postings)."""
        with self._lock:
            t, b = self._lookup(term)
            if t is None and b < 0:
                return _NO_DOCS
            if max_df is not None and self._df(t, b) > max_df:
                return None
            held = self._postings(t, b)[0]
            return held[held < self._n - self._hidden] if self._hidden else held

    def idfs(self, terms: list[str]) -> list[float]:
        """Each term's idf (``scores``' formula) from its document frequency, counted without
        gathering or scoring its postings; a term no document holds gets the idf of df = 0."""
        with self._lock:
            n = self._n
            return [math.log(1.0 + (n - df + 0.5) / (df + 0.5))
                    for df in (self._df(*self._lookup(term)) for term in terms)]

    def _df(self, t: int | None, b: int = -1) -> int:
        df = 0 if b < 0 else int(self._base.starts[b + 1] - self._base.starts[b])
        if t is None:
            return df
        df += self._settled[t] + len(self._tails[t]) // 8
        for segment in self._segments:
            found = segment.postings(t)  # slices: nothing is copied
            if found is not None:
                df += len(found[0])
        return df

    def top(self, terms: list[str], k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The ``k`` best (doc, score) pairs with a positive score, best first; ``allowed``
        is a boolean mask over documents (e.g. the requested layers)."""
        scores, _ = self.scores(terms)
        if allowed is not None:
            scores = np.where(allowed[: len(scores)], scores, 0.0)
        return [(int(d), float(scores[d])) for d in best_hits(scores, k)]

    # -- persisting (recall.index_snapshot) -------------------------------------------------
    def save(self, stem: Path) -> dict:
        """Writes the whole index beside ``stem`` (``stem.bm25-hash`` ...) as one saved base
        (``_Base``: every posting, the vocabulary by ``term_hash``, the lengths) and returns
        what ``mapped`` needs. Holds the lock: adds and scoring wait (seconds at 1M documents)."""
        stem = Path(stem)
        with self._lock:
            n, total = self._n, self._total_length
            terms = self._term_list()  # term number → term
            parts_t, parts_d, parts_f = [], [], []
            for t in range(len(terms)):
                live = self._settle(t)
                if live:
                    parts_t.append(np.full(live, t, dtype=np.int64))
                    parts_d.append(self._docs[t][:live].astype(np.int64))
                    parts_f.append(self._tfs[t][:live])
            for seg in self._segments:
                parts_t.append(np.repeat(seg.terms, np.diff(seg.starts)))
                parts_d.append(seg.docs.astype(np.int64))
                parts_f.append(seg.tfs)
            lengths = np.array(self._lengths[:n], dtype=np.float32)
            base = self._base
            if base is not None:  # the base's entries keep their number; this process's terms follow
                vocab = base.terms()
                number = {term: i for i, term in enumerate(vocab)}
                remap = np.array([number.setdefault(term, len(number)) for term in terms], dtype=np.int64)
                vocab += [term for term in number if number[term] >= len(base.hashes)]
                parts_t = [np.repeat(np.arange(len(base.hashes), dtype=np.int64), np.diff(base.starts))] + \
                    [remap[p] for p in parts_t]
                parts_d.insert(0, np.asarray(base.docs, dtype=np.int64))
                parts_f.insert(0, np.asarray(base.tfs))
            else:
                vocab = terms
        term_ids = np.concatenate(parts_t) if parts_t else np.zeros(0, dtype=np.int64)
        docs = np.concatenate(parts_d) if parts_d else np.zeros(0, dtype=np.int64)
        tfs = np.concatenate(parts_f).astype(np.float32) if parts_f else np.zeros(0, dtype=np.float32)
        hashes = np.fromiter((term_hash(term) for term in vocab), dtype=np.int64, count=len(vocab))
        order = np.argsort(hashes, kind="stable")  # vocabulary entry → its rank by hash
        rank = np.empty(len(vocab), dtype=np.int64)
        rank[order] = np.arange(len(vocab))
        ranked = rank[term_ids]
        by = np.argsort((ranked << 32) | docs, kind="stable")
        raw = [vocab[i].encode() for i in order.tolist()]
        voff = np.zeros(len(raw) + 1, dtype=np.int64)
        np.cumsum([len(r) for r in raw], out=voff[1:])
        columns = {"hash": hashes[order], "voff": voff, "vocab": np.frombuffer(b"".join(raw), dtype=np.uint8),
                   "starts": np.searchsorted(ranked[by], np.arange(len(vocab) + 1)).astype(np.int64),
                   "docs": docs[by].astype(np.int32), "tfs": tfs[by], "len": lengths}
        for name, column in columns.items():
            column.tofile(stem.with_suffix(f".bm25-{name}"))
        return {"documents": n, "total_length": int(total), "terms": len(vocab), "postings": len(docs)}

    @classmethod
    def mapped(cls, stem: Path, meta: dict) -> BM25Index:
        """An index continuing the one ``save`` wrote (``meta``: what it returned): its postings
        and vocabulary are memory-mapped (nothing is re-tokenised or re-sorted; processes mapping
        the same files share their pages) and later documents are added as to any index."""
        stem = Path(stem)
        dtypes = {"hash": np.int64, "voff": np.int64, "vocab": np.uint8, "starts": np.int64, "docs": np.int32,
                  "tfs": np.float32, "len": np.float32}
        col = {name: _read(stem.with_suffix(f".bm25-{name}"), dtypes[name]) for name in _BASE_FILES}
        n, terms = int(meta["documents"]), int(meta["terms"])
        if len(col["len"]) != n or len(col["hash"]) != terms or len(col["starts"]) != terms + 1 or \
                len(col["docs"]) != int(meta["postings"]) or len(col["tfs"]) != len(col["docs"]):
            raise ValueError(f"{stem}: the saved lexical index's columns disagree with its manifest")
        index = cls()
        index._base = _Base(col["hash"], col["voff"], col["vocab"], col["starts"], col["docs"], col["tfs"])
        index._lengths = np.resize(np.asarray(col["len"], dtype=np.float32), max(1024, 2 * n))
        index._n, index._total_length = n, int(meta["total_length"])
        return index
