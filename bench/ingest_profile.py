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
the code nests them. A lap is kept apart by the thread that ran it: the views' projection (7,
8) runs on the runner's projector thread (``streams.runner``) except when the caller projects
inline, and its wall overlaps the caller's, so "other" is the *calling thread's* wall that none
of its own stages accounts for (it used to subtract the projector's laps from the caller's wall).

Each lap's wall is split three ways (issue 28, round thirteen): the thread's CPU time, its wait
on the run queue (runnable, no core free: ``/proc/thread-self/schedstat``, the machine's load
and this process's other threads and children), and the rest, "blocked": asleep while not
runnable — waiting for the interpreter lock, a lock, chDB's threads or the disk. The embedder
workers' CPU (child processes) and each of this process's threads' CPU are printed too: what
competes with the caller for two cores. The machine is shared: CPU and the split are what to
read, the absolute wall moves with the load.

The rate is printed two ways: the median batch's (this script's historical figure) and the
whole run's (events / total wall: how ``bench/api.py`` counts ``perceive_many``), with the
first and second half of the run apart (what the index's growth costs).
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
import threading
import time
from collections import defaultdict
from pathlib import Path

from hindbrain import Brain

_spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).parent / "api.py")
api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api)

CALLER = threading.get_ident()  # the thread that calls perceive_many
BACKGROUND = " [background]"  # suffix of a stage's laps run on another thread (the projector)
# (stage name + thread suffix) -> [wall, cpu, run-queue wait] seconds, summed over the laps
LAPS: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])


def run_queue_s() -> float:
    """Seconds this thread has waited on a run queue (runnable, no core given), or 0.0 where the
    kernel does not say (``/proc/thread-self/schedstat``: Linux with schedstats)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _timed(name: str, fn):
    def wrapper(*args, **kwargs):
        t, cpu, queued = time.perf_counter(), time.thread_time(), run_queue_s()
        try:
            return fn(*args, **kwargs)
        finally:
            lap = LAPS[name if threading.get_ident() == CALLER else name + BACKGROUND]
            lap[0] += time.perf_counter() - t
            lap[1] += time.thread_time() - cpu
            lap[2] += run_queue_s() - queued
    return wrapper


def threads_cpu_s() -> dict[str, float]:
    """CPU seconds of each of this process's threads (Linux ``/proc``), by ``name:tid``."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/self/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        out[f"{name}:{tid}"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def children_cpu_s() -> float:
    """CPU seconds of this process's live children (the embedder workers), Linux ``/proc``."""
    total, me = 0.0, os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


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
    if hasattr(index_mod.TenantIndex, "add_events"):  # the batch's events as columns (issue 28, round fourteen)
        _wrap(index_mod.TenantIndex, "add_events", "4b   TenantIndex.add_many")
    if hasattr(lexical.BM25Index, "add_texts"):  # the batch tokenised and numbered in C (issue 28)
        _wrap(lexical.BM25Index, "add_texts", "4b1    bm25 add_texts (tokens, numbering, segment)")
    else:  # an older checkout measured by this script: tokens before the call, the numbering in it
        _wrap(lexical.BM25Index, "add_many", "4b1    bm25 add_many")
    _wrap(semantic.SemanticIndex, "add", "4c   semantic add (static tier)")
    _wrap(semantic.SemanticIndex, "_add_static", "4c1    static embed + vector add")
    _wrap(runner_mod, "project_batch", "7 project rows")
    if hasattr(runner_mod, "project_perceptions"):  # the perceptions' rows as columns (issue 28, round fifteen)
        _wrap(runner_mod, "project_perceptions", "7 project rows")
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
    ap.add_argument("--api-warm-up", action="store_true", help="warm up as bench/api.py does before its clock (one "
                    "perceive, one recall: the embed worker, the query model and the views' first parts started)")
    args = ap.parse_args()
    rng = random.Random(args.size)
    events = [api.event(rng, n) for n in range(args.size)]
    profile = cProfile.Profile()
    rates, cpus, walls, queued = [], [], [], []
    kw = {"embedder": args.embedder} if args.embedder else {}
    with tempfile.TemporaryDirectory(prefix="hindbrain-ingest-") as home, Brain.open(home, **kw) as brain:
        semantic = brain.index.semantic
        if semantic is not None and semantic.static is not None:
            # the static table loads once a process (~0.3-1 s: the vectors mapped back to the model's
            # width); outside the laps, so the stage reads as what each event costs
            semantic.static.embed_passages(["warm-up"])
        if args.api_warm_up:
            brain.perceive(tenant=api.TENANT, agent="agent-0", text="warm-up")
            brain.recall(tenant=api.TENANT, agent="agent-0", query="warm-up")
        instrument(brain)
        threads0, children0 = threads_cpu_s(), children_cpu_s()
        for start in range(0, args.size, args.batch):
            batch = events[start:start + args.batch]
            profiled = args.profile and start >= args.skip
            if profiled:
                profile.enable()
            t, cpu, q = time.perf_counter(), time.thread_time(), run_queue_s()
            brain.perceive_many(batch)
            spent = time.perf_counter() - t
            cpus.append((time.thread_time() - cpu) / len(batch))
            if profiled:
                profile.disable()
            else:
                walls.append(spent)
                queued.append(run_queue_s() - q)
            rates.append(len(batch) / spent)
        threads1, children1 = threads_cpu_s(), children_cpu_s()
    print(f"perceive_many: median {statistics.median(rates):,.0f} ev/s over {len(rates)} batches of {args.batch:,} "
          f"(to {args.size:,} events); load average {os.getloadavg()[0]:.1f}")
    # the calling thread's CPU time: what a batch costs whatever the machine's load took from its wall time
    print(f"perceive_many CPU (calling thread): median {1e6 * statistics.median(cpus):,.1f} us/event "
          f"= {1 / statistics.median(cpus):,.0f} ev/s of one core; mean {1e6 * statistics.fmean(cpus):,.1f}")
    if args.profile:
        if args.out:
            profile.dump_stats(args.out)
        stats = pstats.Stats(profile)
        stats.sort_stats("cumulative").print_stats(args.top)
        stats.sort_stats("tottime").print_stats(args.top)
        return
    half = len(walls) // 2
    print(f"perceive_many whole run: {args.size / sum(walls):,.0f} ev/s (events / total wall, as bench/api.py counts; "
          f"first half {half * args.batch / sum(walls[:half]):,.0f}, second half "
          f"{(len(walls) - half) * args.batch / sum(walls[half:]):,.0f})")
    print_stages(args.size, sum(walls), sum(cpus) * args.batch, sum(queued))
    per_event = 1e6 / args.size
    others = {k: threads1[k] - threads0.get(k, 0.0) for k in threads1}
    busy = ", ".join(f"{k} {per_event * v:.1f}" for k, v in sorted(others.items(), key=lambda kv: -kv[1])[:4])
    print(f"CPU us/event beside: embedder workers (children) {per_event * (children1 - children0):.1f}; "
          f"busiest threads of this process: {busy}")


