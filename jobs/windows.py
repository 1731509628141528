"""Conflicting beliefs and their A/B windows (design.md §E5, design.md §seed-002-5.3): the job's logic.

Two active beliefs of a tenant **conflict** when they prescribe different actions for the
same condition (scene and emotions). The hindsight run then opens a window
(``ab_window_opened``: A = the more confident, the incumbent; B = the challenger) and both
go to *reviewing*; recall briefs each task the belief of its arm (``recall.arms.arm_of``) and
the injection record carries the arm. Each run counts, per arm, the outcomes of tasks whose
recall briefed that arm's belief (intent to treat: what the arm was *given*, whether or not
the agent applied it) and settles the window with ``jobs.ab.settle`` (``ab_window_settled``):
the winner is active again, the loser stays in the view, inactive, its confidence halved —
never deleted. A tie leaves both active with their confidences.

An arm's evidence counts reporters, not only outcomes (round thirty-one, docs/security.md "One agent does not
settle a window"): the outcomes are grouped by who sent them, as fleet verification counts senders
(``lifecycle.sender_identity``: an unbound API key is one reporter whatever agents it names — round thirty-two —
else the agent, look-alikes folded into one), and one reporter counts no more outcomes in an arm
than all the arm's other reporters together (``arm_evidence``). So one agent — or one key that leaves the agent
out: outcomes with no agent are one reporter, ``ANONYMOUS`` — never reaches ``min_per_arm`` alone, and a window
whose evidence is one reporter's ends at ``max_days`` as a tie: no belief changes. Unless that reporter is the
tenant's fleet: where the tenant's events and outcomes name one agent at most (``fleet_of``), the agent is the
fleet, there is no one else's belief for it to decide, and its outcomes count whole (a single-agent deployment
settles its conflicts as before).

A recall's outcome is its agent's (round thirty-three, docs/security.md): each recall counts its first outcome that
may speak for the agent it was made for (``first_reports``, ``lifecycle.speaks_for``: the learner's credit rule), so
a sender shown another agent's recall id cannot report first and decide it.

No oscillation: a settled pair is not reopened unless the loser's confidence, from new
outcomes, now exceeds the winner's by ``REOPEN_MARGIN``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hindbrain.jobs.ab import WindowRule, settle
from hindbrain.learning.lifecycle import KEY_SENDER, sender_identity, speaks_for
from hindbrain.learning.records import derived_id
from hindbrain.recall.arms import WINDOW_OPENED, WINDOW_SETTLED

OPENED, SETTLED = WINDOW_OPENED, WINDOW_SETTLED
REOPEN_MARGIN = 0.1
LOSER_WEIGHT = 0.5
ANONYMOUS = ""  # the reporter of outcomes sent with no agent and no key: one, since any caller can leave the name out


@dataclass(frozen=True)
class Window:
    window_id: str
    tenant: str
    a: str  # belief ids
    b: str
    opened_us: int
    verdict: str | None = None  # A | B | tie once settled


@dataclass(frozen=True)
class Arms:
    """Each arm's outcomes as counted (``arms_of``), and why any were not."""
    a_successes: int = 0
    a_total: int = 0
    b_successes: int = 0
    b_total: int = 0
    not_counted: tuple[str, ...] = ()


def reporter(agent: str | None, producer: str | None = None) -> str:
    """Who an outcome counts as (``sender_identity``): an unbound key, else its agent folded, else ``ANONYMOUS``."""
    return sender_identity(agent, producer) or ANONYMOUS


def arm_evidence(reports: dict[str, tuple[int, int]]) -> tuple[int, int, int]:
    """One arm's ``(successes, total, left out)`` from ``{reporter: (successes, total)}``.

    A reporter counts no more outcomes than all the arm's other reporters together: only the largest can exceed
    that, and it keeps the others' total with its own success rate (rounded). One reporter alone counts nothing,
    so no single agent reaches ``min_per_arm`` or moves the posterior at ``max_days``; in an honest fleet of
    several agents no one reports half an arm and nothing changes."""
    if not reports:
        return 0, 0, 0
    top = max(reports, key=lambda r: (reports[r][1], r))
    top_successes, top_total = reports[top]
    successes = sum(s for s, _ in reports.values())
    total = sum(n for _, n in reports.values())
    others = total - top_total
    if top_total <= others:
        return successes, total, 0
    kept = round(top_successes * others / top_total)
    return successes - top_successes + kept, 2 * others, top_total - others


