"""Another tenant's recall while 64 kB texts arrive, by the interpreter's switch interval, in one process.

    python bench/isolation.py --home DIR [--intervals 5,1,0.5,0.2] [--rounds 3] [--recalls 40]
    python bench/isolation.py --mechanism [--intervals 5,0.5]   # no brain: the GIL waits alone

The brain in ``--home`` holds ``bench/api.py``'s events (``bench/served.py`` builds it). A
thread perceives texts of 64 kB for the tenant "noisy" (batches of 4, the API's largest text)
while this thread recalls api.py's query mix for api.py's tenant, the issue-28 isolation row
(``bench/api.py``'s ``long_texts``). Each round takes, for every switch interval in turn (the
order rotates each round; ``sys.setswitchinterval`` changes at once, so every arm shares the
machine's load of the moment), ``--recalls`` recalls with the noise paused (quiet) and then with
it running (noisy). Printed per interval: the medians over rounds of quiet and noisy p50/p99
wall, noisy p99 / quiet p99 (the target: ≤ 2x), the noise's perceive rate (texts a second,
what the shorter interval costs the ingest) and the load average.

Why the interval: a recall gives up the GIL many times (numpy on large arrays, the vector
search, a lock). With another thread busy in Python, each time it waits until that thread is
made to drop the GIL, the switch interval (5 ms by default), so a recall with ten such points
waits up to ~50 ms. ``--mechanism`` shows that alone: a thread tokenising in Python, and in this
thread "recalls" of ten ``argpartition`` calls over 100k floats (each gives up the GIL), their
wall and CPU p50 by interval, 3 rounds of 30 alternated.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
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


def block(brain, qs: list[dict]) -> list[float]:
    return api.timed_recalls(brain, qs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home")
    ap.add_argument("--mechanism", action="store_true", help="the GIL waits alone, no brain")
    ap.add_argument("--intervals", default="5,1,0.5,0.2", help="switch intervals to compare, ms (the first is the "
                    "interpreter's default)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--recalls", type=int, default=40)
    args = ap.parse_args()
    intervals = [float(x) for x in args.intervals.split(",")]
    if args.mechanism:
        return mechanism(intervals)
    if not args.home:
        ap.error("--home is required (or --mechanism)")
    from hindbrain import Brain

    rows: dict[float, list[tuple[float, float, float, float, float]]] = {ms: [] for ms in intervals}
    rng = random.Random(7)
    with Brain.open(args.home) as brain:
        serve.warm(brain)
        block(brain, api.queries(rng, 30))
        noise = Noise(brain)
        for r in range(args.rounds):
            order = intervals[r % len(intervals):] + intervals[: r % len(intervals)]
            for ms in order:
                sys.setswitchinterval(ms / 1000)
                qs = api.queries(rng, args.recalls)
                quiet = block(brain, qs)
                noise.running.set()
                time.sleep(0.5)  # the noise under way
                sent, t0 = noise.sent, time.perf_counter()
                noisy = block(brain, qs)
                rate = (noise.sent - sent) / (time.perf_counter() - t0)
                noise.running.clear()
                time.sleep(0.5)  # its batch done
                if noise.error:
                    raise noise.error
                rows[ms].append((statistics.median(quiet), api.pct(quiet, .99), statistics.median(noisy),
                                 api.pct(noisy, .99), rate))
                print(f"round {r + 1} interval {ms} ms: quiet p50/p99 {api.ms(rows[ms][-1][0])} / "
                      f"{api.ms(rows[ms][-1][1])}, noisy {api.ms(rows[ms][-1][2])} / {api.ms(rows[ms][-1][3])}, "
                      f"noise {rate:.1f} texts/s (load {os.getloadavg()[0]:.1f})", flush=True)
        noise.stop.set()
        noise.running.set()
        noise.thread.join()
    print(f"\nmedians over {args.rounds} rounds, {args.recalls} recalls per block (load {os.getloadavg()[0]:.1f})")
    print("interval | quiet p50 | quiet p99 | noisy p50 | noisy p99 | noisy p99 / quiet p99 | noise texts/s")
    for ms in intervals:
        m = [statistics.median(col) for col in zip(*rows[ms], strict=True)]
        print(f"{ms:>5} ms | {api.ms(m[0])} | {api.ms(m[1])} | {api.ms(m[2])} | {api.ms(m[3])} | "
              f"{statistics.median(r[3] / r[1] for r in rows[ms]):.2f}x | {m[4]:.1f}")


if __name__ == "__main__":
    main()
