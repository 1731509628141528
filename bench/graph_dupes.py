"""The vector graph over many exact-duplicate codes (issue 28): build rate and search latency, A/B.

    python bench/graph_dupes.py --codes HOME/cache/vectors/gen-*/t0 [--size 1000000] \
        [--arms base=/path/to/base/recall/vectors.py] [--cap 60] [--searches 200]

Reads a brain's saved int8 codes (``t0.codes`` / ``t0.state``; a static-tier home of
``bench/api.py``'s events holds a few hundred distinct codes for 1M events). Each arm is a
``recall/vectors.py`` (this checkout's, and e.g. the base commit's, loaded from its file, so one
process and one machine load compare them). Per arm: every code added (all on the tail, as
after a bulk import), then ``build_graph`` in steps of 4,096 until built or ``--cap`` seconds of
CPU: inserts a CPU second, how many were built, the graph's nodes, ``memory_bytes`` a vector.
Then ``--searches`` searches (k=64, what a recall asks; queries are codes of the set, so every
query has exact duplicates) in the state the build reached (what a recall meets then: the
unbuilt rest is scanned exactly), without a mask and with one agent's eighth of the keys
allowed: p50 / p99 of the thread's CPU and the wall time. Prints the machine load beside them.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from graph_build import load_codes  # noqa: E402


def arm_module(name: str, path: str | None):
    if path is None:
        from hindbrain.recall import vectors
        return vectors
    spec = importlib.util.spec_from_file_location(f"vectors_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def unit_rows(codes: np.ndarray) -> np.ndarray:
    x = codes.astype(np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)


def run_arm(module, codes: np.ndarray, cap: float, searches: int) -> dict:
    n, dim = codes.shape
    index = module.VectorIndex(dim, exact_limit=100)
    for start in range(0, n, 65_536):  # absmax codes scaled to unit length quantise to themselves
        index.add(np.arange(start, min(n, start + 65_536)), unit_rows(codes[start : start + 65_536]),
                  defer_graph=True, unit=True)
    c, t = time.process_time(), time.perf_counter()
    left = index.unbuilt
    while left and time.process_time() - c < cap:
        left = index.build_graph(4096)
    cpu, wall = time.process_time() - c, time.perf_counter() - t
    built = n - left
    rng = np.random.default_rng(3)
    queries = unit_rows(codes[rng.integers(0, n, searches)])
    agent = np.zeros(n, dtype=bool)
    agent[1::8] = True
    out = {"built": built, "rate": built / max(cpu, 1e-9), "build wall": wall,
           "nodes": getattr(index, "_nodes", built), "bytes": index.memory_bytes() / n}
    for label, allowed in (("all", None), ("agent", agent)):
        cpus, walls = [], []
        for q in queries:
            c, t = time.thread_time(), time.perf_counter()
            keys, _ = index.search(q, 64, allowed)
            cpus.append(time.thread_time() - c)
            walls.append(time.perf_counter() - t)
            assert len(keys) == 64
        out[label] = (statistics.median(cpus), pct(cpus, 0.99), statistics.median(walls), pct(walls, 0.99))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--codes", type=Path, required=True, help="a snapshot's tenant stem (…/gen-*/t0)")
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--arms", default="", help="name=path/to/vectors.py,... (this checkout's runs as 'this')")
    ap.add_argument("--cap", type=float, default=60.0, help="CPU seconds an arm's build may take")
    ap.add_argument("--searches", type=int, default=200)
    args = ap.parse_args()
    codes = np.ascontiguousarray(load_codes(args.codes, args.size))
    distinct = len(np.unique(codes, axis=0)) if len(codes) <= 2_000_000 else -1
    print(f"{len(codes):,} codes, {distinct:,} distinct (load {os.getloadavg()[0]:.1f})")
    arms = [("this", None)] + [tuple(a.split("=", 1)) for a in args.arms.split(",") if a]
    for name, path in arms:
        r = run_arm(arm_module(name, path), codes, args.cap, args.searches)
        print(f"{name:6s} built {r['built']:,} in {r['build wall']:.1f} s wall ({r['rate']:,.0f} inserts a CPU s), "
              f"{r['nodes']:,} nodes, {r['bytes']:.0f} B/vector (load {os.getloadavg()[0]:.1f})")
        for label in ("all", "agent"):
            c50, c99, w50, w99 = (1000 * x for x in r[label])
            print(f"       search k=64, {label:5s}: CPU p50 {c50:.2f} ms, p99 {c99:.2f} ms; "
                  f"wall p50 {w50:.2f}, p99 {w99:.2f} ms")


if __name__ == "__main__":
    main()
