"""The learner's last event per place as columns (``_scan.LastEvents``, round sixteen: docs/speed.md) decides as
the ``Recent`` of key tuples it replaced: on drawn runs of perceptions (places that repeat, stored items, speakers,
sessions that fall back to the task, near-duplicates, repeated ids, gaps beyond the merge window, more places than
it remembers), the same records, counts and remembered events in the same order, through a pickle half-way and
a restoring fold; a refused record changes nothing; and a snapshot of the older form is folded from the log."""

from __future__ import annotations

import pickle
import re
import struct
from collections import OrderedDict

import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindbrain import Brain
from hindbrain.learning import learner as learner_module
from hindbrain.learning import learner_state
from hindbrain.learning.learner import MERGE_WITHIN_US, Learner, _merge_similarity, _word_hashes
from hindbrain.learning.learner_state import TenantState
from hindbrain.learning.records import decision
from hindbrain.recall import _scan, keyed
from hindbrain.schemas.decision_kinds import DecisionKind
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded

SIZE = 4  # places remembered in the drawn runs: small, so the oldest are forgotten often
WORDS = ("disk", "full", "db", "nothing", "happened", "磁盘", "已满", "restart")
_EVENT_ID = re.compile(r"ev_([0-9a-f]{32})", re.ASCII).fullmatch
IDS = [f"ev_{n:032x}" for n in (1, 2, 3, 1 << 127, 0xDEADBEEF << 64)] + ["caller-7", "EV_" + "0" * 32, "ev_x"]


def compact_id(record_id: str) -> int | str:
    """An id as round fifteen's learner kept it: an ``ev_`` + 32 hex digits id's bits, any other as given."""
    hexed = _EVENT_ID(record_id)
    return record_id if hexed is None else int(hexed[1], 16)


class OracleLearner(Learner):
    """The learner with round fifteen's ``_hygiene``: an ordered dict of key tuples, oldest first in, oldest
    out, a key seen again keeping its place (``Recent``), of ``SIZE`` places a tenant."""

    def __init__(self):
        super().__init__()
        self.tenants = tenants(1)  # its own ``_hygiene`` keeps the places, not these columns
        self.last: dict[str, OrderedDict] = {}

    def learn(self, batch):
        """Record by record through ``_perception`` and so this ``_hygiene`` (``Learner.learn`` runs a
        perception's steps before its rules in its own loop, round seventeen); nothing fails here."""
        return [r for decoded in batch for r in self.process([decoded])], []

    def _hygiene(self, t, record, restoring):
        env = record["envelope"]
        scope = record.get("scope")
        key = (env["agent"], record.get("session") or env["task"], record["kind"], record.get("speaker"),
               keyed.item_of(scope) if scope else None)
        words = _word_hashes(record)
        last = self.last.setdefault(env["tenant"], OrderedDict())
        previous = last.get(key)
        event_key = compact_id(env["record_id"])
        last[key] = (event_key, words, env["ts_us"])
        if len(last) > SIZE:
            last.popitem(last=False)
        if previous is None or restoring or not words:
            return []
        prev_key, prev_words, prev_ts = previous
        if prev_key == event_key or env["ts_us"] - prev_ts > MERGE_WITHIN_US:
            return []
        similarity = _merge_similarity(words, prev_words)
        if similarity is None:
            return []
        prev_id = f"ev_{prev_key:032x}" if isinstance(prev_key, int) else prev_key
        self.counts["merged"] += 1
        return [decision(DecisionKind.EVENTS_MERGED, env["tenant"], [prev_id], [env["record_id"]],
                         f"near-identical to the newer {env['record_id']} (similarity {similarity:.2f}); "
                         "the newest is kept, this one stays in the log", {"kept": env["record_id"]}, env["ts_us"],
                         learner_module.HYGIENE_JOB,
                         {"similarity": learner_module.MERGE_SIMILARITY, "within_us": MERGE_WITHIN_US},
                         env["record_id"])]


# Event ids a drawn tenant's learner remembers (``_repeated``): more than a run holds (at most 40
# records), so, as with the default 50,000, none is forgotten; the default's two columns made and
# pickled each example were a third of this test's CPU.
IDS_REMEMBERED = 64


def tenants(last_events: int) -> dict[str, TenantState]:
    return {name: TenantState(last_event=_scan.LastEvents(last_events), perceived=_scan.RecentIds(IDS_REMEMBERED))
            for name in ("acme", "globex")}


def columned() -> Learner:
    """A learner whose tenants remember ``SIZE`` places, as the oracle's."""
    learner = Learner()
    learner.tenants = tenants(SIZE)
    return learner


