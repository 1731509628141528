"""The checks of a Kafka replay's records in C (``_avro.check_records``, run by
``kafka_batches.frame`` for every batch before chDB parses it): a record is taken exactly when it
is in its place (attributes 0, offset delta = its index, no headers, its length what its fields
take), has a UTF-8 key and a value the C reader reads whole (the current perception's header and
body), every string valid as Python's strict decoder has it. Taking a record the per-record path
would refuse would write a wrong row; refusing a good one only costs the per-record path."""

from __future__ import annotations

from pathlib import Path

import pytest
from by_path import module_at
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.schemas import _avro
from hindbrain.schemas.codec import HEADER_LEN, registry
from hindbrain.streams.columnar import PERCEPTIONS, _long
from hindbrain.streams.kafka_batches import PROGRAM, kafka_record

HEADER = PERCEPTIONS.header


def _decoder_tests():
    return module_at(Path(__file__).parents[1] / "schemas" / "test_avro_decoder.py", "avro_decoder_tests")


_DEC = _decoder_tests()
CURRENT = registry.current("perception")


def check(records: bytes, count: int = 1) -> bool:
    return _avro.check_records(PROGRAM, HEADER, records, 0, len(records), count)


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


@settings(max_examples=200, deadline=None)
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
    with pytest.raises(ValueError):
        _avro.check_records(PROGRAM, HEADER, b"abc", 0, 4, 1)
    with pytest.raises(ValueError):
        _avro.check_records(PROGRAM, HEADER, b"abc", 2, 1, 1)
    record = kafka_record(0, b"k", HEADER + b"\x00")
    with pytest.raises(ValueError):
        _avro.check_records((99,), HEADER, record, 0, len(record), 1)
    assert _avro.check_records(PROGRAM, HEADER, b"", 0, 0, 0)  # no records: nothing wrong


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), start=st.integers(0, 300), size=st.integers(0, 300))
def test_the_batch_checksum_is_aiokafkas(data, start, size):
    """``_avro.crc32c`` (the CPU's crc32 instruction, or a table) gives what aiokafka's reader checks."""
    from aiokafka.record.util import calc_crc32c

    start = min(start, len(data))
    end = min(start + size, len(data))
    assert _avro.crc32c(data, start, end) == calc_crc32c(data[start:end])
    with pytest.raises(ValueError):
        _avro.crc32c(data, start, len(data) + 1)
