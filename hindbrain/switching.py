"""How soon a thread waiting for the GIL gets it (design.md §issue-28, isolation).

A recall gives up the GIL many times: numpy over a tenant's arrays, the vector search, a
lock, the query embedding's thread. While another thread is busy in Python (a batch of 64 kB
texts being folded, the recall records' projection), each time it waits until that thread is
made to let go: the interpreter's switch interval, 5 ms by default. A recall with ten such
points waited up to ~50 ms, so another tenant's recall p99 rose 4.65x while 64 kB texts
arrived (docs/speed.md). A shorter interval bounds each wait; the cost is a few more switches
for the busy thread (``bench/isolation.py`` measures both).

The interval is the interpreter's, so this only ever shortens it: a process that chose a
shorter one keeps it.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


def shorten_switch_interval(ms: float) -> float:
    """Sets the interpreter's switch interval to ``ms`` milliseconds if that is shorter than the
    current one (0: leave it); returns the interval in force, in seconds."""
    if ms > 0 and ms / 1000 < sys.getswitchinterval():
        sys.setswitchinterval(ms / 1000)
    return sys.getswitchinterval()


# A text this long is folded in parts that give way to recalls (``RecallPrecedence``): the API takes
# up to 64 kB a text, ~10 ms of the interpreter to fold; the common event is ~100 characters.
LONG_TEXT_CHARS = 8_192
# How long a long text's fold waits for the recalls in flight at one of its give-way points: a
# settled recall at 100k takes ~12-20 ms here (docs/speed.md), so one usually ends well before.
GIVE_WAY_S = 0.05


class RecallPrecedence:
    """The recalls in flight in this process, and a long text's fold that gives way to them.

    A recall beside a thread busy folding 64 kB texts waited for the interpreter at every point it
    let go of it (numpy, the vector search, a lock): its p50 tripled, p99 rose ~4x (docs/speed.md,
    isolation round nine). The switch interval bounds each wait, not the count of them. So the fold
    of a long text is cut into parts, and before each part it waits until the recalls in flight
    *then* have ended (``give_way``), at most ``patience_s``: recalls started later run beside the
    next part, so a fold is never starved, only paced by the recalls it meets. The GIL is the
    process's, so this is one object a process (``RECALLS``).
    """

    def __init__(self) -> None:
        self._ended = threading.Condition(threading.Lock())
        self._started = 0
        self._finished = 0
        self._parked = 0  # calls in flight waiting for the work that gives way (``parked``)
        self.waited_s = 0.0  # how long folds gave way in all: what the precedence cost the ingest
        self._long = threading.local()  # this thread folds a long text: its ``pause`` points give way
        # False: folds never wait (``bench/isolation.py --precedence on,off`` compares both in one process)
        self.enabled = True

    @contextmanager
    def recalling(self) -> Iterator[None]:
        """Marks one recall in flight for its duration."""
        with self._ended:
            self._started += 1
        try:
            yield
        finally:
            with self._ended:
                self._finished += 1
                self._ended.notify_all()

    @contextmanager
    def long_fold(self) -> Iterator[None]:
        """Marks this thread's fold as a long text's for its duration: its ``pause`` points give way."""
        self._long.depth = getattr(self._long, "depth", 0) + 1
        try:
            yield
        finally:
            self._long.depth -= 1

    @contextmanager
    def parked(self) -> Iterator[None]:
        """Marks a call in flight as waiting for the very work that gives way to calls (a writer
        waiting for the views' projector: ``streams.runner``): ``give_way`` stops waiting for it at
        once, or the two would wait for each other until the patience ran out (50 ms a give-way
        point: a priority inversion, docs/speed.md round fifteen). A count, not a set of calls: a
        give-way that began before a call started may end early on its parking, never late."""
        with self._ended:
            self._parked += 1
            self._ended.notify_all()
        try:
            yield
        finally:
            with self._ended:
                self._parked -= 1

    def pause(self) -> None:
        """A point between the stages of a fold (after the cues, the quarantine, the documents; never
        while the index's lock is held): inside a ``long_fold`` it gives way, so a recall meets at
        most one stage of a long text's fold, not a whole part; elsewhere (the common event's batch)
        nothing."""
        if getattr(self._long, "depth", 0):
            self.give_way()

    def in_flight(self) -> int:
        with self._ended:
            return self._started - self._finished

    def give_way(self, patience_s: float = GIVE_WAY_S) -> float:
        """Waits until as many recalls have ended as had started when called (those in flight now;
        not the ones started meanwhile), at most ``patience_s``. Returns the seconds waited."""
        with self._ended:
            started = self._started
            if self._finished + self._parked >= started or not self.enabled:
                return 0.0
            t = time.perf_counter()
            self._ended.wait_for(lambda: self._finished + self._parked >= started, timeout=patience_s)
            waited = time.perf_counter() - t
            self.waited_s += waited
            return waited


RECALLS = RecallPrecedence()

# Every brain call in flight in this process (perceive, recall, outcome: ``given_precedence``). The
# views' projector (``streams.runner``) gives way to them between its slices: beside a call it
# would take the interpreter from it at every point the call lets go (docs/speed.md, soak stalls
# round ten), and the projection has no caller waiting for it.
CALLS = RecallPrecedence()


def given_precedence(call):
    """Marks each run of ``call`` (a brain method) in flight in ``CALLS``."""
    @functools.wraps(call)
    def marked(*args, **kwargs):
        with CALLS.recalling():
            return call(*args, **kwargs)
    return marked
