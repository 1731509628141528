"""The A/B window's pure rule: exact posterior, stable arms, and verdicts on planted data."""

import random

import pytest

from hindbrain.jobs.ab import WindowRule, prob_b_beats_a, settle
from hindbrain.recall.arms import arm_of

DAY_US = 86_400 * 1_000_000


def test_the_posterior_probability_is_exact_and_symmetric():
    assert prob_b_beats_a(5, 10, 5, 10) == pytest.approx(0.5, abs=1e-9)
    assert prob_b_beats_a(0, 0, 0, 0) == pytest.approx(0.5, abs=1e-9)
    p = prob_b_beats_a(30, 100, 45, 100)
    assert p + prob_b_beats_a(45, 100, 30, 100) == pytest.approx(1.0, abs=1e-9)
    rng = random.Random(1)  # against a Monte Carlo estimate of the same posteriors
    draws = sum(rng.betavariate(46, 56) > rng.betavariate(31, 71) for _ in range(200_000)) / 200_000
    assert p == pytest.approx(draws, abs=0.005)


def test_arms_are_stable_per_task_and_split_about_half():
    assert arm_of("w1", "task-7") == arm_of("w1", "task-7")
    arms = [arm_of("w1", f"task-{n}") for n in range(4000)]
    assert 0.45 < arms.count("A") / len(arms) < 0.55


def test_a_planted_better_arm_wins_and_equal_arms_tie():
    rule = WindowRule(min_per_arm=200)
    assert settle(100, 200, 140, 200, 0, DAY_US, rule).status == "B"
    assert settle(140, 200, 100, 200, 0, DAY_US, rule).status == "A"
    tie = settle(120, 200, 122, 200, 0, DAY_US, rule)
    assert tie.status == "tie" and "both stay" in tie.reason


def test_the_window_stays_open_until_enough_outcomes_or_its_time_limit():
    rule = WindowRule(min_per_arm=200, max_days=14)
    assert settle(10, 20, 19, 20, 0, DAY_US, rule).status == "open"  # a big lead on few outcomes waits
    late = settle(10, 20, 19, 20, 0, 15 * DAY_US, rule)
    assert late.status == "B" and "14 days passed" in late.reason
