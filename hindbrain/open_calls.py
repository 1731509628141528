"""The calls running on a ``Brain``, so that ``close`` neither pulls the log, the views or the index
from under a call nor lets a call start on parts already released.

Before (round twenty-four): a recall, perceive, learn or SQL call running on another thread while
``close`` ran failed with whatever part it touched first — ``RuntimeError: SemanticIndex is closed``,
``the runner is closed``, sqlite's ``ProgrammingError: Cannot operate on a closed database``,
clickhouse-connect's ``The client has been closed`` — internal errors, none naming what happened.
Now ``close`` (1) refuses new calls with ``BrainClosed``, (2) waits until the calls already running
have returned, (3) releases the parts. A call made from inside a running call (``sql`` →
``tenant_sql``) is part of it, and a ``close`` made inside a call does not wait for its own thread.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable


class BrainClosed(RuntimeError):
    """The brain was closed (or is closing): no call starts after ``close()`` began. The calls already
    running when it began finish first; what they acknowledged is in the log."""


class OpenCalls:
    """Counts a brain's running calls per thread; ``close`` refuses new ones and waits for the rest."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())  # a plain lock: ~1 µs a call, not a generator's ~5
        self._running = 0
        self._closing = False
        self._mine = threading.local()  # this thread's depth of nested calls

    def enter(self, name: str) -> int:
        """Start one public call, returning this thread's depth before it (for ``leave``): ``BrainClosed``
        naming ``name`` once ``close`` began, unless this thread is already inside a call (a nested call
        belongs to the running one)."""
        depth = getattr(self._mine, "depth", 0)
        if depth == 0:
            with self._changed:
                if self._closing:
                    raise BrainClosed(f"{name}: the brain is closed")
                self._running += 1
        self._mine.depth = depth + 1
        return depth

    def leave(self, depth: int) -> None:
        """End the call ``enter`` started (``depth``: what it returned)."""
        self._mine.depth = depth
        if depth == 0:
            with self._changed:
                self._running -= 1
                if self._closing:
                    self._changed.notify_all()

    def close(self) -> None:
        """Refuse new calls, then wait until every running call of another thread has returned."""
        own = 1 if getattr(self._mine, "depth", 0) else 0
        with self._changed:
            self._closing = True
            self._changed.wait_for(lambda: self._running <= own)


def while_open(method: Callable) -> Callable:
    """A ``Brain`` method run as one of its calls (``OpenCalls.enter`` and ``leave``)."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        depth = self.calls.enter(name)
        try:
            return method(self, *args, **kwargs)
        finally:
            self.calls.leave(depth)

    name = method.__name__

    return call
