"""The learner: a stream processor over the log that applies the learning rules.

For each record, in log order:
* **perception** — an event id seen already is skipped (the same event sent again); the
  write gate classifies it (transactional turns are counted and go no further);
  near-identical consecutive events of one agent's session merge (the newest
  is kept, an ``events_merged`` decision names the rest, which stay in the log); failures
  and successes form the task's trajectory, from which ``extract.recovery`` proposes units;
  negative feedback is counted per topic (a rule only on the third, ``extract.feedback_rule``,
  or when explicit approval confirms a change, ``extract.correction``) and contradicts the
  units the task applied; positive feedback counts towards a skill; a user's explicit
  preference statement becomes a unit (``extract.preference``);
* **cognition** — a proposal (``brain.learn``, a seed file or an extraction) passes the
  four acceptance checks and enters as a candidate in observation, waits in the holding
  area (confidence < 0.3), is absorbed by the same lesson already known (assimilation), or
  is rejected with the failed check;
* **outcome** — each *applied* unit gets the evidence: verified, stable, reviewing, invalid,
  skill, trait proposed (``lifecycle``);
* **decision** by someone else — a human's ``trait_approved`` / ``trait_declined``
  (``Brain.approve``) or ``unit_invalidated`` (``Brain.invalidate``) carries the unit's
  state after it and is folded like the learner's own.

Every step it takes is a decision record whose payload holds the unit's whole state after
it, so the learner's own state is rebuilt by reading the log (``restoring=True``: records
it produced are applied, nothing new is appended).
"""

from __future__ import annotations

import json
from collections import Counter, OrderedDict
from dataclasses import MISSING, dataclass, field, fields, replace
from itertools import islice
from operator import attrgetter

from hindbrain.learning import attribution, extract, lifecycle, write_gate
from hindbrain.learning.lifecycle import Unit
from hindbrain.learning.llm import TRAJECTORY_FIELDS, Extractor
from hindbrain.learning.records import PRODUCER, cognition, decision, derived_id, is_own
from hindbrain.projections.fragments import initial_confidence, private_to
from hindbrain.projections.unit_states import UNIT_KINDS, UNITS_EVICTED, UNITS_MERGED
from hindbrain.recall import _scan
from hindbrain.recall.tokenize import tokens
from hindbrain.schemas.decision_kinds import DecisionKind
from hindbrain.streams.processing import Decoded

MERGE_SIMILARITY = 0.9  # Jaccard of token sets above which consecutive events are one
MERGE_WITHIN_US = 10 * 60 * 1_000_000
TRAJECTORY = 16  # failures remembered per task
GATE_JOB, LIFECYCLE_JOB, HYGIENE_JOB = "learner.write_gate", "learner.lifecycle", "learner.write_hygiene"
EXTRACT_JOB = "learner.extract"
# decided through the SDK, folded here
HUMAN_KINDS = (DecisionKind.TRAIT_APPROVED, DecisionKind.TRAIT_DECLINED, DecisionKind.UNIT_INVALIDATED)
EVENTS_OUTDATED = DecisionKind.EVENTS_OUTDATED  # older successes of an option that now fails (the world changed)
UNIT_ATTRIBUTED = DecisionKind.UNIT_ATTRIBUTED  # the learner's verdict on an applied unit, when no state changes
FAILURES_TO_OUTDATE = 2  # failures since its last success that outdate an option's success events
SUCCESSES_KEPT = 16  # success events remembered per (system, option): the ones a change would outdate


RECENT = 50_000  # tasks, recalls and sessions remembered per tenant (older ones are done with)


class Recent(OrderedDict):
    """A dict that forgets its oldest keys beyond ``RECENT``: a fleet's learner runs for
    months, and a task's trajectory or a recall's domain matters only while it is live."""

    def __setitem__(self, key, value) -> None:
        _ordered_set(self, key, value)  # the base slot directly: ``super()`` cost ~0.2 µs an event (issue 28)
        if len(self) > RECENT:
            self.popitem(last=False)

    def setdefault(self, key, default=None):
        held = self.get(key, _ABSENT)  # one lookup where a hit is the common case
        if held is _ABSENT:  # ``__setitem__``'s body here: its Python frame was ~0.25 µs a new task (issue 28)
            _ordered_set(self, key, default)
            if len(self) > RECENT:
                self.popitem(last=False)
            held = default
        return held


_ABSENT = object()
_ordered_set = OrderedDict.__setitem__
_kept_append = _scan.kept_append  # ``Recent.setdefault(key, []).append(value)``, cut to its last n


class FailureLists(Recent):
    """A ``Recent`` of lists of ``KeptFailure`` (``_Tenant.failures``, ``reports``), pickled as columns: its keys,
    each list's length, and each kept field's values for all its failures in one list. A failure pickled on its
    own (``KeptFailure.__reduce__``: a call and a tuple each) made the kept failures ~2/3 of the learner's
    snapshot at 100k events (72 ms); as columns 31 ms (issue 28, round sixteen). The columns are read in one C walk
    (``_scan.attr_columns``): an ``attrgetter`` pass a field was ~20 ms of a 100k import's ~90 ms snapshot, which
    ``perceive_many`` pays once every ``SNAPSHOT_EVERY`` records (round twenty-two); the same columns, the same
    pickle (tests/learning/test_snapshot_columns.py)."""

    def __reduce__(self):
        lengths, columns = _scan.attr_columns(list(self.values()), _KEPT)
        return _failure_lists_of, (list(self), lengths, columns)


def _failure_lists_of(keys: list, lengths: list[int], columns: list[list]) -> FailureLists:
    """The ``FailureLists`` whose columns ``FailureLists.__reduce__`` gave, in its order."""
    failures, out = map(_kept_failure_of, *columns), FailureLists()
    for key, n in zip(keys, lengths, strict=True):
        _ordered_set(out, key, list(islice(failures, n)))
    return out


@dataclass
class _Tenant:
    units: dict[str, Unit] = field(default_factory=dict)
    lessons: dict[tuple, str] = field(default_factory=dict)  # (source, condition, action, scope) → unit
    failures: FailureLists = field(default_factory=FailureLists)  # task → its failed steps
    applied: Recent = field(default_factory=Recent)  # task → units it applied
    recall_domain: Recent = field(default_factory=Recent)  # recall id → task domain
    # recall id → the units its injection record put into the agent's context: what an outcome naming it may credit
    injected: Recent = field(default_factory=Recent)
    answered: Recent = field(default_factory=Recent)  # recall id → the outcome that spent it (one credited a recall)
    negatives: dict[str, list[dict]] = field(default_factory=dict)  # topic → negative feedback events
    # (agent, session or task, kind, speaker, stored item) → the last event there, as columns (``_hygiene``)
    last_event: _scan.LastEvents = field(default_factory=lambda: _scan.LastEvents(RECENT))
    tried: Recent = field(default_factory=Recent)  # task → [(the action's words, it failed)], in order
    goals: Recent = field(default_factory=Recent)  # task → what its recall said it set out to do
    recovered: Recent = field(default_factory=Recent)  # task → the unit its recovery taught (or absorbed into)
    contradicted: Recent = field(default_factory=Recent)  # task → the units its recovery contradicted already
    successes: Recent = field(default_factory=Recent)  # (system, option's words, scope) → success events, oldest first
    failed: Recent = field(default_factory=Recent)  # the same key → its failure events, oldest first
    scopes: Recent = field(default_factory=Recent)  # unit → the scope its proposal named: where it holds
    # the recent event ids: a repeated one is the same event (``_repeated``)
    perceived: _scan.RecentIds = field(default_factory=lambda: _scan.RecentIds(RECENT))
    reports: FailureLists = field(default_factory=FailureLists)  # (system, scope) → its recent failure events, any task
    routine: Recent = field(default_factory=Recent)  # option key → {agent: its last success}, until a failure
    routines: Recent = field(default_factory=Recent)  # option key → the routine unit it taught
    # While restoring: a proposal's unit id → (the map above that names what it taught, its key), until the
    # gate's decision on it is folded (it comes later in the log). See ``_restore_taught``.
    teaching: Recent = field(default_factory=Recent)
    # The live units that succeeded at least once, in ``units``' order (``_set_unit``): the only ones change
    # detection contradicts, read on every success; a scan of ``units`` there grew with the tenant's units
    # (one success cost ~O(units): 100 → 300 µs an event over 40k events of bench/learning.py's world, issue 28).
    proven: dict[str, None] = field(default_factory=dict)
    # A unit decision counts once, at its first place on the log (``Learner._again``): the ids folded, and the
    # ones it appended and has not read back yet (its own, read back once, are no repeat). ``unread`` is what is
    # in flight between its appends and its reads, not what it learnt: left out of a comparison of two learners.
    folded: set[str] = field(default_factory=set)
    unread: set[str] = field(default_factory=set, compare=False)

    def __setstate__(self, state: dict) -> None:
        """A snapshot pickled before a field existed (round twenty-five's ``injected``, ``answered``) still
        loads, the field empty: a recall from before it is then unknown, its outcome evidence only."""
        for f in fields(_Tenant):
            if f.name not in state:
                state[f.name] = f.default_factory() if f.default_factory is not MISSING else f.default
        self.__dict__.update(state)

    def proven_units(self) -> list[Unit]:
        """The live units with a success, in ``units``' order."""
        return [self.units[fid] for fid in self.proven]

    def set_unit(self, unit: Unit) -> None:
        """``units[unit.fragment_id] = unit``, ``proven`` kept as ``units`` would filter it."""
        fid = unit.fragment_id
        self.units[fid] = unit
        if unit.status in lifecycle.LIVE and unit.successes:
            if fid not in self.proven:  # rebuilt in order: a unit turns proven rarely (a unit's first success)
                self.proven = {f: None for f, u in self.units.items() if u.status in lifecycle.LIVE and u.successes}
        elif fid in self.proven:
            del self.proven[fid]


