"""Which nodes of a saved usearch HNSW graph no search can reach.

An HNSW search enters at one node and only ever follows links, so a node that no chain of links
from the entry point leads to is never returned, however wide the search. Inserting with several
threads leaves a few such nodes (measured: 2-14 in 30k clustered vectors with two threads), and
near-duplicate vectors can leave some with one thread too. ``VectorIndex.save`` runs this over
the graph file it has just written and keeps the lost keys on its exact-scan list, so a recall
never misses them; the owner also puts them back on its build queue.

The check reads the file usearch wrote (``Index.save``) memory-mapped, without loading it: the
dense index's vectors (``u32`` rows, ``u32`` bytes a row, the rows), its 64-byte head (magic
``usearch``), then the graph: a header of five ``u64`` (nodes, connectivity, base
connectivity, top level, entry slot), an ``i16`` level per node, and each node as its ``u64``
key, ``i16`` level, then per level from 0 up a ``u32`` count and that level's ``u32`` slots
(``connectivity_base`` of them at level 0, ``connectivity`` above). The layout is checked as it
is read (sizes, the magic, every slot inside the graph), so a usearch release that changes it
fails loudly instead of answering wrongly. The walk is breadth-first over the links of every
level, one frontier at a time in numpy (~1-2 s for 1M nodes).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

FREE_KEY = np.uint64(2**64 - 1)  # usearch's key of a removed node: it need not be reachable
_DENSE_HEAD = 64
_MAGIC = b"usearch"
_NODE_HEAD = 10  # u64 key + i16 level
_GATHER = 8192  # frontier nodes gathered at a time (bounds the index arrays: ~17 MB)


class GraphLayoutError(ValueError):
    """The file is not laid out as this module reads usearch's dense index format."""


def _u32(m: np.ndarray, at: np.ndarray, words: int) -> np.ndarray:
    """``words`` little-endian u32 starting at each byte offset in ``at``: an ``(len(at), words)`` array."""
    idx = at[:, None] + np.arange(4 * words, dtype=np.int64)[None, :]
    return np.ascontiguousarray(m[idx]).view("<u4").reshape(len(at), words)


class GraphFile:
    """The link structure of a usearch dense index file, memory-mapped (nothing is loaded)."""

    def __init__(self, path: Path):
        m = np.memmap(path, dtype=np.uint8, mode="r")
        if len(m) < 8:
            raise GraphLayoutError(f"{path}: {len(m)} bytes, too short for a usearch index")
        rows, cols = (int(v) for v in np.frombuffer(m[:8].tobytes(), dtype="<u4"))
        self.vectors_at, self.vector_bytes = 8, cols  # where row (slot) i's vector starts: vectors_at + i * cols
        off = 8 + rows * cols
        if bytes(m[off : off + len(_MAGIC)]) != _MAGIC:
            raise GraphLayoutError(f"{path}: no usearch head after {rows} x {cols} vector bytes")
        off += _DENSE_HEAD
        head = np.frombuffer(m[off : off + 40].tobytes(), dtype="<u8")
        self.size, self.connectivity, self.connectivity_base, self.max_level, self.entry = (int(v) for v in head)
        off += 40
        if self.size != rows or not (0 < self.connectivity <= self.connectivity_base):
            raise GraphLayoutError(f"{path}: graph header {head.tolist()} does not match {rows} vectors")
        self.levels = np.frombuffer(m[off : off + 2 * self.size].tobytes(), dtype="<i2").astype(np.int64)
        off += 2 * self.size
        outside = self.size and (self.levels.min() < 0 or self.levels.max() > self.max_level)
        if len(self.levels) != self.size or outside:
            raise GraphLayoutError(f"{path}: node levels outside 0..{self.max_level}")
        self._base_words = 1 + self.connectivity_base
        self._upper_words = 1 + self.connectivity
        sizes = _NODE_HEAD + 4 * self._base_words + self.levels * 4 * self._upper_words
        # One start a node: the leading 0 and every prefix sum but the total (none for an empty graph).
        self.starts = off + np.concatenate([[0], np.cumsum(sizes)])[: self.size].astype(np.int64)
        if off + int(sizes.sum()) != len(m):
            raise GraphLayoutError(f"{path}: nodes end at {off + int(sizes.sum())}, the file at {len(m)}")
        if self.size and not 0 <= self.entry < self.size:
            raise GraphLayoutError(f"{path}: entry slot {self.entry} outside {self.size} nodes")
        self._m = m

    def keys(self) -> np.ndarray:
        """Each slot's key (``FREE_KEY`` for a removed node)."""
        idx = self.starts[:, None] + np.arange(8, dtype=np.int64)[None, :]
        return np.ascontiguousarray(self._m[idx]).view("<u8").reshape(-1)

    def links(self, slots: np.ndarray) -> np.ndarray:
        """Every slot that ``slots`` link to, at any level (repeats included)."""
        out = []
        for start in range(0, len(slots), _GATHER):
            part = slots[start : start + _GATHER]
            out.append(self._level_links(self.starts[part] + _NODE_HEAD, self._base_words))
            up = part[self.levels[part] > 0]
            base = self.starts[up] + _NODE_HEAD + 4 * self._base_words
            for level in range(1, int(self.levels[up].max(initial=0)) + 1):
                here = self.levels[up] >= level
                out.append(self._level_links(base[here] + (level - 1) * 4 * self._upper_words, self._upper_words))
        found = np.concatenate(out) if out else np.empty(0, dtype=np.int64)
        if len(found) and found.max() >= self.size:
            raise GraphLayoutError(f"a link to slot {int(found.max())} of {self.size}")
        return found

    def _level_links(self, at: np.ndarray, words: int) -> np.ndarray:
        table = _u32(self._m, at, words)
        counts = table[:, 0].astype(np.int64)
        if len(counts) and counts.max() >= words:
            raise GraphLayoutError(f"a neighbour count of {int(counts.max())} over {words - 1} slots")
        return table[:, 1:][np.arange(words - 1)[None, :] < counts[:, None]].astype(np.int64)

    def reached(self) -> np.ndarray:
        """A bool per slot: whether a chain of links from the entry point reaches it."""
        seen = np.zeros(self.size, dtype=bool)
        if not self.size:
            return seen
        frontier = np.array([self.entry], dtype=np.int64)
        seen[frontier] = True
        fresh = np.zeros(self.size, dtype=bool)
        while len(frontier):
            fresh[:] = False
            fresh[self.links(frontier)] = True  # a mask, not np.unique: no sort of the links
            fresh &= ~seen
            seen |= fresh
            frontier = np.flatnonzero(fresh)
        return seen


def unreachable_keys(path: Path) -> np.ndarray:
    """The keys (sorted, int64) of the live nodes of the usearch index saved at ``path`` that no
    search can reach from its entry point."""
    graph = GraphFile(Path(path))
    keys = graph.keys()
    lost = keys[~graph.reached() & (keys != FREE_KEY)]
    return np.sort(lost.astype(np.int64))
