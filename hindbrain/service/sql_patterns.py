"""What a tenant's regular expression and LIKE pattern may cost: the size of the automaton that runs it.

ClickHouse checks ``max_execution_time`` and a cancel between blocks, never inside a function, and one
``match`` over one long row can run for minutes (docs/security.md, round twenty-five: ``(?i)`` and 1,200
letters over a 10⁶-character row 17.8 s, ``a[ab]{20}c`` 1.8 s a row, both against a 10 s limit that is
checked only after the block). re2 searches with a lazily built DFA whose states are *sets* of the
pattern's positions; while they fit its cache (a few MB) each byte costs a table look-up, and when they
do not it rebuilds a state for nearly every byte, then falls back to its NFA: the cost per byte becomes
the pattern's size. Which patterns overflow is not a matter of their length: 11 characters
(``a[ab]{20}c``) reach 2²¹ states, 1,200 (``(?i)a…ab``) 1,200 states of 600 positions each.

So the sandbox builds the same automaton itself, before the query runs: a position (Glushkov) automaton of
the pattern, then the subset construction re2's DFA would make, forward (the unanchored search every
function runs) and backward (anchored at the match's end: where ``extract`` and ``replaceRegexp*`` look
for its start). A pattern whose DFA would outgrow ``DFA_BUDGET`` bytes (counted as re2 counts a state:
its positions and one transition per byte class), or has more than ``MAX_POSITIONS`` positions once
counted repetitions are written out, is refused with what to write instead. Every pattern must be a
literal (a column or computed pattern is compiled per row: its cost is the attacker's choice).

Pure functions: no IO, nothing of the engine's. Python's own parser reads the pattern (re2's syntax is
nearly a subset; its few extras are rewritten first, ``readable_pattern``); the automaton follows re2's
meaning of ``\\w``, ``\\d``, ``\\s`` (ASCII), with non-ASCII letters folded into one wide class.
"""

from __future__ import annotations

import bisect
import functools
import re
import re._constants as sre
import re._parser as sre_parse
from dataclasses import dataclass

# Positions once ``x{n}`` is written out n times: re2's own program is about this size, and its NFA
# (the fallback) costs this many steps a byte. 1,000 matches ClickHouse's own cap on a repetition.
MAX_POSITIONS = 1000
# The DFA's size in bytes, counted as re2 does (a state: 16 bytes, 4 per position, 8 per byte class).
# Measured (docs/security.md, round twenty-five): re2 kept its DFA up to ~2 MB by this count
# (``(?i)`` and 1,000 letters, ``a[ab]{12}c``) and thrashed from ~2.9 MB (1,200 letters, ``a[ab]{14}c``);
# half the lower one leaves a margin for the byte-level states of UTF-8 this count does not see.
DFA_BUDGET = 1 << 20
_MAX_CODE = 0x10FFFF
_WORD = ((48, 57), (65, 90), (95, 95), (97, 122), (0x80, _MAX_CODE))  # re2's \w, plus non-ASCII letters
_CATEGORIES = {
    sre.CATEGORY_DIGIT: ((48, 57),), sre.CATEGORY_WORD: _WORD, sre.CATEGORY_SPACE: ((9, 13), (32, 32)),
    sre.CATEGORY_LINEBREAK: ((10, 10),),
}
_NEGATED = {sre.CATEGORY_NOT_DIGIT: sre.CATEGORY_DIGIT, sre.CATEGORY_NOT_WORD: sre.CATEGORY_WORD,
            sre.CATEGORY_NOT_SPACE: sre.CATEGORY_SPACE, sre.CATEGORY_NOT_LINEBREAK: sre.CATEGORY_LINEBREAK}
_FOLDED_RANGE = 512
_POSIX = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "0-9A-Za-z", "upper": "A-Z", "lower": "a-z", "space": r"\s",
          "word": r"\w", "xdigit": "0-9A-Fa-f", "blank": r" \t"}


class PatternRefused(ValueError):
    """The pattern may not run in tenant SQL; the message says why and what to write instead."""


@dataclass(frozen=True)
class Automaton:
    """A pattern's position automaton: each position's characters (code point ranges), the positions a
    match may start and end with, and which may follow which."""
    chars: tuple[tuple[tuple[int, int], ...], ...]
    first: frozenset[int]
    last: frozenset[int]
    follow: tuple[frozenset[int], ...]
    nullable: bool


