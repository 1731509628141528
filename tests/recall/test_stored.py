"""``hindbrain.recall.stored``: the fold of a store's versions into InMemoryStore's order, and
relevance with a floor (design.md §issue-31). Pure functions, no brain."""

from __future__ import annotations

from datetime import UTC, datetime

from hindbrain.recall.stored import fold, ranked, relevance


def version(n: int, ns: str, key: str, text: str = "x", deleted: bool = False, indexed: bool = True) -> dict:
    return {"ns": ns, "key": key, "event_id": f"ev{n}", "text": text, "fmt": "", "indexed": indexed,
            "deleted": deleted, "ts": datetime(2026, 1, 1, 0, 0, n, tzinfo=UTC)}


def test_a_fold_keeps_insertion_order_and_a_delete_frees_the_place():
    items = fold([version(1, "a", "k1"), version(2, "b", "k1"), version(3, "a", "k2"), version(4, "a", "k1", "new"),
                  version(5, "a", "k2", deleted=True), version(6, "a", "k2"), version(7, "b", "k1", deleted=True),
                  version(8, "b", "k3")])
    assert [(i["namespace"], i["key"]) for i in items] == [(("a",), "k1"), (("a",), "k2"), (("b",), "k3")]
    assert items[0]["value"] == {"text": "new"} and items[0]["created_at"] == items[0]["updated_at"]
    assert items[0]["memory_id"] == "ev4"


def test_the_floor_drops_items_sharing_only_stopwords_or_nothing():
    scores = relevance("the answers in French", ["bob wants answers in French", "the weather in the morning",
                                                 "nothing alike"])
    assert scores[0] > 0 and scores[1] == 0 and scores[2] == 0
    assert relevance("wanted answer", ["she wants short answers"])[0] > 0  # stems: wanted ~ wants, answer ~ answers


def test_ranked_leaves_out_unindexed_items_and_orders_by_score():
    items = [{"value": {"text": "french"}, "indexed": True}, {"value": {"text": "french french cheese"},
                                                              "indexed": True},
             {"value": {"text": "french"}, "indexed": False}]
    found = ranked("french", items)
    assert len(found) == 2 and items[2] not in [i for _, i in found]
    assert found[0][0] >= found[1][0] > 0
