"""Bad input to the ``Brain`` SDK: a ``ValueError`` naming the field, and nothing written.

Its own module because the cases share one brain (opening a brain per case was most of their
time), and chDB serves one folder per process at a time: a module-scoped brain must not be
open while another module's tests open theirs.
"""

from __future__ import annotations

import pytest

from hindbrain import Brain
from hindbrain.streams.sqlite_log import ALL_TOPICS


@pytest.fixture(scope="module")
def untouched_brain(tmp_path_factory):
    """One lexical brain for the bad-input tests, which must leave it empty: each asserts that
    nothing was written, so a write by one fails that test (opening a brain per case was most
    of their time)."""
    with Brain.open(tmp_path_factory.mktemp("untouched") / "brain", embedder="none") as b:
        yield b


def log_length(brain: Brain) -> int:
    return brain.log.end_offset(ALL_TOPICS, 0)


BAD_PERCEPTIONS = {
    "missing tenant": ({"text": "x"}, "tenant"),
    "empty tenant": ({"tenant": "", "text": "x"}, "tenant"),
    "unknown kind": ({"tenant": "acme", "kind": "gossip", "text": "x"}, "kind"),
    "empty text and action": ({"tenant": "acme", "text": "", "action": "  "}, "text"),
    "no text nor action": ({"tenant": "acme", "kind": "message"}, "text"),
    "text and action of invisible characters": ({"tenant": "acme", "text": "\u200b\u202e", "action": "\x00"}, "text"),
    "text over 64 KiB": ({"tenant": "acme", "text": "x" * (64 * 1024 + 1)}, "text"),
    "CJK text over 64 KiB of UTF-8": ({"tenant": "acme", "text": "权" * 21846}, "text"),
    "non-UTF-8 bytes": ({"tenant": "acme", "text": b"\xff\xfe not utf-8"}, "text"),
    "lone surrogate": ({"tenant": "acme", "text": "broken \udcff"}, "text"),
    "tenant not a string": ({"tenant": 42, "text": "x"}, "tenant"),
    "success not a bool": ({"tenant": "acme", "text": "x", "success": "yes"}, "success"),
    "entities not a list": ({"tenant": "acme", "text": "x", "entities": "IAM"}, "entities"),
    "scope not a dict": ({"tenant": "acme", "text": "x", "scope": ["env"]}, "scope"),
    "polarity out of range": ({"tenant": "acme", "text": "x", "polarity": 2.0}, "polarity"),
    "unknown field": ({"tenant": "acme", "text": "x", "mood": "sad"}, "mood"),
}


@pytest.mark.parametrize("fields,field", BAD_PERCEPTIONS.values(), ids=BAD_PERCEPTIONS.keys())
def test_bad_perceptions_raise_naming_the_field_and_write_nothing(untouched_brain, fields, field):
    brain = untouched_brain
    before = log_length(brain)
    with pytest.raises(ValueError, match=f"'{field}'"):
        brain.perceive(**fields)
    assert log_length(brain) == before
    assert brain.sql("SELECT count() AS n FROM events") == [{"n": 0}]


@pytest.mark.parametrize("operation,fields,field", [
    ("learn", {"tenant": "acme", "condition": "c", "action": ""}, "action"),
    ("learn", {"tenant": "acme", "condition": "c", "action": "a", "source": "read"}, "citation"),
    # round twenty-five: what shows nothing, or cites nothing, is blank (zero-width, bidi, punctuation only)
    ("learn", {"tenant": "acme", "condition": "c", "action": "a", "source": "read", "citation": "\u200b"}, "citation"),
    ("learn", {"tenant": "acme", "condition": "c", "action": "a", "source": "read", "citation": " \u202e- "},
     "citation"),
    ("learn", {"tenant": "acme", "condition": "\u200b\u2060", "action": "a"}, "condition"),
    ("learn", {"tenant": "acme", "condition": "c", "action": "\x00\u200e "}, "action"),
    ("recall", {"tenant": "acme", "query": "\ufeff"}, "query"),
    ("learn", {"tenant": "acme", "condition": "c", "action": "a", "confidence": 1.5}, "confidence"),
    ("recall", {"tenant": "acme", "query": "x", "budget_tokens": 0}, "budget_tokens"),
    ("recall", {"tenant": "acme", "query": "x", "trigger": "boredom"}, "trigger"),
    ("recall", {"query": "x"}, "tenant"),
    ("recall", {"tenant": "acme", "query": "x", "layers": ["dreams"]}, "layers"),
    ("outcome", {"tenant": "acme", "applied": ["fr_1"]}, "success"),
    ("outcome", {"tenant": "acme", "success": 1}, "success"),
    ("outcome", {"tenant": "acme", "success": True, "steps": -1}, "steps"),
])
def test_bad_input_to_other_operations_raises_naming_the_field(untouched_brain, operation, fields, field):
    brain = untouched_brain
    with pytest.raises(ValueError, match=f"'{field}'"):
        getattr(brain, operation)(**fields)
    assert log_length(brain) == 0
