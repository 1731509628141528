"""Perception → cognition extraction (design.md §seed-000-exp-2): compress a task's trajectory into
minimal actionable units "when C, do A, because R, verified by E". Explainable rules, no
LLM (an optional LLM ``Extractor`` plug-in is not built yet).

Rule ``recovery/1``: an anomaly (or failed step) in a system — an action, as an identity,
expected X, got Y — followed in the same task by a success in that system after the
identity or the action changed becomes: *when* the task's goal fails in that system (or,
with no goal known, that action gives Y instead of X), *do* the thing that worked,
*because* of the cause the change points at, naming what failed as "not: …" (it needs the
other identity, or the other options fail here), *verified by* the successful event. Its
coordinates are the system (entity), the scene, the action, the anomaly, the cause and the
scope.

Rule ``feedback/1`` (drift guard, design.md §seed-001-4.3): one negative feedback never creates a
rule; the third negative on the same topic does ("avoid what was criticised").

Rule ``correction/1`` (design.md §seed-001-2.2, the drift guard's "explicit confirmation"): negative
feedback on a topic, then *explicit* positive feedback on the same topic after the work
changed ("too much red, I don't like it" … "this one looks right") → "when working on the
topic, do as in the approved version, avoid what was criticised".

Both hold for everyone only once two named users gave the feedback; one person's feedback teaches a
rule for that person (``feedback_scope``, like a preference).

Rule ``preference/1`` (design.md §seed-001-6.1, preference consistency): a user's explicit statement
of a preference ("I prefer answers in Chinese", "以后请用表格") — a ``message`` or
``feedback`` spoken by the user (``speaker="user"`` or the person's own name, as integrations
pass it), explicit by ``signal="explicit"``, by being feedback, or by its own standing words
("please always", "from now on", "以后") — becomes "when working for that user
(``scope["user"]``, else the speaker's name, else — the speaker only the role "user" — that
session), follow the stated preference" (``person_scope``: never for every user). Plain dialogue
turns ("I like hiking") carry no explicit signal and stay events.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hindbrain.learning.lifecycle import senders
from hindbrain.recall.reading import persons_turn
from hindbrain.recall.tokenize import tokens

RECOVERY_RULE = "recovery/1"
FEEDBACK_RULE = "feedback/1"
CORRECTION_RULE = "correction/1"
PREFERENCE_RULE = "preference/1"
ROUTINE_RULE = "routine/1"
ROUTINE_AGENTS = 2  # independent agents whose success with one option, and no failure of it, make a routine
NEGATIVES_FOR_A_RULE = 3
INDEPENDENT_USERS = 2  # named users whose feedback makes its rule everyone's, not one person's (``feedback_scope``)
_PREFERENCE = re.compile(
    r"\b(i (?:prefer|like|want|need|don't like|do not like|hate|always want)|please (?:always|never|use|keep|write|"
    r"answer|reply|don't|do not|avoid|give me)|from now on|going forward|next time)\b|"
    r"我(?:喜欢|不喜欢|偏好|希望|习惯|要)|请(?:用|以后|始终|总是|不要|别)|以后|下次", re.IGNORECASE)

# A statement that binds the future whatever signal the caller passed: its words say it is a rule.
_STANDING = re.compile(r"\b(?:please (?:always|never)|from now on|going forward|in (?:the )?future|no more|no longer)\b"
                       r"|以后|今后|从现在(?:起|开始)|别再|不要再", re.IGNORECASE)


@dataclass(frozen=True)
class Proposal:
    """A unit an extraction rule proposes; the write gate still has to accept it."""

    condition: str
    action: str
    reason: str
    evidence: str
    event_ids: list[str]
    entities: list[str]
    scope: dict
    signal: str  # explicit | implicit | self: the provenance of the evidence
    rule: str
    coordinates: dict = field(default_factory=dict)


def is_failure(event: dict) -> bool:
    return event["kind"] == "anomaly" or event.get("success") is False


def is_success(event: dict) -> bool:
    return event.get("success") is True


def recovery(failure: dict, success: dict, goal: str | None = None, failed: tuple[str, ...] = ()) -> Proposal | None:
    """The unit a failure followed by a success teaches, or None when nothing changed
    between them (a retry that happened to work teaches no rule) or they concern different systems.

    The condition is general (design.md §issue-17): the system and what the agent set out to do — the
    task's ``goal`` (the action its recall named) when it is known and is not itself one of the
    options tried, else the failed action — with the symptom when there is no goal; never the
    failing identity or option. Those go in the reason as "not: …", so trajectories that
    differ only in what failed on the way are one lesson (the learner assimilates them), and
    the unit's action names only what worked (attribution matches it against what was done)."""
    system = failure.get("system")
    if not system or success.get("system") not in (None, system):
        return None
    did, as_who = failure.get("action") or "the step", failure.get("identity")
    new_action, new_who = success.get("action") or did, success.get("identity") or as_who
    if new_action == did and new_who == as_who:
        return None
    got = failure.get("actual") or failure.get("text") or "a failure"
    expected = failure.get("expected")
    tried = tuple(dict.fromkeys(failed or (did,)))
    # the goal is the condition unless it is itself an option tried; an identity change that kept the action
    # (the goal: "提交报销单" as another account) leaves the goal what was set out to do, not an option
    same_goal = goal == did == new_action and new_who != as_who
    if goal and (same_goal or (goal not in tried and goal != new_action)):
        condition = f"{goal} in {system} fails"
    else:
        condition = f"{did} in {system} gives {got}" + (f" instead of {expected}" if expected else "")
    # The reason names the cause, not the story: the condition already says what failed and the
    # action what to do, and every repeated word is paid again on each injection.
    if new_who != as_who:
        # Each clause once (design.md §issue-29): an action that already names the identity is not told to
        # switch to it again, and an option that already says as whom it ran is not told again.
        action = new_action if mentions(new_action, new_who) else f"switch to {_the(new_who)} and {new_action}"
        failing = did if not as_who or mentions(did, as_who) else f"{did} as {_the(as_who)}"
        reason = f"it needs {_the(new_who)} (not: {failing})"
        cause = f"identity: {as_who}"
    else:
        action = new_action
        reason = "the other options fail here (" + "; ".join(f"not: {t}" for t in tried if t != new_action) + ")"
        cause = f"action: {did}"
    evidence = success.get("text") or f"{new_action} succeeded"
    scope = {**failure.get("scope", {}), **success.get("scope", {})}
    coordinates = {"entity": system, "action": goal or did, "anomaly": f"expected {expected}, got {got}",
                   "cause": cause, "scene": scope.get("scene")}
    return Proposal(condition, action, reason, evidence, [_id(failure), _id(success)], [system, *_others(failure)],
                    scope, success.get("signal") or "implicit", RECOVERY_RULE, coordinates)


