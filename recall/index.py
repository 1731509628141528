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

import threading

from hindbrain.learning.write_gate import perception_class
from hindbrain.projections import beliefs, events, feedback, fragments, unit_states
from hindbrain.recall.documents import (
    LAYERS,
    Belief,
    Counters,
    Doc,
    Indexable,
    belief_of,
    fragment_doc,
    semantic_text,
    ts_us,
)
from hindbrain.recall.e5_dialogue import DIALOGUE_KINDS
from hindbrain.recall.event_documents import EventColumns, EventRow, event_columns
from hindbrain.recall.index_decisions import INDEX_DECISIONS
from hindbrain.recall.indexables import fold_parts, indexables
from hindbrain.recall.tenant_index import TenantIndex
from hindbrain.recall.view_runs import view_runs
from hindbrain.schemas.api import InvalidInput
from hindbrain.streams.processing import Decoded
from hindbrain.switching import RECALLS


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
        for table, names, rows in view_runs(warehouse, tables, one_log, chunk):
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
                            (row["event_id"], row, ts_us(row["ts"]), row["agent"]))
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
