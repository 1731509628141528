"""Cosine top-k over one tenant's vectors: exact numpy when small, an int8 usearch HNSW when large.

Keys are a tenant's dense document numbers (0..n-1), so storage is indexed by key: no key map,
and an ``allowed`` mask (also indexed by key) lines up with it directly.

* **Small (≤ ``EXACT_LIMIT`` vectors): exact.** float16 rows in chunks that never move
  (``recall.row_chunks``: 1 kB a 512-d vector, no doubling copies; it was a float32 matrix grown
  by doubling, 3.3 kB a vector at 20k) scanned with usearch's SIMD float16 cosine kernel, one
  chunk at a time (numpy has no fast float16 path: converting 20k rows to float32 took ~200 ms
  here, the kernel ~4 ms, as fast as the float32 einsum it replaces). float16 keeps a cosine
  within ~1e-3 of the float32 one, so rankings are unchanged but for near-ties. Per-user
  candidate sets (MADial's ~80 memories, most tenants) are ranked exactly.
* **Large: usearch HNSW over int8 codes.** Each unit vector is quantised with its own absmax
  scale (``rint(x / max|x| * 127)``). Cosine ignores a per-vector scale, so this uses the whole
  int8 range instead of usearch's fixed ``x * 127`` cast, which wastes most of it on 512-d unit
  vectors (recall@10 0.91 → 0.99 at 100k below). The codes live in fixed blocks that
  never move, and the graph points into them (``copy=False``), so a vector costs its 512 bytes
  once plus the graph's links. No float matrix is kept (see the choices below).
* **The graph lags; search does not.** ``add`` stores codes and puts the keys on a tail, which
  every search scans exactly; the graph then absorbs the tail ``_CHUNK`` vectors per lock hold,
  so a search waits at most one chunk, and a bulk load (a brain reopening from the embedding
  cache) is searchable at once, only slower until the graph catches up.
* **``allowed``:** over a saved graph (a replica's view, a reopened owner's until its graph
  changes) the walk filters as it goes (``recall.graph_walk``, in C: every node routes, only
  allowed ones enter the ``MASKED_EF`` results); otherwise the graph is walked deeper by the
  inverse of the allowed fraction (twice the expected need) and the results filtered. When
  scanning the allowed keys exactly is cheaper than that walk (a fetched candidate costs
  ~``_WALK_COST`` scanned codes), or either walk stops at ``_FETCH_CAP`` with fewer than ``k``,
  the allowed keys are scanned instead: a very selective mask is therefore both fast and exact.
* **Keys are document numbers**, so memory follows the largest key; sparse keys waste rows.

Measured with ``.venv/bin/python bench/vectors.py --sizes 100000,1000000`` (9.5 min): clustered
512-d unit vectors (2,000 gaussian centres, cosine ~0.7 to the centre), 200 held-out queries,
k=10, one query at a time, single-threaded search, on a shared 2-core AMD EPYC (AVX-512).
recall@10 is against exact float32 top-10; B/vec is what the structure reports. The plain
usearch rows build with 2 threads; this index builds with ``HINDBRAIN_GRAPH_THREADS`` (1; see
``build_graph``).

=========  ==================================  =======  =====  =========  ======  ======
n          variant                             build s  B/vec  recall@10  p50 ms  p99 ms
=========  ==================================  =======  =====  =========  ======  ======
100k       numpy f32 brute force (einsum)         0      2048    1.000      9.49   10.53
100k       usearch f16 M32 ea64 ef256            30.2    1856    1.000      2.46    3.33
100k       usearch i8 (its x*127 cast)           18.9    1185    0.907      1.69    1.99
100k       this: i8 absmax M32 ea64 ef256        49.5    1279    0.989      2.35    2.74
100k         same, ef64 / ef128                          0.989 / 0.989   0.58 / 1.22
100k         same, allowed 10% / 1% of keys              0.826* / 0.987  2.24 / 0.31
100k       USE query embedding + this search                              4.60    5.67
1M         numpy f32 brute force (einsum, 20 q)   0      2048    1.000     95.51   99.76
1M         this: i8 absmax M32 ea64 ef256       425.1    1067    0.950      0.71    1.70
1M           same, ef64 / ef128                          0.832 / 0.936   0.44 / 0.59
1M           same, allowed 10% / 1% of keys              0.956 / 0.987   1.21 / 3.70
1M         USE query embedding + this search                              3.37    5.77
=========  ==================================  =======  =====  =========  ======  ======

(*) At 100k with 10% of keys allowed only ~1-6 allowed points share the query's cluster; the
rest of the masked top 10 are unrelated points at cosine ~0.15 within ~0.005 of ranks 11-30, so
that recall counts near-ties. The 1% row is the exact scan (recall = the int8 ceiling).

Choices from these numbers:

* **int8 absmax codes, no float matrix.** Exact int8 search over 1M codes has recall@10
  0.987, so quantisation costs ~1 point; usearch's own i8 cast costs 9. f16 is exact but 45%
  bigger. Re-ranking 256 graph candidates with float32 lifted 1M recall only 0.952 → 0.967
  for +2 KB a vector, so the float matrix is dropped when the graph takes over.
* **connectivity 30** (was 32). With 16, 1M recall plateaued at 0.905-0.909 for expansion_search
  256 to 1,024 (the graph, not the walk, was the limit); 32 reaches 0.95 (0.952 in a separate run
  at expansion_search 256-1,024, 0.961 with a 2-thread build) for ~25% more memory.
  At 100k the two were within a point (0.98-0.99). 30, not 32: usearch hands a node out in
  64-byte units (``NODE_UNIT``), and a level-0 node is ``14 + 8 x connectivity`` bytes, so 32
  (270 B) takes 320 and 30 (254 B) the largest that fits 256: 64 B a node less resident
  (398 → 334 B a node by RSS at 20k; 31 costs what 32 does), for recall measured in docs/speed.md
  ("Resident bytes per event, round thirteen").
* **expansion_add 64.** 32 lost 7 points at 100k (0.91 vs 0.98, connectivity 16).
* **expansion_search 256.** Under 1 ms at 1M and +1-3 points over 128 there; the budget (recall
  p50 ≤ 10 ms, p99 ≤ 20-30 ms, embedding included) leaves room for it.
* **EXACT_LIMIT 20,000.** Brute force costs ~1.7 ms there (einsum) and 10 ms at 100k, which is
  the whole budget; below 20k an HNSW build (~5 s of CPU) is not worth it.
* **Build cost** is the price: ~2-2.4k single-threaded inserts/s here (50 s for 100k, 425 s
  for 1M; 2 threads were ~1.6x faster but left nodes unreachable, which a snapshot's
  ``check_saved`` now finds and keeps scanned: ``HINDBRAIN_GRAPH_THREADS``). Exact duplicates
  were the slow case (1M static-tier vectors of bench/api.py's events are a few hundred distinct
  codes; inserting them ran at ~360 vectors/s of CPU and never finished): the graph now holds
  each distinct code once (``recall.code_table`` finds the node holding a code) and the other
  keys with that code sit in a ring beside the node, walked when a search returns it, so
  duplicates cost a hash and a ring link each (``bench/graph_dupes.py``). A 100k reload from the
  embedding cache is searchable in ~0.8 s through the tail scan (p50 16 ms, p99 46 ms a
  search) while the graph catches up in the background for about a minute.
"""

