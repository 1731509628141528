"""chDB's merge threads run under SCHED_IDLE, the brain's own and chDB's query threads do not
(``streams.thread_priority``, docs/speed.md "The caller's wall, round twenty-one"): a bulk import's
caller no longer waits in its core's run queue behind the merges its inserts leave."""

from __future__ import annotations

import os
import threading

import pytest

from hindbrain import Brain
from hindbrain.streams import columnar
from hindbrain.streams.thread_priority import IDLE_NAMES, BackgroundIdler, thread_name

pytestmark = pytest.mark.skipif(getattr(os, "SCHED_IDLE", None) is None or not os.path.isdir("/proc/self/task"),
                                reason="SCHED_IDLE and /proc are Linux's")


class Named:
    """A thread that sleeps until released, its kernel name (``comm``) set to ``name`` as chDB names its own."""

    def __init__(self, name: str) -> None:
        self._go, self._done = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._go.wait()
        with open(f"/proc/self/task/{self.tid}/comm", "w") as f:
            f.write(name)

    def _run(self) -> None:
        self._go.set()
        self._done.wait()

    @property
    def tid(self) -> int:
        return self._thread.native_id

    def policy(self) -> int:
        return os.sched_getscheduler(self.tid)

    def end(self) -> None:
        self._done.set()
        self._thread.join()


@pytest.fixture
def threads():
    made: list[Named] = []
    yield lambda name: made.append(Named(name)) or made[-1]
    for t in made:
        t.end()


def test_merge_threads_are_lowered_and_query_threads_are_not(threads):
    merge, schedule, query = threads("MergeMutate"), threads("BgSchPool"), threads("ThreadPool")
    idler = BackgroundIdler()
    assert idler.lower() >= 2
    assert (merge.policy(), schedule.policy()) == (os.SCHED_IDLE, os.SCHED_IDLE)
    assert query.policy() == os.sched_getscheduler(0) == os.SCHED_OTHER  # the caller's thread stays too
    assert {merge.tid, schedule.tid} <= idler.lowered and query.tid not in idler.lowered


def test_a_merge_thread_started_later_is_lowered_by_the_next_call(threads):
    idler = BackgroundIdler()
    idler.lower()
    late = threads("MergeMutate")  # chDB starts a pool's threads as work first needs them
    assert late.policy() == os.SCHED_OTHER
    assert idler.lower() == 1 and late.policy() == os.SCHED_IDLE
    assert idler.lower() == 0  # each thread's name read once


def test_disabled_lowers_nothing(threads):
    merge = threads("MergeMutate")
    assert BackgroundIdler(enabled=False).lower() == 0 and merge.policy() == os.SCHED_OTHER


def test_a_brains_projector_lowers_chdbs_merge_threads_and_not_itself(tmp_path):
    # the projector's rounds lower the merge threads chDB's inserts started; its own thread, which holds the
    # interpreter lock at times, and the caller's stay at the brain's priority
    n = 2 * columnar.MIN_BATCH
    with Brain.open(tmp_path, embedder="none", batch_size=n, merges_idle=True) as brain:
        for start in range(0, 8 * n, n):
            brain.perceive_many([{"tenant": "acme", "agent": "a", "text": f"the export of report {i} hangs"}
                                 for i in range(start, start + n)])
            brain.runner.flush()
        lowered = {tid: thread_name(tid) for tid in brain.runner.idler.lowered}
        projector = brain.runner._projector.native_id
        assert lowered and set(lowered.values()) <= IDLE_NAMES
        assert "MergeMutate" in lowered.values()
        assert all(os.sched_getscheduler(tid) == os.SCHED_IDLE for tid in lowered)
        assert os.sched_getscheduler(projector) == os.sched_getscheduler(0) == os.SCHED_OTHER


def test_by_default_the_runner_lowers_nothing(tmp_path):
    # off by default (settings.merges_idle): a quiet box measured no gain, and a thread under SCHED_IDLE cannot be
    # raised again without privilege, so merges could starve while both cores stay busy
    with Brain.open(tmp_path, embedder="none") as brain:
        brain.perceive_many([{"tenant": "acme", "agent": "a", "text": f"report {i} hangs"} for i in range(50)])
        brain.runner.flush()
        assert not brain.runner.idler.enabled and not brain.runner.idler.lowered
