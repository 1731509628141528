"""Validation of public API input, at the edge, before anything is written.

Every error is an ``InvalidInput`` (a ``ValueError``) whose message names the field, e.g.
``perceive: field 'tenant': Field required``. Nothing is appended when validation fails.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from hindbrain.recall import _scan

MAX_TEXT_BYTES = 64 * 1024
MAX_NAME_CHARS = 256


class InvalidInput(ValueError):
    """Input rejected at the edge; ``field`` names the first offending field."""

    def __init__(self, operation: str, field: str, message: str):
        self.operation, self.field = operation, field
        super().__init__(f"{operation}: field {field!r}: {message}")


def _utf8_within_limit(value: str) -> str:
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise ValueError(f"not valid UTF-8 text ({exc.reason})") from None
    if size > MAX_TEXT_BYTES:
        raise ValueError(f"{size} bytes of UTF-8, more than the {MAX_TEXT_BYTES}-byte limit")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _utc_representable(value: datetime) -> datetime:
    # A time whose UTC instant falls outside years 1-9999 (e.g. 0001-01-01T00:00+14:00) was
    # appended, then broke the recall index (a 500, and the server stopped being ready) and every
    # later read of its row.
    if value.tzinfo is not None:
        try:
            value.astimezone(UTC)
        except OverflowError:
            raise ValueError("in UTC the time falls outside the years 1 to 9999") from None
    return value


# How far ahead of this server's clock a caller's ``ts`` may be by default: clock skew between hosts, not more. An
# event dated later is refused: the newest report on a system decides how it fares (``recall.gate.newest_reports``)
# and freshness never decays before ``ts``, so a report dated 2099 shadowed every honest later one until then
# (docs/security.md, round twenty-nine). Past times stay allowed: importing history is ordinary. A brain set to
# another skew (``Settings.clock_skew_seconds``, HINDBRAIN_CLOCK_SKEW_SECONDS: a simulated clock, a replay of logs
# written on a host whose clock ran ahead) passes it as the validation's context (``validated_in``).
CLOCK_SKEW = timedelta(minutes=5)
SKEW_SETTING = "HINDBRAIN_CLOCK_SKEW_SECONDS (Brain.open(clock_skew_seconds=...))"


def _not_ahead_of_the_clock(value: datetime, info: ValidationInfo) -> datetime:
    skew = clock_skew(info.context)
    if skew is None:  # a client's check: the server's own setting decides
        return value
    at = value if value.tzinfo is not None else value.replace(tzinfo=UTC)  # naive times are UTC (records.py)
    now = datetime.now(UTC)
    if at > now + skew:
        raise ValueError(f"{at.astimezone(UTC).isoformat()} is later than this server's clock "
                         f"({now.isoformat(timespec='seconds')}) by more than {skew.total_seconds():g} s "
                         f"(the skew allowed, {SKEW_SETTING}): an event is perceived after it happened")
    return value


def clock_skew(context: dict | None) -> timedelta | None:
    """The skew a validation allows: its context's ``clock_skew`` (None: not checked here), else ``CLOCK_SKEW``."""
    return context["clock_skew"] if context and "clock_skew" in context else CLOCK_SKEW


When = Annotated[datetime, AfterValidator(_utc_representable)]  # an event's time, of any clock
Text = Annotated[str, Field(strict=True), AfterValidator(_utf8_within_limit)]
Name = Annotated[
    str,
    Field(strict=True, min_length=1, max_length=MAX_NAME_CHARS),
    AfterValidator(_utf8_within_limit),
    AfterValidator(_not_blank),
]


def _no_control_characters(value: str) -> str:
    # An id names a record: it is matched, logged and printed (a pack, a timeline, an access log).
    # A control character or a line separator in one forged lines there and made no real id.
    for n, ch in enumerate(value):
        if ch in _LINE_SEPARATORS or unicodedata.category(ch) == "Cc":
            raise ValueError(f"must not hold control characters or line breaks ({ch!r} at position {n})")
    return value


_LINE_SEPARATORS = "\u2028\u2029\x85"
Id = Annotated[Name, AfterValidator(_no_control_characters)]  # a record's id: a Name without control characters


# Scripts whose letters may share an identifier with Latin ones (UTS #39's "highly restrictive" level: Japanese,
# Chinese and Korean names are commonly written beside Latin letters, and none of their letters looks Latin).
_BESIDE_LATIN = frozenset({"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO"})


def _letter_script(ch: str) -> str:
    """The script of a letter as its Unicode name begins ("LATIN", "CYRILLIC", "CJK" …): the standard library has
    no script property, and a letter's name starts with its script's."""
    return unicodedata.name(ch, "?").split(" ", 1)[0]


