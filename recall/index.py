"""The cue index: the recall read model, per tenant, built from the views and kept current.

Each document (a perceived event or a cognitive unit) is reachable through its words (BM25
over word tokens + CJK bigrams), through its *cues* (entity, scene, action, anomaly, cause,
time, scope and exact cues such as error codes, added to the same postings as prefixed
terms, ``@entity:iam``), and through its meaning (the semantic index, embedded in the
background). Next to the documents the index keeps what scoring needs and the views hold:
usage counters from outcome records, and the tenant's beliefs.

Built from the ``events``, ``fragments``, ``feedback`` and ``beliefs`` views when a Brain
opens, then kept current from the records the Brain appends (read-your-writes) or tails.
Tenants never share an index, which is the hard tenant wall: a recall cannot even see
another tenant's documents.
"""

from __future__ import annotations

import dataclasses
import heapq
import json
import operator
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache, partial
from itertools import compress, islice, repeat

import numpy as np
import orjson

from hindbrain.learning.write_gate import perception_class
from hindbrain.projections import beliefs, events, feedback, fragments, unit_states
from hindbrain.recall import _scan, keyed
from hindbrain.recall.arms import WINDOW_OPENED, WINDOW_SETTLED
from hindbrain.recall.asking import asking_share
from hindbrain.recall.cues import STRUCTURED_FIELDS, event_key, indexed_terms, indexed_terms_many
from hindbrain.recall.doc_table import DocTable, json_default
from hindbrain.recall.e5_dialogue import DIALOGUE_KINDS
from hindbrain.recall.id_numbers import IdNumbers, hex_batch
from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.provenance import (
    AGENT,
    SPOKEN,
    TEXT_FIELDS,
    UNSTATED,
    USER,
    Reason,
    event_quarantines,
    inherited_quarantine,
    lifted,
    paired,
    quarantine_text,
    rests_on,
    said_text,
    source_of,
    split_quarantine,
    started_cues,
    unit_quarantine_reason,
)
from hindbrain.recall.tokenize import SEPARATOR, estimate_tokens, joined_tokens, tokens
from hindbrain.schemas.api import InvalidInput
from hindbrain.schemas.decision_kinds import DecisionKind
from hindbrain.streams.processing import Decoded
from hindbrain.switching import LONG_TEXT_CHARS, RECALLS

LAYERS = ("episodic", "experience", "knowledge", "identity")  # identity: traits a human approved
TRAIT_RUNG = "trait"
EVENTS_MERGED = DecisionKind.EVENTS_MERGED  # write hygiene: the subjects were merged into a newer event
WINDOW_KINDS = (WINDOW_OPENED, WINDOW_SETTLED)  # a conflict's A/B window (jobs.windows)
CONFLICT_PENDING = DecisionKind.CONFLICT_PENDING  # two units, the same condition, different actions (jobs.forgetting)
EVENTS_COLD = DecisionKind.EVENTS_COLD  # cold storage: summary and vector kept in memory (jobs.archive)
COLD_SUMMARY_CHARS = 120
UNIT_SUPERSEDED = DecisionKind.UNIT_SUPERSEDED  # a user's newer statement: the old one's own words go with it
EVENTS_OUTDATED = DecisionKind.EVENTS_OUTDATED  # change detection (learner._outdate): an option that now fails
INDEX_DECISIONS = (EVENTS_MERGED, *WINDOW_KINDS, CONFLICT_PENDING, EVENTS_COLD, unit_states.UNIT_SHARED,
                   UNIT_SUPERSEDED, EVENTS_OUTDATED)
SHARED = 0  # the owner code of what every agent of the tenant may recall


def cold_summary(text: str) -> str:
    return text if len(text) <= COLD_SUMMARY_CHARS else text[: COLD_SUMMARY_CHARS - 1].rstrip() + "…"
_LAYER_CODE = {name: i for i, name in enumerate(LAYERS)}
_SITUATION_FIELDS = ("system", "identity", "action", "expected", "actual")
# Cue kinds the graph channel walks: fragments sharing an entity *and* an action form a chain.
LINK_PREFIXES = ("@entity:", "@action:")
COORDINATE_PREFIXES = ("@entity:", "@action:", "@scene:", "@anomaly:", "@cause:", "@time:", "@scope:")
# How far a raw event is to be trusted, by its signal's provenance (design.md §seed-001-4.1): an
# explicit statement 0.9, an implicit one 0.6, the agent's self-evaluation 0.4.
SIGNAL_CONFIDENCE = {"explicit": 0.9, "implicit": 0.6, "self": 0.4, None: 0.6}
FUNCTION_WORDS = frozenset({
    "a", "an", "the", "and", "or", "if", "then", "when", "is", "are", "be", "to", "of", "in", "on", "for", "with",
    "do", "does", "not", "it", "this", "that", "first", "else", "as", "by", "at", "from",
})


@dataclass(slots=True)
class Doc:
    id: str
    kind: str  # "event" | "fragment"
    layer: str
    text: str
    event_ids: list[str]
    source: str
    confidence: float
    scope: dict
    ts_us: int
    tokens: int = 0
    condition: str | None = None  # fragments: "when C"
    action: str | None = None  # fragments: "do A"; events: the action taken
    reason: str | None = None
    event_kind: str | None = None  # events: message | observation | action | anomaly | feedback | outcome
    status: str = "active"  # fragments: candidate | verified | stable | reviewing | invalid
    links: tuple[str, ...] = ()  # entity/action cue terms, for the graph channel
    exact: tuple[str, ...] = ()  # exact cues (codes, URLs, accounts, systems)
    conflicts: frozenset[str] = frozenset()  # ids of units this one is known to contradict
    last_used_us: int = 0  # the last outcome that applied it: freshness counts disuse from here
    owner: str | None = None  # the agent whose private memory holds it; None: shared in its tenant
    # A unit one agent verified and shared (not yet fleet-verified): {"learned_by", "agents",
    # "verified"}; recall ranks it below fleet-verified units and says so (design.md §issue-17).
    provenance: dict | None = None
    task: str | None = None  # events: the task that perceived it (its own recall has it in context)
    speaker: str | None = None  # events: who said it (a user's own turns are about that user)
    # Why it never steers another user's task (recall.provenance): a user's instruction-like
    # words (events), a rule steering money or the agent, or one resting on such words (units).
    quarantine: Reason | None = None  # in parts (``provenance.quarantine_text``)
    session: str | None = None  # events: the conversation it was perceived in (rendered with its quote)
    origin: str | None = None  # events: who produced the text, when the producer said (agent, user, tool, document)
    asks: float = 0.0  # events: the share of the text's sentences that are questions (recall.asking)
    fleet: bool = False  # units: independent agents verified it (``share``); it lifts a unit's quarantine
    evidence: str | None = None  # units: what showed it works (a promoted unit names its belief: its taint)
    # events: a report on how an option fared in a system, (system, identity, action, scope) (``system_report``):
    # every agent sees it (``owner`` did it), and the newest report on an option is the one that counts (recall.gate)
    report: tuple | None = None

    @property
    def fresh_since_us(self) -> int:
        return max(self.ts_us, self.last_used_us)


