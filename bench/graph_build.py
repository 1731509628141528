"""The vector graph's build: rate with 1 and 2 threads, its recall@10, what it leaves unreachable.

    python bench/graph_build.py --codes HOME/cache/vectors/gen-*/t0 [--size 100000] [--rounds 2] \
        [--threads 1,2] [--connectivity 32] [--queries 200]

Reads a brain's saved int8 codes (``t0.codes`` / ``t0.state`` of a vector snapshot: real
embeddings of real events; ``bench/served.py --home DIR --size N`` builds one) or, without
``--codes``, clustered synthetic vectors. The last ``--queries`` vectors are held out as queries.
Each round builds the graph once per arm (thread count x connectivity; the arms' order rotates
every round, the machine being shared) through ``VectorIndex``: every vector added first (all on
the tail, as after a bulk import), then ``build_graph(threads=...)`` times the insertion, wall
and CPU of the whole process, and the growth of the process's anonymous resident memory over
the build (``RssAnon``: usearch's graph tape and arrays; clean for a run's first build only, so
run one arm a process to compare connectivities: docs/speed.md, resident bytes, round
thirteen). Then recall@10 of the graph against an exact scan of the same int8 codes (the
graph's own loss, quantisation excluded), bytes a vector (``memory_bytes``), and the nodes no
search can reach (``VectorIndex.check_saved`` after a save: ``recall.graph_check``, and the
save's and check's time). Prints each arm's medians and the ratio to the first arm.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from hindbrain.recall.vectors import VectorIndex, _scan_rows, quantize


def load_codes(stem: Path | None, size: int, dim: int = 512) -> np.ndarray:
    """``size`` int8 code rows: the present keys of a snapshot's ``stem.codes``, or synthetic."""
    if stem is None:
        rng = np.random.default_rng(7)
        centres = rng.normal(size=(2000, dim)).astype(np.float32)
        x = centres[rng.integers(0, len(centres), size)] + rng.normal(size=(size, dim)).astype(np.float32) * 0.9
        return quantize(x)
    state = np.fromfile(stem.with_suffix(".state"), dtype=np.int8)
    codes = np.memmap(stem.with_suffix(".codes"), dtype=np.int8, mode="r").reshape(-1, dim)
    keys = np.flatnonzero(state != 0)[:size]
    if len(keys) < size:
        raise SystemExit(f"{stem}: {len(keys)} vectors, fewer than --size {size}")
    return np.ascontiguousarray(codes[keys])


def anonymous_bytes() -> int:
    """This process's anonymous resident memory (``/proc/self/status`` ``RssAnon``), 0 where there is none."""
    try:
        with open("/proc/self/status") as f:
            return next((int(line.split()[1]) * 1024 for line in f if line.startswith("RssAnon:")), 0)
    except OSError:
        return 0


def one_build(codes: np.ndarray, queries: np.ndarray, truth: list[set], threads: int, connectivity: int) -> dict:
    index = VectorIndex(codes.shape[1], exact_limit=0, connectivity=connectivity)  # the graph at any size
    for start in range(0, len(codes), 5000):
        index.add(np.arange(start, min(len(codes), start + 5000)), codes[start : start + 5000].astype(np.float32),
                  defer_graph=True)
    wall, cpu, anon = time.perf_counter(), time.process_time(), anonymous_bytes()
    index.build_graph(threads=threads)
    wall, cpu, anon = time.perf_counter() - wall, time.process_time() - cpu, anonymous_bytes() - anon
    hits = sum(len(set(index.search(q, 10)[0].tolist()) & t) for q, t in zip(queries, truth, strict=True))
    with tempfile.TemporaryDirectory() as tmp:
        checked = time.perf_counter()
        index.save(Path(tmp) / "t0")
        index.check_saved(Path(tmp) / "t0")
        saved = time.perf_counter() - checked
    return {"wall": wall, "cpu": cpu, "recall": hits / (10 * len(queries)), "bytes": index.memory_bytes() / len(codes),
            "anon": anon / len(codes),
            "lost": index.requeued, "save": saved}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--codes", type=Path, help="a snapshot's tenant stem (…/gen-*/t0); synthetic without")
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--connectivity", default="32")
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    rows = load_codes(args.codes, args.size + args.queries)
    codes, queries = rows[: args.size], rows[args.size :].astype(np.float32)
    truth = [set(_scan_rows(codes, quantize(q)[0], 10)[0].tolist()) for q in queries]
    arms = [(t, c) for c in map(int, args.connectivity.split(",")) for t in map(int, args.threads.split(","))]
    results: dict[tuple[int, int], list[dict]] = {arm: [] for arm in arms}
    for r in range(args.rounds):
        for arm in arms[r % len(arms):] + arms[: r % len(arms)]:
            got = one_build(codes, queries, truth, *arm)
            results[arm].append(got)
            print(f"round {r + 1} threads {arm[0]} M{arm[1]}: build {got['wall']:.1f} s wall, {got['cpu']:.1f} s CPU, "
                  f"recall@10 {got['recall']:.3f}, {got['bytes']:.0f} B/vector, anonymous +{got['anon']:.0f} B/vector, "
                  f"unreachable {got['lost']}, "
                  f"save+check {got['save']:.2f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    base = None
    for arm in arms:
        med = {k: statistics.median(g[k] for g in results[arm]) for k in results[arm][0]}
        base = base or med
        print(f"threads {arm[0]} M{arm[1]}, {args.size:,} vectors, median of {args.rounds}: "
              f"{args.size / med['wall']:,.0f} vectors/s wall (x{base['wall'] / med['wall']:.2f}), "
              f"{args.size / med['cpu']:,.0f} vectors/s of CPU (x{base['cpu'] / med['cpu']:.2f}), "
              f"recall@10 {med['recall']:.3f}, {med['bytes']:.0f} B/vector, unreachable {med['lost']:.0f}")


if __name__ == "__main__":
    main()
