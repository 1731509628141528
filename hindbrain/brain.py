"""``Brain``: the SDK facade. Validates at the edge, appends to the log, reads the views.

Every public method either appends records (perceive, learn, recall, outcome) or reads
(recall's index, explain, sql, stats). Nothing here writes the warehouse: the runner's
projectors do, so replaying the log rebuilds everything this facade ever showed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from contextlib import ExitStack, contextmanager, nullcontext
from datetime import datetime, timedelta
from itertools import repeat
from operator import itemgetter
from pathlib import Path

from hindbrain.heap_trim import HeapTrimmer, bulk_threshold
from hindbrain.jobs import HindsightReport, run_hindsight
from hindbrain.learning import lifecycle
from hindbrain.learning.authority import OPERATOR, granted_by, refusal, trust_raised
from hindbrain.learning.llm import Extractor, OpenAICompatibleExtractor
from hindbrain.learning.records import decision
from hindbrain.learning.runtime import LearnerRuntime
from hindbrain.learning.seeds import SeedReport, proposals, read_seed_file
from hindbrain.open_calls import OpenCalls, while_open
from hindbrain.projections.beliefs import BELIEF_INDUCED
from hindbrain.projections.views import VIEWS
from hindbrain.projections.warehouse import Warehouse
from hindbrain.recall import _scan
from hindbrain.recall.engine import RecallEngine
from hindbrain.recall.index import RecallIndex
from hindbrain.recall.index_snapshot import restore
from hindbrain.recall.pack import RecallPack
from hindbrain.recall.query import build_query
from hindbrain.recall.reading import READ_KINDS, reading
from hindbrain.recall.records import pack_of, recall_records
from hindbrain.recall.same_event import conflict, unit_conflict
from hindbrain.recall.semantic import BULK_EVENTS
from hindbrain.recall.vector_snapshot import write_if_changed
from hindbrain.schemas import records as record_builders
from hindbrain.schemas.api import (
    COMMON_SHAPE,
    ApproveInput,
    BelieveInput,
    InvalidateInput,
    InvalidInput,
    LearnInput,
    OutcomeInput,
    PerceiveInput,
    RecallInput,
    common_perceive,
    common_perceive_many,
    valid_id,
    validated,
    validated_in,
)
from hindbrain.schemas.codec import registry
from hindbrain.schemas.decision_kinds import DecisionKind
from hindbrain.schemas.records import PRODUCER_SDK, envelope, new_id, now_us, to_us
from hindbrain.served import check_not_served
from hindbrain.service import tenant_sql
from hindbrain.settings import Settings
from hindbrain.streams.gc_pause import Refreezer, freeze_long_lived, gc_paused, thaw
from hindbrain.streams.log import Position
from hindbrain.streams.processing import decoded_entries
from hindbrain.streams.runner import EmbeddedRunner
from hindbrain.streams.sqlite_log import ALL_TOPICS, SqliteLog
from hindbrain.streams.topics import TOPICS
from hindbrain.switching import RECALLS, given_precedence, shorten_switch_interval


class Brain:
    """An event-sourced brain for a fleet of agents. Open with ``Brain.open(path)``."""

    def __init__(self, log, warehouse: Warehouse, settings: Settings, runner=None):
        self.settings = settings
        # the validation context of a perception: the skew this brain allows an event's ts (schemas.api.clock_skew)
        self._clock = {"clock_skew": timedelta(seconds=settings.clock_skew_seconds)}
        shorten_switch_interval(settings.switch_interval_ms)  # recalls beside busy threads (hindbrain/switching.py)
        self.log, self.warehouse = log, warehouse
        self.runner = runner or EmbeddedRunner(log, warehouse, batch_size=settings.batch_size,
                                               group_window_s=settings.recall_commit_ms / 1000,
                                               merges_idle=settings.merges_idle)
        # the fleet's embedder group writes the neural vectors: this index follows them (VectorTail)
        self.index = RecallIndex(semantic_index(settings, follow=bool(settings.kafka and settings.kafka_embedders)))
        self.engine = RecallEngine(self.index, settings.recall_fusion(), quarantine=settings.quarantine)
        self.services: list = []  # background threads (distributed mode), stopped on close
        self.learning = None  # the learning loop in this process: LearnerRuntime or KafkaLearner
        self._tenant_views: set[str] = set()  # tenants whose SQL views exist (sql(tenant=...))
        self._closed = False
        self.calls = OpenCalls()  # close waits for the running calls and refuses new ones (hindbrain.open_calls)
        self.index_start = ""  # how the recall index was built on open (``open_index``)
        # gives free heap pages back after bulk work; perceive_many holds its trim until it returns
        self.heap_trimmer = HeapTrimmer(also=getattr(warehouse, "release_memory", None))
        # what it indexed out of the full collections; perceive_many holds its refreeze until it returns
        self.refreezer = Refreezer()
        # a batch's large temporaries mapped, not holes left in the heap; a recall's from the heap (hindbrain.heap_trim)
        bulk_threshold.settle()

    # -- lifecycle -----------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path | None = None, *, kafka: str | None = None, clickhouse: str | None = None,
             extractor: Extractor | None = None, **settings) -> Brain:
        """Open (or create) a brain.

        ``Brain.open("dir")`` is the embedded default: the log is ``dir/log.sqlite`` and the
        views live in chDB under ``dir/views``. ``clickhouse=`` points the views elsewhere
        (``chdb:///path`` or ``http://host:8123``). On open, records the views have not yet
        seen (e.g. after a crash) are projected, then the recall index is built.

        ``Brain.open(kafka="host:9092", clickhouse=...)`` appends to Kafka instead (see
        ``hindbrain.distributed``): with ``chdb:///...`` this Brain also projects; with a
        ClickHouse server, ``hindbrain worker`` processes do.

        ``extractor=`` plugs an LLM into the learner for trajectories its rules cannot
        compress (``hindbrain.learning.llm``; default: ``HINDBRAIN_EXTRACTOR_URL`` if set, else none).

        chDB serves one folder per process at a time: close a Brain before opening another
        whose views are in a different folder.
        """
        overrides = {k: v for k, v in {"home": path, "clickhouse": clickhouse, "kafka": kafka,
                                       **settings}.items() if v is not None}
        cfg = Settings(**overrides)
        if cfg.kafka:
            from hindbrain.distributed import open_distributed

            return open_distributed(cls, cfg, extractor)
        check_not_served(cfg.home)  # one line naming the serving process, not chDB's lock traceback
        log = SqliteLog(cfg.log_path(), synchronous=cfg.log_sync)
        with bulk_threshold.held():  # the views' catch-up and the index's build are bulk work
            warehouse = open_views(cfg, log)
            brain = cls(log, warehouse, cfg)
            brain.runner.project_again_if_broken()  # before the catch-up and the index's build
            brain.runner.catch_up()
            brain.index_start = open_index(cfg, log, warehouse, brain.index)
        # Refreezer and HeapTrimmer: after what it indexed (the collection frees, the trim returns the pages)
        brain.runner.listeners += [brain.index.observe, brain.refreezer, brain.heap_trimmer]
        log.on_group_end.append(brain.index.diverge)  # a rolled-back group: its records stay out of any snapshot
        brain.learning = LearnerRuntime(log, brain.runner, extractor or extractor_of(cfg),
                                        snapshot=cfg.home / "cache" / "learner.snapshot")
        brain.learning.start()
        freeze_long_lived()
        return brain

    def close(self) -> None:
        """Refuse new calls (``BrainClosed``), wait for the running ones, project what is pending, then
        release the log and the warehouse."""
        if self._closed:
            return
        self.calls.close()
        try:
            if self.learning is not None:
                self.learning.commit(snapshot=True)
            self.runner.flush()
            self.checkpoint_vectors()
        finally:
            self._closed = True
            # Every part is released even when one fails to stop (a Kafka service raising what killed
            # it): a chDB engine left open would refuse every other brain of this process. The callbacks
            # run last pushed first, so in the order runner, services (newest first), vectors, views,
            # log; the error is raised once all ran.
            with ExitStack() as release:
                release.callback(thaw)
                release.callback(self.log.close)
                release.callback(self.warehouse.close)
                if self.index.semantic is not None:
                    release.callback(self.index.semantic.close)
                for service in self.services:
                    release.callback(service.stop)
                release.callback(self.runner.close)

    def checkpoint_vectors(self) -> Path | None:
        """Saves the semantic vectors for recall replicas to map (``recall.vector_snapshot``)
        when they changed since the last snapshot; the embedded brain does at ``close``. A
        failure is reported, not raised: replicas then rebuild the vectors, as they can."""
        if not isinstance(self.log, SqliteLog):
            return None  # replicas exist only beside an embedded brain
        try:
            return write_if_changed(self.index, vector_snapshots(self.settings), lambda: snapshot_offset(self.log),
                                    self.log.lock)
        except Exception as exc:
            print(f"hindbrain: the vector snapshot was not written ({exc!r}); replicas will rebuild the vectors",
                  file=sys.stderr)
            return None

    def __enter__(self) -> Brain:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------
    @while_open
    @given_precedence  # the views' projector gives way to it (hindbrain/switching.py)
    def perceive(self, *, sent_by: str | None = None, **fields) -> str:
        """Record something an agent perceived, did or was told; returns the event id.

        Required: ``tenant`` and one of ``text``/``action``. A caller-provided ``event_id``
        is kept, and the same id twice is one event; the same id with other content is refused
        (``InvalidInput`` on ``event_id``: ``hindbrain.recall.same_event``). ``ts`` (when it happened; the
        server's clock when omitted) may lie in the past — history is imported — but not more than five minutes
        ahead of the server's clock (``schemas.api.CLOCK_SKEW``: a report dated ahead would stay the newest one;
        ``clock_skew_seconds``, HINDBRAIN_CLOCK_SKEW_SECONDS, sets another).
        Raises ``ValueError`` (InvalidInput) naming the field on bad input; nothing is written then.
        ``sent_by``: the API key that sent it (``outcome``), the sender the summaries, induction and the windows'
        fleet count (docs/security.md, "A perception's sender is its key").
        """
        record = _perception(perceived(fields, self._clock), sent_by or PRODUCER_SDK)
        if (refused := conflict(self.index, record, {})) is not None:
            raise refused
        self.runner.submit([("perception", record)])
        return record["envelope"]["record_id"]

    @while_open
    @given_precedence
    def perceive_many(self, events: Iterable[dict], *, sent_by: str | None = None) -> list[str]:
        """Bulk ``perceive``: validates every event first, then appends all in one batch. A batch
        is one tenant's (as over HTTP, where the API key is one tenant): events of another tenant
        are refused (``InvalidInput`` on ``tenant``, naming the event), nothing written. ``sent_by``: the API
        key that sent the batch (``perceive``)."""
        events = events if type(events) is list else list(events)
        with self._bulk_call(), self._merges_held(events):
            return self._perceive_many(events, sent_by or PRODUCER_SDK)

    @contextmanager
    def _bulk_call(self):
        """What a batch call runs under: the heap's trim deferred until the batch's temporaries (its
        records, the decoded batch, the learner's pass) are freed at return, the bulk mmap threshold
        (hindbrain.heap_trim), the collector paused (streams.gc_pause). The refreeze is deferred too,
        and innermost: its collection walks what outlives the call, before the collector is back on
        (whose first collection would walk the survivors once more) and before the trim."""
        with self.heap_trimmer.deferred(), bulk_threshold.held(), gc_paused(), self.refreezer.deferred():
            yield

    def _importing(self, events: int):
        """The neural tier held back while a bulk import of ``events`` runs (``SemanticIndex.importing``)."""
        semantic = self.index.semantic
        return semantic.importing(events) if semantic is not None else nullcontext()

    def _merges_held(self, events: list):
        """chDB's merges held while a bulk call of ``events`` runs, the whole call (``EmbeddedRunner.importing``:
        its validation too, so that at a loaded box's pace the linger still spans the gap between an import's
        calls); a runner over Kafka has none to hold."""
        importing = getattr(self.runner, "importing", None)
        return importing() if importing is not None and len(events) >= BULK_EVENTS else nullcontext()

    def _perceive_many(self, events: Iterable[dict], producer: str) -> list[str]:
        checked = self._checked_perceptions(events, producer)
        # C-level passes over the batch where it is all records of one tenant (the common case): the Python loops
        # that looked for a refusal, for another tenant, and made the pairs and the ids were ~0.35 µs an event
        # (issue 28, round nineteen); a batch that is not is looked at again, event by event, to name the first
        if set(map(type, checked)) != _RECORD_TYPE:
            for n, result in enumerate(checked):
                if isinstance(result, InvalidInput):  # keep the field, name the event
                    message = str(result).removeprefix(f"{result.operation}: field {result.field!r}: ")
                    raise InvalidInput(result.operation, result.field, f"event #{n}: {message}")
        envelopes = list(map(_ENVELOPE, checked))
        if len(set(map(_TENANT, envelopes))) > 1:
            one_tenant(checked)
        with self._importing(len(checked)):
            self.runner.submit(list(zip(repeat("perception"), checked)))
        return list(map(_RECORD_ID, envelopes))

    @while_open
    @given_precedence
    def perceive_each(self, events: Iterable[dict], *,
                      sent_by: list[str | None] | None = None) -> list[str | InvalidInput]:
        """Like ``perceive_many``, but each event stands alone: the valid ones are appended in
        one batch, and each position holds the event's id or the ``InvalidInput`` that
        refused it (a server batching concurrent requests answers each one). ``sent_by``: the API key that
        sent each event (``perceive``; the server's batch holds several keys' requests)."""
        events = events if type(events) is list else list(events)
        with self._bulk_call(), self._merges_held(events):
            return self._perceive_each(events, sent_by)

    def _perceive_each(self, events: Iterable[dict], sent_by: list[str | None] | None) -> list[str | InvalidInput]:
        checked = self._checked_perceptions(events, PRODUCER_SDK)
        if sent_by is not None:
            stamp_senders(checked, sent_by)
        records = [("perception", r) for r in checked if not isinstance(r, InvalidInput)]
        if records:
            with self._importing(len(records)):
                self.runner.submit(records)
        return [r if isinstance(r, InvalidInput) else r["envelope"]["record_id"] for r in checked]

    def _checked_perceptions(self, events: Iterable[dict], producer: str) -> list[dict | InvalidInput]:
        """Each event's perception record sent by ``producer``, or the ``InvalidInput`` that refused it (a bad
        field, or an event id already used for other content)."""
        events = events if type(events) is list else list(events)
        # every event of the common shape and its id minted here (the common case of a batch): the records in one
        # pass, the answer without a pass of Python an event over them (issue 28, rounds sixteen and twenty)
        made = common_perception_records(events, producer)
        if made is not None:
            return made
        checked: list = common_perceive_many(events)  # the common shape in one call; None: the model decides
        if None in checked:
            checked = [common if common is not None else _modelled_or_refusal(fields, self._clock)
                       for fields, common in zip(events, checked, strict=True)]
        made = iter(perception_records([values for values in checked if not isinstance(values, InvalidInput)],
                                       producer))
        out: list[dict | InvalidInput] = []
        earlier: dict = {}
        for values in checked:
            if isinstance(values, InvalidInput):
                out.append(values)
                continue
            record = next(made)
            # an id the brain just minted (128 random bits) names no event yet: only a caller's own
            # id is looked up (issue 28: the look-up parsed every id of a batch for nothing)
            out.append(record if values["event_id"] is None else conflict(self.index, record, earlier) or record)
        return out

    @while_open
    def learn(self, *, granted_by: str | None = None, sent_by: str | None = None, **fields) -> str:
        """Propose a cognitive unit: when ``condition``, do ``action``, because ``reason``,
        verified by ``evidence``. ``source="read"`` (knowledge) needs a ``citation``.
        Returns the fragment id.

        ``seed=True`` and a ``confidence`` above the source's default raise trust: they are an
        operator's grant (this embedded call, ``seed``, an admin key), refused with
        ``InvalidInput`` together with an ``agent`` (``learning.authority``). ``granted_by``
        names the operator (``explain`` shows it); default: the embedded SDK's caller. ``sent_by``: the API key
        that sent it (``outcome``), the source fleet verification counts unless an operator's grant raised it."""
        data = validated(LearnInput, "learn", **fields)
        raised = trust_raised(data.seed, data.confidence, data.source)
        if raised and data.agent:
            raise InvalidInput("learn", raised, refusal(raised, f"agent {data.agent!r}"))
        fragment_id = data.fragment_id or new_id("cognition")
        producer = f"{OPERATOR}:{granted_by or 'embedded'}" if raised else sent_by or PRODUCER_SDK
        record = {
            "envelope": envelope("cognition", data.tenant, agent=data.agent, task=data.task,
                                 causation_ids=data.event_ids, record_id=fragment_id, producer=producer),
            "fragment_id": fragment_id, "condition": data.condition, "action": data.action,
            "reason": data.reason, "evidence": data.evidence, "scope": dict(data.scope), "source": data.source,
            "citation": data.citation, "confidence": data.confidence, "seed": data.seed,
            "event_ids": list(data.event_ids), "entities": list(data.entities),
        }
        if data.fragment_id and (refused := unit_conflict(self.index, record)):  # the caller's id: one unit
            raise refused
        self.runner.submit([("cognition", record)])
        return fragment_id

    @while_open
    def seed(self, path: str | Path | None = None, *, tenant: str | None = None,
             entries: list[dict] | None = None) -> SeedReport:
        """Import curated cognitions (cold start): a YAML/JSON file (``path``) or ``entries``.

        Each entry is a ``learn`` proposal with ``seed=True`` (higher initial confidence);
        an entry without a trigger condition, failing an acceptance check or a field's
        validation is refused with a message naming it, and the others are imported. The
        file's ``tenant:`` is used unless ``tenant`` is given. Importing twice adds nothing.
        """
        file_tenant, items = read_seed_file(path) if path is not None else (None, entries or [])
        tenant = tenant or file_tenant
        if not tenant:
            raise InvalidInput("seed", "tenant", "give tenant= (or 'tenant:' in the seed file)")
        accepted, refused = proposals(tenant, items)
        for data in accepted:
            self.learn(**data.model_dump(), granted_by=f"seed file {Path(path).name}" if path is not None else "seed")
        return SeedReport([d.fragment_id for d in accepted], refused)

    @while_open
    @given_precedence
    def outcome(self, *, sent_by: str | None = None, **fields) -> str:
        """Report how a task went and which recalled items were ``applied``. Returns the outcome record id.
        ``sent_by``: the service's edge names the API key that sent it (``schemas.records.key_producer``), which
        A/B windows and fleet verification count as the sender (docs/security.md, round thirty-two); default: the
        embedded SDK's caller, counted by the agent it names.

        The learner credits (or debits) a unit only if the recall named by ``recall_id`` injected it into the
        agent's context, and only the first outcome naming a recall counts: a second one is kept on the log and
        credits nothing. Without a ``recall_id``, with one this tenant's brain never made, or with one made for
        another agent than the outcome names, the outcome is evidence that never promotes a unit past verified nor
        ends it (``outcome_credit``; docs/learning.md, round twenty-five; docs/security.md, round thirty-three). Each
        refusal is a ``unit_attributed`` decision saying why (``explain``)."""
        data = validated(OutcomeInput, "outcome", **fields)
        record = {
            "envelope": envelope("outcome", data.tenant, agent=data.agent, task=data.task,
                                 causation_ids=[data.recall_id] if data.recall_id else [],
                                 producer=sent_by or PRODUCER_SDK),
            "recall_id": data.recall_id, "applied": list(data.applied), "success": data.success,
            "steps": data.steps, "notes": data.notes,
        }
        self.runner.submit([("outcome", record)])
        return record["envelope"]["record_id"]

    # -- recalling -----------------------------------------------------------------------
    @while_open
    @given_precedence
    def recall(self, **fields) -> RecallPack:
        """Bring back what fills the gap in the agent's context, within ``budget_tokens``.

        Channels (lexical with exact-cue boosts, semantic, graph, scenario, utility,
        freshness, minus contradiction and scope penalties) score the tenant's events and
        units; the gate (scope, conflicts, credibility, near-duplicates, injection value
        under the budget, placement) decides what is injected; the belief briefing comes
        first. ``item.why`` explains every score and gate decision (``explain=True``: every
        pooled candidate's full explanation goes into the recall record, not only the returned
        items'). The recall and injection records are group-committed: appended within a few
        milliseconds (``HINDBRAIN_RECALL_COMMIT_MS``), before any later outcome or other write; a
        crash loses at most those of the last window.
        """
        pack, records = recall_with_records(self.index, self.engine, fields)
        self.runner.defer(records)
        return pack

    @while_open
    def believe(self, **fields) -> str:
        """Assert a belief (as an operator or an outside job would): appends a
        ``belief_induced`` decision, exactly what the hindsight jobs append. Returns its id.

        ``text`` is the structured rule, ``scope`` may name ``scene`` or ``user`` (the
        briefing's layers), ``confidence`` in [0, 1], ``support`` the supporting events.
        """
        data = validated(BelieveInput, "believe", **fields)
        belief_id = data.belief_id or new_id("decision").replace("dc_", "bl_", 1)
        payload = {"belief_id": belief_id, "text": data.text, "confidence": data.confidence,
                   "support": data.support, "status": data.status, "scope": dict(data.scope)}
        record = {
            "envelope": envelope("decision", data.tenant, agent=data.agent, causation_ids=data.event_ids),
            "kind": BELIEF_INDUCED, "subject_ids": [belief_id], "evidence_ids": list(data.event_ids),
            "inputs_json": json.dumps({"asserted_by": "sdk"}), "reason": data.reason or "asserted through the API",
            "decided_by": {"job": "sdk.believe", "version": "1", "parameters_json": "{}"},
            "payload_json": json.dumps(payload, ensure_ascii=False),
        }
        record["decision_id"] = record["envelope"]["record_id"]
        self.runner.submit([("decision", record)])
        return belief_id

    @while_open
    def pending_traits(self, tenant: str) -> list[dict]:
        """Units the learner proposes as character traits, waiting for a human's ``approve``:
        ``{"fragment_id", "text", "confidence", "successes", "domains"}`` each."""
        learner = self._learner("pending_traits")
        self.runner.flush()
        with self.learning.reading():
            units = learner.pending_traits(tenant)
        texts = dict(self.warehouse.query(
            "SELECT fragment_id, text FROM fragments FINAL "
            "WHERE tenant = {t:String} AND fragment_id IN {ids:Array(String)}",
            {"t": tenant, "ids": [u.fragment_id for u in units]})) if units else {}
        return [{"fragment_id": u.fragment_id, "text": texts.get(u.fragment_id, ""), "confidence": u.confidence,
                 "successes": u.successes, "domains": sorted(u.domains)} for u in units]

    @while_open
    def approve(self, **fields) -> str:
        """A human's verdict on a proposed trait (see ``pending_traits``): ``accept=True``
        moves the unit to the identity layer, ``accept=False`` keeps it a skill. Appends a
        ``trait_approved`` / ``trait_declined`` decision naming the ``approver``; returns its
        id. Raises InvalidInput (field ``fragment_id``) unless the unit is a proposed trait."""
        data = validated(ApproveInput, "approve", **fields)
        learner = self._learner("approve")
        self.runner.flush()
        with self.learning.reading():
            unit = learner.unit(data.tenant, data.fragment_id)
            if unit is None or unit.rung != DecisionKind.TRAIT_PROPOSED:
                found = f"its rung is {unit.rung!r}" if unit else "the learner knows no such unit"
                raise InvalidInput("approve", "fragment_id",
                                   f"{data.fragment_id!r} is not a proposed trait ({found})")
            change = lifecycle.on_approval(unit, data.accept, data.approver)
        return self._human_decision(data.tenant, change, list(unit.evidence), data.reason or change.reason, {},
                                    "sdk.approve", {"approver": data.approver})

    @while_open
    def invalidate(self, **fields) -> str:
        """An environment change made a unit untrue (forgetting by invalidation, never a
        timer): ``reason`` says what changed, ``version`` the environment's version,
        ``evidence`` the records that show it. Appends a ``unit_invalidated`` decision; the
        unit is never injected again and stays in the log and the views. Returns its id."""
        data = validated(InvalidateInput, "invalidate", **fields)
        learner = self._learner("invalidate")
        self.runner.flush()
        with self.learning.reading():
            unit = learner.unit(data.tenant, data.fragment_id)
            if unit is None:
                raise InvalidInput("invalidate", "fragment_id",
                                   f"{data.fragment_id!r}: the learner knows no such unit")
            try:
                change = lifecycle.on_invalidation(unit, data.reason, data.version)
            except ValueError as exc:
                raise InvalidInput("invalidate", "fragment_id", str(exc)) from None
        return self._human_decision(data.tenant, change, list(data.evidence), change.reason,
                                    {"version": data.version}, "sdk.invalidate", {"by": data.by})

    def _human_decision(self, tenant: str, change: lifecycle.Change, evidence: list[str], reason: str, extra: dict,
                        job: str, inputs: dict) -> str:
        """Append a unit's change decided through the SDK (a person, not the learner; the
        learner folds it like its own). Returns the decision id."""
        rt, record = decision(change.kind, tenant, [change.unit.fragment_id], evidence, reason,
                              {"unit": lifecycle.state_of(change.unit), **extra}, now_us(), job,
                              {"rule": lifecycle.RULE_VERSION}, new_id("decision"), inputs, producer=PRODUCER_SDK)
        self.runner.submit([(rt, record)])
        return record["decision_id"]

    def _learner(self, operation: str):
        if self.learning is None:
            raise InvalidInput(operation, "brain", "no learner runs in this process: over Kafka with a ClickHouse "
                               "server the learner is the `hindbrain learner` process")
        self.learning.wait_until_caught_up()
        return self.learning.learner

    # -- reading -------------------------------------------------------------------------
    @while_open
    def hindsight(self, when_due: bool = False, *, on_phase: Callable[[str, float], None] | None = None
                  ) -> HindsightReport:
        """Run the learning jobs now and return what they decided (``report.decisions``,
        already appended to the log). ``when_due=True`` (a scheduler's call) runs them only
        when the trigger policy says so — more than 500 new events or 3 days since the last
        run — and otherwise returns ``report.skipped`` with the reason. ``on_phase(name,
        seconds)`` is told each phase of the run as it ends (the CLI's progress)."""
        self.runner.flush()
        report = run_hindsight(self.warehouse, self.runner.submit, now_us(), force=not when_due, on_phase=on_phase)
        self.runner.flush()
        return report

    @while_open
    def explain(self, item_id: str, *, tenant: str | None = None) -> list[dict]:
        """Every record and decision behind ``item_id``, oldest first, read from the log.

        Each entry: ``{"position", "record_type", "relations", "record"}``. For a fragment
        this includes the events it rests on. Empty when nothing concerns the id. With
        ``tenant``, only that tenant's records (an id is no capability: another tenant's
        id explains nothing). An event or unit the poisoning defence quarantined
        (``recall.provenance``; the defence on) carries ``"quarantine"``: why, on the record
        that created it.
        """
        chain = self._explain(valid_id("explain", "item_id", item_id))  # InvalidInput, not a database error
        if tenant is not None:
            chain = [e for e in chain if e["record"].get("envelope", {}).get("tenant") == tenant]
        for entry in chain if self.engine.quarantine else ():
            record = entry["record"]
            created = {"perception": record["envelope"]["record_id"], "cognition": record.get("fragment_id"),
                       "decision": (record.get("subject_ids") or [None])[0]
                       if record.get("kind") == BELIEF_INDUCED else None}  # a belief: tainted by its events
            subject = created.get(entry["record_type"])  # the event or unit this record made
            if subject and (reason := self.index.quarantine_of(record["envelope"]["tenant"], subject)):
                entry["quarantine"] = reason
        for entry in chain:
            record = entry["record"]
            if entry["record_type"] == "cognition" and (granter := granted_by(
                    record["envelope"]["producer"], record["seed"], record["confidence"], record["source"])):
                entry["granted_by"] = granter  # who raised its trust (a seed, a confidence override)
        return chain

    def _explain(self, item_id: str) -> list[dict]:
        self.runner.flush()
        relations: dict[Position, set[str]] = {}
        for topic, partition, offset, relation in self._lineage([item_id]):
            relations.setdefault(Position(topic, partition, offset), set()).add(relation)
        entries = [(e, *registry.decode(e.value)) for e in read_positions(self.log, list(relations))]
        supporting = [eid for _, rt, rec in entries if rt == "cognition" for eid in rec["event_ids"]]
        for topic, partition, offset, _ in self._lineage(supporting, relation="perceived"):
            relations.setdefault(Position(topic, partition, offset), set()).add("supports")
        chain = []
        for entry in read_positions(self.log, list(relations)):
            record_type, record = registry.decode(entry.value)
            chain.append({"position": entry.position, "record_type": record_type,
                          "relations": sorted(relations[entry.position]), "record": record})
        return chain

    def _lineage(self, subject_ids: list[str], relation: str | None = None) -> list[tuple]:
        if not subject_ids:
            return []
        where = " AND relation = {rel:String}" if relation else ""
        return self.warehouse.query(
            "SELECT _topic, _partition, _offset, relation FROM lineage "
            "WHERE subject_id IN {ids:Array(String)}" + where,
            {"ids": subject_ids, "rel": relation or ""},
        )

    @while_open
    def sql(self, query: str, parameters: dict | None = None, *, tenant: str | None = None) -> list[dict]:
        """Read-only SQL over the views (``events``, ``fragments``, ``feedback`` ...).

        Runs with ClickHouse ``readonly=1``: a statement that would write raises. Pending
        records are projected first, so a caller reads its own writes. With ``tenant``, the
        query runs in the tenant sandbox (``hindbrain.service.tenant_sql``, docs/security.md):
        one SELECT over that tenant's views (``Brain.views``) with allow-listed functions, under
        fixed limits; anything else raises ``InvalidInput`` on the field ``query`` (a stopped
        limit is named in the message). Without ``tenant``: the operator's unrestricted read.
        """
        self.runner.flush()
        if tenant is not None:
            return self.tenant_sql(query, parameters, tenant=tenant)
        names, rows = self.warehouse.query_columns(query, parameters, readonly=True)
        return [dict(zip(names, r, strict=True)) for r in rows]

    @while_open
    def tenant_sql(self, query: str, parameters: dict | None = None, *, tenant: str,
                   marker: str | None = None) -> list[dict]:
        """``sql(query, tenant=...)`` without projecting pending records first: it touches only
        the tenant's session of the warehouse, so any thread may call it beside the brain's own
        (the HTTP route does, after projecting on the brain's thread). ``marker``: an id
        ``cancel_sql`` can stop the query by."""
        try:
            names, rows = tenant_sql.run(self.warehouse, tenant, query, parameters, self._tenant_views, marker)
        except tenant_sql.ForbiddenQuery as e:
            raise InvalidInput("sql", e.field, tenant_sql.shown(str(e))) from None
        return [dict(zip(names, r, strict=True)) for r in rows]

    @while_open
    def cancel_sql(self, marker: str) -> None:
        """Stop the tenant query started with ``marker`` (it fails with ``InvalidInput``)."""
        self.warehouse.cancel(marker)

    @while_open
    def views(self, tenant: str | None = None) -> dict[str, list[dict]]:
        """The views SQL can read and their columns: ``{view: [{"name", "type"}]}``. With
        ``tenant``, the views of ``sql(..., tenant=)`` (that tenant's rows); without, the
        warehouse's own, which an operator's ``sql`` reads."""
        if tenant is not None:
            tenant_sql.prepare(self.warehouse, tenant, self._tenant_views)
        db = self.warehouse.database if tenant is None else tenant_sql.tenant_database(tenant)
        rows = self.warehouse.query("SELECT table, name, type FROM system.columns WHERE database = {db:String} "
                                    "ORDER BY table, position", {"db": db})
        views: dict[str, list[dict]] = {}
        for table, name, column_type in rows:
            views.setdefault(table, []).append({"name": name, "type": column_type})
        return views

    @while_open
    def stored(self, *, tenant: str | None, prefix: Iterable[str] = (), key: str | None = None,
               agent: str | None = None) -> list[dict]:
        """The live items a key-value store (``HindbrainStore``) keeps on the log under the
        namespace ``prefix`` — or the one item ``key`` of the namespace ``prefix`` — in
        LangGraph's ``InMemoryStore`` order (``hindbrain.recall.stored``): dicts of
        ``namespace``, ``key``, ``value``, ``created_at``, ``updated_at``, ``memory_id``,
        ``indexed``. ``agent``: only that agent's items and the tenant's shared ones.
        ``tenant=None`` reads every tenant's."""
        from hindbrain.recall.stored import read_items

        labels = tuple(prefix)
        if tenant is not None and not isinstance(tenant, str):
            raise InvalidInput("stored", "tenant", f"a tenant is a string, not {type(tenant).__name__}")
        if not all(isinstance(label, str) for label in labels):
            raise InvalidInput("stored", "prefix", "a namespace is a sequence of strings")
        return read_items(self.sql, tenant, labels, key, agent)


    @while_open
    def stats(self) -> dict:
        """Rows per view, log length, and dead letters, for operators."""
        self.runner.flush()
        counts = {v.table.name: self.warehouse.query(f"SELECT count() FROM `{v.table.name}` FINAL")[0][0]
                  for v in VIEWS}
        return {"home": str(self.settings.home), "warehouse": self.warehouse.url,
                "log_records": log_length(self.log), "views": counts,
                "dead_letters": counts["dead_letters"],
                "indexed_documents": sum(len(t.docs) for t in self.index.tenants.values())}