@dataclass(slots=True)
class Counters:
    """Usage counters of one item (design.md §D1), from outcome records, and the learner's verdicts."""

    applied: int = 0
    success: int = 0
    failure: int = 0
    contradiction: int = 0
    credited: int = 0  # applications the learner judged worked (``learning.attribution``)
    debited: int = 0  # ... and judged failed, though the task may have succeeded with another option
    unit: bool = False  # a cognitive unit: the learner judges it, so the reported outcomes alone never count

    @property
    def track(self) -> tuple[int, int]:
        """(worked, failed) as the utility channel counts them: the learner's verdicts on a unit
        (design.md §issue-29: applied, failed, then another option worked is a failure of it, not the task's
        success; round twenty-five: only applications its recall proved); the reported outcomes for what the
        learner does not judge (events, beliefs). A unit with no verdict yet has no track: outcomes that name
        it without a recall that injected it (forged, or a retry) would otherwise rank it for everyone."""
        if self.credited or self.debited or self.unit:
            return self.credited, self.debited
        return self.success, self.failure


@dataclass(slots=True)
class Belief:
    id: str
    text: str
    confidence: float
    support: int
    status: str
    scope: dict
    event_ids: list[str]
    ts_us: int
    tokens: int = 0
    cues: frozenset[str] = field(default_factory=frozenset)
    # Why it is never briefed to another user (design.md §issue-27: taint follows data): it rests on a
    # quarantined event or unit (``TenantIndex.add_belief``).
    quarantine: Reason | None = None  # in parts (``provenance.quarantine_text``)


Indexable = tuple[str, Doc, list[str]]  # (tenant, document, its cue terms)


# The labels ``situation_text`` writes: every situated event and query holds them, so a match
# on them alone says nothing about relevance (the gate's informative terms leave them out).
SITUATION_LABELS = frozenset(_SITUATION_FIELDS)


def situation_text(fields: dict) -> str:
    """``system: IAM / identity: normal account / ... / actual: no response``."""
    return " / ".join(f"{k}: {fields[k]}" for k in _SITUATION_FIELDS if fields.get(k))


def event_text(fields: dict):
    """An event document's text: what was said (after who said it: "When did Caroline …" names her), then its
    situation (``situation_text``); the oracle of ``event_texts``."""
    said, speaker = fields["text"], fields.get("speaker")
    if said and speaker:
        said = f"{speaker}: {said}"
    situation = situation_text(fields)
    return f"{said}{SEPARATOR}{situation}" if said and situation else said or situation


def event_texts(records: list[dict]) -> list:
    """``[event_text(f) for f in records]``, the batch in one C call (``recall/_scan.c``; ~1.1 -> ~0.3 µs an
    event, issue 28): the same f-string formatting of each value. ``event_said_texts`` with no record's words
    judged (the index's fold makes both at once)."""
    return event_said_texts(records, [AGENT] * len(records))[0]


def event_said_texts(records: list[dict], sources: list[str]) -> tuple[list, list[str]]:
    """``event_texts(records)`` and ``said_texts`` of the records whose words are judged (``sources``' not the
    agent's: ``event_quarantines``) in one C pass: each record's fields read once for both (issue 28, round
    twenty); the two calls stay its oracle."""
    return _scan.event_said_texts(records, _SITUATION_FIELDS, SEPARATOR, TEXT_FIELDS, sources, AGENT)


MASKS_KEPT = 8  # visible masks a tenant keeps (``visible_mask``): one per agent recalling lately, and its layers
RECENT_THREADS = 50_000  # threads whose last event is kept for the split-directive cue, per tenant
# How many of the oldest threads ``TenantIndex._forget_oldest_thread`` reads ahead in one walk of the dict.
FORGET_AHEAD = 1024


def _fields_of(doc: Doc) -> dict:
    """What ``split_quarantine`` reads of an indexed event: its words (speaker and situation
    included, as indexed) and who said it."""
    return _said_fields(doc.text, doc.speaker, doc.event_kind, doc.origin, doc.session)


def _said_fields(text: str, speaker, kind, origin, session) -> dict:
    said = text.removeprefix(f"{speaker}: ") if speaker else text  # ``event_doc`` prefixed it
    return {"kind": kind, "text": said, "speaker": speaker, "origin": origin, "session": session}


def _ts_us(ts) -> int:
    return ts if isinstance(ts, int) else int(ts.timestamp() * 1_000_000)


def _with_cues(doc: Doc, fields: dict) -> tuple[Doc, list[str]]:
    terms = indexed_terms(fields, doc.ts_us)
    doc.links, doc.exact = _links_and_exact(terms)
    return doc, list(terms)


@lru_cache(maxsize=1 << 12)
def _links_and_exact(terms: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The cue terms the graph channel walks, and the exact ones: per distinct term tuple (``indexed_terms``;
    the same bound)."""
    return (tuple(t for t in terms if t.startswith(LINK_PREFIXES)),
            tuple(t for t in terms if not t.startswith(COORDINATE_PREFIXES)))


def event_doc(event_id: str, fields: dict, ts_us: int, agent: str | None = None) -> tuple[Doc, list[str]]:
    """An event as a document and its cue terms; ``fields`` is a perception record or an
    ``events`` row. An event is episodic memory: private to the ``agent`` that perceived it."""
    return event_docs([(event_id, fields, ts_us, agent)])[0]


EventRow = tuple[str, dict, int, "str | None"]  # (event id, perception record or ``events`` row, ts_us, agent)


def event_docs(rows: list[EventRow]) -> list[tuple[Doc, list[str]]]:
    """``event_doc`` of each row, the batch's exact cues and quarantine judged at once (issue 28:
    ``cues.exact_cues_many``, ``provenance.event_quarantines``) and its documents put together in one C call
    (``event_docs_of``): the same documents and terms."""
    return event_docs_of(rows, *_event_parts(rows))


def event_columns(rows: list[EventRow]) -> EventColumns:
    """``event_docs`` of ``rows`` as columns (``event_columns_of``): what the fold adds (``TenantIndex.add_events``)
    without a ``Doc`` an event."""
    return event_columns_of(rows, *_event_parts(rows))


def _event_parts(rows: list[EventRow]) -> tuple[list, list[tuple[str, ...]], list[str | None]]:
    """The batch's texts, cue terms and quarantine verdicts, each made for the batch at once."""
    records = [fields for _, fields, _, _ in rows]
    agents = [agent for _, _, _, agent in rows]
    keys, sources = event_keys(records, agents)
    texts, said = event_said_texts(records, sources)
    # the quarantine's walk of the said texts runs on another core while this thread makes the cue terms (issue 28,
    # round twenty-two): ~0.8 µs an event off the caller's thread, which bounds perceive_many
    started = started_cues(said)
    terms = indexed_terms_many(records, [ts_us for _, _, ts_us, _ in rows], keys)
    RECALLS.pause()  # a long text's fold gives way between its stages (hindbrain/switching.py)
    quarantines = event_quarantines(records, agents, sources, said, started)
    RECALLS.pause()
    return texts, terms, quarantines


def event_keys(records: list[dict], agents: list[str | None]) -> tuple[list[tuple], list[str]]:
    """Each record's cue key (``cues.event_key``) and the source of its words (``provenance.source_of``), the
    records' fields read once in one C call (``recall/_scan.c`` ``event_keys``: two per-record Python passes of
    ~0.6 and ~0.3 µs an event, issue 28); ``py_event_keys`` is its oracle."""
    return _scan.event_keys(records, agents, STRUCTURED_FIELDS, SPOKEN, USER, UNSTATED)


def py_event_keys(records: list[dict], agents: list[str | None]) -> tuple[list[tuple], list[str]]:
    """``event_keys`` record by record: the oracle."""
    return ([event_key(fields) for fields in records],
            [source_of(fields.get("kind"), fields.get("speaker"), agent, fields.get("origin"))
             for fields, agent in zip(records, agents, strict=True)])


