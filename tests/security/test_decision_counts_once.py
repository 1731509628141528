"""A learning decision counts once, at its first place on the log (docs/security.md, "A decision counts once,
round thirty"): the same ``unit_accepted`` record appended again after a newer ``invalidate`` (a producer's
retry that landed twice, an old record replayed) must not make recall serve the invalidated unit, neither live
nor after the brain reopens, and a replay of the whole log rebuilds the same unit states."""

from __future__ import annotations

import json
import time

from hindbrain import Brain
from hindbrain.learning.learner import Learner
from hindbrain.projections.warehouse import Warehouse
from hindbrain.recall.index import RecallIndex
from hindbrain.schemas.codec import registry
from hindbrain.streams.log import Message
from hindbrain.streams.processing import decoded_entries
from hindbrain.streams.replay import replay

QUERY = "export invoices from billing"


def served(brain: Brain, fid: str) -> bool:
    return fid in [i.id for i in brain.recall(tenant="acme", query=QUERY).items]


def unit_decision(brain: Brain, kind: str, fid: str):
    """The first record of ``kind`` on the embedded log naming ``fid``."""
    return next(d for d in decoded_entries(brain.log.read_all(0, 100_000)) if d.record_type == "decision"
                and d.record["kind"] == kind and d.record["subject_ids"] == [fid])


STATE_COLUMNS = ("fragment_id", "status", "rung", "confidence", "decision_kind")


def states(brain: Brain) -> list[dict]:
    return brain.sql(f"SELECT {', '.join(STATE_COLUMNS)} FROM unit_states FINAL ORDER BY fragment_id")


def test_an_old_decision_appended_again_does_not_bring_an_invalidated_unit_back(tmp_path):
    path = tmp_path / "brain"
    with Brain.open(path, embedder="none") as b:
        fid = b.learn(tenant="acme", condition="exporting invoices from billing", action="use the v1 export endpoint")
        assert served(b, fid)
        b.invalidate(tenant="acme", fragment_id=fid, reason="the v1 endpoint was removed", version="billing v2")
        assert not served(b, fid)
        accepted = unit_decision(b, "unit_accepted", fid)
        b.runner.submit([("decision", accepted.record)])  # the same record again, later on the log
        b.runner.flush()
        assert not served(b, fid)
        b.learning.wait_until_caught_up()  # the learner's restatement, appended after the repeat
        b.runner.flush()
        assert not served(b, fid)
        [state] = [s for s in states(b) if s["fragment_id"] == fid]
        assert state["status"] == "invalid"
        assert b.learning.learner.unit("acme", fid).status == "invalid"
        restated = unit_decision(b, "unit_restated", fid)
        assert accepted.record["decision_id"] in restated.record["evidence_ids"]
        before = states(b)
    with Brain.open(path, embedder="none") as b:
        assert not served(b, fid)
        assert states(b) == before
        assert b.learning.learner.unit("acme", fid).status == "invalid"
        fresh = Warehouse(b.warehouse.url, database="replayed")
        try:  # the whole log again, in small chunks: the same unit states
            replay(b.log, fresh, chunk=2)
            assert [dict(zip(STATE_COLUMNS, r, strict=True)) for r in fresh.query(
                f"SELECT {', '.join(STATE_COLUMNS)} FROM unit_states FINAL ORDER BY fragment_id")] == before
        finally:
            fresh.close()


def test_the_recall_index_and_the_learner_fold_a_decision_once_without_its_restatement(tmp_path):
    """Each fold on its own, the learner's restatement not there yet (the window before it lands, or no learner
    running): the repeat is skipped by the recall index and by a learner restoring from the log."""
    with Brain.open(tmp_path / "brain", embedder="none") as b:
        fid = b.learn(tenant="acme", condition="exporting invoices from billing", action="use the v1 export endpoint")
        b.invalidate(tenant="acme", fragment_id=fid, reason="the v1 endpoint was removed", version="billing v2")
        log = decoded_entries(b.log.read_all(0, 100_000))
    accepted = next(d for d in log if d.record_type == "decision" and d.record["kind"] == "unit_accepted")
    end = log[-1].position
    again = accepted._replace(position=end._replace(offset=end.offset + 1))
    index = RecallIndex()
    index.observe([*log, again])
    tenant = index.tenant("acme")
    assert tenant.docs[tenant.by_id[fid]].status == "invalid"
    learner = Learner()
    assert learner.process([*log, again], restoring=True) == []
    assert learner.unit("acme", fid).status == "invalid"
    live = Learner()
    live.process(log, restoring=True)
    [(_, restated)] = live.learn([again])[0]
    assert restated["kind"] == "unit_restated" and json.loads(restated["payload_json"])["unit"]["status"] == "invalid"


