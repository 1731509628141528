"""Schema evolution: every record ever written with a shipped schema stays readable.

The goldens in ``tests/golden/`` (written once by ``tests/golden/make_golden.py``, never
regenerated) are byte-exact records of every shipped schema version; each ``.json`` is what the
CURRENT reader must make of its ``.bin``. Avro ``bytes`` appear in the JSON as
``{"$bytes": "<hex>"}``.
"""

from __future__ import annotations

import io
import json
from importlib import resources
from pathlib import Path

import fastavro
import pytest
from fastavro.schema import to_parsing_canonical_form

from hindbrain.schemas.codec import HEADER_LEN, MAGIC, CodecError, Registry, _load, registry

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SHIPPED = [(t, v.version) for t in registry.record_types for v in registry.versions(t)]
GOLDEN_STEMS = sorted(p.stem for p in GOLDEN.glob("*.bin"))


def _from_json(obj: dict):
    if set(obj) == {"$bytes"}:
        return bytes.fromhex(obj["$bytes"])
    return obj


def _expected(stem: str) -> dict:
    return json.loads((GOLDEN / f"{stem}.json").read_text("utf-8"), object_hook=_from_json)


def _typed(value):
    """Make equality type-exact: plain ``==`` says False == 0 and 1 == 1.0."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


def _golden(stem: str) -> bytes:
    return (GOLDEN / f"{stem}.bin").read_bytes()


def _shipped_schema_files() -> dict[str, dict]:
    folder = resources.files("hindbrain.schemas") / "avro"
    return {e.name: json.loads(e.read_text("utf-8")) for e in folder.iterdir() if e.name.endswith(".avsc")}


# -- the goldens ---------------------------------------------------------------------------


def test_there_are_goldens_to_check():
    assert "perception.v1" in GOLDEN_STEMS and "perception.v2" in GOLDEN_STEMS


@pytest.mark.parametrize("record_type,version", SHIPPED, ids=[f"{t}.v{v}" for t, v in SHIPPED])
def test_every_shipped_version_has_a_golden(record_type, version):
    stem = f"{record_type}.v{version}"
    missing = [p.name for p in (GOLDEN / f"{stem}.bin", GOLDEN / f"{stem}.json") if not p.exists()]
    assert not missing, (
        f"schema {stem} is shipped without golden {missing}: add a sample to tests/golden/make_golden.py "
        "and run it (it only writes missing goldens)"
    )


def test_every_golden_belongs_to_a_shipped_version():
    """Dropping a shipped schema version makes the records written with it unreadable."""
    shipped = {f"{t}.v{v}" for t, v in SHIPPED}
    assert set(GOLDEN_STEMS) <= shipped
    assert {p.stem for p in GOLDEN.glob("*.json")} == set(GOLDEN_STEMS)


@pytest.mark.parametrize("stem", GOLDEN_STEMS)
def test_golden_decodes_to_its_expectation_under_the_current_reader(stem):
    record_type, decoded = registry.decode(_golden(stem))
    assert record_type == stem.split(".")[0]
    assert _typed(decoded) == _typed(_expected(stem))


@pytest.mark.parametrize("stem", GOLDEN_STEMS)
def test_golden_header_names_its_own_schema_version(stem):
    """A shipped .avsc edited in place changes its fingerprint: old records would not resolve."""
    record_type, version = stem.split(".v")
    schema = next(v for v in registry.versions(record_type) if v.version == int(version))
    value = _golden(stem)
    assert value[:2] == MAGIC
    assert value[2:HEADER_LEN] == schema.fingerprint


def test_perception_v1_reads_with_emotion_none():
    _, v1 = registry.decode(_golden("perception.v1"))
    _, v2 = registry.decode(_golden("perception.v2"))
    assert "emotion" in v1 and v1["emotion"] is None
    assert v2["emotion"] == "frustrated"
    assert v1["envelope"]["schema_version"] == 1
    assert registry.current("perception").version == 3


def test_perceptions_before_v3_read_with_origin_none():
    """design.md §issue-19: an event written before ``origin`` existed has its trust read from kind and speaker."""
    older = [registry.decode(_golden(f"perception.v{n}"))[1] for n in (1, 2)]
    assert [record["origin"] for record in older] == [None, None]
    assert registry.decode(_golden("perception.v3"))[1]["origin"] == "tool"


@pytest.mark.parametrize("stem", GOLDEN_STEMS)
def test_an_upgraded_golden_round_trips_through_the_current_writer(stem):
    """Reading old data and writing it back (e.g. a compaction) loses nothing."""
    record_type, decoded = registry.decode(_golden(stem))
    value = registry.encode(record_type, decoded)
    assert value[2:HEADER_LEN] == registry.current(record_type).fingerprint
    assert _typed(registry.decode(value)[1]) == _typed(_expected(stem))


# -- the shipped schema files ----------------------------------------------------------------


def test_every_shipped_avsc_is_loaded_by_the_registry():
    """A misnamed file (``Perception.v3.avsc``, ``perception_v3.avsc``) would be silently ignored."""
    loaded = {f"{t}.v{v}.avsc" for t, v in SHIPPED}
    assert set(_shipped_schema_files()) == loaded


def test_each_record_type_keeps_one_avro_full_name():
    """The Avro full name is the wire identity: one per record type, never shared."""
    names = {t: {v.full_name for v in registry.versions(t)} for t in registry.record_types}
    assert all(len(n) == 1 for n in names.values()), names
    flat = [next(iter(n)) for n in names.values()]
    assert len(set(flat)) == len(flat)
    assert all(name.startswith("hindbrain.") for name in flat)


def test_every_current_schema_embeds_the_same_envelope():
    files = _shipped_schema_files()
    envelopes = {}
    for record_type in registry.record_types:
        current = files[f"{record_type}.v{registry.current(record_type).version}.avsc"]
        field = next(f for f in current["fields"] if f["name"] == "envelope")
        assert current["fields"][0] is field, f"{record_type}: the envelope is the first field"
        envelopes[record_type] = field["type"]
    reference = envelopes["perception"]
    assert reference["type"] == "record"
    assert f"{reference['namespace']}.{reference['name']}" == "hindbrain.Envelope"
    for record_type, envelope in envelopes.items():
        assert envelope == reference, f"{record_type} embeds a different hindbrain.Envelope"


def test_fingerprints_are_crc64_avro_little_endian_as_the_avro_spec_says():
    """Other Avro implementations find our schemas by this fingerprint; check it independently.

    The algorithm is the one printed in the Avro specification ("Schema Fingerprints").
    """
    empty = 0xC15D213AA4D7A795
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (empty & -(fp & 1))
        table.append(fp)

    def crc64_avro(data: bytes) -> int:
        fp = empty
        for byte in data:
            fp = (fp >> 8) ^ table[(fp ^ byte) & 0xFF]
        return fp

    assert crc64_avro(b'"null"') == 7195948357588979594  # the spec's test vector for "null"
    for record_type, version in SHIPPED:
        schema = next(v for v in registry.versions(record_type) if v.version == version)
        canonical = to_parsing_canonical_form(schema.parsed).encode("utf-8")
        assert schema.fingerprint == crc64_avro(canonical).to_bytes(8, "little"), f"{record_type}.v{version}"


# -- what decode refuses ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [b"\xc3\x02", b"\x00\x01", b"\x01\xc3", b"Ob"],  # "Ob": an Avro object container file ("Obj\x01")
)
def test_decode_rejects_a_wrong_magic(header):
    value = header + _golden("perception.v2")[2:]
    with pytest.raises(CodecError, match="C3 01"):
        registry.decode(value)


def test_decode_rejects_an_unknown_fingerprint():
    value = bytearray(_golden("perception.v2"))
    value[5] ^= 0xFF
    with pytest.raises(CodecError, match="unknown writer schema fingerprint"):
        registry.decode(bytes(value))


def test_decode_rejects_a_record_written_with_a_schema_we_do_not_ship():
    schema = _shipped_schema_files()["perception.v2.avsc"]
    schema["fields"].append({"name": "mood", "type": ["null", "string"], "default": None})
    future = Registry([_load(json.dumps(schema), "perception", 3)])
    value = future.encode("perception", {**_expected("perception.v2"), "mood": "calm"})
    assert future.decode(value)[1]["mood"] == "calm"
    with pytest.raises(CodecError, match="unknown writer schema fingerprint"):
        registry.decode(value)


@pytest.mark.parametrize("stem", GOLDEN_STEMS)
def test_decode_rejects_every_truncation(stem):
    value = _golden(stem)
    for length in range(len(value)):
        with pytest.raises(CodecError):
            registry.decode(value[:length])


@pytest.mark.parametrize("trailer", [b"\x00", b"\x02a", _golden("outcome.v1")[HEADER_LEN:]])
def test_decode_rejects_trailing_bytes(trailer):
    with pytest.raises(CodecError, match="trailing bytes"):
        registry.decode(_golden("perception.v2") + trailer)


@pytest.mark.parametrize("value", [None, "C3 01", 42, [0xC3, 0x01]])
def test_decode_rejects_what_is_not_bytes(value):
    with pytest.raises(CodecError):
        registry.decode(value)


def test_decode_accepts_bytearray_and_memoryview():
    value = _golden("perception.v2")
    expected = registry.decode(value)
    assert registry.decode(bytearray(value)) == expected
    assert registry.decode(memoryview(value)) == expected


# -- what encode refuses --------------------------------------------------------------------------


def test_encode_rejects_a_record_that_does_not_match_its_schema():
    record = _expected("outcome.v1")
    with pytest.raises(CodecError, match="success"):
        registry.encode("outcome", {k: v for k, v in record.items() if k != "success"})
    with pytest.raises(CodecError):
        registry.encode("outcome", {k: v for k, v in record.items() if k != "envelope"})
    with pytest.raises(CodecError):
        registry.encode("outcome", {**record, "steps": "5"})
    with pytest.raises(CodecError):
        registry.encode("outcome", {**record, "notes": 5})


def test_encode_rejects_unknown_types_and_versions():
    with pytest.raises(CodecError, match="unknown record type"):
        registry.encode("percepshun", {})
    with pytest.raises(CodecError, match="no schema version 9"):
        registry.encode("perception", _expected("perception.v2"), version=9)


def test_fastavro_reads_our_body_with_the_writer_schema_alone():
    """The body after the header is plain Avro binary: any Avro reader with the schema reads it."""
    value = _golden("cognition.v1")
    schema = registry.current("cognition").parsed
    assert fastavro.schemaless_reader(io.BytesIO(value[HEADER_LEN:]), schema, None) == _expected("cognition.v1")