# Unicode's Default_Ignorable_Code_Point characters that ``str.isprintable`` accepts (Other_Default_Ignorable_Code_Point
# and Variation_Selector of PropList.txt; the format ones, Cf, it refuses already). A renderer shows them as nothing,
# so ``bot\u034f-1`` (a combining grapheme joiner) or ``bot\u1160-1`` (a Hangul filler, a "letter" allowed beside
# Latin) printed as ``bot-1`` and was another agent (round thirty-one).
_IGNORABLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u2065\u3164\ufe00-\ufe0f\uffa0"
                        "\ufff0-\ufff8\U000e0000-\U000e0fff]")


def _hidden_character(value: str) -> int | None:
    """The position of the first character of ``value`` that does not show itself, or None: one ``str.isprintable``
    refuses (a control, format, surrogate, private-use or unassigned code point, a separator other than the plain
    space: zero-width, bidi, no-break space, tab, line breaks) or a default ignorable one (``_IGNORABLE``). Plain
    names pass the two C-speed checks without a loop."""
    if value.isprintable() and (value.isascii() or not _IGNORABLE.search(value)):
        return None
    return next(n for n, ch in enumerate(value) if not ch.isprintable() or _IGNORABLE.match(ch))


def identifier_problem(value: str) -> str | None:
    """Why ``value`` cannot be an identifier a caller sets (a tenant, agent, task, session or user id), or None.
    Such a name decides who said what: fleet verification counts agents, summaries count senders, a key is bound
    to one. Two spellings that print alike would be two of them (round twenty-seven: ``bot-1`` and ``bot\u200b-1``
    were two agents, the escape printing both as ``bot-1``). So an identifier shows every character it holds:
    no control, format (zero-width, bidi), separator, lone surrogate, unassigned, private-use or other default
    ignorable character (a combining grapheme joiner, a Hangul filler, a variation selector); one plain space
    between words at most;
    NFKC-normal (``ｂｏｔ``, ``ﬁ`` are other spellings of ``bot``, ``fi``); letters of one script, or Latin with
    Chinese, Japanese or Korean ones (a Cyrillic ``о`` in ``bоt-1`` passes for a Latin one). Texts and speaker
    names are not identifiers: ZWNJ is a letter-joiner in Persian, and a text keeps it."""
    if (n := _hidden_character(value)) is not None:
        return f"an identifier must show every character it holds ({value[n]!r} at position {n})"
    if value != value.strip(" ") or "  " in value:
        return "an identifier must not begin or end with a space, nor hold two in a row"
    if value.isascii():
        return None
    if unicodedata.normalize("NFKC", value) != value:
        return f"an identifier must be in Unicode's NFKC form (as {unicodedata.normalize('NFKC', value)!r})"
    scripts = {_letter_script(ch) for ch in value if ch.isalpha()} - _BESIDE_LATIN
    if len(scripts) > 1:
        return f"an identifier's letters must be of one script, not {' and '.join(sorted(scripts))}"
    return None


def _identifier(value: str) -> str:
    if problem := identifier_problem(value):
        raise ValueError(problem)
    return value


Ident = Annotated[Name, AfterValidator(_identifier)]  # an identifier a caller sets: tenant, agent, task, session, user

# Scope keys whose values name a person and so act as identities: a preference binds to ``scope["user"]`` (else
# to ``scope["session"]``), the gate gives a user's own words back to that user, and the summaries count each
# ``scope["user"]`` as a reporter (``jobs.summaries.REPORTER_SQL``). ``bob`` and ``bob\u200b`` were two users
# that print alike (round twenty-nine). Other scope values are the caller's words (a scene, a region) and keep
# every character. The edge checks new input only: a log written before replays as it was.
IDENTITY_SCOPE_KEYS = ("user", "session")


def _scope_identities(scope: dict[str, str]) -> dict[str, str]:
    for key in IDENTITY_SCOPE_KEYS:
        if key in scope and (problem := identifier_problem(scope[key])):
            raise ValueError(f"scope[{key!r}] is an identifier: {problem}")
    return scope


Scope = Annotated[dict[Name, Name], AfterValidator(_scope_identities)]
_IDENT, _ID = TypeAdapter(Ident), TypeAdapter(Id)


def valid_identifier(operation: str, field: str, value) -> str:
    """``value`` if it is a valid identifier (``Ident``), else ``InvalidInput`` naming ``field``."""
    return _validated(_IDENT, operation, field, value)


def valid_id(operation: str, field: str, value) -> str:
    """``value`` if it is a valid id (``Id``), else ``InvalidInput`` naming ``field``."""
    return _validated(_ID, operation, field, value)


