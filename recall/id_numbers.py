"""A tenant's document ids → document numbers, in ~20 bytes an id instead of ~130.

The recall index looks a document up by its id (``TenantIndex.by_id``: a redelivered event, a
fragment's evidence, an outcome's units). A dict of the id strings held ~130 bytes an event at
100k (the 35-character string, the number, the dict's slot: design.md §issue-28, point 3), for
ids that are nearly all a short prefix and 32 lowercase hex digits (``ev_…``, ``fr_…``: 128 bits).

So such an id is held as its 128 bits in two sorted ``uint64`` columns (per prefix) beside an
``int32`` column of numbers: 20 bytes. Lookups stay exact: the hex digits *are* the 128 bits
(lowercase only: ``ev_AB…`` is another id, kept as a string), and any id of another form is
kept in a plain dict. New ids go to a small dict first and are merged into the sorted columns
when it reaches 1/8 of them (the new ones sorted and inserted: O(n) bytes moved a merge,
amortised over the ids it took in).

Ids are added, never removed, like the documents (setting a known id again renumbers it, as a
dict would). Not locked: the index's fold is
its only writer, and a reader racing a merge finds the id in the dict or in the new columns
(the columns are swapped in one assignment each, after the merged arrays are complete; the dict
is cleared last).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import numpy as np

_HEX_ID = re.compile(r"([^\W\d_]{1,8}_)([0-9a-f]{32})", re.ASCII)  # "ev_" + 128 bits in lowercase hex
_match = _HEX_ID.fullmatch
_LOW = (1 << 64) - 1
_MERGE_MIN = 1024  # ids held in the dict before the first merge
_MERGE_SHARE = 8  # ... and then 1/8 of the merged ones
_BITS_PER_ID = 16  # the negative filter's size (``_Sorted.bits``)
_BITS_MIN = 1 << 16


class _Sorted:
    """One prefix's 128-bit ids: sorted (high, low) columns with their numbers, and the recent
    ids in a dict until the next merge."""

    __slots__ = ("high", "low", "numbers", "recent", "filter", "merge_at", "chunks", "loose")

    def __init__(self):
        self.high = np.empty(0, dtype=np.uint64)
        self.low = np.empty(0, dtype=np.uint64)
        self.numbers = np.empty(0, dtype=np.int32)
        self.recent: dict[int, int] = {}
        # The recent ids ``put_many`` added, as its batches' (high, low, numbers) arrays in the order added: the
        # merge takes its columns from them instead of from the dict's 128-bit ints (split again with a Python
        # shift and mask an id: ~0.3 µs an id of ingest, issue 28). ``loose``: recent ids added otherwise
        # (``put``, ``numbered``, without their bit); with any, or an id put twice, the merge reads the dict.
        self.chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.loose = 0
        self.merge_at = _MERGE_MIN  # the recent dict's size that makes the next merge
        # A bit per (low bits of an) id, ~16 bits an id: an id never added is answered from here
        # nearly always (~6 % false positives), without the columns' search (~1 µs in numpy):
        # what ingest asks of every new event. A bytearray, whose item is read in ~30 ns.
        # (bits, mask) in one attribute: a reader racing a rebuild takes both from the same one
        self.filter = (bytearray(_BITS_MIN // 8), _BITS_MIN - 1)

    def find(self, value: int) -> int:
        """The row of ``value`` in the sorted columns, or -1."""
        high, low = self.high, self.low
        i = int(high.searchsorted(np.uint64(value >> 64)))
        low_value = np.uint64(value & _LOW)
        while i < len(high) and int(high[i]) == value >> 64:  # random bits: a run of one, nearly always
            if low[i] == low_value:
                return i
            i += 1
        return -1

    def put(self, value: int, no: int) -> None:
        bits, mask = self.filter
        at = value & mask
        if bits[at >> 3] >> (at & 7) & 1 and value not in self.recent:  # perhaps held: search (a new id: never)
            row = self.find(value)
            if row >= 0:  # renumbered, as a dict would be
                self.numbers[row] = no
                return
        self.recent[value] = no
        self.loose += 1
        bits[at >> 3] |= 1 << (at & 7)
        if len(self.recent) >= self.merge_at:
            self.merge()

    def may_hold(self, low: np.ndarray) -> np.ndarray:
        """Per id of the low halves ``low`` (uint64): whether the negative filter's bit is set (the id may be
        held; False: it is not)."""
        bits, mask = self.filter
        at = low & np.uint64(mask)
        byte = np.frombuffer(bits, dtype=np.uint8)[(at >> np.uint64(3)).astype(np.intp)]
        return (byte >> (at & np.uint64(7)).astype(np.uint8)) & 1 == 1

    def put_many(self, high: np.ndarray, low: np.ndarray, first: int) -> None:
        """``put`` of each id (halves ``high``, ``low``) numbered ``first``, ``first + 1`` …: the ids the filter
        may hold one by one (renumbered if held, as ``put``), the others straight into the recent dict, their
        bits set, and one merge check after the batch (a merge changes no answer, only where ids are held)."""
        maybe = self.may_hold(low)
        values = [h << 64 | lo for h, lo in zip(high.tolist(), low.tolist(), strict=True)]
        recent = self.recent
        kept = np.ones(len(values), dtype=bool)  # the ids that go to the recent dict (not renumbered in place)
        for k in np.flatnonzero(maybe).tolist():  # ~6 % of new ids, and every id already held
            if values[k] not in recent and (row := self.find(values[k])) >= 0:
                self.numbers[row] = first + k
                values[k] = None
                kept[k] = False
        recent.update((value, no) for no, value in enumerate(values, first) if value is not None)
        if kept.any():
            numbers = np.arange(first, first + len(values), dtype=np.int32)
            self.chunks.append((high[kept], low[kept], numbers[kept]))
        bits, mask = self.filter
        at = low & np.uint64(mask)
        view = np.frombuffer(bits, dtype=np.uint8)  # writable: the bytearray itself
        shifts = (at & np.uint64(7)).astype(np.uint8)
        np.bitwise_or.at(view, (at >> np.uint64(3)).astype(np.intp), np.left_shift(np.uint8(1), shifts))
        if len(recent) >= self.merge_at:
            self.merge()

    def merge(self) -> None:
        if not self.recent:
            return
        # Only the recent ids are sorted, then inserted in place (a copy of the columns, no sort of
        # them): a merge costs O(n) bytes moved, not O(n log n). ``find`` scans a run of equal highs,
        # so the columns need only be ordered by the high half.
        new_high, new_low, new_numbers = self._recent_columns()
        order = np.argsort(new_high, kind="stable")
        new_high, new_low, new_numbers = new_high[order], new_low[order], new_numbers[order]
        at = self.high.searchsorted(new_high, side="right")
        high = np.insert(self.high, at, new_high)
        low, numbers = np.insert(self.low, at, new_low), np.insert(self.numbers, at, new_numbers)
        self.high, self.low, self.numbers = high, low, numbers
        self.merge_at = max(_MERGE_MIN, len(high) // _MERGE_SHARE)
        if len(high) * _BITS_PER_ID > 8 * len(self.filter[0]):
            self._rebuild_bits(len(high) * _BITS_PER_ID)
        elif self.loose:  # what ``numbered`` put straight into the dict has no bit yet (put_many set its own)
            bits, mask = self.filter
            for value in self.recent:
                bits[(value & mask) >> 3] |= 1 << (value & mask & 7)
        self.recent, self.chunks, self.loose = {}, [], 0

    def _recent_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The recent dict's (high, low, numbers) in its order: from ``put_many``'s chunks when they hold exactly
        its entries (no id added otherwise, none put twice: then each chunk entry is a dict entry, the same
        number, in the dict's insertion order), else from its 128-bit ints."""
        if self.recent and not self.loose and sum(len(c[0]) for c in self.chunks) == len(self.recent):
            return tuple(np.concatenate(column) for column in zip(*self.chunks, strict=True))
        return self.dict_columns()

    def dict_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The recent dict's (high, low, numbers) read from its ints: ``_recent_columns``' oracle."""
        values = list(self.recent)
        return (np.array([v >> 64 for v in values], dtype=np.uint64),
                np.array([v & _LOW for v in values], dtype=np.uint64),
                np.fromiter(self.recent.values(), dtype=np.int32, count=len(values)))

    def _rebuild_bits(self, at_least: int) -> None:
        """A bit set of at least ``at_least`` bits (a power of two) over the merged ids. Called
        before the recent dict is cleared; the recent ids were merged, so all are covered."""
        size = 1 << (max(at_least, _BITS_MIN) - 1).bit_length()
        where = (self.low & np.uint64(size - 1)).astype(np.int64)
        bits = np.zeros(size // 8, dtype=np.uint8)
        np.bitwise_or.at(bits, where >> 3, (1 << (where & 7)).astype(np.uint8))
        self.filter = (bytearray(bits.tobytes()), size - 1)

    def __len__(self) -> int:
        return len(self.high) + len(self.recent)

    def items(self) -> Iterator[tuple[int, int]]:
        yield from zip((int(h) << 64 | int(lo) for h, lo in zip(self.high, self.low, strict=True)),
                       self.numbers.tolist(), strict=True)
        yield from self.recent.items()

    def nbytes(self) -> int:
        return self.high.nbytes + self.low.nbytes + self.numbers.nbytes


def hex_batch(ids: list[str]) -> tuple[str, np.ndarray, np.ndarray] | None:
    """(prefix, high halves, low halves: uint64) of ``ids`` when every one is exactly a str of the hex form
    (``_HEX_ID``) with the same prefix; else None (the caller takes the ids one by one)."""
    if not ids or set(map(type, ids)) != {str}:
        return None
    hexed = _match(ids[0])
    if hexed is None:
        return None
    prefix = hexed[1]
    width = len(prefix) + 32
    if set(map(len, ids)) != {width}:
        return None
    try:
        raw = "".join(ids).encode("ascii")  # the form is ASCII: any other character is no id of it
    except UnicodeEncodeError:
        return None
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(len(ids), width)  # fixed widths: a row an id
    digits = rows[:, len(prefix):]
    # each row the prefix then 32 lowercase hex digits, checked on the bytes (a regular expression over the
    # joined ids was ~0.2 µs an id of ingest, issue 28)
    if not (rows[:, : len(prefix)] == np.frombuffer(prefix.encode("ascii"), dtype=np.uint8)).all() \
            or not (((digits >= 48) & (digits <= 57)) | ((digits >= 97) & (digits <= 102))).all():  # 0-9, a-f
        return None
    halves = np.frombuffer(bytes.fromhex(digits.tobytes().decode("ascii")), dtype=">u8").reshape(len(ids), 2)
    return prefix, halves[:, 0].astype(np.uint64), halves[:, 1].astype(np.uint64)


class IdNumbers:
    """``id → number`` with a dict's reading interface (``in``, ``get``, ``[]``, ``len``,
    ``items``, ``==`` with another map of the same pairs); ``[id] = number`` adds an id."""

    def __init__(self, pairs: Iterable[tuple[str, int]] = ()):
        self._by_prefix: dict[str, _Sorted] = {}
        self._other: dict[str, int] = {}  # ids of any other form, as given
        self._parsed = ("", None)  # the last id read and its match: ``id in`` then ``[id] =`` parse it once
        for doc_id, no in pairs:
            self[doc_id] = no

    @classmethod
    def numbered(cls, ids: Iterable[str]) -> IdNumbers:
        """The ids numbered 0, 1, … in order (a snapshot's id column)."""
        out = cls()
        for no, doc_id in enumerate(ids):
            hexed = _match(doc_id)
            if hexed is None:
                out._other[doc_id] = no
            else:  # straight into the dict, one merge at the end (a repeated id: the last wins, as in a dict)
                part = out._by_prefix.get(hexed[1]) or out._by_prefix.setdefault(hexed[1], _Sorted())
                part.recent[int(hexed[2], 16)] = no
                part.loose += 1
        for part in out._by_prefix.values():
            part.merge()
        return out

    def _hexed(self, doc_id):
        last, hexed = self._parsed
        if doc_id is not last:
            hexed = _match(doc_id) if doc_id.__class__ is str else None
            self._parsed = (doc_id, hexed)
        return hexed

    def get(self, doc_id: str, default=None):
        hexed = self._hexed(doc_id)
        return self.get_key(doc_id, None if hexed is None else (hexed[1], int(hexed[2], 16)), default)

    def get_key(self, doc_id: str, key: tuple[str, int] | None, default=None):
        """``get(doc_id, default)``, ``key`` being (prefix, 128 bits) of a hex id, else None."""
        # flat: ingest asks this of every event, most often for an id never added
        if key is None:
            return self._other.get(doc_id, default)
        part = self._by_prefix.get(key[0])
        if part is None:
            return default
        value = key[1]
        bits, mask = part.filter
        at = value & mask
        if not bits[at >> 3] >> (at & 7) & 1:
            return default
        no = part.recent.get(value)
        if no is None:
            row = part.find(value)
            if row < 0:
                return default
            no = int(part.numbers[row])
        return no

    def get_many(self, ids: list[str], parsed: tuple | None = None) -> list[int | None]:
        """``[self.get(i) for i in ids]``. A batch of one prefix's hex ids (what ``perceive_many`` adds) is
        parsed at once (``hex_batch``) and tested against the negative filter in numpy; only the ids the
        filter may hold (~6 %) are looked up one by one (issue 28: ~1 µs an event of ``add_many``).
        ``parsed``: ``hex_batch(ids)`` when the caller has it (looked up, then put: parsed once, ~0.26 µs an id)."""
        batch = parsed or hex_batch(ids)
        if batch is None:
            return [self.get(doc_id) for doc_id in ids]
        prefix, high, low = batch
        part = self._by_prefix.get(prefix)
        out: list[int | None] = [None] * len(ids)
        if part is None:
            return out
        for k in np.flatnonzero(part.may_hold(low)).tolist():
            out[k] = self.get_key(ids[k], (prefix, int(high[k]) << 64 | int(low[k])))
        return out

    def put_many(self, ids: list[str], first: int, parsed: tuple | None = None) -> None:
        """``self[ids[k]] = first + k`` for each ``k`` in order (a repeated id: the last number, as a dict).
        A batch of one prefix's hex ids goes to its recent dict at once (``_Sorted.put_many``). ``parsed``: as
        in ``get_many``."""
        batch = parsed or hex_batch(ids)
        if batch is None:
            for no, doc_id in enumerate(ids, first):
                self[doc_id] = no
            return
        prefix, high, low = batch
        part = self._by_prefix.get(prefix)
        if part is None:
            part = self._by_prefix[prefix] = _Sorted()
        part.put_many(high, low, first)

    def __contains__(self, doc_id: str) -> bool:
        return self.get(doc_id) is not None

    def __getitem__(self, doc_id: str) -> int:
        no = self.get(doc_id)
        if no is None:
            raise KeyError(doc_id)
        return no

    def __setitem__(self, doc_id: str, no: int) -> None:
        hexed = self._hexed(doc_id)
        self.set_key(doc_id, None if hexed is None else (hexed[1], int(hexed[2], 16)), no)

    def set_key(self, doc_id: str, key: tuple[str, int] | None, no: int) -> None:
        """``self[doc_id] = no``, ``key`` as in ``get_key``."""
        if key is None:
            self._other[doc_id] = no
            return
        part = self._by_prefix.get(key[0])
        if part is None:
            part = self._by_prefix[key[0]] = _Sorted()
        part.put(key[1], no)

    def __len__(self) -> int:
        return len(self._other) + sum(len(p) for p in self._by_prefix.values())

    def items(self) -> Iterator[tuple[str, int]]:
        """Every (id, number), grouped by form (not in numbering order)."""
        for prefix, part in self._by_prefix.items():
            for value, no in part.items():
                yield f"{prefix}{value:032x}", no
        yield from self._other.items()

    def __iter__(self) -> Iterator[str]:
        return (doc_id for doc_id, _ in self.items())

    def __eq__(self, other) -> bool:
        if isinstance(other, IdNumbers | dict):
            return len(self) == len(other) and dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        return f"IdNumbers({len(self):,} ids)"

    def nbytes(self) -> int:
        """Bytes of the sorted columns (the recent dict and the other ids are Python objects)."""
        return sum(p.nbytes() for p in self._by_prefix.values())
