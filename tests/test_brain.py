"""The ``Brain`` SDK facade: the public contract of /work/shared/API.md, behaviour first."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime

import pytest

import hindbrain
from hindbrain import Brain
from hindbrain.streams.sqlite_log import ALL_TOPICS


@pytest.fixture
def brain(lexical_brain):
    """These tests pin what the lexical channels and the gate decide; the semantic channel
    (which may add weaker neighbours) is tested in tests/recall."""
    return lexical_brain

def log_length(brain: Brain) -> int:
    return brain.log.end_offset(ALL_TOPICS, 0)


def ids(pack) -> list[str]:
    return [item.id for item in pack.items]


# -- the names of the contract -----------------------------------------------------------------
def test_the_public_names_exist_exactly(tmp_path):
    assert hindbrain.Brain is Brain
    for name in ("open", "close", "perceive", "perceive_many", "learn", "recall", "outcome", "hindsight",
                 "explain", "sql", "__enter__", "__exit__"):
        assert callable(getattr(Brain, name)), name
    params = inspect.signature(Brain.open).parameters
    assert list(params)[:1] == ["path"] and {"kafka", "clickhouse"} <= set(params)

    # every documented keyword is accepted; the lexical brain: which embedder answers is not what this checks (the
    # default's opens and recalls: tests/recall/test_two_tiers.py), and loading the model was ~15 s of this test
    with Brain.open(tmp_path, embedder="none") as brain:
        event_id = brain.perceive(
            tenant="acme", agent="agent-7", task="t-41", kind="anomaly", text="clicked submit, nothing happened",
            system="IAM", identity="normal account", action="submit change", expected="success message",
            actual="no response", entities=["IAM", "change request"], scope={"env": "prod"}, signal="implicit",
            success=None, polarity=None, session="s-1", speaker="user", ts=datetime.now(UTC),
            event_id=None,
        )
        fragment_id = brain.learn(
            tenant="acme", condition="submit does nothing in IAM", action="switch to the admin account",
            reason="permission operations need admin", evidence="submit succeeded as admin", scope={"env": "prod"},
            source="lived", citation=None, confidence=None, seed=False,
        )
        pack = brain.recall(
            tenant="acme", agent="agent-7", task="t-42", query="how do I change IAM permissions?",
            situation={"system": "IAM", "identity": "normal account", "action": "submit change",
                       "expected": "success message", "actual": "no response"},
            trigger="anomaly", scope={"env": "prod"}, budget_tokens=400, k=None, layers=None,
        )
        assert isinstance(event_id, str) and isinstance(fragment_id, str) and isinstance(pack.recall_id, str)
        assert {fragment_id, event_id} <= set(ids(pack))
        assert pack.render(detail=True).startswith(f"[hindbrain recall {pack.recall_id}:")
        assert pack.render().startswith("WHEN ")  # by default only what a model acts on: no title
        assert "WHEN submit does nothing in IAM → DO switch to the admin account" in pack.render()
        assert "switch to the admin account" in pack.render()
        for item in pack.items:
            assert item.kind in {"fragment", "belief", "event"}
            for attr in ("id", "text", "event_ids", "score", "why", "source", "layer", "confidence", "tokens"):
                getattr(item, attr)
        brain.outcome(tenant="acme", recall_id=pack.recall_id, task="t-42", applied=[fragment_id], success=True,
                      steps=5, notes=None)
        assert isinstance(brain.explain(fragment_id), list)
        assert isinstance(brain.sql("SELECT 1 AS one"), list)


# -- bad input: ValueError naming the field, nothing written (also tests/test_brain_input.py) ------
def test_text_of_exactly_64_kib_is_accepted(brain):
    brain.perceive(tenant="acme", text="x" * (64 * 1024))
    assert log_length(brain) == 1


def test_perceive_many_is_all_or_nothing(brain):
    good = {"tenant": "acme", "text": "fine"}
    with pytest.raises(ValueError, match="'kind'") as raised:
        brain.perceive_many([good, good, {"tenant": "acme", "kind": "gossip", "text": "x"}, good])
    assert isinstance(raised.value, hindbrain.InvalidInput) and raised.value.field == "kind"
    assert "event #2" in str(raised.value)
    assert log_length(brain) == 0
    assert len(brain.perceive_many([good, good])) == 2
    assert brain.sql("SELECT count() AS n FROM events") == [{"n": 2}]


# -- events and recall -------------------------------------------------------------------------
def test_the_same_event_id_twice_is_one_event(brain):
    event = {"tenant": "acme", "kind": "anomaly", "text": "the export job timed out", "event_id": "ev_caller_7"}
    assert brain.perceive(**event) == brain.perceive(**event) == "ev_caller_7"
    assert brain.sql("SELECT count() AS n FROM events FINAL WHERE event_id = 'ev_caller_7'") == [{"n": 1}]
    pack = brain.recall(tenant="acme", query="export job timed out")
    assert ids(pack) == ["ev_caller_7"]
    assert [c["id"] for c in pack.cut] == []


def test_a_repeated_event_id_is_one_event_for_the_learner_too(brain):
    """A client retrying a request whose answer it lost sends the same event again: three copies
    of one negative feedback are not the three negatives that teach a rule."""
    feedback = {"tenant": "acme", "agent": "a-1", "task": "t-1", "kind": "feedback", "polarity": -1.0,
                "text": "the report is too long", "entities": ["report"], "event_id": "ev_fb_once"}
    for _ in range(3):
        brain.perceive(**feedback)
    assert brain.sql("SELECT count() AS n FROM fragments") == [{"n": 0}]
    assert brain.learning.learner.counts["repeated_perceptions"] == 2
    for n in (2, 3):  # two more distinct negatives on the topic do teach it
        brain.perceive(**{**feedback, "event_id": f"ev_fb_{n}"})
    assert [r["n"] for r in brain.sql("SELECT count() AS n FROM fragments")] == [1]


def test_recall_over_raw_messages_names_their_events(brain):
    said = [brain.perceive(tenant="acme", kind="message", session="s-1", speaker=speaker, text=text,
                           ts=datetime(2024, 5, n + 1, tzinfo=UTC))
            for n, (speaker, text) in enumerate([("user", "my cat Tofu hates the vacuum cleaner"),
                                                 ("assistant", "maybe run the vacuum when Tofu is outside"),
                                                 ("user", "we moved to Lisbon in spring")])]
    brain.learn(tenant="acme", condition="Tofu hates the vacuum", action="vacuum while Tofu is outside")
    pack = brain.recall(tenant="acme", query="what does Tofu hate?", layers=["episodic"])
    assert set(ids(pack)[:2]) == set(said[:2])  # the semantic channel may add Lisbon, below them
    for item in pack.items:
        assert (item.kind, item.layer, item.event_ids) == ("event", "episodic", [item.id])
    assert any(i.kind == "fragment" for i in brain.recall(tenant="acme", query="what does Tofu hate?").items)


def test_a_chinese_query_matches_chinese_text_by_bigrams(brain):
    zh = brain.perceive(tenant="acme", kind="anomaly", text="点击提交后没有反应，提示权限不足")
    brain.perceive(tenant="acme", kind="anomaly", text="the report export failed with a timeout")
    brain.perceive(tenant="acme", kind="message", text="今天天气很好")
    pack = brain.recall(tenant="acme", query="权限不足怎么办")
    assert ids(pack) == [zh]
    assert {"权限", "不足"} <= set(pack.items[0].why["lexical"]["matched_terms"])


def test_tenants_never_see_each_other(brain):
    text = "rotate the API key before the quarterly audit"
    a = brain.perceive(tenant="tenant-a", text=text)
    fa = brain.learn(tenant="tenant-a", condition="quarterly audit", action="rotate the API key")
    secret = brain.perceive(tenant="tenant-a", text="the vault password hint is marmalade")
    b = brain.perceive(tenant="tenant-b", text=text)
    pack = brain.recall(tenant="tenant-b", query="API key quarterly audit rotate")
    assert ids(pack) == [b]
    assert not {a, fa, secret} & {c["id"] for c in pack.cut}
    assert ids(brain.recall(tenant="tenant-b", query="vault password marmalade")) == []
    assert ids(brain.recall(tenant="tenant-c", query=text)) == []
    assert {a, fa} <= set(ids(brain.recall(tenant="tenant-a", query=text)))


def test_the_token_budget_is_respected_and_cuts_say_why(brain):
    for n in range(12):
        causes = ["a long report held the lock on orders", "the replica lagged behind", "disk filled up on db-2",
                  "a vacuum blocked the schema change"]
        brain.perceive(tenant="acme", text=f"deploy {n} of service svc-{n} failed: database migration timed out; "
                                           f"cause {causes[n % 4]} in region {n}")
    pack = brain.recall(tenant="acme", query="deploy failed database migration timed out", budget_tokens=60)
    assert pack.items and sum(i.tokens for i in pack.items) <= 60
    assert pack.cut and all(c["stage"] in ("budget", "near_duplicate") for c in pack.cut)
    assert any("do not fit" in c["reason"] for c in pack.cut)
    assert not set(ids(pack)) & {c["id"] for c in pack.cut}
    assert len(pack.items) + len(pack.cut) == 12


def test_a_scope_conflict_is_cut(brain):
    fr = brain.learn(tenant="acme", condition="the payment gateway returns 502", action="fail over to the backup",
                     scope={"env": "prod"})
    pack = brain.recall(tenant="acme", query="payment gateway 502", scope={"env": "test"})
    assert fr not in ids(pack)
    (cut,) = [c for c in pack.cut if c["id"] == fr]
    assert "scope" in cut["reason"] and "env=prod" in cut["reason"]
    assert ids(brain.recall(tenant="acme", query="payment gateway 502", scope={"env": "prod"})) == [fr]


def test_unknown_layer_raises_naming_layers(brain):
    brain.perceive(tenant="acme", text="something")
    before = log_length(brain)
    with pytest.raises(ValueError, match="'layers'"):
        brain.recall(tenant="acme", query="something", layers=["episodic", "astral"])
    assert log_length(brain) == before


# -- the loop: recall, injection, outcome, explain ---------------------------------------------
def test_recall_and_injection_records_are_in_the_log(brain):
    ev = brain.perceive(tenant="acme", text="the nightly backup skipped the reports volume")
    pack = brain.recall(tenant="acme", agent="a1", query="nightly backup reports volume", budget_tokens=300)
    chain = brain.explain(pack.recall_id)
    by_type = {entry["record_type"]: entry["record"] for entry in chain}
    assert set(by_type) == {"recall", "injection"}
    assert by_type["recall"]["recall_id"] == pack.recall_id
    assert [c["item_id"] for c in by_type["recall"]["candidates"]] == [ev]
    assert by_type["injection"]["recall_id"] == pack.recall_id
    assert [i["item_id"] for i in by_type["injection"]["items"]] == ids(pack) == [ev]
    assert brain.sql("SELECT recall_id, budget_tokens FROM recalls") == [
        {"recall_id": pack.recall_id, "budget_tokens": 300}
    ]


def test_outcomes_credit_only_applied_items(brain):
    used = brain.learn(tenant="acme", condition="the build cache is stale", action="clear the build cache")
    unused = brain.learn(tenant="acme", condition="the build cache is huge", action="prune old build cache entries")
    pack = brain.recall(tenant="acme", query="the build cache is stale or huge")
    assert set(ids(pack)) == {used, unused}
    brain.outcome(tenant="acme", recall_id=pack.recall_id, applied=[used], success=True, steps=2)

    def counters(item):
        return brain.sql("SELECT recalled, injected, applied, success, failure FROM feedback "
                         "WHERE tenant = 'acme' AND item_id = {i:String}", {"i": item})

    assert counters(used) == [{"recalled": 1, "injected": 1, "applied": 1, "success": 1, "failure": 0}]
    assert counters(unused) == [{"recalled": 1, "injected": 1, "applied": 0, "success": 0, "failure": 0}]
    brain.outcome(tenant="acme", recall_id=pack.recall_id, applied=[unused], success=False)
    assert counters(used) == [{"recalled": 1, "injected": 1, "applied": 1, "success": 1, "failure": 0}]
    assert counters(unused) == [{"recalled": 1, "injected": 1, "applied": 1, "success": 0, "failure": 1}]


def test_explain_a_fragment_shows_its_evidence_and_history_oldest_first(brain):
    e1 = brain.perceive(tenant="acme", kind="anomaly", text="clicked submit in IAM, nothing happened")
    e2 = brain.perceive(tenant="acme", kind="outcome", text="submit worked as admin", success=True)
    unrelated = brain.perceive(tenant="acme", text="lunch is at noon")
    fr = brain.learn(tenant="acme", condition="submit does nothing in IAM", action="switch to the admin account",
                     event_ids=[e1, e2])
    pack = brain.recall(tenant="acme", query="IAM submit does nothing", k=1)
    assert ids(pack) == [fr]
    oc = brain.outcome(tenant="acme", recall_id=pack.recall_id, applied=[fr], success=True)

    chain = brain.explain(fr)
    assert [e["record_type"] for e in chain] == ["perception", "perception", "cognition", "decision", "recall",
                                                "injection", "outcome", "decision"]
    assert [e["record"]["kind"] for e in chain if e["record_type"] == "decision"] == ["unit_accepted",
                                                                                      "unit_verified"]
    offsets = [e["position"].offset for e in chain]
    assert offsets == sorted(offsets)
    assert [e["record"]["envelope"]["record_id"] for e in chain[:2]] == [e1, e2]
    assert unrelated not in [e["record"]["envelope"]["record_id"] for e in chain]
    assert chain[2]["record"]["fragment_id"] == fr and chain[-2]["record"]["envelope"]["record_id"] == oc
    assert brain.explain("fr_does_not_exist") == []


# -- reading -----------------------------------------------------------------------------------
@pytest.mark.parametrize("statement", [
    "INSERT INTO events (tenant, event_id, kind, producer) VALUES ('acme', 'ev_x', 'message', 'sql')",
    "DROP TABLE events",
    "CREATE TABLE sneaky (x UInt8) ENGINE = Memory",
    "TRUNCATE TABLE fragments",
    "SET readonly = 0",
])
def test_sql_refuses_writes_and_the_sdk_still_writes_afterwards(brain, statement):
    brain.perceive(tenant="acme", text="before")
    with pytest.raises(Exception, match="readonly"):  # ClickHouse's own error under readonly=1
        brain.sql(statement)
    brain.perceive(tenant="acme", text="after")
    assert brain.sql("SELECT text FROM events FINAL ORDER BY text") == [{"text": "after"}, {"text": "before"}]
    assert brain.sql("SELECT count() AS n FROM fragments") == [{"n": 0}]


def test_hindsight_runs_now_and_when_due_skips_saying_why(brain):
    brain.perceive(tenant="acme", text="something happened")
    report = brain.hindsight()
    assert report.ran == ["induction", "ab_windows", "summaries", "consolidation", "forgetting", "archive"]
    assert report.why == "forced"
    assert [d["kind"] for d in report.decisions] == ["hindsight_run"]  # too little to induce a belief from
    assert brain.sql("SELECT kind FROM decisions") == [{"kind": "hindsight_run"}]
    later = brain.hindsight(when_due=True)
    assert later.ran == [] and "0 new events ≤ 500" in later.skipped["induction"]
    assert brain.sql("SELECT count() AS n FROM decisions") == [{"n": 1}]  # a skip appends nothing


def test_reopening_rebuilds_the_recall_index_from_the_views(tmp_path):
    with Brain.open(tmp_path) as brain:
        ev = brain.perceive(tenant="acme", text="the staging certificate expired on Friday")
        fr = brain.learn(tenant="acme", condition="the staging certificate expired", action="renew it with certbot",
                         event_ids=[ev])
    with Brain.open(tmp_path) as brain:
        pack = brain.recall(tenant="acme", query="staging certificate expired")
        assert ids(pack) == [fr]  # the event is indexed too, and cut: the unit is its lesson
        assert {"id": ev, "stage": "covered", "reason": f"compressed into {fr}, which is selected"} in pack.cut
        (fragment,) = [i for i in pack.items if i.id == fr]
        assert fragment.event_ids == [ev] and fragment.kind == "fragment"
        assert ids(brain.recall(tenant="acme", query="certificate", layers=["episodic"])) == [ev]


def test_a_part_that_fails_to_stop_does_not_keep_the_others_open(tmp_path):
    """``close`` releases every part even when one raises (a Kafka service re-raising what stopped it): the
    error reaches the caller, and the views' engine is closed — chDB holds one engine per process, so a
    brain left open would refuse every other home this process opens."""
    import pytest

    class FailsToStop:
        def stop(self):
            raise RuntimeError("the service died")

    b = Brain.open(tmp_path / "a", embedder="none")
    b.services.append(FailsToStop())
    with pytest.raises(RuntimeError, match="the service died"):
        b.close()
    with Brain.open(tmp_path / "b", embedder="none") as other:  # another home: the first engine was closed
        other.perceive(tenant="acme", kind="observation", text="still works")
        assert other.sql("SELECT count() AS n FROM events")[0]["n"] == 1
