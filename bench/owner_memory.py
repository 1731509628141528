"""What a reopened owner holds per event, private vs mapped (issue 28, point 3).

    python bench/owner_memory.py --home DIR [--recalls 200]
    python bench/owner_memory.py --home DIR --arms base=/other/.venv/bin/python,this=.venv/bin/python --runs 2

``--home`` holds ``bench/api.py``'s events with their snapshot (``bench/served.py --home DIR
--size N`` builds one); opening can write to a home, so pass a copy. Opens the owner with
``Brain.open`` and defaults, waits until its vectors are settled, runs ``--recalls`` of api.py's
query mix (so the pages a recall reads are in), and prints the growth of the process's resident
set over the open, split as ``/proc/self/status`` splits it: **anonymous** (private memory: the
process's own heap, numpy arrays, usearch's graph; what a fleet operator pays per owner) and
**file** pages (mapped snapshot files: page cache, shared with every replica mapping the same
files and reclaimable by the kernel). ``bench/api.py`` counts both (``statm``'s resident).
Then what each tenant's vector index reports holding in the process (``memory_bytes``).

``--arms name=python,...``: each arm's run in a child process with that interpreter (its own
checkout's package), on a fresh copy of ``--home`` each run, arms alternated ``--runs`` times.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import api  # noqa: E402  (the events and the query mix of record)
from api import rss_split  # noqa: E402


def run_one(home: Path, recalls: int) -> dict:
    """One reopen of ``home``: the resident growth split, per event, and the vectors' accounting."""
    before = rss_split()
    from hindbrain import Brain

    t0 = time.perf_counter()
    with Brain.open(home) as brain:
        opened = time.perf_counter() - t0
        semantic = brain.index.semantic
        while semantic is not None and (semantic.pending() or semantic.unbuilt()):
            time.sleep(0.5)
        api.timed_recalls(brain, api.queries(random.Random(5), recalls))
        after = rss_split()
        events = sum(len(t.docs) for t in brain.index.tenants.values())
        vectors = semantic.memory_bytes() if semantic is not None else 0
    return {"events": events, "open_s": opened, "vectors_B": vectors,
            **{k: after[k] - before[k] for k in after}, "load": os.getloadavg()[0]}


def show(name: str, r: dict) -> str:
    n = r["events"]
    return (f"{name}: {n:,} events, opened in {r['open_s']:.1f} s; resident growth per event: anonymous "
            f"{r['anon'] / n:,.0f} B, file {r['file'] / n:,.0f} B, shmem {r['shmem'] / n:,.0f} B; "
            f"vector indexes report {r['vectors_B'] / n:,.0f} B/event (load {r['load']:.1f})")


def arms(spec: str, home: Path, recalls: int, runs: int, scratch: str | None) -> None:
    results: dict[str, list[dict]] = {}
    pairs = [a.split("=", 1) for a in spec.split(",")]
    for run in range(runs):
        for name, python in (pairs if run % 2 == 0 else pairs[::-1]):
            with tempfile.TemporaryDirectory(prefix="owner-memory-", dir=scratch) as tmp:
                copy = Path(tmp) / "home"
                shutil.copytree(home, copy, symlinks=True)  # chDB links its tables
                done = subprocess.run([python, __file__, "--home", str(copy), "--recalls", str(recalls), "--json"],
                                      capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
            r = json.loads(done.stdout.strip().splitlines()[-1])
            results.setdefault(name, []).append(r)
            print(show(f"{name} run {run + 1}", r), flush=True)
    first = pairs[0][0]
    base = statistics.median(r["anon"] for r in results[first])
    for name, rs in results.items():
        anon = statistics.median(r["anon"] for r in rs)
        print(f"{name}: median anonymous {anon / rs[0]['events']:,.0f} B/event (x{anon / base:.2f} of {first}), "
              f"file {statistics.median(r['file'] for r in rs) / rs[0]['events']:,.0f} B/event")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", required=True, type=Path)
    ap.add_argument("--recalls", type=int, default=200)
    ap.add_argument("--arms", help="name=python,...: each arm in a child process on a copy of --home")
    ap.add_argument("--runs", type=int, default=1, help="with --arms: runs per arm, alternated")
    ap.add_argument("--scratch", help="with --arms: where the home copies go (default: the system's temp)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # a child's result, for --arms
    args = ap.parse_args()
    if args.arms:
        arms(args.arms, args.home, args.recalls, args.runs, args.scratch)
        return
    r = run_one(args.home, args.recalls)
    print(json.dumps(r) if args.json else show("owner", r))


if __name__ == "__main__":
    main()
