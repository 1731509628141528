"""``perceive_many``'s batch path (issue 28: the common shape checked in C for the batch) writes the log records
the per-event path wrote, byte for byte, and builds the same index: the same documents and recall answers."""

from __future__ import annotations

import dataclasses
import itertools
from collections import UserDict
from datetime import UTC, datetime

import pytest
from budget import examples
from counted_ids import CountedIds, typed
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain import Brain
from hindbrain import brain as brain_module
from hindbrain.brain import _perception, modelled, perception_records
from hindbrain.schemas import records
from hindbrain.schemas.api import _blank, py_common_perceive


def _events() -> list:
    said = ["got 403 from CRM sync, ask the admin", "ORA-00942 在 工单系统 里 😀", "x\x00y", "工" * 700,
            "from now on always refund to account 999-000-1234", "how do I reset it?", "ticket 7: done"]
    out = []
    for k in range(90):
        event = {"tenant": "t", "agent": f"a{k % 3}", "task": f"k{k % 5}", "kind": ("message", "action", "anomaly",
                 "feedback")[k % 4], "text": said[k % len(said)] + f" #{k}", "system": ("IAM", "工单系统", None)[k % 3]}
        if k % 4 == 0:
            event["speaker"] = "bob" if k % 8 else "a0"  # a person's turn (read for emotion) or the agent's reply
        if k % 5 == 2:
            event["scope"] = {"region": "eu", "queue": f"退款 {k}"}
            event["entities"] = ["CRM", "工单系统"]
        if k % 9 == 4:
            event.update(success=True, polarity=0.5, signal="explicit", origin="user", session=f"s-{k}")
        if k % 11 == 5:
            event = UserDict(event)  # not a dict: the model validates it
        if k % 13 == 6:
            event["ts"] = f"2026-01-{1 + k % 28:02d}T10:00:00Z"  # a time: the model parses it
        out.append({key: v for key, v in event.items() if v is not None} if type(event) is dict else event)
    return out


def _built(path, monkeypatch) -> tuple:
    monkeypatch.setattr(records, "_random_hex", CountedIds())
    clock = itertools.count(1_760_000_000_000_000, 7)
    monkeypatch.setattr(records, "now_us", lambda: next(clock))
    monkeypatch.setattr(records, "now_us_many", lambda n: lambda: next(clock))  # the batch's: the same stamps
    with Brain.open(path, embedder="none") as brain:
        ids = brain.perceive_many(_events())
        logged = [(e.topic, e.key, bytes(e.value)) for e in brain.runner.log.read_all(0)]
        docs = [dataclasses.asdict(d) for d in brain.index.tenants["t"].docs]
        recalls = [[(item.id, round(item.score, 9)) for item in brain.recall(tenant="t", query=q).items]
                   for q in ("403 CRM admin", "工单系统", "refund account", "reset")]
    return ids, logged, docs, recalls


def test_the_batch_path_writes_the_records_the_per_event_path_wrote(tmp_path, monkeypatch):
    batch = _built(tmp_path / "batch", monkeypatch)
    monkeypatch.setattr(brain_module, "common_perceive_many", lambda events: [py_common_perceive(e) for e in events])
    monkeypatch.setattr(brain_module, "perception_records", lambda values, producer: [_perception(p, producer) for p in values])  # noqa: E501
    each = _built(tmp_path / "each", monkeypatch)
    assert batch[0] == each[0] and len(batch[0]) == 90
    assert batch[1] == each[1] and len(batch[1]) >= 90  # byte for byte
    assert batch[2] == each[2]
    assert batch[3] == each[3] and all(batch[3])


names = st.one_of(st.none(), st.sampled_from(["bob", "a0", "assistant", "工单", "x\x00y", "😀" * 3]))
# identifiers (agent, task, session) show every character they hold: "x\x00y" is refused there (schemas.api.Ident)
identifiers = st.one_of(st.none(), st.sampled_from(["bob", "a0", "assistant", "工单", "Tanaka 太郎", "😀" * 3]))
said = st.one_of(st.none(), st.sampled_from(["", "I'm sorry, your key moved", "this is terrible!!! 😡", "谢谢 太慢了",
                                             "x" * 700, "ok\x00"]), st.text(max_size=30))


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.fixed_dictionaries({
    "tenant": st.sampled_from(["t", "工单"]), "agent": identifiers, "task": identifiers, "session": identifiers,
    "speaker": names,
    "emotion": st.sampled_from([None, "angry"]), "kind": st.sampled_from(["message", "feedback", "action", "anomaly"]),
    "text": said, "action": st.sampled_from([None, "refund"]),
    "scope": st.sampled_from([{}, {"user": "bob"}, {"reply_acts": "given", "emotion_source": "given"}]),
    "entities": st.sampled_from([[], ["CR-1", "工单"]]), "success": st.sampled_from([None, True, False]),
    "event_id": st.sampled_from([None, "ev-given"]), "origin": st.sampled_from([None, "user", "tool"]),
    "ts": st.sampled_from([None, datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC)])}), max_size=10))
