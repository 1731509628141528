"""Per-tenant semantic vectors in two tiers: a static one at once, the neural one as it arrives.

**Fast tier.** ``add`` gives every document a static vector (``recall.static``: the neural
model's token vectors, distilled, pooled; ~100k texts/s) before it returns, so an event is
findable by meaning the moment ``perceive`` returns. Those vectors live in the neural model's
own space: the same query vector searches both tiers in one per-tenant ``VectorIndex``.

**Neural tier, a lagging projection.** ``add`` also queues ``(doc_no, doc_id, text)``; one
daemon thread schedules the model's work: one step per tenant per round (a tenant's bulk import
cannot starve another's events), each text capped at the model's window (``capped``: the rest
stays lexical), each distinct text embedded once (deduped by its hash), in batches handed to
embedder worker processes (``recall.workers``: the model never runs on a request thread, nor
holds the brain's interpreter lock), except for one bounded case: a recall re-embeds its own
candidates still on static vectors (``upgrade``: at most 16 short texts, each once), so a recall
right after a bulk import, or while the workers start, ranks in the model's space; longer texts
always wait for the workers. Each neural vector replaces the document's static one;
``tiers`` says which tier made a document's vector, and recall's ``why`` names it. The neural
vectors are a deterministic function of (model, capped text): replay recomputes them, the
content-addressed cache below making that a lookup. Without a static tier (a custom
embedder), a ``search`` first embeds its tenant's queued texts inline when there are at most
``inline_limit`` of them, so the agent loop reads its own writes; ``coverage`` says how many
documents have a vector.

The embedding cache is a SQLite file of float16 vectors keyed by (embedder name, hash of the
tenant and the capped text), so an edited text is re-embedded and a repeated one is not. It
exists so that reopening a brain with 100k documents does not spend ~80 s re-embedding them. It
is a **rebuildable cache, not a source of truth**: delete it and the vectors are recomputed from
the documents. The background thread writes it in batches; ``close`` flushes it. Measured
(``bench/vectors.py``): 100k vectors take 1.2 KB each on disk and are written in ~0.8 s; a fresh
index reads them back and makes all 100k searchable in ~0.8 s (~120k vectors/s, nothing
embedded). The HNSW graph is then built in the background (about a minute for 100k here);
meanwhile searches scan the unbuilt part exactly: p50 16 ms, p99 46 ms instead of ~2-3 ms.

A recall replica (``follow=True``) leaves the embedding of documents to another process (the
brain's owner), which writes the cache: its background thread takes the vectors from the cache
as they appear, rechecking a miss every ``FOLLOW_RETRY_S``, so a bulk import is embedded once
on two cores. It computes the static tier itself (it is cheap); without one, only a search's
small inline backlog (read-your-writes) is embedded by the replica itself.

Failures are never silent and never lose items: if the embedder (or the cache) raises in the
background, the error is kept in ``last_error``, the items go back to the front of their
queue, and the thread waits for the next ``add`` or ``search`` to retry.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hindbrain.bulk_calls import BulkCalls
from hindbrain.heap_trim import release_free_heap
from hindbrain.recall import e5_dialogue, sorted_sets
from hindbrain.recall.embed import Embedder, normalize_rows
from hindbrain.recall.vectors import VectorIndex

# (doc_no, doc_id, text); text None: ``SemanticIndex.text_of`` reads it when taken (and doc_id is None then)
Item = tuple[int, str | None, str | None]

WINDOW_CHARS = 2048  # what a model sees of a text when it names no window: ~512 tokens
STATIC, NEURAL = 1, 2  # the tier of a document's vector (0: none yet)
# What a recall re-embeds with the model for its candidates still on static vectors
# (SemanticIndex.upgrade): at most 16 texts of at most 512 characters, 4,096 characters in all,
# ~1.2 ms a short text on one core: ~20 ms at most, paid once per text. Longer texts wait for the
# workers: the request thread never embeds a long text (a 64 kB event cannot hold a recall).
UPGRADE_LIMIT = 16
UPGRADE_TEXT_CHARS = 512
UPGRADE_CHARS = 4096
BATCH = 64  # texts per embedder call: amortises the model's per-call cost, bounds a search's wait
_LOOKUP = 512  # queued items per background step with a cache (a reload is mostly cheap hits)
_FLUSH = 512  # cache rows buffered before a write
_GRAPH_STEP = 256  # graph insertions between checks for new embedding work
_SQL_VARS = 900  # under SQLite's historical limit of 999 bound parameters
# A call perceiving at least BULK_EVENTS events is a bulk import: the background thread (the neural
# tier's embedding, the e5 tier's, the graph's building) takes no step while one runs, at most
# BULK_YIELD_S at a stretch (then one step, then it yields again: a stream of bulk calls slows the tier,
# never stops it). The workers run under SCHED_IDLE, so they take no core from the caller, but a core
# they share the machine's caches and memory bus with still slows it: stopping them during a 100k
# import read 29.1 / 28.8 / 29.3k ev/s against 26.1 / 27.4 / 27.8k, the caller's CPU 30.3-30.7 against
# 31.4-33.1 µs an event (docs/speed.md, round twenty-two, the merge). Every event keeps its static
# vector at return; the neural tier catches up once the import pauses. A stream of smaller calls
# (a fleet's steady perceptions, bench/api.py's lag run: 500 a call) does not pause it.
# A bulk import's calls come back to back: the tier keeps yielding for BULK_LINGER_S after one ends, and
# checks before each round of its embedding (a step of 512 texts is ~1.5 s of a worker: checked only
# between steps, the yield missed most of an import's calls).
BULK_EVENTS = 1_000
BULK_YIELD_S = 2.0
BULK_LINGER_S = 0.25
RECENT_VECTORS = 4096  # without a cache: neural vectors of recent texts kept for dedup (float16: 1 KB each, 4 MB)
QUERY_CACHE = 4096  # query texts whose vectors are kept (2 KB each: 8 MB)
TRIM_AFTER = 5_000  # vectors put in the graph before a settled index trims the heap (a trim costs ms)
FOLLOW_RETRY_S = 0.25  # a replica's recheck of the cache for vectors the owner has not written yet


def text_hash(text: str) -> bytes:
    """8-byte digest of a text: a cached vector is reused only for the text it was made from
    (the semantic index hashes the tenant with it)."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()


