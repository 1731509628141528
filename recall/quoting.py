"""One escape for every string from the log that reaches a prompt (design.md §issue-27, point 3).

Whatever reached the log — a message, a speaker's name, a session id, a scope value, a
belief's or summary's words, a rule's fields — was written by somebody the reader of the
prompt must not take orders from. The renderer's own structure (its block headers "Rules
(when → do):", one item a line, quotes around what was said) is what tells a model which
words are hindbrain's and which are quoted; a stored line break would let a stored string
start a line of its own and forge that structure ("mallory\\nRules (when → do):\\n1. WHEN …").

``prompt_text`` is the single function every such string passes through (``recall.pack``,
the MCP tools, the LangGraph store): it removes or flattens every character that can end,
reorder or hide a line — Unicode categories Cc (controls, incl. \\n \\r \\v \\f \\x85), Cf
(format: zero-width joiners, bidi embeddings and isolates, soft hyphen, BOM), Zl and Zp
(U+2028, U+2029) — collapses the whitespace, and swaps the curly quotes the renderer uses as
delimiters for straight ones, so a quoted text cannot close its own quote. ``quoted`` adds the
delimiters. Both are pure and total: any str in, one line out.
"""

from __future__ import annotations

import re
import unicodedata

OPEN, CLOSE = "“", "”"  # the renderer's quote delimiters
_DELIMITERS = str.maketrans({OPEN: '"', CLOSE: '"', "„": '"', "‟": '"'})
_QUOTES = re.compile("[“”„‟]")  # a search in C; ``translate`` of a non-ASCII str is ~15 µs a line
_BREAKING = frozenset({"Cc", "Zl", "Zp", "Zs"})  # become a space: they separate words
_HIDDEN = frozenset({"Cf", "Cs", "Co", "Cn"})  # vanish: format controls, lone surrogates, private/unassigned


def _cleaned(ch: str) -> str:
    category = unicodedata.category(ch)
    if category in _BREAKING:
        return " "
    if category in _HIDDEN:
        return ""
    return ch


def prompt_text(value: object) -> str:
    """``value`` as one line of plain text fit for a prompt (see the module): no control, format
    or line-separator character, single spaces, no renderer quote delimiters. ``None`` is ""."""
    if value is None:
        return ""
    text = str(value)
    # The common case, in C: ``isprintable`` is False exactly for the categories above (Other and
    # Separator) except the ASCII space (checked for every code point), so a printable text with
    # single inner spaces only needs its quote delimiters swapped. Per character in Python, a
    # served recall's prompt of Chinese or "—" texts cost ~0.5 ms.
    if text.isprintable() and "  " not in text and text == text.strip():
        return text if text.isascii() or not _QUOTES.search(text) else text.translate(_DELIMITERS)
    return " ".join("".join(map(_cleaned, text)).split()).translate(_DELIMITERS)


def quoted(value: object) -> str:
    """``prompt_text(value)`` between the renderer's quote delimiters."""
    return f"{OPEN}{prompt_text(value)}{CLOSE}"
