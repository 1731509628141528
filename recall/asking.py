"""A turn that asks does not answer (design.md §issue-30, round two).

A question put to recall is answered by statements: "Kofi took all the pictures when you got
married" answers "who photographed Tom's wedding?". Turns that are themselves questions ("Does
that band play any instrument live?") share the question's form — its interrogative words, and
in an embedding its sentence type — so both search channels rank them near the top, yet they
hold no fact. On the tuning halves of the conversational sets the gold evidence is a question
in under 1 % of cases (conv-en 0.8 %, conv-zh and hard-{en,zh} 0 %), while asking turns filled
the top of the ranking (docs/recall-quality.md). So a question's recall scales an asking
turn's score down, by ``ASKING_PENALTY`` × the share of its sentences that ask, and says so in
``why["asks"]``; it is demoted, never dropped: a turn that is the only match still comes back.
"""

from __future__ import annotations

import re

# Chosen on the tuning halves of conv-{en,zh} and hard-{en,zh} together (0.3 / 0.5 / 0.6 / 0.7 / 0.8);
# see docs/recall-quality.md.
ASKING_PENALTY = 0.7

# Sentence ends: Latin punctuation needs the space after it ("api?x=1" is no sentence end),
# CJK punctuation does not.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
# A Chinese question often carries no mark: a sentence-final particle asks.
_ASKS = re.compile(r"(?:[?？]|[吗呢么][\s\"'”」]*)$")
_MAY_ASK = re.compile(r"[?？吗呢么]")


def asking_share(text: str) -> float:
    """The share of ``text``'s sentences that are questions, in [0, 1] (0 for no text)."""
    if not text or not _MAY_ASK.search(text):  # most texts: no mark, no particle (run for every perceived event)
        return 0.0
    sentences = [s.strip().rstrip("\"'”」)") for s in _SENTENCE_END.split(text or "")]
    sentences = [s for s in sentences if s]
    if not sentences:
        return 0.0
    return sum(1 for s in sentences if _ASKS.search(s)) / len(sentences)


def asking_penalty(share: float, associative: float) -> float:
    """What an item whose sentences ask in ``share`` loses, as a penalty on the fused score:
    a question (associative share 0) in full; a dialogue (share 1), whose memories are single
    events recalled by association, not answers, nothing."""
    return ASKING_PENALTY * share * max(0.0, 1.0 - associative)
