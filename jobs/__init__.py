"""Hindsight: the batch jobs that learn from the views and append decisions to the log.

``run_hindsight`` is the one entry point (the CLI, ``Brain.hindsight`` and a scheduled
deployment call it): the trigger policy decides whether the jobs are due (``trigger``),
the jobs read the views and return decisions, and every decision — each belief induced or
updated, and the run itself (``hindsight_run``, with its phases) — is appended to the log.
Jobs never write a view: the projectors do, so replaying the log rebuilds what they decided.

Installed jobs: ``induction`` (K-Means beliefs, ``jobs.induction``) and the A/B windows of
conflicting beliefs (``jobs.windows``, ``jobs.ab``). Forgetting and consolidation are not
built yet (issue 6 is open).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

from hindbrain.jobs import induction, windows
from hindbrain.jobs.ab import DEFAULT_RULE, WindowRule
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
                  policy: TriggerPolicy = DEFAULT_POLICY, rule: WindowRule = DEFAULT_RULE) -> HindsightReport:
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
    t0 = time.perf_counter()
    run_id = derived_id("hs", str(now_us))
    known = read_windows(warehouse)
    records, known = _settle_windows(warehouse, known, run_id, now_us, rule)
    for a, b in windows.conflicts(beliefs, known):
        opened = windows.Window(windows.window_id(a.tenant, a.belief_id, b.belief_id, now_us), a.tenant,
                                a.belief_id, b.belief_id, now_us)
        known.append(opened)
        records.append(_window_decision(windows.OPENED, opened, run_id, now_us, rule,
                                        f"{b.belief_id} contradicts {a.belief_id} (the same condition, another "
                                        f"action): both reviewing; {rule.describe()}", {}))
    beliefs = windows.with_window_states(beliefs, known)
    phases["windows"] = time.perf_counter() - t0
    current = {row[0]: row[1:] for row in warehouse.query(
        "SELECT belief_id, confidence, status, support FROM beliefs FINAL")}
    records += [_belief_decision(b, run_id, now_us) for b in beliefs if _changed(b, current.get(b.belief_id))]
    tenants = sorted({b.tenant for b in beliefs}) or ["*"]
    summary = {"why": why, "tasks": len(rows), "new_events": new_events, "beliefs": len(beliefs),
               "recorded": len(records), "k": {b.tenant: b.k for b in beliefs}, "phases_s": phases}
    records += [decision(RUN_KIND, tenant, [run_id], [], f"hindsight ran: {why}", summary, now_us, "hindsight",
                         {"min_new_events": policy.min_new_events, "max_days": policy.max_days}, run_id,
                         producer=PRODUCER) for tenant in tenants]
    t0 = time.perf_counter()
    submit(records)
    phases["append"] = time.perf_counter() - t0
    return HindsightReport(ran=["induction", "ab_windows"], decisions=[r for _, r in records], phases_s=phases,
                           why=why)


def read_windows(warehouse) -> list[windows.Window]:
    """Every A/B window in the log, with its verdict once settled."""
    found: dict[str, windows.Window] = {}
    for _kind, payload_json in warehouse.query(
            "SELECT kind, payload_json FROM decisions FINAL WHERE kind IN {k:Array(String)} ORDER BY ts, _offset",
            {"k": [windows.OPENED, windows.SETTLED]}):
        p = json.loads(payload_json)
        w = windows.Window(p["window_id"], p["tenant"], p["a"], p["b"], p["opened_us"], p.get("verdict"))
        found[w.window_id] = w
    return list(found.values())


ARM_COUNTS_SQL = """
SELECT i.arm, countIf(o.success) AS successes, count() AS total
FROM (SELECT recall_id, item, arm FROM injections FINAL ARRAY JOIN item_ids AS item, arms AS arm
      WHERE tenant = {t:String} AND item IN ({a:String}, {b:String}) AND arm != ''
        AND toUnixTimestamp64Micro(ts) >= {opened:Int64}) AS i
INNER JOIN (SELECT recall_id, argMax(success, ts) AS success FROM outcomes FINAL
            WHERE recall_id IS NOT NULL GROUP BY recall_id) AS o ON o.recall_id = i.recall_id
GROUP BY i.arm
"""


def _settle_windows(warehouse, known: list[windows.Window], run_id: str, now_us: int, rule: WindowRule):
    records, out = [], []
    for w in known:
        if w.verdict is not None:
            out.append(w)
            continue
        counts = {arm: (s, n) for arm, s, n in warehouse.query(
            ARM_COUNTS_SQL, {"t": w.tenant, "a": w.a, "b": w.b, "opened": w.opened_us})}
        arms = windows.Arms(*counts.get("A", (0, 0)), *counts.get("B", (0, 0)))
        verdict = windows.verdict_of(w, arms, now_us, rule)
        if verdict.status == "open":
            out.append(w)
            continue
        settled = replace(w, verdict=verdict.status)
        out.append(settled)
        records.append(_window_decision(windows.SETTLED, settled, run_id, now_us, rule, verdict.reason,
                                        {"arms": asdict(arms), "p_b_better": round(verdict.p_b_better, 6)}))
    return records, out


def _window_decision(kind: str, w: windows.Window, run_id: str, now_us: int, rule: WindowRule, reason: str,
                     extra: dict) -> tuple[str, dict]:
    payload = {**asdict(w), **extra}
    return decision(kind, w.tenant, [w.window_id, w.a, w.b], [w.a, w.b], reason, payload, now_us, "hindsight.ab",
                    asdict(rule), run_id, producer=PRODUCER)


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
