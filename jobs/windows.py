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

No oscillation: a settled pair is not reopened unless the loser's confidence, from new
outcomes, now exceeds the winner's by ``REOPEN_MARGIN``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hindbrain.jobs.ab import WindowRule, settle
from hindbrain.learning.records import derived_id
from hindbrain.recall.arms import WINDOW_OPENED, WINDOW_SETTLED

OPENED, SETTLED = WINDOW_OPENED, WINDOW_SETTLED
REOPEN_MARGIN = 0.1
LOSER_WEIGHT = 0.5


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
    a_successes: int = 0
    a_total: int = 0
    b_successes: int = 0
    b_total: int = 0


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
    return settle(arms.a_successes, arms.a_total, arms.b_successes, arms.b_total, window.opened_us, now_us, rule)
