"""``to_messages`` encodes each run of one record type in one C call (``Registry.encode_many``, ``_avro.write_many``:
issue 28, round eighteen). Its former body, each record through ``registry.encode``, is the oracle: on drawn
sequences of records of the shipped types, valid or bent (a value the C writer leaves to fastavro, one fastavro
refuses), in runs of one type and interleaved, the same messages byte for byte — or the same error (and a
decision no reader takes refused, round thirty-one)."""

from __future__ import annotations

import importlib.util
from itertools import groupby
from operator import itemgetter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindbrain.brain import _perception, perceived
from hindbrain.schemas import _avro
from hindbrain.schemas.codec import MAGIC, CodecError, registry
from hindbrain.streams.log import Message
from hindbrain.streams.processing import decision_id_reason, to_messages
from hindbrain.streams.topics import TOPIC_OF, key_of

# the encoder's own test draws valid and bent records of a schema: its strategies, loaded from its file (the
# test modules are not a package)
_spec = importlib.util.spec_from_file_location("avro_encoder_cases",
                                               Path(__file__).parents[1] / "schemas" / "test_avro_encoder.py")
_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cases)
BENT, values = _cases.BENT, _cases.values


def former_to_messages(records):
    """Each record's ``registry.encode``; a run of decisions that encodes is then refused at its first decision
    every reader would dead-letter (``decision_id_reason``, round thirty-one)."""
    out = []
    for record_type, run in groupby(records, key=itemgetter(0)):
        run = list(run)
        out += [Message(TOPIC_OF[rt], key_of(r), registry.encode(rt, r)) for rt, r in run]
        reasons = [decision_id_reason(r) for _, r in run] if record_type == "decision" else []
        if reason := next(filter(None, reasons), None):
            raise ValueError(f"a decision record's {reason}")
    return out


TYPES = [t for t in registry.record_types if t in TOPIC_OF]


# each type's record strategy and the benders, built once: built in the composite, the schema's strategy
# was made again (and its label and emptiness worked out anew) at every draw
RECORDS = {t: values(registry.current(t).parsed) for t in TYPES}
BEND = st.sampled_from(BENT)


@st.composite
def record_of(draw, record_type: str) -> tuple[str, dict]:
    record = draw(RECORDS[record_type])
    if draw(st.integers(0, 5)) == 0:  # bent: left to fastavro (its bytes), or refused by it (its error)
        name = draw(st.sampled_from(sorted(k for k in record if k != "envelope")))
        record[name] = draw(BEND)(record[name])
    return record_type, record


@st.composite
def runs(draw) -> list[tuple[str, dict]]:
    out = []
    for _ in range(draw(st.integers(0, 4))):  # runs of one type (a batch), several types in a row
        record_type = draw(st.sampled_from(TYPES))
        out += draw(st.lists(record_of(record_type), max_size=5))
    return out


def _outcome(encode, records):
    try:
        return encode(records)
    except ValueError as exc:  # a CodecError, or a decision refused
        return type(exc), str(exc)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_the_messages_are_each_records_registry_encode(records):
    got = _outcome(to_messages, records)
    assert got == _outcome(former_to_messages, records)
    assert all(type(m) is Message for m in got if isinstance(got, list))  # named tuples, read by name downstream


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_write_many_is_write_of_each_record(data):
    record_type = data.draw(st.sampled_from(TYPES))
    version = registry.current(record_type)
    records = [r for _, r in data.draw(st.lists(record_of(record_type), max_size=6))]
    header = MAGIC + version.fingerprint
    single = [_avro.write(version.program, r, header) for r in records]
    messages, left = _avro.write_many(version.program, records, header)
    assert messages == single
    assert left == [n for n, m in enumerate(single) if m is None]


def test_a_record_left_to_fastavro_keeps_its_place_and_a_refused_one_raises():
    records = [_perception(perceived({"tenant": "acme", "agent": "a1", "text": f"plain {n}"})) for n in range(3)]
    bent = dict(records[1], text=type("Text", (str,), {})("kept by fastavro"))  # a str subclass: fastavro's
    messages = registry.encode_many("perception", [records[0], bent, records[2]])
    assert messages == [registry.encode("perception", r) for r in (records[0], bent, records[2])]
    assert _avro.write_many(registry.current("perception").program, [records[0], bent], b"")[1] == [1]
    with pytest.raises(CodecError):
        registry.encode_many("perception", [records[0], dict(records[2], text=b"not a str")])


def test_write_many_takes_a_list_only():
    with pytest.raises(TypeError):
        _avro.write_many(registry.current("perception").program, (), b"")
