"""bench/quality.py's per-question judgement beside "semantic alone": the default's R@5 questions won : lost
against another ranking and the exact two-sided sign test (McNemar's exact test) of that split."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from scipy.stats import binomtest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def quality():
    # imported by name, as the bench scripts import it (its dataclasses need their module in sys.modules)
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("quality")


def at5(*shares: float) -> list[dict[int, float]]:
    return [{1: 0.0, 5: s, 10: s} for s in shares]


def test_won_and_lost_count_questions_whose_share_differs(quality):
    default = at5(1.0, 0.5, 0.0, 1.0, 0.5, 0.0)
    alone = at5(0.0, 1.0, 0.0, 1.0, 0.0, 0.5)  # a tie at 0 and at 1 counts for neither side
    won, lost, p = quality.paired(default, alone)
    assert (won, lost) == (2, 2)
    assert p == 1.0


def test_the_sign_test_is_exact_and_two_sided(quality):
    assert quality.sign_test_p(8, 1) == pytest.approx(20 / 512)  # 2 × (C(9,0) + C(9,1)) / 2⁹
    assert quality.sign_test_p(1, 8) == quality.sign_test_p(8, 1)
    assert quality.sign_test_p(0, 0) == 1.0  # no question differs: nothing against chance
    for won, lost in ((0, 5), (3, 9), (7, 7), (12, 4), (1, 30)):
        assert quality.sign_test_p(won, lost) == pytest.approx(binomtest(won, won + lost).pvalue)