def readable_pattern(pattern: str) -> str:
    """``pattern`` (re2 syntax) in the syntax Python's parser reads, with the same automaton's shape:
    ``\\Q…\\E`` quoted, ``\\pL`` / ``\\p{Greek}`` as ``\\w`` (a wide class), ``\\C`` as ``.``, ``\\z`` as
    ``\\Z``, POSIX classes spelled out, and re2's ungreedy flag ``U`` dropped (it changes no state)."""
    text = re.sub(r"\\Q(.*?)(?:\\E|$)", lambda m: re.escape(m.group(1)), pattern, flags=re.S)
    text = re.sub(r"\\[pP](\{[^}]*\}|.)", lambda m: r"\w" if m.group(0)[1] == "p" else r"\W", text)
    text = text.replace(r"\C", ".").replace(r"\z", r"\Z")
    text = re.sub(r"\[:(\^?)([a-z]+):\]", lambda m: _POSIX.get(m.group(2), r"\x00-\x7f"), text)
    return re.sub(r"\(\?([imsU]*-?[imsU]*)([:)])", _without_ungreedy, text)


def _without_ungreedy(group: re.Match) -> str:
    """A flag group ``(?flags)`` / ``(?flags:`` without re2's ``U``; gone if no flag is left."""
    flags = group.group(1).replace("U", "").rstrip("-")
    if not flags and group.group(2) == ")":
        return ""
    return f"(?{flags}{group.group(2)}"


def automaton(pattern: str) -> Automaton:
    """The position automaton of ``pattern`` (re2 syntax); ``PatternRefused`` if it cannot be read or
    has more than ``MAX_POSITIONS`` positions."""
    try:
        parsed = sre_parse.parse(readable_pattern(pattern))
    except (re.error, OverflowError, RecursionError) as exc:
        raise PatternRefused(f"a pattern this sandbox cannot read ({exc})") from None
    builder = _Builder(ignorecase=bool(parsed.state.flags & sre.SRE_FLAG_IGNORECASE))
    first, last, nullable = builder.sequence(list(parsed))
    return Automaton(tuple(builder.chars), frozenset(first), frozenset(last),
                     tuple(frozenset(f) for f in builder.follow), nullable)


class _Builder:
    """Glushkov's construction over Python's parse tree, counted repetitions written out."""

    def __init__(self, ignorecase: bool):
        self.chars: list[tuple[tuple[int, int], ...]] = []
        self.follow: list[set[int]] = []
        self.ignorecase = ignorecase

    def position(self, ranges: tuple[tuple[int, int], ...]) -> int:
        if len(self.chars) >= MAX_POSITIONS:
            raise PatternRefused(f"more than {MAX_POSITIONS} positions once its repetitions are written out")
        self.chars.append(ranges)
        self.follow.append(set())
        return len(self.chars) - 1

    def link(self, last: set[int], first: set[int]) -> None:
        for p in last:
            self.follow[p] |= first

    def sequence(self, items: list) -> tuple[set[int], set[int], bool]:
        """(first, last, nullable) of the concatenation of ``items``."""
        return self.concatenation([self.item(op, arg) for op, arg in items])

    def concatenation(self, parts: list[tuple[set[int], set[int], bool]]) -> tuple[set[int], set[int], bool]:
        """(first, last, nullable) of ``parts`` one after the other, each part's follow links made."""
        first, last, nullable = set(), set(), True
        for part_first, part_last, part_nullable in parts:
            self.link(last, part_first)
            first |= part_first if nullable else set()
            last = part_last | (last if part_nullable else set())
            nullable = nullable and part_nullable
        return first, last, nullable

    def item(self, op, arg) -> tuple[set[int], set[int], bool]:
        if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN):
            p = self.position(self.ranges(op, arg))
            return {p}, {p}, False
        if op is sre.AT:  # an anchor or \b: no character, no state of its own
            return set(), set(), True
        if op is sre.BRANCH:
            parts = [self.sequence(list(b)) for b in arg[1]]
            return (set().union(*(part[0] for part in parts)), set().union(*(part[1] for part in parts)),
                    any(part[2] for part in parts))
        if op is sre.SUBPATTERN or op is getattr(sre, "ATOMIC_GROUP", None):
            sub = arg[-1] if op is sre.SUBPATTERN else arg
            saved = self.ignorecase
            if op is sre.SUBPATTERN:  # (?i:...) adds the flag, (?-i:...) removes it
                added, removed = arg[1] & sre.SRE_FLAG_IGNORECASE, arg[2] & sre.SRE_FLAG_IGNORECASE
                self.ignorecase = bool(saved or added) and not removed
            try:
                return self.sequence(list(sub))
            finally:
                self.ignorecase = saved
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", sre.MAX_REPEAT)):
            return self.repeat(*arg)
        raise PatternRefused(f"{str(op).lower()}: not a construct re2 runs")

    def repeat(self, low: int, high, sub) -> tuple[set[int], set[int], bool]:
        """``sub{low,high}`` as ``low`` copies and then ``high - low`` optional ones; unbounded, the last
        copy loops on itself (``x{2,}`` is ``xx+``, ``x*`` one optional looping copy)."""
        unbounded = high is sre.MAXREPEAT
        count = max(low, 1) if unbounded else high
        parts = []
        for k in range(count):
            first, last, nullable = self.sequence(list(sub))
            if unbounded and k == count - 1:
                self.link(last, first)
            parts.append((first, last, nullable or k >= low))
        return self.concatenation(parts)

    def ranges(self, op, arg) -> tuple[tuple[int, int], ...]:
        if op is sre.ANY:
            return ((0, _MAX_CODE),)
        if op in (sre.LITERAL, sre.NOT_LITERAL):
            chars = self.cased(((arg, arg),))
            return _complement(chars) if op is sre.NOT_LITERAL else chars
        ranges: list[tuple[int, int]] = []
        negate = False
        for kind, value in arg:
            if kind is sre.NEGATE:
                negate = True
            elif kind is sre.LITERAL:
                ranges.append((value, value))
            elif kind is sre.RANGE:
                ranges.append(value)
            elif kind is sre.CATEGORY:
                base = _NEGATED.get(value, value)
                chars = _CATEGORIES.get(base, ((0, _MAX_CODE),))
                ranges.extend(_complement(chars) if value in _NEGATED else chars)
        chars = self.cased(_merged(ranges))
        return _complement(chars) if negate else chars

    def cased(self, ranges) -> tuple[tuple[int, int], ...]:
        """``ranges`` and, under ``(?i)``, the other cases of the letters in them (a range wider than
        ``_FOLDED_RANGE`` holds most of its letters' other cases already)."""
        if not self.ignorecase:
            return _merged(ranges)
        extra = [(ord(other), ord(other)) for lo, hi in ranges if hi - lo < _FOLDED_RANGE
                 for c in range(lo, hi + 1) for other in {chr(c).lower(), chr(c).upper()} if len(other) == 1]
        return _merged([*ranges, *extra])


