"""Pause Python's cyclic garbage collector around bulk work.

Bulk ingest and replay allocate millions of short-lived, acyclic objects (dicts of decoded
records and rows); each allocation burst triggers collections that walk the whole heap,
including the large, long-lived recall index. Reference counting frees these objects
anyway, so pausing the cycle collector for the duration of one batch loses nothing and
measured +20-35% throughput here. Nesting is safe; the previous state is restored.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused():
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze_long_lived() -> None:
    """Move every object alive now out of the collector's generations (``gc.freeze``).

    Called once a brain has loaded its recall index and learner state: those objects live as
    long as the brain, and otherwise every full collection walks all of them. Measured with
    ``gc.callbacks`` in ``hindbrain serve`` at 100k units (startup, then 15 s of recalls at
    50/s): without it, one full collection stopped the server for 779 ms (a recall p99 of
    1.2 s in one run); with it, ten full collections took 25 ms each. ``thaw`` undoes it when
    the brain closes, so a closed brain's cycles can be collected again.
    """
    gc.freeze()


def thaw() -> None:
    gc.unfreeze()


REFREEZE_EVERY = 10_000  # records indexed between two freezes: bounds what a full collection walks


class Refreezer:
    """A runner listener that keeps full collections from growing with what was indexed.

    ``freeze_long_lived`` freezes what a brain holds at start-up; what it indexes afterwards
    (the soak: ~100 objects per event) stays in the collector's oldest generation, so each full
    collection walks all of it: in the issue-19 soak they grew from 34 ms to 177 ms in ten
    minutes and the recall p99 with them. Every ``every`` records this collects what is not
    frozen (bounded: at most ``every`` records' objects, so no cycle that is garbage now is
    frozen for good) and freezes the rest, so a full collection only ever walks the last
    ``every`` records' objects. ``gc.freeze`` itself moves lists: O(1). Objects frozen while
    alive and later dropped are still freed by reference counting; only a cycle made after
    its members were frozen waits for ``thaw`` (the brain's close).

    A bulk call holds a due refreeze until it returns (``deferred``): inside it the listener
    runs while the batch's records, messages and positions are alive (~45k tracked objects a
    batch of 5,000, 5 of every 6 objects the collection walked); after it they are freed by
    reference counting and the collection walks what outlives the call (~8k). Held for at most
    ``every`` more records. Thread-safe: the runner's listeners run on whichever thread appends.
    """

    def __init__(self, every: int = REFREEZE_EVERY):
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"Refreezer: field 'every' must be an int >= 1, not {every!r}")
        self.every = every
        self.since = 0  # records seen since the last freeze
        self.freezes = 0
        self._holders = 0  # bulk calls running inside ``deferred``
        self._lock = threading.Lock()

    def __call__(self, records) -> None:
        with self._lock:
            self.since += len(records)
            due = self._take_due()
        if due:
            self._refreeze()

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """For the duration of a bulk call: count what it indexes, refreeze (when due) once it and
        every other holder are done, after their temporaries are freed."""
        with self._lock:
            self._holders += 1
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                due = self._take_due()
            if due:
                self._refreeze()

    def _take_due(self) -> bool:
        """Under the lock: whether to refreeze now (and the count restarts). A held refreeze waits at most
        another ``every`` records: bulk calls that always overlap (a server's threads) must not stop the
        freezes, or full collections would grow with the data again."""
        if self.since < self.every or (self._holders and self.since < 2 * self.every):
            return False
        self.since = 0
        self.freezes += 1
        return True

    @staticmethod
    def _refreeze() -> None:
        gc.collect()
        gc.freeze()
