"""A batch's perception records in one pass (``hindbrain.brain.common_perception_records``, ``recall/_scan.c``
``perceive_records``; issue 28, round twenty) against the two steps it replaces, in Python as the oracle
(``py_common_perceive``, then ``_perception`` of each): where every event has the common shape and names no id
of its own, the same records (type for type and key order, the same ids and stamps); None where one does not
(and nothing minted: the caller runs the two steps, which name the bad field)."""

from __future__ import annotations

import itertools
import sys
from collections import UserDict
from datetime import UTC, datetime

import pytest
from budget import examples
from counted_ids import CountedIds, typed
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain import Brain
from hindbrain.brain import _perception, common_perception_records
from hindbrain.schemas import records
from hindbrain.schemas.api import COMMON_SHAPE, MAX_NAME_CHARS, InvalidInput, py_common_perceive


def _two_steps(events: list) -> list[dict] | None:
    """The oracle: the records the two steps make where the batch is all common and without ids, else None."""
    checked = [py_common_perceive(fields) for fields in events]
    if None in checked or any(values["event_id"] is not None for values in checked):
        return None
    return [_perception(values) for values in checked]


def _made(make, events: list) -> tuple:
    """``make(events)`` with deterministic ids and stamps, and how many ids it minted."""
    ids, clock = CountedIds(), itertools.count(1_760_000_000_000_000, 3)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(records, "_random_hex", ids)
        mp.setattr(records, "now_us_many", lambda n: clock.__next__)  # the batch's stamps
        mp.setattr(records, "now_us", clock.__next__)  # the oracle's, one an event: the same stamps
        out = make(events)
    return (None if out is None else [typed(r) for r in out]), next(ids.n)


names = st.one_of(st.none(), st.sampled_from(["bob", "agent-1", "assistant", "工单", "客服 小王", "😀" * 3, "x\x00y",
                                              "é", "a" * MAX_NAME_CHARS]))
said = st.one_of(st.none(), st.sampled_from(["", " ", "I'm sorry, your key moved", "this is terrible!!! 😡",
                                             "谢谢 太慢了", "登录失败 403", "x" * 700, "ok\x00", "Ａ\u0301"]),
                 st.text(max_size=30))
# a value a field should not hold: the event is not of the common shape (or the model refuses it)
odd = st.sampled_from([1, 0.5, b"x", " ", "", "a" * (MAX_NAME_CHARS + 1), "\ud800", ("CR-1",), {"k": 1},
                       datetime(2026, 1, 2, tzinfo=UTC), True])
common = st.fixed_dictionaries(
    {"tenant": st.sampled_from(["t", "工单", "acme"])},
    optional={
        "agent": names, "task": names, "session": names, "speaker": names, "emotion": st.sampled_from([None, "angry"]),
        "kind": st.sampled_from(["message", "feedback", "action", "anomaly", "observation"]), "text": said,
        "action": st.sampled_from([None, "refund", "提交"]), "system": st.sampled_from([None, "IAM", "工单系统"]),
        "identity": names, "expected": said, "actual": said,
        "scope": st.sampled_from([{}, {"user": "bob"}, {"reply_acts": "given", "emotion_source": "given"},
                                  {"用户": "小王"}]),
        "entities": st.sampled_from([[], ["CR-1", "工单"]]), "success": st.sampled_from([None, True, False]),
        "polarity": st.sampled_from([None, -1.0, 0.5, 1.0]), "signal": st.sampled_from([None, "explicit"]),
        "origin": st.sampled_from([None, "user", "tool"]), "ts": st.none(),
        "event_id": st.sampled_from([None, None, None, "ev-given"]),
    })


def _spoilt(fields: dict, name: str, value) -> dict:
    return {**fields, name: value}


events = st.one_of(
    common, common, common,
    st.builds(_spoilt, common, st.sampled_from(["tenant", "agent", "kind", "text", "scope", "entities", "success",
                                                "polarity", "signal", "ts", "extra"]), odd),
    st.sampled_from([None, "tenant", UserDict({"tenant": "t", "text": "x"}), {1: "x", "tenant": "t", "text": "x"}]))


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(events, max_size=12))
def test_one_pass_makes_the_two_steps_records_or_leaves_the_batch_to_them(batch):
    fast, fast_minted = _made(common_perception_records, batch)
    slow, _ = _made(_two_steps, batch)
    assert fast == slow
    assert fast_minted == (0 if fast is None else len(batch))  # a batch left to the two steps mints nothing here
    if fast is not None:
        made = common_perception_records(batch)
        for record, fields in zip(made, batch, strict=True):  # copies: the caller's list and dict are not the record's
            assert record["entities"] is not fields.get("entities") and record["scope"] is not fields.get("scope")
        for record in made:  # a record's list and dict are its own: the shared defaults stay empty
            record["entities"].append("x")
            record["scope"]["x"] = "y"
            record["kind"] = record["envelope"]["tenant"] = "spoilt"  # nor is a record its template
            del record["origin"], record["envelope"]["producer"]
        _compact_as_the_display(batch)
    assert COMMON_SHAPE[1]["entities"] == [] and COMMON_SHAPE[1]["scope"] == {}  # the shared defaults untouched


