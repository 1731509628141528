"""Hindsight: the batch jobs that learn from the views and append decisions to the log.

``run_hindsight`` is the one entry point (the CLI, ``Brain.hindsight`` and a scheduled
deployment call it): the trigger policy decides whether the jobs are due (``trigger``),
the jobs read the views and return decisions, and every decision — each belief induced or
updated, and the run itself (``hindsight_run``, with its phases) — is appended to the log.
Jobs never write a view: the projectors do, so replaying the log rebuilds what they decided.

Installed jobs: ``induction`` (K-Means beliefs, ``jobs.induction``). A/B windows, forgetting
and consolidation are not built yet (issue 6 is open).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hindbrain.jobs import induction
from hindbrain.jobs.trigger import TriggerPolicy, due
from hindbrain.learning.records import decision, derived_id
from hindbrain.projections.beliefs import BELIEF_INDUCED

PRODUCER = "hindsight/hindbrain"
RUN_KIND = "hindsight_run"
CHANGED_BY = 0.01  # a belief is re-recorded when its confidence moved at least this much


@dataclass(frozen=True)
class HindsightReport:
    """What a hindsight run decided. ``decisions`` are the decision records it appended."""

    ran: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    decisions: list[dict] = field(default_factory=list)
    phases_s: dict[str, float] = field(default_factory=dict)
    why: str = ""


DEFAULT_POLICY = TriggerPolicy()


def run_hindsight(warehouse, submit: Callable, now_us: int, force: bool = False,
                  policy: TriggerPolicy = DEFAULT_POLICY) -> HindsightReport:
    """Run the due jobs (all of them with ``force``); append and return their decisions."""
    last_run, new_events = _since_last_run(warehouse)
    run, why = (True, "forced") if force else due(new_events, last_run, now_us, policy)
    if not run:
        return HindsightReport(skipped={"induction": why}, why=why)
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    rows = induction.task_rows(warehouse)
    phases["read"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    beliefs = induction.induce(rows, now_us)
    phases["induce"] = time.perf_counter() - t0
    current = {row[0]: row[1:] for row in warehouse.query(
        "SELECT belief_id, confidence, status, support FROM beliefs FINAL")}
    run_id = derived_id("hs", str(now_us))
    records = [_belief_decision(b, run_id, now_us) for b in beliefs if _changed(b, current.get(b.belief_id))]
    tenants = sorted({b.tenant for b in beliefs}) or ["*"]
    summary = {"why": why, "tasks": len(rows), "new_events": new_events, "beliefs": len(beliefs),
               "recorded": len(records), "k": {b.tenant: b.k for b in beliefs}, "phases_s": phases}
    records += [decision(RUN_KIND, tenant, [run_id], [], f"hindsight ran: {why}", summary, now_us, "hindsight",
                         {"min_new_events": policy.min_new_events, "max_days": policy.max_days}, run_id,
                         producer=PRODUCER) for tenant in tenants]
    t0 = time.perf_counter()
    submit(records)
    phases["append"] = time.perf_counter() - t0
    return HindsightReport(ran=["induction"], decisions=[r for _, r in records], phases_s=phases, why=why)


def _since_last_run(warehouse) -> tuple[int | None, int]:
    [(runs, last)] = warehouse.query(
        "SELECT count(), toUnixTimestamp64Micro(max(ts)) FROM decisions FINAL WHERE kind = {k:String}",
        {"k": RUN_KIND})
    if not runs:
        return None, warehouse.query("SELECT count() FROM events")[0][0]
    new = warehouse.query("SELECT count() FROM events WHERE toUnixTimestamp64Micro(ts) > {t:Int64}", {"t": last})
    return last, new[0][0]


def _changed(belief: induction.InducedBelief, current: tuple | None) -> bool:
    if current is None:
        return True
    confidence, status, support = current
    return abs(confidence - belief.confidence) >= CHANGED_BY or status != belief.status or support != belief.support


def _belief_decision(b: induction.InducedBelief, run_id: str, now_us: int) -> tuple[str, dict]:
    payload = {"belief_id": b.belief_id, "text": b.text, "confidence": b.confidence, "support": b.support,
               "status": b.status, "scope": b.scope, "key_event_ids": b.key_event_ids, "tasks": b.tasks,
               "successes": b.successes, "judged": b.judged, "condition": b.condition, "actions": list(b.actions),
               "cluster": b.cluster, "k": b.k, "last_verified_us": b.newest_us}
    reason = (f"cluster {b.cluster} of {b.k}: {b.successes}/{b.judged} tasks succeeded → confidence {b.confidence:.2f}"
              f" ({'≥' if b.status == 'active' else '<'} {induction.ACTIVATION}: {b.status})")
    return decision(BELIEF_INDUCED, b.tenant, [b.belief_id], b.event_ids, reason, payload, now_us, induction.JOB,
                    b.parameters, run_id, {"rows": "tasks of the events view"}, producer=PRODUCER)


def payload_of(record: dict) -> dict:
    return json.loads(record["payload_json"])