def outcome_credit(recall_id: str | None) -> str:
    """What the learner will do with an outcome naming ``recall_id`` (the HTTP reply's ``credit``): the rule, since
    the learner decides after the reply (over Kafka, on another process)."""
    if not recall_id:
        return ("no recall_id: evidence only — an applied unit is verified at most, never made stable; name the "
                "recall you acted on for full credit")
    return (f"credited to the applied units recall {recall_id} injected, if it is this tenant's, was made for this "
            "outcome's agent and no earlier outcome named it; an applied unit it did not inject gets nothing, an "
            "unknown recall or another agent's is evidence only")


def recall_with_records(index: RecallIndex, engine: RecallEngine, fields: dict) -> tuple[RecallPack, list]:
    """A recall over ``index``: the agent's pack and the log records that say what was
    recalled and injected (the caller appends them: the Brain's runner, or a recall
    replica's owner)."""
    with RECALLS.recalling():  # a long text's fold gives way to it (hindbrain/switching.py)
        q = validated(RecallInput, "recall", **fields)
        index.validate_layers(q.layers)
        result = engine.recall(build_query(q, now_us()))
        recall_record, injection_record = recall_records(q, result)
        pack = pack_of(recall_record["recall_id"], q.budget_tokens, result, q.scope)
    return pack, [("recall", recall_record), ("injection", injection_record)]


