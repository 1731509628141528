"""The compiled Avro writers (``schemas.avro_encoder``: the generated Python function and the C
program of ``schemas/_avro.c``) against fastavro: for every shipped schema version, any record
(valid, or bent: a field missing, a wrong type, a bool for a number, a tuple for an array, an
integer out of range, a lone surrogate) encodes to fastavro's exact bytes through
``Registry.encode``, or fails with fastavro's own ``CodecError``; the C writer takes exactly the
values the Python one takes."""

from __future__ import annotations

import io

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.schemas import _avro
from hindbrain.schemas.avro_encoder import Unsupported, compile_program, compile_writer, zigzag
from hindbrain.schemas.codec import MAGIC, CodecError, registry

SHIPPED = [v for t in registry.record_types for v in registry.versions(t)]
_INTS = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}
TEXT = st.text(max_size=12) | st.sampled_from(["", "é", "请求超时", "\x00", "a" * 70, "x" * 200])


def values(schema) -> st.SearchStrategy:
    """Valid values of ``schema`` (with the edges of each type), as a caller would build them."""
    if isinstance(schema, list):
        return st.one_of(*(values(b) for b in schema))
    if isinstance(schema, dict) and schema["type"] == "record":
        return st.fixed_dictionaries({f["name"]: values(f["type"]) for f in schema["fields"]})
    if isinstance(schema, dict) and schema["type"] == "array":
        return st.lists(values(schema["items"]), max_size=3)
    if isinstance(schema, dict) and schema["type"] == "map":
        return st.dictionaries(TEXT, values(schema["values"]), max_size=3)
    kind = schema if isinstance(schema, str) else schema["type"]
    if kind in _INTS:
        low, high = _INTS[kind]
        return st.integers(low, high) | st.sampled_from([0, -1, 63, 64, -64, -65, low, high])
    return {"null": st.none(), "boolean": st.booleans(), "string": TEXT, "bytes": st.binary(max_size=8),
            "double": st.floats(allow_nan=False) | st.sampled_from([0.0, -0.0, float("inf")])}[kind]


class Text(str):
    """A ``str`` subclass: fastavro takes it; the compiled writer leaves it to fastavro."""


BENT = [lambda v: None, lambda v: True, lambda v: 2**70, lambda v: 1.5, lambda v: Text("t"), lambda v: ("a",),
        lambda v: "\ud800", lambda v: b"raw", lambda v: {"k": 1}, lambda v: 7]


def fastavro_bytes(version, record: dict) -> bytes | None:
    buf = io.BytesIO()
    try:
        fastavro.schemaless_writer(buf, version.parsed, record)
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError):  # what the codec refuses
        return None
    return MAGIC + version.fingerprint + buf.getvalue()


def encoded(version, record: dict) -> bytes | None:
    try:
        return registry.encode(version.record_type, record, version.version)
    except CodecError:
        return None


def test_every_shipped_schema_compiles():
    assert all(v.writer is not None and v.program is not None for v in SHIPPED)


def native(version, record: dict) -> bytes | None:
    """The C writer's message, or None where it leaves the record to fastavro."""
    return _avro.write(version.program, record, MAGIC + version.fingerprint)


def oracle(version, record: dict) -> bytes | None:
    """The generated Python writer's message, or None where it raises ``Unsupported`` (or the
    string's own encoding error, a lone surrogate)."""
    try:
        return MAGIC + version.fingerprint + version.writer(record)
    except (Unsupported, UnicodeEncodeError):
        return None


@pytest.mark.parametrize("version", SHIPPED, ids=lambda v: f"{v.record_type}.v{v.version}")
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_same_bytes_as_fastavro(version, data):
    record = data.draw(values(version.parsed))
    assert version.writer(record) == fastavro_bytes(version, record)[len(MAGIC) + 8:]
    assert native(version, record) == fastavro_bytes(version, record)
    fields = [f["name"] for f in version.parsed["fields"]]
    field = data.draw(st.sampled_from(fields))
    bent = dict(record)
    if data.draw(st.booleans()):
        del bent[field]  # a default fastavro writes, or its error
    else:
        bent[field] = data.draw(st.sampled_from(BENT))(bent[field])
    assert encoded(version, bent) == fastavro_bytes(version, bent)
    assert native(version, bent) == oracle(version, bent)  # the same values taken, the same bytes


def test_a_value_it_does_not_take_is_left_to_fastavro():
    perception = registry.current("perception")
    with pytest.raises(Unsupported):
        zigzag(2**63, _INTS["long"])
    record = {"envelope": {"record_id": "ev_1", "ts_us": 1, "tenant": "t", "agent": None,
                                   "task": None, "schema_version": 3, "causation_ids": [],
                                   "producer": "p"}, "kind": Text("message"), "text": "hi"}
    for name in ("system", "identity", "action", "expected", "actual", "signal", "success", "polarity", "session",
                 "speaker", "emotion", "origin"):
        record[name] = None
    record.update(entities=[], scope={})
    with pytest.raises(Unsupported):
        perception.writer(record)
    assert native(perception, record) is None
    assert registry.encode("perception", record) == fastavro_bytes(perception, record)


