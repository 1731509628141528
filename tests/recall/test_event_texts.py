"""An event's texts built in C for the batch (``recall/_scan.c``: ``said_texts``, ``event_texts``) against the
Python they replace, kept as the oracles (``provenance.said_text``, ``index.event_text``), issue 28: the same
strings for any record, whatever its values (mixed scripts, emoji, NUL, long repeats, a non-str value, a str
subclass with its own ``__str__`` or ``__format__``, a mapping that is not a dict), and the same errors."""

from __future__ import annotations

from collections import UserDict

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import event_documents, provenance


class Shouting(str):
    """A str subclass: ``str()`` and ``format`` both differ from the text itself, and from each other."""

    def __str__(self) -> str:
        return self.upper() + "!"

    def __format__(self, spec: str) -> str:
        return f"<{str.__str__(self)}>"


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


FIELDS = sorted({*provenance.TEXT_FIELDS, "system", "identity", "action", "expected", "actual", "scope",
                 "entities", "kind", "origin"})
words = st.one_of(st.sampled_from(["", " ", "\x00", "😀🚀", "工单系统", "e\u0301", "İ", "refund", "IAM", "x" * 700,
                                   "普通用户 权限不足"]), st.text(max_size=12))
values = st.one_of(st.none(), words, words.map(Shouting), st.integers(-3, 3), st.booleans(), st.floats(allow_nan=False),
                   st.just(Opaque()), st.lists(words, max_size=2))
scopes = st.one_of(st.none(), st.dictionaries(st.one_of(words, st.integers(0, 3)), values, max_size=3),
                   st.dictionaries(words, words, max_size=2).map(UserDict))
entities = st.one_of(st.none(), st.lists(values, max_size=4), st.tuples(words, words))
records = st.fixed_dictionaries({"text": values}, optional={
    **{k: values for k in FIELDS if k not in ("text", "scope", "entities")}, "scope": scopes, "entities": entities})


@settings(max_examples=examples(800), deadline=None)
@given(st.lists(records, max_size=5))
def test_said_texts_are_each_records_said_text(batch):
    assert provenance.said_texts(batch) == [provenance.said_text(r) for r in batch]


@settings(max_examples=examples(800), deadline=None)
@given(st.lists(records, max_size=5))
def test_event_texts_are_each_records_event_text(batch):
    native = event_documents.event_texts(batch)
    oracle = [event_documents.event_text(r) for r in batch]
    assert native == oracle
    assert [type(t) for t in native] == [type(t) for t in oracle]  # an unformatted value passes as itself


sources = st.sampled_from([provenance.AGENT, provenance.USER, provenance.TOOL, provenance.UNSTATED])


@settings(max_examples=examples(800), deadline=None)
@given(st.lists(st.tuples(records, sources), max_size=6))
def test_event_said_texts_are_both_oracles_in_one_pass(batch):
    """One pass: every record's event text, and the said text of the records whose source is not the agent's."""
    recs, srcs = [r for r, _ in batch], [s for _, s in batch]
    texts, said = event_documents.event_said_texts(recs, srcs)
    oracle = [event_documents.event_text(r) for r in recs]
    assert texts == oracle and [type(t) for t in texts] == [type(t) for t in oracle]
    assert said == [provenance.said_text(r) for r, s in batch if s != provenance.AGENT]


def test_event_said_texts_of_a_bench_like_batch():
    recs = [{"text": "权限不足 in CRM", "speaker": "bob", "system": "CRM", "actual": "403", "scope": {"team": "a"},
             "entities": ["CRM", ""]},
            {"text": None, "action": "refund", "expected": "ok"},
            {"text": "", "speaker": "eve"}]
    texts, said = event_documents.event_said_texts(recs, [provenance.USER, provenance.AGENT, provenance.TOOL])
    assert texts == ["bob: 权限不足 in CRM — system: CRM / actual: 403", "action: refund / expected: ok", ""]
    assert said == ["权限不足 in CRM\nbob\nCRM\n403\nteam a\nCRM", "eve"]
    with pytest.raises(ValueError, match="one source a record"):
        event_documents.event_said_texts(recs, [provenance.USER])


def test_a_mapping_that_is_not_a_dict_is_read_through_its_own_get():
    record = UserDict({"text": "hi", "speaker": Shouting("bob"), "system": "IAM", "scope": {"a": 1}})
    assert event_documents.event_texts([record]) == [event_documents.event_text(record)] == ["<bob>: hi — system: IAM"]
    assert provenance.said_texts([record]) == [provenance.said_text(record)] == ["hi\nBOB!\nIAM\na 1"]


def test_bad_records_raise_what_the_oracles_raise():
    with pytest.raises(KeyError):
        event_documents.event_text({"speaker": "bob"})
    with pytest.raises(KeyError):
        event_documents.event_texts([{"speaker": "bob"}])
    with pytest.raises(AttributeError):
        provenance.said_text({"scope": ["not", "a mapping"]})
    with pytest.raises((AttributeError, TypeError)):
        provenance.said_texts([{"scope": ["not", "a mapping"]}])
    with pytest.raises(TypeError):
        provenance.said_texts(({"text": "a tuple of records"},))