def tenant_batches(events: Iterable[dict]) -> list[list[dict]]:
    """``events`` split into one batch per tenant (``perceive_many`` takes one tenant's batch),
    each in the order given: for a caller holding several tenants' events."""
    batches: dict[object, list[dict]] = {}
    for event in events:
        batches.setdefault(event.get("tenant"), []).append(event)
    return list(batches.values())


_RECORD_TYPE = {dict}  # what ``_checked_perceptions`` makes of a valid event
_ENVELOPE, _TENANT, _RECORD_ID = itemgetter("envelope"), itemgetter("tenant"), itemgetter("record_id")


def one_tenant(records: list[dict]) -> None:
    """``InvalidInput`` naming the first record of another tenant than the first's."""
    for n, record in enumerate(records):
        if (tenant := record["envelope"]["tenant"]) != (first := records[0]["envelope"]["tenant"]):
            raise InvalidInput("perceive", "tenant", f"event #{n}: a batch is one tenant's; this one names "
                                                     f"{tenant!r} after {first!r} (send one batch per tenant)")




def semantic_index(cfg: Settings, follow: bool = False):
    """The semantic channel's index for ``cfg.embedder`` (None: lexical-only recall): the static
    fast tier at once, the neural model's vectors from ``cfg.embed_workers`` worker processes.
    Its vectors are cached under the brain's folder so a reopened brain re-embeds nothing;
    ``follow``: a recall replica's, which takes them from that cache only."""
    if cfg.embedder == "none":
        return None
    from hindbrain.recall.embed import embedder_from_name
    from hindbrain.recall.semantic import SemanticIndex
    from hindbrain.recall.static import default_static
    from hindbrain.recall.workers import shared_pool

    model = embedder_from_name(cfg.embedder)
    static = None if cfg.embedder == "static" else default_static()
    if static is not None and static.dim != model.dim:  # the table is USE's: another model's space has none
        static = None
    pool = (shared_pool(cfg.embedder, cfg.embed_workers, cfg.embed_worker_nice, cfg.embed_worker_idle)
            if cfg.embed_workers and static else None)
    # a following index (a replica, a Kafka-fed brain) embeds no USE passage (the owner's or the fleet's to
    # make), but its e5 dialogue tier is its own: its workers make that, and load USE only if sent USE
    return SemanticIndex(model, cfg.home / "cache" / "embeddings.sqlite", follow=follow, static=static,
                         pool=None if follow else pool, dialogue_pool=pool,
                         inline_limit=0 if static else 256, graph_threads=cfg.graph_threads)


