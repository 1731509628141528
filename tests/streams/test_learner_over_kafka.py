"""The learner over a real Kafka broker (single node: the Brain runs it beside its projector):
extraction, the write gate and the lifecycle work as in the embedded brain, and a reopened
brain restores the learner from the topics without learning anything twice."""

from __future__ import annotations

import time

from hindbrain import Brain

SITUATION = {"system": "IAM", "identity": "normal account", "action": "submit change",
             "expected": "success message", "actual": "no response"}


def settings(kafka):
    return dict(kafka=kafka.bootstrap, kafka_prefix=kafka.prefix, worker_group=f"{kafka.prefix}projector",
                embedder="none")


def eventually(brain, sql, params=None, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not (rows := brain.sql(sql, params)):
        assert time.monotonic() < deadline, f"never: {sql}"
        time.sleep(0.1)
    return rows


def test_the_fleet_learns_over_kafka_and_a_reopened_brain_resumes(tmp_path, kafka):
    with Brain.open(tmp_path, **settings(kafka)) as brain:
        brain.perceive(tenant="acme", agent="a1", task="t1", kind="anomaly", text="clicked submit, nothing happened",
                       **SITUATION)
        brain.perceive(tenant="acme", agent="a1", task="t1", kind="outcome", text="submit succeeded as admin",
                       system="IAM", identity="admin account", action="submit change", success=True)
        bad = brain.learn(tenant="acme", condition="always", action="restart everything")
        [accepted] = eventually(brain, "SELECT subject_ids, job FROM decisions FINAL WHERE kind = 'unit_accepted'")
        fid = accepted["subject_ids"][0]
        assert accepted["job"] == "learner.extract"
        assert brain.pending_traits("acme") == []  # read through the SDK under the learner's lock (reading())
        eventually(brain, "SELECT 1 FROM decisions FINAL WHERE kind = 'unit_rejected' AND has(subject_ids, {f:String})",
                   {"f": bad})
        deadline = time.monotonic() + 10  # the index tail brings the learner's verdicts to recall
        while (pack := brain.recall(tenant="acme", task="t2", situation=SITUATION)).items[0].id != fid:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert bad not in [i.id for i in pack.items]
        brain.outcome(tenant="acme", task="t2", recall_id=pack.recall_id, applied=[fid], success=True)
        answered = pack.recall_id
        eventually(brain, "SELECT 1 FROM unit_states FINAL WHERE fragment_id = {f:String} AND status = 'verified'",
                   {"f": fid})
        decisions = brain.sql("SELECT count() AS n FROM decisions")[0]["n"]
    with Brain.open(tmp_path, **settings(kafka)) as brain:
        brain.learning.wait_until_caught_up()
        assert brain.learning.learner.unit("acme", fid).successes == 1  # restored from the topics
        pack = brain.recall(tenant="acme", task="t3", situation=SITUATION)
        brain.outcome(tenant="acme", task="t3", recall_id=pack.recall_id, applied=[fid], success=True)
        eventually(brain, "SELECT 1 FROM unit_states FINAL WHERE fragment_id = {f:String} AND status = 'stable'",
                   {"f": fid})
        brain.learning.wait_until_caught_up()
        # Only the new outcome's decision (unit_stable) was added: nothing was learned twice.
        assert brain.sql("SELECT count() AS n FROM decisions")[0]["n"] == decisions + 1
        # the recall answered before the restart is spent in the state restored from the topics (round twenty-five)
        again = brain.outcome(tenant="acme", task="t2", recall_id=answered, applied=[fid], success=True)
        eventually(brain, "SELECT 1 FROM decisions FINAL WHERE kind = 'unit_attributed' AND "
                          "has(evidence_ids, {o:String}) AND JSONExtractString(payload_json, 'refused') = 'answered'",
                   {"o": again})
        assert brain.learning.learner.unit("acme", fid).successes == 2


def test_hindbrain_learner_runs_as_its_own_process(kafka, tmp_path):
    """Beside workers and a ClickHouse server, the learner is one `hindbrain learner` process."""
    import os
    import signal
    import subprocess
    import sys

    from hindbrain.brain import _perception, perceived
    from hindbrain.streams.processing import to_messages

    log = kafka.log()
    try:
        records = [_perception(perceived(dict(tenant="acme", task="t1", kind="anomaly", text="nothing happened",
                                              **SITUATION))),
                   _perception(perceived(dict(tenant="acme", task="t1", kind="outcome", success=True, system="IAM",
                                              identity="admin account", action="submit change")))]
        log.append(to_messages(("perception", r) for r in records))
        env = {**os.environ, "HINDBRAIN_KAFKA_PREFIX": kafka.prefix, "HINDBRAIN_WORKER_GROUP": f"{kafka.prefix}w"}
        learner = subprocess.Popen([sys.executable, "-m", "hindbrain.cli", "--home", str(tmp_path), "learner",
                                    "--kafka", kafka.bootstrap], env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while not (kinds := [registry_kind(e.value) for e in log.read("decisions", 0, 0, 100)]):
                assert learner.poll() is None, learner.stderr.read()
                assert time.monotonic() < deadline, "the learner process appended nothing"
                time.sleep(0.2)
            assert kinds == ["unit_accepted"]
        finally:
            # SIGTERM, as a process manager stops it. (SIGINT is no test here: a shell's background
            # job inherits it ignored, which is why this test once hung only in backgrounded runs.)
            learner.send_signal(signal.SIGTERM)
            try:
                code = learner.wait(timeout=30)
            except subprocess.TimeoutExpired:
                learner.kill()
                stderr = learner.stderr.read()
                raise AssertionError(f"the learner did not stop within 30 s of SIGTERM: {stderr}") from None
            assert code == 0, learner.stderr.read()
    finally:
        log.close()


def registry_kind(value: bytes) -> str:
    from hindbrain.schemas.codec import registry

    return registry.decode(value)[1]["kind"]


def _worlds():
    """The seeded worlds of tests/learning/test_learner_batch.py (tests are no package: loaded by its path)."""
    from pathlib import Path

    from by_path import module_at

    return module_at(Path(__file__).parents[1] / "learning" / "test_learner_batch.py", "learner_worlds_over_kafka")


def _read_back(log, topics) -> dict[tuple[str, str], list]:
    """Every record of ``topics``, decoded, grouped by (topic, key) in the order appended: a key's records
    share a partition, which keeps their order."""
    from hindbrain.schemas.codec import registry

    out: dict[tuple[str, str], list] = {}
    for topic in topics:
        for partition in log.partitions(topic):
            offset = 0
            while entries := log.read(topic, partition, offset, 1000):
                for e in entries:
                    out.setdefault((topic, e.key), []).append(registry.decode(e.value))
                offset = entries[-1].offset + 1
    return out


def test_the_kafka_learner_folds_each_batch_as_record_by_record(kafka, monkeypatch):
    """``KafkaLearner`` folds each polled batch in one ``Learner.learn`` call: over a seeded world through the
    broker, the records it appends (read back from the topics), its state, counts and extractor requests are
    those of ``Learner.process`` record by record over the same records in the order it folded them; a record
    a rule fails on is dead-lettered and the rest go on."""
    import contextlib

    from hindbrain.learning.kafka_learner import KafkaLearner
    from hindbrain.learning.learner import Learner
    from hindbrain.learning.records import is_own
    from hindbrain.schemas.codec import registry
    from hindbrain.streams.processing import to_messages
    from hindbrain.streams.topics import TOPIC_OF, key_of

    worlds = _worlds()
    records = worlds.log_of(worlds.World(seed=6, tenants=2, tasks=300))
    # an action that failed or succeeded: its rules run (``_perception_rules``: ``learn`` and ``process`` both call it)
    failing = [r["envelope"]["record_id"] for rt, r in records
               if rt == "perception" and r["kind"] == "action" and r["success"] is not None][3]
    rules, learn, folded = Learner._perception_rules, Learner.learn, []

    def raising(self, t, record, failure, success, restoring):  # a rule bug on one record
        out = rules(self, t, record, failure, success, restoring)
        if record["envelope"]["record_id"] == failing:
            raise ValueError("a rule bug")
        return out

    def recording(self, batch):
        folded.append(list(batch))
        return learn(self, batch)

    monkeypatch.setattr(Learner, "_perception_rules", raising)
    monkeypatch.setattr(Learner, "learn", recording)
    log = kafka.log()
    try:
        log.append(to_messages(records))
        extractor = worlds.Extractor()
        learner = KafkaLearner(log, f"{kafka.prefix}learner", extractor, batch_size=500)
        learner.start()
        try:
            learner.wait_until_caught_up(timeout_s=60)
        finally:
            learner.stop()  # the last batch's append is awaited before the loop ends
        reference_extractor = worlds.Extractor()
        reference, expected = Learner(reference_extractor), []
        for decoded in (d for batch in folded for d in batch):
            with contextlib.suppress(ValueError):
                expected += reference.process([decoded])
        appended = _read_back(log, {TOPIC_OF[rt] for rt, _ in expected} | {"dead_letters"})
    finally:
        log.close()

    inputs = [d.record["envelope"]["record_id"] for batch in folded for d in batch if not is_own(d.record)]
    assert sorted(inputs) == sorted(r["envelope"]["record_id"] for _, r in records)  # each once, none lost
    assert len(folded) > 1 and max(map(len, folded)) > 100  # batches, each in one call
    assert learner.learner.tenants == reference.tenants
    assert learner.learner.counts == reference.counts
    assert extractor.asked == reference_extractor.asked and len(extractor.asked) >= 2
    kinds = {r["kind"] for rt, r in expected if rt == "decision"}
    assert {"unit_accepted", "events_merged", "unit_verified"} <= kinds, kinds  # the comparison is not trivial
    by_key: dict[tuple[str, str], list] = {}
    for rt, r in expected:
        by_key.setdefault((TOPIC_OF[rt], key_of(r)), []).append(registry.decode(registry.encode(rt, r)))
    dead = [r for key in [k for k in appended if k[0] == "dead_letters"] for _, r in appended.pop(key)]
    assert [(d["stage"], d["reason"], registry.decode(d["original"])[1]["envelope"]["record_id"]) for d in dead] == [
        ("learn", "ValueError: a rule bug", failing)]
    assert {k: [(rt, r) for rt, r in v if is_own(r)] for k, v in appended.items()} == by_key


def test_a_reader_inside_reading_holds_the_kafka_learners_fold(kafka, monkeypatch):
    """The SDK's readers (``pending_traits``, ``approve``, ``invalidate``) read the learner's state inside
    ``reading()`` while its loop thread folds what it fetches. Arranged here: a reader inside ``reading()``
    while a record is appended and fetched. The fold waits for the reader (every fold holds the lock
    ``reading()`` returns, none runs while a reader is inside), and the record is not counted as caught up
    until it is folded."""
    import threading

    from hindbrain.brain import _perception, perceived
    from hindbrain.learning.kafka_learner import KafkaLearner
    from hindbrain.learning.learner import Learner
    from hindbrain.streams.processing import to_messages

    def event(text: str) -> dict:
        return _perception(perceived(dict(tenant="acme", agent="a1", task="t1", kind="anomaly", text=text,
                                          **SITUATION)))

    log = kafka.log()
    learner = KafkaLearner(log, f"{kafka.prefix}learner", batch_size=500)
    lock, reader_inside, fetched, folds = learner.reading(), threading.Event(), threading.Event(), []

    def watched(name, fold):
        def run(self, batch, *args, **kwargs):
            held = getattr(lock, "_is_owned", lambda: False)()  # an RLock knows whether this thread holds it
            folds.append((name, held, reader_inside.is_set(), [d.record["envelope"]["record_id"] for d in batch]))
            return fold(self, batch, *args, **kwargs)
        return run

    fetch = KafkaLearner._fetch

    async def fetching(self, *args):
        got = await fetch(self, *args)
        if any(got):  # records (or, for one that does not decode, the offsets it reached)
            fetched.set()
        return got

    monkeypatch.setattr(Learner, "learn", watched("learn", Learner.learn))
    monkeypatch.setattr(Learner, "process", watched("process", Learner.process))
    monkeypatch.setattr(KafkaLearner, "_fetch", fetching)
    try:
        learner.start()
        log.append(to_messages([("perception", event("clicked submit, nothing happened"))]))
        learner.wait_until_caught_up(timeout_s=30)
        fetched.clear()
        late = event("clicked submit again, still nothing")
        with learner.reading():
            reader_inside.set()
            log.append(to_messages([("perception", late)]))
            assert fetched.wait(30), "the learner never fetched the record appended"
            try:  # (the loop has had half a second to fold it meanwhile)
                learner.wait_until_caught_up(timeout_s=0.5)
                caught_up = "caught up with a record fetched while a reader read"
            except TimeoutError:
                caught_up = "not caught up"
            reader_inside.clear()
        learner.wait_until_caught_up(timeout_s=30)
    finally:
        learner.stop()
        log.close()
    assert [(name, held, inside) for name, held, inside, _ in folds if not held or inside] == []
    assert caught_up == "not caught up"  # fetched, not folded: not counted as caught up
    assert any(late["envelope"]["record_id"] in ids for _, _, _, ids in folds)  # folded once the reader left
