"""The learner keeps of a failure event only what its rules and the LLM extractor read (design.md §issue-28:
whole perception records held ~180 bytes an event at 100k): its decisions, and the trajectories it hands
the extractor, are the same as with the whole records."""

import pytest

from hindbrain import Brain
from hindbrain.learning import learner as learner_module
from hindbrain.learning import learner_state
from hindbrain.learning.learner import Learner
from hindbrain.learning.learner_state import keep_failure
from hindbrain.learning.llm import request_body
from hindbrain.learning.records import is_own
from hindbrain.streams.processing import decoded_entries


class RecordingExtractor:
    """Answers nothing, records what it was asked (as the real extractor would send it)."""

    name = "recording"

    def __init__(self):
        self.asked = []

    def extract(self, trajectory):
        self.asked.append(request_body("m", trajectory))
        return []


@pytest.fixture(scope="module")
def perceptions(tmp_path_factory):
    """A seeded log of the third world (changes, routines, environments, preferences), the learner's own
    records left out: what a learner decides on."""
    from hindbrain.sim.third import Hindbrain, run, third_world

    with Brain.open(tmp_path_factory.mktemp("kept"), embedder="none") as b:
        run(third_world(seed=3, rounds=4), Hindbrain(b))
        batches, offset = [], 0
        while entries := b.log.read_all(offset, 5_000):
            batches.append([d for d in decoded_entries(entries) if not is_own(d.record)])
            offset = entries[-1].offset + 1
    return batches


def decide(batches):
    extractor = Learner(RecordingExtractor())
    emitted = [r for batch in batches for r in extractor.process(batch)]
    return emitted, extractor


def test_the_decisions_on_a_seeded_log_are_those_of_whole_failure_records(perceptions, monkeypatch):
    slim, slim_learner = decide(perceptions)
    monkeypatch.setattr(learner_module, "keep_failure", lambda record: record)  # the old learner: whole records
    whole, whole_learner = decide(perceptions)
    recoveries = [r for rt, r in whole if rt == "cognition" and "(not: " in r["reason"]]
    assert len(recoveries) >= 3, recoveries  # units taught by kept failures (recovery/1's "not: ...")
    assert slim == whole
    assert slim_learner.extractor.asked == whole_learner.extractor.asked
    assert slim_learner.counts == whole_learner.counts
    held = [f for t in slim_learner.tenants.values() for kept in (*t.failures.values(), *t.reports.values())
            for f in kept]
    assert held, "no failure kept: the comparison proves nothing"
    assert all(f.as_record()["envelope"] == {"record_id": f["envelope"]["record_id"]} for f in held)


def test_a_kept_failure_leaves_out_empty_fields():
    record = {"envelope": {"record_id": "ev_2", "tenant": "acme"}, "kind": "anomaly", "text": "", "system": "IAM",
              "action": "submit", "success": False, "scope": {}, "entities": [], "identity": None}
    assert keep_failure(record).as_record() == {"envelope": {"record_id": "ev_2"}, "kind": "anomaly", "system": "IAM",
                                     "action": "submit", "success": False}


def test_a_kept_failure_holds_the_fields_read_and_the_id_only():
    record = {"envelope": {"record_id": "ev_1", "tenant": "acme", "agent": "a1", "task": "t1", "ts_us": 5},
              "kind": "anomaly", "text": "403", "system": "IAM", "action": "submit", "identity": "normal account",
              "expected": "200", "actual": "403", "success": False, "scope": {"env": "prod"}, "entities": ["IAM"],
              "session": "s1", "speaker": None, "metadata": {"trace": "x" * 100}, "signal": None}
    assert keep_failure(record).as_record() == {
        "envelope": {"record_id": "ev_1"}, "kind": "anomaly", "text": "403", "system": "IAM", "action": "submit",
        "identity": "normal account", "expected": "200", "actual": "403", "success": False,
        "scope": {"env": "prod"}, "entities": ["IAM"]}


def test_a_kept_failure_reads_as_the_record_and_survives_the_learners_snapshot():
    import pickle

    record = {"envelope": {"record_id": "ev_3", "tenant": "acme"}, "kind": "anomaly", "text": "timeout",
              "system": "CRM", "action": "export", "success": False, "scope": {}, "entities": ["CRM", "S3"]}
    kept = keep_failure(record)
    assert (kept["envelope"]["record_id"], kept["action"], kept.get("scope", {}), kept.get("identity")) == (
        "ev_3", "export", {}, None)
    with pytest.raises(KeyError):
        kept["identity"]
    assert pickle.loads(pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)) == kept
    assert kept != keep_failure({**record, "action": "import"})


def test_a_kept_failure_is_pickled_as_its_values_and_the_older_form_still_loads(monkeypatch):
    """The learner's snapshot pickles a kept failure as its values, not a dict of its slots' names (issue 28,
    round fifteen: the kept failures were ~40 % of the snapshot's CPU); its option is computed again from them,
    and a snapshot written in the default form (before) loads the same failure."""
    import pickle

    record = {"envelope": {"record_id": "ev_4", "tenant": "acme"}, "kind": "anomaly", "text": "expected 200",
              "system": "CRM", "action": "export", "identity": "bot", "success": False, "scope": {"env": "prod"},
              "entities": ["CRM"]}
    kept = keep_failure(record)
    option = kept.option()
    assert option is not None
    data = pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"expected" not in data.replace(b"expected 200", b"") and b"_option" not in data  # no slot names
    back = pickle.loads(data)
    assert back == kept and back._option is None and back.option() == option
    assert back.get("actual") is None and back["entities"] == ["CRM"]
    monkeypatch.delattr(learner_state.KeptFailure, "__reduce__")  # the default form, as older snapshots hold
    older = pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"_option" in older
    monkeypatch.undo()
    assert pickle.loads(older) == kept and pickle.loads(older).option() == option


def test_a_tenants_failure_lists_are_pickled_as_columns(perceptions):
    """``TenantState.failures`` and ``reports`` (``FailureLists``) pickle as columns (round sixteen): one call for
    the whole map, none a failure; loaded, the same keys in the same order, the same failures in each list,
    their options computed again, and a ``Recent`` still (the oldest out past ``RECENT``)."""
    import pickle

    learner = Learner(RecordingExtractor())
    for batch in perceptions:
        learner.process(batch)
    tenant = next(t for t in learner.tenants.values() if t.failures and t.reports)
    for lists in (tenant.failures, tenant.reports):
        data = pickle.dumps(lists, protocol=pickle.HIGHEST_PROTOCOL)
        assert b"_failure_lists_of" in data and b"_kept_failure_of" not in data
        back = pickle.loads(data)
        assert type(back) is learner_state.FailureLists and list(back) == list(lists) and back == lists
        assert all(a.option() == b.option() for key in lists for a, b in zip(back[key], lists[key], strict=True))
    assert sum(map(len, tenant.reports.values())) > len(tenant.reports) > 1  # lists of several, several lists
    empty = pickle.loads(pickle.dumps(learner_state.FailureLists()))
    assert type(empty) is learner_state.FailureLists and not empty
