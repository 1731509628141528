"""Forgetting as metabolism (design.md §F1–F2, design.md §seed-000-exp-8): the wall clock's job.

Four separate actions, each a decision record, none a timer-driven delete:

* **accessibility decay** (``unit_decayed``): a unit that has not been used (applied) for a
  while ranks lower — kept. Its accessibility is ``0.5 ** (idle days / half-life)``, the
  half-life set by its volatility class (``scope["volatility"]``, else its layer: high 7 d,
  medium 90 d, low 365 d); **red-line** units (``volatility="red_line"``: security rules,
  yearly procedures, disaster recovery) never fade by disuse. Recall applies the same curve
  continuously (its freshness channel counts from the last use); this job records each step
  (below 0.5, 0.25, 0.1) so ``explain`` shows when and why an item faded.
* **absorption** into a more complete cognition: the learner's ``unit_absorbed`` (the old
  one becomes evidence);
* **invalidation by an environment change**: ``Brain.invalidate`` (``unit_invalidated``,
  with the version, evidence and reason), never a timer;
* **conflict pending** (``conflict_pending``): two live units with the same condition and
  different actions are both kept, with their sources and effective times; recall keeps
  the one that ranks higher for the decision at hand and says why it cut the other — the
  last writer does not win by default.
"""

from __future__ import annotations

import math

from hindbrain.jobs.units import LIVE, UnitRow
from hindbrain.learning.records import decision, derived_id
from hindbrain.recall.channels import HALF_LIFE_DAYS, VOLATILITY_OF_LAYER
from hindbrain.recall.index_decisions import CONFLICT_PENDING
from hindbrain.recall.tokenize import tokens
from hindbrain.schemas.decision_kinds import DecisionKind

JOB, VERSION = "hindsight.forgetting", "1"
STEPS = (0.5, 0.25, 0.1)
DECAYED, CONFLICT = DecisionKind.UNIT_DECAYED, CONFLICT_PENDING
_US_PER_DAY = 86_400 * 1_000_000

PAIRS_SQL = "SELECT subject_ids FROM decisions FINAL WHERE kind = 'conflict_pending'"


def volatility(unit: UnitRow) -> str:
    given = unit.scope.get("volatility")
    return given if given in HALF_LIFE_DAYS else VOLATILITY_OF_LAYER.get(unit.layer, "medium")


def accessibility(idle_days: float, volatility_class: str) -> float:
    half_life = HALF_LIFE_DAYS[volatility_class]
    return 1.0 if math.isinf(half_life) else 0.5 ** (max(0.0, idle_days) / half_life)


def decay(units: list[UnitRow], now_us: int, run_id: str) -> list[tuple[str, dict]]:
    """A ``unit_decayed`` decision per live unit whose accessibility crossed a new step
    since it was last used."""
    out = []
    for u in units:
        if u.status not in LIVE:
            continue
        cls = volatility(u)
        idle = (now_us - u.last_used_us) / _US_PER_DAY
        level = accessibility(idle, cls)
        step = sum(level < s for s in STEPS)
        recorded = u.step if u.step_since_us == u.last_used_us else 0  # a use since starts the count again
        if step <= recorded:
            continue
        payload = {"fragment_id": u.fragment_id, "accessibility": round(level, 4), "step": step,
                   "volatility": cls, "idle_days": round(idle, 1), "idle_since_us": u.last_used_us}
        out.append(decision(DECAYED, u.tenant, [u.fragment_id], [], f"unused for {idle:.0f} days ({cls} volatility, "
                            f"half-life {HALF_LIFE_DAYS[cls]:g} d): accessibility {level:.2f} < {STEPS[step - 1]}; "
                            "ranked lower, kept", payload, now_us, JOB, {"steps": list(STEPS),
                                                                          "half_life_days": HALF_LIFE_DAYS},
                            f"{run_id}:{u.fragment_id}", producer="hindsight/hindbrain"))
    return out


def conflicts(units: list[UnitRow], known_pairs: set[frozenset], now_us: int, run_id: str) -> list[tuple[str, dict]]:
    """A ``conflict_pending`` decision per new pair of live units of one tenant and layer
    with the same condition and different actions."""
    by_condition: dict[tuple, list[UnitRow]] = {}
    for u in units:
        if u.status in LIVE:
            by_condition.setdefault((u.tenant, u.layer, " ".join(tokens(u.condition))), []).append(u)
    out = []
    for group in by_condition.values():
        group.sort(key=lambda u: (u.ts_us, u.fragment_id))
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if " ".join(tokens(a.action)) == " ".join(tokens(b.action)) or \
                        frozenset((a.fragment_id, b.fragment_id)) in known_pairs:
                    continue
                sides = [{"fragment_id": u.fragment_id, "action": u.action, "source": u.source,
                          "effective_us": u.ts_us, "status": u.status} for u in (a, b)]
                out.append(decision(CONFLICT, a.tenant, [a.fragment_id, b.fragment_id], [a.fragment_id, b.fragment_id],
                                    f"the same condition ('{a.condition}'), different actions: both kept; recall "
                                    "keeps the one that ranks higher for each decision", {"sides": sides}, now_us,
                                    JOB, {}, derived_id("cp", a.fragment_id, b.fragment_id),
                                    producer="hindsight/hindbrain"))
    return out


def known_pairs(warehouse) -> set[frozenset]:
    return {frozenset(row[0][:2]) for row in warehouse.query(PAIRS_SQL)}
