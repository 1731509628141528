"""The learner's fold off the caller's thread (round fourteen, learning/runtime.py): a batch's fold runs on the
learner's thread, every read and the next append wait for it, close loses nothing, replay gives the same state."""

from __future__ import annotations

import threading
import time

import pytest

from hindbrain import Brain
from hindbrain.learning.learner import Learner
from hindbrain.learning.runtime import LearnerRuntime
from hindbrain.streams.processing import decoded_entries
from hindbrain.streams.sqlite_log import ALL_TOPICS

IAM = {"system": "IAM", "identity": "normal account", "action": "submit change", "expected": "success message",
       "actual": "no response"}


def trajectory(task: str, n: int = 0) -> list[dict]:
    """A failure then a success in one task: the learner's recovery rule teaches a unit from it."""
    return [
        {"tenant": "acme", "task": task, "kind": "anomaly", "text": f"clicked submit, nothing happened ({n})", **IAM},
        {"tenant": "acme", "task": task, "kind": "outcome", "text": "submit succeeded as admin", "system": "IAM",
         "identity": "admin account", "action": "submit change", "success": True},
    ]


@pytest.fixture
def slow_fold(monkeypatch):
    """Each fold on the learner's thread sleeps first (the caller's own drains do not): what the caller does
    right after ``perceive_many`` meets a fold still running. Records the threads that folded."""
    folders: list[str] = []
    learn = Learner.learn

    def slowly(self, batch):
        name = threading.current_thread().name
        folders.append(name)
        if name == "hindbrain-learner":
            time.sleep(0.3)
        return learn(self, batch)

    monkeypatch.setattr(Learner, "learn", slowly)
    return folders


def accepted_units(brain: Brain) -> list[str]:
    return [r["subject_ids"][0] for r in brain.sql("SELECT subject_ids FROM decisions WHERE kind = 'unit_accepted'")]


def test_a_batch_is_folded_off_the_callers_thread(tmp_path, slow_fold):
    with Brain.open(tmp_path, embedder="none") as b:
        slow_fold.clear()
        t = time.perf_counter()
        b.perceive_many(trajectory("t1"))
        returned = time.perf_counter() - t
        deadline = time.monotonic() + 10
        while not slow_fold and time.monotonic() < deadline:  # a read now would fold it here (the barrier)
            time.sleep(0.005)
        b.learning.wait_until_caught_up()
    assert slow_fold[:1] == ["hindbrain-learner"]  # inline before round fourteen: the caller's thread
    assert returned < 0.3  # the caller did not wait for the fold


def test_a_recall_right_after_perceive_many_sees_what_the_learner_learned(tmp_path, slow_fold):
    with Brain.open(tmp_path, embedder="none") as b:
        b.perceive_many(trajectory("t1"))
        pack = b.recall(tenant="acme", situation=IAM, trigger="anomaly")  # the fold still sleeps on its thread
        [unit] = accepted_units(b)
        assert unit in [i.id for i in pack.items]
        assert b.learning.learner.unit("acme", unit) is not None


def test_the_learners_records_for_a_batch_precede_the_next_batch(tmp_path, slow_fold):
    """The next append waits for the fold (the runner's gate): a restoring fold meets the learner's records
    where the live one applied them."""
    with Brain.open(tmp_path, embedder="none") as b:
        first = b.perceive_many(trajectory("t1"))
        second = b.perceive_many(trajectory("t2", 1))
        b.learning.wait_until_caught_up()
        order = [(d.record_type, d.record["envelope"]["record_id"], d.record["envelope"]["producer"])
                 for d in decoded_entries(b.log.read_all(0, 1000))]
    learned_first = next(n for n, (_, _, producer) in enumerate(order) if producer.startswith("learner"))
    at = {rid: n for n, (_, rid, _) in enumerate(order)}
    assert at[first[-1]] < learned_first < at[second[0]]


def test_close_while_the_learner_is_busy_loses_nothing(tmp_path, slow_fold):
    with Brain.open(tmp_path, embedder="none") as b:
        b.perceive_many(trajectory("t1") + trajectory("t2", 1))
        # closed at once: the thread is asleep in its fold; the close folds and appends what it has not
    with Brain.open(tmp_path, embedder="none") as b:
        assert len(accepted_units(b)) >= 1
        live = b.learning.learner
        end = b.log.end_offset(ALL_TOPICS, 0)
        (tmp_path / "cache" / "learner.snapshot").unlink()
    with Brain.open(tmp_path, embedder="none") as b:  # the whole log folded again: the same state
        assert b.log.end_offset(ALL_TOPICS, 0) == end  # nothing learned twice
        assert b.learning.learner.tenants == live.tenants and b.learning.learner.counts == live.counts


def test_replay_of_a_threaded_run_gives_the_live_state(tmp_path):
    """Batches, outcomes and recalls interleaved while the thread folds: the state a fold of the log rebuilds
    (snapshot removed) equals the live learner's."""
    with Brain.open(tmp_path, embedder="none") as b:
        for n in range(6):
            b.perceive_many(trajectory(f"t{n}", n) + [{"tenant": "acme", "agent": f"a{n}", "kind": "observation",
                                                       "text": f"disk on db-{n} is 91% full"}])
            pack = b.recall(tenant="acme", situation=IAM, trigger="anomaly")
            b.outcome(tenant="acme", recall_id=pack.recall_id, applied=[i.id for i in pack.items][:1],
                      success=n % 2 == 0)
        live = b.learning.learner
        tenants, counts = live.tenants, dict(live.counts)
    (tmp_path / "cache" / "learner.snapshot").unlink()
    with Brain.open(tmp_path, embedder="none") as b:
        assert b.learning.learner.tenants == tenants
    assert counts["perceived_event"] == 18


def test_readers_inside_a_log_group_do_not_wait_for_the_thread(tmp_path, slow_fold):
    """A server runs its calls inside the log's group (its lock held): the learner's thread never waits for
    that lock, so the call's own drain folds what the thread has not (no deadlock)."""
    with Brain.open(tmp_path, embedder="none") as b:
        done = []

        def grouped():
            with b.log.group():
                b.perceive_many(trajectory("t1"))
                done.append(b.pending_traits("acme"))
                b.perceive_many(trajectory("t2", 1))

        worker = threading.Thread(target=grouped)
        worker.start()
        worker.join(timeout=30)
        assert not worker.is_alive() and done == [[]]


def test_the_fold_inline_when_asked(tmp_path, monkeypatch, slow_fold):
    """``background=False``: the fold inside the append, as before round fourteen (the A/B arm)."""
    monkeypatch.setattr(LearnerRuntime.__init__, "__defaults__", (None, None, False))
    with Brain.open(tmp_path, embedder="none") as b:
        slow_fold.clear()
        b.perceive_many(trajectory("t1"))
        assert set(slow_fold) == {threading.current_thread().name} and b.learning._thread is None


def test_a_log_group_commits_with_what_the_learner_learned_from_it(tmp_path, slow_fold):
    """A server's group (HTTP) commits the learner's records with the records they came from (the log's
    ``before_group_commit``): a read in the next group sees them in the views, as when it folded inline."""
    with Brain.open(tmp_path, embedder="none") as b:
        with b.log.group():
            b.perceive_many(trajectory("t1"))
        # no read, no barrier: the thread still sleeps in its fold, yet the group's commit drained it
        producers = [d.record["envelope"]["producer"] for d in decoded_entries(b.log.read_all(0, 1000))]
        assert any(p.startswith("learner") for p in producers)