# what the recall index folds (RecallIndex.observe): a recall's own records are most of a served
# log and change no recall, so a process folding the log does not read them
INDEXED_TOPICS = ("perceptions", "cognitions", "outcomes", "decisions")


def open_index(cfg: Settings, log: SqliteLog, warehouse: Warehouse, index: RecallIndex) -> str:
    """The owner's recall index on open: restored from its own snapshot (``recall.index_snapshot``:
    the lexical index, the documents, the vectors and their graph read back, not rebuilt) and the
    log after it folded, or, with no usable snapshot, loaded from the views (folded in the log's
    order: the same document numbers). Returns the line saying which."""
    end = log.end_offset(ALL_TOPICS, 0)
    line, start = restore(index, vector_snapshots(cfg), end, writable=True)
    if start:
        fold_log(index, log, start, end)
    else:
        index.load(warehouse, one_log=True)  # the views of one SQLite log: folded in its order
    index.folded = max(index.folded, end)  # the rest of the log is records the index does not fold
    return line


def snapshot_offset(log: SqliteLog) -> int | None:
    """The log's end for a snapshot of the recall index, or None while a group commit is open
    (records the index folded may yet be rolled back: ``recall.vector_snapshot.write_snapshot``)."""
    return None if log.group_from is not None else log.end_offset(ALL_TOPICS, 0)


