"""The term and static-tier part of ingest, the code before and the C loops, in one process
(issue 28: ``TenantIndex.add_many``'s tokens and BM25 add, and the static tier's embed).

    .venv/bin/python bench/ingest_tokens.py                  # 100k bench events, batches of 5,000
    .venv/bin/python bench/ingest_tokens.py --size 20000

The batches are what ``TenantIndex.add_many`` and the static tier receive from ``perceive_many``
on ``bench/api.py``'s events (each document's text and cue terms, captured once through
``Brain``). Each batch then goes to two BM25 indexes grown side by side, one by the code before
(``tokens`` in Python, cached situations, the Python numbering loop, segments built and merged
by sorting) and one by ``add_texts``, and through the static tier both ways (the batched regular
expressions, ``map`` look-ups and sparse product before; ``_scan.static_ids`` and ``_scan.pool``
now). The arms alternate batch by batch (which goes first alternates too); each figure is the
median over the batches of the calling thread's CPU per document, and the ratio is taken per
batch. The vector add that follows the static embed is unchanged code and timed once for scale.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import re
import statistics
import tempfile
import time
from functools import lru_cache
from itertools import repeat
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix

from hindbrain import Brain
from hindbrain.recall import tenant_index
from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.static import default_static
from hindbrain.recall.tokenize import SEPARATOR, py_tokens
from hindbrain.recall.vectors import VectorIndex

_spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).parent / "api.py")
api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api)


def captured_batches(size: int, batch: int) -> list[list[tuple[str, list[str]]]]:
    """(text, cue terms) of each document ``TenantIndex.add_many`` indexed, batch by batch."""
    rng = random.Random(size)
    events = [api.event(rng, n) for n in range(size)]
    got: list[list[tuple[str, list[str]]]] = []
    add_many = tenant_index.TenantIndex.add_many

    def capture(self, docs):
        got.append([(doc.text, list(cues)) for doc, cues in docs])
        return add_many(self, docs)

    tenant_index.TenantIndex.add_many = capture
    try:
        with tempfile.TemporaryDirectory(prefix="hindbrain-tokens-") as home, Brain.open(home, embedder="static") as b:
            for start in range(0, size, batch):
                b.perceive_many(events[start : start + batch])
    finally:
        tenant_index.TenantIndex.add_many = add_many
    return got


# -- the code before (a0c13f7), kept here as the same-process baseline --------------------------------
@lru_cache(maxsize=1 << 14)
def _old_repeated(text: str) -> tuple[str, ...]:
    return tuple(py_tokens(text))


def old_terms(text: str, cues: list[str]) -> list[str]:
    """``joined_tokens(text) + cues`` as before: the text's own words tokenised (each event's are new),
    its situation from the cache."""
    head, sep, tail = text.rpartition(SEPARATOR)
    return [*py_tokens(head), *_old_repeated(tail), *cues] if sep else [*py_tokens(text), *cues]


# BM25's add before the C numbering: the oracle the tests hold (tests/recall/test_scan.py), timed here.
_oracle_spec = importlib.util.spec_from_file_location(
    "scan_oracle", Path(__file__).resolve().parents[1] / "tests" / "recall" / "test_scan.py")
_oracle = importlib.util.module_from_spec(_oracle_spec)
_oracle_spec.loader.exec_module(_oracle)
old_add_many = _oracle._old_add_many


_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD_BATCH = re.compile(rf"\x00|[^\W\d_{_CJK}]+")
_NOT_CJK = re.compile(rf"[^\x00{_CJK}]+")
_ASCII_BATCH = re.compile(r"\x00|[a-z]+")


class OldStatic:
    """The static tier's embed as before: regular expressions over the joined batch, ``map``
    look-ups, a sparse product, the norms (rare words by the table's memo, as before)."""

    def __init__(self, table):
        self.table = table
        self.lookup = {**table.vocab, "\x00": -1}

    def word_ids(self, toks):
        ids = np.fromiter(map(self.lookup.get, toks, repeat(-2)), dtype=np.int64, count=len(toks))
        text_of = np.cumsum(ids == -1)
        known = ids >= 0
        flat, owner = ids[known], text_of[known]
        unknown = np.flatnonzero(ids == -2)
        if len(unknown):
            memo = self.table._rare_memo
            found = [memo.get(toks[i]) or () for i in unknown.tolist()]
            extra = np.fromiter((i for f in found for i in f), dtype=np.int64)
            if len(extra):
                flat = np.concatenate([flat, extra])
                owner = np.concatenate([owner, np.repeat(text_of[unknown], [len(f) for f in found])])
        return flat, owner

    def cjk_ids(self, joined):
        chars = _NOT_CJK.sub("\x01", joined)
        char_ids = np.fromiter(map(self.lookup.get, chars, repeat(-2)), dtype=np.int64, count=len(chars))
        text_of = np.cumsum(char_ids == -1)
        pairs = np.fromiter(map(self.lookup.get, map(str.__add__, chars, chars[1:]), repeat(-2)),
                            dtype=np.int64, count=max(0, len(chars) - 1))
        keep_c, keep_p = char_ids >= 0, pairs >= 0
        return [(char_ids[keep_c], text_of[keep_c]), (pairs[keep_p], text_of[:-1][keep_p])]

    def embed(self, texts):
        joined = "\x00".join(texts).lower()
        if joined.isascii():
            flat, owner = self.word_ids(_ASCII_BATCH.findall(joined))
        else:
            parts = [self.word_ids(_WORD_BATCH.findall(joined)), *self.cjk_ids(joined)]
            flat, owner = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
            order = np.argsort(owner, kind="stable")
            flat, owner = flat[order], owner[order]
        counts = np.bincount(owner, minlength=len(texts))
        indptr = np.concatenate(([0], np.cumsum(counts)))
        bags = csr_matrix((np.ones(len(flat), dtype=np.float32), flat, indptr),
                          shape=(len(texts), len(self.table.tokens)))
        full = np.asarray(bags @ self.table.full)
        norms = np.linalg.norm(full, axis=1, keepdims=True)
        np.divide(full, norms, out=full, where=norms > 0)
        return full


def cpu_us(fn, n: int) -> float:
    t = time.thread_time()
    fn()
    return 1e6 * (time.thread_time() - t) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    args = ap.parse_args()
    batches = captured_batches(args.size, args.batch)
    table = default_static().table
    old_static = OldStatic(table)
    table.embed([text for text, _ in batches[0]])  # the rare words' memo filled for both arms
    old_index, new_index = BM25Index(), BM25Index()
    rows: dict[str, list[float]] = {k: [] for k in ("bm25 before", "bm25 now", "static before", "static now")}
    vector_add, vectors = [], VectorIndex(table.dim)
    for n, batch in enumerate(batches):
        texts, cues = [t for t, _ in batch], [c for _, c in batch]
        arms = [("bm25 before", lambda b=batch: old_add_many(old_index, [old_terms(t, c) for t, c in b])),
                ("bm25 now", lambda t=texts, c=cues: new_index.add_texts(t, c)),
                ("static before", lambda t=texts: old_static.embed(t)),
                ("static now", lambda t=texts: table.embed(t))]
        order = arms if n % 2 == 0 else [arms[1], arms[0], arms[3], arms[2]]
        for name, fn in order:
            rows[name].append(cpu_us(fn, len(batch)))
        vecs = table.embed(texts)
        keys = np.arange(n * args.batch, n * args.batch + len(texts))
        vector_add.append(cpu_us(lambda k=keys, v=vecs: vectors.add(k, v, defer_graph=True), len(batch)))
    q = py_tokens("refund iam 403 报销系统 timed out")
    assert np.array_equal(old_index.scores(q)[0], new_index.scores(q)[0]), "the two indexes must score alike"
    print(f"{len(batches)} batches of {args.batch:,} (to {args.size:,} documents); load average "
          f"{os.getloadavg()[0]:.1f}; the calling thread's CPU µs a document, median over the batches")
    for part in ("bm25", "static"):
        before, now = rows[f"{part} before"], rows[f"{part} now"]
        ratio = statistics.median(b / a for a, b in zip(before, now, strict=True))
        print(f"  {part:<7} before {statistics.median(before):7.2f}   now {statistics.median(now):7.2f}   "
              f"ratio now/before {ratio:.2f}  (last batch {before[-1]:.2f} → {now[-1]:.2f})")
    both = [b + s for b, s in zip(rows["bm25 now"], rows["static now"], strict=True)]
    print(f"  terms + static now {statistics.median(both):.2f} µs; the vector add after it (unchanged) "
          f"{statistics.median(vector_add):.2f} µs")
    n_texts = sum(len(b) for b in batches)
    texts = [t for b in batches for t, _ in b]
    spent = statistics.median(cpu_us(lambda: table.embed(texts), 1) for _ in range(3)) / 1e6
    print(f"  static tier on these {n_texts:,} texts at once: {n_texts / spent:,.0f} texts/s of one core")


if __name__ == "__main__":
    main()
