"""A literal prefilter for regular expressions whose matches are finitely many strings (issue 28, point 3).

The provenance cues (``recall.provenance``) run several large alternations of cue words over every
perceived event's text; Python's backtracking engine tries every alternative at every position, so a
short text costs ~25 µs whatever it holds, and joining a batch's texts into one string does not help
(the cost is per character, not per call: one scan over a joined batch measured slower than the
calls it replaced). Most texts hold no cue word at all. An Aho–Corasick automaton (``pyahocorasick``,
C) finds whether a text contains any of a set of literal strings in one pass, ~1 µs a text.

``literals(pattern)`` expands a pattern whose repetitions are bounded into every string it can
consume, with its assertions (``\\b``, look-arounds, anchors) dropped. Every match of the pattern is
one of those strings, so a text containing none of them cannot match: ``Prefilter.may_match`` is a
superset test, exact by construction, and the regular expression still decides on the texts it
passes. A pattern the expansion cannot bound (``*``, ``+``, ``\\w``, a negated class, a large
range) raises ``ValueError`` at import: the prefilter is then not exact and must not be used.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from re import _constants as c  # the stdlib's own pattern parser (private, as in 3.11–3.13): the
from re import _parser as sre_parse  # expansion reads exactly what ``re`` compiles

import ahocorasick

from hindbrain.recall import _cues, _scan

MAX_LITERALS = 20_000  # an expansion past this is a pattern to test some other way


def literals(pattern: str | re.Pattern, flags: int = 0) -> frozenset[str]:
    """Every string ``pattern`` can consume, its assertions dropped (see the module). Case-sensitive:
    meant for patterns without ``re.IGNORECASE`` run over lowered text."""
    if isinstance(pattern, re.Pattern):
        pattern, flags = pattern.pattern, pattern.flags
    if flags & re.IGNORECASE:
        raise ValueError("literals: a case-insensitive pattern is not expanded (lower the text instead)")
    return frozenset(_expand(sre_parse.parse(pattern, flags)))


def _expand(items) -> set[str]:
    out = {""}
    for op, arg in items:
        out = _product(out, _one(op, arg))
    return out


def _product(left: set[str], right: set[str]) -> set[str]:
    if len(left) * len(right) > MAX_LITERALS:
        raise ValueError(f"literals: more than {MAX_LITERALS} strings")
    return {a + b for a in left for b in right}


def _one(op, arg) -> set[str]:
    if op is c.LITERAL:
        return {chr(arg)}
    if op is c.IN:
        return _charset(arg)
    if op is c.BRANCH:
        found: set[str] = set()
        for branch in arg[1]:
            found |= _expand(branch)
        return found
    if op is c.SUBPATTERN:
        return _expand(arg[-1])
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
        low, high, body = arg
        if high is c.MAXREPEAT or high > 8:
            raise ValueError("literals: an unbounded repetition")
        inner, found, run = _expand(body), set(), {""}
        for count in range(high + 1):
            if count >= low:
                found |= run
            if count < high:
                run = _product(run, inner)
        return found
    if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
        return {""}  # an assertion consumes nothing: dropping it only lets more texts through
    raise ValueError(f"literals: {op} cannot be expanded")


def _charset(items) -> set[str]:
    found: set[str] = set()
    for op, arg in items:
        if op is c.LITERAL:
            found.add(chr(arg))
        elif op is c.RANGE and arg[1] - arg[0] < 64:
            found.update(map(chr, range(arg[0], arg[1] + 1)))
        else:
            raise ValueError(f"literals: a character class with {op} cannot be expanded")
    return found


class Prefilter:
    """Whether a text contains any of the literals of some patterns (and of some plain strings)."""

    def __init__(self, *patterns: str | re.Pattern, strings: tuple[str, ...] = ()):
        found = set(strings)
        for pattern in patterns:
            found |= literals(pattern)
        if not found or "" in found:  # a pattern that can match the empty string matches every text
            raise ValueError("Prefilter: an empty literal (or none) cannot filter")
        self.literals = frozenset(found)
        self._needles = tuple(sorted(self.literals))
        self._automaton = ahocorasick.Automaton()
        for s in self.literals:
            self._automaton.add_word(s, None)
        self._automaton.make_automaton()

    def matching(self, joined: str, starts: list[int]) -> list[int]:
        """The texts (numbers, in order) of ``joined`` (texts beginning at ``starts``, apart by a
        separator no literal holds) that contain a literal: ``may_match`` of each, in one C pass
        (``_scan.holding_any``: at a position only the literals beginning with its two characters are
        tried; ~0.4 µs a bench text against the automaton's ~1.2, issue 28). ``automaton_matching`` is
        its oracle."""
        return _scan.holding_any(joined, starts, self._needles)

    def lowered_matching(self, texts: list[str]) -> list[int]:
        """The texts (numbers, in order) whose lower case contains a literal: ``may_match(text.lower())`` of
        each, in one C pass that lowers each text as it reads it (``_cues.lowered_holding``: no lowered copy,
        join or offsets a text, issue 28 round eighteen)."""
        return _cues.lowered_holding(texts, self._needles)

    def automaton_matching(self, joined: str, starts: list[int]) -> list[int]:
        """``matching`` by the automaton: one pass that skips to the next text at a text's first literal."""
        found: list[int] = []
        after = -1  # the end of the last text found: its further literals are skipped
        for end, _ in self._automaton.iter(joined):  # one pass: an iterator from an offset copies the text
            if end < after:
                continue
            k = bisect_right(starts, end) - 1
            found.append(k)
            after = starts[k + 1] if k + 1 < len(starts) else len(joined)
        return found

    def may_match(self, text: str) -> bool:
        """False only when ``text`` contains none of the literals (so none of the patterns can match)."""
        for _ in self._automaton.iter(text):
            return True
        return False
