"""An audit a person can read: the records behind an item as a timeline, one line per step.

``Brain.explain`` returns the records themselves (the evidence); ``timeline`` reads them as an
auditor would: when (UTC), who (the agent and task, or the job that decided), what happened,
the rule and thresholds behind each decision, and the counters so far — "verified after
outcome oc_… (applied, success; 2 of 2)". It is pure (the chain in, lines out), so the CLI
prints it and the HTTP explain answer carries it beside the raw chain, from the same code.

A unit that recall considered many times without injecting it would bury its decisions under
one line per recall: a run of such recalls folds into one line that counts them and says what
the gate decided. Nothing else folds; ``--json`` (the chain) always has every record.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hindbrain.recall.quoting import prompt_text, words
from hindbrain.schemas.decision_kinds import DecisionKind

# The thresholds a decision of this kind turned on (the lifecycle passes all of them to every
# decision; a line shows the ones that decided). Kinds not named here show every parameter.
RELEVANT_THRESHOLDS = {
    DecisionKind.UNIT_ACCEPTED: ("hold_below",), DecisionKind.UNIT_HELD: ("hold_below",),
    DecisionKind.UNIT_REJECTED: ("checks",), DecisionKind.UNIT_ABSORBED: ("hold_below",),
    DecisionKind.UNIT_RELEASED: ("hold_below",), DecisionKind.UNIT_ASSIMILATED: ("share",),
    DecisionKind.UNIT_VERIFIED: ("stable_after",),
    DecisionKind.UNIT_EVIDENCE: ("stable_after", "review_after", "invalid_after"),
    DecisionKind.UNIT_STABLE: ("stable_after",), DecisionKind.UNIT_REVIEWING: ("review_after", "invalid_after"),
    DecisionKind.UNIT_DISPROVEN: ("invalid_after",), DecisionKind.UNIT_SHARED: ("share",),
    DecisionKind.UNIT_SKILL: ("skill",), DecisionKind.TRAIT_PROPOSED: ("trait_domains",),
    DecisionKind.TRAIT_APPROVED: (), DecisionKind.TRAIT_DECLINED: (), DecisionKind.UNIT_INVALIDATED: (),
}
TEXT_CHARS = 80  # a quoted text beyond this is cut with "…": the raw records keep it whole


@dataclass
class _Counters:
    """What the outcomes so far say of the subject: applications and successes."""

    applied: int = 0
    succeeded: int = 0
    verdicts: dict[str, str] = field(default_factory=dict)  # outcome id → "applied, success; 2 of 2"


def timeline(item_id: str, chain: list[dict]) -> list[str]:
    """One line per step of ``chain`` (``Brain.explain(item_id)``'s entries, oldest first):
    ``"<UTC time>  <who>  <what>"``. A run of recalls that only considered ``item_id`` (it was
    a candidate, not injected) is one line. An entry carrying ``"quarantine"`` says why on its line."""
    recalls = {e["record"]["recall_id"]: e["record"] for e in chain if e["record_type"] == "recall"}
    injected_in = {e["record"]["recall_id"] for e in chain
                   if e["record_type"] == "injection" and any(i["item_id"] == item_id for i in e["record"]["items"])}
    counters, lines, considered = _Counters(), [], []
    for entry in chain:
        record, rt = entry["record"], entry["record_type"]
        if rt == "recall" and "recalled" in entry["relations"]:
            if record["recall_id"] not in injected_in:  # its injection line tells the recall that injected it
                considered.append(record)
            continue
        if considered:
            lines.append(_considered(item_id, considered))
            considered = []
        what = _what(item_id, entry, counters, recalls)
        if entry.get("quarantine"):
            what += f" — quarantined: {entry['quarantine']}"
        lines.append(_line(record["envelope"]["ts_us"], _who(rt, record), what))
    if considered:
        lines.append(_considered(item_id, considered))
    return lines


def _what(item_id: str, entry: dict, counters: _Counters, recalls: dict[str, dict]) -> str:
    record, rt, relations = entry["record"], entry["record_type"], entry["relations"]
    if rt == "perception":
        return _perceived(record, "supports" in relations and "perceived" not in relations)
    if rt == "cognition":
        return _proposed(record, item_id)
    if rt == "injection":
        return _injected(record, item_id, recalls.get(record["recall_id"]))
    if rt == "outcome":
        return _outcome(record, item_id, counters)
    if rt == "decision":
        return _decided(record, item_id, counters)
    if rt == "recall":
        return f"recall {record['recall_id']} ({_asked(record)}): {len(record['candidates'])} candidates, " \
               f"budget {record['budget_tokens']} tokens"
    return f"{rt} {record['envelope']['record_id']}"


def _perceived(record: dict, evidence: bool) -> str:
    said = [f"{k} {_quote(record[k])}" for k in ("system", "identity", "action", "expected") if record.get(k)]
    if record.get("actual"):
        said.append(f"got {_quote(record['actual'])}")
    if record.get("success") is not None:
        said.append("succeeded" if record["success"] else "failed")
    role = " (evidence of the unit)" if evidence else ""
    head = f"perceived {record['kind']} {record['envelope']['record_id']}{role}"
    text = f": {_quote(record['text'])}" if record.get("text") else ""
    return head + text + (f" — {', '.join(said)}" if said else "")


def _proposed(record: dict, item_id: str) -> str:
    rule = f"when {_quote(record['condition'])}, do {_quote(record['action'])}"
    because = f", because {_quote(record['reason'])}" if record.get("reason") else ""
    origin = ", ".join([f"source {record['source']}",
                        *([f"confidence {record['confidence']:.2f}"] if record.get("confidence") is not None else []),
                        *(["a seed"] if record.get("seed") else [])])
    if record["fragment_id"] == item_id:
        return f"proposed {record['fragment_id']} by {record['envelope']['producer']}: {rule}{because} ({origin})"
    return f"unit {record['fragment_id']} rests on it: {rule} ({origin})"


def _injected(record: dict, item_id: str, recall: dict | None) -> str:
    mine = next((i for i in record["items"] if i["item_id"] == item_id), None)
    asked = f"{_asked(recall)}, " if recall else ""
    if mine is None:  # the subject is the recall: what it injected
        items = ", ".join(i["item_id"] for i in record["items"]) or "nothing"
        return f"injected {_count(len(record['items']), 'item')} into recall {record['recall_id']}: {items}"
    arm = f", A/B arm {mine['arm']}" if mine.get("arm") else ""
    return (f"injected at rank {mine['rank'] + 1} of {len(record['items'])} ({asked}recall {record['recall_id']}, "
            f"score {mine['score']:.2f}, {mine['tokens']} tokens{arm})")


def _outcome(record: dict, item_id: str, counters: _Counters) -> str:
    verdict = "success" if record["success"] else "failure"
    oid = record["envelope"]["record_id"]
    if item_id not in record["applied"]:
        applied = ", ".join(record["applied"]) or "nothing"
        return f"outcome {oid}: {verdict}; applied {applied}"
    counters.applied += 1
    counters.succeeded += record["success"]
    counters.verdicts[oid] = f"applied, {verdict}; {counters.succeeded} of {counters.applied}"
    return (f"outcome {oid}: applied it, {verdict} ({counters.succeeded} of {counters.applied} applications "
            f"succeeded so far)")


def _decided(record: dict, item_id: str, counters: _Counters) -> str:
    kind = record["kind"]
    verb = kind.removeprefix("unit_").replace("_", " ")
    if item_id not in record["subject_ids"]:
        verb += f" {', '.join(record['subject_ids'])}"
    after = next((f" after outcome {e} ({counters.verdicts[e]})" for e in record["evidence_ids"]
                  if e in counters.verdicts), "")
    payload = _loads(record.get("payload_json"))
    unit = payload.get("unit") if isinstance(payload.get("unit"), dict) else None
    state = f"; now {unit['status']} at confidence {unit['confidence']:.2f}" if unit and unit.get("status") else ""
    reason = record["reason"].removeprefix(f"{verb}: ")  # "assimilated: assimilated: …" says it once
    return f"{verb}{after}: {reason}{state} [{_rule(record)}]"


def _rule(record: dict) -> str:
    """The rule that decided and the thresholds it compared with, e.g. ``rule lifecycle/1:
    stable_after 2`` (the job when no rule is named); an extracted unit also names its
    extraction rule and signal."""
    params = _loads(record["decided_by"].get("parameters_json"))
    inputs = _loads(record.get("inputs_json"))
    rule = params.pop("rule", None)
    wanted = RELEVANT_THRESHOLDS.get(record["kind"])
    shown = {k: v for k, v in params.items() if wanted is None or k in wanted}
    text = f"rule {rule}" if rule else record["decided_by"]["job"]
    if shown:
        text += ": " + ", ".join(f"{k} {_compact(v)}" for k, v in shown.items())
    if inputs.get("rule"):  # the unit's extraction: which rule compressed the trajectory, on which signal
        text += f"; extracted by {inputs['rule']}" + (f", signal {inputs['signal']}" if inputs.get("signal") else "")
    return text


def _considered(item_id: str, recalls: list[dict]) -> str:
    """One line for a run of recalls in which ``item_id`` was a candidate, not injected."""
    stages: Counter[str] = Counter()
    example: dict[str, str] = {}
    for r in recalls:
        gate = _gate_of(r, item_id)
        stages[gate.get("stage", "unknown")] += 1
        example.setdefault(gate.get("stage", "unknown"), gate.get("reason", ""))
    first = recalls[0]
    agents = sorted({r["envelope"]["agent"] for r in recalls if r["envelope"]["agent"]})
    if len(recalls) == 1:
        where = f"a recall ({_asked(first)}, recall {first['recall_id']})"
    else:
        tasks = list(dict.fromkeys(r["envelope"]["task"] or "-" for r in recalls))
        where = f"{len(recalls)} recalls (task {tasks[0]})" if len(tasks) == 1 else \
            f"{len(recalls)} recalls (tasks {tasks[0]} … {tasks[-1]})"
    top = stages.most_common(1)[0][0]
    gate = ", ".join(f"{stage} {n}" for stage, n in stages.most_common())
    why = f"; e.g. {top}: {_quote(example[top])}" if example[top] else ""
    who = agents[0] if len(agents) == 1 else f"{len(agents)} agents" if agents else "recall"
    by = f" by {', '.join(agents)}" if len(agents) > 1 else ""
    return _line(first["envelope"]["ts_us"], who, f"considered in {where}{by}, not injected (gate: {gate}){why}")


def _gate_of(recall: dict, item_id: str) -> dict:
    """The gate's verdict on ``item_id`` in ``recall``: ``{"stage", "reason"}`` as the record
    keeps it (schema v2), or as a record before v2 kept it in the candidate's ``why_json``."""
    for c in recall["candidates"]:
        if c["item_id"] == item_id:
            if c.get("stage"):
                return {"stage": c["stage"], "reason": c.get("reason") or ""}
            return _loads(c.get("why_json")).get("gate") or {}
    return {}


def _asked(recall: dict) -> str:
    """What the recall asked: ``"task_start: 'query'"`` (the trigger when it named one)."""
    situation = recall.get("situation") or {}
    asked = _quote(recall["query"]) if recall.get("query") else \
        ", ".join(f"{k} {_quote(v)}" for k, v in situation.items()) or "no query"
    return f"{recall['trigger']}: {asked}" if recall.get("trigger") else asked


def _who(record_type: str, record: dict) -> str:
    if record_type == "decision":
        return record["decided_by"]["job"]
    env = record["envelope"]
    who = " / ".join(x for x in (env.get("agent"), env.get("task")) if x)
    return who or env["producer"]


def _line(ts_us: int, who: str, what: str) -> str:
    """One line of the timeline. Who and what pass the one escape (``quoting.prompt_text``): they hold callers'
    words (texts, names, reasons, a decision's inputs), and a terminal acts on the controls among them — an
    ESC sequence in a message erased the line above it or its own "— quarantined" note when ``hindbrain
    explain`` printed it (round twenty-seven)."""
    when = datetime.fromtimestamp(ts_us / 1e6, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    return f"{when}  {prompt_text(who):<22}  {prompt_text(what)}"


def _quote(text) -> str:
    """A caller's text between ‘ ’ (``quoting.words``: no quote mark inside closes them, so the rest of the line
    stays the timeline's own words), cut at ``TEXT_CHARS``."""
    text = prompt_text(text)
    return words(text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS - 1] + "…")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _compact(value) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _loads(text: str | None) -> dict:
    try:
        value = json.loads(text or "{}")
    except ValueError:  # an old or foreign record: the line still stands, without the details
        return {}
    return value if isinstance(value, dict) else {}
