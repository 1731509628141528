"""The C reader of ``schemas/_avro.c`` (``_avro.read``, run by ``Registry.decode`` for a body of the
current schema) against fastavro: for every shipped schema version, a generated record's body reads
back to fastavro's exact values (types, a dict's key order); a truncated, flipped or otherwise corrupt
body gives what the codec gave before the C reader (fastavro's record, or ``CodecError``), never a
crash and never another record; adversarial strings (4-byte characters, a lone surrogate's or an
overlong sequence's bytes in the data, long texts) likewise."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import fastavro
import pytest
from by_path import module_at
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.schemas import _avro
from hindbrain.schemas.codec import HEADER_LEN, MAGIC, CodecError, registry


def _encoder_tests():
    """tests/schemas/test_avro_encoder.py's generators (tests are no package: loaded by path)."""
    return module_at(Path(__file__).with_name("test_avro_encoder.py"), "avro_encoder_tests")


_ENC = _encoder_tests()
ADVERSARIAL, SHIPPED, fastavro_bytes, values = _ENC.ADVERSARIAL, _ENC.SHIPPED, _ENC.fastavro_bytes, _ENC.values


def typed(value):
    """``value`` with every type spelled out (a dict as its items in order, a float as its bits), so
    ``==`` tells ``1`` from ``1.0`` and ``True``, and ``{'a', 'b'}`` from ``{'b', 'a'}``."""
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    return (type(value).__name__, value)


def before(value: bytes):
    """What ``Registry.decode`` gave before the C reader: fastavro's ``(type, record)``, or the
    ``CodecError`` class for a body it rejects."""
    writer = next((v for v in SHIPPED if v.fingerprint == value[2:HEADER_LEN]), None)
    reader = registry.current(writer.record_type)
    body = io.BytesIO(value[HEADER_LEN:])
    try:
        record = fastavro.schemaless_reader(body, writer.parsed, None if reader is writer else reader.parsed)
    except Exception:
        return CodecError
    if body.tell() != len(value) - HEADER_LEN:
        return CodecError
    return writer.record_type, typed(record)


def now(value: bytes):
    try:
        record_type, record = registry.decode(value)
    except CodecError:
        return CodecError
    return record_type, typed(record)


@pytest.mark.parametrize("version", SHIPPED, ids=lambda v: f"{v.record_type}.v{v.version}")
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_same_values_as_fastavro(version, data):
    record = data.draw(values(version.parsed))
    message = fastavro_bytes(version, record)
    body = io.BytesIO(message[HEADER_LEN:])
    expected = typed(fastavro.schemaless_reader(body, version.parsed, None))
    assert typed(_avro.read(version.program, message, HEADER_LEN)) == expected
    assert typed(_avro.read(version.program, bytearray(message), HEADER_LEN)) == expected
    assert typed(_avro.read(version.program, memoryview(message), HEADER_LEN)) == expected
    assert now(message) == before(message)  # an older version: resolved by fastavro, as before
    # corrupt: cut anywhere, a byte changed, a byte added
    cut = data.draw(st.integers(HEADER_LEN, len(message) - 1))
    at = data.draw(st.integers(HEADER_LEN, len(message) - 1))
    flipped = message[:at] + bytes([data.draw(st.integers(0, 255))]) + message[at + 1:]
    for corrupt in (message[:cut], flipped, message + b"\x00", message + data.draw(st.binary(max_size=4))):
        assert now(corrupt) == before(corrupt)
        got = _avro.read(version.program, corrupt, HEADER_LEN)
        assert got is None or typed(got) == typed(fastavro.schemaless_reader(
            io.BytesIO(corrupt[HEADER_LEN:]), version.parsed, None))


def perception(text: str) -> dict:
    return {"envelope": {"record_id": text or "ev_1", "ts_us": -1, "tenant": text, "agent": text, "task": None,
                         "schema_version": 3, "causation_ids": [text, text], "producer": "p"},
            "kind": "message", "text": text, "system": text, "identity": None, "action": text, "expected": None,
            "actual": text, "entities": [text, "", text], "scope": {text: text, "k": ""}, "signal": None,
            "success": True, "polarity": -0.5, "session": text, "speaker": None, "emotion": text, "origin": None}


@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda t: f"{len(t)}:{t[:8]!r}")
def test_adversarial_texts_read_back(text):
    message = registry.encode("perception", perception(text))
    assert now(message) == before(message) == ("perception", typed(perception(text)))