class Learner:
    def __init__(self, extractor: Extractor | None = None):
        self.tenants: dict[str, _Tenant] = {}
        self.counts: Counter = Counter()  # perception classes, merges, proposals ...
        self.extractor = extractor  # optional LLM plug-in for what the rules cannot compress

    def process(self, batch, restoring: bool = False) -> list[tuple[str, dict]]:
        """``batch``: decoded records in log order. Returns the records to append."""
        out: list[tuple[str, dict]] = []
        for decoded in batch:
            record_type, record = decoded.record_type, decoded.record
            if record_type == "decision" and record["kind"] in UNIT_KINDS and (
                    again := self._again(decoded, restoring)) is not None:
                if not restoring:  # restoring: its restatement is on the log, after it
                    for rt, r in again:
                        self._apply(rt, r, emitted=True)
                    out.extend(again)
                continue
            if is_own(record):
                if restoring:
                    self._apply(record_type, record)
                continue
            handler = _HANDLERS.get(record_type)
            if handler:
                emitted = handler(self, record, restoring)
                for rt, r in emitted:
                    self._apply(rt, r, emitted=not restoring)
                out.extend(emitted)
        return out

    def learn(self, batch) -> tuple[list[tuple[str, dict]], list[tuple[Decoded, Exception]]]:
        """``process`` for the live stream, the batch in one call: (the records to append, the records the
        rules failed on with their error). A record that fails adds nothing to the output (what it emitted
        before failing is dropped, as ``process([record])`` raised) and the next one goes on, so a rule bug
        dead-letters one record, not the batch. One call a batch rather than ``process([record])`` for each:
        the call and its list were ~1 µs of a ~10 µs event (issue 28, docs/speed.md round twelve).

        A perception's steps before its rules (``_perception``: the repeated id, the class, the write hygiene, what
        it is) run here in the batch's loop, its counts summed in locals and added once: the handler, the
        tenant's, the id's, the class's and the hygiene's calls and a ``Counter`` update an event were ~1 µs of
        ~6 (issue 28, round seventeen). Only an event a rule acts on (a failure, a success, a spoken turn) goes on
        to ``_perception_rules``. The same decisions as ``_perception`` (tests/learning/test_perception_prefix.py)."""
        out: list[tuple[str, dict]] = []
        failed: list[tuple[Decoded, Exception]] = []
        handlers, apply, tenants = _HANDLERS, self._apply, self.tenants
        classify, rules = write_gate.perception_class, self._perception_rules
        events = transactional = repeated = 0  # ``counts``' perceived_event, perceived_transactional, repeated_...
        try:
            for decoded in batch:
                record = decoded.record
                env = record["envelope"]
                try:
                    if decoded.record_type != "perception" or env["producer"] == PRODUCER:
                        # a unit decision folded already (its own read back, a repeat) is not folded again
                        if decoded.record_type == "decision" and record["kind"] in UNIT_KINDS and (
                                again := self._again(decoded)) is not None:
                            emitted = again
                        # is_own: its own records change nothing live
                        elif env["producer"] == PRODUCER or (handler := handlers.get(decoded.record_type)) is None:
                            continue
                        else:
                            emitted = handler(self, record, False)
                    else:
                        t = tenants.get(env["tenant"]) or self._tenant(env["tenant"])
                        if not t.perceived.added(env["record_id"]):  # ``_repeated``
                            repeated += 1
                            continue
                        kind = record["kind"]
                        if kind == "message" and classify(record) == "transactional":  # any other kind is an event
                            transactional += 1
                            continue
                        events += 1
                        found = t.last_event.step(record)  # ``_hygiene``
                        emitted = self._merged(record, found) if found is not None else []
                        said = record.get("success")
                        failure, success = kind == "anomaly" or said is False, said is True  # ``extract.is_...``
                        # a message nobody speaks goes no further: no rule reads it (a preference needs a user
                        # speaking, ``extract.speaking_user``; the feedback rules a feedback event), and the rules'
                        # calls for nothing were ~0.9 µs a message (issue 28, round twenty-three)
                        if failure or success or kind == "feedback" or kind == "message" and record.get("speaker"):
                            emitted += rules(t, record, failure, success, False)
                    for rt, r in emitted:
                        apply(rt, r, True)
                except Exception as exc:  # noqa: BLE001 - the caller dead-letters it; the stream goes on
                    failed.append((decoded, exc))
                    continue
                if emitted:
                    out += emitted
        finally:  # counted as ``_perception`` counts, each before what could fail after it
            counts = self.counts
            for name, n in (("perceived_event", events), ("perceived_transactional", transactional),
                            ("repeated_perceptions", repeated)):
                if n:
                    counts[name] += n
        return out, failed

    def unit(self, tenant: str, fragment_id: str) -> Unit | None:
        t = self.tenants.get(tenant)
        return t.units.get(fragment_id) if t else None

    # -- applying its own records (the state is a fold of the log) -------------------------
    def _apply(self, record_type: str, record: dict, emitted: bool = False) -> None:
        """Folds a record into the state; ``emitted``: one the learner appends now (it reads it back later)."""
        if record_type == "cognition" and record.get("scope"):  # its own proposals' too: where each unit holds
            self._tenant(record["envelope"]["tenant"]).scopes[record["fragment_id"]] = dict(record["scope"])
        if record_type != "decision" or record["kind"] not in UNIT_KINDS:
            return
        t = self._tenant(record["envelope"]["tenant"])
        if record["decision_id"] in t.folded:  # it counted at its first place (``_again``)
            return
        t.folded.add(record["decision_id"])
        if emitted:
            t.unread.add(record["decision_id"])
        payload = json.loads(record["payload_json"])
        if t.teaching and record["subject_ids"] and (left := _taught_by(record)) is not None:
            taught = t.teaching.pop(record["subject_ids"][0], None)
            if taught is not None:
                getattr(t, taught[0])[taught[1]] = left
        if "unit" in payload:
            unit = lifecycle.from_state(payload["unit"])
            t.set_unit(unit)
            lesson = _lesson(unit.source, unit.condition, unit.action, t.scopes.get(unit.fragment_id))
            if unit.status in lifecycle.LIVE or unit.status == "held":
                t.lessons.setdefault(lesson, unit.fragment_id)
            elif payload.get("into") and t.lessons.get(lesson) == unit.fragment_id:
                t.lessons[lesson] = payload["into"]  # the lesson now lives on in what absorbed it

    def _again(self, decoded: Decoded, restoring: bool = False) -> list[tuple[str, dict]] | None:
        """A unit decision read from the log that must not be folded: its own appended one read back (``[]``),
        or one folded already, come again later on the log — a producer's retry that landed twice, an old
        record replayed. A decision counts once, at its first place: folded again it would roll the unit back
        to the state it carries (docs/security.md, "A decision counts once, round thirty"). Live, where the
        unit's state of now differs from that, returns a ``unit_restated`` decision carrying the state of now:
        the views and the recall index keep a unit's newest decision on the log, so they keep that one.
        None: a first place, folded as usual."""
        record = decoded.record
        t = self.tenants.get(record["envelope"]["tenant"])
        decision_id = record["decision_id"]
        if t is None or decision_id not in t.folded:
            return None
        if decision_id in t.unread:
            t.unread.discard(decision_id)
            return []
        self.counts["repeated_decisions"] += 1
        if restoring:
            return []
        stated = json.loads(record["payload_json"]).get("unit") or {}
        unit = t.units.get(stated.get("fragment_id", ""))
        if unit is None or _as_json(lifecycle.state_of(unit)) == stated:
            return []
        position = decoded.position
        return [decision(DecisionKind.UNIT_RESTATED, record["envelope"]["tenant"], [unit.fragment_id], [decision_id],
                         f"{record['kind']} {decision_id} came again at {position.topic}/{position.partition}/"
                         f"{position.offset}: a decision counts once, at its first place on the log",
                         {"unit": lifecycle.state_of(unit), "repeated": decision_id}, record["envelope"]["ts_us"],
                         LIFECYCLE_JOB, {"rule": lifecycle.RULE_VERSION},
                         f"{decision_id}@{position.topic}/{position.partition}/{position.offset}")]

    def _tenant(self, tenant: str) -> _Tenant:
        t = self.tenants.get(tenant)
        if t is None:
            t = self.tenants[tenant] = _Tenant()
        return t

    # -- perceptions -------------------------------------------------------------------------
    def _decision(self, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        if record["kind"] in HUMAN_KINDS:
            self._apply("decision", record)
        elif record["kind"] == UNITS_MERGED and not restoring:
            return self._merge(record)
        elif record["kind"] == UNITS_EVICTED and not restoring:
            return self._evict(record)
        return []

    def _evict(self, record: dict) -> list[tuple[str, dict]]:
        """A capacity job's proposal: the live units named are archived (kept, not injected)."""
        evicted = json.loads(record["payload_json"])["evicted"]
        return self._settle_live(record, evicted, "archived", DecisionKind.UNIT_ARCHIVED, [record["decision_id"]],
                                 f"archived: {record['reason']}", {})

    def _merge(self, record: dict) -> list[tuple[str, dict]]:
        """A consolidation job's proposal: the live originals are absorbed into the meta-rule."""
        payload = json.loads(record["payload_json"])
        meta, t = payload["meta"], self._tenant(record["envelope"]["tenant"])
        if meta not in t.units or t.units[meta].status not in lifecycle.LIVE:
            return []  # the meta-rule did not pass the gate: the originals stay as they are
        return self._settle_live(record, payload["originals"], "absorbed", DecisionKind.UNIT_ABSORBED,
                                 [meta, record["decision_id"]],
                                 f"near-identical to the meta-rule {meta}: absorbed into it as evidence",
                                 {"into": meta, "learning": "consolidation"})

    def _settle_live(self, record: dict, fids: list[str], status: str, kind: str, evidence: list[str], reason: str,
                     extra: dict) -> list[tuple[str, dict]]:
        """A job's proposal carried out: each named unit still live gets ``status`` (a ``kind``
        decision caused by the proposal); the others are left as they are."""
        env = record["envelope"]
        t = self._tenant(env["tenant"])
        out = []
        for fid in fids:
            unit = t.units.get(fid)
            if unit is None or unit.status not in lifecycle.LIVE:
                continue
            self.counts[kind] += 1
            out.append(decision(kind, env["tenant"], [fid], evidence, reason,
                                {"unit": lifecycle.state_of(replace(unit, status=status)), **extra}, env["ts_us"],
                                LIFECYCLE_JOB, {"rule": lifecycle.RULE_VERSION}, f"{record['decision_id']}:{fid}"))
        return out

    def pending_traits(self, tenant: str) -> list[Unit]:
        """The units whose trait proposal waits for a human (``Brain.approve``)."""
        t = self.tenants.get(tenant)
        return [u for u in t.units.values() if u.rung == DecisionKind.TRAIT_PROPOSED] if t else []

    def _perception(self, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        env = record["envelope"]
        t = self._tenant(env["tenant"])
        if self._repeated(t, env["record_id"]):
            return []
        kind = write_gate.perception_class(record)
        self.counts[_PERCEIVED[kind]] += 1
        if kind == "transactional":
            return []
        out = self._hygiene(t, record, restoring)
        # the record is read only here: what it is, once (every event asked these ~10 times: issue 28)
        failure, success = extract.is_failure(record), extract.is_success(record)
        if not (failure or success or record["kind"] in _SPOKEN):
            return out  # every rule below starts from a failure, a success or a spoken turn (issue 28)
        return out + self._perception_rules(t, record, failure, success, restoring)

    def _perception_rules(self, t: _Tenant, record: dict, failure: bool, success: bool,
                          restoring: bool) -> list[tuple[str, dict]]:
        """The rules on a perceived event that failed, succeeded or is a spoken turn (``_perception``, and
        ``learn``'s loop, which runs the steps before them itself).

        A quarter of a fleet's events fail, and each failure's rules were ~6.6 µs of Python (issue 28, round
        eighteen): the kept lists are trimmed only when over their length (a ``del`` of an empty slice made a
        slice object each time), and ``_routine_broken`` / ``_outdate_successes`` are called only when what
        each reads first is there (a routine taught for the option; successes of it to outdate). The same
        decisions and state (tests/learning/test_failure_rules.py keeps the former body as its oracle)."""
        env, out = record["envelope"], []
        option = _option(record) if failure or success else None  # pure: computed once for the branches below
        task = env["task"]
        # each kept list's setdefault, append and cut in one C call (``_scan.kept_append``): four in Python were ~1 µs
        # of a failure's ~5.7 here (issue 28, round twenty-three)
        if task and (failure or success) and record.get("action"):
            _kept_append(t.tried, task, (attribution.words(record["action"]), failure), TRAJECTORY, RECENT)
        kept_failure = _kept_failure(record) if failure else None  # one slim copy for both maps below
        if task and failure:
            _kept_append(t.failures, task, kept_failure, TRAJECTORY, RECENT)
        elif task and success and task in t.failures:
            out += self._recover(t, record, restoring)
        elif option and success and not restoring and not t.successes.get(option):
            out += self._recover_across(t, record, option)
        if key := option:
            if success:
                out += self._routine(t, record, key, restoring)
                out += self._doubt_replaced(t, record, key, restoring)
                out += self._outdate_failures(t, record, key, restoring)
            _kept_append(t.successes if success else t.failed, key, env["record_id"], SUCCESSES_KEPT, RECENT)
            if failure:
                if t.routine.get(key) is not None:
                    t.routine[key] = {}  # a routine is what kept working: its count starts again
                if key in t.routines:  # else ``_routine_broken`` has nothing to contradict
                    out += self._routine_broken(t, record, key, restoring)
                _kept_append(t.reports, _where(key), kept_failure, TRAJECTORY, RECENT)
                if t.successes.get(key):  # else ``_outdate_successes`` has nothing to outdate
                    out += self._outdate_successes(t, record, key, restoring)
        kind = record["kind"]
        if kind == "feedback" and record.get("polarity") is not None:
            out += self._feedback(t, record, restoring)
        elif not restoring and kind in _SPOKEN:
            proposal = extract.preference(record)
            if proposal:
                proposed = self._propose(env, proposal)
                out += proposed + self._supersede(t, env, proposal, proposed)
        return out

    def _repeated(self, t: _Tenant, record_id: str) -> bool:
        """Whether this event id was perceived already: a caller's own ``event_id`` sent again (a
        client retrying a request whose answer it lost) is one event. The views deduplicate it by
        id; the learner must not count it twice either (three copies of one negative feedback
        would otherwise make the three negatives that teach a rule)."""
        if t.perceived.added(record_id):  # one C call (``_scan.RecentIds``)
            return False
        self.counts["repeated_perceptions"] += 1
        return True

    def _supersede(self, t: _Tenant, env: dict, proposal: extract.Proposal,
                   proposed: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
        """A newer explicit preference of the same user on the same subject supersedes the older
        one (design.md §issue-17: "no more bullet points" after "always bullet points"): the old unit is kept,
        marked ``superseded`` by a decision naming the newer one, and no longer injected."""
        accepted = [r for rt, r in proposed if rt == "decision" and r["kind"] == DecisionKind.UNIT_ACCEPTED]
        if not accepted:
            return []
        newer = accepted[0]["subject_ids"][0]
        said = extract.preference_subject(proposal.action)
        out = []
        for unit in list(t.units.values()):
            if unit.fragment_id == newer or unit.status not in lifecycle.LIVE or unit.condition != proposal.condition:
                continue
            shared = said & extract.preference_subject(unit.action)
            if not shared:
                continue  # another subject of the same user: both preferences stand
            state = lifecycle.state_of(replace(unit, status="superseded"))
            out.append(decision(DecisionKind.UNIT_SUPERSEDED, env["tenant"], [unit.fragment_id], [newer],
                                f"superseded by the newer statement {newer} on {', '.join(sorted(shared)[:4])}: "
                                "kept, no longer injected", {"unit": state, "by": newer}, env["ts_us"], EXTRACT_JOB,
                                {"rule": "supersede/1"}, newer))
        return out

    def _hygiene(self, t: _Tenant, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        # The place is (agent, session or task, kind, speaker, stored item): two speakers never say "the
        # same event" (a reply that echoes a turn is a new turn), and two stored items (``recall.keyed``)
        # are two memories by the caller's word, alike or not. The words are the whole event's, not its
        # text alone (``_word_hashes``): "nothing happened" in IAM and in CRM are two events. One C call
        # reads the place, hashes the words, and swaps in this event as the place's last (``LastEvents``:
        # the key tuple, its look-up and the ordered dict's Python ``__setitem__`` were ~1 µs an event).
        found = t.last_event.step(record)
        if found is None or restoring:
            return []
        return self._merged(record, found)

    def _merged(self, record: dict, found: tuple) -> list[tuple[str, dict]]:
        """The ``events_merged`` decision when ``record`` repeats the last event of its place (``found``:
        ``LastEvents.step``'s answer), else nothing."""
        words, prev_id, prev_words, prev_ts = found
        env = record["envelope"]
        # no words, the same event sent again, or too long ago: the sets are not compared
        if not words or prev_id == env["record_id"] or env["ts_us"] - prev_ts > MERGE_WITHIN_US:
            return []
        similarity = _merge_similarity(words, prev_words)
        if similarity is None:
            return []
        self.counts["merged"] += 1
        return [decision(DecisionKind.EVENTS_MERGED, env["tenant"], [prev_id], [env["record_id"]],
                         f"near-identical to the newer {env['record_id']} (similarity {similarity:.2f}); "
                         "the newest is kept, this one stays in the log", {"kept": env["record_id"]}, env["ts_us"],
                         HYGIENE_JOB, {"similarity": MERGE_SIMILARITY, "within_us": MERGE_WITHIN_US},
                         env["record_id"])]

    def _recover(self, t: _Tenant, success: dict, restoring: bool) -> list[tuple[str, dict]]:
        env = success["envelope"]
        failures = t.failures.pop(env["task"])
        goal = t.goals.get(env["task"])
        failed = tuple(f.get("action") for f in failures if f.get("action"))
        for failure in reversed(failures):
            proposal = extract.recovery(failure, success, goal, failed)
            if proposal and restoring:
                self._restore_taught(t, env, proposal, "recovered", env["task"])
                return self._outdate(t, failures, success, _proposal_id(env, proposal), restoring)
            if proposal:
                proposed = self._propose(env, proposal)
                if taught := _taught(proposed):
                    t.recovered[env["task"]] = taught
                return proposed + self._outdate(t, failures, success, taught)
        if self.extractor is None or restoring:
            return []
        self.counts["extractor_calls"] += 1
        out = []
        for n, proposal in enumerate(self.extractor.extract([*map(_as_record, failures), success])):
            out += self._propose(env, proposal, n)
        return out

    def _recover_across(self, t: _Tenant, success: dict, key: tuple) -> list[tuple[str, dict]]:
        """``recovery/1`` across tasks (design.md §issue-29): the first success of an option in a system and scope
        where other options failed before, in any task of the tenant, teaches the same lesson as a failure then
        a success in one task would. With failure reports shared (``recall.event_documents.system_report``) most agents
        succeed at the first try and no single task holds the trajectory, so without it the fleet's knowledge
        stayed a handful of raw events in every prompt and never became a rule that answers."""
        tried = (key[1], key[3])
        failures = [f for f in t.reports.get(_where(key), []) if (o := _option(f)) and (o[1], o[3]) != tried]
        if not failures:
            return []
        env = success["envelope"]
        failed = tuple(f.get("action") for f in failures if f.get("action"))
        proposal = extract.recovery(failures[-1], success, t.goals.get(env["task"] or ""), failed)
        return self._propose(env, proposal) if proposal else []

    def _outdate(self, t: _Tenant, failures: list[dict], success: dict, taught: str | None,
                 restoring: bool = False) -> list[tuple[str, dict]]:
        """Change detection (design.md §issue-29): an option that failed in this task, after which another
        one worked, stops being an answer wherever it used to be one. Its older success events in
        that system are outdated (an ``events_outdated`` decision: kept in the log, marked in
        ``explain``, no longer injected), and every live unit that recommends it and had
        succeeded before is contradicted (the ``contradiction`` signal; under review at once), so
        neither the rule nor the events that carried the old answer keep suggesting it."""
        env, out = success["envelope"], []
        for failure in failures:
            key = _option(failure)
            # the same action where it ran (a recovery by identity): the rule it teaches says which identity
            if key is None or key[:3] == (_option(success) or ())[:3]:
                continue
            old = t.successes.pop(key, [])
            if old and not restoring:
                self.counts[EVENTS_OUTDATED] += 1
                out.append(decision(
                    EVENTS_OUTDATED, env["tenant"], old, [failure["envelope"]["record_id"], env["record_id"]],
                    f"'{failure['action']}' failed in {key[0]} where it used to succeed, and '{success.get('action')}' "
                    "worked instead: its older successes are outdated (kept in the log, no longer injected)",
                    {"system": key[0], "option": failure["action"], "by": taught}, env["ts_us"], EXTRACT_JOB,
                    {"rule": "outdate/1"}, f"{env['record_id']}:{failure['envelope']['record_id']}:outdated"))
            done = t.contradicted.setdefault(env["task"], set())
            for unit in t.proven_units():  # only a live unit that succeeded before is contradicted
                if (unit.fragment_id in done or unit.fragment_id == taught
                        or not _recommends(unit, key, t.scopes.get(unit.fragment_id))):
                    continue
                done.add(unit.fragment_id)
                if restoring:
                    continue  # its contradiction is in the log
                instead = taught or success.get("action")
                against = lifecycle.on_contradiction(unit, failure["envelope"]["record_id"],
                                                     f"failed where it used to succeed; {instead} worked instead")
                out += self._changes(env, unit.fragment_id, against, f"{env['record_id']}:{unit.fragment_id}",
                                     contradiction=True)
        return out

    def _routine(self, t: _Tenant, success: dict, key: tuple, restoring: bool = False) -> list[tuple[str, dict]]:
        """``routine/1``: the option's successes by independent agents since it last failed here, once they are
        ``extract.ROUTINE_AGENTS`` and no live rule of the system already names it in this scope, become a rule
        (proposed once per option; a failure starts the count again). A shared fact about the system, like
        its reports: it reaches the fleet at once, as a recovery does."""
        seen = t.routine.setdefault(key, {})
        if seen is None:
            return []  # taught already
        seen[success["envelope"].get("agent")] = success
        if len(seen) < extract.ROUTINE_AGENTS:
            return []  # the units are scanned only once the count is reached, not on every success
        t.routine[key] = None
        where = dict(key[2])
        if any(key[0].lower() in u.condition.lower() and key[1] | key[3] <= attribution.words(u.action)
               and {k: str(v) for k, v in (t.scopes.get(u.fragment_id) or {}).items()} == where
               for u in t.units.values() if u.status in lifecycle.LIVE):
            return []  # a rule says it already
        proposal = extract.routine(list(seen.values()), t.goals.get(success["envelope"]["task"] or ""))
        if proposal is None:
            return []
        if restoring:
            return self._restore_taught(t, success["envelope"], proposal, "routines", key)
        proposed = self._propose(success["envelope"], proposal)
        if taught := _taught(proposed):
            t.routines[key] = taught
        return proposed

    def _routine_broken(self, t: _Tenant, failure: dict, key: tuple, restoring: bool = False) -> list[tuple[str, dict]]:
        """A routine's premise is that its option never failed where it holds (its evidence is success reports
        only, no contrast): the first failure there contradicts it (under review), as a newer failure report
        hides an older success one (``recall.gate.newest_reports``). A rule learned from a failure then a
        success is stickier: one failure may be a flake (``_doubt_replaced``)."""
        fid = t.routines.pop(key, None)
        unit = t.units.get(fid or "")
        if restoring or unit is None or unit.status not in lifecycle.LIVE or unit.status == "reviewing":
            return []
        env = failure["envelope"]
        against = lifecycle.on_contradiction(unit, env["record_id"], "a routine whose option failed where it "
                                                                     "had always worked")
        return self._changes(env, fid, against, f"{env['record_id']}:{fid}", contradiction=True)

    def _doubt_replaced(self, t: _Tenant, success: dict, key: tuple, restoring: bool = False) -> list[tuple[str, dict]]:
        """Change detection that does not punish a flake (design.md §issue-29): a rule whose option failed once in
        its scope since it last worked there may have met a transient error, and stays trusted on that alone.
        It is contradicted (under review at once) when the system shows the option was *replaced*: here, in
        the scope of this success, the rule's option failed since it last worked and this other option worked.
        The rule's own scope need not be this one: a change of a system is seen in whichever environment an
        agent meets it first, and each environment's rule failing once there is then no longer a flake."""
        system, env = key[0], success["envelope"]
        # the options that failed here lately (``reports``: this system and scope's last failures, not every key)
        recent = {o for f in t.reports.get(_where(key), []) if (o := _option(f))}
        replaced = [k for k in recent if t.failed.get(k) and (k[1], k[3]) != (key[1], key[3])]
        if not replaced:
            return []
        done = t.contradicted.setdefault(env["task"], set()) if env["task"] else set()
        out = []
        proven = t.proven_units()  # only a live unit that succeeded before is doubted
        for old in replaced:
            for unit in proven:
                if unit.fragment_id in done:
                    continue
                # Every word of the failed option (and of who did it) in the rule's action: "page size 500" does not
                # recommend "page size 10000"; and a rule that names what just worked is confirmed, not replaced.
                said = attribution.words(unit.action)
                if system.lower() not in unit.condition.lower() or not old[1] | old[3] <= said \
                        or key[1] | key[3] <= said:
                    continue
                where = frozenset((k, str(v)) for k, v in (t.scopes.get(unit.fragment_id) or {}).items())
                failed_there = t.failed.get((system, old[1], where, old[3]))
                if not failed_there or failed_there[-1] in unit.evidence:
                    continue  # it has not failed where it holds (nothing to doubt yet), or that failure counted
                done.add(unit.fragment_id)
                if restoring:
                    continue  # its contradiction is in the log
                against = lifecycle.on_contradiction(
                    unit, failed_there[-1], f"failed where it used to succeed; in {system} "
                                            f"'{success.get('identity') or success.get('action')}' replaced it")
                out += self._changes(env, unit.fragment_id, against, f"{env['record_id']}:{unit.fragment_id}",
                                     contradiction=True)
        return out

    def _outdate_successes(self, t: _Tenant, failure: dict, key: tuple,
                           restoring: bool = False) -> list[tuple[str, dict]]:
        """Change detection without a recovery: an option that used to work here failed
        ``FAILURES_TO_OUTDATE`` times since its last success (the task may have ended without finding
        what works instead), so its older success events stop suggesting it. One failure is not
        enough: a transient error must not erase what works."""
        since = t.failed.get(key, [])
        if len(since) < FAILURES_TO_OUTDATE or not t.successes.get(key):
            return []
        old = t.successes.pop(key)
        if restoring:
            return []  # its decision is in the log
        env = failure["envelope"]
        self.counts[EVENTS_OUTDATED] += 1
        return [decision(
            EVENTS_OUTDATED, env["tenant"], old, list(since),
            f"'{failure['action']}' failed {len(since)} times in {key[0]} since it last worked: its older successes "
            "are outdated (kept in the log, no longer injected)", {"system": key[0], "option": failure["action"],
                                                                    "by": None},
            env["ts_us"], EXTRACT_JOB, {"rule": "outdate/1", "failures": FAILURES_TO_OUTDATE},
            f"{env['record_id']}:successes:outdated")]

    def _outdate_failures(self, t: _Tenant, success: dict, key: tuple,
                          restoring: bool = False) -> list[tuple[str, dict]]:
        """The other half of change detection: an option that works now, where it failed before (in the
        same system and scope), makes its older failure reports outdated. They would name the new
        answer as failing beside the rule that recommends it, and cost tokens in every pack."""
        old = t.failed.pop(key, [])
        if not old or restoring:
            return []
        env = success["envelope"]
        self.counts[EVENTS_OUTDATED] += 1
        return [decision(
            EVENTS_OUTDATED, env["tenant"], old, [env["record_id"]],
            f"'{success['action']}' worked in {key[0]} where it failed before: its older failures are outdated "
            "(kept in the log, no longer injected)", {"system": key[0], "option": success["action"], "by": None},
            env["ts_us"], EXTRACT_JOB, {"rule": "outdate/1"}, f"{env['record_id']}:failures:outdated")]

    def _feedback(self, t: _Tenant, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        env = record["envelope"]
        applied = t.applied.get(env["task"] or "", [])
        topic = extract.topic_of(record)
        if record["polarity"] > 0:
            for fid in applied:
                if fid in t.units:
                    t.set_unit(lifecycle.on_positive_feedback(t.units[fid]))
            proposal = extract.correction(topic, t.negatives.get(topic, []), record) if topic else None
            if proposal:  # an explicit confirmation of the change: the criticism taught a rule
                t.negatives[topic] = []
                return [] if restoring else self._propose(env, proposal)
            return []
        out = []
        if not restoring:
            for fid in applied:
                if fid in t.units:
                    out += self._changes(env, fid, lifecycle.on_contradiction(t.units[fid], env["record_id"]),
                                         contradiction=True)  # a user correcting what it said
        if topic:
            negatives = t.negatives.setdefault(topic, [])
            negatives.append(record)
            proposal = extract.feedback_rule(topic, negatives)
            if proposal:  # cleared while restoring too, so a reopened learner counts from the same point
                t.negatives[topic] = []
            if restoring:
                return out
            if proposal:
                out += self._propose(env, proposal)
            else:
                evidence = [e["envelope"]["record_id"] for e in negatives]
                reason = (f"{len(negatives)} of {extract.NEGATIVES_FOR_A_RULE} negative feedback events on "
                          f"{topic}: one negative never creates a rule")
                out.append(decision(DecisionKind.FEEDBACK_DEFERRED, env["tenant"], [env["record_id"]], evidence, reason,
                                    {"topic": topic, "negatives": len(negatives)}, env["ts_us"], EXTRACT_JOB,
                                    {"negatives_for_a_rule": extract.NEGATIVES_FOR_A_RULE}, env["record_id"]))
        return out

    def _propose(self, env: dict, proposal: extract.Proposal, n: int = 0) -> list[tuple[str, dict]]:
        """An extracted unit (the ``n``-th from its cause): its cognition record, then the gate's decision on it."""
        self.counts["extracted"] += 1
        fragment_id = _proposal_id(env, proposal, n)
        confidence = lifecycle.SIGNAL_CONFIDENCE[proposal.signal]
        # A unit from someone's explicit word (a user's stated preference, an explicit approval)
        # is theirs, not the relaying agent's experience: it goes to the shared memory at once.
        agent = None if proposal.signal == "explicit" else env["agent"]
        rt, record = cognition(env["tenant"], fragment_id, proposal, confidence, env["ts_us"], env["record_id"],
                               agent, env["task"])
        inputs = {"rule": proposal.rule, "coordinates": {k: v for k, v in proposal.coordinates.items() if v},
                  "signal": proposal.signal}
        return [(rt, record), *self._gate(record, confidence, inputs, EXTRACT_JOB)]

    @staticmethod
    def _restore_taught(t: _Tenant, env: dict, proposal: extract.Proposal, taught: str, key) -> list:
        """While restoring, a proposal the running learner made here is not made again (its records are in
        the log), but what it taught must be known as it was: ``t.<taught>[key]`` is set to the unit the
        gate leaves standing once its decision is folded (``_apply``). Without it a reopened learner never
        broke a routine it had taught before the restart."""
        t.teaching[_proposal_id(env, proposal)] = (taught, key)
        return []

    # -- proposals ---------------------------------------------------------------------------
    def _cognition(self, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        if record.get("scope"):  # folded while restoring too: change detection asks where a unit holds
            self._tenant(record["envelope"]["tenant"]).scopes[record["fragment_id"]] = dict(record["scope"])
        if restoring:
            return []
        return self._gate(record, initial_confidence(record), {"proposed_by": record["envelope"]["producer"]},
                          GATE_JOB)

    def _gate(self, record: dict, confidence: float, inputs: dict, job: str) -> list[tuple[str, dict]]:
        env, fid = record["envelope"], record["fragment_id"]
        t = self._tenant(env["tenant"])
        if record.get("scope"):
            t.scopes[fid] = dict(record["scope"])
        if fid in t.units:  # the same proposal again (a seed file imported twice): already decided
            self.counts["repeated_proposals"] += 1
            return []
        params = {"checks": list(write_gate.CHECKS), "hold_below": lifecycle.HOLD_BELOW, "rule": lifecycle.RULE_VERSION}
        evidence = list(record["event_ids"])
        owner = private_to(env["agent"], record["seed"])
        sender = lifecycle.sender_of(env["agent"], env["producer"])  # the source fleet verification counts
        unit = Unit(fid, "candidate", confidence, record["source"], record["condition"], record["action"],
                    evidence=tuple(evidence), agents=(sender,) if sender else (), shared=owner is None)
        failed = write_gate.failed_check(record["condition"], record["action"])
        if failed:
            check, why = failed
            self.counts["rejected"] += 1
            return [decision(DecisionKind.UNIT_REJECTED, env["tenant"], [fid], evidence, f"fails '{check}': {why}",
                             {"unit": lifecycle.state_of(replace(unit, status="rejected")), "check": check},
                             env["ts_us"], job, params, fid, inputs)]
        known = t.lessons.get(_lesson(record["source"], record["condition"], record["action"], record.get("scope")))
        # A proposal that cites the known unit as its evidence (a meta-rule) is not that unit again.
        if known and known != fid and known in t.units and known not in record["event_ids"]:
            changes = (lifecycle.on_repetition(t.units[known], fid, sender)
                       if repeated_proposal(job, sender, t.units[known]) else
                       lifecycle.on_assimilation(t.units[known], confidence, fid, sender))
            absorbed = {"unit": lifecycle.state_of(replace(unit, status="absorbed")), "into": known,
                        "learning": "assimilation"}
            return [decision(DecisionKind.UNIT_ABSORBED, env["tenant"], [fid], [known],
                             f"the same lesson as {known}: absorbed into it as evidence (assimilation)", absorbed,
                             env["ts_us"], job, params, fid, inputs),
                    *self._changes(env, known, changes, cause=fid, job=job)]
        status = lifecycle.initial_status(confidence)
        kind = DecisionKind.UNIT_HELD if status == "held" else DecisionKind.UNIT_ACCEPTED
        reason = (f"confidence {confidence:.2f} < {lifecycle.HOLD_BELOW}: waits in the holding area for more evidence"
                  if status == "held" else
                  f"passes the four checks; starts in observation as a candidate at confidence {confidence:.2f}")
        layer = "knowledge" if record["source"] == "read" else "experience"
        accepted = replace(unit, status=status)
        out = [decision(kind, env["tenant"], [fid], evidence, reason,
                        {"unit": lifecycle.state_of(accepted), "layer": layer,
                         "checks": list(write_gate.CHECKS)}, env["ts_us"], job, params, fid, inputs)]
        if status == "candidate" and inputs.get("rule") in (extract.RECOVERY_RULE, extract.ROUTINE_RULE):
            routine = inputs.get("rule") == extract.ROUTINE_RULE
            out += self._changes(env, fid, lifecycle.sharing_recovered(accepted, env["task"], routine), cause=fid,
                                 job=job)
        return out

    # -- outcomes ----------------------------------------------------------------------------
    def _recall(self, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        scope, situation = record.get("scope") or {}, record.get("situation") or {}
        domain = scope.get("scene") or scope.get("task_type") or situation.get("system")
        t = self._tenant(record["envelope"]["tenant"])
        if domain:
            t.recall_domain[record["recall_id"]] = domain
        task = record["envelope"]["task"]
        if task and situation.get("action") and task not in t.goals:  # the task's first recall names its goal
            t.goals[task] = situation["action"]
        return []

    def _injection(self, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        """What the recall put into the agent's context, kept for the outcome that names it (``_credit``)."""
        t = self._tenant(record["envelope"]["tenant"])
        units = t.units
        # a known unit's id as the unit holds it: 50,000 recalls' ids are then pointers to strings held once (in
        # memory and, pickle memoising them, in the snapshot), not ~80 bytes each again
        t.injected[record["recall_id"]] = tuple(u.fragment_id if (u := units.get(i["item_id"])) else i["item_id"]
                                                for i in record["items"] if i["item_kind"] == "fragment")
        return []

    def _outcome(self, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        env = record["envelope"]
        t = self._tenant(env["tenant"])
        applied = [fid for fid in dict.fromkeys(record["applied"]) if fid in t.units]
        credit = _credit(t, record["recall_id"], env["record_id"])  # spends the recall, restoring too
        if env["task"]:  # what the task's feedback moves (``_feedback``): the units a recall proves it was given.
            # A claim naming no recall, then "that was wrong" in the task, counted as a proven contradiction:
            # two such tasks of one agent made a seed rule invalid (round thirty-two, docs/security.md).
            t.applied[env["task"]] = [fid for fid in applied if credit.proven and credit.refused(fid) is None]
        if restoring:
            return []
        domain = t.recall_domain.get(record["recall_id"] or "")
        tried = t.tried.get(env["task"] or "", [])
        out = []
        corrected_by = t.recovered.get(env["task"] or "")
        contradicted = t.contradicted.get(env["task"] or "", set())
        for fid in applied:
            if (refusal := credit.refusal(fid)) is not None:  # the recall it names gives this unit no credit
                out.append(self._verdict_only(env, fid, "none", refusal, credit.refused(fid)))
                continue
            if fid in contradicted:  # the recovery counted this failure against it already: only its verdict
                out.append(self._verdict_only(env, fid, "failed", "applied; its action failed and another option "
                                              "worked: debited (already contradicted by the task's recovery)"))
                continue
            if t.units[fid].status == "reviewing" and tried and not attribution.performed(t.units[fid].action, tried):
                # A rule in review reads "X failed here lately" (``recall.pack``): an agent that heeded it did
                # something else, which says nothing for "do X" (credited, it was verified again the next task).
                out.append(self._verdict_only(env, fid, "none", "applied while in review, its action not "
                                              "performed: heeded as a warning, no verdict on it"))
                continue
            # Inside the task, what the unit's own action did decides, not the task's end (design.md §issue-17):
            # applied, failed, then another option succeeded is a failure of this unit.
            worked = attribution.outcome_of(t.units[fid].action, tried, record["success"])
            if not worked and corrected_by not in (None, fid):
                # It failed, and the same task found what works instead: not a flake but
                # evidence against it with an alternative — a contradiction, in review at once.
                out += self._changes(env, fid, lifecycle.on_contradiction(
                    t.units[fid], env["record_id"], f"failed where {corrected_by} worked in the same task",
                    proven=credit.proven), contradiction=True, verdict="failed")
                continue
            # the sender vouches (``sender_of``): an unbound key is one source whatever agents it names
            changes = lifecycle.on_outcome(t.units[fid], worked, domain, env["record_id"],
                                           lifecycle.sender_of(env["agent"], env["producer"]), proven=credit.proven)
            # Utility (``credited`` / ``debited``) counts what an injection proved: a claim naming no recall
            # would raise (or sink) a unit's rank for everyone as surely as it would have promoted it.
            out += self._changes(env, fid, changes, verdict=("worked" if worked else "failed") if credit.proven
                                 else None)
        return out

    def _verdict_only(self, env: dict, fid: str, verdict: str, reason: str, refused: str | None = None
                      ) -> tuple[str, dict]:
        """The attribution of an outcome to unit ``fid`` that changes nothing else about it; ``refused``: why the
        outcome gets no credit (``Credit.refused``), in the payload for an audit to count."""
        self.counts[UNIT_ATTRIBUTED] += 1
        payload = {"verdict": verdict} if refused is None else {"verdict": verdict, "refused": refused}
        return decision(UNIT_ATTRIBUTED, env["tenant"], [fid], [env["record_id"]], reason, payload,
                        env["ts_us"], LIFECYCLE_JOB, {"rule": lifecycle.RULE_VERSION},
                        f"{env['record_id']}:{fid}:verdict")

    def _changes(self, env: dict, fid: str, changes: list[lifecycle.Change], cause: str | None = None,
                 job: str = LIFECYCLE_JOB, contradiction: bool = False, verdict: str | None = None
                 ) -> list[tuple[str, dict]]:
        """The decisions recording ``changes`` to unit ``fid``; ``contradiction`` marks the first one as the
        evidence against it that ``projections.feedback`` counts as the ``contradiction`` signal, ``verdict``
        ("worked" / "failed") as what the unit did in its task (``credited`` / ``debited``: its utility)."""
        out = []
        for change in changes:
            self.counts[change.kind] += 1
            payload = {"unit": lifecycle.state_of(change.unit)}
            if contradiction and not out:
                payload["contradiction"] = True
            if verdict and not out:
                payload["verdict"] = verdict
            if change.kind == DecisionKind.UNIT_REVIEWING and change.unit.contradictions:
                payload["learning"] = "accommodation"  # the evidence does not fit: the unit must change
            out.append(decision(change.kind, env["tenant"], [fid], [env["record_id"]], change.reason, payload,
                                env["ts_us"], job, {"rule": lifecycle.RULE_VERSION, **lifecycle.THRESHOLDS},
                                f"{cause or env['record_id']}:{change.kind}"))
        return out


@dataclass(frozen=True)
class Credit:
    """What an outcome's recall id proves about the units it says it applied (docs/learning.md, round
    twenty-five): a unit is credited or debited only if the recall it names injected it, and only the first
    outcome naming a recall counts. Without a recall id, or with one this tenant's learner never saw (another
    tenant's, or older than ``RECENT`` recalls), nothing proves the unit was in the agent's context: the outcome
    is evidence (``lifecycle.on_outcome``'s ``proven``) that never promotes past verified."""

    recall_id: str | None
    injected: frozenset[str] | None  # what the recall injected; None: no recall id, or an unknown one
    answered_by: str | None  # the outcome that spent the recall before this one

    @property
    def proven(self) -> bool:
        return self.injected is not None

    def refused(self, fid: str) -> str | None:
        """Why the outcome gives ``fid`` nothing (``answered`` / ``not_injected``), or None: it counts."""
        if self.answered_by is not None:
            return "answered"
        if self.injected is not None and fid not in self.injected:
            return "not_injected"
        return None

    def refusal(self, fid: str) -> str | None:
        """``refused``'s reason as the decision says it."""
        why = self.refused(fid)
        if why == "answered":
            return (f"recall {self.recall_id} was answered already by outcome {self.answered_by}: one outcome per "
                    "recall gets credit, this one none (kept on the log)")
        if why == "not_injected":
            return (f"recall {self.recall_id} did not inject it: an outcome credits only what its recall put into "
                    "the agent's context, this one none")
        return None


def _as_json(state: dict) -> dict:
    """A unit's state as a decision's payload reads back (tuples as lists), to compare with one."""
    return json.loads(json.dumps(state))


def _credit(t: _Tenant, recall_id: str | None, outcome_id: str) -> Credit:
    """The ``Credit`` of the outcome ``outcome_id`` naming ``recall_id``; the first outcome naming a recall
    spends it (``answered``), whatever it credits: a second one — another report, or the same one sent again — is
    refused."""
    if not recall_id:
        return Credit(None, None, None)
    answered_by = t.answered.get(recall_id)
    if answered_by is None:
        t.answered[recall_id] = outcome_id
    injected = t.injected.get(recall_id)
    return Credit(recall_id, None if injected is None else frozenset(injected), answered_by)


def repeated_proposal(job: str, agent: str | None, unit: Unit) -> bool:
    """Whether a proposal of the unit's lesson is its agent's word again: a caller's own ``learn`` (the write
    gate's job) by an agent already among the unit's sources. The extractor's proposals are not: each rests
    on other events (another task's failure and fix), independent evidence even from one agent."""
    return job == GATE_JOB and agent is not None and lifecycle.among_agents(agent, unit.agents)


def _proposal_id(env: dict, proposal: extract.Proposal, n: int = 0) -> str:
    """The unit id of the ``n``-th proposal caused by the record ``env``: the same when the log is folded again."""
    return derived_id("fr", proposal.rule, env["record_id"], *([str(n)] if n else []))


def _taught(proposed: list[tuple[str, dict]]) -> str | None:
    """The unit a proposal's records leave standing: the accepted one, or the one it was absorbed into."""
    for rt, r in proposed:
        if rt == "decision" and (left := _taught_by(r)) is not None:
            return left
    return None


def _taught_by(decision_record: dict) -> str | None:
    """The unit a gate decision on a proposal leaves standing, if it is one that does."""
    if decision_record["kind"] in (DecisionKind.UNIT_ACCEPTED, DecisionKind.UNIT_HELD):
        return decision_record["subject_ids"][0]
    if decision_record["kind"] == DecisionKind.UNIT_ABSORBED:
        return json.loads(decision_record["payload_json"]).get("into")
    return None


def _option(event: dict) -> tuple[str, frozenset[str], frozenset, frozenset[str]] | None:
    """What an event did, as change detection compares it: (its system, its action's words, its
    scope, its identity's words). The scope is part of "where": what fails in prod may still work
    in test (an environment's rule), so a failure in one scope outdates nothing of another. The
    identity is part of the choice: "submit change" failing as the normal account says nothing of
    "submit change" as the admin account, so a success as one never outdates a failure as the other.
    A kept failure's is computed once (``KeptFailure.option``)."""
    if event.__class__ is KeptFailure:
        return event.option()
    words = attribution.words(event.get("action") or "")
    if not event.get("system") or not words:
        return None
    scope = event.get("scope")
    # most events name no scope: a new empty frozenset without the generator's frame (~0.4 µs, issue 28)
    scope = frozenset((k, str(v)) for k, v in scope.items() if isinstance(v, str | int | float)) if scope else \
        frozenset()
    return event["system"], words, scope, attribution.words(event.get("identity") or "")


# What a kept failure (``_Tenant.failures``, ``reports``) is read for: ``extract.recovery``, ``_option`` and
# ``_outdate`` (system, action, identity, actual, expected, text, scope, entities, its id) and the LLM
# extractor's trajectory (``llm.TRAJECTORY_FIELDS``, its id).
_FAILURE_FIELDS = tuple(dict.fromkeys((*TRAJECTORY_FIELDS, "entities")))


_EMPTY = ("", {}, [])  # the validated record's defaults: ``{}`` and ``[]`` held 120 bytes a kept failure


class KeptFailure:
    """What the learner keeps of a failure event until its task recovers: the fields its rules and the
    extractor read, and of the envelope only the id, read as the record was (``.get``, ``[...]``,
    ``["envelope"]["record_id"]``). Absent and empty fields are None: each reader asks ``.get`` and takes
    an empty value as none (``or``, ``.get("scope", {})``, the extractor's steps). The whole perception
    record (its envelope, session, speaker, metadata ...) held ~180 bytes an event more at 100k events
    (design.md §issue-28), a dict of the fields still ~100: slots take a third of that. The decisions are
    the same (tests/learning/test_kept_failures.py)."""

    __slots__ = (*_FAILURE_FIELDS, "record_id", "_option")

    def __init__(self, record: dict):
        self._option = None  # not yet computed (``option``)
        # Each of ``_FAILURE_FIELDS`` stored by name, None when absent or empty: a value that is not falsy is none
        # of ``_EMPTY``, only those are compared. A loop of ``setattr`` over the names (or a call a value) was
        # ~2 µs a failure, a quarter of a fleet's events (issue 28, round eighteen); the names are checked
        # against the fields in tests/learning/test_failure_rules.py.
        get, empty = record.get, _EMPTY
        self.kind = v if (v := get("kind")) or v is not None and v not in empty else None
        self.text = v if (v := get("text")) or v is not None and v not in empty else None
        self.system = v if (v := get("system")) or v is not None and v not in empty else None
        self.identity = v if (v := get("identity")) or v is not None and v not in empty else None
        self.action = v if (v := get("action")) or v is not None and v not in empty else None
        self.expected = v if (v := get("expected")) or v is not None and v not in empty else None
        self.actual = v if (v := get("actual")) or v is not None and v not in empty else None
        self.success = v if (v := get("success")) or v is not None and v not in empty else None
        self.scope = v if (v := get("scope")) or v is not None and v not in empty else None
        self.entities = v if (v := get("entities")) or v is not None and v not in empty else None
        self.record_id = record["envelope"]["record_id"]

    def option(self) -> tuple | None:
        """``_option`` of the failure, computed on the first call: every success in its system and scope
        asks it of the last ``TRAJECTORY`` failure reports there (``_doubt_replaced``), ~60 % of the learner's
        time in bench/learning.py's world (issue 28). ``()``: computed, none."""
        if self._option is None:
            self._option = _option(self.as_record()) or ()
        return self._option or None

    def get(self, name: str, default=None):
        value = getattr(self, name) if name in _FAILURE_FIELDS else None
        return default if value is None else value

    def __getitem__(self, name: str):
        if name == "envelope":
            return {"record_id": self.record_id}
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def as_record(self) -> dict:
        """The kept fields as a record (what the extractor's protocol takes: dicts)."""
        return {"envelope": {"record_id": self.record_id},
                **{name: value for name in _FAILURE_FIELDS if (value := getattr(self, name)) is not None}}

    def __reduce__(self):
        """Pickled as its kept values in ``_KEPT`` order (the learner's snapshot holds ~25k of them at 100k
        events): the default for a slotted object made a dict of its slots, names included, an object (the
        kept failures were ~40 % of the snapshot's ~0.25 s of the caller's CPU; as values x0.66, issue 28
        round fifteen). The option is a cache, computed again on first use. A snapshot in the default form
        still loads (its slots are set as before)."""
        return _kept_failure_of, _kept_values(self)

    def __eq__(self, other) -> bool:  # a replayed learner holds the same failures
        return isinstance(other, KeptFailure) and self.as_record() == other.as_record()

    __hash__ = None  # compared by value

    def __repr__(self) -> str:
        return f"KeptFailure({self.as_record()!r})"


_KEPT = (*_FAILURE_FIELDS, "record_id")  # what a pickled KeptFailure holds, in order
_kept_values = attrgetter(*_KEPT)


def _kept_failure_of(*values) -> KeptFailure:
    """The ``KeptFailure`` whose ``_KEPT`` values ``__reduce__`` gave (its option not computed yet)."""
    failure = KeptFailure.__new__(KeptFailure)
    for name, value in zip(_KEPT, values, strict=True):
        setattr(failure, name, value)
    failure._option = None
    return failure


def _kept_failure(record: dict) -> KeptFailure:
    """``KeptFailure`` of ``record`` (a function: the test compares it with keeping the whole record)."""
    return KeptFailure(record)


def _as_record(failure: KeptFailure | dict) -> dict:
    """A kept failure as the extractor takes it (a snapshot of older code may hold whole records)."""
    return failure.as_record() if isinstance(failure, KeptFailure) else failure


def _where(option: tuple) -> tuple:
    """(system, scope) of an option key (``_option``): where its failure reports are kept."""
    return option[:1] + option[2:3]


def _recommends(unit: Unit, option: tuple, scope: dict | None = None) -> bool:
    """Whether ``unit`` (proposed for ``scope``) tells the agent to do ``option`` where the option ran: its
    action performs the option, its condition names the system, and its scope does not name another
    value of a coordinate the option's scope names (a rule of test is not contradicted in prod)."""
    system, words, where, _identity = option  # a rule names what to do; who does it is its action's words
    ran = dict(where)
    if any(k in ran and ran[k] != str(v) for k, v in (scope or {}).items()):
        return False
    return attribution.performs(attribution.words(unit.action), words) and system.lower() in unit.condition.lower()


def _lesson(source: str, condition: str, action: str, scope: dict | None = None) -> tuple:
    """What makes two proposals the same lesson: its words, and where it was learned (design.md §issue-29).
    The same fix learned in prod and in test is two units, each scoped where it holds: absorbed into the
    first, the second scope's agents never saw it (the gate cuts a rule whose scope names another value)."""
    where = tuple(sorted((str(k), str(v)) for k, v in (scope or {}).items()))
    return source, " ".join(tokens(condition)), " ".join(tokens(action)), where


_SPOKEN = frozenset(("message", "feedback"))  # the kinds the feedback and preference rules read
_PERCEIVED = {kind: f"perceived_{kind}" for kind in ("event", "transactional")}  # the counters' names, made once
_HANDLERS = {"perception": Learner._perception, "cognition": Learner._cognition, "outcome": Learner._outcome,
             "recall": Learner._recall, "injection": Learner._injection, "decision": Learner._decision}


def _word_hashes(record: dict) -> bytes:
    """The hashes of the word set of an event's text, structured fields and entities
    (``_hygiene``): what it keeps per (agent, session, kind, speaker, item) — ``LastEvents.step`` makes it
    in the same C pass as it reads the place (tests/learning/test_last_events.py) —, packed as 8 bytes a
    word, sorted int64s (a frozenset of the words' own strings held ~1.7 kB per event and was walked by every
    full collection), and compares by Jaccard, which over the hashes is Jaccard over the words
    (a 64-bit hash of each word's code points, ``_scan.stable_hashes``: the same in every process,
    so a learner restored from its snapshot still matches the word sets hashed before the restart,
    which Python's per-process salted ``hash`` could not; a collision among one event's words has
    odds ~2⁻⁶⁴). The
    text and each field are tokenised apart, which gives the set of their joined text: a token
    never spans the space that would join them."""
    # one C pass over the record's fields, hashing each token where it lies and packing the set: no
    # list of fields, no token strings, no int objects, no set (issue 28; the set of ``stable_hashes`` of
    # each said field's ``tokens``, tests/recall/test_scan_fused.py)
    return _scan.record_hash_bytes(record)


def _merge_similarity(words: bytes, prev_words: bytes) -> float | None:
    """The Jaccard of two packed word sets when it reaches ``MERGE_SIMILARITY``, else None. Sizes
    too far apart are answered before the sets are compared (issue 28): the Jaccard is at most the
    smaller size over the larger, and rounding keeps that order. The previous set may be packed in
    any order (a snapshot written before the sets were sorted): ``shared_hashes`` sorts copies."""
    size, prev_size = len(words) // 8, len(prev_words) // 8
    smaller, larger = sorted((size, prev_size))
    if not larger or smaller / larger < MERGE_SIMILARITY:
        return None
    shared = _scan.shared_hashes(words, prev_words)
    similarity = shared / (size + prev_size - shared)
    return similarity if similarity >= MERGE_SIMILARITY else None

