"""The lexical (BM25) stage of recall, A/B in one process: this checkout's ``recall/lexical.py``
against others, on the calls a real brain's recalls make.

    python bench/lexical_ab.py --home DIR --arms base=/path/to/recall/lexical.py [--recalls 200]

Opens the brain in ``--home`` (built by ``bench/recall_tail.py`` / ``bench/served.py``), runs
``--recalls`` of ``bench/api.py``'s mixed queries (agent-1, defaults) and records each call of the
engine's lexical stage (its index, query terms, mask, fetch). Then replays every call on each arm
(an index of the arm's class over the same postings, arms interleaved, order alternating) and
prints per arm the calling thread's CPU time p50/p90/p99 of ``BM25Index.scores`` plus the
engine's mask and top-``fetch`` cut, the ratio of medians against this checkout, and whether
every arm gave the same scores, bit for bit, as this checkout, and the bytes of dense term rows
each arm holds at the end.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import api  # noqa: E402


def arm_class(name: str, path: str):
    """``BM25Index`` from another ``lexical.py`` (it imports this checkout's ``hindbrain``)."""
    spec = importlib.util.spec_from_file_location(f"lexical_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BM25Index


def over(cls, index):
    """An index of ``cls`` over ``index``'s postings (shared arrays), with its own caches and lock."""
    fresh = cls()
    fresh.__dict__.update({k: v for k, v in index.__dict__.items() if k in POSTINGS})
    return fresh


POSTINGS = ("_terms", "_docs", "_tfs", "_settled", "_tails", "_segments", "_base", "_lengths", "_n", "_total_length")


def cut(scores: np.ndarray, mask, fetch: int) -> np.ndarray:
    """``RecallEngine._lexical``'s mask and top-``fetch`` selection."""
    if mask is not None:
        np.multiply(scores, mask[: len(scores)], out=scores)
    hits = np.flatnonzero(scores > 0)
    if len(hits) > fetch:
        hits = hits[np.argpartition(-scores[hits], fetch - 1)[:fetch]]
    return hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", required=True)
    ap.add_argument("--arms", default="", help="name=path/to/lexical.py,...")
    ap.add_argument("--recalls", type=int, default=200)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    from hindbrain import Brain
    from hindbrain.recall.engine import RecallEngine
    from hindbrain.recall.lexical import BM25Index

    calls, masks = [], {}  # masks: one copy of each distinct mask (a 1M mask is megabytes)
    original = RecallEngine._lexical

    def recording(self, tenant, query, mask, fetch):
        if mask is not None:
            mask = masks.setdefault((str(mask.dtype), len(mask), hash(mask.tobytes())), np.array(mask, copy=True))
        calls.append((tenant.bm25, list(query.terms), mask, fetch))
        return original(self, tenant, query, mask, fetch)

    with Brain.open(args.home) as brain:
        RecallEngine._lexical = recording
        try:
            for q in api.queries(random.Random(args.seed), args.recalls):
                brain.recall(tenant=api.TENANT, agent="agent-1", **q)
        finally:
            RecallEngine._lexical = original
        arms = {"this": BM25Index}
        for spec in filter(None, args.arms.split(",")):
            name, path = spec.split("=", 1)
            arms[name] = arm_class(name, path)
        indexes = {name: {} for name in arms}
        cpu = {name: [] for name in arms}
        same = {name: True for name in arms}
        names = list(arms)
        n_docs = len(calls[0][0]) if calls else 0
        for i, (index, terms, mask, fetch) in enumerate(calls):
            results = {}
            for name in names if i % 2 == 0 else names[::-1]:
                ix = indexes[name].setdefault(id(index), over(arms[name], index))
                c = time.thread_time()
                scores, _ = ix.scores(terms)
                hits = cut(scores, mask, fetch)
                cpu[name].append(time.thread_time() - c)
                results[name] = (scores, set(hits.tolist()))
            for name in names:
                s, h = results[name]
                ref_s, ref_h = results["this"]
                kth = np.sort(ref_s[list(ref_h)])[0] if ref_h else 0.0
                same[name] &= bool(np.array_equal(s, ref_s)) and {d for d in h if s[d] > kth} == \
                    {d for d in ref_h if ref_s[d] > kth}
    print(f"{len(calls)} lexical calls over {n_docs} documents (load {os.getloadavg()[0]:.1f}, "
          f"{threading.active_count()} threads)")
    base = statistics.median(cpu["this"])
    for name in names:
        v = sorted(cpu[name])
        print(f"  {name:>6}: CPU p50 {api.ms(statistics.median(v), 2)} p90 {api.ms(api.pct(v, .9), 2)} "
              f"p99 {api.ms(api.pct(v, .99), 2)}; median / this {statistics.median(v) / base:.2f}; "
              f"scores and top ids identical to this: {same[name]}; dense rows held at the end "
              f"{rows_bytes(indexes[name].values()) / max(n_docs, 1):,.0f} B/document")


def rows_bytes(indexes) -> int:
    """Bytes of the dense term rows the indexes keep (``BM25Index._row``): a cache, bounded by
    ``ROW_BYTES``, that a recall's common terms fill."""
    return sum(row.nbytes for ix in indexes for row, _ in getattr(ix, "_rows", {}).values())


if __name__ == "__main__":
    main()
