"""DocFreezer: documents read into objects leave the collector's generations in batches."""

from __future__ import annotations

import gc
import weakref

import pytest

from hindbrain.recall import freezing
from hindbrain.recall.doc_table import DocTable
from hindbrain.recall.documents import Doc


@pytest.fixture
def unfrozen():
    gc.unfreeze()
    yield
    gc.unfreeze()


def _table(n: int) -> DocTable:
    table = DocTable(Doc)
    for i in range(n):
        table.append(Doc(f"e{i}", "event", "episodic", f"text {i}", [f"e{i}"], "perceived", 0.5, {"team": "ops"},
                         1_700_000_000_000_000 + i, links=("@entity:iam",), conflicts=frozenset({"u1"})))
    table.pack()  # rows now: a read makes (and keeps) an object
    return table


def test_documents_read_into_objects_are_frozen_once_every_n_and_not_before(unfrozen, monkeypatch):
    freezer = freezing.DocFreezer(every=3)
    monkeypatch.setattr("hindbrain.recall.doc_table.freezer", freezer)
    table = _table(5)
    first = [table[0], table[1]]
    assert not freezer.settle() and gc.get_freeze_count() == 0
    first.append(table[2])
    first.append(table[1])  # read again: the same object, not counted again
    assert freezer.made == 3 and freezer.settle() and freezer.freezes == 1 and freezer.made == 0
    walked = {id(o) for o in gc.get_objects()}  # what a full collection walks
    assert not any(id(d) in walked for d in first)
    assert gc.get_freeze_count() >= 3
    table[3]
    assert not freezer.settle() and freezer.freezes == 1


def test_the_recalls_young_garbage_cycles_are_collected_not_frozen(unfrozen):
    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    del a, b  # a cycle in the young generations: frozen, it would live until ``thaw``
    freezer = freezing.DocFreezer(every=1)
    freezer.note()
    assert freezer.settle()
    assert alive() is None


def test_a_recall_settles_the_process_freezer(unfrozen, monkeypatch):
    from hindbrain.recall.engine import RecallEngine
    from hindbrain.recall.index import RecallIndex
    from hindbrain.recall.query import build_query
    from hindbrain.schemas.api import RecallInput, validated

    freezer = freezing.DocFreezer(every=1)
    monkeypatch.setattr("hindbrain.recall.engine.freezer", freezer)
    freezer.note()
    RecallEngine(RecallIndex()).recall(build_query(validated(RecallInput, "recall", tenant="t", query="vpn"), 0))
    assert freezer.freezes == 1


@pytest.mark.parametrize("every", [0, -5, 2.5, "10"])
def test_bad_every_is_refused_naming_the_field(every):
    with pytest.raises(ValueError, match="'every'"):
        freezing.DocFreezer(every=every)
