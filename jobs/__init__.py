"""Hindsight: the batch jobs that learn from the views and append decisions to the log.

``run_hindsight`` is the one entry point (the CLI, ``Brain.hindsight`` and a scheduled
deployment call it): the trigger policy decides whether the jobs are due (``trigger``),
the jobs read the views and return decisions, and every decision — each belief induced or
updated, and the run itself (``hindsight_run``, with its phases) — is appended to the log.
Jobs never write a view: the projectors do, so replaying the log rebuilds what they decided.

Installed jobs: ``induction`` (K-Means beliefs, ``jobs.induction``), the A/B windows of
conflicting beliefs (``jobs.windows``, ``jobs.ab``), ``summaries`` (episodic → semantic:
recurring anomalies, ``jobs.summaries``), ``consolidation`` (near-duplicate rules
into meta-rules, beliefs promoted to rules, ``jobs.consolidation``), ``forgetting``
(``jobs.forgetting``) and ``archive`` (capacity and cold storage, ``jobs.archive``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

from hindbrain.jobs import archive, consolidation, forgetting, induction, summaries, windows
from hindbrain.jobs.ab import DEFAULT_RULE, WindowRule
from hindbrain.jobs.trigger import TriggerPolicy, due
from hindbrain.jobs.units import read_units
from hindbrain.learning.records import decision, derived_id
from hindbrain.projections.beliefs import BELIEF_INDUCED
from hindbrain.schemas.decision_kinds import DecisionKind

PRODUCER = "hindsight/hindbrain"
RUN_KIND = DecisionKind.HINDSIGHT_RUN
CHANGED_BY = 0.01  # a belief is re-recorded when its confidence moved at least this much


@dataclass(frozen=True)
class HindsightReport:
    """What a hindsight run decided. ``decisions`` are the decision records it appended."""

    ran: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    decisions: list[dict] = field(default_factory=list)
    proposals: list[dict] = field(default_factory=list)  # cognition records (meta-rules) the jobs proposed
    phases_s: dict[str, float] = field(default_factory=dict)
    why: str = ""


DEFAULT_POLICY = TriggerPolicy()


WALL_EVERY_DAYS = 1.0  # the wall clock's period (forgetting scan)


class _Phases(dict):
    """Phase name → seconds, as ``HindsightReport.phases_s`` keeps them; each phase is also
    told to ``on_phase(name, seconds)`` as it ends (a long command's progress)."""

    def __init__(self, on_phase: Callable[[str, float], None] | None):
        super().__init__()
        self.on_phase = on_phase

    def __setitem__(self, name: str, seconds: float) -> None:
        super().__setitem__(name, seconds)
        if self.on_phase is not None:
            self.on_phase(name, seconds)


def run_hindsight(warehouse, submit: Callable, now_us: int, force: bool = False,
                  policy: TriggerPolicy = DEFAULT_POLICY, rule: WindowRule = DEFAULT_RULE,
                  on_phase: Callable[[str, float], None] | None = None) -> HindsightReport:
    """The one scheduler entry point: run the due clocks' jobs (all of them with ``force``);
    append and return their decisions.

    * write clock (``policy``: > 500 new events or > 3 days): belief induction, the A/B
      windows of conflicting beliefs, summaries of recurring anomalies, and consolidation;
    * wall clock (every ``WALL_EVERY_DAYS``): forgetting — accessibility decay of unused
      units, conflicts pending between units — and the archive (capacity, cold storage);
    * the use clock is the learner itself: every outcome credits or falsifies what was applied.

    ``on_phase(name, seconds)`` is told each phase as it ends (units, read, induce, windows,
    summaries, consolidation, forgetting, archive, append).
    """
    last_write, last_wall, new_events = _last_runs(warehouse)
    write, why = (True, "forced") if force else due(new_events, last_write, now_us, policy)
    wall, wall_why = (True, "forced") if force else _wall_due(last_wall, now_us)
    skipped = {**({} if write else {"induction": why, "ab_windows": why, "summaries": why, "consolidation": why}),
               **({} if wall else {"forgetting": wall_why, "archive": wall_why})}
    if not (write or wall):
        return HindsightReport(skipped=skipped, why=why)
    phases = _Phases(on_phase)
    run_id = derived_id("hs", str(now_us))
    records, summary, ran = [], {"why": why, "new_events": new_events, "write": write, "wall": wall}, []
    t0 = time.perf_counter()
    units = read_units(warehouse)  # both clocks' jobs read the units as they were before this run
    phases["units"] = time.perf_counter() - t0
    if write:
        records += _write_clock(warehouse, units, now_us, run_id, rule, phases, summary)
        ran += ["induction", "ab_windows", "summaries", "consolidation"]
    if wall:
        t0 = time.perf_counter()
        records += forgetting.decay(units, now_us, run_id)
        records += forgetting.conflicts(units, forgetting.known_pairs(warehouse), now_us, run_id)
        phases["forgetting"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        records += archive.evictions(units, now_us, run_id)
        records += archive.cold(warehouse, now_us, run_id)
        phases["archive"] = time.perf_counter() - t0
        ran += ["forgetting", "archive"]
    summary.update(recorded=len(records), phases_s=phases)
    tenants = sorted({r["envelope"]["tenant"] for _, r in records}) or ["*"]
    records += [decision(RUN_KIND, tenant, [run_id], [], f"hindsight ran ({', '.join(ran)}): {why}", summary,
                         now_us, "hindsight", {"min_new_events": policy.min_new_events, "max_days": policy.max_days,
                                               "wall_every_days": WALL_EVERY_DAYS}, run_id, producer=PRODUCER)
                for tenant in tenants]
    t0 = time.perf_counter()
    submit(records)
    phases["append"] = time.perf_counter() - t0
    return HindsightReport(ran=ran, skipped=skipped, decisions=[r for rt, r in records if rt == "decision"],
                           proposals=[r for rt, r in records if rt == "cognition"], phases_s=dict(phases), why=why)


def _write_clock(warehouse, units: list, now_us: int, run_id: str, rule: WindowRule, phases: dict,
                 summary: dict) -> list:
    t0 = time.perf_counter()
    rows = induction.task_rows(warehouse)
    phases["read"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    beliefs = induction.induce(rows, now_us)
    phases["induce"] = time.perf_counter() - t0
    t0 = time.perf_counter()
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
    t0 = time.perf_counter()
    found = summaries.read_summaries(warehouse)  # facts, not prescriptions: no windows, no promotion
    records += [_summary_decision(x, run_id, now_us) for x in found if _changed(x, current.get(x.belief_id))]
    phases["summaries"] = time.perf_counter() - t0
    summary["summaries"] = len(found)
    t0 = time.perf_counter()
    records += consolidation.promotions(beliefs, {u.fragment_id for u in units}, now_us, run_id)
    merges = consolidation.groups(units)
    records += [r for group in merges for r in consolidation.merge(group, now_us, run_id)]
    phases["consolidation"] = time.perf_counter() - t0
    summary["merged_groups"] = len(merges)
    summary.update(tasks=len(rows), beliefs=len(beliefs), k={b.tenant: b.k for b in beliefs})
    return records


def _wall_due(last_wall_us: int | None, now_us: int) -> tuple[bool, str]:
    if last_wall_us is None:
        return True, "the wall clock never ran"
    days = (now_us - last_wall_us) / 86_400_000_000
    if days >= WALL_EVERY_DAYS:
        return True, f"{days:.1f} days since the last wall-clock run ≥ {WALL_EVERY_DAYS:g}"
    return False, f"{days:.1f} days since the last wall-clock run < {WALL_EVERY_DAYS:g}"


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


# Each outcome of a window's recalls, in time order, beside the agent the recall was made for (its injection's):
# ``windows.first_reports`` keeps a recall's first outcome that may speak for that agent (``lifecycle.speaks_for``,
# the learner's credit rule), so a sender who saw a leaked recall id and reported first does not decide it (round
# thirty-three, docs/security.md "A recall's outcome is its agent's"). The choice is made in Python, with the
# learner's name fold: ClickHouse's ``caseFoldUTF8`` folds 55 code points otherwise (round thirty-two). Both sides
# are the tenant's: an outcome of another tenant naming this tenant's recall id (leaked in a log) decided the window
# (round thirty-two). The first, as the learner's credit (the first outcome naming a recall spends it): the last let
# any sender of the tenant that saw the recall ids replace the honest reports after them (round thirty-three).
ARM_REPORTS_SQL = """
SELECT i.recall_id, i.arm, ifNull(i.agent, ''), o.success, ifNull(o.agent, ''), o.producer
FROM (SELECT recall_id, item, arm, agent FROM injections FINAL ARRAY JOIN item_ids AS item, arms AS arm
      WHERE tenant = {t:String} AND item IN ({a:String}, {b:String}) AND arm != ''
        AND toUnixTimestamp64Micro(ts) >= {opened:Int64}) AS i
INNER JOIN (SELECT recall_id, outcome_id, success, agent, producer, ts FROM outcomes FINAL
            WHERE tenant = {t:String} AND recall_id IS NOT NULL) AS o ON o.recall_id = i.recall_id
ORDER BY i.recall_id, i.arm, o.ts, o.outcome_id
"""


# who sent a tenant's records (``windows.fleet_of``): the agents they name and the producers (keys) that sent them;
# membership only, so no FINAL and no count
TENANT_AGENTS_SQL = """
SELECT DISTINCT agent, producer FROM events WHERE tenant = {t:String}
UNION DISTINCT
SELECT DISTINCT agent, producer FROM outcomes WHERE tenant = {t:String}
"""


def _settle_windows(warehouse, known: list[windows.Window], run_id: str, now_us: int, rule: WindowRule):
    records, out, fleets = [], [], {}
    for w in known:
        if w.verdict is not None:
            out.append(w)
            continue
        if w.tenant not in fleets:
            fleets[w.tenant] = windows.fleet_of(warehouse.query(TENANT_AGENTS_SQL, {"t": w.tenant}))
        reports, foreign = windows.first_reports(warehouse.query(
            ARM_REPORTS_SQL, {"t": w.tenant, "a": w.a, "b": w.b, "opened": w.opened_us}))
        arms = windows.arms_of(reports, fleets[w.tenant], foreign)
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


def _last_runs(warehouse) -> tuple[int | None, int | None, int]:
    """(last write-clock run, last wall-clock run, events since the last write-clock run)."""
    [(writes, last_write, walls, last_wall)] = warehouse.query(
        "SELECT countIf(JSONExtractBool(payload_json, 'write')), "
        "maxIf(toUnixTimestamp64Micro(ts), JSONExtractBool(payload_json, 'write')), "
        "countIf(JSONExtractBool(payload_json, 'wall')), "
        "maxIf(toUnixTimestamp64Micro(ts), JSONExtractBool(payload_json, 'wall')) "
        "FROM decisions FINAL WHERE kind = {k:String}", {"k": RUN_KIND})
    last_write, last_wall = (last_write if writes else None), (last_wall if walls else None)
    if last_write is None:
        return None, last_wall, warehouse.query("SELECT count() FROM events")[0][0]
    new = warehouse.query("SELECT count() FROM events WHERE toUnixTimestamp64Micro(ts) > {t:Int64}",
                          {"t": last_write})
    return last_write, last_wall, new[0][0]


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
              f" ({'≥' if b.confidence >= induction.ACTIVATION else '<'} {induction.ACTIVATION}: {b.status})"
              + (f"; {b.held}" if b.held else ""))
    return decision(BELIEF_INDUCED, b.tenant, [b.belief_id], b.event_ids, reason, payload, now_us, induction.JOB,
                    b.parameters, run_id, {"rows": "tasks of the events view"}, producer=PRODUCER)


def _summary_decision(x: summaries.Summary, run_id: str, now_us: int) -> tuple[str, dict]:
    payload = {"belief_id": x.belief_id, "text": x.text, "confidence": x.confidence, "support": x.support,
               "status": x.status, "scope": x.scope, "key_event_ids": x.key_event_ids, "tasks": x.tasks,
               "kind": "summary", "last_verified_us": x.newest_us}
    reason = f"recurring anomaly summarised: {x.text}" + (f" ({x.held})" if x.held else "")
    return decision(BELIEF_INDUCED, x.tenant, [x.belief_id], x.event_ids, reason,
                    payload, now_us, summaries.JOB, x.parameters, run_id, {"rows": "anomalies of the events view"},
                    producer=PRODUCER)
