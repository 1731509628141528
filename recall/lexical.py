"""BM25 over an append-only in-memory corpus, scored with numpy.

Postings grow in place (amortised doubling), so adding a document is O(its terms) and a
query touches only the postings of its own terms. Scores are Okapi BM25 (k1=1.2, b=0.75)
with the Lucene idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``, which is never negative.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

K1, B = 1.2, 0.75


class _Postings:
    __slots__ = ("docs", "tfs", "n")

    def __init__(self):
        self.docs = np.empty(4, dtype=np.int32)
        self.tfs = np.empty(4, dtype=np.float32)
        self.n = 0

    def add(self, doc: int, tf: int) -> None:
        if self.n == len(self.docs):
            self.docs = np.resize(self.docs, self.n * 2)
            self.tfs = np.resize(self.tfs, self.n * 2)
        self.docs[self.n] = doc
        self.tfs[self.n] = tf
        self.n += 1


class BM25Index:
    def __init__(self):
        self._postings: dict[str, _Postings] = {}
        self._lengths = np.empty(1024, dtype=np.float32)
        self._n = 0
        self._total_length = 0

    def __len__(self) -> int:
        return self._n

    def add(self, terms: list[str]) -> int:
        """Index one document's terms; returns its number (0, 1, 2 ...)."""
        doc = self._n
        if doc == len(self._lengths):
            self._lengths = np.resize(self._lengths, doc * 2)
        self._lengths[doc] = len(terms)
        self._total_length += len(terms)
        self._n += 1
        postings = self._postings
        for term, tf in Counter(terms).items():
            p = postings.get(term)
            if p is None:
                p = postings[term] = _Postings()
            p.add(doc, tf)
        return doc

    def scores(self, terms: list[str]) -> tuple[np.ndarray, dict[str, float]]:
        """BM25 score of every document (zeros where no term matched) and each query
        term's idf (terms absent from the corpus are left out)."""
        n = self._n
        scores = np.zeros(n, dtype=np.float32)
        idfs: dict[str, float] = {}
        if n == 0:
            return scores, idfs
        avgdl = self._total_length / n or 1.0
        lengths = self._lengths[:n]
        for term, qtf in Counter(terms).items():
            p = self._postings.get(term)
            if p is None:
                continue
            docs, tfs = p.docs[: p.n], p.tfs[: p.n]
            idf = math.log(1.0 + (n - p.n + 0.5) / (p.n + 0.5))
            idfs[term] = idf
            norm = K1 * (1.0 - B + B * lengths[docs] / avgdl)
            scores[docs] += (idf * qtf) * tfs * (K1 + 1.0) / (tfs + norm)
        return scores, idfs

    def top(self, terms: list[str], k: int, allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The ``k`` best (doc, score) pairs with a positive score, best first; ``allowed``
        is a boolean mask over documents (e.g. the requested layers)."""
        scores, _ = self.scores(terms)
        if allowed is not None:
            scores = np.where(allowed[: len(scores)], scores, 0.0)
        hits = np.flatnonzero(scores > 0)
        if len(hits) > k:
            hits = hits[np.argpartition(-scores[hits], k - 1)[:k]]
        order = hits[np.argsort(-scores[hits], kind="stable")]
        return [(int(d), float(scores[d])) for d in order]
