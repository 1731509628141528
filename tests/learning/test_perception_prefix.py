"""``Learner.learn`` runs a perception's steps before its rules (the repeated id, the class, the write hygiene,
what the event is) in its batch loop and sums their counts (issue 28, round seventeen). It must decide as the loop
it replaced, which called ``_perception`` for each record: on drawn batches (tenants new and known, repeated ids,
small talk, failures, successes, feedback, preferences, near-duplicates, the learner's own records, records a
step refuses), the same records out, the same records failed with the same errors, the same counts and the same
state, pickled byte for byte (the tenants in the order they were made)."""

from __future__ import annotations

import pickle

from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindbrain.brain import _perception, perceived
from hindbrain.learning.learner import _HANDLERS, Learner
from hindbrain.learning.records import PRODUCER
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded


def per_record_learn(learner: Learner, batch) -> tuple[list, list]:
    """Round sixteen's ``Learner.learn``: each record through its handler (``_perception`` for a perception)."""
    out, failed = [], []
    for decoded in batch:
        record = decoded.record
        if record["envelope"]["producer"] == PRODUCER:
            continue
        handler = _HANDLERS.get(decoded.record_type)
        if handler is None:
            continue
        try:
            emitted = handler(learner, record, False)
            for rt, r in emitted:
                learner._apply(rt, r, True)  # its appends (they are read back later)
        except Exception as exc:  # noqa: BLE001 - as the loop it mirrors
            failed.append((decoded, exc))
            continue
        out += emitted
    return out, failed


TEXTS = ("thanks", "ok", "收到", "disk full on db1", "disk full on db1 again", "timeout exporting the report",
         "I prefer short answers in bullet points", "always use bullet points please", "no, that is wrong")
BROKEN = (("kind", 3), ("text", 7), ("speaker", b"x"), ("envelope", None))  # refused by a step, or earlier


# The drawn fields' strategies, built once: a strategy made inside the composite is built again (its
# label and emptiness worked out anew) at every draw, most of the drawing's CPU; the examples are the same.
GAP, KIND = st.sampled_from((0, 1, 60_000_000, 700_000_000)), st.sampled_from(("observation", "action", "message",
                                                                                  "anomaly", "feedback"))
TENANT, AGENT = st.sampled_from(("acme", "globex", "initech")), st.sampled_from(("a1", "a2"))
TASK, TEXT, SYSTEM = st.sampled_from(("t1", "t2", None)), st.sampled_from(TEXTS), st.sampled_from((None, "IAM", "CRM"))
ACTION = st.sampled_from((None, "export report", "export report in batches", "retry"))
SUCCESS, POLARITY = st.sampled_from((None, True, False)), st.sampled_from((-1.0, 1.0))
BREAK, ONE_IN_10 = st.sampled_from(BROKEN), st.integers(0, 9)
ONE_IN_15, ONE_IN_8 = st.integers(0, 14), st.integers(0, 7)
RECALL_TENANT = st.sampled_from(("umbrella", "acme"))


@st.composite
def records(draw) -> list[tuple[str, dict]]:
    out, ts = [], 1_700_000_000_000_000
    for n in range(draw(st.integers(1, 30))):
        ts += draw(GAP)
        kind = draw(KIND)
        fields = {"tenant": draw(TENANT), "agent": draw(AGENT), "task": draw(TASK), "kind": kind, "text": draw(TEXT),
                  "system": draw(SYSTEM), "action": draw(ACTION), "success": draw(SUCCESS),
                  "event_id": draw(st.sampled_from((None, "e1", "e2", f"ev_{n + 1:032x}")))}
        if kind == "feedback":
            fields["polarity"] = draw(POLARITY)
        record = _perception(perceived(fields))
        record["envelope"]["ts_us"] = ts
        if draw(ONE_IN_10) == 0:  # a record a step refuses: the batch goes on, it is dead-lettered
            name, value = draw(BREAK)
            record[name] = value if name != "envelope" else {**record["envelope"], "record_id": 5}
        if draw(ONE_IN_15) == 0:  # the learner's own record: skipped live
            record["envelope"]["producer"] = PRODUCER
        out.append(("perception", record))
        if draw(ONE_IN_8) == 0:  # a recall of a tenant maybe not seen yet: made in log order
            out.append(("recall", {"envelope": {"record_id": f"rc{n}", "tenant": draw(RECALL_TENANT), "task": "t1",
                                                "producer": "sdk/hindbrain", "ts_us": ts}, "recall_id": f"rc{n}",
                                   "scope": {}, "situation": {"system": "CRM", "action": "export report"}}))
    return out


def _batch(records: list[tuple[str, dict]], start: int) -> list[Decoded]:
    return [Decoded(Position("x", 0, start + n), rt, r) for n, (rt, r) in enumerate(records)]


def _failures(failed) -> list[tuple]:
    return [(d.position, type(exc), str(exc)) for d, exc in failed]


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records(), st.integers(0, 30))
def test_the_batch_loop_decides_as_perception_record_by_record(drawn, cut):
    ours, oracle = Learner(), Learner()
    for start, part in ((0, drawn[:cut]), (cut, drawn[cut:])):  # two batches: the second meets known tenants
        got, failed = ours.learn(_batch(part, start))
        expected, expected_failed = per_record_learn(oracle, _batch(part, start))
        assert got == expected
        assert _failures(failed) == _failures(expected_failed)
    assert ours.counts == oracle.counts
    assert list(ours.tenants) == list(oracle.tenants)
    assert pickle.dumps(ours.tenants) == pickle.dumps(oracle.tenants)


def test_the_loop_counts_each_class_and_dead_letters_a_refused_record():
    """Each way out of the loop before the rules, seen on a fixed world (what the property above compares)."""
    learner, failed = Learner(), []
    for n in range(40):
        fields = {"tenant": "acme", "agent": "a1", "task": f"t{n // 4}", "kind": ("anomaly", "message")[n % 2],
                  "text": TEXTS[n % 3], "system": None if n % 4 in (0, 3) else "CRM",
                  "action": None if n % 4 == 3 else "export report",
                  "success": (None, True, False, None)[n % 4], "event_id": ("e1", None)[n % 3 > 0]}
        record = _perception(perceived(fields))
        if n == 7:
            record["text"] = 7
        failed += learner.learn(_batch([("perception", record)], n))[1]
    assert {"perceived_event", "perceived_transactional", "repeated_perceptions"} <= set(learner.counts)
    assert [type(exc) for _, exc in failed] == [TypeError]
