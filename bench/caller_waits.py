"""What the thread calling ``perceive_many`` waits on (issue 28, point 3): a sampler of its blocked time.

    .venv/bin/python bench/caller_waits.py --size 100000            # bench/api.py's events, batches of 5,000

Every ``--every`` seconds a sampler thread reads the calling thread's state (``/proc/self/task/<tid>/stat``)
and, when it is asleep (``S``/``D``), its innermost Python frames (``sys._current_frames``). A sleeping
thread sits in a C call that let go of the interpreter lock: its innermost frame's function and line say
which (SQLite's COMMIT in ``SqliteLog.append``, an offset's ``INSERT`` in ``SqliteLog.commit``, chDB's
``_query_locked``, a ``threading`` wait, a ``with lock`` line). A sample whose innermost frame is plain
Python is the thread waiting for the interpreter lock (this sampler itself takes it to look), printed as
such. The labels name the innermost frame and the brain's frames below it, so "the caller's own chDB
insert" and "the learner's offset commit" read apart. Wall and thread CPU of the run are printed beside.
"""

from __future__ import annotations

import argparse
import os
import random
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

# a frame of these files is the brain's own (the package's folders map into ``hindbrain``)
OWN = ("/hindbrain/", "/streams/", "/projections/", "/recall/", "/learning/", "/schemas/", "/jobs/")


def thread_state(tid: int) -> str:
    """The kernel's one-letter state of thread ``tid`` of this process (R running, S sleeping, ...)."""
    with open(f"/proc/self/task/{tid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def wait_label(frame) -> str:
    """The innermost frame (file, function, line) and the brain's own frames under it, innermost first."""
    inner = f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}:{frame.f_lineno}"
    own = []
    f = frame.f_back
    while f is not None and len(own) < 3:
        name = f.f_code.co_filename
        if any(part in name for part in OWN):
            own.append(f"{f.f_code.co_name}")
        f = f.f_back
    return f"{inner} <- {' <- '.join(own)}"


class Sampler:
    """Samples the calling thread's blocked time by what it waits on (module docstring)."""

    def __init__(self, every: float):
        self.every, self.ident, self.tid = every, threading.get_ident(), threading.get_native_id()
        self.asleep: Counter[str] = Counter()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="caller-waits-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            state = thread_state(self.tid)
            self.samples += 1
            if state in "SD":
                frame = sys._current_frames().get(self.ident)
                if frame is not None:
                    self.asleep[wait_label(frame)] += 1

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    ap.add_argument("--every", type=float, default=0.002, help="seconds between samples")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    rng = random.Random(args.size)
    events = [api.event(rng, n) for n in range(args.size)]
    with tempfile.TemporaryDirectory(prefix="hindbrain-waits-") as home, Brain.open(home) as brain:
        brain.perceive(tenant=api.TENANT, agent="agent-0", text="warm-up")  # as bench/api.py, before its clock
        brain.recall(tenant=api.TENANT, agent="agent-0", query="warm-up")
        t, cpu = time.perf_counter(), time.thread_time()
        with Sampler(args.every) as sampler:
            for start in range(0, args.size, args.batch):
                brain.perceive_many(events[start:start + args.batch])
        wall, cpu = time.perf_counter() - t, time.thread_time() - cpu
        backpressure = (f"; waited for the projector {brain.runner.waits} times, {brain.runner.waited_s:.2f} s"
                        if hasattr(brain.runner, "waits") else "")  # round fifteen's runner counts its waits
    asleep = sum(sampler.asleep.values())
    per_event = 1e6 / args.size
    print(f"perceive_many {args.size / wall:,.0f} ev/s whole run; calling thread CPU {per_event * cpu:.1f} us/event, "
          f"wall {per_event * wall:.1f}; load average {os.getloadavg()[0]:.1f}{backpressure}")
    print(f"asleep in {asleep} of {sampler.samples} samples ({100 * asleep / max(1, sampler.samples):.1f} %, "
          f"~{per_event * wall * asleep / max(1, sampler.samples):.1f} us/event); by innermost frame:")
    for label, n in sampler.asleep.most_common(args.top):
        print(f"{100 * n / max(1, asleep):6.1f} %  {label}")


if __name__ == "__main__":
    main()
