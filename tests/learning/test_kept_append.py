"""The learner's kept lists (a task's tries and failures, an option's successes and failures, a place's reports)
take their ``setdefault``, ``append`` and cut in one C call (``_scan.kept_append``, issue 28 round twenty-three).
On drawn steps over ``Recent`` maps of a few keys (str in zh and emoji, empty, tuples of frozensets; values of any
kind), it must leave each map as round twenty-two's three lines did — kept here as the oracle —, keys in the same
order, the oldest forgotten past the size, the same lists, and raise the same error where they raised: a key that
is not hashable, a held value that is no list (None: no ``append``; a list-like with its own ``append``)."""

from __future__ import annotations

from collections import OrderedDict

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.learning import learner_state
from hindbrain.learning.learner_state import FailureLists, Recent
from hindbrain.recall import _scan


def oracle_append(recent: Recent, key, value, n: int, size: int) -> list:
    """Round twenty-two's steps, ``Recent.setdefault`` with ``size`` for ``RECENT``."""
    held = recent.get(key, learner_state._ABSENT)
    if held is learner_state._ABSENT:
        held = []
        learner_state._ordered_set(recent, key, held)
        if len(recent) > size:
            recent.popitem(last=False)
    held.append(value)
    if len(held) > n:
        del held[:-n]
    return held


class Appending:
    """A held value that is not a list: its own append, length and cut."""

    def __init__(self):
        self.items = []

    def append(self, value):
        self.items.append(value)

    def __len__(self):
        return len(self.items)

    def __delitem__(self, cut):
        del self.items[cut]

    def __eq__(self, other):
        return isinstance(other, Appending) and self.items == other.items


KEYS = st.sampled_from(("t1", "任务", "🙂", "", ("IAM", frozenset({"export", "report"}), frozenset(), frozenset()),
                        ("报销", frozenset({"提交"}), frozenset({("env", "prod")}), frozenset({"admin"})), 0, None))
VALUES = st.one_of(st.none(), st.text(max_size=3), st.tuples(st.frozensets(st.sampled_from("ab")), st.booleans()),
                   st.just(""), st.just({}))
STEP = st.tuples(KEYS, VALUES, st.integers(1, 3))


def outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as exc:  # noqa: BLE001 - compared by type and message
        return type(exc), str(exc)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(STEP, max_size=40), st.integers(1, 5), st.sampled_from((Recent, FailureLists)))
def test_each_map_is_what_the_three_lines_left(steps, size, kind):
    mine, theirs = kind(), kind()
    for key, value, n in steps:
        got, want = outcome(_scan.kept_append, mine, key, value, n, size), outcome(oracle_append, theirs, key, value,
                                                                                     n, size)
        assert got == want
        if got[0] == "ok":
            assert got[1] is mine[key]  # the held list itself, as setdefault gave it
        assert list(mine.items()) == list(theirs.items())
        assert type(mine) is type(theirs) is kind


@pytest.mark.parametrize("held", [None, (1,), "s"])
def test_a_held_value_without_append_raises_as_before(held):
    mine, theirs = Recent({"k": held}), Recent({"k": held})
    assert outcome(_scan.kept_append, mine, "k", 1, 2, 5) == outcome(oracle_append, theirs, "k", 1, 2, 5)
    assert outcome(_scan.kept_append, mine, "k", 1, 2, 5)[0] is AttributeError


def test_a_list_like_is_appended_and_cut_by_its_own_methods():
    mine, theirs = Recent({"k": Appending()}), Recent({"k": Appending()})
    for value in range(5):
        _scan.kept_append(mine, "k", value, 2, 5)
        oracle_append(theirs, "k", value, 2, 5)
    assert mine["k"].items == theirs["k"].items == [3, 4]


def test_refusals():
    assert outcome(_scan.kept_append, Recent(), ["a list"], 1, 2, 5) == outcome(oracle_append, Recent(), ["a list"], 1,
                                                                                2, 5)
    with pytest.raises(TypeError, match="OrderedDict"):
        _scan.kept_append({}, "k", 1, 2, 5)  # a plain dict has no order to forget by
    with pytest.raises(ValueError, match="n >= 1"):
        _scan.kept_append(Recent(), "k", 1, 0, 5)


def test_the_oldest_key_is_forgotten_past_the_size():
    recent = OrderedDict()
    for key in ("a", "b", "c", "b", "d"):
        _scan.kept_append(recent, key, key, 3, 3)
    assert list(recent) == ["b", "c", "d"] and recent["b"] == ["b", "b"]
