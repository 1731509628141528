"""bench/fusion_folds.py: a fold leaves the read set's whole family out of the trees' fit, and the offline
read hedges the trees' order with the semantic list at the product's weight (``learned.hedge_weight``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from by_path import module_at

from hindbrain.recall import learned

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def folds():
    return module_at(BENCH / "fusion_folds.py", "fusion_folds")


def test_a_fold_holds_no_question_of_the_read_sets_family(folds):
    assert folds.fold("hard-en", folds.MORE) == ("madial-zh", "madial-en", "conv-en", "conv-zh",
                                                 "hard2-en", "hard2-zh", "hard3-en", "hard3-zh")
    assert folds.fold("hard3-zh", folds.MORE) == (*folds.BASE, "hard2-en", "hard2-zh")
    assert folds.fold("hard3-zh", folds.BASE) == folds.BASE


def test_the_read_hedges_as_the_product_weighs_the_semantic_list(folds):
    id_of = {no: f"e{no}" for no in range(1, 12)}
    trees = [1, 2, 3, 4, 5, 6]
    apart = [7, 8, 9, 10, 11, 1]  # no item of the trees' top five: the semantic list weighs 1.0
    hedged = folds.hedged_ids(trees, apart, id_of)
    assert hedged[:4] == ["e1", "e7", "e2", "e8"]  # at 0.7 the trees' third would come before "e8"
    assert len(hedged) == len(trees)
    agreeing = [2, 1, 3, 4, 6, 5]  # four of the top five shared: the usual weight
    assert folds.hedged_ids(trees, agreeing, id_of) == [
        f"e{no}" for no, _ in learned.hedge_places(trees, agreeing, learned.HEDGE_K, learned.HEDGE_WEIGHT)]
    assert folds.hedged_ids(trees, [], id_of) == [f"e{no}" for no in trees]  # a dialogue: not hedged


def _row(ids: list[str], gold: set[str]) -> dict:
    x = np.arange(len(ids) * len(learned.FEATURES), dtype=float).reshape(len(ids), len(learned.FEATURES))
    return {"gold": gold, "category": "single", "product": {1: 0.0, 5: 0.0, 10: 0.0},
            "call": {"x": x, "ids": ids, "nos": list(range(len(ids))), "prior": None, "utility": [0.5] * len(ids),
                     "utility_weight": 0.0, "semantic_nos": [], "semantic_ids": []}}


def test_a_fed_refit_fits_a_question_set_on_its_fed_pools_and_a_dialogue_set_on_the_cache(folds):
    unfed, fed = _row(["a", "b"], {"b"}), _row(["a", "b", "c"], {"c"})  # "c": the semantic channel's, fed
    lists = {"conv-en": [unfed], "conv-en@5": [fed]}
    dialogue = ("q1", True, {"d"}, ["d", "e"], np.zeros((2, len(learned.FEATURES))), np.ones(2))
    held_out = ("q2", False, {"d"}, ["d"], np.zeros((1, len(learned.FEATURES))), np.ones(1))
    pools = folds.training(("madial-zh", "conv-en"), lists, {"madial-zh": [dialogue, held_out]}, 5)
    assert [p[3] for p in pools] == [["d", "e"], ["a", "b", "c"]]  # the fed pool's rows, no held-out question
    assert pools[1][2] == {"c"} and (pools[1][4] == fed["call"]["x"]).all() and list(pools[1][5]) == [1.0] * 3
    assert [p[3] for p in folds.training(("conv-en",), lists, {}, 0)] == [["a", "b"]]


def test_the_read_leaves_out_the_trees_places_past_the_semantic_reach_where_the_orders_are_apart(folds, monkeypatch):
    monkeypatch.setattr(learned, "HEDGE_REACH", 10)
    id_of = {no: f"e{no}" for no in range(1, 17)}
    apart = [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 2, 1]  # 2: the trees' second, the semantic order's 11th
    assert folds.hedged_ids([1, 2, 3, 4, 5, 6], apart, id_of) == ["e1", "e7", "e8", "e3", "e9", "e4"]
    assert folds.paired_cell([{5: 1.0}, {5: 0.5}, {5: 0.0}], [{5: 0.5}, {5: 0.5}, {5: 1.0}]) == "1 : 1 (-0.50)"