def _with_text_bytes(raw: bytes) -> bytes:
    """A perception whose ``text`` is ``raw`` as written (the length prefix fixed up)."""
    marker = "\u2603" * 3  # a text no other field holds
    message = registry.encode("perception", perception("") | {"text": marker})
    encoded = marker.encode()
    i = message.index(encoded)
    assert message[i - 1] == len(encoded) << 1
    return message[:i - 1] + bytes([len(raw) << 1]) + raw + message[i + len(encoded):]


@pytest.mark.parametrize("raw", [b"\xed\xa0\x80", b"a\xed\xb2\x80b", b"\xc0\x80", b"\xff", b"\xf0\x9f\x98",
                                 b"\xf4\x90\x80\x80", "😀".encode()], ids=repr)
def test_bytes_that_are_not_utf8_are_rejected_as_before(raw):
    """A lone surrogate's bytes (CESU), an overlong NUL, a cut 4-byte sequence, beyond U+10FFFF:
    fastavro's strict decode rejects them; the C reader leaves them to it (and reads a real 4-byte one)."""
    message = _with_text_bytes(raw)
    assert now(message) == before(message)
    ok = raw == "😀".encode()
    assert (now(message) is CodecError) is not ok
    assert (_avro.read(registry.current("perception").program, message, HEADER_LEN) is None) is not ok


def test_a_well_formed_current_body_never_reaches_fastavro(monkeypatch):
    message = registry.encode("perception", perception("hello"))
    old = registry.encode("perception", {k: v for k, v in perception("hello").items()
                                         if k not in ("session", "speaker", "emotion", "origin")}
                          | {"envelope": perception("hello")["envelope"] | {"schema_version": 1}}, version=1)
    calls = []
    real = fastavro.schemaless_reader
    monkeypatch.setattr(fastavro, "schemaless_reader", lambda *a: calls.append(a) or real(*a))
    assert registry.decode(message)[1] == perception("hello")
    assert calls == []
    registry.decode(old)  # resolved to the current schema: fastavro's
    assert len(calls) == 1
    with pytest.raises(CodecError, match="corrupt perception"):
        registry.decode(message[:-1])


def test_unions_blocks_and_varints_in_every_form_fastavro_reads():
    """A branch the union does not have, a negative block count (with its size), several blocks, a
    varint in a non-minimal form, a boolean byte other than 0/1, a long beyond 64 bits."""
    version = registry.current("dead_letter")
    record = {"envelope": {"record_id": "dl_1", "ts_us": 1, "tenant": "t", "agent": None, "task": None,
                           "schema_version": 1, "causation_ids": ["a", "b"], "producer": "p"},
              "topic": "perceptions", "position": 5, "stage": "decode", "reason": "r", "original": b"x"}
    message = registry.encode("dead_letter", record)
    head = MAGIC + version.fingerprint
    assert message[HEADER_LEN:].startswith(b"\x08dl_1\x02\x02t\x00\x00\x02\x04\x02a\x02b\x00")
    rest = message[HEADER_LEN + len(b"\x08dl_1\x02\x02t\x00\x00\x02\x04\x02a\x02b\x00"):]
    start = b"\x08dl_1\x02\x02t"
    bodies = {
        "branch 2 of a 2-branch union": start + b"\x04\x00\x02\x04\x02a\x02b\x00" + rest,
        "negative block count": start + b"\x00\x00\x02\x03\x08\x02a\x02b\x00" + rest,
        "two blocks": start + b"\x00\x00\x02\x02\x02a\x02\x02b\x00" + rest,
        "non-minimal varint": b"\x88\x00dl_1\x82\x00\x02t\x00\x00\x02\x04\x02a\x02b\x00" + rest,
        "ts beyond 64 bits": b"\x08dl_1" + b"\xff" * 10 + b"\x7f\x02t\x00\x00\x02\x04\x02a\x02b\x00" + rest,
        "huge block count": start + b"\x00\x00\x02\xfe\xff\xff\xff\x0f\x02a" + rest,
    }
    for name, body in bodies.items():
        assert now(head + body) == before(head + body), name
    assert now(head + bodies["two blocks"]) == now(message) == now(head + bodies["non-minimal varint"])
    assert now(head + bodies["negative block count"]) == now(message)
    assert now(head + bodies["branch 2 of a 2-branch union"]) is CodecError


def test_a_bad_offset_or_program_is_an_error_not_a_crash():
    program = registry.current("perception").program
    with pytest.raises(ValueError):
        _avro.read(program, b"abc", 4)
    with pytest.raises(ValueError):
        _avro.read((99,), b"abc", 0)
    assert _avro.read(program, b"", 0) is None