def _validated(adapter: TypeAdapter, operation: str, field: str, value):
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        raise InvalidInput(operation, field, exc.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")) \
            from None

EventKind = Literal["message", "observation", "action", "anomaly", "feedback", "outcome"]
Signal = Literal["explicit", "implicit", "self"]
# Who produced an event's text (design.md §issue-19): the agent itself, a user talking to it, a tool's
# output, an external document. None: read from ``kind`` and ``speaker`` (recall.provenance).
Origin = Literal["agent", "user", "tool", "document"]
Source = Literal["lived", "read"]
Trigger = Literal["task_start", "anomaly", "no_progress", "no_data", "unresolved_entity", "user_reference"]


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _FieldProblem(ValueError):
    """Raised by a model validator for a problem of one field, so ``InvalidInput.field`` names it."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


_SHOWS_NOTHING = frozenset({"Cc", "Cf", "Cs", "Zs", "Zl", "Zp"})  # private-use and unassigned may be icons


def _blank(value: str | None) -> bool:
    """Whether ``value`` shows nothing: None, or only spaces, separators, controls, format characters
    and lone surrogates. A condition, action, text or citation of zero-width or bidi characters alone
    ("\u200b", "\u202e") passed ``str.strip`` and made a unit that says nothing, or a read unit
    citing nothing (round twenty-five, docs/security.md)."""
    if value is None:
        return True
    if value.isprintable():  # in C: no control, format, separator, private-use or unassigned one but the space
        return not value.strip()
    return all(unicodedata.category(ch) in _SHOWS_NOTHING for ch in value)


def _surely_blank(value: str | None) -> bool:
    """Whether ``value`` has no printable character but spaces: ``_blank`` may hold, the model decides
    (the C of ``common_perceives``, ``all_invisible``, has no category table: it asks the same)."""
    return value is None or not any(ch.isprintable() and not ch.isspace() for ch in value)


def _cites_nothing(citation: str | None) -> bool:
    """Whether a citation names no source: no letter or digit in any script ("-", " . ", "\u200b")."""
    return citation is None or not any(unicodedata.category(ch)[0] in "LN" for ch in citation)


class PerceiveInput(_Input):
    tenant: Ident
    agent: Ident | None = None
    task: Ident | None = None
    kind: EventKind = "message"
    text: Text | None = None
    system: Text | None = None
    identity: Text | None = None
    action: Text | None = None
    expected: Text | None = None
    actual: Text | None = None
    entities: list[Name] = Field(default_factory=list, max_length=256)
    scope: Scope = Field(default_factory=dict)
    signal: Signal | None = None
    success: bool | None = Field(default=None, strict=True)
    polarity: float | None = Field(default=None, ge=-1.0, le=1.0, strict=True, allow_inf_nan=False)
    session: Ident | None = None
    speaker: Name | None = None
    emotion: Name | None = None
    origin: Origin | None = None
    ts: Annotated[When, AfterValidator(_not_ahead_of_the_clock)] | None = None
    event_id: Id | None = None

    @model_validator(mode="after")
    def _needs_text_or_action(self):
        if _blank(self.text) and _blank(self.action):
            raise _FieldProblem("text", "one of 'text' or 'action' must be a non-empty string")
        return self


# The common shape of a perception, checked without the model (issue 28: the model is ~10 µs an
# event, most of a batch's validation): exact ``str``/``bool``/``float``/``list``/``dict`` values,
# no ``ts``, ASCII printable ids. Whatever it does not accept for certain goes to the model, which
# then accepts it the same way or raises its error naming the field (tests/test_common_perceive.py
# checks it accepts nothing the model refuses, and the values are the model's).
_PERCEIVE_FIELDS = frozenset(PerceiveInput.model_fields)
_PERCEIVE_DEFAULTS = {"agent": None, "task": None, "kind": "message", "text": None, "system": None, "identity": None,
                      "action": None, "expected": None, "actual": None, "signal": None, "success": None,
                      "polarity": None, "session": None, "speaker": None, "emotion": None, "origin": None,
                      "ts": None, "event_id": None}
_IDENTIFIERS = ("agent", "task", "session")  # optional identifiers (``Ident``); the tenant is one too
_OPTIONAL_NAMES = ("speaker", "emotion")
_TEXTS = ("text", "system", "identity", "action", "expected", "actual")
_KINDS = frozenset(EventKind.__args__)
_SIGNALS = frozenset(Signal.__args__)
_ORIGINS = frozenset(Origin.__args__)


# ``common_perceive``'s checks as ``_scan.perceive_records`` takes them (``hindbrain.brain.common_perception_records``):
# its defaults also hold what an event without entities or scope reads, an empty list and dict (the C only reads
# them: each record gets its own copies, as ``common_perceive``'s values did).
COMMON_SHAPE = (_PERCEIVE_FIELDS, {**_PERCEIVE_DEFAULTS, "entities": [], "scope": {}}, _KINDS, _SIGNALS, _ORIGINS,
                _IDENTIFIERS, _OPTIONAL_NAMES, _TEXTS, MAX_NAME_CHARS, MAX_TEXT_BYTES)


def _plain_name(value) -> bool:
    """Whether ``value`` is a ``Name`` for certain (a ``Name`` holds at most 1,024 UTF-8 bytes)."""
    return type(value) is str and 0 < len(value) <= MAX_NAME_CHARS and not value.isspace() and (
        value.isascii() or _encodes(value))


def _plain_identifier(value) -> bool:
    """Whether ``value`` is an ``Ident`` for certain: printable ASCII, no space at either end nor two in a row
    (any other identifier goes to the model, which reads its scripts and form)."""
    return _plain_name(value) and value.isascii() and value.isprintable() and value[0] != " " \
        and value[-1] != " " and "  " not in value


def _plain_text(value) -> bool:
    """Whether ``value`` is a ``Text`` for certain."""
    if type(value) is not str:
        return False
    if value.isascii():
        return len(value) <= MAX_TEXT_BYTES
    try:
        return len(value.encode("utf-8")) <= MAX_TEXT_BYTES
    except UnicodeEncodeError:  # a lone surrogate: the model's error
        return False


def _encodes(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def common_perceive(fields: dict) -> dict | None:
    """``PerceiveInput(**fields)``'s field values (its ``__dict__``) when ``fields`` has the common
    shape and is valid for certain; None otherwise (then the model decides, and names the field)."""
    return common_perceive_many([fields])[0]


def common_perceive_many(events: list) -> list[dict | None]:
    """``common_perceive`` of each of ``events`` (a list), the batch in one C call (``recall/_scan.c``
    ``common_perceives``; ~2.5 µs of Python an event before, issue 28); ``py_common_perceive`` is its oracle."""
    return _scan.common_perceives(events, _PERCEIVE_FIELDS, _PERCEIVE_DEFAULTS, _KINDS, _SIGNALS, _ORIGINS,
                                  _IDENTIFIERS, _OPTIONAL_NAMES, _TEXTS, MAX_NAME_CHARS, MAX_TEXT_BYTES)


def py_common_perceive(fields) -> dict | None:
    """``common_perceive`` in Python: the oracle of ``common_perceives`` (tests/test_common_perceive.py).
    A key that is not exactly a ``str`` goes to the model: the C runs none of the caller's code."""
    if type(fields) is not dict or not all(type(k) is str for k in fields) \
            or not _PERCEIVE_FIELDS.issuperset(fields) or fields.get("ts") is not None:
        return None
    values = {**_PERCEIVE_DEFAULTS, **fields}
    if not _plain_identifier(values.get("tenant")) or type(values["kind"]) is not str or values["kind"] not in _KINDS:
        return None
    for name in _IDENTIFIERS:
        if values[name] is not None and not _plain_identifier(values[name]):
            return None
    for name in _OPTIONAL_NAMES:
        if values[name] is not None and not _plain_name(values[name]):
            return None
    for name in _TEXTS:
        if values[name] is not None and not _plain_text(values[name]):
            return None
    if _surely_blank(values["text"]) and _surely_blank(values["action"]):
        return None
    event_id, success, polarity = values["event_id"], values["success"], values["polarity"]
    if event_id is not None and not (_plain_name(event_id) and event_id.isascii() and event_id.isprintable()):
        return None
    if (success is not None and type(success) is not bool) or (
            polarity is not None and not (type(polarity) is float and -1.0 <= polarity <= 1.0)):
        return None
    for name, allowed in (("signal", _SIGNALS), ("origin", _ORIGINS)):
        if values[name] is not None and (type(values[name]) is not str or values[name] not in allowed):
            return None
    entities = values.get("entities", [])
    scope = values.get("scope", {})
    if type(entities) is not list or len(entities) > 256 or not all(map(_plain_name, entities)) \
            or type(scope) is not dict \
            or not all(_plain_name(k) and _plain_name(v) for k, v in scope.items()) \
            or not all(_plain_identifier(scope[k]) for k in IDENTITY_SCOPE_KEYS if k in scope):
        return None
    values["entities"], values["scope"] = list(entities), dict(scope)
    return values


class LearnInput(_Input):
    tenant: Ident
    agent: Ident | None = None
    task: Ident | None = None
    condition: Text
    action: Text
    reason: Text | None = None
    evidence: Text | None = None
    scope: Scope = Field(default_factory=dict)
    source: Source = "lived"
    citation: Text | None = None
    confidence: float | None = Field(default=None, ge=0.0, le=1.0, strict=True, allow_inf_nan=False)
    seed: bool = Field(default=False, strict=True)
    event_ids: list[Id] = Field(default_factory=list, max_length=1024)
    entities: list[Name] = Field(default_factory=list, max_length=256)
    fragment_id: Id | None = None

    @model_validator(mode="after")
    def _unit_is_actionable(self):
        if _blank(self.condition):
            raise _FieldProblem("condition", "'condition' must say when the unit applies")
        if _blank(self.action):
            raise _FieldProblem("action", "'action' must say what to do")
        if self.source == "read" and _cites_nothing(self.citation):
            raise _FieldProblem("citation", "read knowledge must give 'citation' naming its source, in letters or "
                                            "digits (it is right because of its source)")
        return self


class RecallInput(_Input):
    tenant: Ident
    agent: Ident | None = None
    task: Ident | None = None
    query: Text | None = None
    situation: dict[Literal["system", "identity", "action", "expected", "actual"], Text] = Field(default_factory=dict)
    trigger: Trigger | None = None
    scope: Scope = Field(default_factory=dict)
    budget_tokens: int = Field(default=400, ge=1, le=100_000, strict=True)
    k: int | None = Field(default=None, ge=1, le=1000, strict=True)
    layers: list[str] | None = None
    scene: Name | None = None  # the task type, for the scenario channel and scene beliefs
    user: Ident | None = None  # the user the agent serves, for user-layer beliefs
    emotion: Name | None = None  # the situation's emotion, for beliefs conditioned on it (else inferred)
    explain: bool = False  # every pooled candidate's full explanation in the recall record (else the returned ones')

    @model_validator(mode="after")
    def _needs_a_cue(self):
        if _blank(self.query) and not any(not _blank(v) for v in self.situation.values()):
            raise _FieldProblem("query", "give 'query' or a non-empty 'situation'")
        return self


class BelieveInput(_Input):
    tenant: Ident
    agent: Ident | None = None
    text: Text
    confidence: float = Field(ge=0.0, le=1.0, strict=True, allow_inf_nan=False)
    support: int = Field(default=0, ge=0, strict=True)
    status: Literal["active", "reviewing", "inactive"] = "active"
    scope: Scope = Field(default_factory=dict)
    event_ids: list[Id] = Field(default_factory=list, max_length=10_000)
    reason: Text | None = None
    belief_id: Id | None = None

    @model_validator(mode="after")
    def _says_something(self):
        if _blank(self.text):
            raise _FieldProblem("text", "a belief must state its rule")
        return self


class ApproveInput(_Input):
    tenant: Ident
    fragment_id: Id
    approver: Ident
    accept: bool = Field(default=True, strict=True)
    reason: Text | None = None


class InvalidateInput(_Input):
    tenant: Ident
    fragment_id: Id
    reason: Text
    version: Text | None = None  # the environment version that made it untrue ("IAM v2")
    evidence: list[Id] = Field(default_factory=list, max_length=1024)
    by: Ident | None = None

    @model_validator(mode="after")
    def _says_why(self):
        if _blank(self.reason):
            raise _FieldProblem("reason", "an invalidation must say what changed")
        return self


class OutcomeInput(_Input):
    tenant: Ident
    agent: Ident | None = None
    task: Ident | None = None
    recall_id: Id | None = None
    applied: list[Id] = Field(default_factory=list, max_length=1024)
    success: bool = Field(strict=True)
    steps: int | None = Field(default=None, ge=0, le=2**31 - 1, strict=True)  # an Avro int
    notes: Text | None = None


def validated(model: type[_Input], operation: str, /, **fields):
    """Build ``model`` from keyword input or raise InvalidInput naming the first bad field."""
    return validated_in(model, operation, fields, None)


def validated_in(model: type[_Input], operation: str, fields: dict, context: dict | None):
    """``validated`` with a validation context (``{"clock_skew": timedelta}``: a brain's own setting); a dict,
    not keywords, so that no caller's field can pass for the context."""
    try:
        return model.model_validate(fields, context=context)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "(input)"
        problem = err.get("ctx", {}).get("error")
        if isinstance(problem, _FieldProblem):
            where = problem.field
        message = err["msg"].removeprefix("Value error, ")
        raise InvalidInput(operation, where, message) from None
