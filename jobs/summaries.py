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

A summary quotes the anomaly's ``actual`` words, so whose words they are decides who hears them
(docs/security.md, round twenty-five): a fact briefed to the whole scene needs ``MIN_REPORTERS``
reporters (a user named in ``scope.user``, else the reporting agent), or every reporter the tenant
has when it has fewer — one agent working alone is still told. One reporter of several is not
corroboration: a user's summary is personal to that user (as her feedback rules are), an agent's
waits inactive for a second reporter. Events naming no one count as before.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

from hindbrain.jobs.confidence import wilson_lower
from hindbrain.learning.lifecycle import KEY_SENDER, PRINCIPAL_SENDER, senders
from hindbrain.recall.quoting import named, words

JOB, VERSION = "hindsight.summaries", "1"
MIN_TASKS = 3
MIN_REPORTERS = 2
EVIDENCE_CAP = 1_000

# Who reported an event: the user it names, else the agent that sent it ("user:…" / "agent:…"); the
# induction job counts its tasks' reporters the same way.
REPORTER_SQL = ("multiIf(scope['user'] != '', concat('user:', scope['user']), agent IS NOT NULL, "
             "concat('agent:', assumeNotNull(agent)), NULL)")
# Who relayed an event: its sender (``lifecycle.sender_of``: the API key that sent it when the key is bound to no
# agent, else the agent it names; '' for the tenant's own, sent by no key naming no agent). A user an event
# names is that sender's word too: one agent naming two users is one source (``corroborated_scope``), and so is
# one unbound key naming two agents (round thirty-two). Read raw, as (agent, producer), and folded in Python
# (``lifecycle.senders``): ``mallory`` and ``MALLORY``, ``straße`` and ``STRASSE`` are one sender, folded as fleet
# verification folds them. The SQL fold (``caseFoldUTF8``, round thirty) was a second fold: ICU's Unicode is
# newer than Python's, and 55 code points folded differently (round thirty-two). The topic too: an event from a
# broker principal's own perceptions topic is that principal's, whatever agents it names (round thirty-three).
RELAY_SQL = "(ifNull(agent, ''), producer, toString(_topic))"

