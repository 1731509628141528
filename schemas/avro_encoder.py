"""A record writer compiled from one Avro schema, byte-identical to ``fastavro.schemaless_writer``
on the values it accepts (issue 28: the ingest path's Avro encode).

fastavro's writer interprets the parsed schema for every record, and resolves each union by
calling a validator per branch: ~12 µs a perception record (19 fields, 12 of them
``["null", "string"]`` unions), the same order as the recall index's whole fold of that event.
``compile_writer`` turns a schema into one generated Python function, once: the field order,
each union's branch index and the wire form of each type are fixed in its code, so a record
costs a dict lookup, a type test and a ``bytearray.extend`` per field. ``compile_program`` turns
it into a program of tuples that ``schemas/_avro.c`` runs in one C call a record (~1 µs where
the generated function took ~6: issue 28, round nine); the codec encodes with that, and the
generated function stays as its oracle (tests/schemas/test_avro_encoder.py holds the two and
fastavro to the same bytes).

It covers the shapes the shipped schemas use: records, arrays, maps, ``null``, ``boolean``,
``int``, ``long``, ``double``, ``string``, ``bytes``, and unions of ``null`` with one of those
primitives. A schema using anything else compiles to None (the caller keeps fastavro). A value
the fast path does not take exactly as fastavro would (a missing field that has a default, a
subclass of ``str``, a ``bool`` given for a number, a tuple for an array, an out-of-range
integer ...) raises ``Unsupported``, and the caller encodes that record with fastavro: so every
record gets fastavro's bytes, or fastavro's own error, and the fast path only skips its work.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from struct import Struct

_DOUBLE = Struct("<d").pack
_SMALL = [bytes([n]) for n in range(0x80)]
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)
_PRIMITIVES = ("null", "boolean", "int", "long", "double", "string", "bytes")


class Unsupported(Exception):
    """A value the compiled writer leaves to fastavro (see the module)."""


def varint(n: int) -> bytes:
    """The base-128 varint of a non-negative (already zig-zagged) integer."""
    if n < 0x80:
        return _SMALL[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def zigzag(n: int, bounds: tuple[int, int]) -> bytes:
    """Avro's ``int``/``long``: zig-zag, then varint; ``Unsupported`` outside ``bounds``."""
    if not bounds[0] <= n <= bounds[1]:
        raise Unsupported
    return varint((n << 1) ^ (n >> 63))


def _fail():
    raise Unsupported


_ENV = {"SMALL": _SMALL, "varint": varint, "zigzag": zigzag, "DOUBLE": _DOUBLE, "INT": _INT_RANGE, "LONG": _LONG_RANGE,
        "fail": _fail, "str": str, "int": int, "bool": bool, "float": float, "bytes": bytes, "list": list,
        "dict": dict, "type": type, "len": len, "TRUE": b"\x01", "FALSE": b"\x00", "ZERO": b"\x00"}


class _Source:
    """The generated function's lines, with fresh local names."""

    def __init__(self):
        self.lines: list[str] = []
        self.count = 0

    def name(self, stem: str) -> str:
        self.count += 1
        return f"{stem}{self.count}"

    def emit(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)


def compile_writer(schema: dict) -> Callable[[dict], bytes] | None:
    """``record → body bytes`` for a parsed record ``schema`` (fastavro's ``parse_schema``
    form), or None when the schema uses a shape this writer does not cover."""
    src = _Source()
    src.emit(1, "out = bytearray()")
    src.emit(1, "w = out.extend")
    if not _record(src, schema, "record", 1):
        return None
    src.emit(1, "return bytes(out)")
    code = "def write(record):\n" + "\n".join(src.lines) + "\n"
    namespace = dict(_ENV)
    exec(compile(code, f"<avro writer {schema.get('name', '?')}>", "exec"), namespace)  # noqa: S102 - our own code
    write = namespace["write"]
    write.source = code  # for a reader of a traceback
    return write


# ``compile_program``'s opcodes, as schemas/_avro.c reads them
OPCODES = {name: n for n, name in enumerate(
    ("null", "boolean", "int", "long", "double", "string", "bytes", "record", "array", "map", "union"))}


def compile_program(schema) -> tuple | None:
    """``schema`` as the program ``schemas._avro.write`` runs: nested tuples ``(opcode, ...)`` (a
    record: its field names and their programs; an array or a map: its items' program; a union: the
    null branch's byte, the other branch's byte and its program). None for the shapes ``compile_writer``
    does not cover either: both take the same values, the C writer in one call a record (issue 28)."""
    if isinstance(schema, str):
        return (OPCODES[schema],) if schema in _PRIMITIVES else None
    if isinstance(schema, list):
        others = [b for b in schema if b != "null"]
        if len(schema) != 2 or len(others) != 1 or others[0] not in _PRIMITIVES[1:]:
            return None
        return (OPCODES["union"], schema.index("null") << 1, schema.index(others[0]) << 1, (OPCODES[others[0]],))
    kind = schema.get("type")
    if schema.get("logicalType") is not None:
        return None
    if kind == "record":
        programs = tuple(compile_program(f["type"]) for f in schema["fields"])
        if None in programs:
            return None
        # Interned, as the records' literal keys are: the C writer's look-up of each field then meets the same
        # str object and skips comparing its characters (the schema's JSON gave equal, not identical, strings).
        return (OPCODES["record"], tuple(sys.intern(f["name"]) for f in schema["fields"]), programs)
    if kind in ("array", "map"):
        items = compile_program(schema["items" if kind == "array" else "values"])
        return None if items is None else (OPCODES[kind], items)
    return compile_program(kind) if kind in _PRIMITIVES else None


