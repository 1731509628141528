"""HeapTrimmer: free heap pages go back to the system after every ``every`` records."""

import os

import pytest

from hindbrain import heap_trim
from hindbrain.heap_trim import HeapTrimmer, release_free_heap


def resident() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(heap_trim._TRIM is None or not os.path.exists("/proc/self/statm"),
                    reason="needs glibc's malloc_trim and /proc (Linux)")
def test_freed_heap_blocks_leave_the_resident_set():
    """Blocks below the mmap threshold freed between live ones (holes the heap's top cannot
    give back by itself) stay resident until trimmed."""
    blocks = [bytearray(os.urandom(64)) * 1500 for _ in range(1500)]  # ~96 kB each, ~144 MB
    kept = blocks[::2]
    del blocks
    before = resident()
    assert release_free_heap()
    assert before - resident() > 30 << 20  # ~72 MB of holes, less the pages the live blocks share
    del kept


def test_it_trims_once_every_so_many_records(monkeypatch):
    calls = []
    monkeypatch.setattr(heap_trim, "release_free_heap", lambda: calls.append(1) or True)
    trimmer = HeapTrimmer(every=3)
    for batch in ([1], [2], [3, 4], [5], [6, 7, 8, 9]):
        trimmer(batch)
    assert len(calls) == trimmer.trims == 2


@pytest.mark.parametrize("every", [0, "5"])
def test_a_bad_interval_is_refused_by_name(every):
    with pytest.raises(ValueError, match="every"):
        HeapTrimmer(every=every)


def test_a_held_trim_waits_for_the_last_holder(monkeypatch):
    """While bulk calls hold it, the listener only counts; the trim comes once, as the last one
    returns, and only if it is due."""
    calls = []
    monkeypatch.setattr(heap_trim, "release_free_heap", lambda: calls.append(1) or True)
    trimmer = HeapTrimmer(every=3)
    with trimmer.deferred():
        with trimmer.deferred():
            trimmer([1, 2, 3, 4])
            trimmer([5, 6, 7])
        assert calls == []  # another call still holds it
    assert calls == [1] and trimmer.trims == 1
    with trimmer.deferred():
        trimmer([8, 9])  # not due: nothing on the way out
    assert calls == [1]
    trimmer([10])  # due again, nobody holding: the listener trims
    assert len(calls) == 2


def test_perceive_many_trims_after_its_batch_is_done(lexical_brain, monkeypatch):
    """The trim runs once the call has returned (its records freed), not inside the append."""
    import inspect

    inside = []
    monkeypatch.setattr(heap_trim, "release_free_heap",
                        lambda: inside.append(any(f.function == "_perceive_many" for f in inspect.stack())))
    lexical_brain.heap_trimmer.every = 3
    lexical_brain.perceive_many([{"tenant": "t", "agent": "a", "text": f"event {n}"} for n in range(5)])
    assert inside == [False]


def test_another_allocators_release_runs_with_each_trim_and_its_error_is_kept(monkeypatch):
    monkeypatch.setattr(heap_trim, "release_free_heap", lambda: True)
    released = []

    def release():
        released.append(1)
        if len(released) == 2:
            raise RuntimeError("engine closed")

    trimmer = HeapTrimmer(every=2, also=release)
    trimmer([1, 2])
    trimmer([3, 4])  # its release fails: kept, the ingest goes on
    assert released == [1, 1] and trimmer.trims == 2
    assert isinstance(trimmer.last_error, RuntimeError)


def test_the_embedded_engine_gives_its_free_pages_back(lexical_brain):
    """``SYSTEM JEMALLOC PURGE`` on the canceller's session: accepted by the embedded chDB."""
    lexical_brain.warehouse.release_memory()



# After a mapped block of 1 MB is freed, glibc (dynamic threshold) serves a 300 kB block from the heap; held at
# 128 kB, each such block gets its own mapping; held at the serving threshold (2 MB), from the heap again. A block
# is counted as mapped by glibc's own mark, the IS_MMAPPED bit (2) of the chunk's size word just below the user
# pointer (what ``free`` reads to choose ``munmap``). The test used to count pointers 16 bytes past a page
# boundary, where a mapped block's sits; but a heap block sits there too now and then (the heap's layout moves
# with address-space randomisation: 3 of 711 runs of the serving arm counted one), which failed that arm. A bare
# process (``heap_trim`` loaded alone: importing the ``hindbrain`` package leaves ~19 MB of free holes in the heap,
# which would serve the blocks whatever the threshold): its heap has no free hole of 300 kB that could serve the
# block either way.
_MAPPED_AFTER_A_FREE = """
import ctypes, ctypes.util, importlib.util, sys
spec = importlib.util.spec_from_file_location("heap_trim", sys.argv[2])  # not the package: its imports leave holes
heap_trim = importlib.util.module_from_spec(spec)
spec.loader.exec_module(heap_trim)
SERVING_MMAP_THRESHOLD, fix_mmap_threshold = heap_trim.SERVING_MMAP_THRESHOLD, heap_trim.fix_mmap_threshold
libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.free(libc.malloc(1 << 20))
if sys.argv[1] == "held":
    assert fix_mmap_threshold()
if sys.argv[1] == "serving":
    assert fix_mmap_threshold(SERVING_MMAP_THRESHOLD)
blocks = [libc.malloc(300_000) for _ in range(4)]
print(sum(ctypes.c_size_t.from_address(p - 8).value & 2 == 2 for p in blocks))
"""