def test_a_long_beyond_64_bits_is_a_codec_error():
    """The C writer leaves it to fastavro, whose int conversion raises ``OverflowError``: a schema
    error to the caller like any value off its schema (hypothesis found it: ``position`` = 2**70)."""
    record = {"envelope": {"record_id": "dl_1", "ts_us": 1, "tenant": "t", "agent": None, "task": None,
                           "schema_version": 1, "causation_ids": [], "producer": "p"},
              "topic": "perceptions", "position": 2**70, "stage": "decode", "reason": "r", "original": b""}
    with pytest.raises(CodecError, match="does not match its schema"):
        registry.encode("dead_letter", record)


def test_an_unsupported_shape_compiles_to_none():
    for compiled in (compile_writer, compile_program):
        assert compiled({"type": "record", "name": "X", "fields": [
            {"name": "a", "type": ["null", "string", "long"]}]}) is None
        assert compiled({"type": "record", "name": "Y", "fields": [
            {"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["A"]}}]}) is None


ADVERSARIAL = ["", "a", "请求超时 timeout E1234 在 IAM", "Ünïcödé ß ﬁ İ", "😀🚀 emoji 4-byte", "\x00nul\x00",
               "x" * 63, "x" * 64, "y" * 8191, "y" * 8192, "混合 mixed 스크립트 скрипт " * 700, "🚀" * 5000]


@pytest.mark.parametrize("text", ADVERSARIAL, ids=lambda t: f"{len(t)}:{t[:8]!r}")
def test_the_c_writer_on_mixed_scripts_empty_and_long_texts(text):
    """Every string field of a perception (text, entities, scope keys and values) with texts of
    mixed scripts, empty, 4-byte characters, at the varint's length edges and long (16k+ bytes)."""
    perception = registry.current("perception")
    record = {"envelope": {"record_id": text or "ev_1", "ts_us": -1, "tenant": text, "agent": text,
                           "task": None, "schema_version": 3, "causation_ids": [text, text], "producer": "p"},
              "kind": "message", "text": text, "system": text, "identity": None, "action": text, "expected": None,
              "actual": text, "entities": [text, "", text], "scope": {text: text, "k": ""}, "signal": None,
              "success": True, "polarity": -0.5, "session": text, "speaker": None, "emotion": text, "origin": None}
    assert native(perception, record) == fastavro_bytes(perception, record) == oracle(perception, record)
    record["text"] = text + "\ud800"  # a lone surrogate: fastavro's own error, through the codec
    assert native(perception, record) is None
    with pytest.raises(CodecError):
        registry.encode("perception", record)


def _perception_record(text: str) -> dict:
    return {"envelope": {"record_id": "ev_1", "ts_us": 1, "tenant": "t", "agent": None, "task": None,
                         "schema_version": 3, "causation_ids": [], "producer": "p"},
            "kind": "message", "text": text, "system": None, "identity": None, "action": None, "expected": None,
            "actual": None, "entities": [], "scope": {}, "signal": None, "success": None, "polarity": None,
            "session": None, "speaker": None, "emotion": None, "origin": None}


def test_the_kept_message_buffer_past_its_limit_then_small_again():
    """The C writer keeps its message buffer between writes (round seventeen), given back past 1 MB: a small
    record after a 2 MB one, and a large one after that, are each fastavro's bytes, nothing of the last left."""
    perception = registry.current("perception")
    for text in ("short", "长" * 700_000, "tiny", "x" * 3_000_000, ""):
        record = _perception_record(text)
        assert native(perception, record) == fastavro_bytes(perception, record)


class _WritingKey(str):
    """A field name whose comparison writes another record through the C writer: a write inside a write, which
    must not take the outer one's kept buffer (it would empty it mid-record)."""

    inner: list = []
    __hash__ = str.__hash__

    def __eq__(self, other):
        version = registry.current("perception")
        record = _perception_record("inner " * 50)
        _WritingKey.inner.append(native(version, record) == fastavro_bytes(version, record))
        return str.__eq__(self, other)


def test_a_write_inside_a_write_has_its_own_buffer():
    perception = registry.current("perception")
    record = _perception_record("outer text " * 20)
    record[_WritingKey("text")] = record.pop("text")  # the look-up of "text" compares with this key
    _WritingKey.inner.clear()
    written = native(perception, record)
    assert _WritingKey.inner and all(_WritingKey.inner)  # the inner writes ran, each fastavro's bytes
    assert written == fastavro_bytes(perception, _perception_record("outer text " * 20))


def test_a_programs_field_names_are_interned():
    """The records' keys are interned literals (and ``perception_records``' interned keys): the program's names
    interned too make each field's look-up an identity hit, no comparison of characters (round seventeen)."""
    import sys

    def names(program):
        if program[0] == 7:  # a record: its names, then its fields' programs
            yield from program[1]
            for inner in program[2]:
                yield from names(inner)
        elif program[0] in (8, 9):
            yield from names(program[1])

    for version in SHIPPED:
        if version.program is not None:
            assert all(sys.intern(name) is name for name in names(version.program))