def fold_log(index: RecallIndex, log: SqliteLog, start: int, end: int, chunk: int = 20_000,
             folded: Callable[[list], None] | None = None) -> int:
    """Folds the log's ``INDEXED_TOPICS`` from ``start`` to ``end`` into ``index``, ``chunk``
    records at a time, each chunk handed to ``folded`` after; returns the records read."""
    done = 0
    with gc_paused():
        while start < end:
            entries = log.read_all(start, chunk, INDEXED_TOPICS, stop=end)
            if not entries:
                break
            index.observe(decoded_entries(entries))
            if folded is not None:
                folded(entries)
            done += len(entries)
            # past what was scanned, not only past the last indexed record: the recall records
            # after it would be scanned again at every replica recall (measured: 56 ms a recall)
            start = entries[-1].offset + 1 if len(entries) == chunk else end
    return done


def vector_snapshots(cfg: Settings) -> Path:
    """Where the owner's vector snapshots live, for its recall replicas to map."""
    return cfg.home / "cache" / "vectors"


def extractor_of(cfg: Settings) -> Extractor | None:
    if not cfg.extractor_url:
        return None
    return OpenAICompatibleExtractor(cfg.extractor_url, cfg.extractor_model, cfg.extractor_api_key)


def open_views(cfg: Settings, log) -> Warehouse:
    """The migrated warehouse of ``cfg``; closes ``log`` if it cannot be opened."""
    try:
        warehouse = Warehouse(cfg.warehouse_url())
        warehouse.migrate()
        if cfg.tenant_sql_process and warehouse.url.startswith("chdb://"):
            warehouse.isolate_tenants()
    except Exception:
        log.close()
        raise
    return warehouse


