"""BM25's segment merges with ``np.union1d`` against ``recall.sorted_sets.union`` (issue 28, ingest round
nine), in one process: two ``BM25Index``es grown side by side over bench/api.py's event texts in batches,
one uniting the vocabularies with numpy's (a hash table since numpy 2.3), one with the sort; arms
alternated batch by batch, the calling thread's CPU per batch; the segments compared at the end.

    .venv/bin/python bench/bm25_union.py                  # 100k texts, batches of 5,000
    .venv/bin/python bench/bm25_union.py --size 20000
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import random
import statistics
import time
from pathlib import Path

import numpy as np

from hindbrain.recall import lexical, sorted_sets

_spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).parent / "api.py")
api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    args = ap.parse_args()
    rng = random.Random(3)
    texts = [api.event(rng, n)["text"] for n in range(args.size)]
    arms = [("np.union1d", lexical.BM25Index(), np.union1d),
            ("sorted_sets.union", lexical.BM25Index(), sorted_sets.union)]
    spent: dict[str, list[float]] = {name: [] for name, _, _ in arms}
    gc.disable()  # as under perceive_many (streams.gc_pause)
    try:
        for n, at in enumerate(range(0, len(texts), args.batch)):
            for name, index, union in arms[:: 1 if n % 2 else -1]:
                lexical.sorted_sets.union = union  # what _Segment.merged calls
                cpu = time.thread_time()
                index.add_texts(texts[at : at + args.batch])
                spent[name].append(time.thread_time() - cpu)
    finally:
        lexical.sorted_sets.union = sorted_sets.union
        gc.enable()
    for name, laps in spent.items():
        print(f"{name:<18} {sum(laps) / len(texts) * 1e6:6.2f} us a document (CPU); median batch "
              f"{statistics.median(laps) * 1e3:.1f} ms, slowest {max(laps) * 1e3:.1f} ms")
    ours, theirs = arms[0][1]._segments, arms[1][1]._segments
    same = len(ours) == len(theirs) and all(
        np.array_equal(a.terms, b.terms) and np.array_equal(a.starts, b.starts) and np.array_equal(a.docs, b.docs)
        and np.array_equal(a.tfs, b.tfs) for a, b in zip(ours, theirs, strict=True))
    print(f"segments equal: {same} ({len(ours)} segments)")


if __name__ == "__main__":
    main()
