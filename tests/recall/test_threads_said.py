"""``TenantIndex._said_in_batch`` (``_scan.threads_said``, one C call a batch) notes a batch's threads exactly as
``_said_in`` event by event (its oracle): the same numbers said before, the same ``last_said`` in the same order,
the same read-ahead (``_forget_oldest_thread``) past ``RECENT_THREADS``, also across batches and after a restored
dict (``recall.index_snapshot``)."""

from __future__ import annotations

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import split_directives
from hindbrain.recall.tenant_index import TenantIndex

# Few distinct values, so threads recur (said again inside and outside the read-ahead); falsy sessions (None, "")
# fall back to the task; unicode, zh and emoji names.
_NAMES = st.sampled_from([None, "", "agent-1", "Ärger", "客服", "🙂", "a\x00b"])
_EVENT = st.tuples(_NAMES, _NAMES, _NAMES, _NAMES)  # owner, session, task, speaker


def _oracle(index: TenantIndex, events: list[tuple], first: int) -> list[tuple[int, int]]:
    befores = [index._said_in((owner, session or task, speaker), no)
               for no, (owner, session, task, speaker) in enumerate(events, first)]
    return [(k, before) for k, before in enumerate(befores) if before is not None]


def _batched(index: TenantIndex, events: list[tuple], first: int) -> list:
    columns = [list(column) for column in zip(*events, strict=True)] if events else [[], [], [], []]
    return index._said_in_batch(*columns, first)


def _state(index: TenantIndex) -> tuple:
    of, ahead, at = index._oldest
    return list(index.last_said.items()), of is index.last_said, ahead, at


@settings(max_examples=examples(300), deadline=None)
@given(batches=st.lists(st.lists(_EVENT, max_size=40), max_size=6), limit=st.integers(1, 12),
       ahead=st.integers(1, 5), restore_at=st.integers(0, 6))
def test_a_batch_notes_its_threads_as_the_events_one_by_one(batches, limit, ahead, restore_at):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(split_directives, "RECENT_THREADS", limit)
        patch.setattr(split_directives, "FORGET_AHEAD", ahead)
        old, new, first = TenantIndex(), TenantIndex(), 0
        for b, events in enumerate(batches):
            if b == restore_at:  # a snapshot's restore puts a new dict in place
                old.last_said, new.last_said = dict(old.last_said), dict(new.last_said)
            assert _batched(new, events, first) == _oracle(old, events, first)
            assert _state(new) == _state(old)
            first += len(events)


def test_a_thread_said_again_gets_its_number_before():
    index = TenantIndex()
    events = [("a", None, "t1", None), ("b", "s", "t1", None), ("a", "", "t1", None), ("b", "s", "t9", None)]
    assert _batched(index, events, 10) == [(2, 10), (3, 11)]
    assert list(index.last_said.items()) == [(("a", "t1", None), 12), (("b", "s", None), 13)]


def test_columns_of_other_lengths_are_refused():
    with pytest.raises(ValueError):
        TenantIndex()._said_in_batch(["a"], [None], [], [None], 0)