def event_docs_of(rows: list[EventRow], texts: list, terms: list[tuple[str, ...]],
                  quarantines: list[Reason | None]) -> list[tuple[Doc, list[str]]]:
    """``py_event_docs_of`` in one C call (``recall/_scan.c`` ``event_docs``: the record's fields read the same
    way, ``system_report`` in C, ``asking_share`` and ``_field_terms`` called only where they can give something,
    the ``Doc`` made with positional values: ~6 µs of per-event Python, issue 28)."""
    return _scan.event_docs(rows, texts, terms, quarantines, _EVENT_DOC_SPEC)


def py_event_docs_of(rows: list[EventRow], texts: list, terms: list[tuple[str, ...]],
                     quarantines: list[Reason | None]) -> list[tuple[Doc, list[str]]]:
    """Each row's document (its ``text``, cue ``terms`` and ``quarantine`` made for the batch) and its index
    terms; the oracle of ``event_docs_of``."""
    out = []
    for (event_id, fields, ts_us, agent), text, cues, quarantine in zip(rows, texts, terms, quarantines,
                                                                         strict=True):
        get = fields.get
        speaker = get("speaker")
        doc = Doc(event_id, "event", "episodic", text, [event_id], "perceived",
                  SIGNAL_CONFIDENCE.get(get("signal"), _UNSIGNALLED), dict(fields["scope"]), ts_us,
                  action=get("action"), event_kind=get("kind"), owner=agent or None, report=system_report(fields),
                  task=get("task") or (get("envelope") or {}).get("task"), speaker=speaker, quarantine=quarantine,
                  session=get("session"), origin=get("origin"), asks=asking_share(fields["text"] or ""))
        doc.links, doc.exact = _links_and_exact(cues)
        out.append((doc, [*cues, *_field_terms(fields)]))
    return out


def event_columns_of(rows: list[EventRow], texts: list, terms: list[tuple[str, ...]],
                     quarantines: list[Reason | None]) -> EventColumns:
    """``event_docs_of``'s values by field in one C call (``recall/_scan.c`` ``event_columns``: the same values,
    read the same way, no ``Doc`` made); the oracle is ``py_event_columns_of``."""
    return EventColumns(*_scan.event_columns(rows, texts, terms, quarantines, _EVENT_DOC_SPEC))


def py_event_columns_of(rows: list[EventRow], texts: list, terms: list[tuple[str, ...]],
                        quarantines: list[Reason | None]) -> EventColumns:
    """``py_event_docs_of``'s documents turned into columns: the oracle of ``event_columns_of``."""
    docs = py_event_docs_of(rows, texts, terms, quarantines)
    return EventColumns([[getattr(doc, name) for doc, _ in docs] for name in NATIVE_DOC_ORDER],
                        [cues for _, cues in docs])


class EventColumns:
    """A batch's event documents as columns: ``columns[f][k]`` is event ``k``'s value of ``Doc`` field ``f``
    (``NATIVE_DOC_ORDER``), ``terms[k]`` its index terms. The fold reads a field for the whole batch
    (``TenantIndex.add_events``) and packs the rows straight from the columns (issue 28: a ``Doc`` an event,
    made, read field by field and packed, was ~6 µs of the ~25 an event the index took)."""

    __slots__ = ("columns", "terms")

    def __init__(self, columns: list[list], terms: list[list[str]]):
        if len(columns) != len(NATIVE_DOC_ORDER) or any(len(c) != len(terms) for c in columns):
            raise ValueError(f"event columns: {len(NATIVE_DOC_ORDER)} columns of {len(terms)} values each expected")
        self.columns, self.terms = columns, terms

    def __len__(self) -> int:
        return len(self.terms)

    def __getitem__(self, name: str) -> list:
        return self.columns[_AT[name]]

    def taken(self, at: list[int]) -> EventColumns:
        """The events at these places, in this order."""
        return EventColumns([[column[k] for k in at] for column in self.columns], [self.terms[k] for k in at])

    def docs(self) -> list[tuple[Doc, list[str]]]:
        """The batch as ``(Doc, terms)`` pairs (what ``add_many`` takes: the per-document fold, kept as oracle)."""
        return [(Doc(*values), cues) for values, cues in zip(zip(*self.columns, strict=True), self.terms, strict=True)]

    def said_fields(self, k: int) -> dict:
        """``_fields_of`` event ``k``."""
        return _said_fields(self["text"][k], self["speaker"][k], self["event_kind"][k], self["origin"][k],
                            self["session"][k])

    def rows(self) -> Iterator[bytes]:
        """Each event's packed row (``doc_table.packed`` of its ``Doc``, byte for byte), made as it is read:
        the columns zipped and dumped in C, no object an event but the row's tuple (the batch's rows all held
        at once grew the heap by ~2.4 MB a batch and cost more than they saved: 4.7 µs an event against 3.0 in a
        ``Brain``). An event conflicts with nothing when added, so its empty ``conflicts`` set is written as the
        empty list ``json_default`` makes of it, without that call."""
        columns = list(self.columns)
        conflicts = columns[_AT["conflicts"]]
        if not any(conflicts):
            columns[_AT["conflicts"]] = repeat((), len(conflicts))
        return map(_dumps_row, zip(*columns, strict=True))


_UNSIGNALLED = SIGNAL_CONFIDENCE[None]


def system_report(fields: dict) -> tuple | None:
    """What option an event reports on when it says how that option fared in a named system ("Mailer: smtp
    relay failed"): (system, identity, action, scope), lower-cased; None for any other event. Such a report
    is a fact about the system every agent meets, not the agent's private experience, so it is shared from
    the start (design.md §issue-29; docs/fleet-memory.md). Kept private otherwise (what an agent was told,
    thought or noted), and a quarantined report still reaches no other user's task (``recall.gate``)."""
    get = fields.get  # no generator: this runs for every perceived event
    if not (get("system") and (get("action") or get("identity")) and get("kind") in ("action", "anomaly", "outcome")
            and (isinstance(get("success"), bool) or get("kind") == "anomaly")):
        return None
    scope = tuple(sorted([(str(k), str(v)) for k, v in (get("scope") or {}).items()]))
    return (_spaced(get("system")), _spaced(get("identity")), _spaced(get("action")), scope)


def _spaced(value) -> str:
    """``value`` lower-cased, its runs of white space one space, stripped ("" for None)."""
    return " ".join(str(value or "").lower().split())


def _field_terms(fields: dict) -> list[str]:
    """Structured fields a free-text query may name: the session as a cue, the entities'
    words (a question says "the change request", not ``@entity:change request``), and the
    speaker when the text does not carry it (no text: an action-only event)."""
    terms = []
    if fields.get("session"):
        session = str(fields["session"])
        terms.append(f"@session:{session.strip().lower()}")
        terms += [t for t in tokens(session) if len(t) > 1 and not t.isdigit()]  # "s-3", not "3"
    if fields.get("speaker") and not fields.get("text"):
        terms += tokens(str(fields["speaker"]))
    for entity in fields.get("entities") or ():
        terms += tokens(str(entity))
    return terms


# The order ``recall/_scan.c``'s ``event_docs`` fills a ``Doc``'s fields in (positional: keyword arguments were
# ~1.5 µs of an event's ~2 for the object): a field added to or moved in ``Doc`` must be added there too.
NATIVE_DOC_ORDER = ("id", "kind", "layer", "text", "event_ids", "source", "confidence", "scope", "ts_us", "tokens",
                    "condition", "action", "reason", "event_kind", "status", "links", "exact", "conflicts",
                    "last_used_us", "owner", "provenance", "task", "speaker", "quarantine", "session", "origin",
                    "asks", "fleet", "evidence", "report")


