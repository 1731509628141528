"""Round nineteen (issue 28): ``SqliteLog.append`` reads a batch's topics, keys and values in C-level passes and
checks their types by the set of types met, the per-message loop kept for a batch outside the common shape. The
former body is kept here as the oracle: the same rows, the same positions, or the same error."""

from __future__ import annotations

import tempfile
from pathlib import Path

from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.streams.log import Message, Position
from hindbrain.streams.sqlite_log import SqliteLog


class _Text(str):
    pass


class _Bytes(bytes):
    pass


class _FormerLog(SqliteLog):
    """``append`` as it was before round nineteen (outside a group: what the property draws)."""

    def append(self, messages):
        if not messages:
            return []
        for m in messages:
            if not isinstance(m.value, (bytes, bytearray, memoryview)):
                raise TypeError(f"message value must be bytes, not {type(m.value).__name__}")
            if not isinstance(m.topic, str) or not (m.key is None or isinstance(m.key, str)):
                raise TypeError(f"message topic must be str and key str or None, not {m.topic!r}, {m.key!r}")
        with self._lock:
            cur = self._db.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")
                first = cur.execute('SELECT COALESCE(MAX("offset"), -1) + 1 FROM records').fetchone()[0]
                cur.executemany('INSERT INTO records ("offset", topic, key, value) VALUES (?, ?, ?, ?)',
                                [(first + i, m.topic, m.key, bytes(m.value)) for i, m in enumerate(messages)])
                later = self._write_later(cur)
                cur.execute("COMMIT")
            except BaseException as exc:  # (no storage error is drawn: undone and raised as it was)
                self._undo(("ROLLBACK",), exc)
                raise
            self._written(later)
        return [Position(m.topic, 0, first + i) for i, m in enumerate(messages)]


topics = st.one_of(st.sampled_from(["perceptions", "decisions"]), st.text(max_size=4),
                   st.text(max_size=4).map(_Text), st.sampled_from([None, 7, b"perceptions"]))
keys = st.one_of(st.none(), st.text(max_size=6), st.text(max_size=6).map(_Text), st.sampled_from([3, b"k", 2.5]))
payloads = st.binary(max_size=24)
values = st.one_of(payloads, payloads.map(bytearray), payloads.map(memoryview), payloads.map(_Bytes),
                   st.sampled_from([3, "text", None, [1, 2]]))
# mostly well-formed batches (the common shape), some with one odd field
good = st.builds(Message, st.sampled_from(["perceptions", "decisions"]), st.one_of(st.none(), st.text(max_size=6)),
                 payloads)
messages = st.one_of(st.builds(Message, topics, keys, values), good)


def _outcome(log: SqliteLog, batch: list) -> tuple:
    try:
        positions = log.append(batch)
    except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
        return "error", type(exc), str(exc)
    assert all(type(p) is Position for p in positions)
    rows = log._db.execute('SELECT "offset", topic, typeof(topic), key, typeof(key), value, typeof(value) '
                           "FROM records ORDER BY 1").fetchall()
    return "appended", positions, rows


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.lists(st.one_of(good, good, messages), max_size=8), min_size=1, max_size=3))
def test_append_stores_and_refuses_as_the_former_loop(batches):
    with tempfile.TemporaryDirectory() as home:
        now, former = SqliteLog(Path(home) / "now.sqlite"), _FormerLog(Path(home) / "former.sqlite")
        try:
            for batch in batches:
                assert _outcome(now, batch) == _outcome(former, batch)
        finally:
            now.close()
            former.close()


def test_a_bytes_like_value_is_stored_as_its_bytes_and_a_str_subclass_as_given(tmp_path):
    log = SqliteLog(tmp_path / "log.sqlite")
    try:
        batch = [Message("perceptions", None, bytearray(b"ab")), Message(_Text("decisions"), _Text("k"), _Bytes(b"c")),
                 Message("perceptions", "t/a", memoryview(b"de"))]
        assert log.append(batch) == [Position("perceptions", 0, 0), Position("decisions", 0, 1),
                                     Position("perceptions", 0, 2)]
        assert log._db.execute('SELECT value, typeof(value) FROM records ORDER BY "offset"').fetchall() == [
            (b"ab", "blob"), (b"c", "blob"), (b"de", "blob")]
    finally:
        log.close()
