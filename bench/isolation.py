"""Another tenant's recall while 64 kB texts arrive, in one process (issue 28's isolation row).

    python bench/isolation.py --home DIR [--intervals 0.5] [--rounds 4] [--recalls 100]
    python bench/isolation.py --home DIR --precedence on,off     # the recalls' precedence on and off in turn
    python bench/isolation.py --home DIR --arms base=/tmp/base/.venv/bin/python,branch=.venv/bin/python [--runs 2]
    python bench/isolation.py --mechanism [--intervals 5,0.5]   # no brain: the GIL waits alone

The brain in ``--home`` holds ``bench/api.py``'s events (``bench/served.py`` builds it). A
thread perceives texts of 64 kB for the tenant "noisy" (batches of 4, the API's largest text)
while this thread recalls api.py's query mix for api.py's tenant, the issue-28 isolation row
(``bench/api.py``'s ``long_texts``). Each round takes, for every switch interval in turn (the
order rotates each round; ``sys.setswitchinterval`` changes at once, so every arm shares the
machine's load of the moment), ``--recalls`` recalls with the noise paused (quiet, once the noisy
texts' neural vectors are in: their embedding is part of the noise) and then the same recalls with
it running (noisy). Printed per interval: the medians over rounds of quiet and noisy p50/p99
wall, noisy p99 / quiet p99 two ways (the target: <= 2x): the median of the rounds' ratios, and
the ratio of the p99s of every round's recalls pooled (a p99 over 100 recalls is their second
largest: pooling the rounds makes it less a matter of one stall of the machine), the recall's
CPU p50 (the calling thread's: what the recall itself cost, quiet and noisy), the noise's perceive
rate (texts a second) and how long folds gave way to recalls a second (``RecallPrecedence``).

``--precedence on,off``: the recalls' precedence over a long text's fold
(``hindbrain.switching.RecallPrecedence``) switched on and off in turn inside one process, like the
intervals: the two modes share the machine's load of the moment (what ``--arms`` cannot do).

``--arms name=python,...``: each arm's rounds run in a child process of that interpreter, on a
fresh copy of ``--home`` (in ``--scratch``), the arms alternated ``--runs`` times; the summary
pools each arm's rounds. The machine is shared: compare arms of the same run, not runs.

Why the interval: a recall gives up the GIL many times (numpy on large arrays, the vector
search, a lock). With another thread busy in Python, each time it waits until that thread is
made to drop the GIL, the switch interval (5 ms by default), so a recall with ten such points
waits up to ~50 ms. ``--mechanism`` shows that alone: a thread tokenising in Python, and in this
thread "recalls" of ten ``argpartition`` calls over 100k floats (each gives up the GIL), their
wall and CPU p50 by interval, 3 rounds of 30 alternated.
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
import threading
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import api  # noqa: E402
import serve  # noqa: E402

WORD = "the export job fails with a timeout and the retry loop keeps spinning "
TEXT = (WORD * (65_536 // len(WORD) + 1))[: 65_536 - 16]  # the API's limit is 64 kB a text


class Noise:
    """Perceives batches of four 64 kB texts while ``running`` is set; counts them."""

    def __init__(self, brain):
        self.brain, self.running, self.stop, self.sent = brain, threading.Event(), threading.Event(), 0
        self.error: Exception | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        n = 0
        try:
            while not self.stop.is_set():
                if not self.running.wait(0.05):
                    continue
                self.brain.perceive_many([{"tenant": "noisy", "agent": "agent-9", "text": f"{n}-{i} {TEXT}"}
                                          for i in range(4)])
                n += 1
                self.sent += 4
        except Exception as exc:  # reported by the caller: a failed batch must not pass for a quiet run
            self.error = exc


def mechanism(intervals: list[float]) -> None:
    """The GIL waits alone: see the module docstring."""
    import re

    import numpy as np

    stop = threading.Event()
    words, text = re.compile(r"\w+"), TEXT[:6000]

    def busy() -> None:
        while not stop.is_set():
            [w.lower() for w in words.findall(text)]

    threading.Thread(target=busy, daemon=True).start()
    scores = np.random.default_rng(0).random(100_000).astype(np.float32)
    rows: dict[float, list[tuple[float, float]]] = {ms: [] for ms in intervals}
    for _ in range(3):
        for ms in intervals:
            sys.setswitchinterval(ms / 1000)
            wall, cpu = [], []
            for _ in range(30):
                t, c = time.perf_counter(), time.thread_time()
                for _ in range(10):
                    np.argpartition(-scores, 63)
                wall.append(time.perf_counter() - t)
                cpu.append(time.thread_time() - c)
            rows[ms].append((statistics.median(wall), statistics.median(cpu)))
    stop.set()
    for ms in intervals:
        print(f"{ms:>5} ms: wall p50 {', '.join(api.ms(w) for w, _ in rows[ms])}; "
              f"CPU p50 {', '.join(api.ms(c) for _, c in rows[ms])} (load {os.getloadavg()[0]:.1f})")


def block(brain, qs: list[dict]) -> tuple[list[float], list[float]]:
    """Each recall's wall and calling-thread CPU seconds."""
    wall, cpu = [], []
    for q in qs:
        t, c = time.perf_counter(), time.thread_time()
        brain.recall(tenant=api.TENANT, agent="agent-1", **q)
        wall.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
    return wall, cpu


