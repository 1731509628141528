"""Fixed-width rows (vectors) keyed by a dense number, held in chunks that never move.

A tenant's exact vectors used to live in one float32 matrix grown by doubling: at 20k vectors
of 512 dims that is a 32,768-row matrix (64 MiB, 3.3 kB a vector, tracemalloc) and, while it
grows, the old and the new matrix at once. ``RowChunks`` keeps rows in chunks of ``chunk``
rows instead: a new chunk is allocated when a key needs one and nothing stored is ever copied
again, so what is held is the rows plus at most one chunk of slack. Only the first chunk grows
(by doubling, from ``FIRST_ROWS``): a tenant of 80 memories holds 128 rows, not a whole chunk.
Chunks are ``np.zeros``: pages no row touched are not resident.

Pure storage: no locking (the caller's ``VectorIndex`` holds its lock), no scoring.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from hindbrain.recall import sorted_sets

CHUNK_ROWS = 4096  # rows per chunk: 4 MiB of float16 at 512 dims
FIRST_ROWS = 64  # the first chunk's starting size; it doubles up to CHUNK_ROWS


class RowChunks:
    """Rows ``0 .. capacity - 1`` of width ``dim`` and type ``dtype``; unset rows are zero."""

    def __init__(self, dim: int, dtype=np.float16, chunk: int = CHUNK_ROWS):
        self.dim, self.dtype, self.chunk = dim, np.dtype(dtype), chunk
        self._chunks: list[np.ndarray] = []

    @classmethod
    def over(cls, rows: np.ndarray, chunk: int = CHUNK_ROWS) -> RowChunks:
        """Chunks viewing ``rows`` (a loaded or memory-mapped matrix): nothing is copied. Writing
        past its last row copies the last, partial chunk once into a whole one."""
        out = cls(rows.shape[1], rows.dtype, chunk)
        out._chunks = [rows[start : start + chunk] for start in range(0, len(rows), chunk)]
        return out

    @property
    def capacity(self) -> int:
        return sum(len(c) for c in self._chunks)

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for c in self._chunks)

    def ensure(self, n: int) -> None:
        """Rows ``0 .. n - 1`` exist. Only a chunk shorter than ``chunk`` (the first, growing;
        or the tail of ``over``) is ever copied, into a longer one."""
        if n <= self.capacity:
            return
        if self._chunks and len(self._chunks[-1]) < self.chunk:
            last = self._chunks[-1]
            full_before = (len(self._chunks) - 1) * self.chunk
            size = min(self.chunk, max(2 * len(last), n - full_before, FIRST_ROWS))
            grown = np.zeros((size, self.dim), dtype=self.dtype)
            grown[: len(last)] = last
            self._chunks[-1] = grown
        while self.capacity < n:
            size = self.chunk if self._chunks else min(self.chunk, max(FIRST_ROWS, n))
            self._chunks.append(np.zeros((size, self.dim), dtype=self.dtype))

    def put(self, keys: np.ndarray, rows: np.ndarray) -> None:
        """Row ``keys[i]`` := ``rows[i]`` (cast to ``dtype``); grows as needed."""
        if not len(keys):
            return
        self.ensure(int(keys.max()) + 1)
        for c, at in self._by_chunk(keys):
            self._chunks[c][keys[at] - c * self.chunk] = rows[at]

    def take(self, keys: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The rows of ``keys`` (a copy), in order; every key must be below ``capacity``. ``out``: an
        array of ``(len(keys), dim)`` rows of this dtype to write them into (returned)."""
        out = np.empty((len(keys), self.dim), dtype=self.dtype) if out is None else out
        for c, at in self._by_chunk(keys):
            out[at] = self._chunks[c][keys[at] - c * self.chunk]
        return out

    def spans(self, n: int) -> Iterator[tuple[int, np.ndarray]]:
        """``(first key, rows)`` views covering rows ``0 .. n - 1`` in order, no copy."""
        for c, rows in enumerate(self._chunks):
            start = c * self.chunk
            if start >= n:
                return
            yield start, rows[: n - start]

    def tofile(self, out, n: int) -> None:
        """Writes rows ``0 .. n - 1`` to the open binary file ``out`` (one matrix, row-major)."""
        for _, rows in self.spans(n):
            rows.tofile(out)

    def _by_chunk(self, keys: np.ndarray) -> Iterator[tuple[int, np.ndarray]]:
        """``(chunk number, positions in keys)`` for each chunk ``keys`` touch (chunks are
        ``chunk`` rows each except a growing first one, which is then the only one)."""
        which = keys // self.chunk
        if len(self._chunks) == 1 or which.min() == which.max():
            yield int(which[0]), np.arange(len(keys))
            return
        for c in sorted_sets.unique(which).tolist():
            yield c, np.flatnonzero(which == c)
