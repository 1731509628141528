"""The cost of a tenant's pattern, counted before it runs (``hindbrain.service.sql_patterns``): the
position automaton must read patterns as re2 does, and the DFA count must put the measured cliff of
re2's cache (docs/security.md, round twenty-five) on the refused side, with a margin."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.service.sql_patterns import (
    DFA_BUDGET,
    MAX_POSITIONS,
    automaton,
    dfa_bytes,
    like_as_regex,
    literal_strings,
    pattern_refusal,
    readable_pattern,
    regex_refusal,
)
from hindbrain.service.tenant_sql import function_arguments


def accepts(auto, text: str) -> bool:
    """Whether the position automaton matches all of ``text`` (anchored at both ends)."""
    if not text:
        return auto.nullable
    states = {p for p in auto.first if _holds(auto.chars[p], text[0])}
    for char in text[1:]:
        states = {q for p in states for q in auto.follow[p] if _holds(auto.chars[q], char)}
    return bool(states & auto.last)


def _holds(ranges, char: str) -> bool:
    return any(lo <= ord(char) <= hi for lo, hi in ranges)


ATOMS = st.sampled_from(["a", "b", "[ab]", "[^a]", ".", "(?:a|bc)", "(?:)", "c"])
SUFFIXES = st.sampled_from(["", "*", "+", "?", "{2}", "{0,2}", "{1,3}", "{2,}", "*?", "{0}"])


@st.composite
def patterns(draw, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        # one level of nesting: Python's matcher, the oracle, backtracks, and stars in stars in stars over
        # seven letters took it 0.4 s
        atom = draw(patterns(depth + 1)) if depth < 1 and draw(st.booleans()) else draw(ATOMS)
        parts.append(f"(?:{atom}){draw(SUFFIXES)}")
    body = "".join(parts)
    return f"{body}|{draw(ATOMS)}" if draw(st.booleans()) else body


@settings(deadline=None)
@given(patterns(), st.lists(st.text("abc", max_size=7), min_size=1, max_size=12), st.booleans())
def test_the_automaton_matches_what_the_pattern_matches(pattern, texts, caseless):
    """Glushkov's construction, counted repetitions written out, against Python's own matcher."""
    flags = "(?i)" if caseless else ""
    auto = automaton(flags + pattern)
    for text in texts:
        for variant in (text, text.upper()):
            assert accepts(auto, variant) == bool(re.fullmatch(flags + pattern, variant, re.S)), (pattern, variant)


def test_the_measured_cliff_of_re2s_cache_is_refused_and_what_stayed_fast_is_not():
    """Measured over ten 10⁶-character rows (docs/security.md, round twenty-five): re2 kept its DFA for
    ``a[ab]{12}c`` (0.27 s) and thrashed from ``a[ab]{14}c`` (2.5 s) to ``{20}`` (1.8 s a row); ``(?i)``
    and 1,000 letters 0.04 s a row, 1,200 letters 17.8 s."""
    assert regex_refusal("a[ab]{12}c", submatches=False) is None
    for pattern in ("a[ab]{14}c", "a[ab]{20}c", "a" + "[ab]" * 20 + "c", "(?i)" + "a" * 999,
                    like_as_regex("%a" + "_" * 19 + "c%")):
        assert "outgrows re2's cache" in regex_refusal(pattern, submatches=False), pattern[:40]
    assert regex_refusal("(?i)" + "a" * 600 + "b", submatches=False) is None
    # Cyrillic: two bytes a letter in UTF-8, so re2 steps twice per letter, and (?i) folds Я to я;
    # 600 letters took 23.7 s over ten rows of я, 488 0.04 s
    assert "outgrows" in regex_refusal("(?i)" + "Я" * 600 + "b", submatches=False)
    assert regex_refusal("(?i)" + "Я" * 480 + "b", submatches=False) is None
    assert "positions" in regex_refusal("(a|b){1001}", submatches=False)
    assert dfa_bytes(automaton("(?i)" + "a" * 900)) > DFA_BUDGET >= dfa_bytes(automaton("(?i)" + "a" * 600))


def test_a_pattern_cheap_forward_and_dear_backward_is_refused_where_the_start_is_looked_for():
    """``[ab]{20}a[ab]*`` is a small DFA forward and 2²¹ states backward (``extract`` runs both)."""
    assert regex_refusal("[ab]{20}a[ab]*", submatches=False) is None
    assert "backward DFA" in regex_refusal("[ab]{20}a[ab]*", submatches=True)
    assert pattern_refusal("match", ["Identifier text", "Literal '[ab]{20}a[ab]*'"]) is None
    assert "backward" in pattern_refusal("extract", ["Identifier text", "Literal '[ab]{20}a[ab]*'"])


def test_analysts_patterns_pass():
    for pattern in (r"^ERR-\d+", r"(?i)(timeout|denied|forbidden|unauthorized)", r"\d{4}-\d{2}-\d{2}",
                    r"[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}", r"(\w+)=(\w+)", r"\p{Han}+", r"[[:alpha:]]+",
                    r"\Q1+1\E", r"(?U)a+", r"(?P<code>\d+)", r"https?://[^/\s]+(/\S*)?", "x*$", ""):
        assert regex_refusal(pattern, submatches=True) is None, pattern
    assert readable_pattern(r"\pL\P{Greek}\Q.*\E\z(?iU:a)") == r"\w\W\.\*\Z(?i:a)"


def test_patterns_must_be_literals_and_the_engines_literal_is_read_back_exactly():
    assert literal_strings(r"Literal 'a\'b\\n\n' (alias p)") == ["a'b\\n\n"]
    assert literal_strings(r"Literal Array_['x', 'y\'z']") == ["x", "y'z"]
    assert literal_strings("Identifier text") is None and literal_strings("Literal UInt64_3") is None
    for function, arguments in (("match", ["Identifier text", "Identifier text"]),
                                ("splitByRegexp", ["Function concat (children 1)", "Identifier text"]),
                                ("multiMatchAny", ["Identifier text", "Function array (children 1)"]),
                                ("multiMatchAny", ["Identifier text", "Literal 'a'"]),
                                ("like", ["Identifier text", "Identifier p"])):
        assert "must be" in pattern_refusal(function, arguments), function
    assert "edit distance" in pattern_refusal("multiFuzzyMatchAny", ["Identifier t", "Literal UInt64_2",
                                                                     "Literal Array_['a']"])
    assert pattern_refusal("multiFuzzyMatchAny", ["Identifier t", "Literal UInt64_1", "Literal Array_['a']"]) is None
    assert pattern_refusal("lower", ["Identifier text"]) is None and MAX_POSITIONS == 1000


def test_the_arguments_of_a_function_are_read_from_the_engines_tree():
    ast = ["SelectWithUnionQuery (children 1)", " ExpressionList (children 1)", "  SelectQuery (children 1)",
           "   ExpressionList (children 2)", "    Function match (children 1)", "     ExpressionList (children 2)",
           "      Function lower (children 1)", "       ExpressionList (children 1)", "        Identifier text",
           "      Literal 'a+'", "    Function sequenceMatch (children 2)", "     ExpressionList (children 1)",
           "      Identifier t", "     ExpressionList (children 1)", "      Literal '(?1)'",
           "    Function now (children 1)", "     ExpressionList"]
    assert function_arguments(ast, 4) == ["Function lower (children 1)", "Literal 'a+'"]
    assert function_arguments(ast, 6) == ["Identifier text"]
    assert function_arguments(ast, 10) == ["Identifier t"]  # the parameters are not its arguments
    assert function_arguments(ast, 15) == []