def content_key(tenant: str, capped_text: str) -> bytes:
    """The key of a neural vector in the cache and the dedup map: the tenant with the capped
    text, so a tenant cannot tell from the lag that another one sent the same text."""
    return text_hash(f"{tenant}\x1f{capped_text}")


def capped(text: str, window: int) -> str:
    """The part of ``text`` a model embeds: its first ``window`` characters. The rest stays
    searchable by the lexical channel; capping bounds what one text costs the embedder (a 64 kB
    text took USE ~2.7 s), so a few long texts cannot hold up every tenant's vectors."""
    return text if len(text) <= window else text[:window]


def window_of(embedder) -> int:
    """The characters ``embedder`` embeds of a text (its ``window_chars``, else ``WINDOW_CHARS``)."""
    return int(getattr(embedder, "window_chars", WINDOW_CHARS))


def _known(known: np.ndarray, keys: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The keys and rows of the texts with a vector (a text with no known token has none)."""
    return (keys, rows) if known.all() else (keys[known], rows[known])


def latest(batch: list[Item]) -> list[Item]:
    """The batch with only the last item of each doc_no: a re-added document's newest text wins
    even when its older text is a cache hit and the newer one is embedded."""
    last = {doc_no: i for i, (doc_no, _, _) in enumerate(batch)}
    return batch if len(last) == len(batch) else [batch[i] for i in sorted(last.values())]


class EmbeddingCache:
    """float16 vectors in SQLite, keyed by (model, text hash): content-addressed, so a text that
    several documents share is embedded once, and a replica finds the owner's vector from the
    text alone (the index hashes the tenant with it). Thread-safe (one connection, locked)."""

    def __init__(self, path: Path, model: str, dim: int):
        self.model, self.dim = model, dim
        self._lock = threading.Lock()
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        # 8 KiB pages hold a ~1 KB vector row in the leaf (measured for 100k vectors: 1.2 KB a
        # vector on disk, all read back in 0.23 s). A WITHOUT ROWID table on 4 KiB pages put
        # each row on overflow pages: 4.7 KB a vector and 1.2 s. Applies to a new file only.
        self._db.execute("PRAGMA page_size=8192")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=OFF")  # a cache: losing the last writes only costs re-embedding
        # "vectors", not the doc_id-keyed "embeddings" of before: an old file's rows are ignored
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, text_hash BLOB NOT NULL, "
            "vec BLOB NOT NULL, PRIMARY KEY (model, text_hash))"
        )

    def get(self, hashes: list[bytes]) -> dict[int, np.ndarray]:
        """Cached unit float32 vectors by position in ``hashes``."""
        want: dict[bytes, list[int]] = {}
        for i, h in enumerate(hashes):
            want.setdefault(h, []).append(i)
        found: dict[int, np.ndarray] = {}
        unique = list(want)
        with self._lock:
            for start in range(0, len(unique), _SQL_VARS):
                part = unique[start : start + _SQL_VARS]
                rows = self._db.execute(
                    f"SELECT text_hash, vec FROM vectors WHERE model = ? AND text_hash IN "
                    f"({','.join('?' * len(part))})", [self.model, *part]).fetchall()
                for h, blob in rows:
                    if len(blob) == 2 * self.dim:
                        vec = np.frombuffer(blob, dtype=np.float16)
                        for i in want[h]:
                            found[i] = vec
        if found:
            order = list(found)
            unit = normalize_rows(np.stack([found[i] for i in order]))
            found = dict(zip(order, unit, strict=True))
        return found

    def holds_any(self) -> bool:
        """Whether any vector of this model is cached (one indexed row read)."""
        with self._lock:
            row = self._db.execute("SELECT 1 FROM vectors WHERE model = ? LIMIT 1", [self.model]).fetchone()
        return row is not None

    def put(self, rows: list[tuple[bytes, np.ndarray]]) -> None:
        """Stores (text_hash, vector) rows in one transaction."""
        if not rows:
            return
        params = [(self.model, h, v.astype(np.float16).tobytes()) for h, v in rows]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", params)
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()


class RecentVectors:
    """The neural vectors of the last ``size`` distinct texts embedded, by text hash: a text
    repeated across a tenant's documents or steps is embedded once when there is no SQLite cache
    (with one, the vectors not flushed yet and the cache are the dedup: ``SemanticIndex._known_vectors``).

    Held as the cache holds them: float16 rows in one ``(size, dim)`` array, a hit given back as its
    unit float32 row, which is what ``EmbeddingCache.get`` gives for the same vector (so a text's
    vector does not depend on which of the two it came from). The rows were kept as views of the
    workers' float32 batches: the last 4,096 held 64 whole batches alive, 8 MB in every settled owner
    (80 B an event at 100k, docs/speed.md round fourteen); now 4 MB."""

    def __init__(self, size: int = RECENT_VECTORS):
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"RecentVectors: size must be an int >= 1, not {size!r}")
        self.size = size
        self._slots: OrderedDict[bytes, int] = OrderedDict()  # hash -> row; rows 0 .. len - 1 in use
        self._rows: np.ndarray | None = None  # (size, dim) float16, made at the first put

    def get(self, hashes: list[bytes]) -> dict[int, np.ndarray]:
        """Known vectors (unit float32 rows) by position in ``hashes``."""
        at: dict[int, int] = {}
        for i, h in enumerate(hashes):
            slot = self._slots.get(h)
            if slot is not None:
                at[i] = slot
                self._slots.move_to_end(h)
        if not at:
            return {}
        return dict(zip(at, normalize_rows(self._rows[list(at.values())]), strict=True))

    def put(self, hashes: list[bytes], vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors)
        if self._rows is None:
            self._rows = np.empty((self.size, vectors.shape[1]), dtype=np.float16)
        for h, v in zip(hashes, vectors, strict=True):
            slot = self._slots.pop(h, None)
            if slot is None:  # a new text takes the next free row, or the least recent text's
                slot = len(self._slots) if len(self._slots) < self.size else self._slots.popitem(last=False)[1]
            self._rows[slot] = v
            self._slots[h] = slot

    def __len__(self) -> int:
        return len(self._slots)


_VIEW_SEP = "\x1e"  # joins a query's joined text and a later view into one cache key


class QueryCache:
    """The unit vectors of the last ``size`` query texts, least recently used out. Thread-safe;
    the model runs outside the lock.

    ``texts`` is one query's views, the joined text first (``Query.semantic_views``). With an
    embedder that embeds views together (``embed_query_views``: an ensemble whose e5 member
    reads the joined text only), a later view's row depends on the joined text too, so it is
    kept under both; a miss embeds the query's views in one call."""

    def __init__(self, embedder: Embedder, size: int = QUERY_CACHE):
        self.embedder, self.size = embedder, size
        # only an embedder with a member that reads the joined text alone makes a view depend on it
        self._by_views = embedder.embed_query_views if any(getattr(embedder, "joined_only", ())) else None
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def _keys(self, texts: list[str]) -> list[str]:
        if self._by_views is None or len(texts) < 2:
            return texts
        return [texts[0], *(f"{texts[0]}{_VIEW_SEP}{t}" for t in texts[1:])]

    def cached(self, texts: list[str]) -> np.ndarray | None:
        """The texts' vectors when there are texts and every one is cached, else None."""
        keys = self._keys(texts)
        with self._lock:
            if not keys or not all(k in self._vectors for k in keys):
                return None
            for k in keys:
                self._vectors.move_to_end(k)
            return np.stack([self._vectors[k] for k in keys])

    def vectors(self, texts: list[str]) -> np.ndarray:
        """The texts' vectors, the missing ones from one embedder call (and kept)."""
        if not texts:
            return self.embedder.embed_queries([])
        keys = self._keys(texts)
        with self._lock:
            found = {k: self._vectors[k] for k in keys if k in self._vectors}
        if keys is not texts:  # views embedded together: any miss embeds them all
            if len(found) < len(keys):
                found.update(zip(keys, self._by_views(texts), strict=True))
        else:
            missing = list(dict.fromkeys(t for t in texts if t not in found))
            if missing:
                found.update(zip(missing, self.embedder.embed_queries(missing), strict=True))
        with self._lock:
            for k in keys:
                self._vectors[k] = found[k]
                self._vectors.move_to_end(k)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return np.stack([found[k] for k in keys])


class ItemQueue:
    """A tenant's items waiting for the neural tier, first in first out. Items that are only a
    number (``(doc_no, None, None)``: the owner reads the text when taken, ``text_of``) are held
    as runs in int64 arrays, 8 B each; other items as themselves. A deque of such tuples held
    ~100 B an item (the tuple, its int, the slot): at the end of a 100k import, with ~97,000
    queued, ~60 B an event of the owner's resident bytes (docs/speed.md, round eleven)."""

    def __init__(self):
        self._parts: deque = deque()  # np.ndarray (a run of numbers) or list[Item], oldest first
        self._head = 0  # items of the oldest part already taken
        self._len = 0

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __iter__(self):
        for i, part in enumerate(self._parts):
            yield from _as_items(part[self._head:] if i == 0 else part)

    def extend(self, items) -> None:
        """Queues items at the back, in order."""
        items = list(items)
        if items:
            self._parts.append(items)
            self._len += len(items)

    def extend_numbers(self, doc_nos) -> None:
        """Queues ``(doc_no, None, None)`` for each number, at the back, in order."""
        run = np.array(doc_nos, dtype=np.int64)  # a copy: the queue owns its runs
        if run.ndim != 1:
            raise ValueError(f"ItemQueue.extend_numbers: a 1-d run of doc numbers, not shape {run.shape}")
        if len(run):
            self._parts.append(run)
            self._len += len(run)

    def take(self, count: int) -> list[Item]:
        """Removes and returns the ``count`` oldest items (fewer if fewer are queued)."""
        out: list[Item] = []
        while len(out) < count and self._parts:
            part = self._parts[0]
            end = min(len(part), self._head + count - len(out))
            out.extend(_as_items(part[self._head:end]))
            if end == len(part):
                self._parts.popleft()
                self._head = 0
            else:
                self._head = end
        self._len -= len(out)
        return out

    def put_back(self, items: list[Item]) -> None:
        """Returns taken items to the front, in their order (a failed step's)."""
        if items:
            if self._head:  # the oldest part's taken items are dropped before a part goes in front of it
                self._parts[0] = self._parts[0][self._head:]
                self._head = 0
            self._parts.appendleft(list(items))
            self._len += len(items)


def _as_items(part) -> list[Item]:
    """A queue part as items: a run of numbers as ``(doc_no, None, None)``, a list as it is."""
    return [(no, None, None) for no in part.tolist()] if isinstance(part, np.ndarray) else part

@dataclass(eq=False)
class _Tenant:
    index: VectorIndex
    name: str = ""
    queue: ItemQueue = field(default_factory=ItemQueue)  # Items not yet taken for embedding
    waiting: list = field(default_factory=list)  # a replica's Items whose vector is not in the cache yet
    inflight: int = 0  # taken by a thread and being embedded
    seen: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # doc_nos ever added
    tier: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))  # by doc_no: 0, STATIC, NEURAL
    total: int = 0
    work_lock: threading.Lock = field(default_factory=threading.Lock)  # one embedding pass at a time
    mapped: bool = False  # index is a LayeredIndex over the owner's snapshot (recall.vector_snapshot)

    def requeue_waiting(self) -> None:
        """A replica's waiting items back in the queue (call with the index's ``_cond`` held)."""
        self.queue.extend(self.waiting)
        self.waiting = []


