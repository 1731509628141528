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