def read_positions(log, positions: list[Position]) -> list:
    """Log entries at these positions, oldest first (by time of record, then position)."""
    if isinstance(log, SqliteLog):
        return log.get(positions)  # one query; global offsets are the write order
    entries = [e for p in positions for e in log.read(p.topic, p.partition, p.offset, 1) if e.offset == p.offset]
    return sorted(entries, key=lambda e: (registry.decode(e.value)[1]["envelope"]["ts_us"], e.topic, e.offset))


def log_length(log) -> int:
    if isinstance(log, SqliteLog):
        return log.end_offset("*", 0)
    return sum(log.end_offset(t.name, p) for t in TOPICS for p in log.partitions(t.name))


def _modelled_or_refusal(fields, context: dict | None = None) -> dict | InvalidInput:
    """``modelled(fields, context)``, or the ``InvalidInput`` refusing them (kept in its event's place)."""
    try:
        return modelled(fields, context)
    except InvalidInput as exc:
        return exc


def stamp_senders(checked: list[dict | InvalidInput], sent_by: list[str | None]) -> None:
    """Each record of ``checked`` (made for ``PRODUCER_SDK``) named as sent by its event's key, in place: one
    server batch holds several keys' requests, and the C builders take one producer a call. ``None``: keyless."""
    for record, producer in zip(checked, sent_by, strict=True):
        if producer is not None and not isinstance(record, InvalidInput):
            record["envelope"]["producer"] = producer


