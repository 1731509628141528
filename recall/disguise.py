"""What a text says once its disguise is taken off, for the provenance cues (design.md §issue-27, point 5).

A cue word hidden from a regular expression is still read by the model it reaches: "ac\u200bcount",
Cyrillic "аccount", "&#97;ccount", "ＡＣＣＯＵＮＴ", or the whole instruction as a base64 run
the agent is asked to decode. ``revealed`` undoes each of these before the cues look:

1. HTML entities are unescaped (twice: "&amp;#97;" is one more layer);
2. NFKC folds compatibility forms (full-width letters and digits, ligatures, superscripts);
3. format characters (Unicode category Cf: zero-width spaces and joiners, bidi embeddings and
   isolates, the soft hyphen, the BOM) are removed: they change no word a reader sees;
4. every letter the Unicode confusables table (UTS #39, through the maintained
   ``confusable-homoglyphs`` package) lists as a look-alike of a Latin letter is replaced by
   that letter (its *skeleton*), CJK and kana excepted (they are words of their own);
5. each plausible base64 run (16+ characters of the alphabet) that decodes to printable UTF-8
   text is appended, decoded, so its words are cued too.

Pure and cached per character; a plain ASCII text without "&" takes a fast path (step 5 only).
"""

from __future__ import annotations

import base64
import binascii
import html
import re
import unicodedata
from functools import cache

from hindbrain.recall import _cues, _scan

_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{16,}={0,2}")
# Every run holds 16 characters of the alphabet in a row: a search without the look-behind (tried at
# every position) passes most texts ~5x faster than the run scan itself (issue 28).
_MAY_RUN = re.compile(r"[A-Za-z0-9+/_-]{16}")
_CJK_FROM = 0x2E80  # CJK radicals onward (kana, ideographs, Hangul): no Latin look-alike is meant there
MIN_PRINTABLE = 0.9  # share of a decoded run's characters that must be printable to count as text


@cache
def _table() -> dict[int, str | None]:
    """The ``str.translate`` table of steps 3 and 4: every format character (Cf) → removed,
    every non-ASCII Latin look-alike (UTS #39 data) → the ASCII letter it mimics. Built once
    (a scan of the code points that can be Cf), then each text is one C-level pass."""
    from confusable_homoglyphs import confusables  # loads its JSON table once

    table: dict[int, str | None] = {}
    for char, entries in confusables.confusables_data.items():
        if len(char) != 1 or char.isascii() or ord(char) >= _CJK_FROM:
            continue
        latin = next((e["c"] for e in entries if len(e["c"]) == 1 and e["c"].isascii() and e["c"].isalpha()), None)
        if latin:
            table[ord(char)] = latin
    for point in _FORMAT_RANGES:
        if unicodedata.category(chr(point)) == "Cf":
            table[point] = None
    return table


# Where format characters live: the BMP, and the few supplementary blocks that have any
# (Kaithi, Egyptian format controls, shorthand, musical symbols, tags).
_FORMAT_RANGES = (*range(0x80, 0x10000), *range(0x110BD, 0x110CE), *range(0x13430, 0x13456),
                  *range(0x1BCA0, 0x1BCA4), *range(0x1D173, 0x1D17B), *range(0xE0001, 0xE0080))


def unmasked(text: str) -> str:
    """Steps 1–4 of the module: entities, NFKC, format characters, confusable skeletons."""
    if text.isascii() and "&" not in text:
        return text
    if "&" in text:
        text = html.unescape(html.unescape(text))
    text = unicodedata.normalize("NFKC", text)
    # ``translate`` looks every character up (~8 µs for a short line); most non-ASCII text (an
    # em dash, Chinese) holds no character of the table, and then it would change nothing.
    return text if text.isascii() or _masking().isdisjoint(text) else text.translate(_table())


@cache
def _masking() -> frozenset[str]:
    """The characters ``_table`` removes or replaces."""
    return frozenset(map(chr, _table()))


