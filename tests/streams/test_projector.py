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


def inserting_threads(brain: Brain) -> list[str]:
    """The name of the thread of every insert into the views from now on."""
    names: list[str] = []
    insert = brain.warehouse.insert_arrow

    def named(table, data):
        names.append(threading.current_thread().name)
        return insert(table, data)

    brain.warehouse.insert_arrow = named
    return names


def test_a_bulk_write_far_ahead_of_the_projector_waits_so_the_backlog_stays_bounded_and_never_inserts_itself(tmp_path):
    # the writer waits for the projector past the bound (round fifteen): it neither holds the whole
    # import's records behind it nor projects them itself
    with Brain.open(tmp_path, embedder="none", batch_size=10) as brain:
        brain.runner.flush()
        brain.runner.backlog_records = 30
        names = inserting_threads(brain)
        held = HeldInserts(brain)  # the projector's first round is stuck in its insert
        ids = brain.perceive_many(events(0, 20))
        assert held.entered.wait(30)
        more = threading.Thread(target=lambda: ids.extend(brain.perceive_many(events(20, 10))))
        more.start()
        more.join(20)
        assert not more.is_alive()  # 20 taken and 10 pending: at the bound, not over it
        waiting = threading.Thread(target=lambda: ids.extend(brain.perceive_many(events(40, 20))))
        waiting.start()
        waiting.join(1.0)
        assert waiting.is_alive()  # 60 > 30: the writer waits for the projector (its records are in the log)
        held.release()
        waiting.join(30)
        assert not waiting.is_alive()
        with CALLS.recalling():  # a call in flight the projector would give way to: it must not, past half the bound
            for start in range(60, 260, 20):
                ids += brain.perceive_many(events(start, 20))
                assert brain.runner.pending <= 30
        assert brain.runner.waits >= 1 and brain.runner.waited_s > 0.5
        assert names and set(names) == {"hindbrain-projector"}  # the writer never inserted itself
        assert {row["event_id"] for row in brain.sql("SELECT event_id FROM events FINAL")} == set(ids)


def test_a_writer_waiting_for_the_projector_is_not_given_way_to(tmp_path):
    # the projector gives way to calls in flight; a call that waits for it must not count as one, or
    # each give-way point waits its whole patience for a call that waits for it (round fifteen)
    with Brain.open(tmp_path, embedder="none", batch_size=10) as brain:
        brain.runner.flush()
        brain.runner.backlog_records = 1_000  # a backlog under half the bound: the projector gives way
        with CALLS.recalling():  # the call in flight: it waits for the projector below
            waited = CALLS.waited_s
            brain.perceive_many(events(0, 12))  # due: a round starts, and gives way to this call
            started = time.perf_counter()
            assert len(brain.sql("SELECT event_id FROM events FINAL")) == 12  # the read waits for the round
            assert time.perf_counter() - started < 0.9 * GIVE_WAY_S or CALLS.waited_s - waited < 0.9 * GIVE_WAY_S


def test_the_runners_offsets_are_written_with_the_next_append_and_a_reopen_projects_what_they_missed(tmp_path):
    from hindbrain.streams.runner import CONSUMER
    from hindbrain.streams.sqlite_log import ALL_TOPICS

    with Brain.open(tmp_path, embedder="none", batch_size=10) as brain:
        brain.runner.flush()
        log = brain.runner.log
        written = log._db.execute("SELECT next_offset FROM consumer_offsets WHERE consumer = ?", (CONSUMER,)).fetchone()
        ids = brain.perceive_many(events(0, 12))
        brain.runner.flush()
        end = log.end_offset(ALL_TOPICS, 0)
        assert log.committed(CONSUMER, ALL_TOPICS, 0) == end  # at once, for this process
        # not yet in the file: no sync of its own; the next append writes it in its transaction
        assert log._db.execute("SELECT next_offset FROM consumer_offsets WHERE consumer = ?",
                               (CONSUMER,)).fetchone() == written
        ids.append(brain.perceive(tenant="acme", text="the ledger export times out"))
        assert log._db.execute("SELECT next_offset FROM consumer_offsets WHERE consumer = ?",
                               (CONSUMER,)).fetchone() == (end,)
    with Brain.open(tmp_path, embedder="none", batch_size=10) as brain:
        assert {row["event_id"] for row in brain.sql("SELECT event_id FROM events FINAL")} == set(ids)


def test_a_writer_inside_a_log_group_never_waits_and_the_group_is_held_to_the_bound_after_it(tmp_path):
    with Brain.open(tmp_path, embedder="none", batch_size=10) as brain:
        brain.runner.flush()
        brain.runner.backlog_records = 30
        held = HeldInserts(brain)
        ids = brain.perceive_many(events(0, 20))
        assert held.entered.wait(30)  # a round in flight, held
        with brain.log.group():  # a server's group commit: 60 more records, over the bound, no wait inside
            ids += brain.perceive_many(events(20, 30))
            ids += brain.perceive_many(events(50, 30))
        assert brain.runner.pending == 80 and brain.runner.waits == 0
        after = threading.Thread(target=brain.runner.wait_for_room)
        after.start()
        after.join(1.0)
        assert after.is_alive()  # what the server runs after its group: it waits for the projector
        held.release()
        after.join(30)
        assert not after.is_alive() and brain.runner.pending <= 30 and brain.runner.waits == 1
        assert {row["event_id"] for row in brain.sql("SELECT event_id FROM events FINAL")} == set(ids)
