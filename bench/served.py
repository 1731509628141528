"""Served recalls per second over HTTP, two interpreters (checkouts) interleaved on one brain.

    python bench/served.py --home /tmp/brain20k --size 20000                    # build once (api.py's events)
    python bench/served.py --home /tmp/brain20k --arms main=/work/main/.venv/bin/python,branch=.venv/bin/python \
        --rounds 5 --seconds 8 [--replicas auto] [--profile DIR]
    python bench/served.py --home /tmp/brain20k --in-process --recalls 300      # p50/p90/p99 in this process

``--home-per-arm``: each arm serves its own copy of the home (made once, beside it), for an arm
that writes records an older arm cannot read (a new schema version, which it would dead-letter).

The brain holds ``bench/api.py``'s distinct structured events (8 agents, en + zh), every vector
neural. Each round starts ``hindbrain serve`` with each arm's interpreter in turn (the order
rotates every round: the machine is shared, so only same-run ratios mean anything), warms it
with 20 recalls, then measures the recall capacity: a closed loop on ``--connections``
keep-alive connections for ``--seconds`` (``bench/serve.py``'s asyncio generator, in this
process). Prints each arm's median recalls/s and p50/p99 latency at that load, and every arm's
ratio to the first, with the load average, and the CPU the server's processes (owner and
replicas, every thread) spent per answered recall (``/proc``): on a loaded machine the rate
follows the other sessions, the CPU a recall much less. ``--profile DIR``: py-spy records each server
process (owner and replicas) of the last round to ``DIR/<arm>-<pid>.txt`` (collapsed stacks).

``--queries distinct`` (the default since round ten): every request is a query no server process
has seen, as in a fleet where each agent asks about its own case: api.py's query shapes, each
naming a case number nobody else asks about (``distinct_queries``), so every recall embeds its
query and the query cache never answers. ``--queries cycled``: the 300 bodies of rounds five to
nine, cycled over the connections; a process that answers ~400 recalls has seen most of them
before, so part of a first-time recall's cost (the query's neural pass) is hidden, and an arm
that answers more gets more cache hits.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


api, serve = _load("api"), _load("serve")


def build(home: Path, size: int) -> None:
    """``size`` of api.py's events through ``perceive_many``; returns once every vector is neural."""
    from hindbrain import Brain

    rng = random.Random(size)
    events = [api.event(rng, n) for n in range(size)]
    t0 = time.perf_counter()
    with Brain.open(home) as brain:
        for start in range(0, size, 5_000):
            brain.perceive_many(events[start:start + 5_000])
        semantic = brain.index.semantic
        if semantic is not None:
            semantic.wait()
            while semantic.unbuilt():
                time.sleep(0.2)
    print(f"built {size:,} events in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def in_process(home: Path, recalls: int, runs: int) -> None:
    """p50/p90/p99 of ``recalls`` recalls (api.py's query mix, agent-1), ``runs`` times, in this process."""
    from hindbrain import Brain

    with Brain.open(home) as brain:
        serve.warm(brain)
        qs = api.queries(random.Random(5), recalls + 20)
        api.timed_recalls(brain, qs[:20])
        for run in range(runs):
            spent = api.timed_recalls(brain, qs[20:])
            print(f"run {run + 1}: {len(spent)} recalls p50 {api.ms(statistics.median(spent), 2)}, "
                  f"p90 {api.ms(api.pct(spent, .9), 2)}, p99 {api.ms(api.pct(spent, .99), 2)}, "
                  f"max {api.ms(max(spent), 2)} (load {os.getloadavg()[0]:.1f})", flush=True)


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of ``pids`` so far (``/proc/<pid>/stat``), every thread included."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def thread_cpu(pids: list[int]) -> Counter:
    """CPU seconds so far by (process, thread id, thread name), from ``/proc/<pid>/task``."""
    out = Counter()
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                comm = (task / "comm").read_text().strip()
                fields = (task / "stat").read_text().rpartition(")")[2].split()
            except OSError:
                continue
            out[pid, int(task.name), comm] += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return out


def python_thread_names(pids: list[int]) -> dict[int, str]:
    """Each Python thread's name by its OS thread id (``py-spy dump``, when installed): the OS
    calls them all "python", so ``--threads`` could not tell the event loop from the brain's thread."""
    spy = Path(sys.executable).parent / "py-spy"
    names = {}
    for pid in pids if spy.exists() else []:
        dump = subprocess.run([str(spy), "dump", "--json", "--pid", str(pid)], capture_output=True, text=True)
        try:
            names |= {t["os_thread_id"]: t["thread_name"] or "?" for t in json.loads(dump.stdout)}
        except ValueError:
            continue
    return names


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def distinct_queries(rng: random.Random, count: int) -> list[dict]:
    """``count`` recall bodies of api.py's mix (agent-1), no two alike: each names its own case
    number, as a fleet agent's query names its own ticket (events name theirs the same way)."""
    cases = rng.sample(range(10**8, 10**9), count)
    out = []
    for q, case in zip(api.queries(rng, count), cases, strict=True):
        if "query" in q:
            q = {"query": f"{q['query']} (case {case})"}
        else:
            q = {**q, "situation": {**q["situation"], "actual": f"{q['situation']['actual']} (case {case})"}}
        out.append({"agent": "agent-1", **q})
    return out


def recall_bodies(queries: str, seconds: float) -> list[dict]:
    """The request bodies, the 20 warm-up ones first. ``distinct``: enough that no body repeats
    below 500 recalls/s (``closed_loop_recall`` cycles them); ``cycled``: rounds five to nine's 300."""
    if queries == "cycled":
        return [{"agent": "agent-1", **q} for q in api.queries(random.Random(3), 300)]
    return distinct_queries(random.Random(3), 20 + int(500 * seconds))


def arm_home(home: Path, arm: str) -> Path:
    """``home``'s copy for ``arm`` (``--home-per-arm``), made on first use and kept: an arm that
    writes records of a schema version an older arm cannot read (it would dead-letter them on
    opening) serves its own log."""
    copy = home.parent / f"{home.name}-{arm}"
    if not copy.exists():
        shutil.copytree(home, copy, symlinks=True)
    return copy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", required=True)
    ap.add_argument("--size", type=int, default=20_000, help="events to build the brain with when --home is empty")
    ap.add_argument("--arms", default=f"this={sys.executable}", help="name=python,... (the first is the baseline)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--replicas", default="auto")
    ap.add_argument("--port", type=int, default=18431)
    ap.add_argument("--profile", help="py-spy the servers of the last round into this folder")
    ap.add_argument("--queries", choices=("distinct", "cycled"), default="distinct",
                    help="distinct: every request a first-time query (default); cycled: 300 bodies cycled")
    ap.add_argument("--threads", action="store_true", help="print each round's CPU a recall by thread")
    ap.add_argument("--home-per-arm", action="store_true",
                    help="each arm serves its own copy of --home (<home>-<arm>, made once): for arms whose records "
                         "an older arm cannot read (a new schema version)")
    ap.add_argument("--in-process", action="store_true", help="time recalls in this process instead")
    ap.add_argument("--recalls", type=int, default=300)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    home = Path(args.home)
    if not (home / "log.sqlite").exists():
        build(home, args.size)
    if args.in_process:
        return in_process(home, args.recalls, args.runs)
    from hindbrain.service.keys import KeyStore

    bodies = recall_bodies(args.queries, args.seconds)
    warmups, measured = bodies[:20], bodies[20:] if args.queries == "distinct" else bodies
    arms = [tuple(a.split("=", 1)) for a in args.arms.split(",")]
    homes = {name: arm_home(home, name) if args.home_per_arm else home for name, _ in arms}
    keys = {name: KeyStore(h).create(api.TENANT, "bench") for name, h in homes.items()}
    rates: dict[str, list[float]] = {name: [] for name, _ in arms}
    lats: dict[str, list[float]] = {name: [] for name, _ in arms}
    cpus: dict[str, list[float]] = {name: [] for name, _ in arms}
    loads = []
    for r in range(args.rounds):
        order = arms[r % len(arms):] + arms[:r % len(arms)]
        for name, python in order:
            key = keys[name]
            with open(home.parent / f"serve-{name}.log", "a") as log:
                proc = serve.serve(homes[name], args.port, None, args.replicas, log, python=python)
            spies = []
            try:
                for body in warmups:
                    serve.Client(args.port, key).post("/v1/recall", body)
                if args.profile and r == args.rounds - 1:
                    Path(args.profile).mkdir(parents=True, exist_ok=True)
                    for pid in [proc.pid, *children(proc.pid)]:
                        spies.append(subprocess.Popen(
                            [str(Path(sys.executable).parent / "py-spy"), "record", "--gil", "--threads", "-f", "raw",
                             "-r", "200", "-d", str(int(args.seconds)), "-p", str(pid), "-o",
                             f"{args.profile}/{name}-{pid}.txt"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL))
                    time.sleep(0.5)
                served = Counter()
                pids = [proc.pid, *children(proc.pid)]
                before, threads = cpu_seconds(pids), thread_cpu(pids)
                rate, lat = serve.closed_loop_recall(args.port, key, measured, args.seconds, args.connections, served)
                spent = (cpu_seconds(pids) - before) / max(1, sum(served.values()))
                if args.queries == "distinct" and sum(served.values()) > len(measured):
                    raise SystemExit(f"{sum(served.values())} recalls answered but only {len(measured)} distinct "
                                     "bodies: raise recall_bodies' rate bound")
                if args.threads:
                    threads, names = thread_cpu(pids) - threads, python_thread_names(pids)
                    print("  CPU ms a recall by thread: " + ", ".join(
                        f"{'owner' if pid == proc.pid else pid}/{names.get(tid, comm)} "
                        f"{1000 * t / sum(served.values()):.2f}" for (pid, tid, comm), t in threads.most_common(12)))
                rates[name].append(rate)
                cpus[name].append(spent)
                lats[name] += lat
                loads.append(os.getloadavg()[0])
                print(f"round {r + 1} {name}: {rate:,.0f} recalls/s, server CPU {spent * 1000:.2f} ms a recall "
                      f"({dict(served)}), load {loads[-1]:.1f}", flush=True)
            finally:
                for spy in spies:
                    spy.wait(timeout=60)
                proc.terminate()
                proc.wait(timeout=60)
    base, base_cpu = statistics.median(rates[arms[0][0]]), statistics.median(cpus[arms[0][0]])
    print(f"\n{args.connections} connections, closed loop, {args.queries} queries, {args.seconds:g} s x "
          f"{args.rounds} rounds; "
          f"load average {min(loads):.1f}-{max(loads):.1f}")
    for name, _ in arms:
        med, cpu = statistics.median(rates[name]), statistics.median(cpus[name])
        print(f"  {name:<10} median {med:7,.1f} recalls/s (x{med / base:.2f})  "
              f"[{', '.join(f'{x:.0f}' for x in rates[name])}]  p50 {api.ms(api.pct(lats[name], .5))}, "
              f"p99 {api.ms(api.pct(lats[name], .99))}; server CPU a recall median {cpu * 1000:.2f} ms "
              f"(x{cpu / base_cpu:.2f}) [{', '.join(f'{x * 1000:.1f}' for x in cpus[name])}]")


if __name__ == "__main__":
    main()