def _native_doc_spec() -> tuple:
    """What ``_scan.event_docs`` needs: ``Doc``, each field's default (None where it has none: the C sets those),
    the signals' confidences and the Python it calls where a record needs it."""
    names = tuple(f.name for f in dataclasses.fields(Doc))
    if names != NATIVE_DOC_ORDER:
        raise TypeError(f"recall/_scan.c's event_docs fills Doc's fields as {NATIVE_DOC_ORDER}, Doc has {names}")
    defaults = tuple(None if f.default is dataclasses.MISSING else f.default for f in dataclasses.fields(Doc))
    return (Doc, defaults, SIGNAL_CONFIDENCE, _UNSIGNALLED, _links_and_exact, _field_terms, asking_share)


def fragment_doc(row: dict) -> tuple[Doc, list[str]]:
    """A fragment as a document and its cue terms, from a ``fragments`` row."""
    doc = Doc(row["fragment_id"], "fragment", row["layer"], row["text"], list(row["event_ids"]), row["source"],
              float(row["confidence"]), dict(row["scope"]), _ts_us(row["ts"]), condition=row["condition"],
              action=row["action"], reason=row["reason"], status=row["status"],
              owner=fragments.private_to(row["agent"], row["seed"]), evidence=row.get("evidence"),
              quarantine=unit_quarantine_reason(said_text(row), row["seed"]))
    return _with_cues(doc, {**row, "text": row["condition"]})  # the rendered text would repeat the action


_EVENT_DOC_SPEC = _native_doc_spec()
_AT = {name: at for at, name in enumerate(NATIVE_DOC_ORDER)}
_dumps_row = partial(orjson.dumps, default=json_default)  # doc_table.packed's call, on a row's tuple


def belief_of(row: dict) -> Belief:
    """A belief from a ``beliefs`` row."""
    cues = frozenset(t for t in tokens(row["text"]) if t not in FUNCTION_WORDS)
    return Belief(row["belief_id"], row["text"], float(row["confidence"]), int(row["support"]), row["status"],
                  dict(row["scope"]), list(row["event_ids"]), _ts_us(row["ts"]), estimate_tokens(row["text"]), cues)


def indexables(batch: list[Decoded]) -> tuple[dict[str, EventColumns], list[Indexable]]:
    """What ``batch`` adds to the index: its events by tenant as columns, made at once for each tenant
    (``event_columns``), and its units (``indexable`` of each other record), in log order."""
    rows: dict[str, list[EventRow]] = {}
    units: list[Indexable] = []
    for decoded in batch:
        if decoded.record_type == "perception":
            record = decoded.record
            if perception_class(record) == "transactional":
                continue
            env = record["envelope"]
            rows.setdefault(env["tenant"], []).append((env["record_id"], record, env["ts_us"], env["agent"]))
        elif decoded.record_type == "cognition":
            units.extend(indexable(decoded))
    return {tenant: event_columns(part) for tenant, part in rows.items()}, units


_FOLDED_IN_ANY_ORDER = frozenset({"perception", "recall", "injection"})  # nothing of one rests on another


def fold_parts(batch: list[Decoded]) -> list[list[Decoded]] | None:
    """None when ``batch`` holds no text of ``LONG_TEXT_CHARS`` or more (folded whole, as ever).
    Else its parts, each folded after the recalls in flight (``hindbrain.switching.RecallPrecedence``):
    each long text alone and the runs of records between them (a replayed chunk of short events stays
    one batch around its long texts), when the batch holds only records whose fold is the same in
    parts (perceptions, and a recall's records, which the index does not read); else the batch whole."""
    long = [d.record_type == "perception" and len(d.record.get("text") or "") >= LONG_TEXT_CHARS for d in batch]
    if not any(long):
        return None
    if any(d.record_type not in _FOLDED_IN_ANY_ORDER for d in batch):
        return [batch]
    parts: list[list[Decoded]] = []
    for n, (decoded, alone) in enumerate(zip(batch, long, strict=True)):
        if not parts or alone or long[n - 1]:
            parts.append([])
        parts[-1].append(decoded)
    return parts


def indexable(decoded: Decoded) -> list[Indexable]:
    """What a freshly appended record adds to the index (events and fragments)."""
    record = decoded.record
    if decoded.record_type == "perception":
        env = record["envelope"]
        if perception_class(record) == "transactional":
            return []
        return [(env["tenant"], *event_doc(env["record_id"], record, env["ts_us"], env["agent"]))]
    if decoded.record_type == "cognition":
        return [(row["tenant"], *fragment_doc(row))
                for row in fragments.project(decoded.record_type, record, decoded.position)]
    return []