def settle(brain, patience: float = 60.0) -> None:
    """Waits until the noisy tenant's texts are all in the neural tier: the next quiet block must not
    run beside their embedding."""
    deadline = time.perf_counter() + patience
    while brain.index.semantic is not None and brain.index.semantic.pending("noisy") and time.perf_counter() < deadline:
        time.sleep(0.05)


def run(home: str, intervals: list[float], rounds: int, recalls: int, precedences: list[str] = ("on",)) -> dict:
    """This process's rounds (the module docstring): per mode (a switch interval, and with
    ``precedences`` "on,off" the recalls' precedence over long folds on or off), each round's quiet
    and noisy recalls (wall and CPU) and the noise's rate. Keyed by the mode's label."""
    from hindbrain import Brain, switching

    recalls_of = getattr(switching, "RECALLS", None)  # None: a commit from before the precedence
    modes = [(ms, on) for ms in intervals for on in precedences]
    label = {(ms, on): str(ms) if list(precedences) == ["on"] else f"{ms} {on}" for ms, on in modes}
    rows: dict[str, list[dict]] = {label[m]: [] for m in modes}
    rng = random.Random(7)
    with Brain.open(home) as brain:
        serve.warm(brain)
        block(brain, api.queries(rng, 30))
        noise = Noise(brain)
        for r in range(rounds):
            for ms, on in modes[r % len(modes):] + modes[: r % len(modes)]:
                sys.setswitchinterval(ms / 1000)
                if recalls_of is not None:
                    recalls_of.enabled = on == "on"
                elif on != "on":
                    raise SystemExit("--precedence off: this commit has no RecallPrecedence")
                qs = api.queries(rng, recalls)
                settle(brain)
                quiet, quiet_cpu = block(brain, qs)
                noise.running.set()
                time.sleep(0.5)  # the noise under way
                sent, t0, gave = noise.sent, time.perf_counter(), getattr(recalls_of, "waited_s", 0.0)
                noisy, noisy_cpu = block(brain, qs)
                spent = time.perf_counter() - t0
                rate, gave = (noise.sent - sent) / spent, (getattr(recalls_of, "waited_s", 0.0) - gave) / spent
                noise.running.clear()
                time.sleep(0.5)  # its batch done
                if noise.error:
                    raise noise.error
                row = {"quiet": quiet, "noisy": noisy, "quiet_cpu": quiet_cpu, "noisy_cpu": noisy_cpu,
                       "rate": rate, "gave_way": gave, "load": os.getloadavg()[0]}
                rows[label[ms, on]].append(row)
                print(f"round {r + 1} mode {label[ms, on]}: quiet p50/p99 {api.ms(statistics.median(quiet))} / "
                      f"{api.ms(api.pct(quiet, .99))}, noisy {api.ms(statistics.median(noisy))} / "
                      f"{api.ms(api.pct(noisy, .99))} ({api.pct(noisy, .99) / api.pct(quiet, .99):.2f}x), "
                      f"noise {rate:.1f} texts/s (load {row['load']:.1f})", file=sys.stderr, flush=True)
        noise.stop.set()
        noise.running.set()
        noise.thread.join()
    return rows


