"""The owner's vectors on disk, mapped by recall replicas instead of rebuilt (design.md §issue-28, point 4).

A replica used to rebuild every tenant's ``VectorIndex`` at start: it folded the log, gave each
document its static vector (the fast tier: model calls), took each neural vector from the
owner's embedding cache, and then built the HNSW graph again (~50 s for 100k vectors on one
core here, ~7 min for 1M), searching by exact scan, slower, until it had. The owner had all of
that already.

**Writing (the owner).** ``write_snapshot`` saves each tenant's index (``VectorIndex.save``:
the int8 codes or float16 rows, the per-key state, the usearch graph), the tier of each vector
(static or neural) and a *key map*: for each of the owner's document numbers, an 8-byte hash
of the document id and the text its vector was made from. The files go to a fresh
``gen-*`` folder (``recall.snapshot_files``: a manifest naming each file's size and CRC-32 and
the log offset it covers, renamed into place, ``CURRENT`` swapped, the previous generation kept). ``Checkpoints`` writes
one every ``INTERVAL_S`` while the vectors grew by ``GROWTH`` since the last, and the brain
writes one when it closes.

**Mapping (a replica).** ``open_snapshot`` checks the manifest (the model, its width and
window, the offset not beyond the log's end) and every file's size and CRC-32 (a truncated or
corrupt file is named and refused: the replica then rebuilds, as before, saying why), then
maps each tenant read-only (``VectorIndex.mapped``: ``np.memmap`` and usearch ``view``;
replicas of one owner share those pages). Nothing is embedded or rebuilt.

**With the read model** (``recall.index_snapshot``, in the same generation): the replica
restores the documents under the owner's numbers and links them to these vectors one to one
(``LayeredIndex.link_all``); only the log after the snapshot is folded.
**Without it** (a snapshot of vectors only, or the index part refused): the replica folds the
whole log, and as documents arrive, ``SemanticIndex.add`` looks each up in the key map
by (document id, capped text). A hit takes the owner's vector and tier: no static embedding, a
neural vector already there is not looked up again, a static one is queued for the owner's
cache as before. A miss (a document after the snapshot, or whose text differs) is embedded as
any new document is. The owner's and the replica's document numbers differ (the owner loads its
index from the views, table by table; a replica folds the log in order), so results are
translated through the key map (``LayeredIndex``); a document re-embedded after the snapshot
(its neural vector replacing the static one) lives in a small writable index layered over the
mapped one and hides the mapped vector.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import threading
import time
from collections import namedtuple
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from hindbrain.recall.documents import Doc, semantic_text
from hindbrain.recall.semantic import NEURAL, STATIC, capped
from hindbrain.recall.snapshot_files import (
    SnapshotRefused,
    current_manifest,
    new_generation,
    open_generation,
    seal,
)
from hindbrain.recall.vectors import VectorIndex, allowed_mask, top_k

VERSION = 2  # 2: exact-mode rows are float16 (``stem.f16``), not float32
INTERVAL_S = 60.0  # a checkpoint is considered this often
GROWTH = 0.10  # ... and written when the vectors (or the folded log) grew by this fraction since the last one
MIN_GROWTH = 1_000  # ... and by at least this many
KEPT_MASKS = 4  # base masks a layered index keeps (``LayeredIndex._base_mask``): one per agent recalling lately


# a packed document row's values by field name, as ``semantic_text`` reads them (no decoding:
# the fields it reads are strings as stored)
_RowDoc = namedtuple("_RowDoc", [f.name for f in dataclasses.fields(Doc)])


def doc_hash(doc_id: str, capped_text: str) -> int:
    """The key map's key: a mapped vector is taken only for the document *and* the text it was
    made from (as a signed int64, numpy's native sort order)."""
    digest = hashlib.blake2b(f"{doc_id}\x1f{capped_text}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def doc_hashes(pairs) -> np.ndarray:
    """``doc_hash`` of each ``(doc_id, capped_text)``, as an int64 array."""
    return np.fromiter((doc_hash(d, t) for d, t in pairs), dtype=np.int64)


# -- writing (the owner) ----------------------------------------------------------------------
def write_snapshot(index, directory: Path, offset, writer_lock=None) -> Path | None:
    """Saves ``index`` (a ``RecallIndex``) under ``directory`` as a new generation and makes it
    current; returns its folder. Two parts, one cut: the semantic vectors (below; none for a
    lexical-only index) and the rest of the read model (``recall.index_snapshot``: the lexical
    index, the document table, counters, beliefs). ``offset`` (an int or a callable giving one)
    is the log's end; the snapshot covers the log up to the smaller of it and what the index
    has folded (``RecallIndex.folded``), read while no record is being folded, so a reader
    folds the log from exactly there. The callable returns None while a group commit is open
    (its records may yet roll back): nothing is written then (None).

    ``writer_lock`` is the log writer's lock (``SqliteLog.lock``), taken before the fold lock:
    the writer folds its records into the index while holding its own lock, so taking them in
    the other order deadlocks against a group commit (a close waiting on the log's end while
    the commit waits to fold)."""
    from hindbrain.recall import index_snapshot

    if index.diverged:
        raise RuntimeError("the recall index holds records the log rolled back: it is not saved as a fold of the log")
    tmp = new_generation(directory)
    try:
        # records wait (seconds at 1M documents): the files are one cut of the fold
        with writer_lock if writer_lock is not None else nullcontext(), index.fold_lock:
            end = offset() if callable(offset) else offset
            if end is None:  # a group commit is open: what the index folded of it may yet roll back
                shutil.rmtree(tmp, ignore_errors=True)
                return None
            covered = min(int(end), index.folded)
            manifest = {"version": VERSION, "offset": covered, "written_at": time.time(), "vectors": 0,
                        "neural": 0, "unbuilt": 0, "tenants": []}
            counts = {}
            manifest["index"] = index_snapshot.write_index(index, tmp, counts)
            saved: list[tuple] = []
            if index.semantic is not None:
                manifest.update(write_vectors(index, tmp, counts, saved))
        # after the locks (records flow again): nodes of the saved graphs no search reaches are
        # written unbuilt, so a replica scans them (recall.graph_check; seconds at 1M vectors).
        # Counted apart from "unbuilt", which says the graphs were still building: counting them
        # there would make every checkpoint and close write the snapshot again (Checkpoints.due,
        # write_if_changed), and near-duplicates can come out unreachable again each time.
        manifest["lost"] = 0
        for vectors, stem, entry in saved:
            entry["index"]["lost"] = vectors.check_saved(stem)
            manifest["lost"] += entry["index"]["lost"]
        folder = seal(tmp, manifest)
        for vectors, _, _ in saved:  # the sealed files: an unchanged graph's masked searches walk them in C
            vectors.walk_saved(folder)
        return folder
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_vectors(index, folder: Path, counts: dict[str, int], saved: list | None = None) -> dict:
    """Writes each tenant's vectors into ``folder``; returns the manifest's vector fields.
    ``counts``: each tenant's documents in the saved document table (its key map covers those).
    ``saved`` gets ``(vectors, stem, manifest entry)`` of each tenant (``VectorIndex.check_saved``)."""
    semantic = index.semantic
    tenants = []
    for n, (tenant, vectors, tier) in enumerate(semantic.tenant_vectors()):
        stem = folder / f"t{n}"
        meta = vectors.save(stem)
        state = np.fromfile(stem.with_suffix(".state"), dtype=np.int8)
        docs = index.tenant(tenant).docs
        # a document's vector is added after the document; no later document than the table holds
        count = min(len(docs), len(state), counts.get(tenant, len(docs)))
        # from the rows: a read of every document must not make each an object for good, nor
        # build one to read four fields (recall.doc_table; a checkpoint holds the writers)
        hashes = doc_hashes((doc.id, capped(semantic_text(doc), semantic.window))
                            for doc in map(_RowDoc._make, map(orjson.loads, map(docs.row, range(count)))))
        order = np.argsort(hashes, kind="stable")
        hashes[order].tofile(stem.with_suffix(".hash"))
        order.astype(np.int64).tofile(stem.with_suffix(".hkey"))
        # the tiers were copied before the save: a vector added in between reads "static", the
        # safe side (a replica then looks for its neural vector in the cache)
        tiers = np.zeros(len(state), dtype=np.int8)
        shown = min(len(tier), len(state))
        tiers[:shown] = tier[:shown]
        tiers = np.where(state != 0, np.maximum(tiers, STATIC), 0).astype(np.int8)
        tiers.tofile(stem.with_suffix(".tier"))
        tenants.append({"name": tenant, "stem": stem.name, "docs": count, "index": meta,
                        "neural": int(np.count_nonzero(tiers == NEURAL))})
        if saved is not None and hasattr(vectors, "check_saved"):
            saved.append((vectors, stem, tenants[-1]))
    return {"model": semantic.embedder.name, "dim": semantic.embedder.dim, "window": semantic.window,
            "vectors": sum(t["index"]["vectors"] for t in tenants), "neural": sum(t["neural"] for t in tenants),
            "unbuilt": sum(t["index"]["unbuilt"] for t in tenants), "tenants": tenants}


def progress(semantic) -> tuple[int, int]:
    """(vectors, neural vectors) held: what a newer snapshot would add."""
    return semantic.vector_count(), semantic.neural_total()


def write_if_changed(index, directory: Path, offset, writer_lock=None) -> Path | None:
    """``write_snapshot`` unless the current snapshot already holds this index: the same fold
    (its offset) and as many vectors, all in their graphs (a brain reopened and closed
    unchanged, or closed before its graphs were rebuilt, does not replace a good snapshot with
    a slower one)."""
    if index.diverged:  # a restart rebuilds it from the log; the last good snapshot stays
        return None
    end = offset() if callable(offset) else offset
    if end is None:
        return None
    held = current_manifest(directory)
    same_fold = held is not None and "index" in held and held.get("offset") == min(end, index.folded)
    if same_fold and (index.semantic is None or (
            (held.get("vectors"), held.get("neural")) == progress(index.semantic) and
            (held.get("unbuilt") == 0 or index.semantic.unbuilt() > 0))):
        return None
    return write_snapshot(index, directory, offset, writer_lock)


def mapped_line(snapshot: Snapshot, seconds: float) -> str:
    return (f"vectors: mapped {snapshot.vectors():,} of the owner's ({snapshot.folder.name}, log offset "
            f"{snapshot.offset:,}, {len(snapshot.tenants)} tenants) in {seconds:.2f} s")


class Checkpoints:
    """The owner's background checkpoints: every ``interval`` seconds, when the vectors (or the
    neural ones) grew by ``GROWTH`` (and ``MIN_GROWTH``) since the last snapshot and the graphs
    are built (a snapshot mid-build would leave its replicas scanning the rest), writes one.
    ``offset()`` gives the log's end; ``writer_lock`` is the log writer's (``write_snapshot``)."""

    def __init__(self, index, directory: Path, offset, interval: float = INTERVAL_S, writer_lock=None):
        self.index, self.directory, self.offset, self.interval = index, Path(directory), offset, interval
        self.writer_lock = writer_lock
        self._took(current_manifest(directory) or {})
        self.last_error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hindbrain-vector-checkpoints", daemon=True)

    def start(self) -> Checkpoints:
        self._thread.start()
        return self

    def _took(self, held: dict) -> None:
        self.written = int(held.get("vectors", 0)) + int(held.get("neural", 0))  # progress in the last snapshot
        self.unbuilt = int(held.get("unbuilt", 0))  # its vectors not in their graphs then
        self.covered = int(held.get("offset", 0)) if "index" in held else 0  # the log it folded

    def due(self) -> bool:
        semantic = self.index.semantic
        folded = self.index.folded - self.covered
        if folded >= max(MIN_GROWTH, GROWTH * self.covered) and (semantic is None or not semantic.unbuilt()):
            return True  # the log grew: a replica would fold it all again
        if semantic is None or semantic.unbuilt():  # the neural tier may lag for good under load: not awaited
            return False
        now = sum(progress(semantic))
        return now - self.written >= max(MIN_GROWTH, GROWTH * self.written) or (self.unbuilt > 0 and now > 0)

    def write(self) -> Path | None:
        written = write_snapshot(self.index, self.directory, self.offset, self.writer_lock)
        self._took(current_manifest(self.directory) or {})
        return written

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                if self.due():
                    self.write()
            except Exception as exc:  # a failed checkpoint costs the replicas a rebuild, not the owner
                self.last_error = exc

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


# -- reading (a replica) ----------------------------------------------------------------------
@dataclass
class MappedTenant:
    """One tenant's mapped vectors: the index (keyed by the owner's document numbers), the key
    map (sorted hashes and the owner's number of each) and the tier of each vector."""

    index: VectorIndex
    hashes: np.ndarray
    keys: np.ndarray
    tier: np.ndarray


@dataclass
class Snapshot:
    folder: Path
    offset: int
    tenants: dict[str, MappedTenant]

    def vectors(self) -> int:
        return sum(len(t.index) for t in self.tenants.values())


def open_snapshot(directory: Path, model: str, dim: int, window: int, log_end: int, *,
                  writable: bool = False) -> Snapshot:
    """Maps the current snapshot's vectors under ``directory``; raises ``SnapshotRefused`` saying
    why they cannot be used (none, another model, ahead of the log, a file truncated or corrupt).
    ``writable``: the owner reopening its own, which keeps adding (``VectorIndex.mapped``)."""
    folder, manifest = open_generation(directory, log_end)
    return map_vectors(folder, manifest, model, dim, window, writable=writable)


def map_vectors(folder: Path, manifest: dict, model: str, dim: int, window: int, *,
                writable: bool = False) -> Snapshot:
    """The vectors of a checked generation (``snapshot_files.open_generation``)."""
    want = {"version": VERSION, "model": model, "dim": dim, "window": window}
    differs = {k: manifest.get(k) for k, v in want.items() if manifest.get(k) != v}
    if differs:
        raise SnapshotRefused(f"stale vector snapshot {folder.name}: it has {differs}, this replica {want}")
    tenants = {}
    for entry in manifest["tenants"]:
        stem = folder / entry["stem"]
        try:
            index = VectorIndex.mapped(stem, entry["index"], writable=writable)
        except (OSError, ValueError, RuntimeError) as exc:
            raise SnapshotRefused(f"vector snapshot {stem} cannot be mapped: {exc}") from None
        hashes = np.fromfile(stem.with_suffix(".hash"), dtype=np.int64)
        keys = np.fromfile(stem.with_suffix(".hkey"), dtype=np.int64)
        tier = np.fromfile(stem.with_suffix(".tier"), dtype=np.int8)
        if len(hashes) != entry["docs"] or len(keys) != entry["docs"] or len(tier) != entry["index"]["keys"]:
            raise SnapshotRefused(f"vector snapshot {stem}: key map and manifest disagree")
        tenants[entry["name"]] = MappedTenant(index, hashes, keys, tier)
    return Snapshot(folder, int(manifest["offset"]), tenants)


class LayeredIndex:
    """A writable ``VectorIndex`` (keyed by this process's document numbers) over a mapped one
    (keyed by the owner's), with the same interface as ``VectorIndex`` for ``SemanticIndex``.

    ``match`` links this process's documents to the mapped vectors; only linked mapped vectors
    are found, under this process's numbers. A key added to the writable index hides its
    mapped vector (a neural vector replacing a static one)."""

    def __init__(self, base: MappedTenant):
        self.base = base
        self.dim = base.index.dim
        self.top = VectorIndex(self.dim)
        self._lock = threading.Lock()
        self._local_of = np.full(len(base.tier), -1, dtype=np.int64)  # owner key → ours
        self._owner_of = np.full(0, -1, dtype=np.int64)  # our key → the owner's
        self._valid = np.zeros(len(base.tier), dtype=bool)  # linked, with a vector, not hidden
        self._valid_count = 0
        # owner keys 0 .. _same - 1 are linked to our keys of the same numbers or not at all (as
        # ``link_all`` links them): a mask over them is the caller's as it stands (``_base_mask``)
        self._same = len(base.tier)
        # the links' version (``match``, ``link_all`` and ``add`` bump it) and the last base masks made of
        # read-only masks, as (the mask, the version, the base mask): a tenant's kept visible mask
        # (``TenantIndex.visible_mask``) is the same object recall after recall, so its base mask is too
        self._version = 0
        self._kept: list[tuple[np.ndarray, int, np.ndarray]] = []

    def match(self, keys: np.ndarray, hashes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Links our ``keys`` to mapped documents by their ``doc_hashes``: returns which matched
        and the mapped tier of each (0 where it has no vector or did not match)."""
        at = np.searchsorted(self.base.hashes, hashes)
        found = at < len(self.base.hashes)
        found[found] = self.base.hashes[at[found]] == hashes[found]
        owner = np.full(len(keys), -1, dtype=np.int64)
        owner[found] = self.base.keys[at[found]]
        tier = np.zeros(len(keys), dtype=np.int8)
        inside = found & (owner < len(self.base.tier))
        tier[inside] = self.base.tier[owner[inside]]
        with self._lock:
            if len(keys) and int(keys.max()) >= len(self._owner_of):
                grown = np.full(max(int(keys.max()) + 1, 2 * len(self._owner_of)), -1, dtype=np.int64)
                grown[: len(self._owner_of)] = self._owner_of
                self._owner_of = grown
            self._owner_of[keys[found]] = owner[found]
            self._local_of[owner[inside]] = keys[inside]
            moved = owner[inside][(owner[inside] < self._same) & (keys[inside] != owner[inside])]
            if len(moved):
                self._same = int(moved.min())
            with_vector = owner[inside & (tier > 0)]
            fresh = with_vector[~self._valid[with_vector]]
            self._valid[fresh] = True
            self._valid_count += len(fresh)
            self._version += 1
        return found, tier

    def link_all(self, count: int) -> None:
        """Links our documents ``0 .. count - 1`` to the owner's of the same numbers: a document
        table restored from the same generation (``recall.index_snapshot``) numbers them as the
        owner did when it saved these vectors, so no key is hashed or looked up."""
        n = min(count, len(self.base.tier))
        keys = np.arange(n, dtype=np.int64)
        with self._lock:
            if count > len(self._owner_of):
                grown = np.full(count, -1, dtype=np.int64)
                grown[: len(self._owner_of)] = self._owner_of
                self._owner_of = grown
            self._owner_of[:n] = keys
            self._local_of[:n] = keys
            self._same = max(self._same, n)
            fresh = np.flatnonzero((self.base.tier[:n] > 0) & ~self._valid[:n])
            self._valid[fresh] = True
            self._valid_count += len(fresh)
            self._version += 1

    def takes_codes(self) -> bool:
        """Never: ``add`` hides the mapped vectors of what it adds, so the layer takes rows."""
        return False

    def add(self, keys: np.ndarray, vectors: np.ndarray, *, defer_graph: bool = False, unit: bool = False) -> None:
        """Adds to the writable index; a key's mapped vector is hidden from then on."""
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        self.top.add(keys, vectors, defer_graph=defer_graph, unit=unit)
        with self._lock:
            inside = keys[keys < len(self._owner_of)]
            owner = self._owner_of[inside]
            owner = owner[owner >= 0]
            hidden = owner[self._valid[owner]]
            self._valid[hidden] = False
            self._valid_count -= len(hidden)
            self._version += 1

    def _base_mask(self, allowed: np.ndarray | None) -> np.ndarray | None:
        """The owner keys a mapped search may return: linked, not hidden, allowed. Over the keys
        ``link_all`` linked one to one (a replica's whole snapshot) ``allowed`` is taken as it
        stands; only the valid keys past them are translated (every key was: a 160k gather and
        ``np.where`` a recall, ~0.4 ms of a replica's 100k recall). ``py_base_mask`` is the definition.
        A read-only ``allowed`` that owns its data (a tenant's kept visible mask) has its base mask kept,
        read-only too, until the links change (~0.1 ms a replica recall: the copy and the masking)."""
        kept = allowed is not None and not allowed.flags.writeable and allowed.base is None
        with self._lock:
            if allowed is None and self._valid_count == len(self.base.index):
                return None
            version = self._version
            for made_of, at, made in self._kept if kept else ():
                if made_of is allowed and at == version:
                    return made
            mask = self._valid.copy()
            local, same = self._local_of, self._same
        if allowed is not None:
            mask[:same] &= allowed_mask(allowed, same)
            rest = same + np.flatnonzero(mask[same:])
            if len(rest):
                ours = allowed_mask(allowed, len(self._owner_of) + 1)
                mine = local[rest]
                mask[rest] = ours[np.where(mine >= 0, mine, len(ours) - 1)]
        if kept:
            mask.flags.writeable = False
            with self._lock:  # made at ``version``: a link meanwhile makes it stale, so the next one is made anew
                self._kept = [(allowed, version, mask), *(k for k in self._kept if k[0] is not allowed)][:KEPT_MASKS]
        return mask

    def py_base_mask(self, allowed: np.ndarray | None) -> np.ndarray | None:
        """``_base_mask`` translating every key: the definition."""
        with self._lock:
            if allowed is None and self._valid_count == len(self.base.index):
                return None
            mask = self._valid.copy()
            local = self._local_of
        if allowed is not None:
            ours = allowed_mask(allowed, len(self._owner_of) + 1)
            mask &= ours[np.where(local >= 0, local, len(ours) - 1)]
        return mask

    def search(self, query: np.ndarray, k: int, allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        keys, sims = self.top.search(query, k, allowed)
        if not self._valid_count:
            return keys, sims
        owner, base_sims = self.base.index.search(query, k, self._base_mask(allowed))
        local = self._local_of[owner]
        keep = (local >= 0) & ~np.isin(local, keys)  # a key added meanwhile: the writable one wins
        return top_k(np.concatenate([keys, local[keep]]), np.concatenate([sims, base_sims[keep]]), k)

    def cosines(self, keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        out = self.top.cosines(keys, queries)
        if out.shape[1] == 0:
            return out
        with self._lock:
            missing = np.flatnonzero(np.isnan(out[:, 0]) & (keys < len(self._owner_of)))
            owner = self._owner_of[keys[missing]]
            linked = owner >= 0
            linked[linked] = self._valid[owner[linked]]
        if linked.any():
            out[missing[linked]] = self.base.index.cosines(owner[linked], queries)
        return out

    def build_graph(self, limit: int | None = None, *, threads: int = 1) -> int:
        return self.top.build_graph(limit, threads=threads)

    @property
    def unbuilt(self) -> int:
        return self.top.unbuilt

    @property
    def exact(self) -> bool:
        return self.top.exact and self.base.index.exact

    def __len__(self) -> int:
        return len(self.top) + self._valid_count

    def memory_bytes(self) -> int:
        """Bytes held in this process (the mapped files' pages are the page cache's, shared)."""
        return self.top.memory_bytes() + self._local_of.nbytes + self._owner_of.nbytes + self._valid.nbytes \
            + self.base.hashes.nbytes + self.base.keys.nbytes + self.base.tier.nbytes

    def save(self, stem: Path) -> dict:
        raise RuntimeError("a replica's layered vectors are not checkpointed: the owner's are")