def perception_records(values: list[dict], producer: str = PRODUCER_SDK) -> list[dict]:
    """``_perception`` of each of ``values``, the batch in one C call (``recall/_scan.c`` ``perception_records``;
    ~3.6 µs of Python an event before, issue 28): the same records, their ids minted at once, the clock read
    for each from a block of stamps reserved at once (``now_us_many``); ``reading`` is called only where it
    reads (a message or feedback with a text)."""
    ids = record_builders.new_ids("perception", sum(1 for p in values if not p["event_id"]))
    return _scan.perception_records(values, ids, record_builders.now_us_many(len(values)), to_us, reading, READ_KINDS,
                                    registry.current("perception").version, producer, datetime)


def common_perception_records(events: list, producer: str = PRODUCER_SDK) -> list[dict] | None:
    """``perception_records(common_perceive_many(events))`` in one C pass (``recall/_scan.c`` ``perceive_records``)
    where every event has the common shape and names no id of its own, else None (nothing minted: the caller runs
    the two steps). The values dict the two steps passed between them was ~1 µs an event (issue 28, round twenty);
    tests/test_perceive_records.py holds the two steps as its oracle."""
    return _scan.perceive_records(events, *COMMON_SHAPE, _minted, to_us, reading, READ_KINDS,
                                  registry.current("perception").version, producer, datetime)


