"""Documents read into objects leave the collector's generations (design.md §issue-28, the tail).

A tenant's documents are packed rows until something reads one (``recall.doc_table``); the
object is then kept for good, so a recall's candidates become long-lived objects, ~4 tracked
objects a document. Nothing froze them: ``freeze_long_lived`` runs at start-up and the
``Refreezer`` after records are indexed, and a served brain mostly reads. So the oldest
generation grew by ~100 documents a recall, and each full collection walked all of them:
measured at 100k events after 320 recalls, 16k documents, ~60k objects, one full collection
150–230 ms (loaded machine) landing inside a recall, the slowest of a run of 300.

``DocFreezer.settle`` runs after each recall (outside the engine's ``gc_paused``): once
``every`` documents were made since the last freeze, it collects the young generations (cheap:
at most a few thousand objects, the recall's cyclic garbage among them) and freezes what is
alive (``gc.freeze``: O(1)). A full collection then only walks what was made since. Not a full
collection first (the ``Refreezer``'s way): its cost is what this avoids, on a recall's path.
A garbage cycle already in the oldest generation at that moment is frozen with the rest and
freed at the brain's close (``thaw``); with ``every`` = 2,048 that is at most one freeze per
2,048 documents ever read.
"""

from __future__ import annotations

import gc

FREEZE_EVERY = 2_048  # documents made into objects between two freezes


class DocFreezer:
    """Counts documents made into objects (``note``) and freezes them in batches (``settle``)."""

    def __init__(self, every: int = FREEZE_EVERY):
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"DocFreezer: field 'every' must be an int >= 1, not {every!r}")
        self.every = every
        self.made = 0  # since the last freeze (threads may race on it: a count off by one is harmless)
        self.freezes = 0

    def note(self) -> None:
        self.made += 1

    def settle(self) -> bool:
        """Freezes the objects alive now when ``every`` documents were made since the last
        freeze; returns whether it did."""
        if self.made < self.every:
            return False
        self.made = 0
        self.freezes += 1
        gc.collect(1)
        gc.freeze()
        return True


freezer = DocFreezer()  # the process's: every table notes into it, every recall settles it