from __future__ import annotations

import functools
import threading
import time
from pathlib import Path

import numkong
import numpy as np
from usearch.index import Index, MetricKind
from usearch.index import search as usearch_scan

from hindbrain.recall import _scan, sorted_sets
from hindbrain.recall.code_table import CodeTable
from hindbrain.recall.graph_check import unreachable_keys
from hindbrain.recall.graph_walk import GraphWalk
from hindbrain.recall.row_chunks import RowChunks

EXACT_LIMIT = 20_000  # vectors; at or below this every search is exact (float16 rows)
# Rows made codes at a time at the switch to graph mode: a part's float32 widening (2 kB a row) stays in the
# caches and the allocator's reused pages; 8,192 rows (16 MB fresh each) cost ~100 ms of the caller's CPU at the
# switch in a Brain, ~1 µs an event of a 100k import (issue 28, round sixteen), 512 rows ~20 ms.
_SWITCH_ROWS = 512
_WALK_COST = 20  # one candidate fetched by a graph walk costs about as much as scanning 20 codes
CONNECTIVITY = 30  # the largest whose level-0 node fits 4 of usearch's 64-byte units (graph_node_bytes)
NODE_UNIT = 64  # bytes: usearch's node allocator (memory_mapping_allocator_gt<64>) rounds a node up to this
EXPANSION_ADD = 64
EXPANSION_SEARCH = 256
_CHUNK = 16  # vectors inserted into the graph per lock hold (~5 ms here): what a search may wait
_YIELD_S = 0.0002  # pause between graph chunks so waiting searches get the lock
_BLOCK = 1 << 15  # int8 code rows per block (16 MiB at 512-d); blocks never move
_FETCH_CAP = 4096  # deepest over-fetch before a masked search scans instead
# allowed nodes a filtered walk keeps (at least k): at 160 it finds what the over-fetch by 2 found (recall@64
# 0.897 vs 0.893 at 100k under a 34 % mask; 128: 0.878, 192: 0.914; bench/masked_walk.py, docs/speed.md round twelve)
MASKED_EF = 160
# a scan scores a block's whole span of rows in place when its keys fill a quarter of it: scoring
# a row in place costs about a quarter of gathering it first (copy, then score)
_SPAN_SLACK = 4
# per key: no vector / waiting for the graph / a graph node / beside the node holding the same code
_ABSENT, _TAIL, _GRAPHED, _BESIDE = 0, 1, 2, 3

_NO_KEYS = np.empty(0, dtype=np.int64)
_NO_SIMS = np.empty(0, dtype=np.float32)


def quantize(x: np.ndarray, out: np.ndarray | None = None, wide: np.ndarray | None = None) -> np.ndarray:
    """int8 codes of the rows of ``x`` with per-row absmax scaling (a zero row stays zero). The
    loop runs in C (``_scan.quantize``: one pass a row, the same float32 operations, so the same
    codes; issue 28); ``py_quantize`` is its oracle, and what rows holding a non-finite value get.
    float16 rows (exact mode's, at the switch to graph mode) are widened by ``from_half``.
    ``out`` (int8) and ``wide`` (float32, for float16 ``x``): C-contiguous buffers of ``x``'s shape
    to write into, so a caller quantising chunk after chunk reuses one pair (``_to_graph``); the
    codes are returned (a new array where numpy's oracle makes them)."""
    x = from_half(x, wide) if x.dtype == np.float16 else np.ascontiguousarray(x, dtype=np.float32)
    x = x.reshape(-1, x.shape[-1])
    codes = np.empty(x.shape, dtype=np.int8) if out is None else out
    if x.size and _scan.quantize(x, codes, x.shape[1]):
        return codes
    return py_quantize(x)


