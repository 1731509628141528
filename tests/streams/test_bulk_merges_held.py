"""chDB's merges are held while a bulk import runs (``EmbeddedRunner.importing``, docs/speed.md "The event
document and the background, round twenty-three"): from the projector's round after a bulk call began until
``MERGES_LINGER_S`` after the last one ended, at most ``MERGES_HELD_ROUNDS`` rounds; the views hold every
event all the same, and the merges come back after."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from hindbrain import Brain
from hindbrain.streams import runner as runner_mod

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _events(start: int, count: int) -> list[dict]:
    return [{"tenant": "acme", "agent": f"a{n % 3}", "kind": "observation", "event_id": f"ev-{n:06d}",
             "ts": T0 + timedelta(seconds=n), "text": f"ticket {n}: the printer on floor {n % 7} jams",
             "system": "printer", "action": "print"} for n in range(start, start + count)]


def _open(path) -> Brain:
    return Brain.open(path, embedder="none")


def _settled(brain: Brain, timeout: float = 30.0) -> None:
    """Until the projector has every record appended in the views (the backlog the last call left)."""
    deadline = time.monotonic() + timeout
    while brain.runner.pending and time.monotonic() < deadline:
        time.sleep(0.01)
    assert brain.runner.pending == 0


def _merges_run(brain: Brain) -> bool:
    """Whether chDB merges now: ``OPTIMIZE`` is a merge, and the engine cancels it while merges are stopped."""
    try:
        brain.warehouse.command("OPTIMIZE TABLE events FINAL")
    except Exception as exc:  # noqa: BLE001 - chDB's ABORTED: "Cancelled merging parts"
        assert "Cancelled merging parts" in str(exc)
        return False
    return True


def _wait_for(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_merges_are_held_while_a_bulk_import_runs_and_come_back_after(tmp_path, monkeypatch):
    monkeypatch.setattr(runner_mod, "MERGES_LINGER_S", 1.0)  # long enough for a loaded box's next statement
    brain = _open(tmp_path / "brain")
    try:
        assert _merges_run(brain)
        with brain.runner.importing():  # as perceive_many's own block, held across the calls of one import
            for start in range(0, 6_000, 2_000):
                brain.perceive_many(_events(start, 2_000))
            _settled(brain)
            assert brain.runner.merges_held
            assert not _merges_run(brain)
        time.sleep(0.1)
        assert not _merges_run(brain)  # the linger: an import's next call comes back at once
        assert _wait_for(lambda: not brain.runner.merges_held)
        assert _merges_run(brain)
    finally:
        brain.close()


def test_a_small_call_holds_no_merges(tmp_path):
    brain = _open(tmp_path / "brain")
    try:
        for start in range(0, 4_000, 500):  # calls under BULK_EVENTS: a fleet's steady stream
            brain.perceive_many(_events(start, 500))
        _settled(brain)
        assert not brain.runner.merges_held
        assert _merges_run(brain)
    finally:
        brain.close()


def test_a_stream_of_bulk_calls_gets_its_merges_back_after_the_rounds_held(tmp_path, monkeypatch):
    monkeypatch.setattr(runner_mod, "MERGES_HELD_ROUNDS", 2)
    brain = _open(tmp_path / "brain")
    try:
        with brain.runner.importing():
            for start in range(0, 8_000, 2_000):
                brain.perceive_many(_events(start, 2_000))
                _settled(brain)  # a round each
            assert _wait_for(lambda: not brain.runner.merges_held)  # still inside the bulk
            assert _merges_run(brain)
    finally:
        brain.close()


def test_a_runner_closed_while_it_holds_the_merges_gives_them_back(tmp_path):
    brain = _open(tmp_path / "brain")
    try:
        with brain.runner.importing():
            brain.perceive_many(_events(0, 2_000))
            _settled(brain)
            assert brain.runner.merges_held
            brain.runner.close()
        assert _merges_run(brain)  # the warehouse outlives its runner here
    finally:
        brain.close()


@pytest.mark.parametrize("calls", [1, 5])
def test_the_views_hold_every_event_of_a_bulk_import_as_without_the_hold(tmp_path, monkeypatch, calls):
    """The same records through a brain that holds the merges and one that does not: the same rows."""
    digests = []
    for hold in (True, False):
        brain = _open(tmp_path / f"brain-{hold}")
        brain.runner.hold_merges = hold
        try:
            with brain.runner.importing():  # the hold lasts past the flush, however loaded the box
                for start in range(0, 10_000, 10_000 // calls):
                    brain.perceive_many(_events(start, 10_000 // calls))
                brain.runner.flush()
                assert _wait_for(lambda r=brain.runner: r.merges_held) if hold else not brain.runner.merges_held
            ids = {r[0] for r in brain.warehouse.query("SELECT event_id FROM events FINAL")}
            assert ids == {f"ev-{n:06d}" for n in range(10_000)}
            digests.append(brain.warehouse.digest())
        finally:
            brain.close()
    assert digests[0] == digests[1]
