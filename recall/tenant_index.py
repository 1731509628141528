"""One tenant's cue index: its documents, postings, per-document columns and the decisions that change them.

Tenants never share one (``recall.index.RecallIndex`` keeps one a tenant), which is the hard tenant
wall. What a recall may see of it is ``TenantIndex.visible_mask``.
"""

from __future__ import annotations

import json
import operator
from itertools import compress, islice

import numpy as np

from hindbrain.projections import unit_states
from hindbrain.recall import _scan, keyed
from hindbrain.recall.arms import WINDOW_OPENED, WINDOW_SETTLED
from hindbrain.recall.doc_table import DocTable
from hindbrain.recall.documents import LAYER_CODE, SHARED, TRAIT_RUNG, Belief, Counters, Doc, cold_summary
from hindbrain.recall.event_documents import COLUMN_OF, EventColumns, said_fields_of
from hindbrain.recall.id_numbers import IdNumbers, hex_batch
from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.provenance import (
    Reason,
    inherited_quarantine,
    lifted,
    paired,
    quarantine_text,
    rests_on,
    split_quarantine,
)
from hindbrain.recall.tokenize import estimate_tokens, joined_tokens, tokens
from hindbrain.schemas.decision_kinds import DecisionKind

EVENTS_MERGED = DecisionKind.EVENTS_MERGED  # write hygiene: the subjects were merged into a newer event
WINDOW_KINDS = (WINDOW_OPENED, WINDOW_SETTLED)  # a conflict's A/B window (jobs.windows)
CONFLICT_PENDING = DecisionKind.CONFLICT_PENDING  # two units, the same condition, different actions (jobs.forgetting)
EVENTS_COLD = DecisionKind.EVENTS_COLD  # cold storage: summary and vector kept in memory (jobs.archive)
UNIT_SUPERSEDED = DecisionKind.UNIT_SUPERSEDED  # a user's newer statement: the old one's own words go with it
EVENTS_OUTDATED = DecisionKind.EVENTS_OUTDATED  # change detection (learning.change_detection): an option that now fails
INDEX_DECISIONS = (EVENTS_MERGED, *WINDOW_KINDS, CONFLICT_PENDING, EVENTS_COLD, unit_states.UNIT_SHARED,
                   UNIT_SUPERSEDED, EVENTS_OUTDATED)
MASKS_KEPT = 8  # visible masks a tenant keeps (``visible_mask``): one per agent recalling lately, and its layers
RECENT_THREADS = 50_000  # threads whose last event is kept for the split-directive cue, per tenant
# How many of the oldest threads ``TenantIndex._forget_oldest_thread`` reads ahead in one walk of the dict.
FORGET_AHEAD = 1024


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
            said_before = batch.said_fields(j) if before is None else said_fields_of(before)
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
        if reason := split_quarantine(said_fields_of(before), said_fields_of(doc), doc.owner):
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
                self._layers[no] = LAYER_CODE["identity"]
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
        mask = np.isin(self._layers[:n], [LAYER_CODE[name] for name in layers]) if layers else None
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



def _fresh_at(ids: list[str], known: list[int | None]) -> list[int]:
    """The places of the ids not indexed yet (``known``: their numbers, None if new), each id once."""
    seen: set[str] = set()
    out = []
    for k, (doc_id, no) in enumerate(zip(ids, known, strict=True)):
        if no is None and doc_id not in seen:
            seen.add(doc_id)
            out.append(k)
    return out
