"""``bench/api.py``'s two resident rows (issue 28, point 3) in minutes, not the neural tier's hour on a busy machine.

    .venv/bin/python bench/resident.py --vectors /tmp/homes/h100k/cache/embeddings.sqlite
    .venv/bin/python bench/resident.py --arms base=/path/python,branch=.venv/bin/python --vectors ...

The same sequence as ``bench/api.py --sizes 100000 --no-http --workers '' --lag-seconds 0`` up to its
``owner resident, settled`` row (its events, the warm-up before the baseline, ``perceive_many`` in batches
of 5,000, the fast tier's checks, 100 recalls of agent-1 during the backlog, then every vector neural and
in the graph), with one difference: the fresh home's embedding cache is a copy of ``--vectors``, a cache
holding the neural vectors of these events (``bench/served.py --size 100000`` builds one), so the neural
tier is made of cache hits rather than the workers' ~200 s of CPU (which a niced worker on a loaded 2-core
machine does not get in an hour). What that leaves out: the workers' batches arriving (their pickled
arrays, ``RecentVectors``), so the settled row here can be a little lower than api.py's. Prints the import
and settled rows (RSS growth per event, anonymous part), ``perceive_many``'s rate and the recall p50 / p99
during the backlog, and after settling, 300 recalls' p50 / p99 as api.py measures them.

``--arms name=python,...`` runs each arm in its own process (that interpreter's ``hindbrain``), one after
the other in the order given, ``--rounds`` times, from the current directory: run it from a directory
outside both checkouts (``python -m``-style path mixing otherwise, docs/speed.md).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import TENANT, event, fast_tier, ms, pct, queries, resident_bytes, rss_split, timed_recalls  # noqa: E402


def per_event(since: tuple[int, dict[str, int]], size: int) -> str:
    total, split = resident_bytes() - since[0], rss_split()
    return f"{total / size:,.0f} B/event (anonymous {(split['anon'] - since[1]['anon']) / size:,.0f})"


def lexical_kept(brain) -> int:
    """Bytes the tenants' lexical indexes keep of common terms' parts (whole, and over recalls' masks): a
    dense row or postings each (``recall.lexical``; an older checkout's rows are ``(row, idf)`` pairs)."""

    def size(part) -> int:
        return part.nbytes if hasattr(part, "nbytes") else part[0].nbytes

    return sum(size(part) for tenant in list(brain.index.tenants.values())
               for kept in (tenant.bm25._rows, tenant.bm25._view_rows) for part in list(kept.values()))


def measure(size: int, vectors: Path) -> None:
    from hindbrain import Brain

    rng = random.Random(size)
    events = [event(rng, n) for n in range(size)]
    with tempfile.TemporaryDirectory(prefix="hindbrain-resident-") as home:
        (Path(home) / "cache").mkdir()
        shutil.copyfile(vectors, Path(home) / "cache" / "embeddings.sqlite")
        with Brain.open(home) as brain:
            brain.perceive(tenant=TENANT, agent="agent-0", text="warm-up")
            brain.recall(tenant=TENANT, agent="agent-0", query="warm-up")
            since = resident_bytes(), rss_split()
            t0 = time.perf_counter()
            for start in range(0, size, 5_000):
                brain.perceive_many(events[start:start + 5_000])
            print(f"  perceive_many {size / (time.perf_counter() - t0):,.0f} ev/s", flush=True)
            print(f"  owner resident {per_event(since, size)}", flush=True)
            semantic = brain.index.semantic
            fast_tier(brain, events)
            during = timed_recalls(brain, queries(rng, 100))
            print(f"  recall during the backlog p50 {ms(statistics.median(during))} p99 {ms(pct(during, .99))}")
            t = time.perf_counter()
            semantic.wait()
            while semantic.unbuilt():
                time.sleep(0.2)
            neural = semantic.neural_count(TENANT)
            print(f"  settled {time.perf_counter() - t:.0f} s later ({neural:,} of {size:,} neural)")
            row = per_event(since, size)
            print(f"  owner resident, settled {row}; lexical parts kept {lexical_kept(brain) / size:,.0f} B/event, "
                  f"vector indexes {semantic.memory_bytes() / size:,.0f}", flush=True)
            qs = queries(rng, 300)
            timed_recalls(brain, qs[:20])
            spent = timed_recalls(brain, qs)
            print(f"  recall p50 {ms(statistics.median(spent))} p99 {ms(pct(spent, .99))}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--vectors", type=Path, required=True, help="an embedding cache holding these events' vectors")
    ap.add_argument("--arms", default="", help="name=python,... : each arm in its own process")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    if not args.vectors.is_file():
        raise SystemExit(f"--vectors: no such file {args.vectors}")
    if not args.arms:
        measure(args.size, args.vectors)
        return
    arms = [part.split("=", 1) for part in args.arms.split(",")]
    for n in range(args.rounds):
        for name, python in arms:
            load = Path("/proc/loadavg").read_text().split()[0]
            print(f"round {n + 1}, {name} ({time.strftime('%H:%M:%S')}, load {load})", flush=True)
            subprocess.run([python, __file__, "--size", str(args.size), "--vectors", str(args.vectors)], check=True)


if __name__ == "__main__":
    main()