class TenantIndex:
    def __init__(self):
        self.bm25 = BM25Index()
        self.docs = DocTable(Doc)  # packed rows; a document is an object once read (recall.doc_table)
        self.by_id = IdNumbers()  # id → number: ~20 bytes an id, not a dict's ~130 (recall.id_numbers)
        self.counters: dict[str, Counters] = {}
        self.beliefs: dict[str, Belief] = {}
        self.windows: dict[str, tuple[str, str]] = {}  # open A/B windows: id → (belief A, belief B)
        self._layers = np.empty(1024, dtype=np.uint8)
        self._owners = np.empty(1024, dtype=np.int32)  # SHARED or the code of the agent it is private to
        self.agent_codes: dict[str, int] = {}
        # Stored items (``recall.keyed``): each item's newest version; the older ones are retired,
        # never candidates again (an item rewritten 1,000 times must not fill the pool with them).
        self.versions: dict[tuple[str, str], int] = {}
        self._retired = np.zeros(1024, dtype=bool)
        self.retired = 0
        # (layers, agent) → (the columns' stamp it was made at, the read-only mask): an agent's next recall
        # reads its mask back instead of comparing 100k owners again (~0.1 ms), and the lexical view
        # knows the same object without comparing it (``BM25Index._view``). ``_changed`` counts the
        # changes of a known document's layer or owner; a retirement (it comes with its newer version or
        # tombstone) and a new agent's code come with a new document, which changes the count
        self._masks: dict[tuple, tuple[tuple[int, int], np.ndarray | None]] = {}
        self._changed = 0
        self.last_said: dict[tuple, int] = {}  # (agent, session or task, speaker) → its last event's number
        self._oldest: tuple[dict, list[tuple[tuple, int]], int] = ({}, [], 0)  # _forget_oldest_thread's read-ahead
        self.persons: dict[str, str] = {}  # lower-cased name → a user some unit is personal to (``person_named``)

    def add_many(self, docs: list[tuple[Doc, list[str]]]) -> list[Doc]:
        """Index documents with their cue terms; a redelivered id is skipped. Returns
        the documents added (numbered in order from ``len(docs)`` before the call)."""
        fresh, seen, adding = [], set(), {}
        by_id = self.by_id
        for (doc, cues), known in zip(docs, by_id.get_many([doc.id for doc, _ in docs]), strict=True):
            if known is not None or doc.id in seen:
                continue
            seen.add(doc.id)
            doc.tokens = estimate_tokens(doc.text)
            if doc.kind == "fragment":  # the words it was learned from say more than its own cue
                doc.quarantine = inherited_quarantine(rests_on(doc.event_ids, doc.evidence), self.stored_quarantine) \
                    or doc.quarantine
            else:
                no = len(self.docs) + len(fresh)  # the number it gets below
                adding[no] = doc
                self._judge_with_previous(doc, no, adding)
            fresh.append((doc, cues))
        if not fresh:
            return []
        first = self._number([doc.text for doc, _ in fresh], [cues for _, cues in fresh],
                             [_LAYER_CODE[doc.layer] for doc, _ in fresh],
                             [SHARED if doc.report else self.agent_code(doc.owner) for doc, _ in fresh])
        for n, (doc, _) in enumerate(fresh, first):
            self.docs.append(doc)
            if doc.kind == "fragment" and isinstance(doc.scope.get("user"), str):
                self.persons.setdefault(doc.scope["user"].strip().lower(), doc.scope["user"])
            if doc.kind == "event":
                self._take_version(n, doc.scope)
        self.bm25.publish()  # searchable once the table holds the documents a search finds
        by_id.put_many([doc.id for doc, _ in fresh], first)  # after the documents: a reader finds an id's number
        self.docs.pack()  # the batch is done with: its documents become rows until read
        return [doc for doc, _ in fresh]

    def add_events(self, batch: EventColumns) -> EventColumns | None:
        """``add_many`` of a batch of events given as columns (``event_columns``), each field read for the
        batch and the rows packed from the columns: no ``Doc`` made. The same numbers, rows, postings,
        threads and versions as ``add_many(batch.docs())`` (its oracle). Returns the events added (a
        redelivered id skipped), numbered in order from ``len(docs)`` before the call; None if none."""
        ids = batch["id"]
        parsed = hex_batch(ids)  # the ids' 128 bits, for the look-up and the numbering (id_numbers)
        known = self.by_id.get_many(ids, parsed)
        if known.count(None) != len(ids) or len(set(ids)) != len(ids):  # a redelivery: rare
            batch = batch.taken(_fresh_at(ids, known))
            ids = batch["id"]
            parsed = hex_batch(ids)
        if not ids:
            return None
        first = len(self.docs)
        texts = batch["text"]
        batch.columns[_AT["tokens"]] = list(map(_scan.estimate_tokens, texts))  # tokenize.estimate_tokens's C
        self._judge_batch(batch, first)
        at = self._number(texts, batch.terms, list(map(_LAYER_CODE.__getitem__, batch["layer"])),
                          self._owner_codes(batch["owner"], batch["report"]))
        for no, scope in enumerate(batch["scope"], first):
            if keyed.STORE_KEY in scope:  # a stored item's version (the test item_of makes first)
                self._take_version(no, scope, batch, first)
        self.docs.append_packed(batch.rows())
        self.bm25.publish()  # searchable once the table holds the documents a search finds
        self.by_id.put_many(ids, at, parsed)  # after the rows: a reader finds an id's number
        return batch

    def _owner_codes(self, owners: list[str | None], reports: list[tuple | None]) -> np.ndarray:
        """Each event's owner code: ``SHARED`` for a system report, else its agent's (``agent_code``, asked in
        the events' order and only for events that are not reports, as the per-document fold asks)."""
        private = np.fromiter(map(operator.not_, reports), dtype=bool, count=len(reports))
        codes = {owner: self.agent_code(owner) for owner in dict.fromkeys(compress(owners, private))}
        out = np.full(len(owners), SHARED, dtype=np.int32)
        out[private] = list(map(codes.__getitem__, compress(owners, private)))
        return out

    def _judge_batch(self, batch: EventColumns, first: int) -> None:
        """``_judge_with_previous`` of each event of ``batch`` (numbered from ``first``), in order."""
        quarantines, owners, sessions, tasks = batch["quarantine"], batch["owner"], batch["session"], batch["task"]
        for k, before_no in self._said_in_batch(owners, sessions, tasks, batch["speaker"], first):
            if quarantines[k] or not (sessions[k] or tasks[k]):
                continue
            owner = owners[k]
            j = before_no - first  # the event before it, in this batch (j >= 0) or in the table
            before = None if j >= 0 else self.docs.peek(before_no)
            if quarantines[j] if before is None else before.quarantine:
                continue
            said_before = batch.said_fields(j) if before is None else _fields_of(before)
            if reason := split_quarantine(said_before, batch.said_fields(k), owner):
                quarantines[k] = reason
                if before is None:
                    quarantines[j] = paired(reason, batch["id"][k])
                else:
                    self.docs[before_no].quarantine = paired(reason, batch["id"][k])

    def _said_in_batch(self, owners: list, sessions: list, tasks: list, speakers: list,
                       first: int) -> list[tuple[int, int]]:
        """``_said_in`` of each event of a batch numbered from ``first``, in order, in one C call
        (``_scan.threads_said``: the per-event tuple, pop, store and call were ~0.7 µs an event at 100k, issue 28
        round twenty-one): ``(k, number said before)`` of each event ``k`` whose thread had one (most begin theirs).
        The same dict, order and read-ahead as the per-event calls (its oracle)."""
        found, self._oldest = _scan.threads_said(self.last_said, self._oldest, owners, sessions, tasks, speakers,
                                                 first, RECENT_THREADS, FORGET_AHEAD)
        return found

    def _said_in(self, thread: tuple, no: int) -> int | None:
        """Notes event ``no`` as ``thread``'s last (the newest thread last: the oldest is forgotten first) and
        returns the number of the event said before it in that thread, if one is remembered."""
        before_no = self.last_said.pop(thread, None)
        self.last_said[thread] = no
        if len(self.last_said) > RECENT_THREADS:
            self._forget_oldest_thread()
        return before_no

    def _number(self, texts: list[str], terms: list, layers: list[int], owners) -> int:
        """New documents' postings and per-document columns (layer, owner, not retired): their first number.
        The postings stay hidden from searches until the caller's ``bm25.publish`` (its rows are in the table).
        One document's postings go to the terms' tails (no segment of one); a batch's are tokenised, numbered
        and made a segment in one pass (recall.lexical.add_texts)."""
        if len(texts) == 1:
            first = self.bm25.add(joined_tokens(texts[0]) + terms[0], hidden=True)
        else:
            first = self.bm25.add_texts(texts, terms, hidden=True)
        end = first + len(texts)
        self._grow(end)
        self._layers[first:end] = layers
        self._owners[first:end] = owners
        self._retired[first:end] = False
        return first

    def _grow(self, end: int) -> None:
        """The per-document arrays hold documents up to ``end``."""
        if end > len(self._layers):
            self._layers = np.resize(self._layers, max(2 * len(self._layers), end))
            self._owners = np.resize(self._owners, len(self._layers))
            self._retired = np.resize(self._retired, len(self._layers))

    def person_named(self, text: str) -> str | None:
        """The one user ``text`` names (a whole word, any case) among the users this tenant holds personal
        units for, or None (nobody, or several: whose recall it is stays open)."""
        if not self.persons or not text:
            return None
        said = f" {' '.join(tokens(text))} "
        named = {name for key, name in self.persons.items()
                 if f" {' '.join(tokens(key))} " in said or (not key.isascii() and key in text)}
        return next(iter(named)) if len(named) == 1 else None

    def _judge_with_previous(self, doc: Doc, no: int, adding: dict[int, Doc]) -> None:
        """A directive in one event and its number in the next (one speaker of one session or
        task): both are quarantined (``recall.provenance.split_quarantine``). ``no``: ``doc``'s
        number; ``adding``: the documents of this batch not in the table yet, by number."""
        before_no = self._said_in((doc.owner, doc.session or doc.task, doc.speaker), no)
        if before_no is None or doc.quarantine or not (doc.session or doc.task):
            return
        before = adding.get(before_no) or self.docs.peek(before_no)  # read only: no object kept
        if before.quarantine:
            return
        if reason := split_quarantine(_fields_of(before), _fields_of(doc), doc.owner):
            doc.quarantine = reason
            changed = adding.get(before_no) or self.docs[before_no]  # kept: it changes
            changed.quarantine = paired(reason, doc.id)

    def _forget_oldest_thread(self) -> None:
        """Deletes ``last_said``'s first (least recently said) thread. ``next(iter(dict))`` walks every
        slot deleted before the first key, and with one thread forgotten an event past ``RECENT_THREADS``
        that was ~25 µs an event by 100k (issue 28). So the first ``FORGET_AHEAD`` (thread, number) pairs
        are read in one walk, and each is forgotten in turn unless its number changed since (said again:
        it moved to the end). Numbers only grow, so the first unchanged one is the oldest: the same thread
        the walk would find."""
        said = self.last_said
        of, ahead, at = self._oldest
        while True:
            if of is not said or at == len(ahead):  # a restored dict (index_snapshot) or the read-ahead used up
                of, ahead, at = said, list(islice(said.items(), FORGET_AHEAD)), 0
            thread, no = ahead[at]
            at += 1
            if said.get(thread) == no:
                del said[thread]
                self._oldest = (of, ahead, at)
                return

    def add_belief(self, belief: Belief) -> None:
        """A belief, tainted by what it rests on: one resting on a quarantined event or unit is
        quarantined the same way (a summary quoting a quarantined ``actual=`` word for word)."""
        belief.quarantine = inherited_quarantine(belief.event_ids, self.stored_quarantine)
        self.beliefs[belief.id] = belief

    def _take_version(self, no: int, scope: dict, batch: EventColumns | None = None, first: int = 0) -> None:
        """A stored item's new version (``recall.keyed``, in log order; ``scope``: document ``no``'s)
        retires the one before it; a tombstone retires itself too. ``batch``: the events being added as
        columns, numbered from ``first`` (not in the table yet: a status changes in its column)."""
        item = keyed.item_of(scope)
        if item is None:
            return
        previous = self.versions.get(item)
        self.versions[item] = no
        if previous is not None and not self._retired[previous]:
            self._retire(previous, keyed.retired_status(scope), batch, first)
        if keyed.is_tombstone(scope):
            self._retire(no, keyed.DELETED, batch, first)

    def _retire(self, no: int, status: str, batch: EventColumns | None = None, first: int = 0) -> None:
        if batch is not None and no >= first:
            batch["status"][no - first] = status
        else:
            self.docs[no].status = status
        self._retired[no] = True
        self.retired += 1

    def quarantine_of(self, doc_id: str) -> str | None:
        """Why an indexed event or unit is quarantined (``recall.provenance``), in the audit's words, or None."""
        reason = self.stored_quarantine(doc_id)
        return None if reason is None else quarantine_text(reason)

    def stored_quarantine(self, doc_id: str) -> Reason | None:
        """Why an indexed event, unit or belief is quarantined, in parts (``provenance.quarantine_text``), or
        None; a unit independent agents verified says its quarantine is lifted."""
        no = self.by_id.get(doc_id)
        doc = None if no is None else self.docs.peek(no)
        if doc is None:
            belief = self.beliefs.get(doc_id)
            return belief.quarantine if belief is not None else None
        if not doc.quarantine:
            return None
        return lifted(doc.quarantine) if doc.fleet else doc.quarantine

    def set_state(self, doc_id: str, status: str, confidence: float | None, rung: str | None = None) -> None:
        no = self.by_id.get(doc_id)
        if no is not None:
            self.docs[no].status = status
            if confidence is not None:
                self.docs[no].confidence = confidence
            if rung == TRAIT_RUNG:  # an approved trait moves to the identity layer
                self.docs[no].layer = "identity"
                self._layers[no] = _LAYER_CODE["identity"]
                self._changed += 1

    def apply_decision(self, kind: str, subject_ids: list[str], payload_json: str | None = None) -> None:
        """What a decision of ``INDEX_DECISIONS`` changes here; the same whether it was just
        appended or is read back on load (only a share reads the payload)."""
        if kind == EVENTS_MERGED:
            for event_id in subject_ids:
                self.set_state(event_id, "merged", None)
        elif kind in WINDOW_KINDS:
            self.apply_window(kind, subject_ids)
        elif kind == CONFLICT_PENDING:
            self.add_conflict(*subject_ids[:2])
        elif kind == EVENTS_COLD:
            self.cool(subject_ids)
        elif kind == unit_states.UNIT_SHARED:
            self.share(subject_ids[0], json.loads(payload_json).get("unit") if payload_json else None)
        elif kind == UNIT_SUPERSEDED:
            self.supersede_statements(subject_ids)
        elif kind == EVENTS_OUTDATED:
            for event_id in subject_ids:
                self.set_state(event_id, "outdated", None)

    def supersede_statements(self, fragment_ids: list[str]) -> None:
        """The statements a superseded unit was extracted from are superseded with it: the
        user's own old words ("always bullet points") must not come back beside the new rule."""
        for fragment_id in fragment_ids:
            no = self.by_id.get(fragment_id)
            for event_id in self.docs.peek(no).event_ids if no is not None else ():
                self.set_state(event_id, "superseded", None)

    def cool(self, event_ids: list[str]) -> None:
        """Cold storage: these events keep a summary (and their vector); the full text is
        dropped from memory (the log keeps it)."""
        for event_id in event_ids:
            no = self.by_id.get(event_id)
            if no is not None:
                doc = self.docs[no]
                doc.text = cold_summary(doc.text)
                doc.tokens = estimate_tokens(doc.text)

    def add_conflict(self, a: str, b: str) -> None:
        """A conflict pending between two units: the gate keeps whichever ranks higher."""
        for one, other in ((a, b), (b, a)):
            no = self.by_id.get(one)
            if no is not None:
                self.docs[no].conflicts = self.docs[no].conflicts | {other}

    def apply_window(self, kind: str, subject_ids: list[str]) -> None:
        """``ab_window_opened`` / ``ab_window_settled`` (subjects: window, belief A, belief B)."""
        window_id, a, b = subject_ids[:3]
        if kind == WINDOW_KINDS[0]:
            self.windows[window_id] = (a, b)
        else:
            self.windows.pop(window_id, None)

    def agent_code(self, agent: str | None) -> int:
        if agent is None:
            return SHARED
        return self.agent_codes.setdefault(agent, len(self.agent_codes) + 1)

    def visible_mask(self, layers: list[str] | None, agent: str | None = None) -> np.ndarray | None:
        """What a recall may see: the ``layers`` asked for, of the tenant's shared memory and
        of ``agent``'s private memory. A recall that names no agent is the tenant's own view
        (an operator, a single-agent app) and sees all of it: privacy between agents decides
        what enters each agent's context; the access boundary is the tenant. Never a stored
        item's replaced or deleted version (``recall.keyed``). None: everything.

        The mask is read-only and kept until a document is added (a retirement comes with one) or a
        known one's layer or owner changes (``_masks``), so an agent's recalls share one."""
        key = (tuple(layers) if layers else None, agent)
        # read before the mask is made: a change while it is made leaves it under the older stamp, made again
        stamp = (len(self.docs), self._changed)
        kept = self._masks.get(key)
        if kept is not None and kept[0] == stamp:
            return kept[1]
        mask = self._live(self._visible(layers, agent))
        if mask is not None:
            mask.flags.writeable = False
        self._masks.pop(key, None)
        if len(self._masks) >= MASKS_KEPT:
            del self._masks[next(iter(self._masks))]  # the least recently made
        self._masks[key] = (stamp, mask)
        return mask

    def _live(self, mask: np.ndarray | None) -> np.ndarray | None:
        """``mask`` less the retired documents."""
        if not self.retired:
            return mask
        live = ~self._retired[: len(self.docs)]
        return live if mask is None else mask & live

    def _visible(self, layers: list[str] | None, agent: str | None) -> np.ndarray | None:
        n = len(self.docs)
        mask = np.isin(self._layers[:n], [_LAYER_CODE[name] for name in layers]) if layers else None
        code = self.agent_codes.get(agent) if agent else None
        if not agent or not self.agent_codes or (code is not None and len(self.agent_codes) == 1):
            return mask  # no agent named, nothing private here, or all of it is this agent's
        owners = self._owners[:n]
        visible = (owners == SHARED) | (owners == code) if code is not None else owners == SHARED
        return visible if mask is None else mask & visible

    def share(self, doc_id: str, unit: dict | None = None) -> None:
        """A private unit was verified: every agent may recall it now. ``unit`` (the decision's
        state of it) says who stands behind it; verified by one agent only, it keeps its
        provenance."""
        no = self.by_id.get(doc_id)
        if no is not None:
            doc = self.docs[no]
            agents = list((unit or {}).get("agents") or ([doc.owner] if doc.owner else []))
            # ``fleet`` (lifecycle.Unit): shared because the fleet verified it; a payload from
            # before design.md §issue-17 has no flag, and then only the fleet's verification shared a unit
            if unit is not None and not unit.get("fleet", True):
                doc.provenance = {"learned_by": agents[0] if agents else None, "agents": len(agents),
                                  # deliveries (``lifecycle.deliveries``): successes no injection proved left out
                                  "verified": int(unit.get("successes") or 0) - int(unit.get("unproven") or 0)}
            else:
                doc.provenance, doc.fleet = None, True
            doc.owner = None
            self._owners[no] = SHARED
            self._changed += 1

    def count_outcome(self, applied: list[str], success: bool, ts_us: int = 0) -> None:
        for item in dict.fromkeys(applied):
            no = self.by_id.get(item)
            held = None if no is None else self.docs.peek(no)  # read once: a packed row is unpacked per peek
            if held is not None and ts_us > held.last_used_us:
                self.docs[no].last_used_us = ts_us
            c = self.counters.setdefault(item, Counters())
            c.unit = c.unit or (held is not None and held.kind == "fragment")
            c.applied += 1
            if success:
                c.success += 1
            else:
                c.failure += 1


