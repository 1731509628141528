"""Give the C heap's free pages back to the system after bulk work (glibc's ``malloc_trim``).

An import leaves much of what it allocated free but resident: glibc raises its mmap and trim
thresholds after freeing a large block (numpy's batch temporaries: a 5,000 x 512 float32
matrix is 10 MB), so later blocks up to that size come from the heap, and free memory inside
a heap (or a thread's arena) is never returned unless asked. Measured through ``Brain`` at 20k
events (``bench/memory.py``): RSS grew 9.5 kB an event, of which ``malloc_trim(0)`` returned
3.6 kB. ``HeapTrimmer`` asks after every ``every`` records folded, so the cost (a walk over the
free chunks: milliseconds) is spread over thousands of events and a single ``perceive`` never
pays it. Elsewhere than glibc (musl, macOS) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time

TRIM_EVERY = 5_000  # records folded between two trims: one ``perceive_many`` batch of the default size


def _malloc_trim():
    """glibc's ``malloc_trim``, or None when this process's C library has none."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def release_free_heap() -> bool:
    """Returns the heap's free pages to the system; True if the C library released any."""
    return bool(_TRIM(0)) if _TRIM is not None else False


class HeapTrimmer:
    """A runner listener: ``release_free_heap`` after every ``every`` records it is shown.
    ``trims`` and ``spent_s`` say how often and at what cost (wall seconds in the trims)."""

    def __init__(self, every: int = TRIM_EVERY):
        if not isinstance(every, int) or every < 1:
            raise ValueError(f"HeapTrimmer: field 'every' must be an int >= 1, not {every!r}")
        self.every = every
        self.since = 0
        self.trims = 0
        self.spent_s = 0.0

    def __call__(self, records) -> None:
        self.since += len(records)
        if self.since >= self.every:
            self.since = 0
            t = time.perf_counter()
            release_free_heap()
            self.spent_s += time.perf_counter() - t
            self.trims += 1