def _record(src: _Source, schema: dict, value: str, depth: int) -> bool:
    src.emit(depth, f"if type({value}) is not dict: fail()")
    for field in schema["fields"]:
        item = src.name("v")
        # a missing field: fastavro would write its default; that is left to it
        src.emit(depth, f"{item} = {value}[{field['name']!r}] if {field['name']!r} in {value} else fail()")
        if not _value(src, field["type"], item, depth):
            return False
    return True


def _value(src: _Source, schema, value: str, depth: int) -> bool:
    if isinstance(schema, str):
        return _primitive(src, schema, value, depth)
    if isinstance(schema, list):
        return _union(src, schema, value, depth)
    kind = schema.get("type")
    if schema.get("logicalType") is not None:
        return False  # fastavro converts logical types (dates, decimals): not covered
    if kind == "record":
        return _record(src, schema, value, depth)
    if kind in ("array", "map"):
        return _block(src, schema, value, depth)
    if kind in _PRIMITIVES:
        return _primitive(src, kind, value, depth)
    return False


def _block(src: _Source, schema: dict, value: str, depth: int) -> bool:
    """An array or a map: one block of all items (as fastavro writes them), then the end mark."""
    is_map = schema["type"] == "map"
    src.emit(depth, f"if type({value}) is not {'dict' if is_map else 'list'}: fail()")
    src.emit(depth, f"if {value}:")
    src.emit(depth + 1, f"w(varint(len({value}) << 1))")
    item = src.name("i")
    if is_map:
        key = src.name("k")
        src.emit(depth + 1, f"for {key}, {item} in {value}.items():")
        if not _primitive(src, "string", key, depth + 2):
            return False
        return _value(src, schema["values"], item, depth + 2) and _end(src, depth)
    src.emit(depth + 1, f"for {item} in {value}:")
    return _value(src, schema["items"], item, depth + 2) and _end(src, depth)


def _end(src: _Source, depth: int) -> bool:
    src.emit(depth, "w(ZERO)")
    return True


def _union(src: _Source, branches: list, value: str, depth: int) -> bool:
    """``null`` and one primitive: the branch index, then the value. fastavro takes the first
    branch whose validator accepts the value; these exact types are accepted by one branch only."""
    others = [b for b in branches if b != "null"]
    if len(branches) != 2 or len(others) != 1 or others[0] not in _PRIMITIVES[1:]:
        return False
    null_at, other_at = branches.index("null"), branches.index(others[0])
    src.emit(depth, f"if {value} is None:")
    src.emit(depth + 1, f"w({_SMALL[null_at << 1]!r})")
    src.emit(depth, "else:")
    src.emit(depth + 1, f"w({_SMALL[other_at << 1]!r})")
    return _primitive(src, others[0], value, depth + 1)


def _length(src: _Source, value: str, depth: int) -> None:
    """A string's or bytes' length as Avro's ``long``: one byte below 64, looked up (no call)."""
    size = src.name("n")
    src.emit(depth, f"{size} = len({value})")
    src.emit(depth, f"w(SMALL[{size} << 1] if {size} < 64 else varint({size} << 1))")


def _primitive(src: _Source, kind: str, value: str, depth: int) -> bool:
    emit = src.emit
    if kind == "null":
        emit(depth, f"if {value} is not None: fail()")
    elif kind == "boolean":
        emit(depth, f"w(TRUE if {value} is True else FALSE if {value} is False else fail())")
    elif kind in ("int", "long"):
        emit(depth, f"if type({value}) is not int: fail()")
        emit(depth, f"w(zigzag({value}, {'INT' if kind == 'int' else 'LONG'}))")
    elif kind == "double":
        emit(depth, f"if type({value}) is not float: fail()")
        emit(depth, f"w(DOUBLE({value}))")
    elif kind == "string":
        raw = src.name("b")
        emit(depth, f"if type({value}) is not str: fail()")
        emit(depth, f"{raw} = {value}.encode()")
        _length(src, raw, depth)
        emit(depth, f"w({raw})")
    elif kind == "bytes":
        emit(depth, f"if type({value}) is not bytes: fail()")
        _length(src, value, depth)
        emit(depth, f"w({value})")
    else:
        return False
    return True
