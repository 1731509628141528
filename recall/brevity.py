"""A turn that says little answers little (design.md §issue-30, round two, third pass).

A conversation is mostly short turns that carry no fact: "Time flies.", "Nothing yet.", "Ha,
that's so typical of you." A question's evidence is a statement with content ("Kofi took all the
pictures when you got married"). Short texts sit near everything in an embedding space (a few
words, the speaker's name written before them: "Tom: Sounds dull but useful." is close to any
question about Tom), so the semantic channel put such turns in the top five of questions they
cannot answer. This is the length prior of retrieval models (the chance that a text is relevant
grows with what it says), applied where it holds: a question's recall (never a dialogue's, whose
memories are recalled by association) over chat messages (never rules or knowledge, which are
short by design). A message of ``tokens`` prompt tokens under ``BREVITY_TOKENS`` adds
``BREVITY_PENALTY × (1 − tokens / BREVITY_TOKENS) × (1 − associative share)`` to its penalty:
demoted in proportion, never dropped; ``why["brevity"]`` says so.
"""

from __future__ import annotations

# Chosen on the tuning halves of conv-{en,zh} and hard-{en,zh} together (penalty 0.2 / 0.4 / 0.6 ×
# 8 / 12 / 16 / 20 tokens; the milder of the two best, see docs/recall-quality.md). The texts'
# prompt tokens (``tokenize.estimate_tokens``: one per CJK character, one per 4 other characters)
# count the speaker written before a message: "Tom: Time flies." is 4.
BREVITY_PENALTY = 0.4
BREVITY_TOKENS = 16


def brevity_penalty(tokens: int, associative: float) -> float:
    """What a chat message of ``tokens`` prompt tokens loses, as a penalty on the fused score."""
    if tokens >= BREVITY_TOKENS:
        return 0.0
    return BREVITY_PENALTY * (1.0 - max(0, tokens) / BREVITY_TOKENS) * max(0.0, 1.0 - associative)
