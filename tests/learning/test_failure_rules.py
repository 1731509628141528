"""The rules on a failure, a success or a spoken turn (``Learner._perception_rules``), the option key of an event
(``option_key``), a kept failure (``KeptFailure``) and a ``Recent``'s ``setdefault`` were made cheaper (issue 28, round
eighteen: a failure's rules were ~6.6 µs of Python). Their former bodies are kept here as the oracle: on drawn
batches (failures, successes and spoken turns over few systems, options, scopes, identities and agents, so that
routines are taught and broken, successes and failures outdated, tasks recovered, and the ``Recent`` maps forget
their oldest keys) the learner decides as the former code did — the same records out, the same records failed with
the same errors, the same counts and the same state, pickled byte for byte."""

from __future__ import annotations

import contextlib
import pickle

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindbrain.brain import _perception, perceived
from hindbrain.learning import attribution, extract, learner_state
from hindbrain.learning import learner as learner_module
from hindbrain.learning.learner import SUCCESSES_KEPT, TRAJECTORY, Learner
from hindbrain.learning.learner_state import _EMPTY, _FAILURE_FIELDS, KeptFailure, Recent, keep_failure, report_key
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded


# -- the former code (round seventeen), the oracle ----------------------------------------------------------------
def former_perception_rules(self, t, record, failure, success, restoring):
    env, out = record["envelope"], []
    option = learner_state.option_key(record) if failure or success else None
    task = env["task"]
    if task and (failure or success) and record.get("action"):
        tried = t.tried.setdefault(task, [])
        tried.append((attribution.words(record["action"]), failure))
        del tried[:-TRAJECTORY]
    kept_failure = keep_failure(record) if failure else None
    if task and failure:
        failures = t.failures.setdefault(task, [])
        failures.append(kept_failure)
        del failures[:-TRAJECTORY]
    elif task and success and task in t.failures:
        out += self._recover(t, record, restoring)
    elif option and success and not restoring and not t.successes.get(option):
        out += self._recover_across(t, record, option)
    if key := option:
        if success:
            out += self._routine(t, record, key, restoring)
            out += self._doubt_replaced(t, record, key, restoring)
            out += self._outdate_failures(t, record, key, restoring)
        if success or failure:
            kept = (t.successes if success else t.failed).setdefault(key, [])
            kept.append(env["record_id"])
            del kept[:-SUCCESSES_KEPT]
        if failure:
            if t.routine.get(key) is not None:
                t.routine[key] = {}
            out += self._routine_broken(t, record, key, restoring)
            kept = t.reports.setdefault(report_key(key), [])
            kept.append(kept_failure)
            del kept[:-TRAJECTORY]
            out += self._outdate_successes(t, record, key, restoring)
    if record["kind"] == "feedback" and record.get("polarity") is not None:
        out += self._feedback(t, record, restoring)
    elif not restoring and record["kind"] in ("message", "feedback"):
        proposal = extract.preference(record)
        if proposal:
            proposed = self._propose(env, proposal)
            out += proposed + self._supersede(t, env, proposal, proposed)
    return out


def former_option(event):
    if event.__class__ is KeptFailure:
        return event.option()
    words = attribution.words(event.get("action") or "")
    if not event.get("system") or not words:
        return None
    scope = frozenset((k, str(v)) for k, v in (event.get("scope") or {}).items() if isinstance(v, str | int | float))
    return event["system"], words, scope, attribution.words(event.get("identity") or "")


def former_kept_init(self, record):
    self._option = None
    for name, value in zip(_FAILURE_FIELDS, map(record.get, _FAILURE_FIELDS), strict=True):
        setattr(self, name, None if value is None or not value and value in _EMPTY else value)
    self.record_id = record["envelope"]["record_id"]


def former_setdefault(self, key, default=None):
    held = self.get(key, learner_state._ABSENT)
    if held is learner_state._ABSENT:
        self[key] = held = default
    return held