def _minted(n: int) -> tuple[list[str], Callable[[], int]]:
    """``n`` new perception ids and a clock for ``n`` records (``perception_records``' two)."""
    return record_builders.new_ids("perception", n), record_builders.now_us_many(n)


def _perception(p: dict, producer: str = PRODUCER_SDK) -> dict:
    """The perception record of ``p``, a ``PerceiveInput``'s field values (``perceived``); the oracle of
    ``perception_records``."""
    ts_us = to_us(p["ts"]) if isinstance(p["ts"], datetime) else None
    # A turn's emotion (when not given) and a reply's acts, read from its text: what a ticket
    # desk's plain text must carry for induction to learn from it (recall.reading).
    emotion, read = reading(p["kind"], p["text"], p["speaker"], p["agent"], p["emotion"])
    return {
        "envelope": envelope("perception", p["tenant"], agent=p["agent"], task=p["task"], record_id=p["event_id"],
                             ts_us=ts_us, producer=producer),
        "kind": p["kind"], "text": p["text"], "system": p["system"], "identity": p["identity"], "action": p["action"],
        "expected": p["expected"], "actual": p["actual"], "entities": list(p["entities"]),
        "scope": {**read, **p["scope"]}, "signal": p["signal"], "success": p["success"], "polarity": p["polarity"],
        "session": p["session"], "speaker": p["speaker"], "emotion": emotion, "origin": p["origin"],
    }


def perceived(fields: dict, context: dict | None = None) -> dict:
    """``PerceiveInput``'s field values of ``fields``: the common shape (no ``ts``) checked without the model
    (``common_perceive``), anything else by it (``InvalidInput`` naming the field); ``context``: the brain's
    validation context (its clock skew, ``schemas.api.validated_in``)."""
    values = common_perceive(fields)
    return values if values is not None else modelled(fields, context)


def modelled(fields: dict, context: dict | None = None) -> dict:
    """``PerceiveInput``'s field values of ``fields``, by the model (``InvalidInput`` naming the field)."""
    return validated_in(PerceiveInput, "perceive", fields, context).__dict__