SUMMARY_SQL = f"""
SELECT a.tenant, a.system, a.action, a.actual, a.tasks, a.times, a.first, a.last, a.event_ids, s.tasks AS system_tasks,
       a.reporters, r.reporters AS tenant_reporters, a.relays, r.relays AS tenant_relays
FROM (
    SELECT tenant, assumeNotNull(system) AS system, ifNull(action, '') AS action, assumeNotNull(actual) AS actual,
           uniqExact(ifNull(task, event_id)) AS tasks, count() AS times,
           toUnixTimestamp64Micro(min(ts)) AS first, toUnixTimestamp64Micro(max(ts)) AS last,
           groupArray(event_id) AS event_ids,
           arraySort(groupUniqArray({{min_reporters:UInt32}})({REPORTER_SQL})) AS reporters,
           groupUniqArray({RELAY_SQL}) AS relays
    FROM events FINAL
    WHERE kind = 'anomaly' AND system IS NOT NULL AND actual IS NOT NULL
    GROUP BY tenant, system, action, actual
    HAVING tasks >= {{min_tasks:UInt32}}
) AS a
INNER JOIN (
    SELECT tenant, assumeNotNull(system) AS system, uniqExact(ifNull(task, event_id)) AS tasks
    FROM events FINAL WHERE system IS NOT NULL GROUP BY tenant, system
) AS s USING (tenant, system)
INNER JOIN (
    SELECT tenant, uniqExact({REPORTER_SQL}) AS reporters, groupUniqArray({RELAY_SQL}) AS relays FROM events FINAL
    GROUP BY tenant
) AS r USING (tenant)
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
    parameters: dict = field(default_factory=lambda: {"min_tasks": MIN_TASKS, "min_reporters": MIN_REPORTERS})
    held: str = ""  # why the summary is not briefed to the whole scene, when it is not


def read_summaries(warehouse) -> list[Summary]:
    """The IO edge and the rule at once (the grouping is the SQL above)."""
    return [summarise(*row, senders(relays), len(senders(tenant_relays)))
            for *row, relays, tenant_relays in warehouse.query(SUMMARY_SQL, {"min_tasks": MIN_TASKS,
                                                                             "min_reporters": MIN_REPORTERS})]


def summarise(tenant: str, system: str, action: str, actual: str, tasks: int, times: int, first: int, last: int,
              event_ids: list[str], system_tasks: int, reporters: list[str] = (), tenant_reporters: int = 0,
              relays: list[str] = (), tenant_relays: int = 0) -> Summary:
    """Pure: the summary belief of one recurring anomaly. ``reporters``: up to ``MIN_REPORTERS`` of
    those who reported it ("user:…" / "agent:…"); ``tenant_reporters``: how many the tenant has; ``relays``,
    ``tenant_relays``: the same of the agents that sent the reports (``RELAY_SQL``)."""
    span = f"{_day(first)} … {_day(last)}" if _day(first) != _day(last) else _day(first)
    # the reported words are quoted so that none reads as the summary's own (round twenty-six, docs/security.md)
    what = f"{words(action)} gave {words(actual)}" if action else f"{words(actual)} happened"
    text = f"in {named(system)}, {what} in {tasks} of {system_tasks} tasks ({times} times, {span})"
    signature = f"summary|{tenant}|{system}|{action}|{actual}"
    ids = list(event_ids)
    scope, status, held = corroborated_scope({"scene": system}, list(reporters), tenant_reporters, list(relays),
                                             tenant_relays)
    return Summary(
        belief_id="bl_" + hashlib.blake2b(signature.encode(), digest_size=12).hexdigest(), tenant=tenant, text=text,
        confidence=round(wilson_lower(tasks, max(tasks, system_tasks)), 6), status=status, support=times,
        scope=scope, event_ids=ids[-EVIDENCE_CAP:], key_event_ids=ids[-3:], newest_us=last, tasks=tasks, held=held)


def corroborated_scope(scope: dict, reporters: list[str], tenant_reporters: int, relays: list[str] = (),
                       tenant_relays: int = 0) -> tuple[dict, str, str]:
    """Pure: (scope, status, why held) of a fact or rule ``reporters`` gave, briefed in ``scope``: as it is
    from ``MIN_REPORTERS`` reporters sent by ``MIN_REPORTERS`` agents (``relays``), or from all the tenant has;
    a lone user's is that user's; a lone agent's waits inactive, and so do several users' that one agent alone
    sent — the users an event names are its agent's word (round twenty-seven: one agent naming users u0 and u1
    made its words a scene belief briefed to every agent). Reporters are "user:…" / "agent:…"
    (``REPORTER_SQL``), relays agent names ('' for the tenant's own, ``RELAY_SQL``)."""
    # no reporter named at all (events with neither a user nor an agent): who sent them decides, as for users
    if not reporters or len(reporters) >= min(MIN_REPORTERS, tenant_reporters):
        if len(relays) < min(MIN_REPORTERS, tenant_relays):
            agent = _relay_named(relays[0] if relays else "")
            said = f"reported by {len(reporters)} users" if reporters else "reported by no named user or agent"
            return (scope, "inactive", f"{said} all sent by {agent}, alone of the "
                                       f"tenant's {tenant_relays} senders: held until another agent reports it")
        return scope, "active", ""
    role, _, name = sorted(reporters)[0].partition(":")
    if role == "user":
        return ({**scope, "user": name}, "active",
                f"reported by user {name!r} alone of the tenant's {tenant_reporters} reporters: "
                "briefed to that user only")
    return (scope, "inactive",
            f"reported by agent {name!r} alone of the tenant's {tenant_reporters} reporters: "
            f"held until another reporter sees it")


def _day(us: int) -> str:
    return datetime.fromtimestamp(us / 1e6, UTC).date().isoformat()


def _relay_named(relay: str) -> str:
    """A relay (``lifecycle.senders``) as a held summary's reason names it."""
    if relay.startswith(KEY_SENDER):
        return f"API key {relay.removeprefix(KEY_SENDER)!r} (bound to no agent)"
    if relay.startswith(PRINCIPAL_SENDER):
        return f"broker principal {relay.removeprefix(PRINCIPAL_SENDER)!r}"
    return f"agent {relay!r}" if relay else "the tenant's own integration (no agent)"
