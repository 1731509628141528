"""Hindsight's K-Means fits with OpenMP's default threads against one thread, same process.

Induction clusters a tenant's distinct situations (tens to thousands of points) for k = 2 …
max_k; each fit is milliseconds of work. On a machine whose cores are busy with other
processes, waking the OpenMP pool costs more than the fit (jobs/induction.py ``_cluster``
runs up to MINIBATCH_ABOVE points on one thread). Prints medians and the ratio.

    python bench/induction_threads.py [--points 40 400 4000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
from sklearn.cluster import KMeans
from threadpoolctl import threadpool_limits

from hindbrain.jobs.induction import _cluster


def features(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Multi-hot rows like induction's (scene | emotions | action sequence) and their weights."""
    rng = np.random.default_rng(seed)
    return (rng.random((n, 24)) > 0.75).astype(np.float32), rng.integers(1, 20, n).astype(np.float64)


def fits(x: np.ndarray, w: np.ndarray, max_k: int = 8) -> float:
    """The fit loop of ``_cluster`` as the library runs it by default (no thread limit)."""
    start = time.perf_counter()
    for k in range(2, min(max_k, len(x)) + 1):
        KMeans(k, random_state=7, n_init=4).fit_predict(x, sample_weight=w)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, nargs="+", default=[40, 400, 4000])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    for n in args.points:
        x, w = features(n)
        default, one, cluster = [], [], []
        for _ in range(args.repeats):  # interleaved, so both see the same machine
            default.append(fits(x, w))
            with threadpool_limits(1):
                one.append(fits(x, w))
            start = time.perf_counter()
            _cluster(x, w, 8, 7)
            cluster.append(time.perf_counter() - start)
        d, o, c = (statistics.median(v) * 1000 for v in (default, one, cluster))
        print(f"{n:>6} points: fits default threads {d:8.1f} ms | one thread {o:8.1f} ms ({d / o:.1f}x) | "
              f"_cluster (with silhouettes) {c:8.1f} ms")


if __name__ == "__main__":
    main()