def fleet_of(senders) -> set[str]:
    """The tenant's senders (``reporter``) from the ``(agent, producer)`` pairs its events and outcomes carry
    (``jobs.TENANT_AGENTS_SQL``); a record with neither an agent nor a key names no one."""
    return {who for agent, producer in senders if (who := reporter(agent, producer)) != ANONYMOUS}


def first_reports(outcomes) -> tuple[list[tuple], dict[tuple[str, str], int]]:
    """Each recall's outcome as a window counts it, from ``(recall id, arm, the recall's agent, success, agent,
    producer)`` rows in time order (``jobs.ARM_REPORTS_SQL``): the first that may speak for the recall's agent
    (``lifecycle.speaks_for``, the learner's credit rule), summed into ``arms_of``'s ``(arm, agent, producer,
    successes, total)`` rows; and ``{(arm, reporter): outcomes}`` of the reports on other agents' recalls, for the
    record. A sender who saw another agent's recall id and reported on it first decided that recall's evidence;
    its report is refused, and the agent's own, later one counts."""
    counted: dict[tuple, list[int]] = {}
    foreign: dict[tuple[str, str], int] = {}
    decided = set()
    for recall_id, arm, recalled_for, success, agent, producer in outcomes:
        if not speaks_for(agent, recalled_for):
            who = reporter(agent, producer)
            foreign[arm, who] = foreign.get((arm, who), 0) + 1
            continue
        if (recall_id, arm) in decided:
            continue
        decided.add((recall_id, arm))
        tally = counted.setdefault((arm, agent, producer), [0, 0])
        tally[0] += bool(success)
        tally[1] += 1
    return [(*key, s, n) for key, (s, n) in counted.items()], foreign


def arms_of(rows, fleet: set[str] | None = None, foreign: dict[tuple[str, str], int] | None = None) -> Arms:
    """The window's ``Arms`` from ``(arm, agent, producer, successes, total)`` rows (``first_reports``):
    the reporters (``reporter``), each arm counted by ``arm_evidence``; ``not_counted`` says whose outcomes were
    left out, ``foreign``'s reports on other agents' recalls first. A tenant whose ``fleet`` is one sender or none
    counts every outcome: no other's belief is at stake."""
    sole = fleet is not None and len(fleet) <= 1
    reports: dict[str, dict[str, tuple[int, int]]] = {"A": {}, "B": {}}
    spellings: dict[str, set[str]] = {}  # a folded reporter → the names it reported under, for the record
    for arm, agent, producer, successes, total in rows:
        if arm not in reports:
            continue
        who = reporter(agent, producer)
        spellings.setdefault(who, set()).add(agent or "(no agent)")
        s, n = reports[arm].get(who, (0, 0))
        reports[arm][who] = (s + successes, n + total)
    counted = {}
    notes = [_foreign(arm, who, n) for (arm, who), n in sorted((foreign or {}).items()) if arm in reports]
    for arm, by_reporter in reports.items():
        if sole:
            counted[arm] = (sum(r[0] for r in by_reporter.values()), sum(r[1] for r in by_reporter.values()))
            continue
        successes, total, left_out = arm_evidence(by_reporter)
        counted[arm] = (successes, total)
        if left_out:
            top = max(by_reporter, key=lambda r: (by_reporter[r][1], r))
            notes.append(_not_counted(arm, _named(top, spellings[top]), by_reporter[top][1], left_out,
                                      len(by_reporter) - 1))
    return Arms(*counted["A"], *counted["B"], tuple(notes))


def _named(who: str, spellings: set[str]) -> str:
    """A reporter for the record: an agent by its spellings, a key by its id and the agents it named."""
    return f"{who} (naming {_names(spellings)})" if who.startswith(KEY_SENDER) else _names(spellings)