@pytest.mark.skipif(heap_trim._MALLOPT is None, reason="needs glibc's mallopt")
@pytest.mark.parametrize("arm", ["moving", "held", "serving"])
def test_a_held_mmap_threshold_keeps_large_blocks_mapped(arm):
    """``fix_mmap_threshold``: after a large free, large blocks are still mapped (no holes left in the heap when
    they are freed); without it, glibc's moving threshold serves them from the heap, and so does the serving
    threshold (a recall's temporaries: no mapping and no page faults of their own)."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _MAPPED_AFTER_A_FREE, arm, heap_trim.__file__], capture_output=True,
                         text=True, timeout=60, check=True).stdout.split()[-1]
    assert int(out) == (4 if arm == "held" else 0)


def _thresholds(monkeypatch) -> list[int]:
    """What ``mallopt`` is asked to set the mmap threshold to, in order (nothing reaches the C library)."""
    sets: list[int] = []
    monkeypatch.setattr(heap_trim, "_MALLOPT", lambda param, size: sets.append(size) or 1
                        if param == heap_trim._M_MMAP_THRESHOLD else 0)
    return sets


def test_the_bulk_threshold_is_held_until_the_last_holder_leaves(monkeypatch):
    """Nested or concurrent bulk calls keep 128 kB; the serving threshold comes back when the last one leaves,
    also when it raised; ``settle`` sets the one for what runs now."""
    sets = _thresholds(monkeypatch)
    threshold = heap_trim.BulkThreshold(bulk=128 << 10, serving=2 << 20)
    assert threshold.settle() and sets == [2 << 20]
    with threshold.held():
        with threshold.held():
            assert sets[-1] == 128 << 10
            assert threshold.settle() and sets[-1] == 128 << 10
        assert sets[-1] == 128 << 10
    assert sets[-1] == 2 << 20
    with pytest.raises(RuntimeError), threshold.held():
        raise RuntimeError("a refused batch")
    assert sets[-2:] == [128 << 10, 2 << 20]


@pytest.mark.parametrize(("bulk", "serving"), [(0, 1), (2 << 20, 128 << 10), (128 << 10, "2 MB")])
def test_bad_thresholds_are_refused(bulk, serving):
    with pytest.raises(ValueError, match="bulk <= serving"):
        heap_trim.BulkThreshold(bulk=bulk, serving=serving)


def test_a_brain_maps_a_batchs_temporaries_but_not_a_recalls(tmp_path, monkeypatch):
    """Opening a brain and ``perceive_many`` run with the 128 kB threshold (a batch's large temporaries mapped,
    no holes left in the heap); a recall runs with the serving one (its temporaries from the heap: each mapped
    cost ~380 page faults a recall at 100k events)."""
    from hindbrain import Brain
    from hindbrain.recall.engine import RecallEngine

    sets = _thresholds(monkeypatch)
    seen: dict[str, int] = {}
    recall = RecallEngine.recall
    monkeypatch.setattr(RecallEngine, "recall", lambda self, q: seen.setdefault("recall", sets[-1]) and recall(self, q))
    with Brain.open(tmp_path / "home", embedder="none") as brain:
        assert heap_trim.MMAP_THRESHOLD in sets  # held while it opened
        assert sets[-1] == heap_trim.SERVING_MMAP_THRESHOLD
        brain.runner.listeners.append(lambda records: seen.setdefault("batch", sets[-1]))
        brain.perceive_many([{"tenant": "t", "agent": "a", "text": f"event {n} about the printer"} for n in range(3)])
        assert sets[-1] == heap_trim.SERVING_MMAP_THRESHOLD
        assert brain.recall(tenant="t", agent="a", query="the printer").items
    assert seen == {"batch": heap_trim.MMAP_THRESHOLD, "recall": heap_trim.SERVING_MMAP_THRESHOLD}