def to_half(x: np.ndarray) -> np.ndarray:
    """``x.astype(float16)``, bit for bit, in C where the CPU converts halves (``_scan.to_halves``:
    numpy's cast here costs ~2.7 ns a value, ~14 as a fancy-indexed store; exact mode stores 512
    a vector); numpy's where not, or where a value's half would not be finite."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty(x.shape, dtype=np.float16)
    return out if x.size and _scan.to_halves(x, out) else x.astype(np.float16)


def unit_halves(x: np.ndarray) -> np.ndarray:
    """``to_half(_unit_rows(x))`` of float32 rows, bit for bit, one C pass a row (``_scan.unit_halves``:
    numpy's pairwise sum of the squares, its square root and division, then F16C) with no float32
    temporaries; numpy's where the C declines (no F16C, a value or a norm not finite)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty(x.shape, dtype=np.float16)
    return out if x.size and _scan.unit_halves(x, out, x.shape[-1]) else to_half(_unit_rows(x))


def from_half(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``x.astype(float32)`` of float16 ``x``, bit for bit, in C (``_scan.from_halves``); numpy's
    where a value is NaN (its payload is the platform's). ``out``: a C-contiguous float32 buffer of
    ``x``'s shape to write into (returned; a new array where numpy's cast makes it)."""
    x = np.ascontiguousarray(x, dtype=np.float16)
    out = np.empty(x.shape, dtype=np.float32) if out is None else out
    return out if x.size and _scan.from_halves(x, out) else x.astype(np.float32)


def py_quantize(x: np.ndarray) -> np.ndarray:
    """``quantize`` in numpy: the definition."""
    x = np.asarray(x, dtype=np.float32).reshape(-1, x.shape[-1])
    peak = np.abs(x).max(axis=1, keepdims=True)
    scale = np.divide(127.0, peak, out=np.zeros_like(peak), where=peak > 0)
    return np.rint(x * scale).astype(np.int8)


def top_k(keys: np.ndarray, sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best (key, sim) pairs, best first; ties keep the lower key first."""
    if len(sims) > k:
        part = np.argpartition(-sims, k - 1)[:k]
        keys, sims = keys[part], sims[part]
    order = np.lexsort((keys, -sims))
    return keys[order].astype(np.int64, copy=False), sims[order].astype(np.float32, copy=False)


def allowed_mask(allowed: np.ndarray | None, n: int) -> np.ndarray | None:
    """``allowed`` as a bool array of length ``n``; keys beyond the given mask are not allowed (a mask made
    before the index grew). None: every key. ``vector_snapshot.LayeredIndex`` fits its masks to its parts with it."""
    if allowed is None:
        return None
    allowed = np.asarray(allowed, dtype=bool)
    if len(allowed) >= n:
        return allowed[:n]
    return np.concatenate([allowed, np.zeros(n - len(allowed), dtype=bool)])


def _scan_rows(rows: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` (row number, cosine) of ``rows`` (float16 or int8, the query of the same
    type) with usearch's single-threaded SIMD kernel: no BLAS thread pool to stall on a busy
    machine, and no float32 copy of the rows. A zero row scores 0."""
    found = usearch_scan(rows, query, min(k, len(rows)), MetricKind.Cos, exact=True, threads=1)
    sims = np.nan_to_num((1.0 - found.distances).astype(np.float32), nan=0.0)
    return found.keys.astype(np.int64), sims


def _code_sims(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine of ``query`` (int8 codes) to every row of ``rows`` (int8 codes), in row order,
    with numkong's batched kernel (usearch's own dependency): one pass over the rows where they
    lie, no copy, no heap. usearch's exact search costs ~7x as much a row here (9.8 vs 1.4 ms
    for 22k codes, ``bench/backlog_scan.py``), which a recall paid for every vector not yet in
    the graph (a bulk import's whole tail). The values agree with usearch's within one float32
    ulp (its kernel rounds differently), so only an exact tie at the k-th place could differ.
    A zero row scores 0."""
    dist = np.asarray(numkong.cdist(query[None, :], rows, metric="angular"))[0]
    return np.nan_to_num(1.0 - dist.astype(np.float32), nan=0.0)


def _best(sims: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` highest ``sims``, best first, equal sims in position order."""
    at = np.argpartition(-sims, k - 1)[:k] if len(sims) > k else np.arange(len(sims))
    return at[np.lexsort((at, -sims[at]))]


def _unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), so a dot product is a cosine."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def graph_node_bytes(connectivity: int, level: int = 0) -> int:
    """What one graph node of ``level`` holds resident in usearch's tape: its key (8 B) and level
    (2 B), then per level a neighbour count (4 B) and 4-byte slots (``2 x connectivity`` at level
    0, ``connectivity`` above), rounded up to the allocator's ``NODE_UNIT``."""
    raw = 10 + 4 + 4 * 2 * connectivity + level * (4 + 4 * connectivity)
    return -(-raw // NODE_UNIT) * NODE_UNIT


def _grow(a: np.ndarray, n: int) -> np.ndarray:
    """``a`` (per-key state: a byte a key) with at least ``n`` rows (zero-filled), doubling so
    appends are amortised O(1)."""
    if len(a) >= n:
        return a
    out = np.zeros((max(n, 2 * len(a), 64), *a.shape[1:]), dtype=a.dtype)
    out[: len(a)] = a
    return out


def _rings_of(ring: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The keys of each node's ring in a ``next`` array, node by node (each node first)."""
    out: list[int] = []
    for node in nodes.tolist():
        out.append(node)
        key = int(ring[node])
        while key != node:
            out.append(key)
            key = int(ring[key])
    return np.array(out, dtype=np.int64)


def _expand(ring: np.ndarray, nodes: np.ndarray, sims: np.ndarray, count: int,
            allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The keys of each node's ring (``_rings_of``) in the nodes' order, each with its node's
    similarity, only the ``allowed`` ones, at most ``count``. The walk runs in C
    (``_scan.ring_expand``: a Python step cost about as much as scanning a code, and a 1 % mask
    over 1M keys in 395 rings walked ~6k of them, 2.4 ms p50 and 12 ms p99 of CPU);
    ``py_expand`` is its oracle."""
    keys = np.empty(count, dtype=np.int64)
    at = np.empty(count, dtype=np.int64)
    ok = b"" if allowed is None else np.ascontiguousarray(allowed, dtype=bool)
    n = _scan.ring_expand(np.ascontiguousarray(ring, dtype=np.int32), np.ascontiguousarray(nodes, dtype=np.int64),
                          ok, keys, at)
    return keys[:n], sims[at[:n]].astype(np.float32, copy=False)


def py_expand(ring: np.ndarray, nodes: np.ndarray, sims: np.ndarray, count: int,
              allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``_expand`` in Python: the definition."""
    keys: list[int] = []
    out: list[float] = []
    for node, sim in zip(nodes.tolist(), sims.tolist(), strict=True):
        key = node
        while True:
            if allowed is None or allowed[key]:
                keys.append(key)
                out.append(sim)
                if len(keys) >= count:
                    return np.array(keys, dtype=np.int64), np.array(out, dtype=np.float32)
            key = int(ring[key])
            if key == node:
                break
    return np.array(keys, dtype=np.int64), np.array(out, dtype=np.float32)


def _dedupe_last(keys: np.ndarray, vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """When a key repeats within one ``add``, its last vector wins."""
    if len(sorted_sets.unique(keys)) == len(keys):
        return keys, vectors
    rev_unique, rev_first = np.unique(keys[::-1], return_index=True)
    last = len(keys) - 1 - rev_first
    return rev_unique, vectors[last]


def _map_codes(path: Path, size: int, writable: bool) -> np.ndarray:
    """The int8 codes of a saved index, memory-mapped: read-only for a replica, copy-on-write for
    the owner (writes stay in this process; the file is never changed). A file of another size
    is refused, as ``np.memmap`` would map a shorter one short."""
    held = path.stat().st_size
    if held != size:
        raise ValueError(f"{path}: {held} bytes, expected {size}")
    if not size:
        return np.zeros(0, dtype=np.int8)
    return np.memmap(path, dtype=np.int8, mode="c" if writable else "r", shape=(size,))


class _NotedLock:
    """A ``threading.Lock`` that notes when a caller had to wait for it, so a holder re-taking it
    in a loop (the graph build) pauses for waiters only when there are any. A waiter arriving
    just after the note was cleared waits one more chunk at most."""

    def __init__(self):
        self._lock = threading.Lock()
        self.waited = False

    def __enter__(self) -> _NotedLock:
        if not self._lock.acquire(blocking=False):
            self.waited = True
            self._lock.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self._lock.release()


class VectorIndex:
    """Cosine nearest neighbours over ``(key, vector)`` pairs; a re-added key replaces its vector.

    Thread-safe: searches and adds may come from any threads. Adds are serialised; a search
    waits at most for one graph chunk. Similarities are cosines of the float16 rows (within
    ~1e-3 of the float32 ones) up to ``EXACT_LIMIT``, of the int8 codes (within ~0.01) above.
    """

    def __init__(self, dim: int, *, exact_limit: int = EXACT_LIMIT, connectivity: int = CONNECTIVITY,
                 expansion_add: int = EXPANSION_ADD, expansion_search: int = EXPANSION_SEARCH):
        self.dim = dim
        self.exact_limit = exact_limit
        self.connectivity, self.expansion_add, self.expansion_search = connectivity, expansion_add, expansion_search
        self._lock = _NotedLock()  # guards all state below and every graph call
        self._write_lock = threading.Lock()  # one add at a time
        self._state = np.zeros(0, dtype=np.int8)  # per key: _ABSENT / _TAIL / _GRAPHED / _BESIDE
        self._count = 0
        # exact mode: float16 unit rows by key
        self._rows: RowChunks | None = RowChunks(dim)
        # graph mode
        self._blocks: list[np.ndarray] = []
        self._mapped_blocks = 0  # the first blocks map a snapshot's codes (``mapped``): the page cache's
        self._graph: Index | None = None
        self._tail = _NO_KEYS  # keys waiting for the graph, from _tail_head on
        self._tail_head = 0
        self._graphed = 0  # keys in the graph: nodes and the keys beside them
        self._nodes = 0  # distinct codes in the graph
        # The keys holding one node's code: a ring through each (``_next``/``_prev`` by key; a
        # node alone points at itself), walked from the node the graph returns (``_expand``)
        self._next = np.zeros(0, dtype=np.int32)
        self._prev = np.zeros(0, dtype=np.int32)
        self._table: CodeTable | None = None  # which node holds a code (built at the first insert)
        self._frozen = False  # a mapped snapshot (``VectorIndex.mapped``): read-only
        # the saved graph file this index's graph is (``mapped``): masked searches walk it in C,
        # filtering as they go; dropped when the graph changes (an owner's inserts and removals)
        self._walker: GraphWalk | None = None
        self._graph_changes = 0  # counts the graph's changes: a saved file is its graph while this holds
        self._saved: tuple[Path, int] | None = None  # the graph file ``save`` last wrote, at which count
        self.requeued = 0  # graphed vectors found unreachable at a save and put back on the tail

    # -- adding -----------------------------------------------------------------------------
    def add(self, keys: np.ndarray, vectors: np.ndarray, *, defer_graph: bool = False, unit: bool = False) -> None:
        """Adds (or replaces) vectors; they are searchable as soon as they are stored, before
        the graph absorbs them. ``defer_graph`` returns right after storing and leaves the
        graph work to ``build_graph`` (a background thread with other work to prioritise).
        ``unit``: the rows are unit length already (the static tier's pool scales them), so the
        int8 codes are made from them as they are; exact mode's float16 rows are scaled again."""
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(keys), self.dim)
        if len(keys) == 0:
            return
        self._check_writable(keys)
        keys, vectors = _dedupe_last(keys, vectors)  # before scaling: it keeps whole rows
        with self._write_lock:
            if self._graph is None and self._count + len(keys) <= self.exact_limit:
                with self._lock:
                    self._add_exact(keys, unit_halves(vectors))  # float16 rows: bit for bit as always
            else:
                if self._graph is None:
                    with self._lock:
                        self._to_graph()
                # Codes are scaled per row (absmax), so scaling a unit row again by its float32 norm
                # (1 within an ulp) moves no code but at a rounding tie: 0 of 20k static rows' codes
                # changed, and it cost ~3 µs an event (issue 28, docs/speed.md)
                codes = quantize(vectors if unit else _unit_rows(vectors))
                with self._lock:
                    self._add_codes(keys, codes)
            if not defer_graph:
                self._drain_tail(None, threads=1)

    def takes_codes(self) -> bool:
        """Whether ``add_codes`` may be called: in graph mode the index keeps only int8 codes, so a
        caller that can make them without float rows (the static tier: ``StaticTable.codes``) hands
        them over. Once true it stays true (the graph is never dropped)."""
        return self._graph is not None

    def add_codes(self, keys: np.ndarray, codes: np.ndarray, *, defer_graph: bool = False) -> None:
        """``add(keys, rows, unit=True)`` in graph mode, given the codes it would make of those unit
        rows (``quantize``): stored and searchable at once, the graph absorbs them later. Only in graph
        mode (``takes_codes``): exact mode keeps float16 rows, which codes cannot give back."""
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        codes = np.asarray(codes, dtype=np.int8).reshape(len(keys), self.dim)
        if len(keys) == 0:
            return
        self._check_writable(keys)
        keys, codes = _dedupe_last(keys, codes)
        with self._write_lock:
            if self._graph is None:
                raise RuntimeError("add_codes needs graph mode (takes_codes): exact mode keeps float rows")
            with self._lock:
                self._add_codes(keys, codes)
            if not defer_graph:
                self._drain_tail(None, threads=1)

    def _check_writable(self, keys: np.ndarray) -> None:
        if self._frozen:
            raise RuntimeError("this VectorIndex maps a snapshot read-only: add to an index layered over it")
        if keys.min() < 0:
            raise ValueError("vector keys must be non-negative (dense document numbers)")

    def build_graph(self, limit: int | None = None, *, threads: int = 1) -> int:
        """Moves up to ``limit`` (None: all) waiting vectors into the graph; returns how many
        still wait. Searches stay correct either way; waiting vectors are scanned exactly.

        One thread by default: a background build should leave a core to the searches. More
        threads insert the same chunks in parallel (``bench/graph_build.py``, 100k real vectors
        at load 10-12: 2 threads x1.66 the wall rate at the same CPU a vector, recall@10 0.995
        vs 0.997) but leave a few nodes unreachable (8-16 of 100k; 0 with 1 thread here): every
        snapshot finds those (``check_saved``), scans them, and puts them back in the queue."""
        if self._frozen:
            return 0
        with self._write_lock:
            self._drain_tail(limit, threads=threads)
            return self.unbuilt

    @property
    def unbuilt(self) -> int:
        """Vectors stored but not yet in the graph (0 in exact mode, and in a mapped snapshot,
        whose unbuilt part is scanned exactly for good: nothing will build it)."""
        return len(self._tail) - self._tail_head if self._graph is not None and not self._frozen else 0

    def _add_exact(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        self._rows.put(keys, vectors)
        self._state = _grow(self._state, int(keys.max()) + 1)
        self._count += int(np.count_nonzero(self._state[keys] == _ABSENT))
        self._state[keys] = _TAIL  # "present" in exact mode

    def _to_graph(self) -> None:
        """Exact → graph: every present vector becomes int8 codes on the tail; the float16
        rows are dropped. Called once, under the lock, when an add would pass the limit."""
        present = np.flatnonzero(self._state == _TAIL)
        self._graph = Index(ndim=self.dim, metric=MetricKind.Cos, dtype="i8", connectivity=self.connectivity,
                            expansion_add=self.expansion_add, expansion_search=self.expansion_search)
        # One chunk's halves, float32 rows and codes (1.75 MB at 512-d), reused chunk after chunk: each chunk's
        # own were fresh mappings (a bulk call holds the mmap threshold at 128 kB, heap_trim), whose pages
        # faulted in every time — ~16k page faults at a 20k switch, ~0.15 µs an event of a 100k import
        halves = np.empty((min(_SWITCH_ROWS, len(present)), self.dim), dtype=np.float16)
        wide = np.empty(halves.shape, dtype=np.float32)
        codes = np.empty(halves.shape, dtype=np.int8)
        for start in range(0, len(present), _SWITCH_ROWS):
            part = present[start : start + _SWITCH_ROWS]
            n = len(part)
            self._store_codes(part, quantize(self._rows.take(part, halves[:n]), codes[:n], wide[:n]))
        self._rows = None
        self._tail, self._tail_head = present.astype(np.int64), 0

    def _store_codes(self, keys: np.ndarray, codes: np.ndarray) -> None:
        top = int(keys.max()) // _BLOCK
        while len(self._blocks) <= top:
            self._blocks.append(np.zeros((_BLOCK, self.dim), dtype=np.int8))
        self._state = _grow(self._state, (top + 1) * _BLOCK)
        if int(keys.min()) // _BLOCK == top:  # one block holds them (most batches): the codes as given, where
            # each block's selection was a copy of them (a fresh 2.5 MB mapping a batch of 5,000, faulted in)
            self._blocks[top][keys - top * _BLOCK] = codes
            return
        block_of = keys // _BLOCK
        for b in sorted_sets.unique(block_of):
            sel = block_of == b
            self._blocks[b][keys[sel] - b * _BLOCK] = codes[sel]

    def _add_codes(self, keys: np.ndarray, codes: np.ndarray) -> None:
        """Stores codes and queues the keys for the graph; a replaced graphed key leaves the
        graph first (usearch marks it deleted), so results never show a stale vector."""
        if int(keys.max()) >= len(self._state):
            self._state = _grow(self._state, int(keys.max()) + 1)
        state = self._state[keys]
        graphed = keys[state >= _GRAPHED]
        if len(graphed):
            self._leave_graph(graphed)
        self._count += int(np.count_nonzero(state == _ABSENT))
        self._store_codes(keys, codes)
        fresh = keys[state != _TAIL]
        self._state[fresh] = _TAIL
        self._tail = np.concatenate([self._tail[self._tail_head :], fresh])
        self._tail_head = 0

    def _drain_tail(self, limit: int | None, *, threads: int) -> None:
        """Moves (up to ``limit`` of) the tail into the graph, one chunk per lock hold (``_CHUNK``
        vectors a thread: a search waits about as long whatever the thread count)."""
        left = len(self._tail) if limit is None else limit
        size = _CHUNK * max(1, threads)
        while left > 0:
            with self._lock:
                if self._graph is None or self._tail_head >= len(self._tail):
                    return
                chunk = np.sort(self._tail[self._tail_head : self._tail_head + min(size, left)])
                left -= len(chunk)
                self._tail_head += len(chunk)
                chunk = chunk[self._state[chunk] == _TAIL]
                if len(chunk):
                    self._insert(chunk, threads)
            # threading.Lock is not fair: re-taking it at once would starve waiting searches
            # (measured: p99 5.7 s while a 100k tail was built). A short pause lets them in, only
            # when one waited: on a loaded machine each pause costs a scheduler slice, not 0.2 ms
            # (measured: a 20k build spent 18.8 s of wall time for 3.0 s of CPU at load 18).
            if self._lock.waited:
                self._lock.waited = False
                time.sleep(_YIELD_S)

    def _insert(self, chunk: np.ndarray, threads: int) -> None:
        """Under the lock: the tail keys ``chunk`` (sorted) join the graph. A key whose exact
        code a node already holds goes beside that node instead of becoming a node: an HNSW
        insert among thousands of exact duplicates walks them all (1M static-tier vectors of
        bench/api.py's events, 752 distinct codes, never finished building; docs/speed.md)."""
        self._ring_room(len(self._state))
        self._graph_changed()
        if self._table is None:
            self._table = self._table_of_nodes()
        codes = self._codes(chunk)
        hashes = self._table.hashes(codes)
        holder = self._table.find(hashes)
        known = holder >= 0
        if known.any():  # a hash is a candidate: the node must still be one, with this very code
            at = np.flatnonzero(known)
            same = (self._state[holder[at]] == _GRAPHED) & (self._codes(holder[at]) == codes[at]).all(axis=1)
            known[at[~same]] = False
        fresh: list[int] = []
        first: dict[int, int] = {}  # a code's first new node within this chunk
        for i in np.flatnonzero(~known).tolist():
            j = first.setdefault(int(hashes[i]), i)
            if j != i and np.array_equal(codes[i], codes[j]):
                holder[i], known[i] = chunk[j], True
            else:
                fresh.append(i)
        nodes = chunk[fresh]
        for run in np.split(nodes, np.flatnonzero((np.diff(nodes) != 1) | (np.diff(nodes // _BLOCK) != 0)) + 1):
            if len(run):
                b, row = divmod(int(run[0]), _BLOCK)
                # copy=False: the graph keeps pointers into the block, which never moves
                self._graph.add(run, self._blocks[b][row : row + len(run)], copy=False, threads=threads)
        self._state[nodes] = _GRAPHED
        self._next[nodes] = self._prev[nodes] = nodes
        self._nodes += len(nodes)
        self._table.put(hashes[fresh], nodes)
        for key, node in zip(chunk[known].tolist(), holder[known].tolist(), strict=True):
            self._join(key, node)
        self._state[chunk[known]] = _BESIDE
        self._graphed += len(chunk)

    def _codes(self, keys: np.ndarray) -> np.ndarray:
        """The int8 codes of ``keys`` (a copy, in their order)."""
        codes = np.empty((len(keys), self.dim), dtype=np.int8)
        blocks = keys // _BLOCK
        for b in np.unique(blocks).tolist():
            at = blocks == b
            codes[at] = self._blocks[b][keys[at] - b * _BLOCK]
        return codes

    def _table_of_nodes(self) -> CodeTable:
        """The code table over the graph's nodes (an owner reopening its snapshot builds it at
        its first insert; a replica never inserts)."""
        table = CodeTable(self.dim)
        nodes = np.flatnonzero(self._state == _GRAPHED)
        for start in range(0, len(nodes), 8192):
            part = nodes[start : start + 8192]
            table.put(table.hashes(self._codes(part)), part)
        return table

    def _graph_changed(self) -> None:
        """Under the lock, before the graph changes: no saved file is its graph any more."""
        self._walker = None
        self._graph_changes += 1

    def walk_saved(self, folder: Path | None = None) -> bool:
        """Masked searches walk the graph file ``save`` last wrote (``recall.graph_walk``) when the
        graph has not changed since (an owner checkpointing between imports: the walk it mapped at
        reopening is dropped at its first insert); returns whether they do. ``folder``: where the
        file is now (a snapshot's generation is renamed into place once sealed). The file's pages
        stay mapped while walked, after its generation is pruned too."""
        saved = self._saved
        if saved is None or self._frozen:
            return self._walker is not None
        try:
            walker = GraphWalk(saved[0] if folder is None else Path(folder) / saved[0].name, self.dim)
        except FileNotFoundError:  # pruned meanwhile: the next checkpoint's file serves
            return self._walker is not None
        with self._lock:
            if self._graph_changes == saved[1] and self._graph is not None:
                self._walker = walker
            return self._walker is not None

    def _ring_room(self, n: int) -> None:
        if len(self._next) < n:
            self._next, self._prev = _grow(self._next, n), _grow(self._prev, n)

    def _join(self, key: int, node: int) -> None:
        """``key`` goes last in ``node``'s ring."""
        last = int(self._prev[node])
        self._next[last], self._prev[key], self._next[key], self._prev[node] = key, last, node, key

    def _unlink(self, key: int) -> None:
        before, after = int(self._prev[key]), int(self._next[key])
        self._next[before], self._prev[after] = after, before
        self._next[key] = self._prev[key] = key

    def _leave_graph(self, keys: np.ndarray) -> None:
        """Under the lock, before their codes are overwritten: graphed ``keys`` (nodes or beside
        one) leave the graph (the caller sets their state). A node leaving with keys still
        beside it hands its place to the next of them, which is inserted with its own row (the
        graph points into the leaving key's row, about to be rewritten)."""
        self._graph_changed()
        beside = keys[self._state[keys] == _BESIDE]
        for key in beside.tolist():
            self._unlink(key)
        nodes = keys[self._state[keys] == _GRAPHED]
        heirs = []
        for node in nodes.tolist():
            heir = int(self._next[node])
            self._unlink(node)
            if heir != node:
                heirs.append(heir)
        if len(nodes):
            self._graph.remove(nodes)
        for heir in heirs:
            b, row = divmod(heir, _BLOCK)
            self._graph.add(heir, self._blocks[b][row], copy=False)
            self._state[heir] = _GRAPHED
            if self._table is not None:
                self._table.put(self._table.hashes(self._blocks[b][row : row + 1]), np.array([heir]))
        self._nodes += len(heirs) - len(nodes)
        self._graphed -= len(keys)

    def check_saved(self, stem: Path) -> int:
        """Checks the graph ``save`` wrote beside ``stem`` for nodes no search can reach
        (``recall.graph_check``); returns how many. Those are rewritten as unbuilt in
        ``stem.state``, so whoever maps the files scans them exactly, and this index puts them
        back on its build queue. Takes no lock while it reads the file (~1 s a 100k vectors
        here), so the caller can run it after releasing the log's (``write_snapshot``)."""
        stem = Path(stem)
        graph_file = stem.with_suffix(".usearch")
        if not graph_file.exists():
            return 0  # exact mode: no graph
        state = np.fromfile(stem.with_suffix(".state"), dtype=np.int8)
        lost = unreachable_keys(graph_file)
        lost = lost[lost < len(state)]
        lost = lost[state[lost] == _GRAPHED]
        if not len(lost):
            return 0
        # the keys beside a lost node are found through it only: lost with it
        ring = np.fromfile(stem.with_suffix(".ring"), dtype=np.int32)
        unbuilt = _rings_of(ring, lost)
        state[unbuilt] = _TAIL
        state.tofile(stem.with_suffix(".state"))
        self._requeue(lost)
        return len(unbuilt)

    def _requeue(self, lost: np.ndarray) -> None:
        """Graph nodes no search can reach (``recall.graph_check``) leave the graph and go back
        on the tail with the keys beside them: scanned exactly until the next build inserts them
        again (with fresh links: a node is unreachable because of when and beside what it was
        inserted)."""
        if self._frozen:
            return
        with self._lock:
            lost = lost[self._state[lost] == _GRAPHED]
            if not len(lost):
                return
            keys = _rings_of(self._next, lost)
            self._graph_changed()
            self._graph.remove(lost)
            self._nodes -= len(lost)
            self._graphed -= len(keys)
            self._state[keys] = _TAIL
            self._next[keys] = self._prev[keys] = keys
            self._tail = np.concatenate([self._tail[self._tail_head :], keys])
            self._tail_head = 0
        self.requeued += len(keys)

    # -- searching --------------------------------------------------------------------------
    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` keys most cosine-similar to ``query`` (best first) and their similarities.

        ``allowed`` (bool, indexed by key) restricts the candidates; keys past its end are
        not allowed. A zero query has no neighbours.
        """
        query = np.asarray(query, dtype=np.float32).reshape(self.dim)
        norm = float(np.linalg.norm(query))
        if k <= 0 or norm == 0.0:
            return _NO_KEYS, _NO_SIMS
        query = query / norm
        with self._lock:
            if self._count == 0:
                return _NO_KEYS, _NO_SIMS
            if self._graph is None:
                return self._search_exact(query, k, allowed_mask(allowed, len(self._state)))
            q8 = quantize(query)[0]
            walked, to_scan = self._search_graph(q8, k, allowed_mask(allowed, len(self._state)))
        # Outside the lock: code rows never move and the key arrays are snapshots, so scans
        # (the not-yet-graphed tail, a selective mask) do not hold up adds or other searches.
        parts = [walked, *(self._scan(keys, q8, k) for keys in to_scan)]
        return top_k(np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), k)

    def cosines(self, keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """Cosine of each key's vector to each query row: a ``len(keys) × len(queries)``
        matrix, NaN for a key with no vector. Late interaction (several query views) scores
        the candidates with this instead of one search per view."""
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        queries = _unit_rows(np.asarray(queries, dtype=np.float32).reshape(-1, self.dim))
        out = np.full((len(keys), len(queries)), np.nan, dtype=np.float32)
        with self._lock:
            present = np.zeros(len(keys), dtype=bool)
            inside = keys < len(self._state)
            present[inside] = self._state[keys[inside]] != _ABSENT
            rows = keys[present]
            if not len(rows):
                return out
            if self._graph is None:
                vectors = self._rows.take(rows).astype(np.float32)
            else:
                codes = np.empty((len(rows), self.dim), dtype=np.int8)
                blocks = rows // _BLOCK
                for b in sorted_sets.unique(blocks).tolist():
                    at = blocks == b
                    codes[at] = self._blocks[b][rows[at] - b * _BLOCK]
                vectors = _unit_rows(codes.astype(np.float32))
        out[present] = vectors @ queries.T
        return out

    def _search_exact(self, query: np.ndarray, k: int, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Each chunk scanned in place when every row of it may answer, else its candidate
        rows gathered first; the chunks' best merged."""
        valid = self._state == _TAIL
        if allowed is not None:
            valid &= allowed
        q16 = query.astype(np.float16)
        found_keys, found_sims = [], []
        for start, rows in self._rows.spans(len(valid)):
            here = valid[start : start + len(rows)]
            if here.all():
                at, sims = _scan_rows(rows, q16, k)
                found_keys.append(at + start)
            else:
                cand = np.flatnonzero(here)
                if not len(cand):
                    continue
                at, sims = _scan_rows(rows[cand], q16, k)
                found_keys.append(cand[at] + start)
            found_sims.append(sims)
        if not found_keys:
            return _NO_KEYS, _NO_SIMS
        return top_k(np.concatenate(found_keys), np.concatenate(found_sims), k)

    def _search_graph(self, q8: np.ndarray, k: int, allowed: np.ndarray | None):
        """Under the lock: the graph's answer, and the key sets to scan exactly afterwards."""
        tail = self._tail[self._tail_head :]
        if allowed is not None:
            tail = tail[allowed[tail]]
        to_scan = [tail] if len(tail) else []
        if not self._graphed:
            return (_NO_KEYS, _NO_SIMS), to_scan
        if allowed is None:
            return self._walk(q8, k), to_scan
        walked, scan = self._walk_masked(q8, k, allowed)
        return walked, to_scan + ([scan] if scan is not None else [])

    def _walk(self, q8: np.ndarray, count: int, allowed: np.ndarray | None = None,
              need: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The graph's ``count`` nearest nodes, each followed by the keys beside it (same code,
        same cosine): the first ``need`` (default ``count``) of those ``allowed`` (all when
        None), best first."""
        self._graph.expansion_search = max(self.expansion_search, count)
        found = self._graph.search(q8, count, threads=1)
        return _expand(self._next, found.keys.astype(np.int64), (1.0 - found.distances).astype(np.float32),
                       count if need is None else need, allowed)

    def _walk_masked(self, q8: np.ndarray, k: int, allowed: np.ndarray):
        """Over-fetch nodes from the graph (twice the expected need) and keep the allowed keys
        they hold. When scanning the allowed keys is cheaper than that walk (``_WALK_COST``), or
        over-fetching up to ``_FETCH_CAP`` still finds fewer than ``k`` of them, returns the keys
        to scan instead."""
        graphed_allowed = allowed & (self._state >= _GRAPHED)
        n_allowed = int(np.count_nonzero(graphed_allowed))
        if n_allowed == 0:
            return (_NO_KEYS, _NO_SIMS), None
        fetch = min(self._nodes, k * 2 * self._nodes // n_allowed + k)
        if n_allowed <= _WALK_COST * max(fetch, self.expansion_search) or fetch > _FETCH_CAP:
            return (_NO_KEYS, _NO_SIMS), np.flatnonzero(graphed_allowed)
        if self._walker is not None:
            keys, sims = self._walk_filtered(q8, k, graphed_allowed)
            return ((keys, sims), None) if len(keys) >= k else ((_NO_KEYS, _NO_SIMS), np.flatnonzero(graphed_allowed))
        while True:
            keys, sims = self._walk(q8, fetch, allowed, k)
            if len(keys) >= k or fetch >= self._nodes:
                return (keys, sims), None
            if fetch >= _FETCH_CAP:
                return (_NO_KEYS, _NO_SIMS), np.flatnonzero(graphed_allowed)
            fetch = min(self._nodes, _FETCH_CAP, fetch * 4)

    def _walk_filtered(self, q8: np.ndarray, k: int, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The saved graph walked in C keeping only nodes with a key ``ok`` allows
        (``recall.graph_walk``): ``MASKED_EF`` of them (at least ``k``), each followed by its
        allowed keys, the first ``k``. Fewer when the walk stopped at ``_FETCH_CAP`` expansions."""
        nodes, sims, _ = self._walker.walk(q8, ok, self._next, max(k, MASKED_EF), _FETCH_CAP)
        return _expand(self._next, nodes, sims, k, ok)

    def _scan(self, keys: np.ndarray, q8: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k over the codes of ``keys`` (``_code_sims``). A block's keys that fill
        at least ``1 / _SPAN_SLACK`` of their span (a bulk load's tail, under a mask that hides
        other agents' private events) are scored where they lie, the span's other rows scored
        and dropped; sparser keys have their rows gathered first. Either way no per-key Python
        work, and no 16 MB copy of a masked block for every view of every recall."""
        if len(keys) == 0:
            return _NO_KEYS, _NO_SIMS
        keys = np.sort(keys)
        found_keys, found_sims = [], []
        for base, part in self._by_block(keys):
            block = self._blocks[base // _BLOCK]
            first, span = part[0] - base, part[-1] - part[0] + 1
            if span == len(part):
                sims = _code_sims(block[first : first + span], q8)
            elif span <= _SPAN_SLACK * len(part):
                sims = _code_sims(block[first : first + span], q8)[part - part[0]]
            else:
                sims = _code_sims(block[part - base], q8)
            at = _best(sims, k)
            found_keys.append(part[at])
            found_sims.append(sims[at])
        return np.concatenate(found_keys), np.concatenate(found_sims)

    def _by_block(self, sorted_keys: np.ndarray):
        """``(first key of the block, the keys in it)`` for each block ``sorted_keys`` touch."""
        bounds = np.searchsorted(sorted_keys, np.arange(1, len(self._blocks) + 1) * _BLOCK)
        start = 0
        for b, end in enumerate(bounds):
            if end > start:
                yield b * _BLOCK, sorted_keys[start:end]
            start = end

    # -- persisting -------------------------------------------------------------------------
    def save(self, stem: Path) -> dict:
        """Writes this index beside ``stem`` (``stem.state``, then ``stem.f16`` in exact mode, or
        ``stem.codes``, ``stem.usearch`` and ``stem.ring`` over the graph: the ring of keys
        holding each node's code, a key alone pointing at itself) and returns what ``mapped`` needs.

        Holds the write lock (adds and graph building wait; searches go on), so the files are
        one consistent cut. The caller makes the set of files appear atomically
        (``recall.vector_snapshot``), after ``check_saved``."""
        stem = Path(stem)
        with self._write_lock:
            with self._lock:
                state = self._state.copy()
                exact = self._graph is None
                ring = None if exact else self._saved_ring(len(state))
            if exact:
                with stem.with_suffix(".f16").open("wb") as out:
                    held = min(len(state), self._rows.capacity)  # keys past the rows' end are absent
                    self._rows.tofile(out, held)
                    np.zeros((len(state) - held, self.dim), dtype=np.float16).tofile(out)
            else:
                # rows of a replaced code are rewritten only under the write lock: safe to read here
                with stem.with_suffix(".codes").open("wb") as out:
                    for block in self._blocks:
                        block.tofile(out)
                self._graph.save(str(stem.with_suffix(".usearch")))
                ring.tofile(stem.with_suffix(".ring"))
                with self._lock:  # the graph changes under the lock only: this count is the file's
                    self._saved = (stem.with_suffix(".usearch"), self._graph_changes)
            state.tofile(stem.with_suffix(".state"))
        return {"dim": self.dim, "keys": len(state), "exact": exact, "blocks": 0 if exact else len(self._blocks),
                "vectors": int(np.count_nonzero(state != _ABSENT)),
                "unbuilt": 0 if exact else int(np.count_nonzero(state == _TAIL)), "ring": not exact}

    def _saved_ring(self, n: int) -> np.ndarray:
        """Under the lock: ``_next`` for ``n`` keys, a key outside the graph pointing at itself."""
        self._ring_room(n)
        return np.where(self._state[:n] >= _GRAPHED, self._next[:n], np.arange(n, dtype=np.int32))

    @classmethod
    def mapped(cls, stem: Path, meta: dict, *, writable: bool = False) -> VectorIndex:
        """A read-only index over the files ``save`` wrote (``meta``: what it returned): the
        vectors are memory-mapped and the graph is a usearch view, so nothing is rebuilt, no
        vector is copied, and processes mapping the same files share their pages. ``add``
        raises; layer a writable index over it (``recall.vector_snapshot.LayeredIndex``).

        ``writable``: the owner reopening its own snapshot, which keeps adding. Its graph is
        loaded (usearch's Python API cannot insert into a view), and that load copies every
        node's code into the graph. The ``.codes`` file is therefore mapped copy-on-write rather
        than read: its pages stay the page cache's (shared with replicas mapping the same file,
        reclaimable), and only a page an add or a replacement writes becomes the owner's. Read
        into memory, the codes were held twice by a reopened owner (100k neural vectors: codes
        671 + graph 1,182 B a vector). Exact-mode float16 rows are still read (at most
        ``EXACT_LIMIT`` of them, and ``RowChunks`` grows its first chunk in place)."""
        stem = Path(stem)
        index = cls(int(meta["dim"]))
        index._frozen = not writable
        load = np.fromfile if writable else functools.partial(np.memmap, mode="r")
        n = int(meta["keys"])
        index._state = np.fromfile(stem.with_suffix(".state"), dtype=np.int8, count=n)
        if len(index._state) != n:
            raise ValueError(f"{stem.with_suffix('.state')}: {len(index._state)} keys, expected {n}")
        index._count = int(np.count_nonzero(index._state != _ABSENT))
        if meta["exact"]:
            rows = load(stem.with_suffix(".f16"), dtype=np.float16).reshape(n, index.dim) \
                if n else np.zeros((0, index.dim), dtype=np.float16)
            index._rows = RowChunks.over(rows)
            return index
        index._rows = None
        rows = int(meta["blocks"]) * _BLOCK
        codes = _map_codes(stem.with_suffix(".codes"), rows * index.dim, writable).reshape(rows, index.dim)
        # plain views: a memmap's slicing and indexing cost more, and every search does both
        index._blocks = [np.asarray(codes[b * _BLOCK : (b + 1) * _BLOCK]) for b in range(int(meta["blocks"]))]
        index._mapped_blocks = len(index._blocks)
        index._graph = Index.restore(str(stem.with_suffix(".usearch")), view=not writable)
        if index._graph is None or index._graph.ndim != index.dim:
            raise ValueError(f"{stem.with_suffix('.usearch')}: not a {index.dim}-d usearch index")
        # the file's, not ``CONNECTIVITY``: a graph keeps the connectivity it was built with (homes from
        # before round thirteen hold 32), and usearch inserts into a restored graph at that one
        index.connectivity = index._graph.connectivity
        index._tail = np.flatnonzero(index._state == _TAIL).astype(np.int64)  # scanned at every search
        same_graph = True
        if writable and len(index._tail):
            # keys the save found unreachable are still nodes of the file's graph: the owner
            # inserts them again, which usearch refuses for a key it holds
            held = index._tail[index._graph.contains(index._tail)]
            if len(held):
                index._graph.remove(held)
                same_graph = False
        if same_graph:
            index._walker = GraphWalk(stem.with_suffix(".usearch"), index.dim)
        # a snapshot from before the rings: every graphed key is a node of its own
        ring = np.fromfile(stem.with_suffix(".ring"), dtype=np.int32, count=n) if meta.get("ring") \
            else np.arange(n, dtype=np.int32)
        if len(ring) != n:
            raise ValueError(f"{stem.with_suffix('.ring')}: {len(ring)} keys, expected {n}")
        # keys the save found unreachable (and those beside them) are on the tail: out of the rings
        index._next = np.where(index._state >= _GRAPHED, ring, np.arange(n, dtype=np.int32))
        if writable:  # only an index that changes its rings needs them both ways
            index._prev = np.empty_like(index._next)
            index._prev[index._next] = np.arange(n, dtype=np.int32)
        index._graphed = int(np.count_nonzero(index._state >= _GRAPHED))
        index._nodes = int(np.count_nonzero(index._state == _GRAPHED))
        return index

    # -- size -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._count

    @property
    def exact(self) -> bool:
        """True while every search is exact over float16 rows (at most ``exact_limit`` vectors)."""
        return self._graph is None

    def memory_bytes(self) -> int:
        """Bytes held in this process: the float16 rows or the int8 blocks not mapped from a
        snapshot, plus the graph, and per-key state."""
        with self._lock:
            total = self._state.nbytes + self._tail.nbytes + self._next.nbytes + self._prev.nbytes
            if self._table is not None:
                total += self._table.nbytes
            if self._rows is not None:
                total += self._rows.nbytes
            # mapped blocks (a snapshot's codes) are the page cache's; only written pages are ours
            total += sum(b.nbytes for b in self._blocks[self._mapped_blocks :])
            if self._graph is not None:
                total += self._graph.memory_usage
            if self._walker is not None:
                total += self._walker.nbytes
            return total
