"""Give the C heap's free pages back to the system after bulk work (glibc's ``malloc_trim``).

An import leaves much of what it allocated free but resident: glibc raises its mmap and trim
thresholds after freeing a large block (numpy's batch temporaries: a 5,000 x 512 float32
matrix is 10 MB), so later blocks up to that size come from the heap, and free memory inside
a heap (or a thread's arena) is never returned unless asked. Measured through ``Brain`` at 20k
events (``bench/memory.py``): RSS grew 9.5 kB an event, of which ``malloc_trim(0)`` returned
3.6 kB. ``HeapTrimmer`` asks after every ``every`` records folded, so the cost (a walk over the
free chunks: milliseconds) is spread over thousands of events and a single ``perceive`` never
pays it. Elsewhere than glibc (musl, macOS) it does nothing.

**When a bulk call returns, not inside it** (``HeapTrimmer.deferred``). As a runner listener the
trim ran in the middle of a batch's work: before the learner had read the batch, and while the
call still held its validated records, the decoded batch and the warehouse's Arrow columns. All
of that is freed only when the call returns, so the last batch of an import stayed resident as
free heap until the next 5,000 records. ``Brain.perceive_many`` now holds the trim for its
duration and trims on the way out when it is due. Measured through ``Brain`` at 100k events
(docs/speed.md, "Resident bytes"): see there for the numbers. Paths without a bulk call around
them (Kafka, replay) keep trimming from the listener.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hindbrain.streams.every_records import EveryRecords

TRIM_EVERY = 5_000  # records folded between two trims: one ``perceive_many`` batch of the default size


def _glibc(name: str, argtypes: list, restype):
    """The C library's function ``name`` typed, or None when this process's C library has none."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        function = getattr(libc, name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, restype
    return function


_TRIM = _glibc("malloc_trim", [ctypes.c_size_t], ctypes.c_int)
_MALLOPT = _glibc("mallopt", [ctypes.c_int, ctypes.c_int], ctypes.c_int)

MMAP_THRESHOLD = 128 * 1024  # glibc's initial threshold: a block this large or larger gets its own mapping
# Between bulk calls: a recall's numpy temporaries (~7 a recall of 140-400 kB at 100k events: the lexical
# scores, the candidates' vectors, the graph's matrix) come from the heap, where the next recall reuses them.
SERVING_MMAP_THRESHOLD = 2 << 20
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def fix_mmap_threshold(size: int = MMAP_THRESHOLD) -> bool:
    """Holds glibc's mmap threshold at ``size`` (which also stops its trim threshold moving): True if set.

    glibc raises the threshold to the size of each mapped block it frees (up to 32 MB), so after a batch's
    large temporaries (the static codes, the event documents built in one C call, numpy's batch arrays)
    blocks of that size come from the main heap and leave holes there that stay resident. Measured through
    ``bench/api.py`` at 100k (docs/speed.md, "Round thirteen's merge"): with the threshold held, resident at
    import 2,985 -> 2,846 B an event and settled 3,448 -> 3,300, ``perceive_many`` no slower (8,004 -> 9,856
    ev/s, on a machine slower by its ``bm25s`` reference). Only the brain's process: the embed workers are
    subprocesses with their own allocator settings. The C library is looked up once, at import
    (``find_library`` runs a subprocess), not at every brain's opening."""
    return bool(_MALLOPT(_M_MMAP_THRESHOLD, size)) if _MALLOPT is not None else False


class BulkThreshold:
    """The process's mmap threshold by what runs: ``MMAP_THRESHOLD`` while any bulk call holds it
    (``held``: an import's batch, a brain's opening), ``SERVING_MMAP_THRESHOLD`` otherwise.

    Held at 128 kB for good (round thirteen), every recall's temporaries of 140-400 kB got a
    mapping of their own: ~7 ``mmap``/``munmap`` pairs and ~380 page faults a recall at 100k
    events, ~0.45 ms of system time on the owner's recall thread (docs/speed.md, "Served recalls,
    round fourteen"); a recall replica, which never held it, paid none of that. A recall does not
    leave the holes the bulk threshold is for: its temporaries are freed when it returns and the
    next recall's, of the same sizes, take their place. ``mallopt`` is the process's, so the holders
    are counted here, not per brain. Thread-safe."""

    def __init__(self, bulk: int = MMAP_THRESHOLD, serving: int = SERVING_MMAP_THRESHOLD):
        if not (isinstance(bulk, int) and isinstance(serving, int) and 0 < bulk <= serving):
            raise ValueError(f"BulkThreshold: need ints 0 < bulk <= serving, not bulk={bulk!r}, serving={serving!r}")
        self.bulk, self.serving = bulk, serving
        self._holders = 0
        self._lock = threading.Lock()

    @contextmanager
    def held(self) -> Iterator[None]:
        """For the duration of a bulk call: the bulk threshold; the serving one once no call holds it."""
        with self._lock:
            self._holders += 1
            fix_mmap_threshold(self.bulk)
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if not self._holders:
                    fix_mmap_threshold(self.serving)

    def settle(self) -> bool:
        """Sets the threshold for what runs now (the bulk one if a call holds it): True if set."""
        with self._lock:
            return fix_mmap_threshold(self.bulk if self._holders else self.serving)


bulk_threshold = BulkThreshold()  # the process's: its brains' bulk calls hold it


def release_free_heap() -> bool:
    """Returns the heap's free pages to the system; True if the C library released any."""
    return bool(_TRIM(0)) if _TRIM is not None else False


class HeapTrimmer(EveryRecords):
    """A runner listener: ``release_free_heap`` after every ``every`` records it is shown,
    or, while a bulk call holds it (``deferred``), when the last such call returns.
    ``trims`` and ``spent_s`` say how often and at what cost (wall seconds in the trims).
    Thread-safe: the runner's listeners run on whichever thread appends."""

    def __init__(self, every: int = TRIM_EVERY, also: Callable[[], None] | None = None):
        super().__init__(every)
        self.also = also  # another allocator's release, run after each trim (embedded chDB's)
        self.last_error: BaseException | None = None  # what ``also`` last raised (the trim goes on)
        self.trims = 0
        self.spent_s = 0.0

    def _run(self) -> None:
        t = time.perf_counter()
        release_free_heap()
        if self.also is not None:
            try:
                self.also()
            except Exception as exc:  # noqa: BLE001 - memory not given back must not fail an ingest
                self.last_error = exc
        with self._lock:
            self.spent_s += time.perf_counter() - t
            self.trims += 1
