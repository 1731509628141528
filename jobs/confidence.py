"""Belief confidence from objective outcomes (design.md §E2, design.md §seed-002-4).

The seed's ``pos / total × log(total + 1) × decay`` grows without bound (10 of 10 gives
2.4, 100 of 100 gives 4.6), so it cannot be compared with a threshold such as 0.72 or with
the unit confidences elsewhere. Here confidence is the **Wilson score lower bound** of the
success rate — bounded in [0, 1], and it penalises small samples (10/10 → 0.79, 100/100 →
0.97 at z = 1.645, the one-sided 95 % bound) — times the seed's age decay
``0.94 ** days`` since the newest supporting evidence. Model self-assessment never enters:
the inputs are counted outcomes.
"""

from __future__ import annotations

import math

Z = 1.645  # one-sided 95 %
DECAY_PER_DAY = 0.94
ACTIVATION = 0.72
_US_PER_DAY = 86_400 * 1_000_000


def wilson_lower(successes: int, total: int, z: float = Z) -> float:
    """The lower bound of the Wilson score interval of ``successes / total`` (0 when total is 0)."""
    if total <= 0:
        return 0.0
    p = successes / total
    centre = p + z * z / (2 * total)
    margin = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    return max(0.0, (centre - margin) / (1 + z * z / total))


def age_decay(newest_us: int, now_us: int, per_day: float = DECAY_PER_DAY) -> float:
    days = max(0.0, (now_us - newest_us) / _US_PER_DAY)
    return per_day ** days


def belief_confidence(successes: int, total: int, newest_us: int, now_us: int, z: float = Z,
                      per_day: float = DECAY_PER_DAY) -> float:
    return wilson_lower(successes, total, z) * age_decay(newest_us, now_us, per_day)
