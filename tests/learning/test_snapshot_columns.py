"""The learner's snapshot, round twenty-two (docs/speed.md, issue 28): ``FailureLists``' columns read in one C walk
(``_scan.attr_columns``) and the pickle streamed to its file. The same columns and the same bytes as before: the
former forms are kept here as the oracles."""

import pickle
from operator import attrgetter

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.learning import learner_state
from hindbrain.learning.learner_state import FailureLists, keep_failure
from hindbrain.learning.lifecycle import RULE_VERSION
from hindbrain.learning.runtime import SNAPSHOT_VERSION, LearnerRuntime
from hindbrain.recall import _scan

_GETTERS = [attrgetter(name) for name in learner_state._KEPT]


def former_reduce(lists: FailureLists):
    """``FailureLists.__reduce__`` before round twenty-two: an ``attrgetter`` pass a field (the oracle)."""
    flat = [failure for failures in lists.values() for failure in failures]
    return learner_state._failure_lists_of, (list(lists), [len(failures) for failures in lists.values()],
                                              [list(map(getter, flat)) for getter in _GETTERS])


_TEXTS = st.sampled_from(["", " ", "timeout", "校验未通过", "🔥 disk full 🔥", "a\x00b", "x" * 300])
_VALUES = st.one_of(st.none(), _TEXTS, st.text(max_size=12), st.booleans(), st.just({}), st.just([]),
                    st.dictionaries(st.sampled_from(["env", "区域"]), _TEXTS, max_size=2),
                    st.lists(_TEXTS, max_size=3))
_IDS = st.sampled_from(["ev_1", "ev_2", "ev_😀", "ev_三", ""])  # repeats across failures


@st.composite
def failure_records(draw) -> dict:
    record = {"envelope": {"record_id": draw(_IDS)}}
    for name in learner_state._FAILURE_FIELDS:
        if draw(st.booleans()):
            record[name] = draw(_VALUES)
    return record


@st.composite
def failure_lists(draw) -> FailureLists:
    out = FailureLists()
    for key in draw(st.lists(st.one_of(st.text(max_size=6), st.tuples(st.text(max_size=3), st.none())),
                             max_size=8, unique=True)):
        out[key] = [keep_failure(r) for r in draw(st.lists(failure_records(), max_size=4))]
    return out


@settings(max_examples=examples(400), deadline=None)
@given(failure_lists())
def test_failure_lists_pickle_as_before(lists):
    """The columns, and the pickle's bytes, are the former reduce's; loaded, the same map."""
    assert lists.__reduce__() == former_reduce(lists)
    ours = pickle.dumps(lists, protocol=pickle.HIGHEST_PROTOCOL)
    FailureLists.__reduce__, mine = former_reduce, FailureLists.__reduce__
    try:
        theirs = pickle.dumps(lists, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        FailureLists.__reduce__ = mine
    assert ours == theirs
    back = pickle.loads(ours)
    assert type(back) is FailureLists and list(back) == list(lists) and back == lists


class Slots:
    __slots__ = ("a", "b")

    def __init__(self, a, b):
        self.a, self.b = a, b


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.lists(st.tuples(_VALUES, _VALUES), max_size=5), max_size=6),
       st.lists(st.sampled_from(["a", "b"]), max_size=4))
def test_attr_columns_reads_as_getattr(pairs, names):
    lists = [[Slots(a, b) for a, b in row] for row in pairs]
    lengths, columns = _scan.attr_columns(lists, tuple(names))
    assert lengths == [len(row) for row in lists]
    assert columns == [[getattr(o, name) for row in lists for o in row] for name in names]
    flat = [o for row in lists for o in row]
    assert all(c is getattr(o, name)
               for name, column in zip(names, columns, strict=True) for o, c in zip(flat, column, strict=True))


def test_attr_columns_refuses_what_it_cannot_read():
    with pytest.raises(AttributeError):
        _scan.attr_columns([[Slots(1, 2)], [object()]], ("a",))
    with pytest.raises(TypeError):
        _scan.attr_columns([[Slots(1, 2)], (Slots(3, 4),)], ("a",))
    with pytest.raises(TypeError):
        _scan.attr_columns([[Slots(1, 2)]], (b"a",))


def test_attr_columns_refuses_a_list_changed_under_it():
    """A getattr that runs Python code may change a list being read: an error, never a column with a hole."""
    victim: list = []

    class Grower:
        @property
        def a(self):
            victim.append(Slots(0, 0))
            return 1

    class Shrinker:
        @property
        def a(self):
            victim.clear()
            return 1

    victim[:] = [Slots(1, 1)]
    with pytest.raises(RuntimeError):
        _scan.attr_columns([[Grower()], victim], ("a",))
    victim[:] = [Slots(1, 1), Slots(2, 2)]
    with pytest.raises(RuntimeError):
        _scan.attr_columns([[Shrinker()], victim], ("a",))
    victim[:] = [Grower(), Slots(2, 2)]
    with pytest.raises(RuntimeError):
        _scan.attr_columns([victim], ("a",))


class _Log:
    lock = None

    def commit(self, *args) -> None:
        pass


def test_the_snapshot_file_holds_the_bytes_of_the_whole_pickle(tmp_path):
    """Streamed to its file, the snapshot is byte for byte ``pickle.dumps`` of the state (its large columns, the
    last events' ``bytes``, written out of the frames as the stream allows), and loads to the same learner."""
    import random

    from hindbrain.brain import _perception, perceived
    from hindbrain.streams.log import Position
    from hindbrain.streams.processing import Decoded

    runtime = LearnerRuntime(_Log(), None, snapshot=tmp_path / "learner.snapshot")
    rng = random.Random(7)
    events = [{"tenant": "acme", "agent": f"agent-{n % 3}", "task": f"t{n % 700}",
               "kind": "anomaly" if n % 3 else "action", "system": "CRM", "action": "export",
               "text": f"step {rng.random()} 校验 🔥 {n}",
               "success": False if n % 3 else None} for n in range(3000)]
    # the last events' column past the pickle's frame (64 kB): written outside it as the stream allows
    runtime.learner.process([Decoded(Position("perception", 0, n), "perception", _perception(perceived(e)))
                             for n, e in enumerate(events)])
    tenant = runtime.learner.tenants["acme"]
    assert len(tenant.failures) > 500
    runtime._next = 1234
    runtime._write_snapshot()
    state = {"version": SNAPSHOT_VERSION, "rules": RULE_VERSION, "offset": 1234,
             "tenants": runtime.learner.tenants, "counts": runtime.learner.counts}
    written = (tmp_path / "learner.snapshot").read_bytes()
    assert len(written) > 200_000
    assert written == pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    again = LearnerRuntime(_Log(), None, snapshot=tmp_path / "learner.snapshot")
    assert again._load_snapshot(10_000) == 1234
    assert again.learner.tenants["acme"].failures == tenant.failures
    assert not (tmp_path / "learner.partial").exists()
