"""The cheap tests ``exact_cues`` runs before its case-insensitive patterns (design.md §issue-28, round
two) must be supersets: the lowered-text account hint of the case-insensitive one, and a known
system's name in the lowered text of its pattern's match. Text with letters whose lower case
is longer or ASCII (``İ``, the Kelvin sign) included."""

from __future__ import annotations

import re

from budget import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hindbrain.recall import cues

PIECES = ["ADMIN", "Admin", "svc-", "SA_", "Root", "guest", "İ", "\u212a", "ſ", "管理员", "普通", "BOT", " ", "-",
          "VPN", "Gateway", "vpn gateway", "crm", "CRM sync", "x", "—", "ǅ"]
texts = st.lists(st.sampled_from(PIECES), max_size=10).map("".join)
HINT_CASE_INSENSITIVE = re.compile(cues._ACCOUNT_HINT.pattern, re.ASCII | re.IGNORECASE)


@settings(max_examples=examples(500), deadline=None)
@given(texts)
def test_the_lowered_hint_finds_whatever_the_case_insensitive_one_finds(text):
    if HINT_CASE_INSENSITIVE.search(text):
        assert cues._ACCOUNT_HINT.search(text.lower())


@settings(max_examples=examples(500), deadline=None)
@given(texts, st.sampled_from(["vpn gateway", "crm sync", "admin", "crm"]))
def test_a_system_pattern_matches_only_where_its_name_is_in_the_lowered_text(text, name):
    if cues._system_pattern(name).search(text):
        assert name in text.lower()
    assert (f"system:{name}" in cues.exact_cues(text, [name])) == bool(cues._system_pattern(name).search(text))


def test_known_systems_and_accounts_are_still_found():
    found = cues.exact_cues("The VPN Gateway rejected svc-backup and the ADMIN", ["vpn gateway"])
    assert {"system:vpn gateway", "account:svc-backup", "account:admin"} <= found


@settings(max_examples=examples(500), deadline=None)
@given(st.from_regex(cues._ALLCAPS, fullmatch=True))
def test_two_letters_counts_the_letters_of_every_allcaps_match(word):
    match = cues._ALLCAPS.fullmatch(word)
    if match:  # the lookarounds may refuse what the generator made
        assert cues._two_letters(word) == (sum(c.isalpha() for c in word) >= 2)


def test_a_capital_and_digits_is_no_system():
    found = cues.exact_cues("A1 and E404 on the VPN")
    assert "system:a1" not in found and "system:e404" not in found and "system:vpn" in found
    assert "system:crm2" in cues.exact_cues("CRM2 is down")


CODE_PIECES = ["ORA", "-", "00942", "0x", "0X", "8007", "0005", "E", "1234", "ERR", "_", "CONN", "ENOENT", " ", "x",
               "—", "‐", "TS", "2345", "a"]


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(st.sampled_from(CODE_PIECES), max_size=8).map("".join))
@example("0X8007")
@example("ORA-00942")
@example("x 0x80070005 E1234")
def test_the_code_gates_are_supersets(text):
    """A dash-number code needs "-" and a hex code "0x"/"0X": the substring gates skip no match."""
    ungated = {f"code:{m.group(0).lower()}" for pattern, _ in cues._CODE_NEEDS for m in pattern.finditer(text)}
    found = cues.exact_cues(text)
    assert {c for c in ungated if not c[5:].isdigit()} <= found


# Each rewritten pattern (its first character before its look-behind) and the look-behind-first form it
# replaced: the same matches at the same places, whatever the text.
LOOKBEHIND_FIRST = {
    "_HANDLE": (r"(?<![\w.@])@[a-z][a-z0-9_-]*[a-z0-9]", re.ASCII | re.IGNORECASE),
    "_PATH": (r"(?<![\w./:~-])(?:/[a-z0-9_.~%-]+)+/?", re.ASCII | re.IGNORECASE),
    "_HTTP": (r"(?<![\w.,/:#+])(?<!\d-)([45]\d\d)(?!\w|[.,]\d)", re.ASCII),
    "_ALLCAPS": (r"(?<![\w-])[A-Z][A-Z0-9]{1,5}(?!\w|-\d)", re.ASCII),
    "_CAMEL": (r"(?<![\w-])[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+(?!\w)", re.ASCII),
    0: (r"(?<![\w-])[A-Z]{2,5}-\d{3,6}(?!\w)", re.ASCII),
    1: (r"(?<![\w-])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?!\w)", re.ASCII),
    2: (r"(?<!\w)0x[0-9a-f]{4,16}(?!\w)", re.ASCII | re.IGNORECASE),
    3: (r"(?<![\w-])[A-Z]{1,3}\d{3,6}(?!\w)", re.ASCII),
    4: (r"(?<!\w)E(?:NOENT|ACCES|PERM|EXIST|PIPE|CONN(?:REFUSED|RESET|ABORTED)|TIMEDOUT|ADDRINUSE)(?!\w)", re.ASCII),
}
SCAN_PIECES = ["@", "ops", "a", "Z", ".", ",", "/", ":", "#", "+", "-", "_", "~", "4", "5", "03", "404", "9", "0x",
               "0X", "8007", "ORA", "00942", "ERR", "CONN", "ENOENT", "E", "TS", "Vpn", "VpnGateway", "CRM", "é", "—",
               "状态码", " ", "\n", "K", "ſ"]


def _matches(pattern: re.Pattern, text: str) -> list:
    return [(m.span(), m.groups()) for m in pattern.finditer(text)]


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.sampled_from(SCAN_PIECES), max_size=12).map("".join))
@example("x/a/b 403 ORA-00942 0x80070005 E1234 ENOENT VpnGateway CRM2 @ops a@b")
@example("4-403 1-404 #500 .404 (404) 404.5 E1234x _E1234 -CRM")
def test_first_character_patterns_match_as_their_lookbehind_first_forms(text):
    for name, (source, flags) in LOOKBEHIND_FIRST.items():
        rewritten = cues._CODES[name] if isinstance(name, int) else getattr(cues, name)
        assert _matches(rewritten, text) == _matches(re.compile(source, flags), text), name


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.sampled_from(["a", "b.", ".", "x.io", "1.2.3.4", "10.0.0", "Host.COM", " ", ".5", "é", "-"]),
                max_size=8).map("".join))
def test_the_host_gate_is_a_superset(text):
    """A text whose dots are never followed by a letter or digit holds no host."""
    if cues._HOST.search(text):
        assert cues._HOST_DOT.search(text)
