"""Pause Python's cyclic garbage collector around bulk work.

Bulk ingest and replay allocate millions of short-lived, acyclic objects (dicts of decoded
records and rows); each allocation burst triggers collections that walk the whole heap,
including the large, long-lived recall index. Reference counting frees these objects
anyway, so pausing the cycle collector for the duration of one batch loses nothing and
measured +20-35% throughput here. Nesting is safe; the previous state is restored.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager

from hindbrain.streams.every_records import EveryRecords


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


class Refreezer(EveryRecords):
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

    HELD_AT_MOST = 2  # a held refreeze waits at most one more ``every``: full collections must not grow again

    def __init__(self, every: int = REFREEZE_EVERY):
        super().__init__(every)
        self.freezes = 0

    def _run(self) -> None:
        gc.collect()
        gc.freeze()
        with self._lock:
            self.freezes += 1
