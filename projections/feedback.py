"""``feedback``: per-item usage counters (design.md §D1), from recall, injection and outcome records.

The table holds one row per (item, signal, record): a fact such as "recall rc_1 recalled
fr_9". Counters are a plain aggregate over the deduplicated facts (the ``feedback`` view),
so a record delivered twice never double counts and arrival order does not matter.

Attribution: an outcome credits ``success`` or ``failure`` only to the items the agent
*applied*; items that were injected but not applied get nothing from it.
``credited`` / ``debited`` are the learner's verdict on an applied unit (design.md §issue-29: what its own
action did in the task, ``learning.attribution``), which the utility channel counts in place of
the reported outcome. ``contradiction`` is the learner's verdict too: a decision whose payload says
``"contradiction": true`` — an applied unit failing where another option worked, a user's
negative feedback on a task that applied it, an option the unit recommends failing where it
used to succeed — counts once against each unit it names.
"""

from __future__ import annotations

from hindbrain.projections.table import Table, stamp

SIGNALS = ("recalled", "injected", "applied", "success", "failure", "contradiction", "credited", "debited")

TABLE = Table(
    name="feedback_signals",
    columns=(
        ("tenant", "String"),
        ("item_id", "String"),
        ("signal", "LowCardinality(String)"),
        ("record_id", "String"),
        ("ts", "DateTime64(6, 'UTC')"),
    ),
    order_by=("tenant", "item_id", "signal", "record_id"),
)
RECORD_TYPES = ("recall", "injection", "outcome", "decision")
CONTRADICTION_MARK = '"contradiction": true'  # how ``OutcomeVerdicts._changes`` marks the payload (json.dumps)


SIGNALS_BEFORE_VERDICTS = SIGNALS[:6]  # the view before design.md §issue-29 (migration 4 adds the learner's verdicts)


def view_sql(database: str, signals: tuple[str, ...] = SIGNALS) -> str:
    counters = ",\n    ".join(f"countIf(signal = '{s}') AS {s}" for s in signals)
    return (
        f"CREATE VIEW IF NOT EXISTS `{database}`.`feedback` AS SELECT\n    tenant, item_id,\n    {counters},\n"
        f"    maxIf(ts, signal = 'success') AS last_verified\n"
        f"FROM `{database}`.`feedback_signals` FINAL GROUP BY tenant, item_id"
    )


def _signals(record_type: str, record: dict) -> list[tuple[str, str]]:
    if record_type == "recall":
        return [(c["item_id"], "recalled") for c in record["candidates"]]
    if record_type == "injection":
        return [(i["item_id"], "injected") for i in record["items"]]
    if record_type == "decision":
        return verdict_signals(record)
    verdict = "success" if record["success"] else "failure"
    return [(item, s) for item in dict.fromkeys(record["applied"]) for s in ("applied", verdict)]


def verdict_signals(decision: dict) -> list[tuple[str, str]]:
    """The learner's verdicts a decision carries: ``contradiction``, and ``credited`` / ``debited``
    (``"verdict"`` in the payload: what attribution judged the applied unit did in its task)."""
    payload = decision.get("payload_json") or ""
    if '"verdict": ' not in payload and CONTRADICTION_MARK not in payload:
        return []
    signals = ["contradiction"] if CONTRADICTION_MARK in payload else []
    signals += [VERDICT_SIGNAL[v] for v in VERDICT_SIGNAL if f'"verdict": "{v}"' in payload]
    return [(item, s) for item in decision["subject_ids"] for s in signals]


VERDICT_SIGNAL = {"worked": "credited", "failed": "debited"}


def project(record_type: str, record: dict, position) -> list[dict]:
    env = record["envelope"]
    return [
        stamp({"tenant": env["tenant"], "item_id": item, "signal": signal,
               "record_id": env["record_id"], "ts": env["ts_us"]}, position)
        for item, signal in _signals(record_type, record)
    ]
