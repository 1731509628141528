"""``fragments``: proposed cognitive units, "when C, do A, because R, verified by E"."""

from __future__ import annotations

from hindbrain.projections.table import Table, stamp

TABLE = Table(
    name="fragments",
    columns=(
        ("tenant", "String"),
        ("fragment_id", "String"),
        ("ts", "DateTime64(6, 'UTC')"),
        ("agent", "Nullable(String)"),
        ("condition", "String"),
        ("action", "String"),
        ("reason", "Nullable(String)"),
        ("evidence", "Nullable(String)"),
        ("text", "String"),
        ("scope", "Map(String, String)"),
        ("source", "LowCardinality(String)"),
        ("layer", "LowCardinality(String)"),
        ("citation", "Nullable(String)"),
        ("confidence", "Float64"),
        ("seed", "Bool"),
        ("status", "LowCardinality(String)"),
        ("event_ids", "Array(String)"),
        ("entities", "Array(String)"),
    ),
    order_by=("tenant", "fragment_id"),
)
RECORD_TYPES = ("cognition",)

# Initial confidence when the proposer gives none: a lived unit starts as implicit evidence
# (0.6), a curated seed as explicit (0.9) (design.md §B7, B10). The learning loop moves it later.
DEFAULT_CONFIDENCE = {"seed": 0.9, "lived": 0.6, "read": 0.6}
LAYER_OF_SOURCE = {"lived": "experience", "read": "knowledge"}


def render(condition: str, action: str, reason: str | None) -> str:
    """The unit as the prompt carries it: ``when C, do A, because R``. The evidence E stays
    in its own column (and in ``explain``): it is provenance for a reviewer, and every token
    of it in the prompt would be paid on each injection without changing the decision."""
    text = f"when {condition}, {action}"
    if reason:
        text += f", because {reason}"
    return text


def private_to(agent: str | None, seed: bool) -> str | None:
    """The agent whose private memory a unit starts in, or None when it is shared from the
    start: a unit no agent proposed, or a curated seed. Knowledge an agent read (``source="read"``)
    starts in its memory like its experience: the citation is that agent's word too, and a shared
    start let one agent make any words every agent's by citing something (round twenty-six,
    docs/security.md). (The learner decides when a private unit becomes shared: ``lifecycle.sharing``.)"""
    return None if not agent or seed else agent


def initial_confidence(record: dict) -> float:
    if record["confidence"] is not None:
        return record["confidence"]
    return DEFAULT_CONFIDENCE["seed" if record["seed"] else record["source"]]


def project(record_type: str, record: dict, position) -> list[dict]:
    env = record["envelope"]
    row = {
        "tenant": env["tenant"],
        "fragment_id": record["fragment_id"],
        "ts": env["ts_us"],
        "agent": env["agent"],
        "condition": record["condition"],
        "action": record["action"],
        "reason": record["reason"],
        "evidence": record["evidence"],
        "text": render(record["condition"], record["action"], record["reason"]),
        "scope": record["scope"],
        "source": record["source"],
        "layer": LAYER_OF_SOURCE[record["source"]],
        "citation": record["citation"],
        "confidence": initial_confidence(record),
        "seed": record["seed"],
        "status": "candidate",
        "event_ids": record["event_ids"],
        "entities": record["entities"],
    }
    return [stamp(row, position)]
