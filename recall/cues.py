"""Cues: the coordinates a memory is indexed under, and the exact cues lexical search is for.

Seed: "lexical recognises exact cues: system names, accounts, error codes, URLs". Embeddings
blur ``403`` into ``404`` and ``ORA-00942`` into "some database error"; an exact token match
does not. So every memory (a perceived event or a "when C, do A, because R" unit) is indexed
under prefixed cue terms (``@entity:iam``, ``@action:submit change``, ``@code:403`` ...) next to
its word tokens, and a recall query is turned into the same terms by the same code, so the
two meet exactly (design.md §B3: entity, scene, action, anomaly, cause, time, scope, exact).
Pure functions: no IO, deterministic output.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from hindbrain.recall import _cues, _scan
from hindbrain.recall.literals import literals
from hindbrain.recall.timecues import day_values, query_time_values

_A, _I = re.ASCII, re.ASCII | re.IGNORECASE  # ASCII classes: a CJK neighbour is a word boundary
# A pattern whose match must not follow some character starts with its first character, and the
# look-behind checks the pair: "[A-Z](?<![\w-][A-Z])" is "(?<![\w-])[A-Z]", but ``re`` can skip to a
# candidate first character (a look-behind first is tried at every position: ~2x the scan, issue 28).
# tests/recall/test_cue_prefilters.py checks each against its look-behind-first form.
_URL = re.compile(r"https?://[^\s<>\"'，。；、）】」]+", _I)
_EMAIL = re.compile(r"[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+", _I)
_HANDLE = re.compile(r"@(?<![\w.@]@)[a-z][a-z0-9_-]*[a-z0-9]", _I)
_HOST = re.compile(r"(?<![\w.@/-])(?:(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+([a-z]{2,24})|(?:\d{1,3}\.){3}\d{1,3})"
                   r"(?![\w-]|\.[a-z0-9])", _I)
_HOST_DOT = re.compile(r"\.[a-z0-9]", _I)  # every ``_HOST`` match holds one: most sentences' dots do not
_TLDS = frozenset({"com", "net", "org", "io", "cn", "dev", "app", "local", "internal", "corp", "cloud", "ai", "co",
                   "gov", "edu", "int", "lan"})
_PATH = re.compile(r"/(?<![\w./:~-]/)[a-z0-9_.~%-]+(?:/[a-z0-9_.~%-]+)*/?", _I)
_HTTP = re.compile(r"([45](?<![\w.,/:#+][45])(?<!\d-[45])\d\d)(?!\w|[.,]\d)", _A)
_HTTP_BEFORE = re.compile(r"(?:https?(?:/\d(?:\.\d)?)?|status(?: code)?|error|err|code|returned|returns|return|got|"
                          r"response|responded with|(?:fail|crash)(?:s|ed|es)? with|show(?:s|ed|ing)?|throw(?:s|n)?|"
                          r"threw|状态码|错误码|返回|报错|错误|报|显示|出现|提示)\s*[:：=#-]?\s*$", _I)
_HTTP_AFTER = re.compile(r"\s*(?:forbidden|not found|unauthori[sz]ed|bad gateway|bad request|internal server error"
                         r"|service unavailable|gateway time-?out|too many requests|conflict|error|错误|报错|页面|了)",
                         _I)
_CODES = (
    re.compile(r"[A-Z](?<![\w-][A-Z])[A-Z]{1,4}-\d{3,6}(?!\w)", _A),  # ORA-00942
    re.compile(r"[A-Z](?<![\w-][A-Z])[A-Z0-9]*(?:_[A-Z0-9]+)+(?!\w)", _A),  # ERR_CONNECTION_REFUSED
    re.compile(r"0(?<!\w0)x[0-9a-f]{4,16}(?!\w)", _I),  # 0x80070005
    re.compile(r"[A-Z](?<![\w-][A-Z])[A-Z]{0,2}\d{3,6}(?!\w)", _A),  # E1234, TS2345
    re.compile(r"E(?<!\wE)(?:NOENT|ACCES|PERM|EXIST|PIPE|CONN(?:REFUSED|RESET|ABORTED)|TIMEDOUT|ADDRINUSE)(?!\w)", _A),
)
# What each must contain: a digit; and a dash for ORA-00942, "0x" for a hex code (a substring test
# is ~30x cheaper than a scan, and most texts with a digit hold neither: issue 28)
_CODE_NEEDS = tuple(zip(_CODES, ("dash", "_", "hex", "digit", "upper"), strict=True))
_DIGIT = re.compile(r"\d", _A)
# Searched in the lowered text: IGNORECASE made it the costliest pattern on non-ASCII text. A
# pre-filter only: a superset of the hints is safe (``_ACCOUNT`` decides).
_ACCOUNT_HINT = re.compile(r"svc|sa[-_]|srv|bot|admin|root|normal|regular|standard|ordinary|guest|管理员|普通|访客")
_HINTS = tuple(sorted(literals(_ACCOUNT_HINT)))  # every string it matches (recall.literals: exact)
_ACCOUNTS_LIST = (  # (pattern, fixed cue or None for the matched name itself)
    (re.compile(r"(?<![\w-])(?:(?:svc|sa|srv|bot)[-_][a-z0-9][a-z0-9_-]*|[a-z][a-z0-9]*[-_](?:bot|svc))(?![\w-])", _I),
     None),
    (re.compile(r"(?<![\w-])(?:sys)?admin(?:istrator)?s?(?![\w-])|管理员", _I), "account:admin"),
    (re.compile(r"(?<![\w-])root(?![\w-])(?!\s+(?:cause|directory|dir|node|folder|certificate|ca|of|level))", _I),
     "account:root"),
    (re.compile(r"(?<![\w-])(?:normal|regular|standard|ordinary|non-admin)\s+(?:account|user)s?(?!\w)|普通(?:账号|账户|用户)",
                _I), "account:normal"),
    (re.compile(r"(?<![\w-])guest(?![\w-])|访客", _I), "account:guest"),
)
# One pass for all account kinds: the alternatives become named groups, in the order above.
_ACCOUNT = re.compile("|".join(f"(?P<a{n}>{p.pattern})" for n, (p, _) in enumerate(_ACCOUNTS_LIST)), _I)
_ACCOUNT_CUES = {f"a{n}": cue for n, (_, cue) in enumerate(_ACCOUNTS_LIST)}
_ALLCAPS = re.compile(r"[A-Z](?<![\w-][A-Z])[A-Z0-9]{1,5}(?!\w|-\d)", _A)
_CAMEL = re.compile(r"[A-Z](?<![\w-][A-Z])[a-z]+(?:[A-Z][a-z0-9]*)+(?!\w)", _A)
_NOT_SYSTEMS = frozenset({  # shouting, protocols, formats, verbs and log levels: not systems
    "OK", "NO", "YES", "ID", "IDS", "HTTP", "HTTPS", "URL", "URI", "API", "JSON", "XML", "HTML", "CSV", "PDF", "TODO",
    "NOTE", "FYI", "ASAP", "AM", "PM", "UTC", "GMT", "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "ERROR", "ERR",
    "WARN", "INFO", "DEBUG", "FATAL", "FAIL", "FAILED", "AND", "OR", "NOT", "THE", "IF", "IT", "IS", "TO", "IN", "ON",
    "AT", "BY", "OF", "FOR", "AN", "AS", "BE", "DO", "WE", "MY", "ME", "PS", "NB", "ETA", "EOD", "PR", "UI", "UX",
})
_US_PER_DAY = 86_400 * 1_000_000
_TRAILING = ".,;:!?)]}'\""
COORDINATES = ("entity", "scene", "action", "anomaly", "cause", "time", "scope", "exact")
_TEXT_FIELDS = ("system", "identity", "action", "expected", "actual", "text", "condition", "reason")


def _norm(text: object) -> str:
    return " ".join(str(text if text is not None else "").lower().split())


@lru_cache(maxsize=1024)
def _system_pattern(name: str) -> re.Pattern[str] | None:
    return re.compile(rf"(?<!\w){re.escape(name)}(?!\w)", _I) if name.isascii() else None


def _two_letters(word: str) -> bool:
    """Whether an ``_ALLCAPS`` match holds two letters or more: its first character is one and
    the rest are ASCII capitals or digits, so it does unless the rest is all digits (``A1``,
    ``E404``). ``sum(c.isalpha() for c in word) >= 2`` was ~4 µs an event (a generator per word)."""
    return not word[1:].isdigit()


def exact_cues(text: str, known_systems: Iterable[str] = ()) -> set[str]:
    """The exact cues in ``text``, lowercased and prefixed by kind: ``code:`` ``url:`` ``host:``
    ``path:`` ``account:`` ``system:``. Only numbers that read as HTTP codes become codes."""
    out: set[str] = set()
    if not text:
        return out
    # Each family runs only when a character it needs is present: most memories are plain
    # sentences, and indexing calls this for every perceived event.
    rest = text
    if "://" in rest:
        for m in _URL.finditer(rest):
            url = m.group(0).rstrip(_TRAILING).rstrip("/").lower()
            out.add(f"url:{url}")
            host, _, path = url.split("://", 1)[1].partition("/")
            out.add(f"host:{host.split(':')[0]}")
            if path.split("?")[0].strip("/"):
                out.add(f"path:/{path.split('?')[0].strip('/')}")
        rest = _URL.sub(" ", rest)
    if "@" in rest:
        out.update(f"account:{m.group(0).rstrip('.').lower()}" for m in _EMAIL.finditer(rest))
        rest = _EMAIL.sub(" ", rest)
        out.update(f"account:{m.group(0).lower()}" for m in _HANDLE.finditer(rest))
        rest = _HANDLE.sub(" ", rest)
    if "." in rest and _HOST_DOT.search(rest):
        hosts = [m for m in _HOST.finditer(rest) if m.group(1) is None or m.group(1).lower() in _TLDS]
        if hosts:
            out.update(f"host:{m.group(0).lower()}" for m in hosts)
            rest = _HOST.sub(" ", rest)
    if "/" in rest:
        for m in _PATH.finditer(rest):
            path = m.group(0).rstrip(_TRAILING).rstrip("/")
            if re.search(r"[a-z]", path, _I):
                out.add(f"path:{path.lower()}")
    has_digit = _DIGIT.search(rest) is not None
    if has_digit:
        for m in _HTTP.finditer(rest):
            before, after = rest[max(0, m.start() - 24) : m.start()], rest[m.end() :]
            alone = not (rest[: m.start()] + after).strip(" \t\n()[]【】（）:：.。,，!！") or (
                before.endswith(("(", "[", "（", "【")) and after.startswith((")", "]", "）", "】")))
            if alone or _HTTP_BEFORE.search(before) or _HTTP_AFTER.match(after):
                out.add(f"code:{m.group(1)}")
    has_upper = not rest.islower()
    for pattern, needs in _CODE_NEEDS:
        if (needs == "digit" and has_digit) or (needs == "_" and "_" in rest) or (needs == "upper" and has_upper) \
                or (needs == "dash" and has_digit and "-" in rest) \
                or (needs == "hex" and has_digit and ("0x" in rest or "0X" in rest)):
            out.update(f"code:{m.group(0).lower()}" for m in pattern.finditer(rest))
    if _ACCOUNT_HINT.search(rest.lower()):
        for m in _ACCOUNT.finditer(rest):
            out.add(_ACCOUNT_CUES[m.lastgroup] or f"account:{m.group(0).lower()}")
    if has_upper:
        for m in _ALLCAPS.finditer(rest):
            word = m.group(0)
            if word not in _NOT_SYSTEMS and _two_letters(word) and f"code:{word.lower()}" not in out:
                out.add(f"system:{word.lower()}")
        out.update(f"system:{m.group(0).lower()}" for m in _CAMEL.finditer(rest))
    lowered = text.lower()
    for name in {_norm(n) for n in known_systems} - {""}:
        pattern = _system_pattern(name)
        # ``name in lowered`` is necessary for the pattern too (an ASCII name matches ASCII
        # letters only): a cheap test before the case-insensitive search
        if name in lowered and (pattern is None or pattern.search(text)):
            out.add(f"system:{name}")
    return out


# Batch form (issue 28): the families a text's characters decide (the digit and errno codes, _ALLCAPS,
# _CAMEL, _HTTP's matches) found by one C pass over each text (``_cues.cue_scan``), which also says which texts
# hold what only ``exact_cues`` handles ("@", "/", a dot before a letter or digit: the URL, e-mail, handle, host
# and path families, which rewrite the text the later families read) and which hold the rarer families' needs.


def exact_cues_many(texts: list[str], known_systems: list[Iterable[str]],
                    hints: _cues.Holding | None = None) -> list[set[str]]:
    """``[exact_cues(t, s) for t, s in zip(texts, known_systems)]``, the same sets: each text read once in C
    (``_cues.cue_scan``: no join, offsets or span a text in Python, issue 28 round eighteen); a family whose
    pattern needs a character few texts hold ("_", "-", "0x", an account hint) runs over those texts only.
    ``hints``: ``started_hints(texts)``, begun by the caller (the texts' account hints found on another core)."""
    out: list[set[str]] = [set() for _ in texts]
    alone, dashed, underscored, hexed, http = _cues.cue_scan(texts, out, _NOT_SYSTEMS)
    for k in alone:
        out[k] = exact_cues(texts[k], known_systems[k])
    for k, begin, end in http:
        text = texts[k]
        # the anchored match first, in place (``_HTTP_AFTER`` has no anchor or look-behind: matching from ``end``
        # is matching the rest; "403 forbidden" needs nothing else, ~0.1 µs an event less than the rest's copy
        # and the aloneness test first, round nineteen); ``_HTTP_BEFORE``'s search tries its alternation at each
        # of up to 24 places (~8 µs), so last (``exact_cues`` asks the same three)
        if (_HTTP_AFTER.match(text, end) or _http_alone(text, begin, end)
                or _HTTP_BEFORE.search(text[max(0, begin - 24) : begin])):
            out[k].add(f"code:{text[begin:end]}")
    # each family's need is a character every match holds (``_CODE_NEEDS``): only the texts holding it are scanned
    for pattern, holding in ((_CODES[0], dashed), (_CODES[1], underscored), (_CODES[2], hexed)):
        for k in holding:
            out[k].update(f"code:{m.group(0).lower()}" for m in pattern.finditer(texts[k]))
    read_alone = set(alone)
    for k in (hints or started_hints(texts)).result():  # the account scan is ~10 µs a text: only where a hint is
        if k not in read_alone:  # exact_cues read it whole
            for m in _ACCOUNT.finditer(texts[k]):
                out[k].add(_ACCOUNT_CUES[m.lastgroup] or f"account:{m.group(0).lower()}")
    simple = [k for k, text in enumerate(texts) if text and k not in read_alone]
    _known_systems_many([texts[k] for k in simple], [known_systems[k] for k in simple], [out[k] for k in simple])
    return out


def _http_alone(text: str, begin: int, end: int) -> bool:
    """Whether the status code at ``text[begin:end]`` stands alone: nothing but brackets and punctuation around
    it, or bracketed."""
    before, after = text[max(0, begin - 24) : begin], text[end:]
    return not (text[:begin] + after).strip(" \t\n()[]【】（）:：.。,，!！") or (
        before.endswith(("(", "[", "（", "【")) and after.startswith((")", "]", "）", "】")))


# A batch this large is walked on a thread of its own (``started_hints``): a thread's start (~50 µs) against the
# walk's ~0.25 µs a text.
BACKGROUND_TEXTS = 256


def started_hints(texts: list[str]) -> _cues.Holding:
    """``_hinted(texts)``'s walk (``_cues.started_holding``: each text lowered as it is read, the hints looked for
    in one pass), on a thread of its own for a large batch, without the interpreter lock: the caller does the
    batch's other cue work meanwhile and ``exact_cues_many`` joins it (issue 28, round twenty-two)."""
    return _cues.started_holding(texts, _HINTS, len(texts) >= BACKGROUND_TEXTS)


def _hinted(batch: list[str]) -> list[int]:
    """The texts of ``batch`` whose lowered text holds an account hint (``_ACCOUNT_HINT``), in order: one pass
    in C, each text lowered as it is read (``started_hints``), not the alternation at every position."""
    return started_hints(batch).result()


def py_hinted(batch: list[str]) -> list[int]:
    """``_hinted`` by the pattern, one text at a time (the oracle)."""
    return [k for k, text in enumerate(batch) if _ACCOUNT_HINT.search(text.lower())]


def _known_systems_many(batch: list[str], known: list[Iterable[str]], out: list[set[str]]) -> None:
    """``py_known_systems_many`` in one C call (``_scan.known_systems_in``: a text's names looked up by the
    tuple, the same matches; ~0.45 µs an event of per-text Python, issue 28)."""
    _scan.known_systems_in(batch, known, out, _system_cues)


@lru_cache(maxsize=1024)
def _system_cues(names: tuple) -> tuple[tuple[str, str, bool], ...]:
    """(name, its cue, whether it is ASCII) of each of ``_normed_names(names)``: what ``known_systems_in`` reads."""
    return tuple((name, f"system:{name}", name.isascii()) for name in _normed_names(names))


def py_known_systems_many(batch: list[str], known: list[Iterable[str]], out: list[set[str]]) -> None:
    """The known-system part of ``exact_cues`` for each text of ``batch``: an ASCII name by its pattern's match
    in C (``_scan.ascii_name_in``: the pattern's word edges, ASCII letters in either case), any other name
    as a substring of the lowered text. The oracle of ``_known_systems_many``."""
    for k, names in enumerate(known):
        lowered = None
        for name in _normed_names(tuple(names)):
            if name.isascii():
                found = _scan.ascii_name_in(batch[k], name)
            else:
                lowered = batch[k].lower() if lowered is None else lowered
                found = name in lowered
            if found:
                out[k].add(f"system:{name}")


@lru_cache(maxsize=1024)
def _normed_names(names: tuple) -> frozenset[str]:
    return frozenset({_norm(n) for n in names} - {""})


def coordinates(fields: dict, known_systems: Iterable[str] = ()) -> dict[str, list[str]]:
    """The design.md §B3 cue coordinates of a perception- or cognition-like dict; empty ones omitted.

    The ``system`` field is itself a known system, so a lowercase mention of it elsewhere counts.
    Exact cues are found field by field; all fields but the free ``text`` repeat across a
    fleet (the same systems, actions, identities), so their part is computed once (cached)."""
    coords, _, systems = _structured(_structured_key(fields, known_systems))
    out = {k: list(v) for k, v in coords.items()}  # the cached lists stay untouched
    if fields.get("ts_us") is not None:
        out["time"] = list(day_values(int(fields["ts_us"]) // _US_PER_DAY))
    text = fields.get("text")
    if text:
        out["exact"] = sorted(set(coords.get("exact", ())) | exact_cues(str(text), systems))
    return {k: out[k] for k in COORDINATES if out.get(k)}


def index_terms(fields: dict, ts_us: int | None) -> list[str]:
    """``cue_terms(coordinates({**fields, "ts_us": ts_us}))`` — the same terms, with the
    structured part's terms cached too (this runs for every indexed event)."""
    return list(indexed_terms(fields, ts_us))


def indexed_terms(fields: dict, ts_us: int | None) -> tuple[str, ...]:
    """``index_terms`` as a tuple shared by every event with the same structured fields, day and
    exact cues of its text: only the text's cues are found per event; the terms are put together
    once per distinct combination (a fleet repeats its systems, actions and days: issue 28)."""
    key = event_key(fields)
    text = fields.get("text")
    found = exact_cues(str(text), _structured(key)[2]) if text else ()
    return _terms_of(key, None if ts_us is None else int(ts_us) // _US_PER_DAY, frozenset(found))


def indexed_terms_many(records: list[dict], ts_us: list[int | None],
                       keys: list[tuple] | None = None) -> list[tuple[str, ...]]:
    """``indexed_terms`` of each record, the texts' exact cues found over the batch at once (``exact_cues_many``);
    ``keys``: the records' ``event_key``s when the caller has them (``index.event_keys``: read in C)."""
    texts = [fields.get("text") for fields in records]
    words = [str(text) if text else "" for text in texts]
    hints = started_hints(words)  # walked on another core while the keys are numbered and the texts scanned
    if keys is None:
        keys = list(map(event_key, records))
    distinct, nos = _numbered(keys)
    systems = [_structured(key)[2] for key in distinct]
    found = exact_cues_many(words, [systems[no] for no in nos], hints)
    return _terms_by_number(distinct, nos, ts_us, texts, found)


def _numbered(keys: list[tuple]) -> tuple[list[tuple], list[int]]:
    """The distinct keys in order of first sight and each key's number among them. A key is a nested tuple
    whose hash is not cached (~0.13 µs an event at 100k): hashed here once a key, not again by each cache."""
    numbers: dict[tuple, int] = {}
    nos = [numbers.setdefault(key, len(numbers)) for key in keys]
    return list(numbers), nos


_NO_CUES: frozenset[str] = frozenset()


def _terms_by_number(distinct: list[tuple], nos: list[int], ts_us: list[int | None], texts: list,
                     found: list[set[str]]) -> list[tuple[str, ...]]:
    """``py_terms_by_number`` in one C call (``_scan.terms_by_number``: the per-event loop's tuple, frozenset,
    memo look-up and append were ~0.5 µs an event at 100k, issue 28 round twenty-one); the same tuples."""
    return _scan.terms_by_number(distinct, nos, ts_us, texts, found, _terms_of, _NO_CUES, _US_PER_DAY)


def py_terms_by_number(distinct: list[tuple], nos: list[int], ts_us: list[int | None], texts: list,
                       found: list[set[str]]) -> list[tuple[str, ...]]:
    """``_terms_of`` of each event, looked up per batch by (key number, day, cues): a fleet's batch repeats a
    few combinations, so ``_terms_of`` (which hashes the whole key) runs once a combination and batch. The
    oracle of ``_terms_by_number``."""
    memo: dict[tuple, tuple[str, ...]] = {}
    out = []
    for no, ts, text, cues in zip(nos, ts_us, texts, found, strict=True):
        at = (no, None if ts is None else int(ts) // _US_PER_DAY, frozenset(cues) if text else _NO_CUES)
        terms = memo.get(at)
        if terms is None:
            terms = memo[at] = _terms_of(distinct[no], at[1], at[2])
        out.append(terms)
    return out


# A combination holding a one-off cue (a ticket's own code or link) is never met again: the cache stays
# small (~1 kB an entry) so such events cannot make it a resident cost of their own.
@lru_cache(maxsize=1 << 12)
def _terms_of(key: tuple, day: int | None, found: frozenset[str]) -> tuple[str, ...]:
    _, (head, scope_terms, exact), _ = _structured(key)
    if found:
        exact = tuple(sorted(set(exact) | {f"@{v}" for v in map(_norm, found) if v}))
    time_terms = () if day is None else _time_terms(day)
    return tuple(_unique([*head, *time_terms, *scope_terms, *exact]))


@lru_cache(maxsize=4096)
def _time_terms(day_number: int) -> tuple[str, ...]:
    return tuple(cue_terms({"time": list(day_values(day_number))}))


STRUCTURED_FIELDS = ("system", "identity", "action", "expected", "actual", "condition", "reason")


def event_key(fields: dict) -> tuple:
    """What an event's cue terms depend on besides its day and its text's own cues (``indexed_terms``): its
    structured fields, whether it is an anomaly, its entities and its scope (``_structured``'s key)."""
    return _structured_key(fields, ())


def _structured_key(fields: dict, known_systems: Iterable[str]) -> tuple:
    get = fields.get
    scope = get("scope")
    scope = tuple(sorted((str(k), "" if v is None else str(v)) for k, v in scope.items())) if scope else ()
    return (tuple(map(get, STRUCTURED_FIELDS)), get("kind") == "anomaly", tuple(get("entities") or ()), scope,
            tuple(known_systems))


@lru_cache(maxsize=1 << 15)
def _structured(key: tuple) -> tuple[dict, tuple, tuple[str, ...]]:
    """(coordinates without time and text, (head terms, scope terms, exact terms), the known
    systems) of the structured fields in ``key``."""
    values, anomaly, entity_values, scope_items, known_systems = key
    fields = dict(zip(STRUCTURED_FIELDS, values, strict=True))
    system = _norm(fields["system"]) if fields["system"] else ""
    scope = {nk: nv for nk, nv in ((_norm(k), _norm(v)) for k, v in scope_items) if nk and nv}
    expected = _norm(fields["expected"]) if fields["expected"] else ""
    actual = _norm(fields["actual"]) if fields["actual"] else ""
    coords: dict[str, list[str]] = {
        "entity": _unique([*(_norm(e) for e in entity_values), system]),
        "scene": _unique([system, scope.get("task_type", ""), scope.get("scene", "")]),
        "action": [_norm(fields["action"])] if fields["action"] else [],
        "cause": [_norm(fields["reason"])] if fields["reason"] else [],
        "scope": sorted(f"{k}={v}" for k, v in scope.items()),
    }
    if (expected or actual) and (expected != actual or anomaly):
        coords["anomaly"] = [f"expected {expected or '?'} / actual {actual or '?'}"]
    elif anomaly:
        coords["anomaly"] = ["anomaly"]
    systems = (*known_systems, system)
    exact: set[str] = set()
    for k in STRUCTURED_FIELDS:
        if fields[k]:
            exact |= exact_cues(str(fields[k]), systems)
    for e in entity_values:
        exact |= exact_cues(str(e), systems)
    coords["exact"] = sorted(exact)
    coords = {k: v for k, v in coords.items() if v}
    head = cue_terms({k: v for k, v in coords.items() if k in ("entity", "scene", "action", "anomaly", "cause")})
    terms = (tuple(head), tuple(cue_terms({"scope": coords.get("scope", [])})),
             tuple(cue_terms({"exact": coords.get("exact", [])})))
    return coords, terms, systems


def cue_terms(coords: dict[str, list[str]]) -> list[str]:
    """Index terms for a BM25 document: ``@<coordinate>:<value>``, exact cues as ``@<kind>:<value>``.
    The ``@`` keeps them apart from word tokens (which never start with it)."""
    terms: list[str] = []
    for key in [*(k for k in COORDINATES if k in coords), *sorted(set(coords) - set(COORDINATES))]:
        for value in coords[key]:
            value = _norm(value)
            if value:
                terms.append(f"@{value}" if key == "exact" else f"@{_norm(key)}:{value}")
    return _unique(terms)


def query_cues(text: str | None, situation: dict, scope: dict, known_systems: Iterable[str] = ()) -> list[str]:
    """The cue terms of a recall query — built by the very code that indexes memories, so they meet."""
    fields = {k: situation.get(k) for k in ("system", "identity", "action", "expected", "actual")}
    return cue_terms(coordinates({**fields, "text": text, "scope": scope or {}}, known_systems))


def query_time_terms(text: str | None, now_us: int) -> list[str]:
    """The ``@time:`` cue terms of the dates a query names ("in May 2023", "last week", "去年")."""
    return [f"@time:{v}" for v in query_time_values(text, now_us)]


def expected_vs_actual(situation: dict) -> str:
    """The seed's anomaly query text: the situation's fields, then "expected X but got Y"."""
    keys = ("system", "identity", "action", "expected", "actual")
    listed = " / ".join(f"{k}: {' '.join(str(situation[k]).split())}" for k in keys if situation.get(k))
    expected, actual = (" ".join(str(situation.get(k) or "").split()) for k in ("expected", "actual"))
    sentence = f"expected {expected} but got {actual}" if expected and actual else (
        f"got {actual}" if actual else f"expected {expected}" if expected else "")
    return " — ".join(p for p in (listed, sentence) if p)


def _unique(items: Iterable[str]) -> list[str]:
    return [x for x in dict.fromkeys(items) if x]
