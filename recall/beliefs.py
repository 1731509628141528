"""Beliefs at decision time (design.md §seed-002-3, pit 3): the warm briefing and the retrieval bias.

A briefing needs no search: before each decision the top *active* beliefs of four layers
are injected — situation (the belief's condition names the decision's emotion, given to
``recall(emotion=)`` or inferred from its text, ``recall.emotion``), global (confidence ≥ 0.9
and more than 50 supporting events, always), scene (the belief's ``scope["scene"]`` is this
task type) and user (``scope["user"]`` is this user) — at most four in total. Beliefs come
from the hindsight jobs (``belief_induced`` decisions); the functions here work on whatever
beliefs exist. Two conflicting beliefs in an open A/B window are both under review: each
decision is briefed the one of its arm.
"""

from __future__ import annotations

import re

from hindbrain.recall.arms import arm_of
from hindbrain.recall.documents import Belief, Doc
from hindbrain.recall.tokenize import tokens

MAX_BRIEFED = 4
GLOBAL_MIN_CONFIDENCE, GLOBAL_MIN_SUPPORT = 0.9, 50
_EMOTION_CONDITION = re.compile(r"\bemotion in \[([^\]]*)\]")
MIN_SHARED_WORDS = 2  # distinctive words (or CJK bigrams) an item shares with a belief to be biased by it


def emotions_of(belief: Belief) -> frozenset[str]:
    """The emotions an induced belief's condition names ("if emotion in [angry, disappointed] …")."""
    found = _EMOTION_CONDITION.search(belief.text)
    return frozenset(e.strip().lower() for e in found.group(1).split(",") if e.strip()) if found else frozenset()


def layer_of(belief: Belief, scene: str | None, user: str | None, admitted: frozenset[str] = frozenset(),
             emotion: str | None = None) -> str | None:
    """The injection layer this belief reaches for this decision, or None. A belief under
    review reaches it only when ``admitted`` (this decision's arm of its A/B window). A belief
    whose condition names emotions reaches a decision of one of them ("situation"), in its
    scene if it names one; when the decision's emotion is unknown, it is briefed by its scene
    as before."""
    if belief.status != "active" and belief.id not in admitted:
        return None
    if "user" in belief.scope:
        return "user" if user is not None and belief.scope["user"] == user else None
    feelings = emotions_of(belief)
    if feelings and emotion is not None:
        in_scene = "scene" not in belief.scope or belief.scope["scene"] == scene
        return "situation" if emotion in feelings and in_scene else None
    if "scene" in belief.scope:
        return "scene" if scene is not None and belief.scope["scene"] == scene else None
    if belief.confidence >= GLOBAL_MIN_CONFIDENCE and belief.support > GLOBAL_MIN_SUPPORT:
        return "global"
    return None


def briefable(belief: Belief, user: str | None) -> bool:
    """Whether the poisoning defence lets ``belief`` be briefed to a decision for ``user``: a
    belief resting on quarantined words (``Belief.quarantine``) is briefed only to the user it
    is personal to, as the words themselves reach only their speaker's recalls (design.md §issue-27)."""
    return not belief.quarantine or (user is not None and belief.scope.get("user") == user)


def window_arms(windows: dict[str, tuple[str, str]], decision_key: str | None) -> dict[str, tuple[str, str]]:
    """For each open A/B window, the belief this decision is given: ``{belief id: (window, arm)}``.
    Without a task or agent to split on, a decision gets neither arm (it cannot be attributed)."""
    if not decision_key:
        return {}
    out = {}
    for window_id, (a, b) in windows.items():
        arm = arm_of(window_id, decision_key)
        out[a if arm == "A" else b] = (window_id, arm)
    return out


def briefing(beliefs: list[Belief], scene: str | None, user: str | None,
             limit: int = MAX_BRIEFED, admitted: frozenset[str] = frozenset(), emotion: str | None = None
             ) -> list[tuple[Belief, str]]:
    """The beliefs to brief, with their layer: best per layer by confidence then support,
    interleaved situation → global → scene → user so each layer gets a seat before any gets a second."""
    by_layer: dict[str, list[Belief]] = {"situation": [], "global": [], "scene": [], "user": []}
    for belief in beliefs:
        layer = layer_of(belief, scene, user, admitted, emotion)
        if layer:
            by_layer[layer].append(belief)
    for ranked in by_layer.values():
        ranked.sort(key=lambda b: (-b.confidence, -b.support, b.id))
    chosen: list[tuple[Belief, str]] = []
    for seat in range(limit):
        for layer, ranked in by_layer.items():
            if seat < len(ranked) and len(chosen) < limit:
                chosen.append((ranked[seat], layer))
    return chosen


def bias(doc: Doc, briefed: list[Belief]) -> tuple[float, list[str]]:
    """(strength, belief ids): the strongest briefed belief that rests on this item's events
    or shares two distinctive words (or CJK bigrams) with it. Strength is that belief's confidence."""
    strength, ids = 0.0, []
    doc_events = set(doc.event_ids)
    words = None
    for belief in briefed:
        related = bool(doc_events.intersection(belief.event_ids))
        if not related and belief.cues:
            if words is None:
                words = set(tokens(doc.text))
            related = len(words & belief.cues) >= MIN_SHARED_WORDS
        if related:
            ids.append(belief.id)
            strength = max(strength, belief.confidence)
    return strength, ids