@contextlib.contextmanager
def former_code():
    """The former bodies in place of the new ones while the oracle learns."""
    swaps = [(Learner, "_perception_rules", former_perception_rules), (learner_module, "option_key", former_option),
             (KeptFailure, "__init__", former_kept_init), (Recent, "setdefault", former_setdefault)]
    saved = [(owner, name, owner.__dict__[name]) for owner, name, _ in swaps]
    for owner, name, value in swaps:
        setattr(owner, name, value)
    try:
        yield
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


# -- drawn worlds ---------------------------------------------------------------------------------------------------
SCOPES = (None, {}, {"env": "prod"}, {"env": "prod"}, {"env": "test"}, {"env": "prod", "region": "eu"})
ODD_SCOPES = ({"env": "prod", "n": 3}, {"env": "prod", "ratio": 0.5}, {"env": "prod", "tags": ["a"]},
              {"flag": True, "env": "test"})  # written to the log by another producer: ``option_key`` filters values
TEXTS = ("disk full on db1", "timeout exporting the report", "I prefer short answers in bullet points",
         "always use bullet points please", "no, that is wrong", "thanks", "")


# A record's drawn fields, built once: a strategy made inside the composite is built again (its label and
# emptiness worked out anew) at every draw, most of the drawing's CPU
GAP = st.sampled_from((1, 60_000_000, 700_000_000))
KIND = st.sampled_from(("anomaly", "action", "observation", "message", "feedback"))
TENANT, AGENT = st.sampled_from(("acme", "acme", "globex")), st.sampled_from(("a1", "a2", "a3"))
TASK, TEXT = st.sampled_from(("t1", "t2", "t3", None)), st.sampled_from(TEXTS)
SYSTEM = st.sampled_from((None, "CRM", "CRM", "CRM", "IAM"))
ACTION = st.sampled_from((None, "export report", "export report", "retry"))
IDENTITY = st.sampled_from((None, "admin account", "admin account", ""))
EXPECTED, ACTUAL = st.sampled_from((None, "a file", "")), st.sampled_from((None, "403 forbidden"))
ENTITIES = st.sampled_from(([], ["db1"], ["db1", "report"]))
SUCCESS = st.sampled_from((None, True, False, True, False))
EVENT_ID = st.sampled_from((None, None, None, "e1"))
SCOPE, ODD_SCOPE = st.sampled_from(SCOPES), st.sampled_from(ODD_SCOPES)
POLARITY = st.sampled_from((-1.0, 1.0, None))
ONE_IN_6, ONE_IN_13 = st.integers(0, 5), st.integers(0, 12)


@st.composite
def worlds(draw) -> list[tuple[str, dict]]:
    out, ts = [], 1_700_000_000_000_000
    for _ in range(draw(st.integers(1, 60))):
        ts += draw(GAP)
        kind = draw(KIND)
        # few systems, options, identities and scopes: the same option recurs, so routines are taught and
        # broken, successes and failures of it outdated, tasks recovered
        fields = {"tenant": draw(TENANT), "agent": draw(AGENT), "task": draw(TASK), "kind": kind,
                  "text": draw(TEXT) or None, "system": draw(SYSTEM), "action": draw(ACTION),
                  "identity": draw(IDENTITY), "expected": draw(EXPECTED), "actual": draw(ACTUAL),
                  "entities": draw(ENTITIES), "success": draw(SUCCESS), "event_id": draw(EVENT_ID)}
        if not fields["text"] and not fields["action"]:
            fields["text"] = "something happened"
        scope = draw(SCOPE)
        if scope is not None:
            fields["scope"] = scope
        if kind == "feedback":
            fields["polarity"] = draw(POLARITY)
        record = _perception(perceived(fields))
        record["envelope"]["ts_us"] = ts
        if draw(ONE_IN_6) == 0:
            record["scope"] = dict(draw(ODD_SCOPE))
        if draw(ONE_IN_13) == 0:  # a record a rule refuses: dead-lettered, the batch goes on
            record["action"] = 7
        out.append(("perception", record))
    return out


