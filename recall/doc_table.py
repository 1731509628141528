"""A tenant's documents by number, packed: one orjson row each, an object only once read.

Every indexed event used to stay a ``Doc`` object for good: the object with its 33 slots, its
id, text, scope, event ids, cue tuples, floats and ints are ~25 Python objects and ~1.2 kB an
event (tracemalloc at 100k events, design.md §issue-28), and each is also something a full
collection walks. Most documents are never read again: a recall reads its candidates. So the
table keeps a document as a packed row (the values of its fields in ``Doc``'s order, the same
row a snapshot writes: ``recall.index_snapshot``) and makes the object when something reads it.

Rules that keep it one table:

* ``table[no]`` makes the object once and keeps it: the index changes documents in place (a
  status, a quarantine, a freshness), so every change must land on the one object a later read
  gets. A read-only pass over many documents (a snapshot's writer) uses ``peek``, which keeps
  nothing new.
* ``append`` holds the new document as an object until ``pack``; the fold packs a batch once
  it is done with it (``TenantIndex.add_many``), so what it changed while adding is in the row.
  A batch of events folded as columns comes packed already (``append_packed``: ``TenantIndex.add_events``).
* A restored table (``over``) reads its first rows from a snapshot's mapped files; documents
  added later are packed into this process's buffer.

Not locked: the index's fold is its only writer. A reader racing ``pack`` gets either the
object or a fresh one made from the row, the same values.
"""

from __future__ import annotations

import dataclasses
from array import array
from collections.abc import Callable, Iterable
from functools import lru_cache
from operator import attrgetter

import numpy as np
import orjson

from hindbrain.recall import _scan
from hindbrain.recall.freezing import freezer


def _tupled(value):
    """JSON gave lists where the object held tuples (nested: a report's scope pairs)."""
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


def decoders(cls) -> list[Callable | None]:
    """Per field of ``cls``, what turns its JSON value back into the field's type (None: as is),
    read from the annotations, so a field added later is covered by its declared type."""
    out = []
    for f in dataclasses.fields(cls):
        kind = str(f.type)
        if kind.startswith("frozenset"):
            out.append(frozenset)
        elif kind.startswith("tuple[str"):  # flat: cheaper than walking it
            out.append(lambda v: None if v is None else tuple(v))
        elif kind.startswith("tuple"):
            out.append(lambda v: None if v is None else _tupled(v))
        else:
            out.append(None)
    return out


def json_default(value):
    """orjson's ``default`` for the rows and a snapshot's state file: sets as sorted lists."""
    if isinstance(value, frozenset | set):
        return sorted(value)
    raise TypeError(f"not JSON: {type(value).__name__}")


@lru_cache(maxsize=8)
def _getter(fields: tuple[str, ...]):
    return attrgetter(*fields)


def packed(obj, fields: tuple[str, ...]) -> bytes:
    """``obj``'s fields as one JSON row (an array of values, in ``fields``' order; read in one C
    call, which the fold pays for every event)."""
    return orjson.dumps(_getter(fields)(obj), default=json_default)


def unpacked(cls, decode_at: list[tuple[int, Callable]], row) -> object:
    """The object of a ``packed`` row; ``decode_at``: (position, decoder) of the fields a decoder
    turns back (``decoders``' non-None ones, 4 of ``Doc``'s 30): the other values are taken as
    JSON gave them, without a call each (a document read 6.1 -> 4.9 µs; a first-time recall reads ~50)."""
    values = orjson.loads(row)
    if len(values) != len(cls.__dataclass_fields__):
        raise ValueError(f"a packed {cls.__name__} row holds {len(values)} values, the class "
                         f"{len(cls.__dataclass_fields__)} fields")
    for at, decode in decode_at:
        values[at] = decode(values[at])
    return untracked(cls(*values))


