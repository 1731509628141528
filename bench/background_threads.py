"""Where a 100k ``perceive_many`` import's threads spend the machine (issue 28, "the other core").

    .venv/bin/python bench/background_threads.py --size 100000                 # bench/api.py's import
    .venv/bin/python bench/background_threads.py --size 100000 --gil PY_SPY     # plus who holds the GIL

The import is bench/api.py's (the same events, the same warm-up, batches of 5,000, the brain's defaults).
Each of this process's threads is read from ``/proc/self/task/<tid>`` before and after the import: CPU
(user + system), run-queue wait (``schedstat``) and context switches (voluntary: it slept; involuntary: it
was preempted), per event, by the thread's Python name (``threading``'s ``native_id``) or the kernel's
(chDB's own threads). The embedder workers (child processes) are summed apart.

``--gil PY_SPY``: py-spy (a path to its binary) samples the process during the import with ``--gil``
(only the thread that holds the interpreter lock is sampled), so each thread's share of the samples is its
share of the import's wall holding the GIL; the innermost frames of the background threads' samples are
counted too. The caller needs the lock for all of its CPU: what the others hold is wall it cannot run.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from hindbrain import Brain

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
from by_path import module_at  # noqa: E402

api = module_at(Path(__file__).parent / "api.py", "bench_api")
# the embedder workers' CPU, read as ingest_profile reads it
children_cpu_s = module_at(Path(__file__).parent / "ingest_profile.py", "bench_ingest_profile").children_cpu_s
TICK = os.sysconf("SC_CLK_TCK")


def task_counters(tid: str) -> tuple[str, float, float, int, int] | None:
    """Thread ``tid``'s kernel name, CPU seconds, run-queue seconds, voluntary and involuntary switches."""
    base = f"/proc/self/task/{tid}"
    try:
        with open(f"{base}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open(f"{base}/comm") as f:
            comm = f.read().strip()
        with open(f"{base}/schedstat") as f:
            queued = int(f.read().split()[1]) / 1e9
        with open(f"{base}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return None
    return (comm, (int(fields[11]) + int(fields[12])) / TICK, queued,
            int(status["voluntary_ctxt_switches"]), int(status["nonvoluntary_ctxt_switches"]))


def idle_mark(tid: int) -> str:
    """" idle" for a thread under SCHED_IDLE (chDB's merge threads: streams.thread_priority)."""
    try:
        return " idle" if os.sched_getscheduler(tid) == getattr(os, "SCHED_IDLE", -1) else ""
    except OSError:
        return ""


def snapshot() -> dict[str, tuple]:
    """Every thread's counters, by a readable name: Python's for Python threads, the kernel's otherwise."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out = {}
    for tid in os.listdir("/proc/self/task"):
        counters = task_counters(tid)
        if counters is not None:
            out[f"{names.get(int(tid), counters[0])}:{tid}"] = counters[1:]
    return out


def gil_shares(raw: str) -> tuple[Counter, Counter, int]:
    """From py-spy's raw (collapsed) output with ``--threads``: samples by thread and the background
    threads' innermost frames, and the samples in all."""
    by_thread, frames, total = Counter(), Counter(), 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        head, *calls = stack.split(";")
        name = head.split(": ", 1)[-1]  # "thread (<native id>): <Python name>"
        by_thread[name] += n
        total += n
        if name != "MainThread" and calls:
            frames[f"{name}: {calls[-1]}"] += n
    return by_thread, frames, total


def neural_after(semantic, seconds: float) -> str:
    """The neural tier's progress once the import returns: its texts then, and how many it embeds in
    ``seconds`` after (the embed workers run below the caller during the import, so their catch-up after
    it is what their lower priority costs)."""
    at_return, t0 = semantic.neural_count(api.TENANT), time.perf_counter()
    settled = semantic.wait(seconds)
    spent, done = time.perf_counter() - t0, semantic.neural_count(api.TENANT)
    return (f"neural tier: {at_return:,} texts at return; {done - at_return:,} more in {spent:.1f} s after "
            f"({(done - at_return) / spent:,.0f} texts/s){'; settled' if settled else ''}; "
            f"load {os.getloadavg()[0]:.1f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--gil", default=None, help="py-spy's binary: sample who holds the interpreter lock")
    ap.add_argument("--rate", type=int, default=250, help="py-spy samples a second")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--keep", default=None, help="copy py-spy's raw samples here")
    ap.add_argument("--after", type=float, default=0.0, help="then wait this long and print the neural tier's "
                    "progress: texts embedded at the import's return and in the seconds after (its lag)")
    ap.add_argument("--python-columns", action="store_true", help="the projector builds the perceptions' Arrow "
                    "columns in Python (round sixteen's path) instead of chDB decoding their values")
    args = ap.parse_args()
    rng = random.Random(args.size)
    events = [api.event(rng, n) for n in range(args.size)]
    with tempfile.TemporaryDirectory(prefix="hindbrain-bg-") as home, Brain.open(home) as brain:
        if args.python_columns:
            brain.runner.decode_in_chdb = False
        brain.perceive(tenant=api.TENANT, agent="agent-0", text="warm-up")
        brain.recall(tenant=api.TENANT, agent="agent-0", query="warm-up")
        raw = Path(home) / "gil.txt"
        spy = None
        if args.gil:
            spy = subprocess.Popen([args.gil, "record", "--gil", "--threads", "--nonblocking", "-r", str(args.rate),
                                    "-f", "raw", "-o", str(raw), "-p", str(os.getpid())],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)  # py-spy attached
        spy_started = time.perf_counter() - 1.0
        before, children0, load0 = snapshot(), children_cpu_s(), os.getloadavg()[0]
        t0, cpu0 = time.perf_counter(), time.process_time()
        for start in range(0, len(events), 5_000):
            brain.perceive_many(events[start:start + 5_000])
        wall, process_cpu = time.perf_counter() - t0, time.process_time() - cpu0
        after, children1 = snapshot(), children_cpu_s()
        if spy is not None:
            spy.send_signal(2)
            spy.wait(30)
            spied = time.perf_counter() - spy_started
        per = 1e6 / args.size
        caller = next(v for k, v in after.items() if k.startswith("MainThread:"))
        c0 = next(v for k, v in before.items() if k.startswith("MainThread:"))
        blocked = wall - (caller[0] - c0[0]) - (caller[1] - c0[1])
        print(f"caller blocked (wall - CPU - run queue) {per * blocked:.1f} us/event; "
              f"{'python columns' if args.python_columns else 'decoded in chDB'}")
        print(f"perceive_many {args.size:,}: {args.size / wall:,.0f} ev/s, wall {per * wall:.1f} us/event; process CPU "
              f"{per * process_cpu:.1f} us/event; embedder children {per * (children1 - children0):.1f}; "
              f"load {load0:.1f} -> {os.getloadavg()[0]:.1f}; runner waits {brain.runner.waits} "
              f"({brain.runner.waited_s * per:.1f} us/event)")
        print(f"{'thread (us/event)':<40} {'cpu':>6} {'run-q':>6} {'vol/kev':>8} {'invol/kev':>9}")
        rows = []
        for key, (cpu, queued, vol, invol) in after.items():
            c0, q0, v0, i0 = before.get(key, (0.0, 0.0, 0, 0))
            rows.append((key, cpu - c0, queued - q0, vol - v0, invol - i0))
        for key, cpu, queued, vol, invol in sorted(rows, key=lambda r: -r[1])[:args.top]:
            if cpu or vol:
                marked = key + idle_mark(int(key.rsplit(":", 1)[1]))
                print(f"{marked:<40} {per * cpu:>6.1f} {per * queued:>6.1f} {1000 * vol / args.size:>8.1f} "
                      f"{1000 * invol / args.size:>9.1f}")
        if args.after > 0 and brain.index.semantic is not None:
            print(neural_after(brain.index.semantic, args.after))
        if spy is not None and raw.exists():
            by_thread, frames, total = gil_shares(raw.read_text())
            if args.keep:
                Path(args.keep).write_text(raw.read_text())
            expected = args.rate * spied  # samples had a thread held the lock at every one
            print(f"GIL held (py-spy --gil, {total:,} samples of ~{expected:,.0f} at {args.rate}/s over {spied:.1f} s; "
                  "% of the samples taken; a loaded machine delays py-spy's, so the taken are fewer than the ~):")
            for name, n in by_thread.most_common(8):
                print(f"  {name:<38} {100 * n / total:5.1f} %")
            print("background threads' innermost frames holding the GIL (% of the samples):")
            for frame, n in frames.most_common(args.top):
                print(f"  {100 * n / total:5.1f} %  {frame}")


if __name__ == "__main__":
    main()
