"""bench/fusion_folds.py: a fold leaves the read set's whole family out of the trees' fit, and the offline
read hedges the trees' order with the semantic list at the product's weight (``learned.hedge_weight``)."""

from __future__ import annotations

from pathlib import Path

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
