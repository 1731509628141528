"""Tokens for lexical recall: lowercased word tokens plus CJK character bigrams.

Chinese has no spaces; character bigrams match it without a segmenter (jieba ran ~8x
slower here) and are what ClickHouse's ``ngrams(2)`` index uses too. A lone CJK character
is kept as a unigram so one-character words still match.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from hindbrain.recall import _scan

_CJK_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
# A word's characters exclude CJK: "bart在圣诞节晚会上跳舞" is "bart" and the run's bigrams. Without
# the exclusion the word alternative swallowed the CJK run after a Latin name or brand, and the
# whole clause became one token that matched nothing (MADial-zh: every memory; plain BM25 held-out
# R@5 20.6 → 49.2 with the fix, docs/recall-quality.md).
_TOKEN = re.compile(rf"[{_CJK_CLASS}]+|[^\W_{_CJK_CLASS}]+(?:[-_.:/@][^\W_{_CJK_CLASS}]+)*")
# The same pattern for ASCII text (no CJK run can occur), where re.ASCII classes are faster.
_ASCII_WORD = re.compile(r"[^\W_]+(?:[-_.:/@][^\W_]+)*", re.ASCII)
_JOINERS = re.compile(r"[-_.:/@]")
_CJK_CHARS = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]+")  # exactly _is_cjk
_CJK_START = "\u3040"


def tokens(text: str) -> list[str]:
    """The lexical tokens of ``text``, in order: each lowercased word (a joined word such as
    "error-503" then its parts), each CJK run's character bigrams (a lone character as itself).
    The loop runs in C (``recall/_scan.c``, ~4x the oracle's speed); ``py_tokens`` is the
    oracle the property tests hold it to."""
    return _scan.tokens(text)


def py_tokens(text: str) -> list[str]:
    """``tokens`` in pure Python: the definition, kept as the oracle of the C loop."""
    text = text.lower()
    if text.isascii():
        runs = _ASCII_WORD.findall(text)
        if all(map(str.isalnum, runs)):  # no joined word ("error-503"): nothing to split
            return runs
        return _with_parts(runs)
    out: list[str] = []
    append, extend = out.append, out.extend
    for run in _TOKEN.findall(text):
        if run[0] >= _CJK_START and _is_cjk(run[0]):
            if len(run) == 1:
                append(run)
            else:
                extend(map(str.__add__, run, run[1:]))  # character bigrams, run[i : i + 2]
        else:
            append(run)
            if not run.isalnum():  # only a joiner can make a matched word non-alphanumeric
                extend(p for p in _JOINERS.split(run) if p)
    return out


SEPARATOR = " — "  # what joins an event's words to its situation (``recall.event_documents.event_doc``)


def joined_tokens(text: str) -> list[str]:
    """``tokens(text)``, with what follows the last ``SEPARATOR`` tokenized once per distinct
    value: an event's situation ("system: IAM / action: …") repeats across a fleet. Exact
    because a token never spans a separator (spaces and a dash join no word), so the tokens of
    ``a + SEPARATOR + b`` are those of ``a`` then those of ``b``."""
    head, sep, tail = text.rpartition(SEPARATOR)
    return [*tokens(head), *repeated_tokens(tail)] if sep else tokens(text)


@lru_cache(maxsize=1 << 14)
def repeated_tokens(text: str) -> tuple[str, ...]:
    """``tokens(text)`` of a text that repeats (a situation, a system's name), cached."""
    return tuple(tokens(text))


def _with_parts(words: list[str]) -> list[str]:
    """Each word, followed by its parts when it is joined: "error-503" also answers "503";
    the whole cue stays a token of its own."""
    out: list[str] = []
    for word in words:
        out.append(word)
        if not word.isalnum():
            out.extend(p for p in _JOINERS.split(word) if p)
    return out


def _is_cjk(ch: str) -> bool:
    o = ord(ch)
    return 0x3400 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or 0x3040 <= o <= 0x30FF or 0xAC00 <= o <= 0xD7AF


def estimate_tokens(text: str) -> int:
    """Prompt tokens a text costs, roughly: one per CJK character, one per 4 other chars. The
    loop in C (``recall/_scan.c``: ~0.3 µs a text where the oracle takes ~2)."""
    return _scan.estimate_tokens(text)


def py_estimate_tokens(text: str) -> int:
    """``estimate_tokens`` in pure Python: the oracle of the C loop."""
    cjk = 0 if text.isascii() else sum(map(len, _CJK_CHARS.findall(text)))
    return max(1, cjk + math.ceil((len(text) - cjk) / 4))