class RecallIndex:
    """Every tenant's cue index, plus the semantic index (``semantic``, optional)."""

    def __init__(self, semantic=None):
        self.tenants: dict[str, TenantIndex] = {}
        self.semantic = semantic  # recall.semantic.SemanticIndex, or None for lexical-only recall
        if semantic is not None:  # its neural queue holds document numbers; the texts stay here
            semantic.text_of = self.added_text
            semantic.dialogue_texts = self.dialogue_texts
        self._lock = threading.Lock()  # the Brain's own appends and a log tail both add
        self._outcomes_seen: set[str] = set()  # a redelivered outcome must not count twice
        # The unit decisions folded: a decision counts once, at its first place on the log (a replayed
        # or retried one must not roll a unit back; the view keeps the learner's ``unit_restated`` instead,
        # ``learning.learner.Learner._again``).
        self._unit_decisions_seen: set[str] = set()
        # Held while records are folded, so a snapshot (``recall.index_snapshot``) is one cut of
        # the fold; ``folded``: the first offset of the embedded log not folded yet (its offsets
        # are global): where a process restoring that snapshot goes on folding.
        self.fold_lock = threading.RLock()
        self.folded = 0
        # The log rolled back records this index had folded (a refused group commit, a full disk):
        # it is no fold of the log any more, and must not be saved as one (``diverge``).
        self.diverged = False

    def tenant(self, tenant: str) -> TenantIndex:
        index = self.tenants.get(tenant)
        if index is None:
            index = self.tenants[tenant] = TenantIndex()
        return index

    def added_text(self, tenant: str, no: int) -> str:
        """What the embedder sees of document ``no`` of ``tenant``, as it was added (a change
        since, such as a cold summary, does not change which text its vector is made from)."""
        return semantic_text(self.tenants[tenant].docs.as_added(no))

    def dialogue_texts(self, tenant: str, nos: list[int]) -> tuple[list[int], list[str]]:
        """The dialogue-kind documents among ``nos`` (``e5_dialogue.DIALOGUE_KINDS``) and their texts as
        added: what the e5 tier embeds."""
        docs = self.tenants[tenant].docs
        kept = [(no, doc) for no in nos if (doc := docs.as_added(no)).event_kind in DIALOGUE_KINDS]
        return [no for no, _ in kept], [semantic_text(doc) for _, doc in kept]

    def quarantine_of(self, tenant: str, doc_id: str) -> str | None:
        """``TenantIndex.quarantine_of`` in ``tenant``."""
        index = self.tenants.get(tenant)
        return None if index is None else index.quarantine_of(doc_id)

    def add(self, items: list[Indexable]) -> None:
        by_tenant: dict[str, list[tuple[Doc, list[str]]]] = {}
        for tenant, doc, cues in items:
            by_tenant.setdefault(tenant, []).append((doc, cues))
        with self._lock:
            for tenant, docs in by_tenant.items():
                index = self.tenant(tenant)
                added = index.add_many(docs)
                if added and self.semantic is not None:
                    # add_many numbers what it added in order, ending the table: no id lookups (issue 28)
                    first = len(index.docs) - len(added)
                    self.semantic.add(tenant, [(no, d.id, semantic_text(d)) for no, d in enumerate(added, first)])

    def add_events(self, by_tenant: dict[str, EventColumns]) -> None:
        """``add`` of each tenant's events given as columns (``TenantIndex.add_events``)."""
        with self._lock:
            for tenant, batch in by_tenant.items():
                index = self.tenant(tenant)
                added = index.add_events(batch)
                if added is not None and self.semantic is not None:  # an event's semantic text is its text
                    first = len(index.docs) - len(added)
                    self.semantic.add(tenant, list(zip(range(first, len(index.docs)), added["id"], added["text"],
                                                       strict=True)))

    def observe(self, batch: list[Decoded]) -> None:
        """Runner listener: index appended records the moment they are in the log. A batch holding
        a long text is folded in parts, each after the recalls in flight (``fold_parts``)."""
        with self.fold_lock:
            parts = fold_parts(batch)
            if parts is None:
                self._observe(batch)
            else:
                with RECALLS.long_fold():
                    for part in parts:
                        RECALLS.give_way()
                        self._observe(part)
            if batch:
                self.folded = max(self.folded, max(d.position.offset for d in batch) + 1)

    def diverge(self, committed: bool) -> None:
        """The log's group ended (``SqliteLog.on_group_end``): not committed, what this index
        folded of it is in no log; a restart rebuilds from the log, and no snapshot is written."""
        if not committed:
            self.diverged = True

    def _observe(self, batch: list[Decoded]) -> None:
        events_of, units = indexables(batch)
        RECALLS.pause()
        # Taint follows data: events first, then the beliefs resting on them, then the units
        # (a unit promoted from a belief inherits its quarantine).
        self.add_events(events_of)
        for decoded in batch:
            if decoded.record_type == "decision" and decoded.record["kind"] == beliefs.BELIEF_INDUCED:
                for row in beliefs.project(decoded.record_type, decoded.record, decoded.position):
                    self.add_belief(row["tenant"], belief_of(row))
        self.add(units)
        for decoded in batch:
            if decoded.record_type == "outcome":
                self._observe_outcome(decoded.record)
            elif decoded.record_type == "decision" and decoded.record["kind"] != beliefs.BELIEF_INDUCED:
                self._observe_decision(decoded)

    def _observe_decision(self, decoded: Decoded) -> None:
        """The learner's verdicts change what recall may inject: a unit's status and
        confidence (rejected, held, invalid ...), and events merged into a newer one."""
        record = decoded.record
        tenant = self.tenants.get(record["envelope"]["tenant"])
        if tenant is None or self._repeated_unit_decision(record):
            return
        tenant.apply_decision(record["kind"], record["subject_ids"], record["payload_json"])
        signals = feedback.verdict_signals(record)  # the same counts the ``feedback`` view gives on load
        for item, signal in signals:
            c = tenant.counters.setdefault(item, Counters())
            setattr(c, signal, getattr(c, signal) + 1)
        for row in unit_states.project(decoded.record_type, record, decoded.position):
            tenant.set_state(row["fragment_id"], row["status"], row["confidence"], row["rung"])

    def _repeated_unit_decision(self, record: dict) -> bool:
        """A unit decision folded already (the same ``decision_id`` again, later on the log); notes it if not."""
        if record["kind"] not in unit_states.UNIT_KINDS:
            return False
        with self._lock:
            if record["decision_id"] in self._unit_decisions_seen:
                return True
            self._unit_decisions_seen.add(record["decision_id"])
            return False

    def _observe_outcome(self, record: dict) -> None:
        env = record["envelope"]
        with self._lock:
            if env["record_id"] in self._outcomes_seen:
                return
            self._outcomes_seen.add(env["record_id"])
            self.tenant(env["tenant"]).count_outcome(record["applied"], record["success"], env["ts_us"])

    def add_belief(self, tenant: str, belief: Belief) -> None:
        with self._lock:
            self.tenant(tenant).add_belief(belief)

    def load(self, warehouse, chunk: int = 20_000, *, one_log: bool = False) -> int:
        """(Re)build from the views. Returns the number of documents indexed.

        ``one_log``: the views' ``_offset`` is one offset space (the embedded SQLite log), so
        events, beliefs and units are folded in log order, as ``observe`` folded them when they
        were appended: the same document numbers (a replica folding the log, the vector keys)
        and the same fields. Otherwise (a topic per record type) all events, then the beliefs,
        then the units: the order taint flows in."""
        self.tenants.clear()
        self._outcomes_seen.clear()
        self._unit_decisions_seen.clear()
        filled = warehouse.may_hold_rows()  # an empty view's query is skipped: a new brain's load asks nothing

        def read(table: str, sql: str, parameters: dict | None = None) -> list[tuple]:
            return warehouse.query(sql, parameters) if table in filled else []

        tables = tuple(t for t in (events.TABLE, beliefs.TABLE, fragments.TABLE) if t.name in filled)
        for table, names, rows in _runs(warehouse, tables, one_log, chunk):
            if table is beliefs.TABLE:
                for values in rows:
                    row = dict(zip(names, values, strict=True))
                    self.tenant(row["tenant"]).add_belief(belief_of(row))
                continue
            if table is events.TABLE:  # the fold's own path: a run's events as columns (observe's ``indexables``)
                by_tenant: dict[str, list[EventRow]] = {}
                for values in rows:
                    row = dict(zip(names, values, strict=True))
                    if perception_class(row) != "transactional":
                        by_tenant.setdefault(row["tenant"], []).append(
                            (row["event_id"], row, _ts_us(row["ts"]), row["agent"]))
                self.add_events({tenant: event_columns(part) for tenant, part in by_tenant.items()})
                continue
            self.add([(row["tenant"], *fragment_doc(row))
                      for row in (dict(zip(names, values, strict=True)) for values in rows)])
        for tenant, item, *counts in read("feedback",
                "SELECT tenant, item_id, applied, success, failure, contradiction, credited, debited FROM feedback"):
            if any(counts):  # an item with no count has none when folded from the log either
                index = self.tenant(tenant)
                no = index.by_id.get(item)
                index.counters[item] = Counters(*counts, unit=no is not None and index.docs.peek(no).kind == "fragment")
        self._outcomes_seen.update(r[0] for r in read("outcomes", "SELECT outcome_id FROM outcomes FINAL"))
        self._unit_decisions_seen.update(r[0] for r in read("decisions",
            "SELECT decision_id FROM decisions FINAL WHERE kind IN {k:Array(String)}",
            {"k": list(unit_states.UNIT_KINDS)}))
        for tenant, fragment_id, status, confidence, rung in read("unit_states",
                "SELECT tenant, fragment_id, status, confidence, rung FROM unit_states FINAL"):
            self.tenant(tenant).set_state(fragment_id, status, confidence, rung)
        for tenant, kind, subjects, payload in read("decisions",
                "SELECT tenant, kind, subject_ids, payload_json FROM decisions FINAL WHERE kind IN {k:Array(String)} "
                "ORDER BY ts, _offset", {"k": list(INDEX_DECISIONS)}):
            self.tenant(tenant).apply_decision(kind, subjects, payload)
        for tenant, item, last_used in read("outcomes",
                "SELECT tenant, item, toUnixTimestamp64Micro(max(ts)) FROM outcomes FINAL ARRAY JOIN applied AS item "
                "GROUP BY tenant, item"):
            index = self.tenant(tenant)
            no = index.by_id.get(item)
            if no is not None:
                index.docs[no].last_used_us = last_used
        return sum(len(t.docs) for t in self.tenants.values())

    def validate_layers(self, layers: list[str] | None) -> None:
        unknown = sorted(set(layers or ()) - set(LAYERS))
        if unknown:
            raise InvalidInput("recall", "layers", f"unknown layer(s) {unknown}; known: {list(LAYERS)}")


