"""The micro-batch an append makes due is projected off the writer's path (``streams.runner``):
the call that appended its last record returns before the views are written, and every read
still sees every write acknowledged before it (it waits for the batch in flight)."""

from __future__ import annotations

import threading
import time

from hindbrain import Brain
from hindbrain.switching import CALLS, GIVE_WAY_S


class HeldInserts:
    """Holds every insert into the views until ``release`` (a slow warehouse, made slow on purpose)."""

    def __init__(self, brain: Brain):
        self.entered, self.gate = threading.Event(), threading.Event()
        insert = brain.warehouse.insert_arrow

        def held(table, data):
            self.entered.set()
            assert self.gate.wait(20), "the test never released the insert"
            return insert(table, data)

        brain.warehouse.insert_arrow = held

    def release(self) -> None:
        self.gate.set()


def events(start: int, n: int) -> list[dict]:
    return [{"tenant": "acme", "text": f"the export of report {i} hangs at 99%"} for i in range(start, start + n)]


def test_the_append_that_makes_a_batch_due_returns_before_the_views_are_written_and_reads_still_see_it(tmp_path):
    with Brain.open(tmp_path, embedder="none", batch_size=10) as brain:
        brain.runner.flush()
        held = HeldInserts(brain)
        try:
            started = time.perf_counter()
            ids = brain.perceive_many(events(0, 12))  # due: 12 >= 10 records pending
            assert held.entered.wait(30), "the due batch was never projected"
            # the insert is still held, yet the writer returned, and the next write too
            more = brain.perceive(tenant="acme", text="the ledger export times out")
            assert time.perf_counter() - started < 10  # inline, the first write waited for the release
            assert brain.runner.pending >= 13  # in flight or waiting: none of it in the views yet
            read: list = []
            reader = threading.Thread(target=lambda: read.extend(brain.sql("SELECT event_id FROM events FINAL")))
            reader.start()
            reader.join(0.5)
            assert reader.is_alive()  # a read waits for the batch in flight: it never misses a write
        finally:
            held.release()
        reader.join(30)
        assert {row["event_id"] for row in read} == {*ids, more}
        assert brain.runner.pending == 0


def test_the_background_projection_gives_way_to_a_brain_call_in_flight(tmp_path):
    with Brain.open(tmp_path, embedder="none", batch_size=10) as brain:
        brain.runner.flush()
        waited = CALLS.waited_s
        with CALLS.recalling():  # a call in flight (a recall on another thread, say) until the projector waited
            ids = brain.perceive_many(events(0, 12))  # due: the projector starts meanwhile
            deadline = time.monotonic() + 30
            while CALLS.waited_s - waited < 0.9 * GIVE_WAY_S and time.monotonic() < deadline:
                time.sleep(0.01)
        assert CALLS.waited_s - waited >= 0.9 * GIVE_WAY_S  # it gave way to the call (its whole patience)
        assert {row["event_id"] for row in brain.sql("SELECT event_id FROM events FINAL")} == set(ids)


def test_the_projector_thread_gives_arrows_free_pages_back_after_its_insert(tmp_path, monkeypatch):
    # pyarrow's allocator keeps a heap per thread: what the projector's columns freed stays
    # resident unless that thread asks its pool to release it (+950 B an event measured).
    from hindbrain.streams import runner as runner_module

    released: list[str] = []
    monkeypatch.setattr(runner_module, "release_arrow_pool", lambda: released.append(threading.current_thread().name))
    with Brain.open(tmp_path, embedder="none", batch_size=10) as brain:
        brain.runner.flush()
        ids = brain.perceive_many(events(0, 12))  # due: projected by the projector thread
        deadline = time.monotonic() + 30
        while not released and time.monotonic() < deadline:  # a read now would project it inline
            time.sleep(0.01)
        assert {row["event_id"] for row in brain.sql("SELECT event_id FROM events FINAL")} == set(ids)
    assert released and all(name != threading.main_thread().name for name in released)


def test_a_bulk_write_far_ahead_of_the_projector_projects_inline_so_the_backlog_stays_bounded(tmp_path):
    # the projector gives way to calls in progress; a bulk import must not leave its whole
    # backlog of records held in memory behind it
    from hindbrain.streams.runner import BACKLOG_BATCHES

    with Brain.open(tmp_path, embedder="none", batch_size=10) as brain:
        brain.runner.flush()
        with CALLS.recalling():  # the projector waits for this call: only backpressure can project
            for start in range(0, 200, 20):
                brain.perceive_many(events(start, 20))
                assert brain.runner.pending < BACKLOG_BATCHES * 10 + 20
        assert len(brain.sql("SELECT event_id FROM events FINAL")) == 200
