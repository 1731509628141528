"""``unit_states``: each cognitive unit's current lifecycle state, from the learner's decisions.

The learner never updates ``fragments`` (a proposal stays as proposed); each of its
decisions carries the unit's whole state after it, and this view keeps the latest
(``ReplacingMergeTree`` on the log offset), so replay rebuilds it exactly.

A decision counts once, at its first place on the log: when one comes again later (a
producer's retry, an old record replayed), the learner appends a ``unit_restated`` decision
after it with the unit's state of then, which this view keeps as the newest (docs/security.md,
"A decision counts once, round thirty").
"""

from __future__ import annotations

import json

from hindbrain.projections.table import Table, stamp
from hindbrain.schemas.decision_kinds import DecisionKind

TABLE = Table(
    name="unit_states",
    columns=(
        ("tenant", "String"),
        ("fragment_id", "String"),
        ("ts", "DateTime64(6, 'UTC')"),
        ("status", "LowCardinality(String)"),
        ("rung", "LowCardinality(String)"),
        ("confidence", "Float64"),
        ("successes", "UInt32"),
        ("failures", "UInt32"),
        ("contradictions", "UInt32"),
        ("decision_kind", "LowCardinality(String)"),
        ("decision_id", "String"),
    ),
    order_by=("tenant", "fragment_id"),
)
RECORD_TYPES = ("decision",)
# The decisions whose payload carries a unit's whole state after them (``payload["unit"]``);
# the learner folds the same kinds to restore itself.
UNIT_KINDS = (DecisionKind.UNIT_ACCEPTED, DecisionKind.UNIT_HELD, DecisionKind.UNIT_REJECTED,
              DecisionKind.UNIT_RELEASED, DecisionKind.UNIT_ASSIMILATED, DecisionKind.UNIT_ABSORBED,
              DecisionKind.UNIT_VERIFIED, DecisionKind.UNIT_STABLE, DecisionKind.UNIT_EVIDENCE,
              DecisionKind.UNIT_REVIEWING, DecisionKind.UNIT_DISPROVEN, DecisionKind.UNIT_SKILL,
              DecisionKind.TRAIT_PROPOSED, DecisionKind.TRAIT_APPROVED, DecisionKind.TRAIT_DECLINED,
              DecisionKind.UNIT_INVALIDATED, DecisionKind.UNIT_ARCHIVED, DecisionKind.UNIT_SHARED,
              DecisionKind.UNIT_SUPERSEDED, DecisionKind.UNIT_RESTATED)
UNIT_SHARED = DecisionKind.UNIT_SHARED  # a private unit cleared the bar of shared memory (lifecycle.sharing)


# A job's proposal: these near-duplicates merge into a meta-rule (the learner absorbs them).
UNITS_MERGED = DecisionKind.UNITS_MERGED
UNITS_EVICTED = DecisionKind.UNITS_EVICTED  # a job's proposal: over capacity, these lowest-value units are archived


def project(record_type: str, record: dict, position) -> list[dict]:
    if record["kind"] not in UNIT_KINDS:
        return []
    unit = json.loads(record["payload_json"]).get("unit")
    if unit is None:
        return []
    row = {
        "tenant": record["envelope"]["tenant"], "fragment_id": unit["fragment_id"], "ts": record["envelope"]["ts_us"],
        "status": unit["status"], "rung": unit["rung"], "confidence": float(unit["confidence"]),
        "successes": unit["successes"], "failures": unit["failures"], "contradictions": unit["contradictions"],
        "decision_kind": record["kind"], "decision_id": record["decision_id"],
    }
    return [stamp(row, position)]