# The drawn fields' strategies, built once: a strategy made inside the composite is built again (its
# label and emptiness worked out anew) at every draw, half of this test's CPU; the examples are the same.
GAPS = st.sampled_from((0, 1, 60_000_000, MERGE_WITHIN_US, MERGE_WITHIN_US + 1))
TEXTS = st.lists(st.sampled_from(WORDS), min_size=0, max_size=10)
SCOPES = st.sampled_from(({}, {"env": "prod"}, {"store_key": "k1"}, {"store_key": "k2"},
                          {"store_namespace": "", "store_key": "k1"}, {"store_namespace": "wiki", "store_key": "k1"}))
KNOWN_ID, TENANT = st.sampled_from(IDS), st.sampled_from(("acme", "globex"))
AGENT, TASK = st.sampled_from(("a1", "a2", None)), st.sampled_from(("t1", "t2", None))
KIND, SYSTEM = st.sampled_from(("observation", "action", "message")), st.sampled_from((None, "", "IAM"))
SESSION, SPEAKER = st.sampled_from((None, "", "s1", "s2")), st.sampled_from((None, "user", "bob"))
REPEATS = st.integers(0, 3).map(lambda n: n == 0)  # a quarter of the events repeat the previous one's place


@st.composite
def perceptions(draw) -> list[dict]:
    out, ts = [], 1_700_000_000_000_000
    for n in range(draw(st.integers(1, 40))):
        ts += draw(GAPS)
        record_id = draw(KNOWN_ID) if draw(st.booleans()) else f"ev_{n + 9:032x}"
        if out and draw(REPEATS):
            # the previous event's place again with its text or one word more: a near-duplicate that merges
            # when the gap allows (independent draws almost never meet a place twice with such a text)
            previous = out[-1]
            text = previous["text"] + (" " + draw(st.sampled_from(WORDS)) if draw(st.booleans()) else "")
            out.append({**previous, "envelope": {**previous["envelope"], "record_id": record_id, "ts_us": ts},
                        "text": text})
            continue
        words = draw(TEXTS)
        scope = draw(SCOPES)
        out.append({
            "envelope": {"record_id": record_id,
                         "ts_us": ts, "tenant": draw(TENANT), "agent": draw(AGENT), "task": draw(TASK),
                         "producer": "sdk/hindbrain"},
            "kind": draw(KIND), "text": " ".join(words), "system": draw(SYSTEM), "identity": None,
            "action": None, "expected": None, "actual": None, "entities": [], "scope": scope, "signal": None,
            "success": None, "polarity": None, "session": draw(SESSION), "speaker": draw(SPEAKER)})
    return out


def batch(records: list[dict], start: int = 0) -> list[Decoded]:
    return [Decoded(Position("x", 0, start + n), "perception", r) for n, r in enumerate(records)]


def remembered(last: _scan.LastEvents) -> list[tuple]:
    """A ``LastEvents``' events oldest place first, as the oracle's ordered dict holds them (compact ids)."""
    count, nxt, _places, ids, ts, lengths, joined, others = last.__reduce__()[2]
    order = list(range(count)) if count < last.size else [*range(nxt, count), *range(nxt)]
    sizes = struct.unpack(f"{count}q", lengths)
    starts = [sum(sizes[:s]) for s in range(count)]
    his_los = struct.unpack(f"{2 * count}Q", ids)
    return [(compact_id(others[s]) if s in others else his_los[2 * s] << 64 | his_los[2 * s + 1],
             joined[starts[s]:starts[s] + sizes[s]], struct.unpack(f"{count}q", ts)[s]) for s in order]


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(perceptions(), st.integers(0, 40), st.integers(0, 40))
def test_the_columns_decide_as_the_ordered_dict_of_key_tuples(records, restore_until, pickle_at):
    ours, oracle = columned(), OracleLearner()
    restored, live = records[:restore_until], records[restore_until:]
    assert ours.process(batch(restored), restoring=True) == oracle.process(batch(restored), restoring=True) == []
    for part in (live[:pickle_at], live[pickle_at:]):
        got, failed = ours.learn(batch(part))
        expected, oracle_failed = oracle.learn(batch(part))
        assert got == expected and failed == oracle_failed == []
        ours.tenants = pickle.loads(pickle.dumps(ours.tenants))  # a snapshot between the parts
    assert ours.counts == oracle.counts
    for tenant, last in oracle.last.items():
        assert remembered(ours.tenants[tenant].last_event) == list(last.values())


def test_a_place_seen_again_returns_its_last_event_and_the_first_place_in_is_the_first_out():
    last, found = _scan.LastEvents(2), []
    for n, session in enumerate(("s1", "s2", "s1", "s3", "s1")):
        found.append(last.step({"envelope": {"record_id": f"ev_{n:032x}", "ts_us": n, "agent": "a1", "task": "t"},
                                "kind": "observation", "session": session, "text": f"disk full db {session}"}))
    words = _word_hashes({"text": "disk full db s1"})
    assert found[2] == (words, f"ev_{0:032x}", words, 0)  # s1 again: its last event, seen again keeps its place
    # s3 came when s1 and s2 were remembered: s1, first in, was forgotten (though seen after s2)
    assert found[:2] == found[3:] == [None, None] and len(last) == 2


