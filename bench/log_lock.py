"""The log's lock, fair (``streams.fair_lock.FairRLock``, round twenty-six) against ``threading.RLock``.

    python bench/log_lock.py                  # both arms, alternated, 3 rounds each
    python bench/log_lock.py --rounds 1       # a quick run

Per arm, a fresh lexical brain (``embedder="none"``) with the arm's lock put in the log and the runner:

* ``perceive_many``: ``--events`` events in batches of 5,000 from one thread (api.py's import), ev/s;
* ``4 writers``: four threads looping perceive / perceive_many(20) / learn / recall (the committer's deferred
  records) for ``--seconds``: their calls a second, and the log appends each ``sql`` beside them waited
  (counted: appends between its call and its return) with its time, over ``--sqls`` calls.

The arms run alternated on the same machine: report the medians and the load beside them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time

from hindbrain import Brain
from hindbrain.streams.fair_lock import FairRLock


class PlainRLock:
    """``threading.RLock`` with ``owned()``: the lock before round twenty-six."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self.acquire, self.release, self.owned = self._lock.acquire, self._lock.release, self._lock._is_owned

    def __enter__(self) -> bool:
        return self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


ARMS = {"fair": FairRLock, "rlock": PlainRLock}


def with_lock(brain: Brain, lock) -> Brain:
    """The brain's log and runner share ``lock`` (no other thread uses the brain yet)."""
    brain.log._lock = lock
    brain.runner._lock = lock
    return brain


def events(n: int, tag: str) -> list[dict]:
    return [{"tenant": "acme", "kind": "message", "speaker": "u", "session": f"s{k % 97}",
             "text": f"{tag} order {k} for the billing export failed with 403 on step {k % 13}"} for k in range(n)]


def perceive_many_rate(arm: str, n: int) -> float:
    with tempfile.TemporaryDirectory() as home, Brain.open(home, embedder="none") as brain:
        with_lock(brain, ARMS[arm]())
        batch = events(n, arm)
        start = time.perf_counter()
        for at in range(0, n, 5_000):
            brain.perceive_many(batch[at:at + 5_000])
        return n / (time.perf_counter() - start)


def contended(arm: str, seconds: float, sqls: int) -> dict:
    """Four looping writers and ``sqls`` sql calls beside them (module docstring)."""
    with tempfile.TemporaryDirectory() as home, Brain.open(home, embedder="none") as brain:
        lock = with_lock(brain, ARMS[arm]()).log._lock
        assert lock is brain.runner._lock
        appends, append = [0], brain.log.append

        def counted(messages):
            appends[0] += 1
            return append(messages)

        brain.log.append = counted
        stop, calls = threading.Event(), [0, 0, 0, 0]
        loops = [lambda n: brain.perceive(tenant="acme", kind="message", speaker="u", session="s",
                                          text=f"parcel {n} is late"),
                 lambda n: brain.perceive_many(events(20, f"b{n}")),
                 lambda n: brain.learn(tenant="acme", condition=f"parcel {n} late", action="apologise"),
                 lambda n: brain.recall(tenant="acme", query="parcel late")]

        def loop(k: int) -> None:
            while not stop.is_set():
                loops[k](calls[k])
                calls[k] += 1

        threads = [threading.Thread(target=loop, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        started = time.perf_counter()
        waits, waited_s = [], []
        for _ in range(sqls):
            before, t = appends[0], time.perf_counter()
            brain.sql("SELECT count() FROM events", tenant="acme")
            waits.append(appends[0] - before)
            waited_s.append(time.perf_counter() - t)
        while time.perf_counter() - started < seconds:
            brain.sql("SELECT 1", tenant="acme")  # keeps the main thread busy as a reader; the writers' rate counts
        stop.set()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        return {"calls/s": sum(calls) / elapsed, "sql appends waited": statistics.median(waits),
                "sql appends waited max": max(waits), "sql s": statistics.median(waited_s), "sql s max": max(waited_s)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--sqls", type=int, default=10)
    args = ap.parse_args()
    rows: dict[str, list[dict]] = {arm: [] for arm in ARMS}
    for _ in range(args.rounds):
        for arm in ARMS:
            row = {"perceive_many ev/s": perceive_many_rate(arm, args.events)}
            row.update(contended(arm, args.seconds, args.sqls))
            rows[arm].append(row)
            print(arm, {k: round(v, 3) for k, v in row.items()}, f"load {os.getloadavg()[0]:.1f}", flush=True)
    for arm, runs in rows.items():
        print(f"{arm:6} median", {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]})


if __name__ == "__main__":
    main()