def routine(successes: list[dict], goal: str | None = None) -> Proposal | None:
    """The unit repeated success teaches where nothing failed (design.md §issue-29): ``ROUTINE_AGENTS``
    independent agents did the same thing in one system and scope and it worked each time. Without it a
    system that never failed kept no rule, and every agent's prompt carried a quoted success event (three
    times the tokens of the rule it amounts to). None when the successes are fewer than that, name no
    system or option, or the condition would only restate the action (no goal beside the option).

    The condition is what was set out to do in the system (the task's ``goal``; for an identity choice, the
    action done as that identity); the action names only the option; no reason (nothing failed: there is
    no "not: …"), the evidence says who it worked for."""
    # independent senders (``lifecycle.senders``): an API key bound to no agent is one whatever agents it names
    agents = [s for s in senders((s["envelope"].get("agent"), s["envelope"].get("producer")) for s in successes) if s]
    if len(agents) < ROUTINE_AGENTS:
        return None
    last = successes[-1]
    system, action, who = last.get("system"), last.get("action"), last.get("identity")
    if not system or not action:
        return None
    if who:
        goal = goal or action
        do = f"use {_the(who)}" if goal == action else action if mentions(action, who) else f"{action} as {_the(who)}"
    elif not goal or mentions(goal, action) or mentions(action, goal):
        return None
    else:
        do = action
    coordinates = {"entity": system, "action": goal, "cause": "routine"}
    return Proposal(f"{goal} in {system}", do, "", f"worked for {', '.join(agents)}; no failure of it seen",
                    [_id(s) for s in successes], [system], dict(last.get("scope") or {}), "implicit", ROUTINE_RULE,
                    coordinates)