def decoded_runs(text: str) -> list[str]:
    """The base64 runs of ``text`` that decode to readable UTF-8 text (step 5)."""
    found = []
    if _MAY_RUN.search(text) is None:
        return found
    for run in _BASE64_RUN.findall(text):
        body = run.rstrip("=")
        padded = body + "=" * (-len(body) % 4)
        try:
            raw = base64.b64decode(padded, altchars=b"-_" if ("-" in body or "_" in body) else None, validate=True)
            said = raw.decode("utf-8")
        except (binascii.Error, ValueError):
            continue
        if said and sum(ch.isprintable() or ch.isspace() for ch in said) >= MIN_PRINTABLE * len(said):
            found.append(said)
    return found


_MASK_BITS = 0x20000  # the BMP and the next plane (emoji): a character past it is left to ``revealed``


@cache
def _masking_bits() -> bytes:
    """``_masking`` below ``_MASK_BITS`` as a bit per code point (little-endian bytes, 16 kB), for
    ``_scan.maybe_disguised``, which leaves any text holding a character past it to ``revealed``."""
    bits = bytearray(_MASK_BITS // 8)
    for point in _table():
        if point < _MASK_BITS:
            bits[point >> 3] |= 1 << (point & 7)
    return bytes(bits)


_PAIRED_BELOW = 0x20000  # every canonical decomposition into two characters is of a code point below this


@cache
def _nfkc_plain_bits() -> bytes:
    """A bit per BMP code point (little-endian bytes, 8 kB), set where a text holding the character may still
    be its own NFKC without asking (``_cues.nfkc_unsure``): the character has no decomposition (canonical or
    compatibility), a combining class of 0, and is no later part of a composition (a canonical pair's second
    character, a Hangul vowel or trailing consonant jamo). A text of such characters only is unchanged by NFKC:
    nothing decomposes, reorders or composes. Made from this Python's ``unicodedata`` (~25 ms, once: the pairs
    are all in the first two planes, past them a decomposition is one character or compatibility's, which
    tests/recall/test_nfkc_unsure.py checks)."""
    later = {0x1161 + v for v in range(21)} | {0x11A8 + t for t in range(27)}  # what Hangul syllables compose of
    for point in range(_PAIRED_BELOW):
        parts = unicodedata.decomposition(chr(point)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            later.add(int(parts[1], 16))
    bits = bytearray(0x10000 // 8)
    for point in range(0x10000):
        char = chr(point)
        if (point not in later and not unicodedata.combining(char) and not unicodedata.decomposition(char)
                and not 0xD800 <= point < 0xE000):  # a lone surrogate is left to unicodedata
            bits[point >> 3] |= 1 << (point & 7)
    return bytes(bits)


def suspect_bits() -> tuple[bytes, bytes]:
    """(``_masking_bits()``, ``_nfkc_plain_bits()``): the tables a C walk reads to tell the texts ``revealed_many``
    would reveal from those it returns as they are (``provenance.started_cues``)."""
    return _masking_bits(), _nfkc_plain_bits()


def revealed_many(texts: list[str]) -> list[str]:
    """``[revealed(t) for t in texts]``: one C pass finds the texts holding "&", a character of the table
    or a base64 run (``_scan.maybe_disguised``), a second finds the texts holding a character NFKC might
    change (``_cues.nfkc_unsure``: none in an ASCII text, nor in a zh one of ideographs and general
    punctuation) and only those are asked ``unicodedata.is_normalized`` (the batch is not joined for it, issue
    28 round nineteen), and only the texts found go through ``revealed``; every other text is its own."""
    out = list(texts)
    suspects = set(_scan.maybe_disguised(out, _masking_bits()))
    suspects.update(k for k in _cues.nfkc_unsure(out, _nfkc_plain_bits())
                    if not unicodedata.is_normalized("NFKC", out[k]))
    for k in suspects:
        out[k] = revealed(out[k])
    return out


def revealed(text: str) -> str:
    """``text`` as a reader sees it (steps 1–4), with its decoded base64 runs (also unmasked)
    on lines of their own (see the module)."""
    plain = unmasked(text)
    runs = decoded_runs(plain)
    return "\n".join([plain, *map(unmasked, runs)]) if runs else plain
