"""The log contract (``hindbrain.streams.log``), as one test-case every backend subclasses.

    class TestMyLog(LogContract):
        def make_log(self, path):
            return MyLog(...)

``make_log(path)`` opens a log whose storage is identified by ``path`` (a fresh, empty folder
per test): calling it again with the same ``path`` after ``close()`` must reopen the same
storage. That is how durability is tested. The class has no ``Test`` prefix, so pytest collects
it only through its subclasses.

The contract uses only the ``Log`` protocol (no ``read_all``/``get``: they are embedded-only),
unique topic and consumer names per test (a shared Kafka cluster keeps topics between runs), one
key per topic (so a keyed backend puts a topic's messages in one partition) and the partitions
that ``append`` returned, never an assumed partition 0. A message without a key may land in any
partition (Kafka spreads them), so it is read back at its own position.

Atomicity (rule 1) is tested where every backend promises it: a batch that fails validation
leaves nothing. A broker failing half-way through a batch is backend-specific (the embedded log
rolls back, Kafka keeps what was acknowledged) and tested in the backend's own tests.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from hindbrain.streams.log import Log, LogEntry, Message, Position

KEY = "acme/agent-7"


class LogContract:
    """Rules 1-3 of ``hindbrain.streams.log`` plus durability across close and reopen."""

    # -- what a backend provides ---------------------------------------------------------------------
    def make_log(self, path: Path) -> Log:
        raise NotImplementedError("a LogContract subclass opens its backend here")

    # -- fixtures -----------------------------------------------------------------------------------
    @pytest.fixture
    def opener(self, tmp_path):
        """``opener()`` opens (or reopens) this test's log; every log still open is closed at the end."""
        still_open: list[Log] = []

        def open_log() -> Log:
            log = self.make_log(tmp_path / "log")
            still_open.append(log)
            return log

        open_log.close = lambda log: (still_open.remove(log), log.close())  # type: ignore[attr-defined]
        yield open_log
        for log in still_open:
            log.close()

    @pytest.fixture
    def log(self, opener) -> Log:
        return opener()

    @pytest.fixture
    def topic(self) -> Callable[[str], str]:
        run = uuid.uuid4().hex[:12]
        return lambda name: f"contract.{run}.{name}"

    @pytest.fixture
    def consumer(self) -> Callable[[str], str]:
        run = uuid.uuid4().hex[:12]
        return lambda name: f"contract-{run}-{name}"

    # -- helpers ------------------------------------------------------------------------------------
    @staticmethod
    def read_all_of(log: Log, topic: str, partition: int, offset: int = 0) -> list[LogEntry]:
        out: list[LogEntry] = []
        while batch := log.read(topic, partition, offset, limit=1000):
            out += batch
            offset = batch[-1].offset + 1
        return out

    @staticmethod
    def values(entries: list[LogEntry]) -> list[bytes]:
        return [bytes(e.value) for e in entries]

    # -- rule 1: append ---------------------------------------------------------------------------------
    def test_append_returns_one_position_per_message_in_order(self, log, topic):
        t = topic("a")
        messages = [Message(t, KEY, f"m{i}".encode()) for i in range(5)]
        positions = log.append(messages)
        assert len(positions) == 5
        assert all(isinstance(p, Position) for p in positions)
        assert [p.topic for p in positions] == [t] * 5
        assert len({p.partition for p in positions}) == 1
        offsets = [p.offset for p in positions]
        assert offsets == sorted(offsets) and len(set(offsets)) == 5
        assert self.values(self.read_all_of(log, t, positions[0].partition)) == [m.value for m in messages]

    def test_append_of_nothing_returns_nothing(self, log):
        assert log.append([]) == []

    def test_each_position_names_its_own_message(self, log, topic):
        a, b = topic("a"), topic("b")
        messages = [Message(a, KEY, b"a0"), Message(b, None, b"b0"), Message(a, KEY, b"a1"), Message(b, None, b"b1")]
        positions = log.append(messages)
        assert [p.topic for p in positions] == [a, b, a, b]
        for message, pos in zip(messages, positions, strict=True):
            [entry] = log.read(pos.topic, pos.partition, pos.offset, limit=1)
            assert entry.position == pos
            assert (entry.topic, entry.key, bytes(entry.value)) == message

    def test_offsets_keep_growing_across_appends(self, log, topic):
        t = topic("a")
        first = log.append([Message(t, KEY, b"1"), Message(t, KEY, b"2")])
        second = log.append([Message(t, KEY, b"3")])
        third = log.append([Message(t, KEY, b"4"), Message(t, KEY, b"5")])
        offsets = [p.offset for p in first + second + third]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)

    def test_keys_and_values_come_back_exactly(self, log, topic):
        t = topic("a")
        values = [b"", b"\x00", b"\x00\xff\xc3\x01 binary \x00", "ünïcödé".encode(), bytes(range(256)) * 400]
        messages = [Message(t, KEY, v) for v in values] + [Message(t, None, b"no key")]
        positions = log.append(messages)
        entries = self.read_all_of(log, t, positions[0].partition)
        keyed = [(e.key, bytes(e.value)) for e in entries if e.key is not None]
        assert keyed == [(m.key, m.value) for m in messages[:-1]]
        [unkeyed] = log.read(t, positions[-1].partition, positions[-1].offset, limit=1)
        assert (unkeyed.position, unkeyed.key, unkeyed.value) == (positions[-1], None, b"no key")
        assert all(isinstance(e.value, bytes) for e in [*entries, unkeyed])

    @pytest.mark.parametrize("bad", ["a str", None, 3, [1, 2, 3]], ids=["str", "None", "int", "list"])
    def test_a_batch_with_a_non_bytes_value_fails_and_nothing_of_it_is_readable(self, log, topic, bad):
        a, b = topic("a"), topic("b")
        before = log.append([Message(a, KEY, b"before-a"), Message(b, KEY, b"before-b")])
        batch = [Message(a, KEY, b"a1"), Message(b, KEY, b"b1"), Message(a, KEY, bad), Message(a, KEY, b"a2")]
        with pytest.raises((TypeError, ValueError)):
            log.append(batch)
        assert self.values(self.read_all_of(log, a, before[0].partition)) == [b"before-a"]
        assert self.values(self.read_all_of(log, b, before[1].partition)) == [b"before-b"]
        # the log is still usable, and the failed batch left no trace in what follows
        after = log.append([Message(a, KEY, b"after-a")])
        assert after[0].offset > before[0].offset
        assert self.values(self.read_all_of(log, a, after[0].partition)) == [b"before-a", b"after-a"]

    @pytest.mark.parametrize("bad", [3, b"bytes", "\ud800"], ids=["int", "bytes", "lone-surrogate"])
    def test_a_batch_with_a_bad_key_fails_and_nothing_of_it_is_readable(self, log, topic, bad):
        a, b = topic("a"), topic("b")
        before = log.append([Message(a, KEY, b"before-a"), Message(b, KEY, b"before-b")])
        with pytest.raises((TypeError, ValueError)):  # UnicodeEncodeError is a ValueError
            log.append([Message(a, KEY, b"a1"), Message(b, KEY, b"b1"), Message(a, bad, b"a2")])
        assert self.values(self.read_all_of(log, a, before[0].partition)) == [b"before-a"]
        assert self.values(self.read_all_of(log, b, before[1].partition)) == [b"before-b"]

    # -- rule 2: read ---------------------------------------------------------------------------------------
    def test_read_from_an_offset_returns_that_offset_and_later_in_order(self, log, topic):
        t = topic("a")
        positions = log.append([Message(t, KEY, f"m{i}".encode()) for i in range(6)])
        p = positions[0].partition
        for i, pos in enumerate(positions):
            entries = log.read(t, p, pos.offset)
            assert [e.offset for e in entries] == [q.offset for q in positions[i:]]
            assert self.values(entries) == [f"m{j}".encode() for j in range(i, 6)]

    def test_read_starts_at_the_first_offset_at_or_after_the_one_asked(self, log, topic):
        a, b = topic("a"), topic("b")
        mine = []
        for i in range(4):  # interleaved with another topic: a backend may leave gaps in a topic's offsets
            mine += log.append([Message(a, KEY, f"a{i}".encode())])
            log.append([Message(b, KEY, f"b{i}".encode())])
        p = mine[0].partition
        entries = log.read(a, p, mine[0].offset + 1)
        assert entries[0].position == mine[1]
        assert all(e.offset >= mine[0].offset + 1 for e in entries)
        assert self.values(entries) == [b"a1", b"a2", b"a3"]
        assert self.values(log.read(a, p, 0)) == [b"a0", b"a1", b"a2", b"a3"]

    def test_read_respects_the_limit(self, log, topic):
        t = topic("a")
        positions = log.append([Message(t, KEY, f"m{i}".encode()) for i in range(7)])
        p = positions[0].partition
        assert self.values(log.read(t, p, 0, limit=3)) == [b"m0", b"m1", b"m2"]
        assert self.values(log.read(t, p, positions[5].offset, limit=3)) == [b"m5", b"m6"]
        assert [e.position for e in log.read(t, p, positions[2].offset, limit=1)] == [positions[2]]

    def test_paging_with_a_limit_reads_each_message_once_in_order(self, log, topic):
        t = topic("a")
        positions = log.append([Message(t, KEY, f"m{i}".encode()) for i in range(10)])
        p, seen, offset = positions[0].partition, [], 0
        while page := log.read(t, p, offset, limit=3):
            assert len(page) <= 3
            seen += page
            offset = page[-1].offset + 1
        assert [e.position for e in seen] == positions

    def test_read_past_the_end_is_empty(self, log, topic):
        t = topic("a")
        positions = log.append([Message(t, KEY, b"only")])
        assert log.read(t, positions[0].partition, positions[0].offset + 1) == []
        assert log.read(t, positions[0].partition, log.end_offset(t, positions[0].partition)) == []

    def test_reads_of_one_topic_never_return_another(self, log, topic):
        a, b, c = topic("a"), topic("b"), topic("c")
        positions = log.append([Message(t, KEY, f"{t}-{i}".encode()) for i in range(5) for t in (a, b, c)])
        for t in (a, b, c):
            p = next(q.partition for q in positions if q.topic == t)
            entries = self.read_all_of(log, t, p)
            assert {e.topic for e in entries} == {t}
            assert self.values(entries) == [f"{t}-{i}".encode() for i in range(5)]

    def test_end_offset_is_past_every_appended_message(self, log, topic):
        t = topic("a")
        first = log.append([Message(t, KEY, b"1"), Message(t, KEY, b"2")])
        p = first[0].partition
        end = log.end_offset(t, p)
        assert end > first[-1].offset
        [nxt] = log.append([Message(t, KEY, b"3")])
        assert nxt.partition == p and nxt.offset >= end

    def test_partitions_include_every_partition_appended_to(self, log, topic):
        t = topic("a")
        positions = log.append([Message(t, KEY, b"1"), Message(t, "other/key", b"2")])
        assert {p.partition for p in positions} <= set(log.partitions(t))

    # -- rule 3: committed offsets ---------------------------------------------------------------------------
    def test_committed_offset_defaults_to_zero(self, log, topic, consumer):
        t = topic("a")
        [pos] = log.append([Message(t, KEY, b"1")])
        assert log.committed(consumer("never"), t, pos.partition) == 0

    def test_commit_then_committed_returns_the_next_offset_to_read(self, log, topic, consumer):
        t, c = topic("a"), consumer("c")
        positions = log.append([Message(t, KEY, f"m{i}".encode()) for i in range(4)])
        p = positions[0].partition
        log.commit(c, t, p, positions[1].offset + 1)
        assert log.committed(c, t, p) == positions[1].offset + 1
        # resuming from the committed offset reads exactly what was not processed yet
        assert self.values(log.read(t, p, log.committed(c, t, p))) == [b"m2", b"m3"]
        log.commit(c, t, p, positions[3].offset + 1)
        assert log.committed(c, t, p) == positions[3].offset + 1

    def test_committing_is_idempotent(self, log, topic, consumer):
        t, c = topic("a"), consumer("c")
        positions = log.append([Message(t, KEY, b"1"), Message(t, KEY, b"2")])
        p, next_offset = positions[0].partition, positions[-1].offset + 1
        for _ in range(3):
            log.commit(c, t, p, next_offset)
            assert log.committed(c, t, p) == next_offset

    def test_commits_are_per_consumer_and_per_topic(self, log, topic, consumer):
        a, b = topic("a"), topic("b")
        c1, c2 = consumer("one"), consumer("two")
        pa = log.append([Message(a, KEY, b"1"), Message(a, KEY, b"2")])
        pb = log.append([Message(b, KEY, b"1")])
        log.commit(c1, a, pa[0].partition, pa[1].offset + 1)
        assert log.committed(c2, a, pa[0].partition) == 0
        assert log.committed(c1, b, pb[0].partition) == 0
        log.commit(c2, a, pa[0].partition, pa[0].offset + 1)
        assert log.committed(c1, a, pa[0].partition) == pa[1].offset + 1
        assert log.committed(c2, a, pa[0].partition) == pa[0].offset + 1

    def test_committed_offsets_survive_close_and_reopen(self, opener, topic, consumer):
        t, c = topic("a"), consumer("c")
        log = opener()
        positions = log.append([Message(t, KEY, b"1"), Message(t, KEY, b"2")])
        p = positions[0].partition
        log.commit(c, t, p, positions[0].offset + 1)
        opener.close(log)
        reopened = opener()
        assert reopened.committed(c, t, p) == positions[0].offset + 1
        assert reopened.committed(consumer("other"), t, p) == 0

    # -- durability ------------------------------------------------------------------------------------------
    def test_appended_messages_are_readable_after_close_and_reopen(self, opener, topic):
        a, b = topic("a"), topic("b")
        log = opener()
        messages = [Message(a, KEY, b"a0"), Message(b, None, b"b0"), Message(a, KEY, b"\x00a1")]
        positions = log.append(messages)
        opener.close(log)
        reopened = opener()
        for message, pos in zip(messages, positions, strict=True):
            [entry] = reopened.read(pos.topic, pos.partition, pos.offset, limit=1)
            assert entry.position == pos
            assert (entry.topic, entry.key, bytes(entry.value)) == message

    def test_offsets_keep_growing_after_reopen(self, opener, topic):
        t = topic("a")
        log = opener()
        before = log.append([Message(t, KEY, b"1"), Message(t, KEY, b"2")])
        opener.close(log)
        reopened = opener()
        after = reopened.append([Message(t, KEY, b"3")])
        assert after[0].partition == before[0].partition
        assert after[0].offset > before[-1].offset
        assert self.values(self.read_all_of(reopened, t, after[0].partition)) == [b"1", b"2", b"3"]
