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
from collections import Counter
from dataclasses import replace

from hindbrain.learning import attribution, extract, learner_state, lifecycle, write_gate
from hindbrain.learning.acceptance import Acceptance, lesson_key, taught_by
from hindbrain.learning.change_detection import ChangeDetection
from hindbrain.learning.induction import Induction
from hindbrain.learning.learner_state import TenantState, keep_failure, option_key, report_key
from hindbrain.learning.lifecycle import Unit
from hindbrain.learning.llm import Extractor
from hindbrain.learning.outcome_verdicts import LIFECYCLE_JOB, OutcomeVerdicts
from hindbrain.learning.records import PRODUCER, decision, is_own
from hindbrain.projections.unit_states import UNIT_KINDS, UNITS_EVICTED, UNITS_MERGED
from hindbrain.recall import _scan
from hindbrain.schemas.decision_kinds import DecisionKind
from hindbrain.streams.processing import Decoded

MERGE_SIMILARITY = 0.9  # Jaccard of token sets above which consecutive events are one
MERGE_WITHIN_US = 10 * 60 * 1_000_000
TRAJECTORY = 16  # failures remembered per task
HYGIENE_JOB = "learner.write_hygiene"
# decided through the SDK, folded here
HUMAN_KINDS = (DecisionKind.TRAIT_APPROVED, DecisionKind.TRAIT_DECLINED, DecisionKind.UNIT_INVALIDATED)
SUCCESSES_KEPT = 16  # success events remembered per (system, option): the ones a change would outdate
_kept_append = _scan.kept_append  # ``Recent.setdefault(key, []).append(value)``, cut to its last n


class Learner(Induction, ChangeDetection, Acceptance, OutcomeVerdicts):
    """The rules' loop over the log (this module's docstring); each family of decisions is a part of it:
    ``Induction`` (units learned from events), ``ChangeDetection`` (doubt and outdating), ``Acceptance``
    (the write gate's decisions on proposals) and ``OutcomeVerdicts`` (an outcome's evidence on the units
    applied); the state they share is ``learner_state.TenantState``."""

    def __init__(self, extractor: Extractor | None = None):
        self.tenants: dict[str, TenantState] = {}
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
        if t.teaching and record["subject_ids"] and (left := taught_by(record)) is not None:
            taught = t.teaching.pop(record["subject_ids"][0], None)
            if taught is not None:
                getattr(t, taught[0])[taught[1]] = left
        if "unit" in payload:
            unit = lifecycle.from_state(payload["unit"])
            t.set_unit(unit)
            lesson = lesson_key(unit.source, unit.condition, unit.action, t.scopes.get(unit.fragment_id))
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

    def _tenant(self, tenant: str) -> TenantState:
        t = self.tenants.get(tenant)
        if t is None:
            t = self.tenants[tenant] = TenantState()
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

    def _perception_rules(self, t: TenantState, record: dict, failure: bool, success: bool,
                          restoring: bool) -> list[tuple[str, dict]]:
        """The rules on a perceived event that failed, succeeded or is a spoken turn (``_perception``, and
        ``learn``'s loop, which runs the steps before them itself).

        A quarter of a fleet's events fail, and each failure's rules were ~6.6 µs of Python (issue 28, round
        eighteen): the kept lists are trimmed only when over their length (a ``del`` of an empty slice made a
        slice object each time), and ``_routine_broken`` / ``_outdate_successes`` are called only when what
        each reads first is there (a routine taught for the option; successes of it to outdate). The same
        decisions and state (tests/learning/test_failure_rules.py keeps the former body as its oracle)."""
        env, out = record["envelope"], []
        recent = learner_state.RECENT  # read at the call, as ``Recent`` reads it: one bound for maps and lists
        option = option_key(record) if failure or success else None  # pure: computed once for the branches below
        task = env["task"]
        # each kept list's setdefault, append and cut in one C call (``_scan.kept_append``): four in Python were ~1 µs
        # of a failure's ~5.7 here (issue 28, round twenty-three)
        if task and (failure or success) and record.get("action"):
            _kept_append(t.tried, task, (attribution.words(record["action"]), failure), TRAJECTORY, recent)
        kept_failure = keep_failure(record) if failure else None  # one slim copy for both maps below
        if task and failure:
            _kept_append(t.failures, task, kept_failure, TRAJECTORY, recent)
        elif task and success and task in t.failures:
            out += self._recover(t, record, restoring)
        elif option and success and not restoring and not t.successes.get(option):
            out += self._recover_across(t, record, option)
        if key := option:
            if success:
                out += self._routine(t, record, key, restoring)
                out += self._doubt_replaced(t, record, key, restoring)
                out += self._outdate_failures(t, record, key, restoring)
            _kept_append(t.successes if success else t.failed, key, env["record_id"], SUCCESSES_KEPT, recent)
            if failure:
                if t.routine.get(key) is not None:
                    t.routine[key] = {}  # a routine is what kept working: its count starts again
                if key in t.routines:  # else ``_routine_broken`` has nothing to contradict
                    out += self._routine_broken(t, record, key, restoring)
                _kept_append(t.reports, report_key(key), kept_failure, TRAJECTORY, recent)
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

    def _repeated(self, t: TenantState, record_id: str) -> bool:
        """Whether this event id was perceived already: a caller's own ``event_id`` sent again (a
        client retrying a request whose answer it lost) is one event. The views deduplicate it by
        id; the learner must not count it twice either (three copies of one negative feedback
        would otherwise make the three negatives that teach a rule)."""
        if t.perceived.added(record_id):  # one C call (``_scan.RecentIds``)
            return False
        self.counts["repeated_perceptions"] += 1
        return True

    def _hygiene(self, t: TenantState, record: dict, restoring: bool) -> list[tuple[str, dict]]:
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


def _as_json(state: dict) -> dict:
    """A unit's state as a decision's payload reads back (tuples as lists), to compare with one."""
    return json.loads(json.dumps(state))
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
