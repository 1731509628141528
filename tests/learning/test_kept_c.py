"""What the learner keeps of a failure, made in C (``learning/_kept.c`` ``kept_failure``, through
``learner._kept_failure``; issue 28, round twenty) against ``KeptFailure.__init__``, kept as the oracle: the same
slots, type for type (absent and empty fields None, a falsy value that is none of the empty ones kept), the
option not computed, the same error where the envelope or its id is missing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.learning import _kept
from hindbrain.learning.learner import _EMPTY, _FAILURE_FIELDS, KeptFailure, _kept_failure


class _Str(str):
    """A str subclass: an empty one equals "" (so it is kept as None, as ``in`` compares)."""


class _Dict(dict):
    """A dict subclass record: its own ``get`` is Python's to call, so the C leaves it to ``KeptFailure``."""

    def get(self, name, default=None):
        return "from get" if name == "kind" else super().get(name, default)


VALUES = [None, "", " ", "x", "工单 登录失败 403", "😀", _Str(""), _Str("y"), {}, {"user": "bob"}, [], ["CR-1"], (),
          0, 0.0, -0.0, False, True, 1, b"", b"x", frozenset()]
fields = st.dictionaries(st.sampled_from([*_FAILURE_FIELDS, "task", "session"]), st.sampled_from(VALUES), max_size=12)
envelopes = st.one_of(st.fixed_dictionaries({"record_id": st.sampled_from(["ev_1", "工单-1", "", None])}),
                      st.sampled_from([{}, {"tenant": "t"}, None, "ev_1", ["record_id"]]))
records = st.builds(lambda f, env, has: {**f, "envelope": env} if has else f, fields, envelopes,
                    st.sampled_from([True, True, True, False]))


def _slots(kept: KeptFailure) -> list:
    return [(type(getattr(kept, name)), getattr(kept, name)) for name in KeptFailure.__slots__]


def _made(make, record):
    try:
        return "made", _slots(make(record))
    except Exception as exc:  # noqa: BLE001 - the error is compared
        return "raised", type(exc)


@settings(max_examples=800, deadline=None)
@given(records)
def test_the_c_keeps_what_keptfailure_keeps(record):
    assert _made(_kept_failure, record) == _made(KeptFailure, record)


def test_a_dict_subclass_goes_to_keptfailure_and_its_own_get():
    record = _Dict(envelope={"record_id": "ev_1"}, kind="anomaly", text="x")
    assert _kept_failure(record).kind == KeptFailure(record).kind == "from get"
    with pytest.raises(TypeError):
        _kept.kept_failure(KeptFailure, _FAILURE_FIELDS, _EMPTY, record)


def test_another_slotted_class_is_written_where_its_own_slots_lie():
    class Other:
        __slots__ = ("_option", "record_id", "text", "kind")

    made = _kept.kept_failure(Other, ("kind", "text"), _EMPTY, {"envelope": {"record_id": "ev_9"}, "kind": "action"})
    assert (made.kind, made.text, made.record_id, made._option) == ("action", None, "ev_9", None)
    kept = _kept.kept_failure(KeptFailure, _FAILURE_FIELDS, _EMPTY, {"envelope": {"record_id": "ev_2"}, "text": "t"})
    assert _slots(kept) == _slots(KeptFailure({"envelope": {"record_id": "ev_2"}, "text": "t"}))
    # the same class, its fields named in another order: each written where its own slot lies
    some = _kept.kept_failure(KeptFailure, ("text", "kind"), _EMPTY, {"envelope": {"record_id": "ev_3"}, "kind": "k"})
    assert (some.kind, some.text, some.record_id) == ("k", None, "ev_3")


def test_what_is_not_a_writable_object_slot_is_refused():
    class Plain:  # no slots: a __dict__
        pass

    with pytest.raises(TypeError, match="not a slot"):
        _kept.kept_failure(Plain, ("kind",), _EMPTY, {"envelope": {"record_id": "ev_1"}})
    with pytest.raises(TypeError, match="not a slot"):
        _kept.kept_failure(KeptFailure, ("kind", "nope"), _EMPTY, {"envelope": {"record_id": "ev_1"}})