def _names(spellings: set[str], shown: int = 3) -> str:
    """A reporter's spellings for the record, the first ``shown``: a 7-letter name has 128 spellings by case."""
    names = sorted(spellings)
    more = f" and {len(names) - shown} more spellings" if len(names) > shown else ""
    return "/".join(names[:shown]) + more


def _foreign(arm: str, who: str, outcomes: int) -> str:
    return (f"arm {arm}: {outcomes} outcomes of {who} on recalls made for other agents not "
            f"counted (a recall's outcome is its agent's)")


def _not_counted(arm: str, name: str, outcomes: int, left_out: int, others: int) -> str:
    if not others:
        return (f"arm {arm}: the {outcomes} outcomes of {name}, its only reporter, not counted (one reporter counts "
                f"no more outcomes than the arm's other reporters together)")
    return (f"arm {arm}: {left_out} of the {outcomes} outcomes of {name} not counted (one reporter counts no more "
            f"outcomes than the arm's {others} other reporters together: {outcomes - left_out})")


def window_id(tenant: str, a: str, b: str, opened_us: int) -> str:
    return derived_id("ab", tenant, a, b, str(opened_us))


def latest(windows: list[Window]) -> list[Window]:
    """The newest window of each pair of beliefs (a reopened pair's old verdict no longer counts)."""
    newest: dict[frozenset, Window] = {}
    for w in sorted(windows, key=lambda w: w.opened_us):
        newest[frozenset((w.a, w.b))] = w
    return list(newest.values())


def conflicts(beliefs: list, windows: list[Window]) -> list[tuple]:
    """Pairs (incumbent, challenger) of active beliefs with the same condition and different
    actions that have no open window and are not a settled pair (unless past the margin)."""
    windows = latest(windows)
    by_condition: dict[tuple, list] = {}
    for b in beliefs:
        if b.status == "active":
            key = (b.tenant, b.condition.get("scene"), tuple(b.condition.get("emotions", ())))
            by_condition.setdefault(key, []).append(b)
    busy = {w.a for w in windows if w.verdict is None} | {w.b for w in windows if w.verdict is None}
    settled = {frozenset((w.a, w.b)): w for w in windows if w.verdict is not None}
    out = []
    for group in by_condition.values():
        group = sorted(group, key=lambda b: (-b.confidence, b.belief_id))
        incumbent = group[0]
        for challenger in group[1:]:
            if challenger.actions == incumbent.actions or {incumbent.belief_id, challenger.belief_id} & busy:
                continue
            past = settled.get(frozenset((incumbent.belief_id, challenger.belief_id)))
            if past is not None and not _beyond_margin(past, incumbent, challenger):
                continue
            out.append((incumbent, challenger))
            busy |= {incumbent.belief_id, challenger.belief_id}
    return out


def _beyond_margin(past: Window, incumbent, challenger) -> bool:
    if past.verdict == "tie":
        return False
    winner = past.a if past.verdict == "A" else past.b
    loser = challenger if incumbent.belief_id == winner else incumbent
    won = incumbent if loser is challenger else challenger
    return loser.confidence > won.confidence + REOPEN_MARGIN


def with_window_states(beliefs: list, windows: list[Window]) -> list:
    """The beliefs as the windows leave them: reviewing while open, the loser of a settled
    window inactive at ``LOSER_WEIGHT`` × its confidence."""
    windows = latest(windows)
    reviewing = {x for w in windows if w.verdict is None for x in (w.a, w.b)}
    losers = {(w.b if w.verdict == "A" else w.a) for w in windows if w.verdict in ("A", "B")}
    out = []
    for b in beliefs:
        if b.belief_id in reviewing:
            b = replace(b, status="reviewing")
        elif b.belief_id in losers:
            b = replace(b, status="inactive", confidence=round(b.confidence * LOSER_WEIGHT, 6))
        out.append(b)
    return out


def verdict_of(window: Window, arms: Arms, now_us: int, rule: WindowRule):
    """``jobs.ab.settle`` on the counted outcomes; the reason says whose outcomes were not counted."""
    verdict = settle(arms.a_successes, arms.a_total, arms.b_successes, arms.b_total, window.opened_us, now_us, rule)
    if not arms.not_counted:
        return verdict
    return replace(verdict, reason=f"{verdict.reason}; {'; '.join(arms.not_counted)}")
