"""What a code scan costs over mapped codes against codes read into memory (issue 28, round ten).

    python bench/mapped_gather.py --codes HOME/cache/vectors/gen-*/t0.codes [--keys 3000] [--reps 400]

A reopened owner maps its snapshot's int8 codes copy-on-write instead of reading them
(``recall.vectors._map_codes``). Those are 4 kB file pages. Codes read with ``np.fromfile`` are
anonymous memory, which numpy asks to back with transparent huge pages (THP ``madvise``). A
masked search scores the allowed keys' rows in place or gathers them (``VectorIndex._scan``).
This script times both ways on the same file, in one process, with the arms alternated, after
every page is touched once. The ways are: ``--keys`` random rows gathered, then scored
(``_code_sims``); and one whole block scored where it lies. It prints the thread CPU time
p50/p99 of each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from hindbrain.recall.vectors import _BLOCK, _code_sims


def gathered(codes: np.ndarray, keys: np.ndarray, query: np.ndarray) -> None:
    for b in range(len(codes) // _BLOCK):
        part = keys[(keys >= b * _BLOCK) & (keys < (b + 1) * _BLOCK)]
        if len(part):
            _code_sims(codes[b * _BLOCK : (b + 1) * _BLOCK][part - b * _BLOCK], query)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--codes", required=True, help="a snapshot's t*.codes file (512-d int8 rows)")
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--keys", type=int, default=3000)
    ap.add_argument("--reps", type=int, default=400)
    args = ap.parse_args()
    arms = {"read": np.fromfile(args.codes, dtype=np.int8).reshape(-1, args.dim),
            "mapped": np.asarray(np.memmap(args.codes, dtype=np.int8, mode="c")).reshape(-1, args.dim)}
    for codes in arms.values():
        codes.sum()  # every page touched once: the page faults are not what is timed
    rng = np.random.default_rng(1)
    query = arms["read"][5].copy()
    n = int(np.count_nonzero(arms["read"].any(axis=1)))
    spent = {(name, way): [] for name in arms for way in ("gather", "block")}
    names = list(arms)
    for rep in range(args.reps):
        keys = np.sort(rng.choice(n, args.keys, replace=False))
        for name in names if rep % 2 else names[::-1]:
            codes = arms[name]
            t = time.thread_time()
            gathered(codes, keys, query)
            spent[name, "gather"].append(time.thread_time() - t)
            t = time.thread_time()
            _code_sims(codes[:_BLOCK], query)
            spent[name, "block"].append(time.thread_time() - t)
    print(f"{n:,} codes, {args.keys:,} random keys a gather, {args.reps} reps (load {os.getloadavg()[0]:.1f})")
    for (name, way), v in spent.items():
        v = sorted(v)
        base = statistics.median(spent["read", way])
        print(f"  {name:>6} {way:>6}: CPU p50 {1e3 * statistics.median(v):.3f} ms, p99 "
              f"{1e3 * v[int(0.99 * len(v))]:.3f} ms (x{statistics.median(v) / base:.2f} of read)")


if __name__ == "__main__":
    main()
