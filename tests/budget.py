"""How many examples a large property test draws in this run (``max_examples=examples(300)``).

`make test` (and CI) loads the "ci" hypothesis profile (tests/conftest.py): derandomized, the same
examples every run, so a run re-checks a fixed set and finds nothing new by drawing more. There a
test written for ``n`` ≥ ``CI_FLOOR`` examples draws half (never fewer than ``CI_FLOOR``): the property
tests with hundreds of examples were a fifth of the suite's CPU, most of it hypothesis generating
examples (docs/speed.md, "make test's time, round twenty-seven"), and the suite must stay under six
minutes on two cores. Any other run (the "default" profile, a developer's) draws ``n`` random examples,
new ones each run; ``HINDBRAIN_HYPOTHESIS_PROFILE=deep`` draws four times ``n`` (bench-length runs).
"""

from __future__ import annotations

import os

CI_FLOOR = 100
DEEP_FACTOR = 4


def examples(n: int) -> int:
    """``n`` scaled by the profile this run loads (see the module's docstring)."""
    profile = os.environ.get("HINDBRAIN_HYPOTHESIS_PROFILE", "default")
    if profile == "ci":
        return n if n <= CI_FLOOR else max(CI_FLOOR, n // 2)
    if profile == "deep":
        return n * DEEP_FACTOR
    return n