_ARTICLE = re.compile(r"(?:the|a|an|my|our|your|their|this|that)\s", re.IGNORECASE)


def _the(noun: str) -> str:
    """``noun`` with "the" in front unless it brings its own article ("the admin account" stays)."""
    return noun if _ARTICLE.match(noun) else f"the {noun}"


def mentions(text: str, phrase: str) -> bool:
    """Whether ``text`` already says ``phrase`` (word by word, its article aside): "switch to the
    admin account, then submit" mentions "admin account"."""
    words = tokens(_ARTICLE.sub("", phrase, count=1) if _ARTICLE.match(phrase) else phrase)
    said = tokens(text)
    return bool(words) and any(said[i:i + len(words)] == words for i in range(len(said) - len(words) + 1))


def feedback_rule(topic: str, negatives: list[dict]) -> Proposal | None:
    """The rule ``NEGATIVES_FOR_A_RULE`` negative feedback events on one topic teach."""
    if len(negatives) < NEGATIVES_FOR_A_RULE:
        return None
    last = negatives[-1]
    return Proposal(f"working on {topic}", f"avoid what was criticised: {last['text']}",
                    f"{len(negatives)} negative feedback events on {topic}", "repeated negative feedback",
                    [_id(e) for e in negatives], [topic], feedback_scope(negatives, last),
                    "explicit" if any(e.get("signal") == "explicit" for e in negatives) else "implicit",
                    FEEDBACK_RULE, {"entity": topic})


def correction(topic: str, negatives: list[dict], approval: dict) -> Proposal | None:
    """The rule an explicit approval after criticism on ``topic`` confirms."""
    if not negatives or approval.get("signal") != "explicit":
        return None
    criticised = negatives[-1]["text"]
    approved = approval.get("action") or approval.get("text")
    return Proposal(f"working on {topic}", f"do as in the approved version ({approved}); avoid what was criticised: "
                    f"{criticised}", "criticised, then explicitly approved after the change",
                    approval.get("text") or "explicit approval", [_id(e) for e in (*negatives, approval)], [topic],
                    feedback_scope([*negatives, approval], {**approval, "scope": {**negatives[-1].get("scope", {}),
                                                                                 **approval.get("scope", {})}}),
                    "explicit", CORRECTION_RULE,
                    {"entity": topic, "scene": approval.get("scope", {}).get("scene")})


def named_user(event: dict) -> str | None:
    """The user an event names as the person speaking: ``scope["user"]``, else the speaker's own name
    (not the role ``"user"``, which is anybody), else None."""
    if user := (event.get("scope") or {}).get("user"):
        return user
    speaker = speaking_user(event)
    return speaker if speaker and speaker != "user" else None


def feedback_scope(events: list[dict], said: dict) -> dict:
    """Where a rule taught by people's feedback holds; ``said`` is the event whose words it carries.
    Everyone's (``said``'s scope) once ``INDEPENDENT_USERS`` named users gave the feedback; else the
    person's who said it (``person_scope``: that user, or that session for the role "user" or no speaker).
    Why: such a rule is someone's explicit word, shared at once at 0.9; one user complaining three times,
    in as many sessions as she likes, put her words into every other user's tasks as a rule (round
    twenty-five, docs/security.md). Sessions are no independent people: anyone can open another. Feedback
    in the agent's own name or a system role's is nobody's person; with no user, speaker or session there
    is nobody to bind it to: both keep their scope."""
    scope = dict(said.get("scope") or {})
    if len({user for e in events if (user := named_user(e))}) >= INDEPENDENT_USERS:
        return scope
    speaker = (said.get("speaker") or "").strip()
    if speaker and speaking_user(said) is None:
        return scope
    return person_scope(scope, speaker or "user", said.get("session")) or scope


def speaking_user(event: dict) -> str | None:
    """Who the event's speaker is when it is the person the agent works for: ``"user"`` (the
    role) or their own name, as an integration passes it (``speaker="Priya"``); None for the
    agent itself and for other roles."""
    speaker = (event.get("speaker") or "").strip()
    return speaker if persons_turn(speaker, event["envelope"].get("agent")) else None


