"""When to recall: the decision-chain triggers of design.md §C1 (design.md §seed-000-exp-4, design.md §seed-004-7).

Recall is not only for task start. These pure helpers look at what an agent is about to do
or has just seen and say which trigger fires and why, so the agent calls ``recall`` at the
moment a memory can change its next action:

* ``anomaly`` — behaviour differs from expectation (``expected`` vs ``actual``), or the
  screen shows a known failure sign (blank page, permission denied, SSO redirect, 403 ...);
* ``no_progress`` — the same action repeated without progress;
* ``no_data`` — a lookup matched nothing;
* ``unresolved_entity`` — an entity in the plan cannot be resolved;
* ``user_reference`` — the user refers to the shared past ("上次", "你说过", "last time" ...);
* ``task_start`` — a new task (always worth one recall).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

USER_REFERENCE = re.compile(
    r"上次|上回|以前|之前说|你说过|你提到过|我们讨论过|我们聊过|我告诉过你|还记得|老规矩|照旧|"
    r"\blast time\b|\bprevious (?:time|conversation|session)\b|\byou (?:said|told me|mentioned)\b|"
    r"\bwe (?:discussed|talked about|agreed)\b|"
    r"\bas (?:before|usual)\b|\bremember when\b|\bi told you\b|\bthe usual\b",
    re.IGNORECASE,
)
FAILURE_SIGNS = re.compile(
    r"blank page|white screen|permission denied|access denied|forbidden|unauthori[sz]ed|\b40[13]\b|"
    r"sso|single sign-on|redirect(?:ed)? to (?:the )?login|login page|session expired|timed? ?out|timeout|"
    r"no response|nothing happen|spinner|loading forever|"
    r"白屏|空白页|没有权限|无权限|权限不足|拒绝访问|跳转到登录|重定向到登录|登录页|会话过期|超时|没有响应|无响应|一直转圈|没反应",
    re.IGNORECASE,
)
REPEATS_WITHOUT_PROGRESS = 2  # the same action this many times with no progress: stop and recall


@dataclass(frozen=True)
class TriggerHit:
    trigger: str  # one of the Trigger literals of hindbrain.schemas.api
    reason: str


def _norm(text: str | None) -> str:
    return " ".join((text or "").lower().split())


def detect_triggers(
    *,
    text: str | None = None,
    expected: str | None = None,
    actual: str | None = None,
    recent_actions: list[str] | None = None,
    progressed: bool = True,
    results_found: int | None = None,
    unresolved_entities: list[str] | None = None,
    task_started: bool = False,
) -> list[TriggerHit]:
    """Every trigger that fires for this moment of the agent's work, with its reason.

    ``text`` is what the agent just read (a user turn, a page, an error); ``recent_actions``
    the agent's last actions, newest last; ``progressed`` whether the last action changed
    anything; ``results_found`` the size of the last lookup's result, if there was one.
    """
    hits: list[TriggerHit] = []
    if task_started:
        hits.append(TriggerHit("task_start", "a new task starts"))
    if expected and actual and _norm(expected) != _norm(actual):
        hits.append(TriggerHit("anomaly", f"expected {expected!r} but got {actual!r}"))
    else:
        sign = FAILURE_SIGNS.search(" ".join(t for t in (actual, text) if t))
        if sign:
            hits.append(TriggerHit("anomaly", f"failure sign {sign.group(0)!r}"))
    if recent_actions and not progressed:
        last = _norm(recent_actions[-1])
        repeats = 0
        for action in reversed(recent_actions):
            if _norm(action) != last:
                break
            repeats += 1
        if repeats >= REPEATS_WITHOUT_PROGRESS:
            hits.append(TriggerHit("no_progress", f"{recent_actions[-1]!r} repeated {repeats} times without progress"))
    if results_found == 0:
        hits.append(TriggerHit("no_data", "the last lookup matched nothing"))
    if unresolved_entities:
        hits.append(TriggerHit("unresolved_entity", f"cannot resolve {', '.join(unresolved_entities)}"))
    if text:
        ref = USER_REFERENCE.search(text)
        if ref:
            hits.append(TriggerHit("user_reference", f"the user refers to the past: {ref.group(0)!r}"))
    return hits
