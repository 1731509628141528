"""Bulk calls in flight, and how long ago the last one ended: what a background thread that gives way to a
bulk import reads — the neural tier's embedding (``recall.semantic``) and chDB's merges (``streams.runner``),
each under its own condition and with its own linger (docs/speed.md, rounds twenty-two and twenty-three)."""

from __future__ import annotations

import threading
import time


class BulkCalls:
    """The bulk calls running and when the last one ended, kept under the owner's condition ``cond``: the
    owner calls ``begin``, ``end`` and ``quiet_in`` with it held (so it can change state of its own in the
    same hold), and ``end`` notifies it, so a thread waiting on ``cond`` for ``quiet_in`` to reach 0 — no
    call running and ``linger`` seconds since the last — wakes to count again."""

    def __init__(self, cond: threading.Condition, linger: float):
        self._cond, self.linger = cond, linger
        self.running = 0
        self._ended = -linger  # monotonic time the last call ended: long ago

    def begin(self) -> None:
        self.running += 1

    def end(self) -> None:
        self.running -= 1
        self._ended = time.monotonic()
        self._cond.notify_all()

    def quiet_in(self, now: float | None = None) -> float | None:
        """Seconds until the bulk calls are quiet (0: they are); None while one runs (its ``end`` notifies)."""
        if self.running:
            return None
        now = time.monotonic() if now is None else now
        return max(0.0, self._ended + self.linger - now)
