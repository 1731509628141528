"""Tokens for lexical recall: lowercased word tokens plus CJK character bigrams.

Chinese has no spaces; character bigrams match it without a segmenter (jieba ran ~8x
slower here) and are what ClickHouse's ``ngrams(2)`` index uses too. A lone CJK character
is kept as a unigram so one-character words still match.
"""

from __future__ import annotations

import math
import re

_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+|[^\W_]+(?:[-_.:/@][^\W_]+)*")
_CJK_START = "\u3040"


def tokens(text: str) -> list[str]:
    out: list[str] = []
    for run in _TOKEN.findall(text.lower()):
        if run[0] >= _CJK_START and _is_cjk(run[0]):
            if len(run) == 1:
                out.append(run)
            else:
                out.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            out.append(run)
            if any(c in run for c in "-_.:/@"):
                # "error-503" also answers "503"; the whole cue stays a token of its own.
                out.extend(p for p in re.split(r"[-_.:/@]", run) if p)
    return out


def _is_cjk(ch: str) -> bool:
    o = ord(ch)
    return 0x3400 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or 0x3040 <= o <= 0x30FF or 0xAC00 <= o <= 0xD7AF


def estimate_tokens(text: str) -> int:
    """Prompt tokens a text costs, roughly: one per CJK character, one per 4 other chars."""
    cjk = sum(1 for ch in text if ch >= _CJK_START and _is_cjk(ch))
    return max(1, cjk + math.ceil((len(text) - cjk) / 4))