def _fresh_at(ids: list[str], known: list[int | None]) -> list[int]:
    """The places of the ids not indexed yet (``known``: their numbers, None if new), each id once."""
    seen: set[str] = set()
    out = []
    for k, (doc_id, no) in enumerate(zip(ids, known, strict=True)):
        if no is None and doc_id not in seen:
            seen.add(doc_id)
            out.append(k)
    return out


def _runs(warehouse, tables: tuple, one_log: bool, chunk: int):
    """``(table, column names, rows)`` runs of at most ``chunk`` rows of one table each: in log
    order across the tables (``one_log``; a run ends where another table's row comes next, so
    what a unit rests on is indexed before it), or table after table."""
    read = {}
    for n, table in enumerate(tables):
        names, rows = warehouse.query_columns(f"SELECT * FROM `{table.name}` FINAL ORDER BY _offset")
        if rows:  # an empty result names no columns
            read[n] = (table, names, rows)
    if not one_log:
        for table, names, rows in read.values():
            for start in range(0, len(rows), chunk):
                yield table, names, rows[start : start + chunk]
        return
    run, current = [], None
    for _, n, values in heapq.merge(*(_keyed(n, names.index("_offset"), rows) for n, (_, names, rows) in read.items())):
        if run and (n != current or len(run) == chunk):
            yield *read[current][:2], run
            run = []
        run.append(values)
        current = n
    if run:
        yield *read[current][:2], run


def _keyed(n: int, at: int, rows: list):
    """``(log offset, table number, row)`` of each row (its own generator: bound ``n`` and ``at``)."""
    return ((values[at], n, values) for values in rows)


def semantic_text(doc: Doc) -> str:
    """What the embedder sees: for a unit its condition and action, for an event its text."""
    if doc.kind == "fragment":
        return f"{doc.condition} — {doc.action}"
    return doc.text