def _merged(ranges) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def _complement(ranges) -> tuple[tuple[int, int], ...]:
    out, start = [], 0
    for lo, hi in _merged(ranges):
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    return tuple(out + ([(start, _MAX_CODE)] if start <= _MAX_CODE else []))


def byte_classes(chars) -> list[int]:
    """The first code point of each class of characters no position tells apart (re2's byte map)."""
    cuts = {0}
    for ranges in chars:
        for lo, hi in ranges:
            cuts.update((lo, hi + 1))
    return sorted(c for c in cuts if c <= _MAX_CODE)


def dfa_bytes(auto: Automaton, budget: int = DFA_BUDGET, backward: bool = False) -> int:
    """The size of the DFA re2 would build for ``auto`` (16 bytes a state, 4 a position in it, 8 a byte
    class), by subset construction, stopping once it passes ``budget``. Forward: the unanchored search
    (a match may start at any byte). ``backward``: from the match's end, anchored (``extract``'s second
    pass)."""
    classes = byte_classes(auto.chars)
    accepts = [0] * len(classes)  # per class, the positions whose characters hold it (a bit mask)
    for p, ranges in enumerate(auto.chars):
        for lo, hi in ranges:
            for k in range(bisect.bisect_left(classes, lo), bisect.bisect_right(classes, hi)):
                accepts[k] |= 1 << p
    follow = [_mask(f) for f in auto.follow]
    if backward:
        inverse = [0] * len(follow)
        for p, f in enumerate(auto.follow):
            for q in f:
                inverse[q] |= 1 << p
        follow, start_mask, restart = inverse, _mask(auto.last), 0
    else:
        start_mask = restart = _mask(auto.first)
    per_state = 16 + 8 * (len(classes) + 1)
    widths = [_utf8_width(ranges) for ranges in auto.chars]
    wide = [_mask(p for p, w in enumerate(widths) if w >= least) for least in (2, 3, 4)]
    seen, todo, size = {-1}, [-1], 0  # -1: the start state, before any character
    while todo:
        state = todo.pop()
        size += state_bytes(state, per_state, wide)
        if size > budget:
            return size
        reachable = start_mask if state < 0 else restart
        rest = state if state >= 0 else 0
        while rest:
            low = rest & -rest
            reachable |= follow[low.bit_length() - 1]
            rest ^= low
        for mask in accepts:
            nxt = reachable & mask
            if nxt and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return size