def person_scope(scope: dict, speaker: str, session: str | None) -> dict | None:
    """The scope that binds a preference to the person who stated it: ``scope["user"]`` as
    given, else the speaker's own name; a speaker who is only the role ``"user"`` binds it to
    the conversation (``scope["session"]``, personal like a user: ``recall.gate.PERSONAL``);
    with neither, None: nobody to bind it to, and a role name is everybody (design.md §issue-27)."""
    if scope.get("user"):
        return scope
    if speaker != "user":
        return {**scope, "user": speaker}  # the person who said it is whom it is for
    return {**scope, "session": session} if session else None


def preference(statement: dict) -> Proposal | None:
    """The unit a user's explicit preference statement asks for, or None. The statement is
    explicit when the caller says so (``signal="explicit"``, a ``feedback`` event) or when its
    own words make it a standing instruction ("please always", "from now on", "以后请")."""
    # the cheap tests first: most messages are no user's statement (the learner asks this of each)
    if statement["kind"] not in ("message", "feedback") or statement.get("polarity") is not None:
        return None
    speaker = speaking_user(statement)
    if speaker is None:
        return None
    text = (statement.get("text") or "").strip()
    explicit = statement.get("signal") == "explicit" or statement["kind"] == "feedback" or bool(_STANDING.search(text))
    if not explicit or not _PREFERENCE.search(text):
        return None
    scope = person_scope(dict(statement.get("scope", {})), speaker, statement.get("session"))
    if scope is None:
        return None
    user, topic = scope.get("user"), topic_of(statement)
    condition = (f"working for user {user}" if user else f"working in session {scope['session']}") + (
        f" on {topic}" if topic else "")
    # No "because": "the user stated it explicitly" restated "the stated preference" in every reply's prompt
    # (design.md §issue-29: ~7 tokens a line); that it was stated, and where, is the evidence.
    return Proposal(condition, f"follow the stated preference: {text}", "",
                    f"stated explicitly in session {statement.get('session') or '?'}", [_id(statement)],
                    [e for e in (user, topic) if e], scope, "explicit", PREFERENCE_RULE,
                    {"entity": user, "scene": scope.get("scene")})


# The words every preference uses: what it is *about* is what remains.
_PREFERENCE_WORDS = frozenset((
    "follow", "the", "stated", "preference", "i", "me", "my", "please", "always", "answer", "answers", "reply",
    "replies", "respond", "in", "for", "to", "a", "an", "and", "or", "from", "now", "on", "prefer", "like", "want",
    "would", "use", "keep", "write", "writing", "be", "no", "more", "not", "don't", "dont", "do", "actually",
    "instead", "anymore", "any", "with", "of", "it", "is", "are", "that", "this", "your", "you", "just", "only",
    "never", "ever", "give", "make", "all", "them", "stop", "future", "going", "forward", "again",
    # CJK is matched as bigrams: these are the bigrams of 以后, 请用, 喜欢, 回答, 希望, 今后, 现在, 开始, 改成 ...
    "以后", "请用", "喜欢", "回答", "回复", "希望", "我的", "给我", "一下", "不要", "不再", "总是", "请你", "我希",
    "今后", "从现", "现在", "开始", "改成", "别再", "都用", "要再", "再用", "用点",
))


def preference_subject(action: str) -> frozenset[str]:
    """The words a preference is about ("bullet", "points"), without the words every
    preference uses ("always", "please", "answer", "no more"); CJK as bigrams."""
    return frozenset(t for t in tokens(action) if t not in _PREFERENCE_WORDS and not t.isdigit() and len(t) > 1)


def topic_of(event: dict) -> str | None:
    """What a feedback event is about: its system, else its first entity, else its scene."""
    return event.get("system") or next(iter(event.get("entities") or ()), None) or event.get("scope", {}).get("scene")


def _id(event: dict) -> str:
    return event["envelope"]["record_id"]


def _others(event: dict) -> list[str]:
    return [e for e in event.get("entities") or () if e != event.get("system")]
