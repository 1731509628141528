"""A document read from its packed row leaves the cycle collector (``_scan.untrack_plain``): it is
kept for good, and its fields (JSON's values, tupled and frozen) cannot form a reference cycle."""

import gc
import weakref
from dataclasses import dataclass

import pytest

from hindbrain.recall import _scan
from hindbrain.recall.doc_table import DocTable, untracked
from hindbrain.recall.documents import Doc


class Owner:
    __slots__ = ("a", "b", "__weakref__")

    def __init__(self, a, b):
        self.a, self.b = a, b


def containers(value) -> list:
    """``value``'s container objects, itself first (the tree's lists, tuples, dicts, frozensets)."""
    if isinstance(value, list | tuple | frozenset):
        return [value, *(c for v in value for c in containers(v))]
    if isinstance(value, dict):
        return [value, *(c for v in value.values() for c in containers(v))]
    return []


def plain_values():
    return ([["e1", "e2"], {"team": "ops", "n": ["1", {"deep": [2.5, None, True]}]}],
            (("iam", "", (("team", "ops"),)), frozenset({"u1", ("x", 1)}), b"raw", 7, 0.5, None))


def test_plain_fields_and_their_owner_are_untracked_and_still_freed_by_reference_counting():
    a, b = plain_values()
    owner = Owner(a, b)
    assert gc.is_tracked(owner) and all(gc.is_tracked(c) for c in containers(a) + containers(b)[:1])
    assert _scan.untrack_plain(owner, (a, b)) is True
    assert not gc.is_tracked(owner)
    assert not any(gc.is_tracked(c) for c in containers(a) + containers(b))
    gone = weakref.ref(owner)
    del owner, a, b
    assert gone() is None  # freed at once, no collection needed


@pytest.mark.parametrize("odd", [object(), {"a"}, [Owner(1, 2)], {"k": [1, object()]}, {("t",): 1},
                                 frozenset({Owner(1, 2)})])
def test_a_field_holding_anything_else_changes_nothing(odd):
    plain = ["e1", ("a", "b")]
    owner = Owner(plain, odd)
    assert _scan.untrack_plain(owner, (plain, odd)) is False
    assert gc.is_tracked(owner) and gc.is_tracked(plain)  # not even the plain field's containers


def test_a_tree_deeper_than_any_field_stays_tracked():
    deep = "leaf"
    for _ in range(9):
        deep = [deep]
    owner = Owner(deep, None)
    assert _scan.untrack_plain(owner, (deep, None)) is False and gc.is_tracked(deep) and gc.is_tracked(owner)
    shallow = [[[[[[[["leaf"]]]]]]]]  # depth 8: the limit
    assert _scan.untrack_plain(Owner(shallow, None), (shallow, None)) is True and not gc.is_tracked(shallow)


def test_values_must_be_a_tuple():
    with pytest.raises(TypeError, match="tuple"):
        _scan.untrack_plain(Owner(1, 2), [1, 2])


def doc(n: int) -> Doc:
    return Doc(f"e{n}", "event", "episodic", f"text {n} 页面", [f"e{n}"], "perceived", 0.6,
               {"team": "ops"}, 1_700_000_000_000_000 + n, links=("@entity:iam",), exact=("@code:403",),
               conflicts=frozenset({"u1"}), provenance={"learned_by": "a1", "agents": 1},
               report=("iam", "", "submit", (("team", "ops"),)))


def test_a_document_read_from_its_row_is_out_of_the_collector_and_reads_back_equal():
    table = DocTable(Doc)
    for n in range(3):
        table.append(doc(n))
    assert gc.is_tracked(table[1])  # held as made, before packing: the fold's object, untouched
    table.pack()
    read = table[1]
    assert read == doc(1)
    assert not gc.is_tracked(read)
    assert not any(gc.is_tracked(getattr(read, f)) for f in ("event_ids", "scope", "links", "conflicts",
                                                            "provenance", "report"))


def test_reading_documents_adds_nothing_to_the_young_generation():
    table = DocTable(Doc)
    for n in range(50):
        table.append(doc(n))
    table.pack()
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects(0))
        read = [table[n] for n in range(50)]
        assert len(gc.get_objects(0)) - before < 5  # the list ``read``; before: ~8 objects a document
    finally:
        gc.enable()
    assert len(read) == 50


def test_a_document_given_an_object_stays_tracked():
    @dataclass(slots=True)
    class Held:
        name: str
        extra: object

    assert gc.is_tracked(untracked(Held("a", Owner(1, 2))))
    assert not gc.is_tracked(untracked(Held("a", ["b"])))