def state_bytes(state: int, per_state: int, wide: list[int]) -> int:
    """re2's bytes for one state of ours: re2 steps a byte at a time, so a character of ``w`` bytes in
    UTF-8 makes ``w`` states of it (``(?i)`` and 600 Cyrillic letters thrashed like 1,200 Latin ones).
    ``wide[w - 2]``: the positions whose characters take ``w`` or more bytes (a bit mask)."""
    if state < 0:
        return per_state + 4
    width = 1 + sum(1 for mask in wide if state & mask)
    return (per_state + 4 * bin(state).count("1")) * width


def _utf8_width(ranges) -> int:
    """The most bytes a character of ``ranges`` takes in UTF-8 (1 to 4)."""
    top = max(hi for _, hi in ranges)
    return 1 if top < 0x80 else 2 if top < 0x800 else 3 if top < 0x10000 else 4


def _mask(positions) -> int:
    return sum(1 << p for p in positions)


# A dashboard sends the same patterns again and again: 0.5 ms of analysis for four of them was ~12% of
# such a query (docs/security.md, round twenty-five); the answer depends on the pattern alone. Only short
# patterns are kept: 1,024 kept patterns of a megabyte each would hold a gigabyte.
_CACHED_PATTERN = 4096


def regex_refusal(pattern: str, submatches: bool) -> str | None:
    """``analysed_refusal``, remembered for patterns up to ``_CACHED_PATTERN`` characters."""
    if len(pattern) > _CACHED_PATTERN:
        return analysed_refusal(pattern, submatches)
    return _remembered_refusal(pattern, submatches)


def analysed_refusal(pattern: str, submatches: bool) -> str | None:
    """Why re2 may not run ``pattern`` over a tenant's rows (its DFA would outgrow re2's cache, so each
    byte would cost the pattern's size), or None. ``submatches``: the function also looks for where
    the match starts (``extract``, ``replaceRegexp*``), a backward pass with a DFA of its own."""
    try:
        auto = automaton(pattern)
    except PatternRefused as exc:
        return str(exc)
    for backward in (False, True) if submatches else (False,):
        size = dfa_bytes(auto, backward=backward)
        if size > DFA_BUDGET:
            return (f"its automaton outgrows re2's cache ({'backward' if backward else 'forward'} DFA over "
                    f"{DFA_BUDGET >> 10} KiB), so each byte of each row would cost the whole pattern")
    return None


_remembered_refusal = functools.lru_cache(maxsize=1024)(analysed_refusal)


def like_as_regex(pattern: str) -> str:
    """The regular expression ClickHouse runs for a LIKE ``pattern``: ``%`` any run, ``_`` one character,
    ``\\`` quotes the next."""
    out, chars, k = [], pattern, 0
    while k < len(chars):
        c = chars[k]
        if c == "\\" and k + 1 < len(chars):
            out.append(re.escape(chars[k + 1]))
            k += 2
            continue
        out.append({"%": "(?s:.*)", "_": "(?s:.)"}.get(c, re.escape(c)))
        k += 1
    return "".join(out)


@dataclass(frozen=True)
class PatternArgument:
    """Which argument of a function is a pattern, and how the engine runs it: ``regex`` (re2), ``like``
    (re2 on the LIKE pattern's translation), ``vectorscan`` (an array of patterns, hyperscan's engine,
    linear by construction; their lengths are bounded by ``TENANT_LIMITS``). ``backward``: re2 also looks
    for where each match starts (a second DFA). ``ignorecase``: the function adds ``(?i)`` itself.
    ``distance``: the argument holding a fuzzy match's edit distance (vectorscan's cost grows with it)."""
    index: int
    kind: str
    backward: bool = True
    ignorecase: bool = False
    distance: int | None = None


