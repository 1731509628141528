"""``Learner.learn`` sends a message to the rules only when someone speaks it (issue 28, round twenty-three): a
message with no speaker is read by no rule — a preference needs a user speaking (``extract.speaking_user``), the
feedback rules a feedback event. On drawn batches of turns (speakers none, empty, the user, a person's name in zh,
the agent itself, a system role; standing instructions in en and zh, explicit signals, polarities, failures and
successes among them) it must decide as round twenty-two's loop, kept here as the oracle: the same records, the
same failures, the same counts and the same state, pickled byte for byte."""

from __future__ import annotations

import pickle

from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindbrain.brain import _perception, perceived
from hindbrain.learning import extract, write_gate
from hindbrain.learning.learner import _HANDLERS, _SPOKEN, Learner
from hindbrain.learning.records import PRODUCER
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded


def round_22_learn(learner: Learner, batch) -> tuple[list, list]:
    """Round twenty-two's ``Learner.learn``: every message and feedback event to the rules."""
    out, failed = [], []
    events = transactional = repeated = 0
    for decoded in batch:
        record = decoded.record
        env = record["envelope"]
        if env["producer"] == PRODUCER:
            continue
        try:
            if decoded.record_type != "perception":
                handler = _HANDLERS.get(decoded.record_type)
                if handler is None:
                    continue
                emitted = handler(learner, record, False)
            else:
                t = learner.tenants.get(env["tenant"]) or learner._tenant(env["tenant"])
                if not t.perceived.added(env["record_id"]):
                    repeated += 1
                    continue
                kind = record["kind"]
                if kind == "message" and write_gate.perception_class(record) == "transactional":
                    transactional += 1
                    continue
                events += 1
                found = t.last_event.step(record)
                emitted = learner._merged(record, found) if found is not None else []
                said = record.get("success")
                failure, success = kind == "anomaly" or said is False, said is True
                if failure or success or kind in _SPOKEN:
                    emitted += learner._perception_rules(t, record, failure, success, False)
            for rt, r in emitted:
                learner._apply(rt, r, True)  # its appends (they are read back later)
        except Exception as exc:  # noqa: BLE001 - as the loop it mirrors
            failed.append((decoded, exc))
            continue
        out += emitted
    for name, n in (("perceived_event", events), ("perceived_transactional", transactional),
                    ("repeated_perceptions", repeated)):
        if n:
            learner.counts[name] += n
    return out, failed


TEXTS = ("from now on please always answer in bullet points", "以后请用中文回答", "I prefer short answers",
         "please always cc my manager", "disk full on db1", "thanks", "no, that is wrong")
SPEAKER = st.sampled_from((None, "", "user", "Priya", "李雷", "a1", "system", " "))
KIND = st.sampled_from(("message", "message", "feedback", "observation", "anomaly"))
TEXT, SIGNAL = st.sampled_from(TEXTS), st.sampled_from((None, "explicit"))
POLARITY, SUCCESS = st.sampled_from((None, None, -1.0, 1.0)), st.sampled_from((None, None, True, False))
TASK, SESSION = st.sampled_from(("t1", "t2", None)), st.sampled_from(("s1", None))


@st.composite
def turns(draw) -> list[Decoded]:
    out = []
    for n in range(draw(st.integers(1, 25))):
        kind, speaker = draw(KIND), draw(SPEAKER)
        given_speaker = speaker.strip() or None if speaker else None  # the API refuses a blank one
        fields = {"tenant": "acme", "agent": "a1", "task": draw(TASK), "session": draw(SESSION), "kind": kind,
                  "text": draw(TEXT), "speaker": given_speaker, "signal": draw(SIGNAL), "success": draw(SUCCESS),
                  "system": draw(st.sampled_from((None, "IAM"))), "action": draw(st.sampled_from((None, "export")))}
        if kind in ("feedback", "message"):
            fields["polarity"] = draw(POLARITY) if kind == "feedback" else None
        record = _perception(perceived(fields))
        record["speaker"] = speaker  # "" or " " as a decoded record may hold it
        record["envelope"]["record_id"] = f"ev_{n + 1:032x}"
        record["envelope"]["ts_us"] = 1_700_000_000_000_000 + 700_000_000 * n
        out.append(Decoded(Position("perceptions", 0, n), "perception", record))
    return out


def summary(learner: Learner, result: tuple[list, list]) -> tuple:
    out, failed = result
    return (out, [(d.position.offset, type(e), str(e)) for d, e in failed], dict(learner.counts),
            pickle.dumps(learner.tenants))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns(), st.integers(1, 5))
def test_learn_decides_as_when_every_message_went_to_the_rules(batch, cut):
    mine, theirs = Learner(), Learner()
    got = [summary(mine, mine.learn(batch[a:a + cut])) for a in range(0, len(batch), cut)]
    want = [summary(theirs, round_22_learn(theirs, batch[a:a + cut])) for a in range(0, len(batch), cut)]
    assert got == want


@settings(max_examples=examples(300), deadline=None)
@given(turns())
def test_no_speakerless_message_states_a_preference(batch):
    for decoded in batch:
        record = decoded.record
        if record["kind"] == "message" and not record.get("speaker"):
            assert extract.preference(record) is None
