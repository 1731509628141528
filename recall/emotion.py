"""The situation's emotion when the caller does not say it: a small offline lexicon, English
and Chinese, that names the emotion a text voices and how sure it is (issue 17, point 4).

Belief induction learns rules such as "if emotion in [angry] then acknowledge first, then fix";
a recall that cannot be told the customer is angry never briefs them. ``recall(emotion=...)``
says it; otherwise ``infer`` reads the query: a lexicon cue is an *implicit* label (confidence
0.6, the seed's implicit signal), never as sure as a label the caller gives (explicit, 0.9).
Pure, no IO; deliberately small: words that voice the emotion, not topics.
"""

from __future__ import annotations

import re

IMPLICIT = 0.6  # seed 001 §4.1: an implicit signal
LEXICON = {
    "angry": r"\b(?:angry|furious|outraged|livid|mad at|pissed|unacceptable|ridiculous|fed up|sick of|"
             r"this is a joke|worst)\b|生气|愤怒|气死|太过分|受够|火大|恼火|发火|不可接受|投诉你们",
    "disappointed": r"\b(?:disappointed|disappointing|let down|expected better)\b|失望|令人失望",
    "anxious": r"\b(?:worried|anxious|nervous|urgent(?:ly)?|asap|panicking)\b|着急|担心|焦虑|急死|紧急",
    "sad": r"\b(?:sad|heartbroken|upset|depressed)\b|难过|伤心|沮丧",
    "happy": r"\b(?:happy|delighted|thrilled|love it|great job|thank you so much)\b|开心|高兴|太棒了|满意",
}
_PATTERNS = [(label, re.compile(pattern, re.IGNORECASE)) for label, pattern in LEXICON.items()]


def infer(text: str | None) -> tuple[str, float] | None:
    """(emotion, confidence) the text voices, the first in ``LEXICON`` order, or None."""
    if not text:
        return None
    for label, pattern in _PATTERNS:
        if pattern.search(text):
            return label, IMPLICIT
    return None
