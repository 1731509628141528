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


def test_a_due_refreeze_waits_for_the_last_bulk_call_holding_it(unfrozen):
    refreeze = Refreezer(every=2)
    with refreeze.deferred():
        with refreeze.deferred():
            refreeze([1, 2, 3])
            assert refreeze.freezes == 0 and gc.get_freeze_count() == 0
        assert refreeze.freezes == 0  # the outer call still holds it
        temporary = [{"record": i} for i in range(1000)]  # a batch's records, dropped before the call returns
        del temporary
    assert refreeze.freezes == 1 and refreeze.since == 0
    assert gc.get_freeze_count() > 0
    with refreeze.deferred():
        refreeze([1])
    assert refreeze.freezes == 1 and refreeze.since == 1  # not due: nothing at the exit either


def test_bulk_calls_that_always_overlap_hold_a_refreeze_for_one_more_every_at_most(unfrozen):
    refreeze = Refreezer(every=4)
    with refreeze.deferred():
        refreeze([0] * 5)
        refreeze([0] * 2)
        assert refreeze.freezes == 0  # 7 < 8: held
        refreeze([0])
        assert refreeze.freezes == 1 and refreeze.since == 0  # 8: made though a call still holds it
        refreeze([0] * 4)
    assert refreeze.freezes == 2


def test_a_deferred_refreeze_still_collects_garbage_cycles_first(unfrozen):
    class Node:
        pass

    refreeze = Refreezer(every=1)
    with refreeze.deferred():
        a, b = Node(), Node()
        a.other, b.other = b, a
        alive = weakref.ref(a)
        del a, b
        refreeze([None])
    assert refreeze.freezes == 1 and alive() is None


def test_perceive_many_refreezes_after_its_listeners_and_not_inside(brain):
    """The embedded brain's bulk call holds the refreeze: a listener after the Refreezer sees none made inside
    the call (the batch's records alive), the call's return makes it (after they are freed)."""
    brain.refreezer.every = 3
    seen = []
    brain.runner.listeners.append(lambda batch: seen.append(brain.refreezer.freezes))
    before = brain.refreezer.freezes
    brain.perceive_many([{"tenant": "t", "agent": "a", "text": f"event {k}"} for k in range(4)])
    assert seen and set(seen) == {before}
    assert brain.refreezer.freezes == before + 1 and brain.refreezer.since == 0


@pytest.mark.parametrize("every", [0, -5, 2.5, "10"])
def test_bad_every_is_refused_naming_the_field(every):
    with pytest.raises(ValueError, match="'every'"):
        Refreezer(every=every)
