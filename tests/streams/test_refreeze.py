"""Refreezer: what was indexed since the last freeze leaves the collector's generations."""

from __future__ import annotations

import gc
import weakref

import pytest

from hindbrain.streams.gc_pause import Refreezer


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_freezes_once_every_n_records_and_keeps_what_is_alive(unfrozen):
    refreeze = Refreezer(every=3)
    held = [{"unit": i, "tokens": [str(i)]} for i in range(1000)]  # what an index would keep
    refreeze([1, 2])
    assert gc.get_freeze_count() == 0 and refreeze.freezes == 0
    refreeze([3])
    assert refreeze.freezes == 1 and refreeze.since == 0
    frozen = gc.get_freeze_count()
    assert frozen >= len(held)  # the dicts and lists alive at the freeze
    collected = {id(o) for o in gc.get_objects()}  # every generation the collector walks
    assert not any(id(h) in collected for h in held)
    refreeze([4, 5])
    assert gc.get_freeze_count() == frozen  # 2 of 3: not yet


def test_cycles_that_are_garbage_when_it_freezes_are_collected_not_frozen(unfrozen):
    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    del a, b  # a cycle: only the collector frees it; frozen, it would live until ``thaw``
    Refreezer(every=1)([None])
    assert alive() is None


@pytest.mark.parametrize("every", [0, -5, 2.5, "10"])
def test_bad_every_is_refused_naming_the_field(every):
    with pytest.raises(ValueError, match="'every'"):
        Refreezer(every=every)


def test_a_held_refreeze_waits_for_the_last_holder(unfrozen, monkeypatch):
    """While bulk calls hold it, the listener only counts; the collection and freeze come once, as
    the last one returns (its temporaries freed), and only if due."""
    calls = []
    refreeze = Refreezer(every=3)
    monkeypatch.setattr(refreeze, "refreeze", lambda: calls.append(1))
    with refreeze.deferred():
        with refreeze.deferred():
            refreeze([1, 2, 3, 4])
            refreeze([5, 6, 7])
        assert calls == []  # another call still holds it
    assert calls == [1] and refreeze.freezes == 1
    with refreeze.deferred():
        refreeze([8, 9])  # not due: nothing on the way out
    assert calls == [1]
    refreeze([10])  # due again, nobody holding: the listener refreezes
    assert len(calls) == 2


def test_a_held_refreeze_freezes_what_outlives_the_call_and_not_its_temporaries(unfrozen):
    refreeze = Refreezer(every=2)
    with refreeze.deferred():
        kept = [{"unit": i} for i in range(500)]
        temporary = [{"scratch": i} for i in range(500)]
        temporary_ids = {id(t) for t in temporary}
        refreeze([1, 2, 3])
        assert gc.get_freeze_count() == 0
        del temporary
    assert refreeze.freezes == 1 and gc.get_freeze_count() >= len(kept)
    assert not any(id(k) in {id(o) for o in gc.get_objects()} for k in kept)  # frozen
    assert len(temporary_ids) == 500


def test_perceive_many_refreezes_after_its_batch_is_done(lexical_brain, monkeypatch, unfrozen):
    """The collection runs once the call has returned (its records freed), not inside the append."""
    import inspect

    inside = []
    monkeypatch.setattr(lexical_brain.refreezer, "refreeze",
                        lambda: inside.append(any(f.function == "_perceive_many" for f in inspect.stack())))
    lexical_brain.refreezer.every = 3
    lexical_brain.perceive_many([{"tenant": "t", "agent": "a", "text": f"event {n}"} for n in range(5)])
    assert inside == [False]
    assert lexical_brain.recall(tenant="t", agent="a", query="event 3").items  # nothing lost on the way
