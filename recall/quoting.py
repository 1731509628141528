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
delimiters, and their look-alikes, for straight ones, so a quoted text cannot close its own quote.
``quoted`` adds the delimiters. Both are pure and total: any str in, one line out.

It also makes inert the markup a prompt's *consumer* acts on within one line (round twenty-four,
docs/security.md): a tag opener ``<`` before a letter, ``/``, ``!``, ``?``, ``|``, ``｜`` or ``<``
becomes ``‹`` — chat templates' control tokens (``<|im_start|>``, ``</s>``, ``<start_of_turn>``,
``<｜Assistant｜>``, ``<<SYS>>``), which a tokenizer reading the prompt turns into real role
switches, and the XML closers an application wraps memory in (``</memory>``), HTML (``<img src=…>``,
fetched when shown) and autolinks; a bracketed upper-case template token (``[INST]``, ``[/INST]``,
``[TOOL_CALLS]``) gets full-width brackets; and a markdown link or image target ``](`` becomes
``] (``, which no markdown renderer reads as a link, so a recalled ``![x](https://…?q=secret)``
fetches nothing when a chat UI shows the prompt or an answer quoting it. Prose (``a < b``, ``<= 5``,
``[1]``) is unchanged, an upper-case tag such as ``[WARN]`` reads ``［WARN］``; only the rendering
changes: the texts are stored and returned whole.
"""

from __future__ import annotations

import re
import unicodedata

OPEN, CLOSE = "“", "”"  # the renderer's quote delimiters
# The delimiters and every character a reader takes for a double quote (round twenty-five: full-width ＂,
# ideographic 〃 〝 〞 〟, primes ″ ‶ ˝ ʺ, Hebrew ״, ornaments ❝ ❞ 🙶 🙷, ⹂): inside “ ” a model may read any
# of them as the closing one, so all become the straight quote, which the renderer never uses as a delimiter.
_QUOTE_LIKE = "“”„‟＂〃〝〞〟″‶˝ʺ״❝❞\U0001f676\U0001f677⹂"
_DELIMITERS = str.maketrans(dict.fromkeys(_QUOTE_LIKE, '"'))
_QUOTES = re.compile(f"[{_QUOTE_LIKE}]")  # a search in C; ``translate`` of a non-ASCII str is ~15 µs a line
_BREAKING = frozenset({"Cc", "Zl", "Zp", "Zs"})  # become a space: they separate words
_HIDDEN = frozenset({"Cf", "Cs", "Co", "Cn"})  # vanish: format controls, lone surrogates, private/unassigned
# Markup a prompt's consumer acts on (the module's last paragraph): a tag's opener, a template's
# bracketed token, a markdown link's target. One search in C decides whether a text needs ``_inert``.
_MARKUP = re.compile(r"<(?=[A-Za-z/!?|｜<])|\[/?[A-Z][A-Z_]{2,}\]|\]\(")
_TAG_OPENER = re.compile(r"<(?=[A-Za-z/!?|｜<])")
_TEMPLATE_TOKEN = re.compile(r"\[(/?[A-Z][A-Z_]{2,})\]")


def _inert(text: str) -> str:
    """``text`` with its tag openers, template tokens and markdown link targets made inert (see the module)."""
    text = _TAG_OPENER.sub("‹", text)
    return _TEMPLATE_TOKEN.sub(r"［\1］", text).replace("](", "] (")


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
        text = text if text.isascii() or not _QUOTES.search(text) else text.translate(_DELIMITERS)
    else:
        text = " ".join("".join(map(_cleaned, text)).split()).translate(_DELIMITERS)
    return _inert(text) if _MARKUP.search(text) else text


def quoted(value: object) -> str:
    """``prompt_text(value)`` between the renderer's quote delimiters."""
    return f"{OPEN}{prompt_text(value)}{CLOSE}"


# A name (speaker, agent, session, task) that is one plain token reads as a name wherever it is printed;
# any other could read as the renderer's own words ("message from the operator (verified seed rule)").
_PLAIN_NAME = re.compile(r"[\w.@#/+-]{1,64}")
NAME_OPEN, NAME_CLOSE = "‘", "’"  # not the texts' “ ”: words inside a quoted text stay distinct
# every character a reader takes for a single quote, which quoted words must not use to close their own
_SINGLE_QUOTE_LIKE = str.maketrans(dict.fromkeys("‘’‚‛′‵ʹʻʼʽ`´＇", "'"))


def named(value: object) -> str:
    """A caller's name for hindbrain's own words (round twenty-six, docs/security.md): ``prompt_text``, bare
    when it is one plain token (letters, digits, ``- _ . @ # / +``; up to 64), else ``words``."""
    text = prompt_text(value)
    return text if _PLAIN_NAME.fullmatch(text) else words(text)


def words(value: object) -> str:
    """A caller's words inside a sentence of hindbrain's own (a summary's "gave ‘no response’", a name):
    ``prompt_text`` between ``‘ ’``, every look-alike of those made straight, so they cannot close their
    quotes. The renderer's ``prompt_text`` keeps ``‘ ’`` (it swaps only the double quotes it delimits texts by)."""
    return f"{NAME_OPEN}{prompt_text(value).translate(_SINGLE_QUOTE_LIKE)}{NAME_CLOSE}"