def untracked(doc):
    """``doc``, out of the cycle collector when its fields hold only plain values (a row's do:
    JSON's, tupled and frozen; ``_scan.untrack_plain``), which cannot form a cycle: a read
    document is kept for good, and tracked, the young and middle collections after its recall
    walked it until the ``DocFreezer`` froze it (~0.18 ms of a recall at 100k). Reference
    counting still frees it. A document whose fields hold anything else stays tracked."""
    _scan.untrack_plain(doc, _field_values(type(doc))(doc))
    return doc


@lru_cache(maxsize=8)
def _field_values(cls) -> Callable[[object], tuple]:
    """The tuple of a dataclass instance's field values (``attrgetter`` of one name gives the value alone)."""
    names = tuple(f.name for f in dataclasses.fields(cls))
    return attrgetter(*names) if len(names) > 1 else lambda obj: (getattr(obj, names[0]),)


class DocTable:
    """Documents ``0 .. len - 1`` of one dataclass ``cls``: a list to the index (by number,
    ``len``, ``append``, iteration, slices). See the module docstring for when objects exist."""

    def __init__(self, cls, rows: np.ndarray | None = None, offsets: np.ndarray | None = None):
        self.cls, self.fields = cls, tuple(f.name for f in dataclasses.fields(cls))
        self._decode_at = [(at, d) for at, d in enumerate(decoders(cls)) if d is not None]
        # a snapshot's rows (plain views: a memmap's slicing costs ~10x an ndarray's, a memoryview's less still)
        self._base = memoryview(np.asarray(rows if rows is not None else np.zeros(0, dtype=np.uint8)))
        self._base_offsets = np.asarray(offsets) if offsets is not None else np.zeros(1, dtype=np.int64)
        self._nbase = len(self._base_offsets) - 1
        self._rows = bytearray()  # rows of documents _nbase, _nbase + 1 ..., packed here
        self._ends = array("q")  # the end of each of those rows in _rows
        self._n = self._nbase
        self._made: dict[int, object] = {}

    @classmethod
    def over(cls_, cls, rows: np.ndarray, offsets: np.ndarray) -> DocTable:
        """A table whose first ``len(offsets) - 1`` documents are a snapshot's rows."""
        return cls_(cls, rows, offsets)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, no):
        if isinstance(no, slice):
            return [self[i] for i in range(*no.indices(len(self)))]
        if no < 0:
            no += self._n
        doc = self._made.get(no)
        if doc is None:
            if not 0 <= no < self._n:
                raise IndexError(no)
            doc = self._made.setdefault(no, self._unpack(no))  # one object per document, whichever thread made it
            freezer.note()  # kept for good: out of the full collections soon (recall.freezing)
        return doc

    def take(self, nos: list[int]) -> list:
        """``[self[no] for no in nos]``, a document already held without a method call: a recall
        reads its ~100 candidates in several stages (~0.35 µs a call of ``__getitem__``)."""
        made = self._made.get
        return [made(no) or self[no] for no in nos]

    def peek(self, no: int):
        """Document ``no`` as held, without keeping a new object (a pass reading every document)."""
        made = self._made.get(no)
        if made is not None:
            return made
        if not 0 <= no < self._n:
            raise IndexError(no)
        return self._unpack(no)

    def row(self, no: int) -> bytes:
        """Document ``no``'s packed row as it stands now: the held object's fields packed anew (the
        index changes documents in place), else the row as stored, copied, no object made. A
        snapshot writes these: unpacking every row into an object only to pack it again was most
        of a checkpoint's time, and a checkpoint holds the writers (docs/speed.md, round ten)."""
        made = self._made.get(no)
        if made is not None:
            return packed(made, self.fields)
        if not 0 <= no < self._n:
            raise IndexError(no)
        if no < self._nbase:
            return bytes(self._base[int(self._base_offsets[no]) : int(self._base_offsets[no + 1])])
        i = no - self._nbase
        return bytes(self._rows[self._ends[i - 1] if i else 0 : self._ends[i]])

    def write_rows(self, out, count: int) -> np.ndarray:
        """Writes the rows of documents ``0 .. count - 1`` to ``out`` (a binary file), each as
        ``row`` gives it, and returns their offsets (``count + 1``). Runs of stored rows go out
        as one slice of their buffer: only the documents held as objects are packed one by one.
        (The index's fold must not pack meanwhile: a snapshot holds its lock.)"""
        if not 0 <= count <= self._n:
            raise IndexError(count)
        in_base = min(count, self._nbase)
        stored = min(count, self._nbase + len(self._ends))  # documents from here on are held, not packed yet
        own_ends = np.frombuffer(self._ends, dtype=np.int64)[: stored - in_base] if stored > in_base else []
        lengths = np.zeros(count, dtype=np.int64)
        lengths[:in_base] = np.diff(self._base_offsets[: in_base + 1])
        lengths[in_base:stored] = np.diff(np.concatenate([[0], own_ends]).astype(np.int64))
        at = 0
        for no in [*sorted(no for no in self._made if no < count), count]:
            if at < min(no, stored):  # stored rows, none held as an object: straight from the buffers
                self._write_stored(out, at, min(no, stored))
            if no < count:
                row = packed(self._made[no], self.fields)
                out.write(row)
                lengths[no] = len(row)
            at = no + 1
        offsets = np.zeros(count + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return offsets

    def _write_stored(self, out, start: int, stop: int) -> None:
        """Stored rows ``start .. stop - 1`` (a run with no object held), one slice per buffer."""
        if start < self._nbase:
            end = min(stop, self._nbase)
            out.write(self._base[int(self._base_offsets[start]) : int(self._base_offsets[end])])
            start = end
        if start < stop:
            i, j = start - self._nbase, stop - self._nbase
            with memoryview(self._rows) as rows:  # released at once: ``pack`` must be able to grow the buffer
                out.write(rows[self._ends[i - 1] if i else 0 : self._ends[j - 1]])

    def as_added(self, no: int):
        """Document ``no`` as its row holds it (as packed when added, or as a snapshot saved it),
        ignoring changes made to its object since; a document not packed yet as held."""
        held = self._made.get(no) if no >= self._nbase + len(self._ends) else None
        return held if held is not None else self._unpack(no)  # packed meanwhile: its row is in

    def _unpack(self, no: int):
        if no < self._nbase:
            row = self._base[int(self._base_offsets[no]) : int(self._base_offsets[no + 1])]
        else:  # a slice is a copy: a memoryview would stop ``pack`` from growing the buffer
            i = no - self._nbase
            row = self._rows[self._ends[i - 1] if i else 0 : self._ends[i]]
        return unpacked(self.cls, self._decode_at, row)

    def append(self, doc) -> None:
        """Adds document ``len(self)``, held as an object until ``pack``."""
        self._made[self._n] = doc
        self._n += 1

    def append_packed(self, rows: Iterable[bytes]) -> None:
        """Adds documents ``len(self)``, ... as rows packed already (``packed`` of each, made by the caller
        from columns as they are read: ``recall.event_documents.EventColumns.rows``), no object held. Every document
        appended before must be packed: the rows are numbered in the buffer's order."""
        if self._n != self._nbase + len(self._ends):
            raise RuntimeError("DocTable.append_packed: documents appended as objects are not packed yet")
        buffer, ends = self._rows, self._ends
        for row in rows:  # one at a time into the buffer: no batch of rows held beside it
            buffer += row
            ends.append(len(buffer))
        self._n = self._nbase + len(ends)

    def pack(self) -> None:
        """Packs the documents appended since the last ``pack`` into rows and drops their
        objects (a later read makes a new one from the row, with the same values)."""
        for no in range(self._nbase + len(self._ends), self._n):
            self._rows += packed(self._made[no], self.fields)
            self._ends.append(len(self._rows))
            del self._made[no]  # after its row is in: a reader always finds one or the other

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def made(self) -> int:
        """Documents held as objects now."""
        return len(self._made)

    def nbytes(self) -> int:
        """Bytes of this process's packed rows (a snapshot's mapped rows are the page cache's)."""
        return len(self._rows) + self._ends.itemsize * len(self._ends)
