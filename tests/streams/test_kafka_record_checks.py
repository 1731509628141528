"""The checks of a Kafka replay's records in C (``_avro.native_block``, run by ``kafka_batches.frame``
for every batch as it turns the records into chDB's Native columns): a record is taken exactly when
it is in its place (attributes 0, offset delta = its index, no headers, its length what its fields
take), has a UTF-8 key and a value the C reader reads whole (the current perception's header and
body), every string valid as Python's strict decoder has it; a row in the range also passes
``invalid_reason``'s checks. Taking a record the per-record path would refuse would write a wrong
row; refusing a good one only costs the per-record path. The columns hold what the C reader reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from budget import examples
from by_path import module_at
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindbrain.schemas import _avro
from hindbrain.schemas.codec import HEADER_LEN, registry
from hindbrain.streams.columnar import PERCEPTIONS, _long
from hindbrain.streams.kafka_batches import BOUNDED, COLUMNS, NONEMPTY, PROGRAM, kafka_record
from hindbrain.streams.processing import TS_US_RANGE

HEADER = PERCEPTIONS.header


def _decoder_tests():
    return module_at(Path(__file__).parents[1] / "schemas" / "test_avro_decoder.py", "avro_decoder_tests")


_DEC = _decoder_tests()
CURRENT = registry.current("perception")


ANY_TIME = ("envelope.ts_us", -(2**63), 2**63 - 1)


def block(records: bytes, count: int = 1, start: int = 0, stop: int = 2**62, rows_checked: bool = False):
    """``native_block`` of one batch of ``records`` at base 0; ``rows_checked``: with ``invalid_reason``'s
    checks (else only the records' own: drawn values may have an empty tenant)."""
    nonempty, bounded = (NONEMPTY, BOUNDED) if rows_checked else ((), ANY_TIME)
    return _avro.native_block(PROGRAM, HEADER, COLUMNS, nonempty, bounded, [(records, 0, len(records), count, 0)],
                              start, stop)


def check(records: bytes, count: int = 1) -> bool:
    return block(records, count) is not None


def strict_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8", "strict")
    except UnicodeDecodeError:
        return False
    return True


def reader_takes(value: bytes) -> bool:
    """What the per-record path's C reader takes whole: the current perception's header and body."""
    return value[:HEADER_LEN] == HEADER and _avro.read(PROGRAM, value, HEADER_LEN) is not None


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_value_is_taken_exactly_when_the_c_reader_reads_it_whole(data):
    value = _DEC.fastavro_bytes(CURRENT, data.draw(_DEC.values(CURRENT.parsed)))
    assert check(kafka_record(0, b"k", value))
    cut = data.draw(st.integers(0, len(value) - 1))
    at = data.draw(st.integers(0, len(value) - 1))
    flipped = value[:at] + bytes([data.draw(st.integers(0, 255))]) + value[at + 1:]
    for corrupt in (value[:cut], flipped, value + b"\x00", value + data.draw(st.binary(max_size=4))):
        assert check(kafka_record(0, b"k", corrupt)) == reader_takes(corrupt)


@pytest.mark.parametrize("raw", [b"\xed\xa0\x80", b"a\xed\xb2\x80b", b"\xc0\x80", b"\xff", b"\xf0\x9f\x98",
                                 b"\xf4\x90\x80\x80", b"\xe0\x80\xaf", "😀".encode(), "权限 ok".encode()], ids=repr)
def test_a_text_that_is_not_utf8_is_refused(raw):
    value = _DEC._with_text_bytes(raw)
    assert check(kafka_record(0, b"k", value)) == strict_utf8(raw) == reader_takes(value)


def test_every_one_and_two_byte_key_and_their_continuations_as_pythons_strict_decoder():
    """Keys of every first and second byte, alone and followed by one or two continuation bytes:
    the validator of every string takes exactly what ``bytes.decode('utf-8')`` takes."""
    value = _DEC._with_text_bytes(b"ok")
    for first in range(256):
        for second in range(256):
            for tail in (b"", b"\x80", b"\xbf\x80", b"a"):
                raw = bytes([first, second]) + tail
                assert check(kafka_record(0, raw, value)) == strict_utf8(raw), raw


@settings(max_examples=examples(200), deadline=None)
@given(raw=st.binary(max_size=24) | st.text(max_size=12).map(str.encode))
def test_drawn_keys_as_pythons_strict_decoder(raw):
    assert check(kafka_record(0, raw, _DEC._with_text_bytes(b"ok"))) == strict_utf8(raw)


OK = _DEC._with_text_bytes(b"ok")


def _record(delta: int, key: bytes | None = b"k", value: bytes | None = OK, attrs: int = 0,
            headers: bytes = _long(0), extra: bytes = b"") -> bytes:
    """A v2 record as the broker stores it, any field as given (None: a null key or value)."""
    body = (bytes([attrs]) + _long(0) + _long(delta) + (_long(-1) if key is None else _long(len(key)) + key)
            + (_long(-1) if value is None else _long(len(value)) + value) + headers + extra)
    return _long(len(body)) + body


def test_a_batch_is_taken_only_with_every_record_in_its_place():
    clean = b"".join(_record(i) for i in range(5))
    assert check(clean, 5) and clean == b"".join(kafka_record(i, b"k", OK) for i in range(5))
    old = registry.encode("perception", {k: v for k, v in _DEC.perception("x").items()
                                         if k not in ("session", "speaker", "emotion", "origin")}
                          | {"envelope": _DEC.perception("x")["envelope"] | {"schema_version": 1}}, version=1)
    wrong = {
        "an offset delta not its index": _record(0) + _record(2) + b"".join(_record(i) for i in range(2, 5)),
        "attributes 1": _record(0, attrs=1) + b"".join(_record(i) for i in range(1, 5)),
        "a null key": b"".join(_record(i, key=None if i == 3 else b"k") for i in range(5)),
        "a null value": b"".join(_record(i) for i in range(4)) + _record(4, value=None),
        "a record header": b"".join(_record(i) for i in range(4)) + _record(4, headers=_long(1) + _long(1) + b"h"
                                                                             + _long(0) + _long(0)),
        "a byte past the record's fields": b"".join(_record(i) for i in range(4)) + _record(4, extra=b"\x00"),
        "an older perception version": b"".join(_record(i) for i in range(4)) + _record(4, value=old),
        "a byte past the last record": clean + b"\x00",
        "the last record cut": clean[:-1],
    }
    for name, records in wrong.items():
        assert not check(records, 5), name
    assert not check(clean, 4) and not check(clean, 6)  # fewer or more records than the batch says


def test_bad_arguments_are_an_error_not_a_crash():
    record = kafka_record(0, b"k", OK)

    def call(program=PROGRAM, columns=COLUMNS, nonempty=NONEMPTY, bounded=BOUNDED, batches=None):
        return _avro.native_block(program, HEADER, columns, nonempty, bounded,
                                  [(record, 0, len(record), 1, 0)] if batches is None else batches, 0, 10)

    for batches in ([(record, 0, len(record) + 1, 1, 0)], [(record, 2, 1, 1, 0)], [(record, 0, 1)], [b"x"]):
        with pytest.raises(ValueError, match="a batch is"):
            call(batches=batches)
    with pytest.raises(ValueError, match="not an Avro program opcode|has no Native column"):
        call(program=(99,))
    with pytest.raises(ValueError, match="fewer column names"):
        call(columns=COLUMNS[:-1])
    with pytest.raises(ValueError, match="more column names"):
        call(columns=(*COLUMNS, "x"))
    with pytest.raises(ValueError, match="is not a column"):
        call(nonempty=("envelope.nothing",))
    with pytest.raises(ValueError, match="is not a long"):
        call(bounded=("envelope.tenant", 0, 1))
    with pytest.raises(ValueError, match="bounded is"):
        call(bounded=("envelope.ts_us",))
    assert call(batches=[])[1] == 0  # no records: an empty block, nothing wrong


def test_a_row_in_the_range_must_pass_invalid_reasons_checks():
    """An empty tenant or id, or a time outside years 1-9999: refused in the range (the per-record path
    dead-letters it with its reason), taken outside it (another range's record)."""
    good = _DEC.perception("x")
    bad = {"an empty tenant": {"tenant": ""}, "an empty id": {"record_id": ""},
           "a time before year 1": {"ts_us": TS_US_RANGE[0] - 1}, "a time past 9999": {"ts_us": TS_US_RANGE[1] + 1}}
    assert block(kafka_record(0, b"k", registry.encode("perception", good)), rows_checked=True) is not None
    for name, change in bad.items():
        value = registry.encode("perception", good | {"envelope": good["envelope"] | change})
        records = kafka_record(0, b"k", value) + kafka_record(1, b"k", registry.encode("perception", good))
        assert block(records, 2, rows_checked=True) is None, name
        assert block(records, 2, start=1, rows_checked=True)[1] == 1, name  # outside the range: not its rows


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_columns_hold_what_the_c_reader_reads(data, open_warehouse, tmp_path_factory):
    """Drawn perceptions (every field's type: nulls, arrays, maps, booleans, doubles, any text) through
    ``native_block`` and chDB's Native reader give the values the per-record path's C reader reads, each
    at its offset; the rows outside ``[start, stop)`` are left out."""
    values = [_DEC.fastavro_bytes(CURRENT, data.draw(_DEC.values(CURRENT.parsed))) for _ in range(data.draw(
        st.integers(1, 6)))]
    start = data.draw(st.integers(0, len(values) - 1))
    records = b"".join(kafka_record(i, b"k", v) for i, v in enumerate(values))
    got = _avro.native_block(PROGRAM, HEADER, COLUMNS, (), ANY_TIME, [(records, 0, len(records), len(values), 7)],
                             7 + start, 7 + len(values))
    assert got is not None and got[1] == len(values) - start
    path = tmp_path_factory.mktemp("native") / "block.native"
    path.write_bytes(got[0])
    warehouse = _warehouse(open_warehouse)
    names = [c for c in COLUMNS if c is not None]
    columns, rows = warehouse.query_columns(f"SELECT * FROM file('{path}', 'Native')")
    assert columns == [*names, "_offset"]
    for row, value in zip(rows, values[start:], strict=True):
        decoded = _avro.read(PROGRAM, value, HEADER_LEN)
        want = [_leaf(decoded, name) for name in names]
        assert list(row[:-1]) == want
    assert [row[-1] for row in rows] == list(range(7 + start, 7 + len(values)))


def _warehouse(open_warehouse):
    """One warehouse for all the drawn examples of a test (the fixture is the same for all of them)."""
    if not hasattr(open_warehouse, "for_examples"):
        open_warehouse.for_examples = open_warehouse(migrate=False)
    return open_warehouse.for_examples


def _leaf(record: dict, name: str):
    for part in name.split("."):
        record = record[part]
    return record


@settings(max_examples=examples(200), deadline=None)
@given(data=st.binary(max_size=300), start=st.integers(0, 300), size=st.integers(0, 300))
def test_the_batch_checksum_is_aiokafkas(data, start, size):
    """``_avro.crc32c`` (the CPU's crc32 instruction, or a table) gives what aiokafka's reader checks."""
    from aiokafka.record.util import calc_crc32c

    start = min(start, len(data))
    end = min(start + size, len(data))
    assert _avro.crc32c(data, start, end) == calc_crc32c(data[start:end])
    with pytest.raises(ValueError):
        _avro.crc32c(data, start, len(data) + 1)
