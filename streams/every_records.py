"""A runner listener that runs a piece of upkeep after every ``every`` records it is shown, and holds it
while bulk calls run (``deferred``): their batch's temporaries are freed when they return, so the upkeep
(a collection, a heap trim) then walks or releases what outlives them. The garbage collector's refreeze
(``streams/gc_pause.Refreezer``) and the heap trim (``hindbrain/heap_trim.HeapTrimmer``) are two of these."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class EveryRecords:
    """Counts the records shown (``__call__``: the runner's listeners run on whichever thread appends) and
    runs ``_run`` once ``every`` have been, or, while a bulk call holds it (``deferred``), when the last such
    call returns. ``HELD_AT_MOST``: how many intervals a held run may wait (None: until the holders are
    done); a subclass whose upkeep must not stop while bulk calls always overlap (a server's threads) sets
    it. Thread-safe."""

    HELD_AT_MOST: int | None = None

    def __init__(self, every: int):
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"{type(self).__name__}: field 'every' must be an int >= 1, not {every!r}")
        self.every = every
        self.since = 0  # records seen since the last run
        self._holders = 0  # bulk calls running inside ``deferred``
        self._lock = threading.Lock()

    def __call__(self, records) -> None:
        with self._lock:
            self.since += len(records)
            due = self._take_due()
        if due:
            self._run()

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """For the duration of a bulk call: count what it indexes, run (when due) once it and every
        other holder are done, after their temporaries are freed."""
        with self._lock:
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                due = self._take_due()
            if due:
                self._run()

    def _take_due(self) -> bool:
        """Under the lock: whether to run now (and the count restarts)."""
        if self.since < self.every:
            return False
        if self._holders and (self.HELD_AT_MOST is None or self.since < self.HELD_AT_MOST * self.every):
            return False
        self.since = 0
        return True

    def _run(self) -> None:
        raise NotImplementedError
