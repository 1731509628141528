"""Where a ``perceive_many`` batch's time goes (issue 28, point 3), through the public call on
batches of 5,000 distinct structured events (en + zh, bench/api.py's generator).

    .venv/bin/python bench/ingest_profile.py                              # 20k: stage laps
    .venv/bin/python bench/ingest_profile.py --size 100000                # 100k
    .venv/bin/python bench/ingest_profile.py --profile --skip 15000       # plus a cProfile of the last batch
    .venv/bin/python bench/ingest_profile.py --embedder none              # no semantic tier (no background thread)

The calling thread's CPU time per event is printed too: on a loaded machine it moves far less
than the wall time (which counts the time the scheduler gave to other processes).

Stage laps: each stage's function is wrapped by a timer (one wrapper call per batch, so the
laps cost nothing measurable, unlike a profiler's per-call hooks, which inflate the many small
per-event functions several-fold) and the laps of the batches are summed. Stages are nested as
the code nests them; "other" is the batch's wall time no stage accounts for. The machine is
shared: the shares are what to read, the absolute milliseconds move with the load.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import os
import pstats
import random
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from hindbrain import Brain

_spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).parent / "api.py")
api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api)

LAPS: dict[str, float] = defaultdict(float)


CPU_LAPS: dict[str, float] = defaultdict(float)


def _timed(name: str, fn):
    def wrapper(*args, **kwargs):
        t, cpu = time.perf_counter(), time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            LAPS[name] += time.perf_counter() - t
            CPU_LAPS[name] += time.thread_time() - cpu
    return wrapper


def _wrap(owner, attr: str, name: str) -> None:
    setattr(owner, attr, _timed(name, getattr(owner, attr)))


def instrument(brain: Brain) -> None:
    """Wrap each stage of a perceive_many (module globals the callers look up at call time)."""
    from hindbrain.recall import index as index_mod
    from hindbrain.recall import lexical, semantic
    from hindbrain.streams import runner as runner_mod

    _wrap(brain, "_checked_perceptions", "1 validate + same-event check")
    _wrap(runner_mod, "to_messages", "2 encode (to_messages)")
    _wrap(brain.runner.log, "append", "3 log append (SQLite)")
    listeners = brain.runner.listeners
    names = {"observe": "4 index observe", "Refreezer": "6 refreeze (gc)"}
    for n, listener in enumerate(listeners):
        owner = getattr(listener, "__self__", None)
        label = (names["Refreezer"] if type(listener).__name__ == "Refreezer" else
                 "6b heap trim" if type(listener).__name__ == "HeapTrimmer" else
                 "5 learner observe" if owner is brain.learning else names["observe"])
        listeners[n] = _timed(label, listener)
    _wrap(index_mod, "indexables", "4a   event_doc (cues, quarantine)")
    _wrap(index_mod.TenantIndex, "add_many", "4b   TenantIndex.add_many")
    if hasattr(lexical.BM25Index, "add_texts"):  # the batch tokenised and numbered in C (issue 28)
        _wrap(lexical.BM25Index, "add_texts", "4b1    bm25 add_texts (tokens, numbering, segment)")
    else:  # an older checkout measured by this script: tokens before the call, the numbering in it
        _wrap(lexical.BM25Index, "add_many", "4b1    bm25 add_many")
    _wrap(semantic.SemanticIndex, "add", "4c   semantic add (static tier)")
    _wrap(semantic.SemanticIndex, "_add_static", "4c1    static embed + vector add")
    _wrap(runner_mod, "project_batch", "7 project rows")
    _wrap(runner_mod, "insert_batch", "8 chDB insert")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=5_000)
    ap.add_argument("--profile", action="store_true", help="also cProfile the batches from --skip on")
    ap.add_argument("--skip", type=int, default=15_000)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--out", default=None, help="save the raw profile here (pstats)")
    ap.add_argument("--embedder", default=None, help="Brain.open's embedder (default: the brain's default; "
                    "'none': no semantic tier, so no background thread competes for the interpreter)")
    args = ap.parse_args()
    rng = random.Random(args.size)
    events = [api.event(rng, n) for n in range(args.size)]
    profile = cProfile.Profile()
    rates, cpus, wall = [], [], 0.0
    kw = {"embedder": args.embedder} if args.embedder else {}
    with tempfile.TemporaryDirectory(prefix="hindbrain-ingest-") as home, Brain.open(home, **kw) as brain:
        semantic = brain.index.semantic
        if semantic is not None and semantic.static is not None:
            # the static table loads once a process (~0.3-1 s: the vectors mapped back to the model's
            # width); outside the laps, so the stage reads as what each event costs
            semantic.static.embed_passages(["warm-up"])
        instrument(brain)
        for start in range(0, args.size, args.batch):
            batch = events[start:start + args.batch]
            profiled = args.profile and start >= args.skip
            if profiled:
                profile.enable()
            t, cpu = time.perf_counter(), time.thread_time()
            brain.perceive_many(batch)
            spent = time.perf_counter() - t
            cpus.append((time.thread_time() - cpu) / len(batch))
            if profiled:
                profile.disable()
            else:
                wall += spent
            rates.append(len(batch) / spent)
    laps = dict(LAPS)
    print(f"perceive_many: median {statistics.median(rates):,.0f} ev/s over {len(rates)} batches of {args.batch:,} "
          f"(to {args.size:,} events); load average {os.getloadavg()[0]:.1f}")
    # the calling thread's CPU time: what a batch costs whatever the machine's load took from its wall time
    print(f"perceive_many CPU (calling thread): median {1e6 * statistics.median(cpus):,.1f} us/event "
          f"= {1 / statistics.median(cpus):,.0f} ev/s of one core")
    unprofiled = sum(1 for s in range(0, args.size, args.batch) if not (args.profile and s >= args.skip))
    if not args.profile:
        per_event = 1e6 / args.size
        top = ("1 ", "2 ", "3 ", "4 ", "5 ", "6 ", "7 ", "8 ")
        print(f"{'stage':<36} {'ms/batch':>9} {'us/event':>9} {'share':>6} {'cpu us/ev':>10}")
        for name in sorted(laps):
            print(f"{name:<36} {1000 * laps[name] / unprofiled:>9.1f} {per_event * laps[name]:>9.1f} "
                  f"{100 * laps[name] / wall:>5.1f}% {per_event * CPU_LAPS[name]:>10.1f}")
        other = wall - sum(v for k, v in laps.items() if k.startswith(top))
        print(f"{'other':<36} {1000 * other / unprofiled:>9.1f} {per_event * other:>9.1f} {100 * other / wall:>5.1f}%")
        print(f"{'total':<36} {1000 * wall / unprofiled:>9.1f} {per_event * wall:>9.1f}")
    else:
        if args.out:
            profile.dump_stats(args.out)
        stats = pstats.Stats(profile)
        stats.sort_stats("cumulative").print_stats(args.top)
        stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
