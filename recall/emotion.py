"""The situation's emotion when the caller does not say it: a small offline lexicon, English
and Chinese, that names the emotion a text voices and how sure it is (design.md §issue-17, point 4).

Belief induction learns rules such as "if emotion in [angry] then acknowledge first, then fix";
a recall that cannot be told the customer is angry never briefs them, and a perceived ticket
with no label teaches nothing. ``recall(emotion=...)`` and ``perceive(emotion=...)`` say it;
otherwise ``infer`` reads the text. A word that can only voice the emotion ("furious",
"unacceptable", "生气") is a sure cue (``SURE``, 0.8: it passes the induction's noise control,
which counts labels of confidence ≥ 0.7); a word that often voices something else ("worst",
"ridiculous", "urgent") is an implicit one (0.6, the seed's implicit signal, never as sure as a
label the caller gives, 0.9). Pure, no IO; deliberately small: words that voice the emotion,
not topics.
"""

from __future__ import annotations

import re

IMPLICIT = 0.6  # design.md §seed-001-4.1: an implicit signal
SURE = 0.8  # a word that voices nothing but the emotion
SOURCE = "lexicon/1"  # named in the perception's scope when the label was inferred
# (emotion, sure cues, implicit cues); the first emotion whose cues a text holds is its label.
LEXICON = (
    ("angry",
     r"\b(?:angry|furious|outraged|livid|pissed|unacceptable|fed up)\b"
     r"|生气|愤怒|气死|受够|火大|恼火|发火|不可接受|太离谱",
     r"\b(?:mad at|ridiculous|sick of|this is a joke|worst)\b|离谱|太过分|投诉你们"),
    ("disappointed", r"\b(?:disappointed|disappointing|let down)\b|失望", r"\bexpected better\b"),
    ("anxious", r"\b(?:worried|anxious|panicking)\b|焦虑|急死", r"\b(?:nervous|urgent(?:ly)?|asap)\b|着急|担心|紧急"),
    ("sad", r"\b(?:heartbroken|depressed)\b|伤心", r"\b(?:sad|upset)\b|难过|沮丧"),
    ("happy", r"\b(?:delighted|thrilled|love it)\b|太棒了",
     r"\b(?:happy|great job|thank you so much)\b|开心|高兴|满意"),
)
_PATTERNS = [(label, re.compile(sure, re.IGNORECASE), re.compile(implicit, re.IGNORECASE))
             for label, sure, implicit in LEXICON]


def infer(text: str | None) -> tuple[str, float] | None:
    """(emotion, confidence) the text voices, the first in ``LEXICON`` order, or None."""
    if not text:
        return None
    for label, sure, implicit in _PATTERNS:
        if sure.search(text):
            return label, SURE
        if implicit.search(text):
            return label, IMPLICIT
    return None
