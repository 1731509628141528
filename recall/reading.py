"""What a perceived turn says beyond its words, read at the edge (design.md §issue-17): the emotion a
customer's turn voices (``recall.emotion``) and what an agent's reply does.

The acts of a reply are the dialogue acts belief induction
clusters on when the agent reports no ``action`` (design.md §issue-17: a ticket desk whose agents only
write replies). A reply that apologises or names the customer's feeling *empathizes*; every
reply *answers*. So "I'm sorry, I understand how frustrating this is. Your key moved to eu-1"
is ("empathize", "answer"), and induction can learn "if emotion in [angry] then first
empathize, then answer". Pure, no IO; a small lexicon in English and Chinese.
"""

from __future__ import annotations

import re

from hindbrain.recall import emotion

EMPATHY = re.compile(
    r"\b(?:sorry|apologi[sz]e|apologies|i understand (?:how|that|your)|frustrat\w*|that must be)\b"
    r"|抱歉|对不起|不好意思|理解您|您的心情|让您久等|给您带来",
    re.IGNORECASE)


def reply_acts(text: str | None) -> tuple[str, ...]:
    """The acts of a reply, in order: ("empathize", "answer") or ("answer",); () for no text."""
    if not text or not text.strip():
        return ()
    return ("empathize", "answer") if EMPATHY.search(text) else ("answer",)


AGENT_ROLES = frozenset(("assistant", "agent", "bot", "ai"))  # speakers that are the agent's side
OTHER_ROLES = frozenset(("system", "tool"))  # speakers that are neither the agent nor a person


def agents_turn(speaker: str | None, agent: str | None) -> bool:
    """Whether the turn is the agent's own: spoken by it by name, or by an agent role."""
    return speaker is not None and (speaker == agent or speaker.lower() in AGENT_ROLES)


def persons_turn(speaker: str | None, agent: str | None) -> bool:
    """Whether a person (the user, by role or by name) speaks: not the agent, not a system role."""
    return bool(speaker) and not agents_turn(speaker, agent) and speaker.lower() not in OTHER_ROLES


READ_KINDS = frozenset(("message", "feedback"))  # the kinds a turn's text is read for (``reading``)


def reading(kind: str, text: str | None, speaker: str | None, agent: str | None,
            given_emotion: str | None) -> tuple[str | None, dict[str, str]]:
    """(emotion, scope entries) a ``message`` or ``feedback`` adds to its perception: the
    emotion the other party's turn voices when the caller gave none (with ``label_confidence``
    and ``emotion_source`` saying it was inferred, and how surely), the acts of the agent's own
    reply (``reply_acts``). Other kinds, and turns whose speaker is unknown, are left as given."""
    if kind not in READ_KINDS or not text:
        return given_emotion, {}
    if agents_turn(speaker, agent):
        return given_emotion, {"reply_acts": ",".join(reply_acts(text))} if kind == "message" else {}
    if given_emotion is not None or speaker is None:
        return given_emotion, {}
    inferred = emotion.infer(text)
    if inferred is None:
        return None, {}
    label, confidence = inferred
    return label, {"label_confidence": str(confidence), "emotion_source": emotion.SOURCE}
