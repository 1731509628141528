"""An event as the cue index's document: its text, cue terms, quarantine and packed columns.

A perception record or an ``events`` row becomes a ``Doc`` (``event_doc``) or, for the fold's batches,
columns of ``Doc`` fields (``event_columns``, ``EventColumns``); the batch's keys, texts and documents
are made in C (``recall/_scan.c``), each with its Python oracle here (``py_*``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from functools import partial
from itertools import repeat

import orjson

from hindbrain.recall import _scan
from hindbrain.recall.asking import asking_share
from hindbrain.recall.cues import STRUCTURED_FIELDS, event_key, indexed_terms_many
from hindbrain.recall.doc_table import json_default
from hindbrain.recall.documents import Doc, links_and_exact
from hindbrain.recall.provenance import (
    AGENT,
    SPOKEN,
    TEXT_FIELDS,
    UNSTATED,
    USER,
    Reason,
    event_quarantines,
    source_of,
    started_cues,
)
from hindbrain.recall.tokenize import SEPARATOR, tokens
from hindbrain.switching import RECALLS

_SITUATION_FIELDS = ("system", "identity", "action", "expected", "actual")
# How far a raw event is to be trusted, by its signal's provenance (design.md §seed-001-4.1): an
# explicit statement 0.9, an implicit one 0.6, the agent's self-evaluation 0.4.
SIGNAL_CONFIDENCE = {"explicit": 0.9, "implicit": 0.6, "self": 0.4, None: 0.6}


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


def said_fields_of(doc: Doc) -> dict:
    """What ``split_quarantine`` reads of an indexed event: its words (speaker and situation
    included, as indexed) and who said it."""
    return _said_fields(doc.text, doc.speaker, doc.event_kind, doc.origin, doc.session)


def _said_fields(text: str, speaker, kind, origin, session) -> dict:
    said = text.removeprefix(f"{speaker}: ") if speaker else text  # ``event_doc`` prefixed it
    return {"kind": kind, "text": said, "speaker": speaker, "origin": origin, "session": session}




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
        doc.links, doc.exact = links_and_exact(cues)
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
        return self.columns[COLUMN_OF[name]]

    def taken(self, at: list[int]) -> EventColumns:
        """The events at these places, in this order."""
        return EventColumns([[column[k] for k in at] for column in self.columns], [self.terms[k] for k in at])

    def docs(self) -> list[tuple[Doc, list[str]]]:
        """The batch as ``(Doc, terms)`` pairs (what ``add_many`` takes: the per-document fold, kept as oracle)."""
        return [(Doc(*values), cues) for values, cues in zip(zip(*self.columns, strict=True), self.terms, strict=True)]

    def said_fields(self, k: int) -> dict:
        """``said_fields_of`` event ``k``."""
        return _said_fields(self["text"][k], self["speaker"][k], self["event_kind"][k], self["origin"][k],
                            self["session"][k])

    def rows(self) -> Iterator[bytes]:
        """Each event's packed row (``doc_table.packed`` of its ``Doc``, byte for byte), made as it is read:
        the columns zipped and dumped in C, no object an event but the row's tuple (the batch's rows all held
        at once grew the heap by ~2.4 MB a batch and cost more than they saved: 4.7 µs an event against 3.0 in a
        ``Brain``). An event conflicts with nothing when added, so its empty ``conflicts`` set is written as the
        empty list ``json_default`` makes of it, without that call."""
        columns = list(self.columns)
        conflicts = columns[COLUMN_OF["conflicts"]]
        if not any(conflicts):
            columns[COLUMN_OF["conflicts"]] = repeat((), len(conflicts))
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
    return (Doc, defaults, SIGNAL_CONFIDENCE, _UNSIGNALLED, links_and_exact, _field_terms, asking_share)


_EVENT_DOC_SPEC = _native_doc_spec()
COLUMN_OF = {name: at for at, name in enumerate(NATIVE_DOC_ORDER)}
_dumps_row = partial(orjson.dumps, default=json_default)  # doc_table.packed's call, on a row's tuple
