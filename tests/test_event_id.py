"""One ``event_id``, one event (design.md §issue-31): the same id with other content is refused naming the
id and writes nothing; the same content again stays one event; a batch is one tenant's."""

from __future__ import annotations

import pytest

from hindbrain import Brain, InvalidInput


@pytest.fixture(scope="module")
def brain(tmp_path_factory):
    with Brain.open(tmp_path_factory.mktemp("event-id") / "brain", embedder="none") as b:
        yield b


def rows(brain, tenant, event_id):
    return brain.sql("SELECT text FROM events FINAL WHERE event_id = {e:String}", {"e": event_id}, tenant=tenant)


def log_records(brain) -> int:
    return brain.stats()["log_records"]


def test_the_same_id_with_other_content_is_refused_naming_it(brain):
    brain.perceive(tenant="ids", agent="bot", text="bob wants answers in French", event_id="ev-lang")
    before = log_records(brain)
    with pytest.raises(InvalidInput, match="'event_id'.*'ev-lang'.*other content"):
        brain.perceive(tenant="ids", agent="bot", text="bob wants answers in German", event_id="ev-lang")
    with pytest.raises(InvalidInput, match="'event_id'.*event #1"):  # in a batch: nothing of it is written
        brain.perceive_many([{"tenant": "ids", "text": "a new one", "event_id": "ev-new"},
                             {"tenant": "ids", "agent": "bot", "text": "German again", "event_id": "ev-lang"}])
    assert log_records(brain) == before
    assert rows(brain, "ids", "ev-lang") == [{"text": "bob wants answers in French"}]
    [item] = [i for i in brain.recall(tenant="ids", agent="bot", query="answers French German").items
              if i.id == "ev-lang"]
    assert "French" in item.text


def test_the_same_content_again_is_one_event(brain):
    fields = {"tenant": "ids", "agent": "bot", "text": "the deploy finished", "event_id": "ev-same"}
    assert brain.perceive(**fields) == brain.perceive(**fields) == "ev-same"
    assert brain.perceive_many([fields, fields]) == ["ev-same", "ev-same"]
    assert len(rows(brain, "ids", "ev-same")) == 1


def test_two_events_in_one_batch_claiming_one_id_are_refused(brain):
    with pytest.raises(InvalidInput, match="'event_id'.*'ev-twice'"):
        brain.perceive_many([{"tenant": "ids", "text": "one thing", "event_id": "ev-twice"},
                             {"tenant": "ids", "text": "another thing", "event_id": "ev-twice"}])
    assert rows(brain, "ids", "ev-twice") == []


def test_another_tenant_may_use_the_id(brain):
    brain.perceive(tenant="ids-a", text="alpha", event_id="ev-shared")
    brain.perceive(tenant="ids-b", text="beta", event_id="ev-shared")  # ids are per tenant: no conflict
    assert rows(brain, "ids-b", "ev-shared") == [{"text": "beta"}]


def test_a_batch_is_one_tenants(brain):
    with pytest.raises(InvalidInput, match="'tenant'.*event #1.*'globex'"):
        brain.perceive_many([{"tenant": "acme", "text": "a"}, {"tenant": "globex", "text": "b"}])


def test_only_a_callers_own_id_is_looked_up(brain, monkeypatch):
    """A minted id is 128 fresh random bits: the same-event look-up is for the caller's ids alone
    (issue 28: it parsed every id of a batch for nothing)."""
    import hindbrain.brain as brain_module

    asked = []
    monkeypatch.setattr(brain_module, "conflict", lambda index, record, earlier: asked.append(record) or None)
    ids = brain.perceive_many([{"tenant": "ids", "text": "minted one"}, {"tenant": "ids", "text": "own id",
                                                                         "event_id": "ev-own"}])
    assert ids[1] == "ev-own" and [r["envelope"]["record_id"] for r in asked] == ["ev-own"]
