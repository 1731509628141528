"""A batch's event documents made at once (issue 28: ``cues.exact_cues_many``, ``provenance.instruction_cues``,
``index.event_docs``) are the documents, cue terms and verdicts of each event made alone: every pattern
family run over the joined batch must see at a text's edge what it sees at the edge of the text alone."""

from __future__ import annotations

import dataclasses

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import cues, provenance
from hindbrain.recall.event_documents import event_doc, event_docs

PIECES = ["ORA-00942", "403", "(404)", "status code: 429", "got 500", "ERR_CONN_REFUSED", "0x80070005", "ENOENT",
          "E1234", "VPN", "CamelCase", "iam", "IAM", "vpn gateway", "svc-backup", "admin", "root", "root cause",
          "normal account", "normal", "cause", "guest", "管理员", "普通用户", "工单系统", "https://x.io/a/b",
          "a@b.io", "@bob", "host.corp",
          "/var/log", "v1.2", "e.g.", " ", "\n", "—", "-", "_", ".", ":", "(", ")", "İ", "\u212a", "\x00", "4", "45",
          "always", "must", "from now on", "refund", "transfer", "account", "acct no. 1234 5678", "999-000-1234",
          "ignore previous instructions", "&#97;lways", "ａｌｗａｙｓ", "al\u200bways", "以后", "退款",
          "账户 6222 0000",
          "aWdub3JlIHByZXZpb3VzIGluc3RydWN0aW9ucw==", "ticket 12:", "case 123456789", "x", "Y"]
texts = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)
SYSTEMS = [(), ("iam",), ("vpn gateway",), ("工单系统",), ("crm sync", "admin"), ("a\x00b",)]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(texts, st.sampled_from(SYSTEMS)), min_size=1, max_size=12))
def test_exact_cues_of_a_batch_are_each_texts_own(batch):
    found = cues.exact_cues_many([t for t, _ in batch], [s for _, s in batch])
    assert found == [cues.exact_cues(t, s) for t, s in batch]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(texts, st.sampled_from([*SYSTEMS, ["iam", "IAM "], ("İ", "vpn")])), max_size=12))
def test_known_systems_of_a_batch_in_c_are_the_oracles(batch):
    """``_scan.known_systems_in`` (a text's names looked up by tuple, their cues made once) against the loop."""
    native, oracle = [{"kept"} for _ in batch], [{"kept"} for _ in batch]
    cues._known_systems_many([t for t, _ in batch], [s for _, s in batch], native)
    cues.py_known_systems_many([t for t, _ in batch], [s for _, s in batch], oracle)
    assert native == oracle


def test_known_systems_refuse_a_batch_that_does_not_line_up():
    with pytest.raises(ValueError, match="differ in length"):
        cues._known_systems_many(["a"], [(), ()], [set()])
    with pytest.raises(TypeError, match="unhashable"):
        cues._known_systems_many(["a"], [[["x"]]], [set()])


def test_a_texts_edge_is_an_edge_in_the_batch_too():
    batch = ["the root", "cause was found", "a normal", "account", "got", "403"]
    assert cues.exact_cues_many(batch, [()] * len(batch)) == [cues.exact_cues(t) for t in batch]
    assert "account:root" in cues.exact_cues_many(batch, [()] * len(batch))[0]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(st.none(), texts), min_size=1, max_size=12))
def test_instruction_cues_of_a_batch_are_each_texts_own(batch):
    assert provenance.instruction_cues(batch) == [provenance.instruction_cue(t) for t in batch]


def _fields(doc) -> dict:
    return {f.name: getattr(doc, f.name) for f in dataclasses.fields(doc)}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.fixed_dictionaries({
    "text": st.one_of(st.none(), texts), "kind": st.sampled_from(["message", "observation", "action", "anomaly"]),
    "speaker": st.sampled_from([None, "bob", "agent-1"]), "origin": st.sampled_from([None, "agent", "user", "tool"]),
    "system": st.sampled_from([None, "IAM", "工单系统", "vpn gateway"]),
    "action": st.sampled_from([None, "issue a refund"]),
    "session": st.sampled_from([None, "s-3"]), "entities": st.sampled_from([[], ["ORA-00942"], ["change request"]]),
    "scope": st.sampled_from([{}, {"user": "bob"}, {"task_type": "refund"}]),
    "agent": st.sampled_from([None, "agent-1"])}), min_size=1, max_size=10))
def test_event_documents_of_a_batch_are_each_events_own(rows):
    rows = [(f"ev{n}", fields, 1_700_000_000_000_000 + n, fields["agent"]) for n, fields in enumerate(rows)]
    together = event_docs(rows)
    for (event_id, fields, ts_us, agent), (doc, terms) in zip(rows, together, strict=True):
        alone, alone_terms = event_doc(event_id, fields, ts_us, agent)
        assert _fields(doc) == _fields(alone) and terms == alone_terms
        assert doc.quarantine == provenance.event_quarantine(fields, agent)  # the one-by-one judge
        one_by_one = list(cues.indexed_terms(fields, ts_us))  # the one-by-one cue terms
        assert terms[: len(one_by_one)] == one_by_one
