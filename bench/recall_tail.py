"""Recall latency at a size, and what the slowest 1 % of recalls have in common.

    python bench/recall_tail.py --home DIR [--size 100000] [--recalls 300] [--runs 2]

The brain in ``--home`` holds ``bench/api.py``'s events (built there once, every vector neural,
by ``bench/served.py``'s ``build``). Times ``--recalls`` of api.py's mixed queries (agent-1,
defaults) ``--runs`` times, after 20 warm-up recalls, and prints per run p50/p90/p99 of the
wall time and of the calling thread's CPU time (on a shared machine the wall time also counts
the time other processes held the core; the CPU time does not). Then, for the slowest 1 % by
wall time: the query's form, wall vs CPU, the garbage collections that ran inside it (and their
generation and time, from ``gc.callbacks``) and the engine's slowest stages (``timings_ms``).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent


sys.path.insert(0, str(HERE))
import served  # noqa: E402

api = served.api  # the api.py served.py loaded: its events and queries


def form(q: dict) -> str:
    if "situation" in q:
        return f"situation ({'zh' if not q['situation']['actual'].isascii() else 'en'} actual)"
    return "zh question" if not q["query"].isascii() else "en question"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", required=True)
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--recalls", type=int, default=300)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    home = Path(args.home)
    if not (home / "log.sqlite").exists():
        served.build(home, args.size)
    from hindbrain import Brain

    collections: list[tuple[float, int, float]] = []  # (start, generation, seconds)
    began: dict[str, float] = {}

    def watch(phase: str, info: dict) -> None:
        if phase == "start":
            began["t"] = time.perf_counter()
        else:
            collections.append((began["t"], info["generation"], time.perf_counter() - began["t"]))

    with Brain.open(home) as brain:
        served.serve.warm(brain)
        qs = api.queries(random.Random(args.seed), args.recalls + 20)
        api.timed_recalls(brain, qs[:20])
        gc.callbacks.append(watch)
        for run in range(args.runs):
            rows = []
            for q in qs[20:]:
                collections.clear()
                t, c = time.perf_counter(), time.thread_time()
                pack = brain.recall(tenant=api.TENANT, agent="agent-1", **q)
                wall, cpu = time.perf_counter() - t, time.thread_time() - c
                rows.append((wall, cpu, q, [(g, s) for _, g, s in collections], pack.timings_ms))
            walls, cpus = [r[0] for r in rows], [r[1] for r in rows]
            print(f"run {run + 1}: {len(rows)} recalls, wall p50 {api.ms(statistics.median(walls), 2)}, "
                  f"p90 {api.ms(api.pct(walls, .9), 2)}, p99 {api.ms(api.pct(walls, .99), 2)}; CPU p50 "
                  f"{api.ms(statistics.median(cpus), 2)}, p90 {api.ms(api.pct(cpus, .9), 2)}, p99 "
                  f"{api.ms(api.pct(cpus, .99), 2)} (load {os.getloadavg()[0]:.1f})")
            by_form: dict[str, list[float]] = {}
            for _, cpu, q, _, _ in rows:
                by_form.setdefault(form(q), []).append(cpu)
            print("  CPU p50 / p99 by form: " + "; ".join(
                f"{f} {api.ms(statistics.median(v), 2)} / {api.ms(api.pct(v, .99), 2)} (n={len(v)})"
                for f, v in sorted(by_form.items())))
            gcs = [s for r in rows for _, s in r[3]]
            print(f"  collections inside recalls: {len(gcs)}, {api.ms(sum(gcs), 2)} in all, the longest "
                  f"{api.ms(max(gcs, default=0), 2)}")
            for wall, cpu, q, gcs, laps in sorted(rows, key=lambda r: -r[0])[:max(3, len(rows) // 100)]:
                top = ", ".join(f"{k} {v:.1f}" for k, v in sorted(laps.items(), key=lambda kv: -kv[1])[:3])
                print(f"  slow: wall {api.ms(wall, 1)}, CPU {api.ms(cpu, 1)}, {form(q)}; gc "
                      f"{[(g, round(s * 1000, 1)) for g, s in gcs]}; stages ms: {top}")
        gc.callbacks.remove(watch)


if __name__ == "__main__":
    main()
