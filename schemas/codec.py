"""Avro codec: single-object encoding with a schema fingerprint in every value.

Wire format (Avro "single object encoding", Avro spec 1.8+):

    0xC3 0x01 | 8-byte CRC-64-AVRO fingerprint of the writer schema (little endian) | body

The fingerprint lets a reader find the exact writer schema among all versions shipped in
``schemas/avro/`` and resolve it to the current reader schema of the same record type, so a
reader of version N+1 reads values written with version N (fields added with defaults).
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import fastavro
from fastavro.schema import fingerprint, parse_schema, to_parsing_canonical_form

from hindbrain.schemas import _avro
from hindbrain.schemas.avro_encoder import compile_program, compile_writer

MAGIC = b"\xc3\x01"
HEADER_LEN = len(MAGIC) + 8
_FILE = re.compile(r"^(?P<type>[a-z_]+)\.v(?P<version>\d+)\.avsc$")


class CodecError(ValueError):
    """A value that cannot be decoded (bad header, unknown writer schema, corrupt body)."""


@dataclass(frozen=True)
class SchemaVersion:
    record_type: str  # file stem, e.g. "perception"
    version: int
    full_name: str  # Avro full name, the wire identity
    parsed: Any
    fingerprint: bytes  # 8 bytes, little endian
    # ``schemas.avro_encoder``: the same bytes as fastavro for the values it takes (None: fastavro only)
    writer: Callable[[dict], bytes] | None = None
    # the same writer as a program of ``schemas/_avro.c`` (None: fastavro only); ``writer`` is its oracle
    program: tuple | None = None


class Registry:
    """Every shipped schema version, by record type and by fingerprint."""

    def __init__(self, versions: list[SchemaVersion]):
        self._by_fp = {v.fingerprint: v for v in versions}
        self._current: dict[str, SchemaVersion] = {}
        for v in sorted(versions, key=lambda v: v.version):
            self._current[v.record_type] = v
        if len(self._by_fp) != len(versions):
            raise CodecError("two shipped schema versions share a fingerprint")

    @classmethod
    def from_package(cls) -> Registry:
        folder = resources.files("hindbrain.schemas") / "avro"
        versions = []
        for entry in folder.iterdir():
            match = _FILE.match(entry.name)
            if match:
                versions.append(_load(entry.read_text("utf-8"), match["type"], int(match["version"])))
        return cls(versions)

    @property
    def record_types(self) -> list[str]:
        return sorted(self._current)

    def current(self, record_type: str) -> SchemaVersion:
        try:
            return self._current[record_type]
        except KeyError:
            raise CodecError(f"unknown record type {record_type!r}") from None

    def versions(self, record_type: str) -> list[SchemaVersion]:
        return sorted((v for v in self._by_fp.values() if v.record_type == record_type), key=lambda v: v.version)

    def encode(self, record_type: str, record: dict, version: int | None = None) -> bytes:
        """Encode ``record`` with the current (or the given) schema version of its type."""
        schema = self.current(record_type)
        if version is not None:
            schema = next((v for v in self.versions(record_type) if v.version == version), None)
            if schema is None:
                raise CodecError(f"{record_type} has no schema version {version}")
        if schema.program is not None:  # None back: a value left to fastavro (its bytes, or its error, below)
            message = _avro.write(schema.program, record, MAGIC + schema.fingerprint)
            if message is not None:
                return message
        buf = io.BytesIO()
        buf.write(MAGIC)
        buf.write(schema.fingerprint)
        try:
            fastavro.schemaless_writer(buf, schema.parsed, record)
        # OverflowError: a long beyond 64 bits (fastavro's C conversion), bad input like the rest
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as exc:
            raise CodecError(f"{record_type} does not match its schema: {exc}") from exc
        return buf.getvalue()

    def encode_many(self, record_type: str, records: list[dict]) -> list[bytes]:
        """``encode`` of each of ``records`` (current schema) in one C call: a batch's records were a Python call,
        a look-up and a check each (issue 28, round eighteen). A value the C writer leaves to fastavro is encoded
        by ``encode`` at its position, its bytes or its error as there."""
        schema = self.current(record_type)
        if schema.program is None:
            return [self.encode(record_type, r) for r in records]
        messages, left = _avro.write_many(schema.program, records, MAGIC + schema.fingerprint)
        for n in left:
            messages[n] = self.encode(record_type, records[n])
        return messages

    def decode(self, value: bytes) -> tuple[str, dict]:
        """Return ``(record_type, record)`` read with the current schema of that type.

        Raises CodecError for a value without the header, an unknown fingerprint, or a body
        that does not parse; never returns a partial record.
        """
        if not isinstance(value, (bytes, bytearray, memoryview)) or len(value) < HEADER_LEN:
            raise CodecError("value too short for an Avro single-object header")
        if value[:2] != MAGIC:
            raise CodecError("value does not start with the Avro single-object marker C3 01")
        writer = self._by_fp.get(bytes(value[2:HEADER_LEN]))
        if writer is None:
            raise CodecError(f"unknown writer schema fingerprint {bytes(value[2:HEADER_LEN]).hex()}")
        reader = self._current[writer.record_type]
        if reader is writer and writer.program is not None:
            # schemas/_avro.c: fastavro's record for a well-formed body of the current schema; None for
            # anything else (a corrupt body too), which fastavro below reads or rejects as before
            record = _avro.read(writer.program, value, HEADER_LEN)
            if record is not None:
                return writer.record_type, record
        body = io.BytesIO(value[HEADER_LEN:])
        try:
            record = fastavro.schemaless_reader(
                body, writer.parsed, None if reader is writer else reader.parsed
            )
        except Exception as exc:  # fastavro raises many types on corrupt input
            raise CodecError(f"corrupt {writer.record_type} v{writer.version} body: {exc!r}") from exc
        if body.tell() != len(value) - HEADER_LEN:
            raise CodecError(f"{len(value) - HEADER_LEN - body.tell()} trailing bytes after the record")
        return writer.record_type, record


def _load(text: str, record_type: str, version: int) -> SchemaVersion:
    parsed = parse_schema(json.loads(text))
    canonical = to_parsing_canonical_form(parsed)
    # fastavro's hex digest already lists the fingerprint's bytes in little-endian order.
    fp = bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO"))
    return SchemaVersion(record_type, version, parsed["name"], parsed, fp, compile_writer(parsed),
                         compile_program(parsed))


registry = Registry.from_package()
