"""A BM25 segment from a batch's term numbers: numpy's sorted keys (``_Segment.py_segment``) against the
counting sort in C (``_Segment.of_documents``), in one process (issue 28, ingest round nine). The batches
are what ``BM25Index.add_texts`` receives from ``perceive_many`` on bench/api.py's events (each text with
its cue terms, numbered by ``_scan.term_ids``); arms alternated, the calling thread's CPU.

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
from hindbrain.recall.lexical import _Segment

_spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).parent / "api.py")
api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(3)
    records = [_perception(perceived(api.event(rng, n))) for n in range(args.size)]
    vocab: dict[str, int] = {}
    batches = []
    for at in range(0, len(records), args.batch):
        batch = records[at : at + args.batch]
        cues = [list(t) for t in indexed_terms_many(batch, [r["envelope"]["ts_us"] for r in batch])]
        flat, lengths = _scan.term_ids([r["text"] for r in batch], cues, vocab)
        batches.append((np.frombuffer(flat, dtype=np.int64), np.frombuffer(lengths, dtype=np.int64), at, len(vocab)))
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
    keys = sum(len(f) for f, *_ in batches) / len(records)
    print(f"{len(records):,} documents, {keys:.1f} term numbers a document, {len(vocab):,} terms")
    for name, seconds in spent.items():
        print(f"  {name:<24} {seconds / args.rounds / len(records) * 1e6:.2f} us a document (CPU)")


if __name__ == "__main__":
    main()
