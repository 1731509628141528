"""A batch's cue keys and verdict sources read from its records in one C pass (``recall/_scan.c`` ``event_keys``;
``index.event_keys``, issue 28) against the record-by-record Python it replaces, kept as the oracle
(``index.py_event_keys``: ``cues.event_key`` and ``provenance.source_of``): the same keys and sources, value for
value and type for type, for any record (odd values in every field, a scope whose keys are not str, a mapping
that is not a dict, a speaker who is the agent), the same errors; and the fold's terms and quarantines are the
same whether the keys come from C or from the Python."""

from __future__ import annotations

from collections import UserDict
from pathlib import Path

import pytest
from budget import examples
from by_path import module_at
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import event_documents

cases = module_at(Path(__file__).parent / "test_event_docs.py", "event_docs_cases")
agents = st.one_of(st.none(), st.sampled_from(["", "bob", "agent-1"]), cases.words)
speakers = st.one_of(st.none(), st.sampled_from(["bob", "agent-1", ""]), cases.values)
records = st.one_of(cases.mappings, st.builds(lambda r, s: {**r, "speaker": s}, cases.records, speakers))
batches = st.lists(st.tuples(records, agents), max_size=8)


def _typed(value):
    """A value with its type, nested: ``0 == False`` must not pass for the same value."""
    if isinstance(value, list | tuple):
        return type(value).__name__, [_typed(v) for v in value]
    return type(value).__name__, repr(value)


@settings(max_examples=examples(600), deadline=None)
@given(batches)
def test_the_c_keys_and_sources_are_the_oracles(batch):
    records, agents = [r for r, _ in batch], [a for _, a in batch]
    try:
        oracle = event_documents.py_event_keys(records, agents)
    except Exception as error:  # noqa: BLE001 - the same error from both, whatever it is
        with pytest.raises(type(error)):
            event_documents.event_keys(records, agents)
        return
    assert _typed(event_documents.event_keys(records, agents)) == _typed(oracle)


def test_a_scope_is_sorted_and_stringified_and_the_agents_own_words_are_its():
    records = [{"text": "x", "kind": "anomaly", "scope": {"b": None, 2: 3, "a": "z"}, "entities": ["e"],
                "system": "IAM"},
               {"text": "y", "kind": "message", "speaker": "bob", "scope": {}},
               {"text": "z", "kind": "message", "speaker": "bob", "scope": {}},
               {"text": "w", "kind": "feedback", "origin": "tool", "scope": UserDict({"k": "v"})}]
    keys, sources = event_documents.event_keys(records, ["bob", "bob", "ann", None])
    assert keys[0] == (("IAM", None, None, None, None, None, None), True, ("e",), (("2", "3"), ("a", "z"), ("b", "")),
                       ())
    assert keys[3][3] == (("k", "v"),)
    assert sources == ["unstated", "unstated", "user", "tool"]  # bob's message as agent bob: not a user's
    assert (keys, sources) == event_documents.py_event_keys(records, ["bob", "bob", "ann", None])


def test_the_batch_and_its_agents_must_match():
    with pytest.raises(ValueError, match="one agent a record"):
        event_documents.event_keys([{"text": "x", "scope": {}}], [])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(cases.records, agents), min_size=1, max_size=8))
def test_the_fold_makes_the_same_terms_and_quarantines_from_either(batch):
    rows = [(f"ev{n}", fields, 1_700_000_000_000_000 + n, agent) for n, (fields, agent) in enumerate(batch)]
    try:
        native = event_documents._event_parts(rows)
    except Exception as error:  # noqa: BLE001 - the same error from both, whatever it is
        with pytest.raises(type(error)):
            _with_oracle(rows)
        return
    assert native == _with_oracle(rows)


def _with_oracle(rows):
    """``index._event_parts`` with the Python keys and sources."""
    native, event_documents.event_keys = event_documents.event_keys, event_documents.py_event_keys
    try:
        return event_documents._event_parts(rows)
    finally:
        event_documents.event_keys = native
