"""One tenant's cue index: its documents, postings and per-document columns (layer, owner, retired), a stored
item's versions, and what a recall may see of it (``TenantIndex.visible_mask``). Its parts: the judging of a
directive split over two events (``recall.split_directives``) and the decisions that change it after its
documents were added (``recall.index_decisions``).

Tenants never share one (``recall.index.RecallIndex`` keeps one a tenant), which is the hard tenant
wall.
"""

from __future__ import annotations

import operator
from itertools import compress

import numpy as np

from hindbrain.recall import _scan, keyed
from hindbrain.recall.doc_table import DocTable
from hindbrain.recall.documents import LAYER_CODE, SHARED, Belief, Counters, Doc
from hindbrain.recall.event_documents import COLUMN_OF, EventColumns
from hindbrain.recall.id_numbers import IdNumbers, hex_batch
from hindbrain.recall.index_decisions import IndexDecisions
from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.provenance import (
    Reason,
    inherited_quarantine,
    lifted,
    quarantine_text,
    rests_on,
)
from hindbrain.recall.split_directives import SplitDirectives
from hindbrain.recall.tokenize import estimate_tokens, joined_tokens, tokens

MASKS_KEPT = 8  # visible masks a tenant keeps (``visible_mask``): one per agent recalling lately, and its layers


class TenantIndex(SplitDirectives, IndexDecisions):
    """One tenant's documents and their columns; ``SplitDirectives`` and ``IndexDecisions`` are its parts (base
    classes of methods over the state ``__init__`` makes)."""

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
                             [LAYER_CODE[doc.layer] for doc, _ in fresh],
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
        batch.columns[COLUMN_OF["tokens"]] = list(map(_scan.estimate_tokens, texts))  # tokenize.estimate_tokens's C
        self._judge_batch(batch, first)
        at = self._number(texts, batch.terms, list(map(LAYER_CODE.__getitem__, batch["layer"])),
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
        mask = np.isin(self._layers[:n], [LAYER_CODE[name] for name in layers]) if layers else None
        code = self.agent_codes.get(agent) if agent else None
        if not agent or not self.agent_codes or (code is not None and len(self.agent_codes) == 1):
            return mask  # no agent named, nothing private here, or all of it is this agent's
        owners = self._owners[:n]
        visible = (owners == SHARED) | (owners == code) if code is not None else owners == SHARED
        return visible if mask is None else mask & visible

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



def _fresh_at(ids: list[str], known: list[int | None]) -> list[int]:
    """The places of the ids not indexed yet (``known``: their numbers, None if new), each id once."""
    seen: set[str] = set()
    out = []
    for k, (doc_id, no) in enumerate(zip(ids, known, strict=True)):
        if no is None and doc_id not in seen:
            seen.add(doc_id)
            out.append(k)
    return out