def summary(name: str, mode: str, rows: list[dict]) -> str:
    """One line: medians over rounds (p50, p99, CPU p50, the noise's rate) and two ratios: the median
    of the rounds' noisy p99 / quiet p99, and the p99 of every round's recalls pooled."""
    med = statistics.median
    pooled = api.pct([x for r in rows for x in r["noisy"]], .99) / api.pct([x for r in rows for x in r["quiet"]], .99)
    return (f"{name:>8} {mode:>8} | {api.ms(med(med(r['quiet']) for r in rows))} | "
            f"{api.ms(med(api.pct(r['quiet'], .99) for r in rows))} | {api.ms(med(med(r['noisy']) for r in rows))} | "
            f"{api.ms(med(api.pct(r['noisy'], .99) for r in rows))} | "
            f"{med(api.pct(r['noisy'], .99) / api.pct(r['quiet'], .99) for r in rows):.2f}x | {pooled:.2f}x | "
            f"{api.ms(med(med(r['quiet_cpu']) for r in rows))} / {api.ms(med(med(r['noisy_cpu']) for r in rows))} | "
            f"{med(r['rate'] for r in rows):.1f} | {med(r['gave_way'] for r in rows):.2f} | "
            f"{min(r['load'] for r in rows):.1f}-{max(r['load'] for r in rows):.1f}")


HEADER = ("     arm   ms prec | quiet p50 | quiet p99 | noisy p50 | noisy p99 | noisy p99 / quiet p99 (median of "
          "rounds) | pooled p99 ratio | CPU p50 quiet / noisy | noise texts/s | gave way s/s | load")


def arms_run(args) -> None:
    """Each arm's run in a child process of its interpreter (``name=python``), alternated ``--runs``
    times, each on a fresh copy of ``--home`` (the noise writes into the home it opens)."""
    arms = [tuple(a.split("=", 1)) for a in args.arms.split(",")]
    rows: dict[str, dict[str, list[dict]]] = {name: {} for name, _ in arms}
    for n in range(args.runs):
        for name, python in arms[n % len(arms):] + arms[:n % len(arms)]:
            with tempfile.TemporaryDirectory(dir=args.scratch) as scratch:
                home = Path(scratch) / "home"
                shutil.copytree(args.home, home, symlinks=True)
                out = subprocess.run([python, __file__, "--home", str(home), "--intervals", args.intervals,
                                      "--rounds", str(args.rounds), "--recalls", str(args.recalls), "--json",
                                      "--precedence", args.precedence],
                                     check=True, stdout=subprocess.PIPE, text=True).stdout
            got = json.loads(out.strip().splitlines()[-1])
            for mode, v in got.items():
                rows[name].setdefault(mode, []).extend(v)
            print(f"run {n + 1} {name}: " + "; ".join(f"{mode}: " + summary(name, mode, v).split("|")[5].strip()
                                                       for mode, v in got.items()), flush=True)
    print(f"\n{args.runs} runs x {args.rounds} rounds per arm, {args.recalls} recalls per block, arms alternated")
    print(HEADER)
    for name, _ in arms:
        for mode, v in rows[name].items():
            print(summary(name, mode, v))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home")
    ap.add_argument("--mechanism", action="store_true", help="the GIL waits alone, no brain")
    ap.add_argument("--intervals", default="0.5", help="switch intervals to compare, ms (0.5: the brain's default)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--recalls", type=int, default=100)
    ap.add_argument("--arms", help="name=python,...: each arm's run in a child process, on a copy of --home")
    ap.add_argument("--runs", type=int, default=2, help="with --arms: runs per arm, alternated")
    ap.add_argument("--scratch", help="with --arms: where the home copies go (default: the system's temp)")
    ap.add_argument("--precedence", default="on", help="on,off: the recalls' precedence over long folds "
                    "(hindbrain.switching.RecallPrecedence) on and off in turn, in the same process")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # a child's rows, for --arms
    args = ap.parse_args()
    intervals = [float(x) for x in args.intervals.split(",")]
    if args.mechanism:
        return mechanism(intervals)
    if not args.home:
        ap.error("--home is required (or --mechanism)")
    if args.arms:
        return arms_run(args)
    rows = run(args.home, intervals, args.rounds, args.recalls, args.precedence.split(","))
    if args.json:
        print(json.dumps(rows))
        return
    print(f"\nmedians over {args.rounds} rounds, {args.recalls} recalls per block")
    print(HEADER)
    for mode, v in rows.items():
        print(summary("this", mode, v))


if __name__ == "__main__":
    main()