def _batch(records, start):
    return [Decoded(Position("x", 0, start + n), rt, r) for n, (rt, r) in enumerate(records)]


def _failures(failed) -> list[tuple]:
    return [(d.position, type(exc), str(exc)) for d, exc in failed]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds(), st.integers(0, 60), st.sampled_from((2, 3, 50_000)))
def test_the_rules_decide_as_the_former_code(drawn, cut, recent):
    ours, oracle = Learner(), Learner()
    kept_recent = learner_state.RECENT
    learner_state.RECENT = recent  # small: the ``Recent`` maps forget their oldest keys (``setdefault``'s path)
    try:
        for start, part in ((0, drawn[:cut]), (cut, drawn[cut:])):
            got, failed = ours.learn(_batch(part, start))
            with former_code():
                expected, expected_failed = oracle.learn(_batch(part, start))
            assert got == expected
            assert _failures(failed) == _failures(expected_failed)
    finally:
        learner_state.RECENT = kept_recent
    assert ours.counts == oracle.counts
    assert pickle.dumps(ours.tenants) == pickle.dumps(oracle.tenants)


def test_a_world_reaches_each_rule_the_fast_paths_skip():
    """What the property compares is not vacuous: a routine taught then broken, successes outdated by two failures,
    a failed task recovered, kept lists trimmed, and a ``Recent`` past its bound — each seen here."""
    learner, out = Learner(), []
    kept_recent = learner_state.RECENT
    learner_state.RECENT = 3
    calls = {"_routine_broken": 0, "_outdate_successes": 0}  # how many of their calls decided something
    originals = {name: getattr(Learner, name) for name in calls}

    def counting(name):
        def call(self, *args, **kwargs):
            emitted = originals[name](self, *args, **kwargs)
            calls[name] += bool(emitted)
            return emitted
        return call

    try:
        for name in calls:
            setattr(Learner, name, counting(name))
        # a routine taught then broken; successes outdated; the kept lists trimmed (an odd count past the bound: a
        # trim one late ends over it) and the ``Recent`` maps past theirs
        events = ([("a1", "t1", True), ("a2", "t2", True), ("a3", "t3", False), ("a1", "t4", False)]
                  + [("a1", "t5", True), ("a2", "t6", False), ("a3", "t7", False)]
                  + [("a1", f"t{8 + n}", False) for n in range(TRAJECTORY + 3)])
        for n, (agent, task, success) in enumerate(events):
            record = _perception(perceived({"tenant": "acme", "agent": agent, "task": task, "kind": "action",
                                            "system": "CRM", "action": "export report", "success": success,
                                            "identity": "admin account", "text": f"step {n}"}))
            got, failed = learner.learn(_batch([("perception", record)], n))
            assert not failed
            out += got
    finally:
        learner_state.RECENT = kept_recent
        for name, value in originals.items():
            setattr(Learner, name, value)
    assert calls["_routine_broken"] >= 1 and calls["_outdate_successes"] >= 1, calls
    t = learner.tenants["acme"]
    assert len(t.failures) == 3 and max(len(kept) for kept in t.reports.values()) == TRAJECTORY


def test_a_kept_failure_holds_each_field_in_its_own_slot():
    """``KeptFailure.__init__`` names each slot: each field's distinct value lands in the slot of its name."""
    record = {name: f"value of {name}" for name in _FAILURE_FIELDS} | {"envelope": {"record_id": "ev_1"}}
    kept = KeptFailure(record)
    assert {name: getattr(kept, name) for name in _FAILURE_FIELDS} == {n: f"value of {n}" for n in _FAILURE_FIELDS}
    assert kept.record_id == "ev_1" and kept._option is None
    with former_code():
        assert KeptFailure(record) == kept