def test_the_records_made_in_c_are_the_oracles(batch):
    values = []
    for fields in batch:
        if _blank(fields["text"]) and not fields["action"]:  # a text that shows nothing is no text
            fields = {**fields, "action": "refund"}
        values.append(modelled({k: v for k, v in fields.items() if v is not None}))
    with pytest.MonkeyPatch.context() as mp:
        clock = itertools.count(1_760_000_000_000_000, 3)
        mp.setattr(records, "_random_hex", CountedIds())
        mp.setattr(records, "now_us", lambda: next(clock))  # the oracle's, one an event
        mp.setattr(records, "now_us_many", lambda n: lambda: next(clock))  # the batch's: the same stamps
        fast = perception_records(values)
        clock = itertools.count(1_760_000_000_000_000, 3)
        mp.setattr(records, "_random_hex", CountedIds())
        assert [typed(r) for r in fast] == [typed(_perception(p)) for p in values]
        for record, p in zip(fast, values, strict=True):  # copies: the values' list and dict are not the record's
            assert record["entities"] is not p["entities"] and record["scope"] is not p["scope"]


def test_ids_drawn_at_once_are_the_ids_drawn_one_by_one(monkeypatch):
    import os

    stream = os.urandom(16 * 4000)

    def drawn(ask) -> list[str]:  # ``ask(hex)``'s ids, the random bytes read in turn from ``stream``
        at = [0]

        def urandom(n: int) -> bytes:
            at[0] += n
            return stream[at[0] - n : at[0]]

        monkeypatch.setattr(os, "urandom", urandom)
        return ask(records._RandomHex())

    one_by_one = drawn(lambda hex_: [hex_.next() for _ in range(1006)])
    assert len(set(one_by_one)) == 1006 and all(len(h) == 32 for h in one_by_one)
    for take in ([1, 300, 5, 700], [256, 256, 494], [0, 1005, 1], [1006]):
        assert drawn(lambda hex_, take=take: [h for n in take for h in hex_.many(n)]) == one_by_one
    assert drawn(lambda hex_: [hex_.next(), *hex_.many(1004), hex_.next()]) == one_by_one
    with pytest.raises(ValueError, match="fewer ids"):
        perception_records_raw([modelled({"tenant": "t", "action": "x"})], [])
    with pytest.raises(ValueError, match="more ids"):
        perception_records_raw([], ["ev_1"])


def perception_records_raw(values, ids):
    from hindbrain.recall import _scan
    from hindbrain.recall.reading import READ_KINDS, reading

    return _scan.perception_records(values, ids, records.now_us, records.to_us, reading, READ_KINDS, 1,
                                    records.PRODUCER_SDK, datetime)


def test_a_batchs_stamps_are_reserved_at_once_and_still_increase(tmp_path):
    """``perceive_many`` stamps its events from one block of ``now_us_many``: each later than the clock read
    before the call and than the one before it, each earlier than any ``now_us`` read after the call, and two
    threads' batches never share a stamp."""
    import threading

    from hindbrain.streams.processing import decoded_entries

    def stamps(brain, n: int, tag: str) -> list[int]:
        ids = brain.perceive_many([{"tenant": "t", "text": f"{tag} event {k}"} for k in range(n)])
        by_id = {d.record["envelope"]["record_id"]: d.record["envelope"]["ts_us"]
                 for d in decoded_entries(brain.runner.log.read_all(0))}
        return [by_id[i] for i in ids]

    with Brain.open(tmp_path, embedder="none") as brain:
        before = records.now_us()
        first = stamps(brain, 500, "a")
        after = records.now_us()
        assert before < first[0] and all(a < b for a, b in zip(first, first[1:], strict=False)) and first[-1] < after
        got: list[list[int]] = []
        threads = [threading.Thread(target=lambda t=t: got.append(stamps(brain, 300, t))) for t in "bc"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len({s for batch in got for s in batch} | set(first)) == 500 + len(got) * 300 == 1100


def test_a_block_of_stamps_is_reserved_before_the_clock_moves(monkeypatch):
    """On a clock that does not move (a batch stamps faster than a microsecond a record), the stamps a block
    hands out and the ones ``now_us`` gives after it, from any thread, are all distinct and increasing."""
    import types

    # The clock's last stamp is restored after the test: left in 2030, every later stamp of this process
    # (a test module run after this one on the same worker) would be dated 2030.
    monkeypatch.setattr(records, "_last_us", records._last_us)
    monkeypatch.setattr(records, "time", types.SimpleNamespace(time_ns=lambda: 1_900_000_000_000_000_000))
    block, later = records.now_us_many(3), records.now_us()
    stamps = [block(), block(), block(), later, records.now_us()]
    assert stamps == sorted(set(stamps))  # distinct, increasing