def test_over_kafka_an_old_decision_sent_again_does_not_bring_an_invalidated_unit_back(tmp_path, kafka):
    """A producer writes the ``unit_accepted`` record's bytes to the decisions topic again after the
    ``invalidate``: the learner restates the unit, recall does not serve it, and after a reopen neither."""
    settings = dict(kafka=kafka.bootstrap, kafka_prefix=kafka.prefix, worker_group=f"{kafka.prefix}projector")
    with Brain.open(tmp_path, embedder="none", **settings) as b:
        fid = b.learn(tenant="acme", condition="exporting invoices from billing", action="use the v1 export endpoint")
        b.learning.wait_until_caught_up()
        assert served(b, fid)
        b.invalidate(tenant="acme", fragment_id=fid, reason="the v1 endpoint was removed", version="billing v2")
        b.learning.wait_until_caught_up()
        assert not served(b, fid)
        other = kafka.log()
        try:
            [accepted] = [e for e in other.read("decisions", 0, 0) if registry.decode(e.value)[1]["kind"]
                          == "unit_accepted" and registry.decode(e.value)[1]["subject_ids"] == [fid]]
            other.append([Message("decisions", accepted.key, accepted.value)])  # the same bytes again
        finally:
            other.close()
        b.learning.wait_until_caught_up()
        assert not served(b, fid)
        assert b.learning.learner.unit("acme", fid).status == "invalid"
        deadline = time.monotonic() + 10
        while [s["decision_kind"] for s in states(b) if s["fragment_id"] == fid] != ["unit_restated"]:
            assert time.monotonic() < deadline, f"never restated: {states(b)}"
            time.sleep(0.05)
        assert not served(b, fid)
        before = states(b)
        assert [s["status"] for s in before if s["fragment_id"] == fid] == ["invalid"]
    with Brain.open(tmp_path, embedder="none", **settings) as b:
        assert not served(b, fid)
        assert states(b) == before
        b.learning.wait_until_caught_up()
        assert b.learning.learner.unit("acme", fid).status == "invalid"


def test_repeats_and_replayed_restatements_make_the_learner_write_once_each_at_most(tmp_path):
    # A flood of repeats may not make the learner write without end: each repeat of the old decision gets one
    # restatement (its own position), a restatement replayed states the unit as it is and gets none, and the
    # learner's own restatements read back are no repeats (round thirty's attack of robust33's restatement).
    with Brain.open(tmp_path / "brain", embedder="none") as b:
        fid = b.learn(tenant="acme", condition="exporting invoices from billing", action="use the v1 export endpoint")
        b.invalidate(tenant="acme", fragment_id=fid, reason="the v1 endpoint was removed", version="billing v2")
        accepted = unit_decision(b, "unit_accepted", fid)
        b.runner.submit([("decision", accepted.record)] * 3)
        b.runner.flush()
        b.learning.wait_until_caught_up()
        b.runner.flush()
        restated = [d for d in decoded_entries(b.log.read_all(0, 100_000)) if d.record_type == "decision"
                    and d.record["kind"] == "unit_restated"]
        assert len(restated) == 3
        b.runner.submit([("decision", d.record) for d in restated] * 2)  # the restatements replayed, twice
        b.runner.flush()
        b.learning.wait_until_caught_up()
        b.runner.flush()
        again = [d for d in decoded_entries(b.log.read_all(0, 100_000)) if d.record_type == "decision"
                 and d.record["kind"] == "unit_restated"]
        assert len(again) == 3 + 6  # the replayed ones themselves, and no restatement of them
        assert b.learning.learner.counts["repeated_decisions"] == 3 + 6
        assert b.learning.learner.unit("acme", fid).status == "invalid" and not served(b, fid)


def test_over_kafka_two_learners_restate_a_repeat_once_each_with_one_id(tmp_path, kafka):
    """Two learners (two groups) read the same repeat: each appends the restatement, with the same id (derived
    from the repeat and its place); read back, the other's is a repeat of the unit's state of now: counted,
    nothing more written — no ping-pong between learners."""
    from hindbrain.learning.kafka_learner import KafkaLearner
    from hindbrain.streams.topics import TOPICS

    settings = dict(kafka=kafka.bootstrap, kafka_prefix=kafka.prefix, worker_group=f"{kafka.prefix}projector")
    with Brain.open(tmp_path, embedder="none", **settings) as b:
        fid = b.learn(tenant="acme", condition="exporting invoices from billing", action="use the v1 export endpoint")
        b.invalidate(tenant="acme", fragment_id=fid, reason="the v1 endpoint was removed", version="billing v2")
        b.learning.wait_until_caught_up()
        other, group = kafka.log(), f"{kafka.prefix}second-learner"
        for (topic, partition), end in other.end_offsets(t.name for t in TOPICS).items():
            other.commit(group, topic, partition, end)  # as if it had run all along: it restores, appends nothing
        second = KafkaLearner(other, group)
        second.start()
        try:
            second.wait_until_caught_up()
            [accepted] = [e for e in other.read("decisions", 0, 0) if registry.decode(e.value)[1]["kind"]
                          == "unit_accepted" and registry.decode(e.value)[1]["subject_ids"] == [fid]]
            other.append([Message("decisions", accepted.key, accepted.value)])  # the same bytes again

            def restated() -> list[str]:
                return [r["decision_id"] for r in (registry.decode(e.value)[1] for e in other.read("decisions", 0, 0))
                        if r["kind"] == "unit_restated"]

            deadline = time.monotonic() + 30
            while len(restated()) < 2:
                assert time.monotonic() < deadline, f"restated {restated()}"
                time.sleep(0.05)
            for learner in (b.learning, second):  # each reads back both restatements
                learner.wait_until_caught_up()
            ids = restated()
            assert len(ids) == 2 and ids[0] == ids[1]
            for learner in (b.learning.learner, second.learner):
                assert learner.counts["repeated_decisions"] == 2  # the repeat, and the other's restatement
                assert learner.unit("acme", fid).status == "invalid"
            assert not served(b, fid)
        finally:
            second.stop()
            other.close()
