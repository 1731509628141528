"""Which graph node already holds a given int8 code (issue 28: exact duplicates in the vector graph).

The static tier maps many distinct texts to the same int8 code (``bench/api.py``'s 1M events are
752 distinct codes), and fleets repeat texts (tool output, heartbeats). An HNSW insert among
thousands of exact duplicates walks them all (distance-0 ties): 1M such vectors never finished
building (docs/speed.md, round eight). ``recall.vectors`` therefore puts each distinct code in
the graph once and hangs the other keys holding it beside that node; this table answers, for a
chunk of codes about to be inserted, which node (if any) holds each one.

A 64-bit hash of each code, in two parts: a sorted array (12 bytes a node, searched for a whole
chunk at once) and a dict of the nodes added since the last merge, merged into the arrays when
it has grown by an eighth (amortised O(1) a node; a Python dict for every node would cost ~100
bytes each at 1M distinct vectors). A hit is only a candidate: the caller compares the codes
(a hash collision or a node that has since left the graph is then a miss), so a stale entry is
harmless and nothing is ever removed.
"""

from __future__ import annotations

import numpy as np

_SEED = 0x6A09E667  # fixed: the same hash in every process (nothing persists it, but tests may compare)
_MERGE_MIN = 4096


class CodeTable:
    def __init__(self, dim: int):
        self._words = -(-dim // 8)  # a code read as this many 64-bit words (zero padded)
        rng = np.random.default_rng(_SEED)
        self._mult = rng.integers(1, 2**63, size=self._words, dtype=np.uint64) | np.uint64(1)
        self._hashes = np.empty(0, dtype=np.uint64)  # sorted
        self._nodes = np.empty(0, dtype=np.int32)  # the node of each hash above
        self._recent: dict[int, int] = {}

    def hashes(self, codes: np.ndarray) -> np.ndarray:
        """A 64-bit hash of each row of ``codes`` (int8): the rows' 64-bit words times fixed odd
        multipliers, summed modulo 2**64, then mixed (so that nearby sums spread)."""
        codes = np.ascontiguousarray(codes, dtype=np.int8)
        pad = self._words * 8 - codes.shape[1]
        if pad:
            codes = np.pad(codes, ((0, 0), (0, pad)))
        words = codes.view(np.uint64).reshape(len(codes), self._words)
        with np.errstate(over="ignore"):
            h = (words * self._mult).sum(axis=1, dtype=np.uint64)
            h ^= h >> np.uint64(29)
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(32)
        return h

    def find(self, hashes: np.ndarray) -> np.ndarray:
        """The node noted for each hash, or -1: candidates, to be confirmed by comparing codes."""
        out = np.full(len(hashes), -1, dtype=np.int64)
        if len(self._hashes):
            at = np.minimum(np.searchsorted(self._hashes, hashes), len(self._hashes) - 1)
            hit = self._hashes[at] == hashes
            out[hit] = self._nodes[at[hit]]
        if self._recent:
            for i, h in enumerate(hashes.tolist()):
                node = self._recent.get(h)
                if node is not None:
                    out[i] = node
        return out

    def put(self, hashes: np.ndarray, nodes: np.ndarray) -> None:
        """Notes ``nodes[i]`` as the node holding the code of ``hashes[i]`` (the newest note wins)."""
        self._recent.update(zip(hashes.tolist(), nodes.tolist(), strict=True))
        if len(self._recent) >= max(_MERGE_MIN, len(self._hashes) // 8):
            self._merge()

    def _merge(self) -> None:
        new_h = np.fromiter(self._recent.keys(), dtype=np.uint64, count=len(self._recent))
        new_n = np.fromiter(self._recent.values(), dtype=np.int32, count=len(self._recent))
        old = ~np.isin(self._hashes, new_h)  # a re-noted hash keeps only its newest node
        h = np.concatenate([self._hashes[old], new_h])
        n = np.concatenate([self._nodes[old], new_n])
        order = np.argsort(h, kind="stable")
        self._hashes, self._nodes = h[order], n[order]
        self._recent = {}

    @property
    def nbytes(self) -> int:
        return self._hashes.nbytes + self._nodes.nbytes + 100 * len(self._recent)
