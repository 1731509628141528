"""Episodic → semantic summaries (design.md §F4, design.md §seed-001-4.2: "every night, the new episodes
are summarised into semantic memory").

An anomaly that recurs — the same system, action and actual result in at least
``MIN_TASKS`` tasks of a tenant — becomes a summary belief: "in IAM, submit change gave
'no response' in 9 of 12 tasks (2026-11-02 … 2026-12-01)". It is a counted fact, not a
prescription: its confidence is the Wilson lower bound of the share of the system's tasks
that hit it, it is active from ``MIN_TASKS`` tasks whatever that share, and it is briefed
in the scene layer of that system (``scope.scene`` = the system), so an agent starting a
task there is told what tends to go wrong before it does. The prescriptions come from the
learner's extraction and from belief induction; a summary names the events it rests on.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hindbrain.jobs.confidence import wilson_lower

JOB, VERSION = "hindsight.summaries", "1"
MIN_TASKS = 3
EVIDENCE_CAP = 1_000

SUMMARY_SQL = """
SELECT a.tenant, a.system, a.action, a.actual, a.tasks, a.times, a.first, a.last, a.event_ids, s.tasks AS system_tasks
FROM (
    SELECT tenant, assumeNotNull(system) AS system, ifNull(action, '') AS action, assumeNotNull(actual) AS actual,
           uniqExact(ifNull(task, event_id)) AS tasks, count() AS times,
           toUnixTimestamp64Micro(min(ts)) AS first, toUnixTimestamp64Micro(max(ts)) AS last,
           groupArray(event_id) AS event_ids
    FROM events FINAL
    WHERE kind = 'anomaly' AND system IS NOT NULL AND actual IS NOT NULL
    GROUP BY tenant, system, action, actual
    HAVING tasks >= {min_tasks:UInt32}
) AS a
INNER JOIN (
    SELECT tenant, assumeNotNull(system) AS system, uniqExact(ifNull(task, event_id)) AS tasks
    FROM events FINAL WHERE system IS NOT NULL GROUP BY tenant, system
) AS s USING (tenant, system)
"""


@dataclass(frozen=True)
class Summary:
    belief_id: str
    tenant: str
    text: str
    confidence: float
    status: str
    support: int
    scope: dict
    event_ids: list[str]
    key_event_ids: list[str]
    newest_us: int
    tasks: int = 0
    parameters: dict = field(default_factory=lambda: {"min_tasks": MIN_TASKS})


def read_summaries(warehouse) -> list[Summary]:
    """The IO edge and the rule at once (the grouping is the SQL above)."""
    return [summarise(*row) for row in warehouse.query(SUMMARY_SQL, {"min_tasks": MIN_TASKS})]


def summarise(tenant: str, system: str, action: str, actual: str, tasks: int, times: int, first: int, last: int,
              event_ids: list[str], system_tasks: int) -> Summary:
    """Pure: the summary belief of one recurring anomaly."""
    span = f"{_day(first)} … {_day(last)}" if _day(first) != _day(last) else _day(first)
    what = f"{action} gave '{actual}'" if action else f"'{actual}' happened"
    text = f"in {system}, {what} in {tasks} of {system_tasks} tasks ({times} times, {span})"
    signature = f"summary|{tenant}|{system}|{action}|{actual}"
    ids = list(event_ids)
    return Summary(
        belief_id="bl_" + hashlib.blake2b(signature.encode(), digest_size=12).hexdigest(), tenant=tenant, text=text,
        confidence=round(wilson_lower(tasks, max(tasks, system_tasks)), 6), status="active", support=times,
        scope={"scene": system}, event_ids=ids[-EVIDENCE_CAP:], key_event_ids=ids[-3:], newest_us=last, tasks=tasks)


def _day(us: int) -> str:
    return datetime.fromtimestamp(us / 1e6, UTC).date().isoformat()