def test_a_refused_record_changes_nothing():
    last = _scan.LastEvents(3)
    record = {"envelope": {"record_id": "ev_" + "a" * 32, "ts_us": 5, "agent": "a1", "task": "t"},
              "kind": "observation", "text": "disk full"}
    assert last.step(record) is None
    before = pickle.dumps(last)
    for bad, error in (({**record, "kind": 3}, TypeError), ({**record, "speaker": b"x"}, TypeError),
                       ({**record, "text": 7}, TypeError), ({**record, "scope": ["store_key"]}, TypeError),
                       ({k: v for k, v in record.items() if k != "kind"}, KeyError),
                       ({**record, "envelope": {**record["envelope"], "ts_us": "5"}}, TypeError),
                       ({**record, "envelope": {**record["envelope"], "record_id": 5}}, TypeError),
                       ({**record, "envelope": {"agent": "a1", "task": "t", "ts_us": 5}}, KeyError)):
        with pytest.raises(error):
            last.step(bad)
        assert pickle.dumps(last) == before
    assert last.step(record)[1:] == ("ev_" + "a" * 32, _word_hashes(record), 5)


def test_a_state_whose_columns_disagree_is_refused():
    last = _scan.LastEvents(3)
    last.step({"envelope": {"record_id": "caller-1", "ts_us": 5, "agent": "a1", "task": "t"}, "kind": "message",
               "text": "hello there"})
    cls, args, state = last.__reduce__()
    assert pickle.loads(pickle.dumps(last)) == last
    for bad in ((2, *state[1:]), (*state[:5], state[5] + b"\0" * 8, *state[6:]), (*state[:6], state[6][:-8], state[7]),
                (state[0], 3, *state[2:])):
        other = cls(*args)
        with pytest.raises(ValueError):
            other.__setstate__(bad)
        assert len(other) == 0


def test_a_snapshot_of_the_ordered_dict_form_is_folded_from_the_log(tmp_path):
    """A snapshot written before the columns (version 7: a ``Recent`` of key tuples) is not loaded: the log is
    folded, and the place's last event is the one the log holds, so a near-identical next event merges."""
    from hindbrain.learning.runtime import SNAPSHOT_VERSION

    with Brain.open(tmp_path, embedder="none") as b:
        b.perceive(tenant="acme", agent="a1", session="s1", kind="observation", text="disk on db-3 is 91% full")
    snapshot = tmp_path / "cache" / "learner.snapshot"
    state = pickle.loads(snapshot.read_bytes())
    assert state["version"] == SNAPSHOT_VERSION > 7
    old = learner_state.Recent()  # what a version 7 held: a place whose last event is elsewhere
    old[("a1", "s1", "observation", None, None)] = (compact_id("ev_" + "0" * 32), b"", 0)
    state["tenants"]["acme"].last_event = old
    state["version"] = 7
    state["counts"]["perceived_event"] = 100  # what a loaded snapshot would count from
    snapshot.write_bytes(pickle.dumps(state))
    with Brain.open(tmp_path, embedder="none") as b:
        assert isinstance(b.learning.learner.tenants["acme"].last_event, _scan.LastEvents)
        b.perceive(tenant="acme", agent="a1", session="s1", kind="observation", text="disk on db-3 is 91% full!")
        assert b.learning.learner.counts["merged"] == 1
        assert b.learning.learner.counts["perceived_event"] == 2  # the first counted once: folded, not loaded


def test_a_snapshot_decided_before_senders_counted_is_folded_from_the_log(tmp_path):
    """A version 9 snapshot's units were decided before a unit kept who falsified it and a tenant who each recall
    was for (round thirty-three): loaded, it would carry on from decisions the log's fold no longer makes. It is
    folded from the log instead, as the rules now read it."""
    from hindbrain.learning.runtime import SNAPSHOT_VERSION

    with Brain.open(tmp_path, embedder="none") as b:
        b.perceive(tenant="acme", agent="a1", session="s1", kind="observation", text="disk on db-3 is 91% full")
    snapshot = tmp_path / "cache" / "learner.snapshot"
    state = pickle.loads(snapshot.read_bytes())
    assert state["version"] == SNAPSHOT_VERSION > 9
    del state["tenants"]["acme"].__dict__["recalled_by"]  # what a version 9 pickled
    state["version"] = 9
    state["counts"]["perceived_event"] = 100  # what a loaded snapshot would count from
    snapshot.write_bytes(pickle.dumps(state))
    with Brain.open(tmp_path, embedder="none") as b:
        assert "recalled_by" in vars(b.learning.learner.tenants["acme"])
        assert b.learning.learner.counts["perceived_event"] == 1  # folded from the log, not loaded
