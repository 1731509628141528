"""The write gate (design.md §seed-004-5, design.md §seed-001-4.3): what a perception is, and whether a proposed
unit may enter memory.

Perceptions: events go to the timeline; transactional content (phatic turns such as "ok",
"thanks", "收到") is discarded from learning and recall (still in the log, counted).

Units pass four acceptance checks or are rejected with the failed check named:
1. understandable alone — condition and action say something without the conversation
   around them (not "it", not one word);
2. affects an action — the action adds something to do beyond restating the condition;
3. has conditions — a trigger condition, not "always" (drift guard: rules without a
   trigger condition are refused);
4. verifiable — the action is observable, so an outcome can confirm or falsify it (not
   "be careful").
Knowledge (``source="read"``, cited) and experience (``source="lived"``) are separate
layers; nothing here converts one into the other.
"""

from __future__ import annotations

import re

from hindbrain.recall import keyed
from hindbrain.recall.tokenize import tokens

_PHATIC = frozenset({
    "ok", "okay", "k", "thanks", "thank you", "thx", "ty", "got it", "sure", "yes", "no", "noted", "cool", "great",
    "fine", "right", "bye", "hi", "hello", "好", "好的", "嗯", "嗯嗯", "谢谢", "收到", "行", "可以", "没问题", "明白",
})
_DEICTIC = frozenset({"it", "this", "that", "these", "those", "there", "so", "thing", "stuff",
                      "它", "这个", "那个", "这样"})
_NO_CONDITION = frozenset({"always", "any", "anything", "everything", "every time", "all cases", "whenever", "never",
                           "总是", "所有情况", "任何时候", "一直"})
_VAGUE = ("be careful", "pay attention", "do better", "try harder", "be mindful", "think twice", "注意", "小心", "认真",
          "仔细")
_PUNCT_CHARS = r"\s\.,;:!?，。；：！？、'\""
_PUNCT = re.compile(f"[{_PUNCT_CHARS}]+")
_WORDS = re.compile(f"[^{_PUNCT_CHARS}]+")  # what _PUNCT leaves: one class, so _phatic reads what the sub would
_PHATIC_LONGEST = max(map(len, _PHATIC))

CHECKS = ("understandable_alone", "affects_an_action", "has_conditions", "verifiable")


def perception_class(record: dict) -> str:
    """``event`` (the timeline) or ``transactional`` (discarded from learning and recall). A
    stored item's version (``recall.keyed``) is an event whatever it says: the caller keeps it."""
    if record["kind"] != "message" or record.get("system") or record.get("action") or record.get("actual"):
        return "event"
    if keyed.item_of(record.get("scope") or {}):
        return "event"
    return "transactional" if _phatic(record.get("text") or "") else "event"


def _phatic(text: str) -> bool:
    """Whether ``text``, lowered, its punctuation and spaces made one space and stripped, is empty or
    phatic. Reads only as far as a phatic text could reach: a 64 kB text's first words, not a scan of
    it holding the interpreter lock for milliseconds (twice an event: the index and the learner ask;
    docs/speed.md, isolation round nine). Lowering never shortens a word, so a prefix longer than
    the longest phatic text already decides."""
    words, length = [], -1
    for m in _WORDS.finditer(text):
        length += len(m.group()) + 1
        if length > _PHATIC_LONGEST:
            return False
        words.append(m.group())
    said = " ".join(words).lower()
    return not said or said in _PHATIC


def failed_check(condition: str, action: str) -> tuple[str, str] | None:
    """The first acceptance check a unit fails, with why; None when it passes all four."""
    cond, act = _norm(condition), _norm(action)
    cond_words, act_words = tokens(condition), tokens(action)
    if cond in _NO_CONDITION:  # checked first: "always" is also too short to stand alone
        return "has_conditions", f"'{condition}' is no trigger condition: say when the rule applies"
    if len(cond_words) < 2 or cond in _DEICTIC or len(act_words) < 1 or act in _DEICTIC:
        return "understandable_alone", "condition and action must each make sense on their own (more than 'it')"
    if not set(act_words) - set(cond_words):
        return "affects_an_action", "the action only restates the condition: nothing to do differently"
    if any(act == v or act.startswith(v + " ") or act.startswith(v) and len(act) <= len(v) + 2 for v in _VAGUE):
        return "verifiable", f"'{action}' is not observable, so no outcome could confirm or falsify it"
    return None


def _norm(text: str) -> str:
    return _PUNCT.sub(" ", text.lower()).strip()
