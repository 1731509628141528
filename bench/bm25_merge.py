"""BM25 segment merges: numpy's scatter (``_Segment.py_merged``) against one pass in C (``_Segment.merged``,
``_scan.merge_postings``), in one process (issue 28, round fifteen). The segments are what ``BM25Index.add_texts``
makes from ``perceive_many``'s batches of bench/api.py's events (each event's indexed text with its cue terms,
numbered by ``_scan.term_ids``, a segment by ``_scan.postings``), merged under ``add_texts``' policy (while the
newest is at least a quarter of the one before); each round replays the merges with one arm then the other
(the order alternated), the calling thread's CPU, and the two runs' segments are asserted equal.

    .venv/bin/python bench/bm25_merge.py                 # 100k events, batches of 5,000, 3 rounds
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import statistics
import time
from pathlib import Path

import numpy as np

from hindbrain.recall.lexical import _Segment

_spec = importlib.util.spec_from_file_location("bench_bm25_segment", Path(__file__).parent / "bm25_segment.py")
bm25_segment = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bm25_segment)


def batch_segments(size: int, batch: int) -> list[_Segment]:
    """Each batch's own segment, numbered as ``add_texts`` numbers a growing index's documents and terms."""
    return [_Segment.of_documents(*terms) for terms in bm25_segment.batch_term_ids(size, batch)]


def merge_all(segments: list[_Segment], merge) -> tuple[list[_Segment], float]:
    """``add_texts``' merging of the batches' segments in order with ``merge``: the segments left and the thread
    CPU seconds the merges took."""
    held: list[_Segment] = []
    spent = 0.0
    for segment in segments:
        held.append(segment)
        while len(held) >= 2 and 4 * len(held[-1].docs) >= len(held[-2].docs):
            newer = held.pop()
            cpu = time.thread_time()
            held[-1] = merge(held[-1], newer)
            spent += time.thread_time() - cpu
    return held, spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    segments = batch_segments(args.size, args.batch)
    arms = {"numpy (py_merged)": _Segment.py_merged, "C (merged)": _Segment.merged}
    spent: dict[str, list[float]] = {name: [] for name in arms}
    gc.disable()  # as under perceive_many (streams.gc_pause)
    try:
        for n in range(args.rounds):
            results = {}
            for name in list(arms)[:: 1 if n % 2 else -1]:
                results[name], seconds = merge_all(segments, arms[name])
                spent[name].append(seconds / args.size * 1e6)
            first, second = results.values()
            assert len(first) == len(second) and all(
                np.array_equal(x, y) for a, b in zip(first, second, strict=True) for x, y in zip(a, b, strict=True))
            del results, first, second
            gc.collect()
    finally:
        gc.enable()
    postings = sum(len(s.docs) for s in segments)
    print(f"{args.size:,} events in batches of {args.batch:,}, {postings / args.size:.1f} postings an event; "
          f"load average {os.getloadavg()[0]:.1f}")
    for name, series in spent.items():
        print(f"  {name:<20} median {statistics.median(series):.2f} us an event (rounds: "
              f"{', '.join(f'{x:.2f}' for x in series)})")
    base, new = (statistics.median(spent[name]) for name in arms)
    print(f"  ratio x{new / base:.2f}")


if __name__ == "__main__":
    main()