def _compact_as_the_display(batch: list) -> None:
    """Each record and envelope is as large as the oracle's ``{...}`` display makes it: a table of str keys
    (issue 28, round twenty-one: a copy of a template, where ``_PyDict_NewPresized`` made a general table,
    632 and 352 bytes against 464 and 272, its key table from libc's malloc); and no record is shaped by the
    records spoilt before it (``_made`` once more: the same records as the oracle's)."""
    fast, slow = common_perception_records(batch), _two_steps(batch)
    for record, oracle in zip(fast, slow, strict=True):
        assert (sys.getsizeof(record), sys.getsizeof(record["envelope"])) == (
            sys.getsizeof(oracle), sys.getsizeof(oracle["envelope"]))
    assert _made(common_perception_records, batch)[0] == _made(_two_steps, batch)[0]


def test_a_batch_the_one_pass_leaves_is_answered_as_before(tmp_path):
    """A batch with a bad field still names it (and dead-letters nothing), and one naming its own id still goes
    through the same-event check: both were the two steps' cases."""
    good = {"tenant": "t", "agent": "a", "task": "t1", "kind": "anomaly", "text": "登录 403", "success": False}
    with Brain.open(tmp_path / "h") as brain:
        with pytest.raises(InvalidInput) as refused:
            brain.perceive_many([good, {**good, "polarity": 2.0}])
        assert refused.value.field == "polarity" and "event #1" in str(refused.value)
        answered = brain.perceive_each([good, {**good, "success": "no"}])
        assert isinstance(answered[1], InvalidInput) and answered[1].field == "success"
        ids = brain.perceive_many([good, {**good, "event_id": "ev-mine"}])
        assert ids[1] == "ev-mine" and ids[0].startswith("ev_")
        with pytest.raises(InvalidInput) as again:  # the same id for other content: the same-event check
            brain.perceive_many([{**good, "text": "other", "event_id": "ev-mine"}])
        assert again.value.field == "event_id"


# A batch's ids made in C (``_scan.prefixed_slices``, ``records._RandomHex.prefixed``), the Python slices and
# f-strings they replace as the oracle.
@settings(max_examples=examples(300), deadline=None)
@given(st.text(st.characters(max_codepoint=127), max_size=4), st.text(st.characters(max_codepoint=127), max_size=70),
       st.integers(1, 9), st.integers(0, 70), st.integers(0, 12))
def test_prefixed_slices_are_the_slices_with_the_prefix(prefix, text, width, start, count):
    from hindbrain.recall import _scan

    end = start + width * count
    if end <= len(text):
        assert _scan.prefixed_slices(prefix, text, start, end, width) == [
            prefix + text[i : i + width] for i in range(start, end, width)]
    else:
        with pytest.raises(ValueError):
            _scan.prefixed_slices(prefix, text, start, end, width)


def test_prefixed_slices_refuse_what_is_not_ascii():
    from hindbrain.recall import _scan

    for prefix, text in (("工_", "ab"), ("ev_", "é" * 4)):
        with pytest.raises(ValueError, match="ASCII"):
            _scan.prefixed_slices(prefix, text, 0, 2, 2)


def test_new_ids_are_the_prefix_and_the_ids_drawn_one_by_one(monkeypatch):
    import os

    stream = os.urandom(16 * 700)

    def drawn(ask) -> list[str]:  # ``ask()``'s ids, a fresh ``_RandomHex`` reading ``stream`` in turn
        at = [0]

        def urandom(n: int) -> bytes:
            at[0] += n
            return stream[at[0] - n : at[0]]

        monkeypatch.setattr(os, "urandom", urandom)
        monkeypatch.setattr(records, "_random_hex", records._RandomHex())
        return ask()

    one_by_one = drawn(lambda: [records.new_id("perception") for _ in range(700)])
    assert all(i.startswith("ev_") and len(i) == 35 for i in one_by_one)
    assert drawn(lambda: [i for n in (1, 255, 300, 144) for i in records.new_ids("perception", n)]) == one_by_one
    assert drawn(lambda: records.new_ids("decision", 3)) == ["dc_" + i[3:] for i in one_by_one[:3]]