class SemanticIndex:
    """The semantic channel's per-tenant vector indexes, fed in the background.

    ``add`` never blocks on the model; ``search`` returns ``(doc_no, cosine)`` pairs, best first,
    from one tenant only. See the module docstring for the two tiers, read-your-writes and
    failure handling.

    ``static``: the fast tier's embedder (``recall.static``), run inside ``add``; its vectors live
    in the neural model's space, so they share the index and are replaced as neural vectors
    arrive. ``pool``: embedder worker processes (``recall.workers``) for the neural tier; None
    embeds on the background thread. ``neural=False`` keeps the fast tier only (nothing is queued
    for the model: measuring what the fast tier alone recalls). ``dialogue_pool``: the workers of the
    e5 dialogue tier when they are not ``pool`` (a following index's: it sends them e5 batches only).
    """

    def __init__(self, embedder: Embedder, cache_path: Path | None = None, *, inline_limit: int = 256,
                 follow: bool = False, static: Embedder | None = None, pool=None, neural: bool = True,
                 graph_threads: int = 1, dialogue_pool=None):
        if follow and cache_path is None:
            raise ValueError("a following index reads its vectors from the owner's cache: give cache_path")
        if static is not None and static.dim != embedder.dim:
            raise ValueError(f"the static tier must live in the model's space: {static.dim} != {embedder.dim} dims")
        self.embedder = embedder
        self.static = static
        self.pool = pool
        self.neural = neural
        self.window = window_of(embedder)
        # a brain whose only model is the static table calls its vectors static too
        self._neural_tier = "static" if embedder.name.startswith("static") else "neural"
        self.follow = follow  # vectors come only from the cache, written by another process
        self.graph_threads = graph_threads  # usearch insertion threads of the background graph build
        self.inline_limit = inline_limit
        self.upgrade_limit = UPGRADE_LIMIT  # 0: a recall never embeds (the fast tier alone until the workers)
        # (tenant, doc_no) → the text a document was added with, when its owner keeps the texts (a
        # ``RecallIndex`` sets it): the neural tier's queue then holds numbers, not texts. At 100k
        # events with the model far behind, queued texts held ~330 B an event (the string, its UTF-8
        # copy, the item): most of what was left above 3 kB (design.md §issue-28, point 3).
        self.text_of = None
        # (tenant, doc_nos) → the dialogue-kind ones among them and their texts as added: the e5 tier's
        # filter (recall.e5_dialogue), set by the owner of the documents like ``text_of``
        self.dialogue_texts = None
        self.last_error: BaseException | None = None
        self.failures = 0
        self._cache = EmbeddingCache(cache_path, embedder.name, embedder.dim) if cache_path is not None else None
        # with a cache: the vectors embedded and not yet written to it, as float16 rows by text hash (the
        # cache's own form); they and the cache are the dedup, so no RecentVectors is kept (_known_vectors)
        self._unflushed: dict[bytes, np.ndarray] = {}
        self._tenants: dict[str, _Tenant] = {}
        self._cond = threading.Condition()  # guards _tenants, queues, counts and the flags below
        self._stalled = False  # the last background pass failed; wait for an add or a search
        self._retried_at = 0.0  # monotonic time of a replica's last recheck of its waiting items
        self._closed = False
        self._imports = BulkCalls(self._cond, BULK_LINGER_S)  # bulk imports (``importing``): the thread yields to them
        self._built_since_trim = 0  # vectors put in a graph since the last heap trim
        self.mapped_docs = 0  # documents whose vector came from the owner's snapshot (a replica)
        self._queries = QueryCache(embedder)
        self._recent = RecentVectors() if self._cache is None else None
        self._query_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hindbrain-query")
        # e5 for dialogue-form queries and dialogue-kind memories (recall.e5_dialogue): with USE as the
        # model only, whose cosines its trees were fitted to mix with; its query runs on a thread of its
        # own, beside USE's views (ORT drops the GIL), so a dialogue recall's wall time does not add up
        self.dialogue = e5_dialogue.vectors_beside(embedder, cache_path, dialogue_pool or pool)
        self._e5_pool = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="hindbrain-e5")
                         if self.dialogue is not None else None)
        if self.dialogue is not None and self.dialogue.asked_before():
            # a home whose dialogues were asked before: e5 loads now, beside the open, not beside the first
            # dialogue recalls (its loader holds the GIL in C calls for 0.6-2 s: docs/speed.md, round twenty)
            e5_dialogue.load_in_background()
        self._thread = threading.Thread(target=self._run, name="hindbrain-semantic", daemon=True)
        self._thread.start()

    # -- writing ----------------------------------------------------------------------------
    def add(self, tenant: str, items: list[Item]) -> None:
        """Gives ``(doc_no, doc_id, text)`` items their fast-tier vector (when there is a static
        tier) and queues them for the neural model; never waits for the model."""
        with self._cond:
            t = self._open_tenant(tenant)
        if items and self.dialogue is not None:  # the e5 tier's queue (a re-added document's old vector dropped)
            self.dialogue.queue(tenant, (no for no, _, _ in items))
        if items and t.mapped:  # a replica: what the owner's snapshot holds is neither embedded nor rebuilt
            items = self._from_snapshot(t, items)
        if items and self.static is not None:  # before queueing: a neural vector must never be overwritten by it
            self._add_static(t, items)
        with self._cond:
            if items:
                if self.neural:
                    # with ``text_of`` the queue holds numbers only: not the text, nor the id (nothing
                    # downstream reads a queued item's id, and holding it kept every id string of an
                    # import alive until its neural vector: ~85 B an event, recall.id_numbers)
                    if self.text_of is None:
                        t.queue.extend(items)
                    else:
                        t.queue.extend_numbers([no for no, _, _ in items])
                self._mark_seen(t, [doc_no for doc_no, _, _ in items])
            self._stalled = False
            self._cond.notify_all()

    def _from_snapshot(self, t: _Tenant, items: list[Item]) -> list[Item]:
        """Links the items the mapped snapshot holds (same document, same text) to its vectors
        and returns the others. A linked item is not embedded; unless its mapped vector is
        already the neural one, it is queued for the neural tier (the owner's cache) as usual."""
        from hindbrain.recall.vector_snapshot import doc_hashes

        keys = np.fromiter((doc_no for doc_no, _, _ in items), dtype=np.int64, count=len(items))
        found, tier = t.index.match(keys, doc_hashes((doc_id, capped(text, self.window))
                                                     for _, doc_id, text in items))
        if not found.any():
            return items
        with_vector = found & (tier > 0)
        for code in (STATIC, NEURAL):
            if (tier[with_vector] == code).any():
                self._set_tier(t, keys[with_vector & (tier == code)], code)
        with self._cond:
            if self.neural:
                t.queue.extend(items[i] for i in np.flatnonzero(found & (tier != NEURAL)).tolist())
            self._mark_seen(t, keys[found].tolist())
            self.mapped_docs += int(np.count_nonzero(found))
        return [items[i] for i in np.flatnonzero(~found).tolist()]

    def attach(self, snapshot) -> None:
        """Maps the owner's vectors (a ``recall.vector_snapshot.Snapshot``): each tenant's index
        becomes a ``LayeredIndex`` over the mapped one. Call before anything is added."""
        from hindbrain.recall.vector_snapshot import LayeredIndex

        with self._cond:
            if self._tenants:
                raise RuntimeError("attach a vector snapshot before adding documents")
            for name, mapped in snapshot.tenants.items():
                self._tenants[name] = _Tenant(LayeredIndex(mapped), name, mapped=True)

    def restored(self, tenant: str, index: VectorIndex | None, tier: np.ndarray, count: int, pending) -> None:
        """A tenant whose documents ``0 .. count - 1`` were restored from a snapshot
        (``recall.index_snapshot``), numbered as when its vectors were saved: ``index`` holds
        those vectors (the owner's own, loaded), or None for the ``LayeredIndex`` ``attach``
        made (a replica: linked one to one). ``tier``: the saved tier of each. The documents not
        on the neural tier are queued for it (``pending(doc_nos)`` gives their items), as when folded."""
        with self._cond:
            if index is None:
                t = self._tenants[tenant]
                t.index.link_all(count)
                self.mapped_docs += count
            else:
                if tenant in self._tenants:
                    raise RuntimeError(f"tenant {tenant!r} has vectors already: restore before adding")
                t = self._tenants[tenant] = _Tenant(index, tenant)
            t.tier = np.zeros(max(count, len(tier)), dtype=np.int8)
            t.tier[: len(tier)] = tier
            t.seen = np.ones(count, dtype=bool)
            t.total = count
        if self.dialogue is not None:  # the e5 tier is no part of a snapshot: rebuilt (mostly from the cache)
            self.dialogue.queue(tenant, range(count))
        todo = np.flatnonzero(t.tier[:count] != NEURAL)
        if self.neural and len(todo):
            items = pending(todo)
            with self._cond:
                t.queue.extend(items)
        with self._cond:
            self._cond.notify_all()

    def tenant_vectors(self) -> list[tuple[str, VectorIndex, np.ndarray]]:
        """Each tenant's name, vector index and tier by doc_no (a copy): what a snapshot saves."""
        with self._cond:
            return [(t.name, t.index, t.tier.copy()) for t in self._tenants.values() if not t.mapped]

    def neural_total(self) -> int:
        """Documents over all tenants whose vector is the neural model's."""
        with self._cond:
            return sum(int(np.count_nonzero(t.tier == NEURAL)) for t in self._tenants.values())

    def vector_count(self) -> int:
        """Vectors held over all tenants."""
        with self._cond:
            indexes = [t.index for t in self._tenants.values()]
        return sum(len(ix) for ix in indexes)

    def _add_static(self, t: _Tenant, items: list[Item]) -> None:
        """The fast tier: static vectors of the capped texts, searchable at once. A text with
        no known token gets none (it stays lexical until its neural vector)."""
        texts = [capped(text, self.window) for _, _, text in items]
        keys = np.fromiter((doc_no for doc_no, _, _ in items), dtype=np.int64, count=len(items))
        if hasattr(self.static, "embed_codes") and t.index.takes_codes():
            # graph mode keeps int8 codes only: the static table makes them without float rows (the
            # same codes ``add`` would make of its unit rows; ~2.5 µs an event less, docs/speed.md)
            codes, known = self.static.embed_codes(texts)
            keys, codes = _known(known, keys, codes)
            t.index.add_codes(keys, codes, defer_graph=True)
        else:
            vecs = self.static.embed_passages(texts)
            keys, vecs = _known(np.any(vecs != 0, axis=1), keys, vecs)
            # an embedder that says its rows are unit already (the static table's: StaticEmbedder.unit_rows)
            # is not scaled again for the int8 codes (VectorIndex.add)
            t.index.add(keys, vecs, defer_graph=True, unit=getattr(self.static, "unit_rows", False))
        if len(keys):
            self._set_tier(t, keys, STATIC)

    def _set_tier(self, t: _Tenant, keys: np.ndarray, tier: int) -> None:
        with self._cond:
            if len(t.tier) <= keys.max():
                grown = np.zeros(max(int(keys.max()) + 1, 2 * len(t.tier)), dtype=np.int8)
                grown[: len(t.tier)] = t.tier
                t.tier = grown
            t.tier[keys] = tier

    def tiers(self, tenant: str, doc_nos: list[int]) -> list[str | None]:
        """Which tier made each document's current vector: ``"static"`` (the fast tier, until the
        model's vector arrives), ``"neural"``, or None (no vector)."""
        with self._cond:
            t = self._tenants.get(tenant)
            tier = t.tier if t is not None else np.zeros(0, dtype=np.int8)
        names = {STATIC: "static", NEURAL: self._neural_tier}
        return [names.get(int(tier[no])) if no < len(tier) else None for no in doc_nos]

    def neural_count(self, tenant: str) -> int:
        """Documents of the tenant whose vector is the neural model's (the lagging tier's progress)."""
        with self._cond:
            t = self._tenants.get(tenant)
            return 0 if t is None else int(np.count_nonzero(t.tier == NEURAL))

    def model_of(self, tier: str | None) -> str:
        """The name of the model behind a tier's vectors."""
        return self.static.name if tier == "static" and self.static is not None else self.embedder.name

    def add_vectors(self, tenant: str, doc_nos: np.ndarray, vectors: np.ndarray) -> None:
        """Indexes precomputed vectors (one per doc_no, ``embedder.dim`` wide) without the
        model: embeddings a user already has, or a benchmark's. The background thread then
        absorbs them into the graph; they are searchable at once."""
        keys = np.asarray(doc_nos, dtype=np.int64)
        with self._cond:
            t = self._open_tenant(tenant)
            if len(keys):
                self._mark_seen(t, keys.tolist())
        t.index.add(keys, normalize_rows(np.asarray(vectors, dtype=np.float32)), defer_graph=True)
        if len(keys):
            self._set_tier(t, keys, NEURAL)
        with self._cond:
            self._cond.notify_all()

    def _open_tenant(self, tenant: str) -> _Tenant:
        """The tenant's vectors, created on first use; call with ``_cond`` held."""
        if self._closed:
            raise RuntimeError("SemanticIndex is closed")
        t = self._tenants.get(tenant)
        if t is None:
            t = self._tenants[tenant] = _Tenant(VectorIndex(self.embedder.dim), tenant)
        return t

    @staticmethod
    def _mark_seen(t: _Tenant, doc_nos: list[int]) -> None:
        keys = np.asarray(doc_nos, dtype=np.int64)
        if len(t.seen) <= keys.max():
            grown = np.zeros(max(int(keys.max()) + 1, 2 * len(t.seen)), dtype=bool)
            grown[: len(t.seen)] = t.seen
            t.seen = grown
        fresh = sorted_sets.unique(keys[~t.seen[keys]])
        t.seen[fresh] = True
        t.total += len(fresh)

    # -- reading ----------------------------------------------------------------------------
    def warm(self) -> None:
        """Load the query model and the static table now: they load lazily (USE: ~0.8 s, the
        table ~1 s: it is expanded to the model's width), and a server's first recall (each
        replica's, which embeds no passage) paid for it while 50 agents queued behind it."""
        self.embedder.embed_queries(["warm-up"])
        if self.static is not None:
            self.static.embed_passages(["warm-up"])

    def embed_query(self, text: str) -> np.ndarray:
        """The unit query vector of ``text`` (float32, ``embedder.dim``)."""
        return self.embedder.embed_queries([text])[0]

    def search(self, tenant: str, query_vec: np.ndarray, k: int,
               allowed: np.ndarray | None = None) -> list[tuple[int, float]]:
        """``(doc_no, cosine)`` of the tenant's ``k`` nearest documents, best first.

        Embeds the tenant's queued texts first when there are at most ``inline_limit`` (an
        embedder failure there is recorded like a background one, and the search goes on over
        what is indexed). ``allowed`` is a bool mask by doc_no. Unknown tenant: ``[]``.
        """
        with self._cond:
            t = self._tenants.get(tenant)
            if t is None:
                return []
            backlog = len(t.queue) + t.inflight + len(t.waiting)
            if self._stalled:
                self._stalled = False  # a search is a retry signal too
                self._cond.notify_all()
        if 0 < backlog <= self.inline_limit:
            try:
                self._process(t, everything=True)
            except Exception as exc:  # keep serving; the items stay queued
                self._record(exc)
        keys, sims = t.index.search(query_vec, k, allowed)
        return list(zip(keys.tolist(), sims.tolist(), strict=True))

    def upgrade(self, tenant: str, doc_nos: list[int], text_of, limit: int | None = None) -> int:
        """Gives the first ``limit`` of ``doc_nos`` (a recall's candidates, best first) that still
        carry their static vector the neural one now, on the calling thread, with the model the
        process holds for its queries; returns how many. ``text_of(doc_no)`` is the document's
        ``(doc_id, text)``, asked only of those. Read-your-writes for the neural tier,
        bounded: the candidates a recall ranks are scored in the model's space even while the
        worker processes lag (a bulk import, their start), at most ``limit`` (``upgrade_limit``)
        short texts per recall (``UPGRADE_*``), and each text once: the background pass later
        finds it in the recent vectors instead of embedding it again. A failure is recorded like a
        background one and the recall goes on with the static vectors. A following index (a
        recall replica, a brain fed by the Kafka embedder group) never embeds here: its vectors
        are the owner's or the fleet's to make, once."""
        limit = self.upgrade_limit if limit is None else limit
        if self.static is None or not self.neural or self.follow or limit <= 0 or not doc_nos:
            return 0
        with self._cond:
            t = self._tenants.get(tenant)
            tier = t.tier if t is not None else None
        if tier is None:
            return 0
        todo, chars = [], 0
        for no in doc_nos:
            if no >= len(tier) or tier[no] != STATIC:
                continue
            doc_id, text = text_of(no)
            if len(text) > UPGRADE_TEXT_CHARS:
                continue
            if len(todo) == limit or chars + len(text) > UPGRADE_CHARS:
                break
            todo.append((no, doc_id, text))
            chars += len(text)
        if not todo:
            return 0
        try:
            self._index_batch(t, todo, inline=True)
        except Exception as exc:  # keep serving on the static vectors; the items stay queued
            self._record(exc)
            return 0
        return len(todo)

    def cosines(self, tenant: str, doc_nos: list[int], query_vecs: np.ndarray) -> np.ndarray:
        """``len(doc_nos) × len(query_vecs)`` cosines of the tenant's documents to the query
        views; NaN where a document has no vector yet (call after ``search``, which embeds a
        small backlog first)."""
        with self._cond:
            t = self._tenants.get(tenant)
        if t is None:
            return np.full((len(doc_nos), len(query_vecs)), np.nan, dtype=np.float32)
        return t.index.cosines(np.asarray(doc_nos, dtype=np.int64), query_vecs)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        """Unit query vectors of ``texts``: cached ones from the query cache (an agent loop
        asks about the same situation again and again), the others in one embedder call."""
        return self._queries.vectors(texts)

    def embed_queries_async(self, texts: list[str]) -> Future:
        """``embed_queries`` on the query thread: the model's matrix products release the GIL,
        so the recall's lexical search runs meanwhile. ``result()`` is the array."""
        cached = self._queries.cached(texts)
        if cached is not None:  # no thread hop for a hit
            done: Future = Future()
            done.set_result(cached)
            return done
        return self._query_pool.submit(self._queries.vectors, texts)

    def want_dialogue(self, tenant: str) -> None:
        """A dialogue-form query asked of ``tenant``: its dialogue-kind memories join the e5 tier
        (``e5_dialogue.DialogueVectors.want``); the background thread is woken to fill them, and the
        memory pass loads here on a thread of its own (what a recall's inline budget makes vectors with:
        no recall waits for the load)."""
        def count() -> int:
            with self._cond:
                t = self._tenants.get(tenant)
                return t.total if t is not None else 0

        if self.dialogue.want(tenant, count):  # the first time only: a recall wakes nobody
            e5_dialogue.load_in_background()
            with self._cond:
                self._cond.notify_all()

    def wait_dialogue(self, timeout: float | None = None) -> bool:
        """Blocks until the e5 tier has made every wanted tenant's vectors and e5's query pass is loaded
        (``wait`` first, but for a following index: the tier lags USE's); False on timeout or a stalled
        background thread."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self.follow and not self.wait(timeout):  # a following index's USE vectors are the owner's
            return False
        loads = e5_dialogue.loading.is_set()  # the passes a want started loading: a recall reads e5 after
        while self.dialogue is not None and not (self.dialogue.settled() and (e5_dialogue.query_ready() or not loads)):
            with self._cond:
                if self._stalled or self._closed:
                    return False
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.02)
        return True

    def dialogue_query_async(self, cue: str) -> Future:
        """e5's vector of a dialogue's cue (``QueryViews.cue``, ``e5_dialogue.query_vector``) on the e5 thread."""
        return self._e5_pool.submit(e5_dialogue.query_vector, cue)

    def pending(self, tenant: str | None = None) -> int:
        """Items added but not yet searchable, for one tenant or all."""
        with self._cond:
            tenants = self._tenants.values() if tenant is None else filter(None, [self._tenants.get(tenant)])
            return sum(len(t.queue) + t.inflight + len(t.waiting) for t in tenants)

    def coverage(self, tenant: str) -> tuple[int, int]:
        """(documents with a vector, distinct documents added) for the tenant."""
        with self._cond:
            t = self._tenants.get(tenant)
            return (0, 0) if t is None else (len(t.index), t.total)

    def memory_bytes(self) -> int:
        """Bytes held by the tenants' vector indexes and e5 dialogue vectors (queued texts not counted)."""
        with self._cond:
            indexes = [t.index for t in self._tenants.values()]
        return sum(ix.memory_bytes() for ix in indexes) + (self.dialogue.memory_bytes() if self.dialogue else 0)

    # -- lifecycle --------------------------------------------------------------------------
    def unbuilt(self) -> int:
        """Vectors searchable by exact scan but not yet in their tenant's graph (a bulk load
        is slower to search until the background thread has absorbed them)."""
        with self._cond:
            return sum(t.index.unbuilt for t in self._tenants.values())

    def settled(self) -> bool:
        """Nothing queued or being embedded, and every vector in its tenant's graph (a
        replica's documents waiting for the owner's vectors aside): searches are at full speed."""
        with self._cond:
            return not any(t.queue or t.inflight or t.index.unbuilt for t in self._tenants.values())

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until every queued item is searchable; False on timeout, or at once if the
        background thread is stalled on an error (see ``last_error``)."""
        with self._cond:
            # items being embedded count as in flight, so the backlog never reads 0 too early
            done = self._cond.wait_for(lambda: self._stalled or self._closed or self._backlog() == 0, timeout)
            return done and self._backlog() == 0

    def close(self) -> None:
        """Stops the background thread and flushes the cache. Queued items are dropped (they
        are rebuilt from the documents on the next open)."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        self._query_pool.shutdown()
        if self.dialogue is not None:
            self._e5_pool.shutdown()
            self.dialogue.close()
        if self.pool is not None and getattr(self.pool, "owned", True):
            self.pool.close()
        if self._cache is not None:
            try:
                self._flush_cache()
            finally:
                self._cache.close()

    def __enter__(self) -> SemanticIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the background thread --------------------------------------------------------------
    @contextmanager
    def importing(self, events: int):
        """The block a perceive call of ``events`` events runs in: a bulk import (``BULK_EVENTS`` or
        more) holds the background thread's next step back until it ends (at most ``BULK_YIELD_S``)."""
        if events < BULK_EVENTS:
            yield
            return
        with self._cond:
            self._imports.begin()
        try:
            yield
        finally:
            with self._cond:
                self._imports.end()

    def _yield_to_imports(self) -> None:
        """Waits (``_cond`` held) while a bulk import runs or ended less than ``BULK_LINGER_S`` ago,
        at most ``BULK_YIELD_S`` in all (``importing``)."""
        until = time.monotonic() + BULK_YIELD_S
        while not self._closed:
            now = time.monotonic()
            quiet_in = self._imports.quiet_in(now)
            if now >= until or quiet_in == 0:
                return
            self._cond.wait(until - now if quiet_in is None else min(until - now, quiet_in))

    def _rounds_yielding(self, chunks: list[list[str]]):
        """The pool's vectors of ``chunks``, a round of its workers at a time, the background thread
        yielding to a bulk import before each round (``importing``)."""
        step = getattr(self.pool, "workers", 1)
        for start in range(0, len(chunks), step):
            with self._cond:
                self._yield_to_imports()
            yield from self.pool.embed_many(chunks[start : start + step])

    def _backlog(self) -> int:
        return sum(len(t.queue) + t.inflight + len(t.waiting) for t in self._tenants.values())

    def _run(self) -> None:
        while True:
            with self._cond:
                waiting = any(t.waiting for t in self._tenants.values())
                self._cond.wait_for(lambda: self._closed or (not self._stalled and self._has_work()),
                                    FOLLOW_RETRY_S if waiting else None)
                self._yield_to_imports()  # a bulk import runs: its caller's caches and memory bus first
                if self._closed:
                    return
                if waiting and time.monotonic() - self._retried_at >= FOLLOW_RETRY_S:
                    self._retried_at = time.monotonic()  # a replica's misses: look for the owner's vectors again
                    for t in self._tenants.values():
                        t.requeue_waiting()
                queued = [t for t in self._tenants.values() if t.queue]
                building = [t for t in self._tenants.values() if t.index.unbuilt]
            try:
                if queued:
                    for t in queued:  # one step per tenant per round: no tenant starves the others
                        self._process(t, everything=False)
                    if len(self._unflushed) >= _FLUSH:
                        self._flush_cache()
                elif self._dialogue_due():
                    self.dialogue.step(self.dialogue_texts)  # after USE's queue: the e5 tier lags it
                else:
                    self._flush_cache()
                    for t in building:
                        before = t.index.unbuilt
                        self._built_since_trim += max(0, before - t.index.build_graph(_GRAPH_STEP * self.graph_threads,
                                                                                   threads=self.graph_threads))
                    if self._built_since_trim >= TRIM_AFTER and not any(t.index.unbuilt for t in building):
                        # settled after a bulk: the embedding's and the graph's temporaries are free
                        # now, but resident until asked (hindbrain.heap_trim; ~110 B an event at 25k)
                        self._built_since_trim = 0
                        release_free_heap()
            except Exception as exc:
                self._record(exc)
                with self._cond:
                    self._stalled = True
                    self._cond.notify_all()

    def _has_work(self) -> bool:
        return (any(t.queue or t.index.unbuilt for t in self._tenants.values()) or bool(self._unflushed)
                or self._dialogue_due())

    def _dialogue_due(self) -> bool:
        """Whether the e5 tier has documents queued for the background thread to embed."""
        return self.dialogue is not None and self.dialogue_texts is not None and self.dialogue.queued() > 0

    def _process(self, t: _Tenant, *, everything: bool) -> None:
        """Embeds queued items of one tenant: all of them (an inline search) or one step (the
        background thread: up to ``_LOOKUP`` items with a cache, ``BATCH`` without). On an
        exception the step's items go back to the front of the queue, in order, and the
        exception propagates."""
        step = _LOOKUP if self._cache is not None else BATCH
        with t.work_lock:
            if everything and t.waiting:  # a replica's search: what waits for the owner is embedded here
                with self._cond:
                    t.requeue_waiting()
            while True:
                with self._cond:
                    take = len(t.queue) if everything else min(len(t.queue), step)
                    batch = t.queue.take(take)
                    t.inflight += len(batch)
                if not batch:
                    return
                try:
                    self._index_batch(t, latest(self._with_texts(t, batch)), inline=everything)
                except BaseException:
                    with self._cond:
                        t.queue.put_back(batch)
                        t.inflight -= len(batch)
                    raise
                with self._cond:
                    t.inflight -= len(batch)
                    self._cond.notify_all()
                if not everything:
                    return

    def _with_texts(self, t: _Tenant, batch: list[Item]) -> list[Item]:
        """The batch with every text read (``text_of``) where the queue held only the number."""
        if all(text is not None for _, _, text in batch):
            return batch
        return [(no, doc_id, self.text_of(t.name, no) if text is None else text) for no, doc_id, text in batch]

    def _index_batch(self, t: _Tenant, batch: list[Item], inline: bool = False) -> None:
        """Adds the cache hits of ``batch`` and embeds the misses: each distinct capped text
        once (deduped by its hash), ``BATCH`` texts per call, spread over the worker processes
        when there is a pool. A replica's background pass leaves its misses waiting for the
        owner's cache; its search embeds a small backlog inline like the owner's (the same
        answers wherever an agent's recall lands: read-your-writes)."""
        texts = [capped(text, self.window) for _, _, text in batch]
        hashes = [content_key(t.name, text) for text in texts]
        cached = self._known_vectors(hashes)
        if cached:
            hits = sorted(cached)
            self._store_neural(t, [batch[i][0] for i in hits], np.stack([cached[i] for i in hits]))
        misses = [i for i in range(len(batch)) if i not in cached]
        if self.follow and not inline:  # the owner embeds them; wait for its cache
            with self._cond:
                t.waiting.extend(batch[i] for i in misses)
            return
        by_hash: dict[bytes, list[int]] = {}
        for i in misses:
            by_hash.setdefault(hashes[i], []).append(i)
        firsts = [rows[0] for rows in by_hash.values()]
        chunks = [[texts[i] for i in firsts[s : s + BATCH]] for s in range(0, len(firsts), BATCH)]
        if self.pool is not None and not inline:
            embedded = self._rounds_yielding(chunks)
        else:
            embedded = (self.embedder.embed_passages(chunk) for chunk in chunks)
        for n, vecs in enumerate(embedded):
            part = firsts[n * BATCH : n * BATCH + len(vecs)]
            rows = [j for i in part for j in by_hash[hashes[i]]]
            self._store_neural(t, [batch[j][0] for j in rows],
                               np.repeat(vecs, [len(by_hash[hashes[i]]) for i in part], axis=0))
            if self._cache is None:
                self._recent.put([hashes[i] for i in part], vecs)
            else:
                with self._cond:
                    self._unflushed.update(zip([hashes[i] for i in part], np.asarray(vecs, dtype=np.float16),
                                               strict=True))

    def _known_vectors(self, hashes: list[bytes]) -> dict[int, np.ndarray]:
        """The unit float32 vectors of texts embedded before, by position in ``hashes``. Without a cache,
        from ``RecentVectors``; with one, from the vectors not flushed to it yet, then from the cache: what
        the cache holds need not be kept twice (the last 4,096 recent vectors were 4 MB in every owner, ~44
        B an event at 100k, docs/speed.md round fifteen). Both give a text's vector as the cache does."""
        if self._cache is None:
            return self._recent.get(hashes)
        with self._cond:
            pending = {i: self._unflushed[h] for i, h in enumerate(hashes) if h in self._unflushed}
        found = dict(zip(pending, normalize_rows(np.stack(list(pending.values()))), strict=True)) if pending else {}
        rest = [i for i in range(len(hashes)) if i not in found]
        if rest:
            found.update((rest[j], v) for j, v in self._cache.get([hashes[i] for i in rest]).items())
        return found

    def _store_neural(self, t: _Tenant, doc_nos: list[int], vecs: np.ndarray) -> None:
        keys = np.asarray(doc_nos, dtype=np.int64)
        t.index.add(keys, vecs, defer_graph=True)
        self._set_tier(t, keys, NEURAL)

    def _flush_cache(self) -> None:
        with self._cond:
            rows, self._unflushed = list(self._unflushed.items()), {}
        if rows and self._cache is not None:
            try:
                self._cache.put(rows)
            except Exception:
                with self._cond:
                    self._unflushed = {**dict(rows), **self._unflushed}
                raise

    def _record(self, exc: BaseException) -> None:
        with self._cond:
            self.last_error = exc
            self.failures += 1
            self._cond.notify_all()