_SEARCH, _SUBMATCH = PatternArgument(1, "regex", backward=False), PatternArgument(1, "regex")
PATTERN_ARGUMENTS: dict[str, PatternArgument] = {
    **dict.fromkeys(("match", "notmatch", "regexp_matches"), _SEARCH),
    **dict.fromkeys(("matchcaseinsensitive", "notmatchcaseinsensitive"),
                    PatternArgument(1, "regex", backward=False, ignorecase=True)),
    **dict.fromkeys(("extract", "extractall", "extractgroups", "extractallgroups", "extractallgroupshorizontal",
                     "extractallgroupsvertical", "regexpextract", "regexp_extract", "regexp_substr", "countmatches",
                     "replaceregexpone", "replaceregexpall", "regexp_replace"), _SUBMATCH),
    # its sixth argument may hold the flag ``i``: counted as if it always did
    **dict.fromkeys(("regexpposition", "regexpinstr", "regexp_instr"), PatternArgument(1, "regex", ignorecase=True)),
    "splitbyregexp": PatternArgument(0, "regex"),
    **dict.fromkeys(("like", "notlike", "mapcontainskeylike", "mapextractkeylike", "mapcontainsvaluelike",
                     "mapextractvaluelike"), PatternArgument(1, "like", backward=False)),
    **dict.fromkeys(("multimatchany", "multimatchanyindex", "multimatchallindices"), PatternArgument(1, "vectorscan")),
    **dict.fromkeys(("multifuzzymatchany", "multifuzzymatchanyindex", "multifuzzymatchallindices"),
                    PatternArgument(2, "vectorscan", distance=1)),
}
# A fuzzy match's edit distance: each step multiplies vectorscan's work a byte. Measured over ten
# 10⁶-character rows (docs/security.md, round twenty-five): one 200-character pattern at distance 1
# 0.36 s, 2 0.81 s, 3 8.1 s; ten such patterns (the length limits' most) at distance 1 0.8 s.
MAX_FUZZY_DISTANCE = 1
_QUOTED = r"'((?:[^'\\]|\\.)*)'"
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "f": "\f", "a": "\a", "v": "\v"}


def literal_strings(node: str) -> list[str] | None:
    """The string(s) of an ``EXPLAIN AST`` line that is a string literal (``Literal 'a\\'b'``) or an
    array of them (``Literal Array_['a', 'b']``), with an optional ``(alias x)``; None for anything else."""
    text = re.sub(r" \(alias [^()]*\)$", "", node)
    if m := re.fullmatch(f"Literal {_QUOTED}", text, flags=re.S):
        return [_unquoted(m.group(1))]
    if m := re.fullmatch(rf"Literal Array_\[((?:{_QUOTED}(?:, )?)*)\]", text, flags=re.S):
        return [_unquoted(s) for s in re.findall(_QUOTED, m.group(1), flags=re.S)]
    return None


def _unquoted(body: str) -> str:
    return re.sub(r"\\(x[0-9a-fA-F]{2}|.)", lambda m: chr(int(m.group(1)[1:], 16)) if len(m.group(1)) == 3
                  else _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.S)


def pattern_refusal(function: str, arguments: list[str]) -> str | None:
    """Why ``function`` may not run with these ``arguments`` (their ``EXPLAIN AST`` lines), or None: its
    pattern is not a literal, or its automaton would make one row cost the pattern's size a byte."""
    spec = PATTERN_ARGUMENTS.get(function.lower())
    if spec is None or spec.index >= len(arguments):
        return None  # not a pattern function, or a wrong arity the engine refuses itself
    patterns, single = literal_strings(arguments[spec.index]), arguments[spec.index].startswith("Literal '")
    if patterns is None or single == (spec.kind == "vectorscan"):
        kind = "an array of string literals" if spec.kind == "vectorscan" else "a string literal"
        return (f"{function}(): its pattern (argument {spec.index + 1}) must be {kind}: a pattern from a "
                f"column or an expression is compiled for each row, at a cost the rows choose; write the "
                f"pattern itself, in quotes (or as a {{name:String}} parameter)")
    if spec.kind == "vectorscan":
        return None if spec.distance is None else distance_refusal(function, arguments[spec.distance])
    (pattern,) = patterns
    regex = like_as_regex(pattern) if spec.kind == "like" else pattern
    reason = regex_refusal(("(?i)" if spec.ignorecase else "") + regex, spec.backward)
    if reason is None:
        return None
    shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
    return (f"{function}(): pattern {shown!r}: {reason}; the engine checks the time limit only between "
            f"blocks. Write a simpler pattern (fewer counted repetitions, a shorter case-insensitive "
            f"literal), or test for a match with multiMatchAny(haystack, [pattern]) (vectorscan, linear)")


def distance_refusal(function: str, argument: str) -> str | None:
    """Why a fuzzy match's edit distance (its ``EXPLAIN AST`` line) may not run, or None."""
    found = re.fullmatch(r"Literal (?:UInt64_)?(\d+)(?: \(alias [^()]*\))?", argument)
    if found and int(found.group(1)) <= MAX_FUZZY_DISTANCE:
        return None
    return (f"{function}(): its edit distance must be a literal of at most {MAX_FUZZY_DISTANCE}: each step "
            f"more multiplies the work on every byte (3 over ten 10^6-character rows took 8 s); for looser "
            f"similarity write ngramDistance(haystack, needle)")
