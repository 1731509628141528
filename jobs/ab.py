"""A/B windows for conflicting beliefs (design.md §E5, design.md §seed-002-5.3): the pure half.

When a new belief contradicts an active one, both go to *reviewing* and a window opens:
each decision in it is assigned to arm A (the incumbent) or B (the challenger) by a hash of
its task id (``recall.arms.arm_of``), so a task always sees the same arm and the split needs no state. Outcomes of
applied beliefs are counted per arm. The window closes when each arm has
``min_per_arm`` outcomes, or at ``max_days``.

**The rule that decides** (stated, so the decision record can cite it): with uniform
Beta(1, 1) priors, the posterior probability that B's success rate exceeds A's,
``P(p_B > p_A)``, computed exactly (the closed-form sum for integer Beta parameters). At
close, B wins when it is ≥ ``decide_at``, A wins when it is ≤ 1 − ``decide_at``; otherwise
it is a tie and both stay, weighted by their confidence. The loser is down-weighted, never
deleted. Decided only once, at close — no peeking, which is what keeps the false-winner
rate at about 2 × (1 − ``decide_at``). ``bench/ab_windows.py`` measures both error rates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_US_PER_DAY = 86_400 * 1_000_000


@dataclass(frozen=True)
class WindowRule:
    min_per_arm: int = 200  # 20-point differences (0.5 vs 0.7) are found ≥ 95 % of the time
    max_days: float = 14.0
    decide_at: float = 0.98

    def describe(self) -> str:
        return (f"Beta(1,1) posterior P(p_B > p_A) at close (≥ {self.min_per_arm} outcomes per arm or "
                f"{self.max_days:g} days): B wins ≥ {self.decide_at}, A wins ≤ {1 - self.decide_at:.2f}, else a tie")


@dataclass(frozen=True)
class Verdict:
    status: str  # open | A | B | tie
    p_b_better: float
    reason: str


def prob_b_beats_a(a_successes: int, a_total: int, b_successes: int, b_total: int) -> float:
    """P(p_B > p_A) under independent Beta(1 + s, 1 + f) posteriors (exact)."""
    alpha_a, beta_a = 1 + a_successes, 1 + a_total - a_successes
    alpha_b, beta_b = 1 + b_successes, 1 + b_total - b_successes
    total = 0.0
    base = _log_beta(alpha_a, beta_a)
    for i in range(alpha_b):
        total += math.exp(_log_beta(alpha_a + i, beta_a + beta_b) - math.log(beta_b + i)
                          - _log_beta(1 + i, beta_b) - base)
    return min(1.0, max(0.0, total))


DEFAULT_RULE = WindowRule()


def settle(a_successes: int, a_total: int, b_successes: int, b_total: int, opened_us: int, now_us: int,
           rule: WindowRule = DEFAULT_RULE) -> Verdict:
    """The window's verdict now: still open, or decided by ``rule``."""
    p = prob_b_beats_a(a_successes, a_total, b_successes, b_total)
    counts = f"A {a_successes}/{a_total}, B {b_successes}/{b_total}, P(B > A) = {p:.3f}"
    enough = min(a_total, b_total) >= rule.min_per_arm
    expired = (now_us - opened_us) / _US_PER_DAY >= rule.max_days
    if not (enough or expired):
        return Verdict("open", p, f"open: {counts}")
    why = "enough outcomes" if enough else f"{rule.max_days:g} days passed"
    if p >= rule.decide_at:
        return Verdict("B", p, f"B wins ({why}): {counts} ≥ {rule.decide_at}")
    if p <= 1 - rule.decide_at:
        return Verdict("A", p, f"A wins ({why}): {counts} ≤ {1 - rule.decide_at:.2f}")
    return Verdict("tie", p, f"no winner ({why}): {counts}; both stay, weighted by confidence")


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
