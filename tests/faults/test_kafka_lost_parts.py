"""Fault injection, the fleet path: views that lost parts, projected by the Kafka projector.

A merge a full disk broke loses rows of rounds the group committed long before (docs/faults.md,
round sixteen): resuming from the committed offsets never projects them again. Here the projector
(``KafkaProjector``, in the process of a single-node ``Brain.open(kafka=...)`` with chDB views, as
``hindbrain worker`` runs it) rebuilds the views from the topics' start (``streams.rebuild``),
against the test broker (``HINDBRAIN_TEST_KAFKA``; skipped without it).

The merge is arranged, not waited for: a spy on the parts check, once armed, merges the fragments'
parts into one and leaves it as a full disk leaves a part (every file empty) just before the check
of the projector's next round looks; a reopened engine's ``broken-on-start`` part is the merged part
left so while the brain was closed, the parts it covered removed as the engine's cleanup does.
"""

from __future__ import annotations

import shutil
import threading
import time

import pytest
from fault_helpers import merged, unwritten

from hindbrain import Brain
from hindbrain.projections.views import TABLES
from hindbrain.projections.warehouse import Warehouse
from hindbrain.settings import Settings
from hindbrain.streams import rebuild
from hindbrain.streams.kafka_runner import KafkaProjector
from hindbrain.streams.replay import replay

CONDITIONS = {"fr-0": "IAM submit does nothing", "fr-1": "the export hangs at ninety percent",
              "fr-2": "the billing page shows a blank total", "fr-3": "login loops back to the start page"}


class MergesAndLoses:
    """Wraps ``Warehouse.check_written``: once armed, the next check first merges ``table``'s parts into
    one, as the engine's background merge does, and leaves it with empty files."""

    def __init__(self, warehouse: Warehouse, table: str):
        self.warehouse, self.table, self.check = warehouse, table, warehouse.check_written
        self.armed = threading.Event()
        self.lost: list[str] = []
        warehouse.check_written = self

    def __call__(self) -> None:
        if self.armed.is_set():
            self.armed.clear()
            name, path, _ = merged(self.warehouse, self.table)
            unwritten(path)
            self.lost.append(name)
        self.check()


def opened(home, kafka) -> Brain:
    return Brain.open(home, kafka=kafka.bootstrap, kafka_prefix=kafka.prefix,
                      worker_group=f"{kafka.prefix}projector", embedder="none")


def learned(brain: Brain, fragments: dict[str, str]) -> None:
    for fragment, condition in fragments.items():
        brain.learn(tenant="acme", condition=condition, action="ask the operator", fragment_id=fragment)
        brain.runner.flush()  # projected: a round and its part each


def fragment_ids(brain: Brain) -> set[str]:
    return {r["fragment_id"] for r in brain.sql("SELECT fragment_id FROM fragments FINAL")}


def assert_fragments_equal_the_topics(home, kafka) -> None:
    """The (closed) brain's fragments view, digest for digest, against the topics replayed into a fresh
    database of the same chDB folder (one folder per process)."""
    url = Settings(home=home, kafka=kafka.bootstrap, kafka_prefix=kafka.prefix).warehouse_url()
    tables = (TABLES["fragments"],)
    live = Warehouse(url)
    try:
        views = live.digest(tables)
    finally:
        live.close()
    target, log = Warehouse(url, database="fault_replay"), kafka.log()
    try:
        target.reset()
        replay(log, target)
        assert views == target.digest(tables)
    finally:
        target.close()
        log.close()


def test_a_merged_part_lost_under_the_kafka_projector_is_rebuilt_from_the_topics_start(tmp_path, kafka):
    home = tmp_path / "brain"
    with opened(home, kafka) as brain:
        learned(brain, CONDITIONS)
        spy = MergesAndLoses(brain.warehouse, "fragments")
        spy.armed.set()
        learned(brain, {"fr-4": "the report is empty on Mondays"})  # its round's check finds the merge lost
        assert spy.lost and spy.lost[0].split("_")[1] == "1"  # the merged part held the first round's block
        assert fragment_ids(brain) == {*CONDITIONS, "fr-4"}  # rounds committed long before, projected again
        assert not rebuild.pending(brain.log, brain.settings.worker_group)  # done: the need cleared
    assert_fragments_equal_the_topics(home, kafka)


def test_a_part_found_broken_at_open_over_kafka_is_rebuilt_before_the_index_loads(tmp_path, kafka):
    home = tmp_path / "brain"
    with opened(home, kafka) as brain:
        learned(brain, CONDITIONS)
        name, path, covered = merged(brain.warehouse, "fragments")
        assert name.split("_")[1] == "1" and covered
    unwritten(path)
    for part in covered:
        shutil.rmtree(part)
    with opened(home, kafka) as brain:
        assert fragment_ids(brain) == set(CONDITIONS)
        for fragment, condition in CONDITIONS.items():  # the index loaded the views once they held the rows
            pack = brain.recall(tenant="acme", query=condition, layers=["experience"])
            assert [i.id for i in pack.items] == [fragment]
        assert brain.warehouse.broken_parts() == []
    assert_fragments_equal_the_topics(home, kafka)


def test_a_rebuild_cut_short_is_done_by_the_next_start(tmp_path, kafka, monkeypatch):
    """The rebuild's replay fails (the disk full again): the projector stops, the need stays recorded in
    the broker, and the next start rebuilds, although the lost part, detached by the check, is no longer
    a broken part for the engine to report."""
    home = tmp_path / "brain"
    real_replay, refused = rebuild.replay, []

    def replay_refused_once(*args, **kw):
        if not refused:
            refused.append(True)
            raise OSError(28, "No space left on device (the rebuild's first replay)")
        return real_replay(*args, **kw)

    monkeypatch.setattr(rebuild, "replay", replay_refused_once)
    brain = opened(home, kafka)
    try:
        learned(brain, CONDITIONS)
        spy = MergesAndLoses(brain.warehouse, "fragments")
        spy.armed.set()
        brain.learn(tenant="acme", condition="the report is empty on Mondays", action="ask the operator",
                    fragment_id="fr-4")
        projector = next(s for s in brain.services if isinstance(s, KafkaProjector))
        deadline = time.monotonic() + 30
        while projector.alive:
            assert time.monotonic() < deadline, "the projector did not stop on the refused replay"
            time.sleep(0.05)
        assert refused and rebuild.pending(brain.log, brain.settings.worker_group)
        brain.runner.flush_timeout_s = 0.5  # fr-4 is not committed: the close's flush gives up at once
    finally:
        with pytest.raises((OSError, TimeoutError)):
            brain.close()
    with opened(home, kafka) as brain:
        assert fragment_ids(brain) == {*CONDITIONS, "fr-4"}
        assert not rebuild.pending(brain.log, brain.settings.worker_group)
    assert_fragments_equal_the_topics(home, kafka)
