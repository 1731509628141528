"""A BM25 segment from a batch's term numbers: numpy's sorted keys (``_Segment.py_segment``) against the
counting sort in C (``_Segment.of_documents``), in one process (issue 28, ingest round nine). The batches
are what ``BM25Index.add_texts`` receives from ``perceive_many`` on bench/api.py's events (each indexed text
with its cue terms, numbered by ``_scan.term_ids``: ``batch_term_ids``); arms alternated, the calling thread's CPU.

    .venv/bin/python bench/bm25_segment.py                 # 100k events, batches of 5,000, 3 rounds
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import random
import time
from pathlib import Path

import numpy as np

from hindbrain.brain import _perception, perceived
from hindbrain.recall import _scan
from hindbrain.recall.cues import indexed_terms_many
from hindbrain.recall.event_documents import event_texts
from hindbrain.recall.lexical import _Segment

_spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).parent / "api.py")
api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api)


def batch_term_ids(size: int, batch: int) -> list[tuple[np.ndarray, np.ndarray, int, int]]:
    """``perceive_many``'s batches of bench/api.py's events as ``add_texts`` numbers them (each event's indexed
    text with its cue terms, ``_scan.term_ids`` over a vocabulary growing batch by batch): per batch its term
    numbers, each document's count of them, its first document's number and the vocabulary's size after it
    (``_Segment.of_documents``' arguments). bench/bm25_merge.py makes its segments from these too."""
    rng = random.Random(3)
    records = [_perception(perceived(api.event(rng, n))) for n in range(size)]
    vocab: dict[str, int] = {}
    out = []
    for at in range(0, size, batch):
        part = records[at : at + batch]
        cues = [list(t) for t in indexed_terms_many(part, [r["envelope"]["ts_us"] for r in part])]
        flat, lengths = _scan.term_ids(event_texts(part), cues, vocab)
        out.append((np.frombuffer(flat, dtype=np.int64), np.frombuffer(lengths, dtype=np.int64), at, len(vocab)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    batches = batch_term_ids(args.size, args.batch)
    n_terms = batches[-1][3]
    arms = {"np.unique (py_segment)": lambda f, ls, first, n: _Segment.py_segment(f, ls, first),
            "counting sort (C)": _Segment.of_documents}
    spent = dict.fromkeys(arms, 0.0)
    gc.disable()  # as under perceive_many (streams.gc_pause)
    for n in range(args.rounds):
        for batch in batches:
            for name in list(arms)[:: 1 if n % 2 else -1]:
                cpu = time.thread_time()
                arms[name](*batch)
                spent[name] += time.thread_time() - cpu
    gc.enable()
    keys = sum(len(f) for f, *_ in batches) / args.size
    print(f"{args.size:,} documents, {keys:.1f} term numbers a document, {n_terms:,} terms")
    for name, seconds in spent.items():
        print(f"  {name:<24} {seconds / args.rounds / args.size * 1e6:.2f} us a document (CPU)")


if __name__ == "__main__":
    main()