def print_stages(size: int, wall: float, cpu: float, queued: float) -> None:
    """The stage table: each stage's wall split into CPU, run-queue wait and blocked, per event,
    and "other", the calling thread's wall outside its own top-level stages, split the same way."""
    per_event = 1e6 / size
    top = ("1 ", "2 ", "3 ", "4 ", "5 ", "6 ", "7 ", "8 ")
    print(f"{'stage (us/event)':<52} {'wall':>7} {'share':>6} {'cpu':>6} {'run-q':>6} {'blocked':>7}")
    for name in sorted(LAPS):
        w, c, q = LAPS[name]
        print(f"{name:<52} {per_event * w:>7.1f} {100 * w / wall:>5.1f}% {per_event * c:>6.1f} "
              f"{per_event * q:>6.1f} {per_event * (w - c - q):>7.1f}")
    mine = [lap for name, lap in LAPS.items() if name.startswith(top) and not name.endswith(BACKGROUND)]
    w, c, q = (wall - sum(lap[0] for lap in mine), cpu - sum(lap[1] for lap in mine),
               queued - sum(lap[2] for lap in mine))
    print(f"{'other (calling thread, outside its stages)':<52} {per_event * w:>7.1f} {100 * w / wall:>5.1f}% "
          f"{per_event * c:>6.1f} {per_event * q:>6.1f} {per_event * (w - c - q):>7.1f}")
    print(f"{'total (calling thread)':<52} {per_event * wall:>7.1f} {'':>6} {per_event * cpu:>6.1f} "
          f"{per_event * queued:>6.1f} {per_event * (wall - cpu - queued):>7.1f}")


if __name__ == "__main__":
    main()
