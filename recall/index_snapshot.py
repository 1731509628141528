"""The recall read model on disk, restored by a replica or a reopening owner instead of folding
the whole log (design.md §issue-28, point 4; docs/distributed.md "Snapshots").

``recall.vector_snapshot`` saved the vectors, but a replica still folded the whole log to build
the rest: the lexical index, the document table, counters, beliefs (44 s of a 100k replica's
start, ~7 min at 1M). This module saves that rest into the same generation (one cut: the owner
holds ``RecallIndex.fold_lock`` while both are written), and restores it:

* **lexical index** per tenant: every posting in one segment keyed by the term's string
  (``BM25Index.save``: postings sorted by term hash, the vocabulary's bytes to check each
  lookup, the document lengths), memory-mapped read-only (``BM25Index.mapped``); documents
  after the snapshot are added over it as to any index;
* **document table** per tenant: each ``Doc`` as one JSON row (``rows`` + ``roff``), its id in
  an id column (``ids``, one JSON array: ``by_id`` is built from it in one parse) and the
  numpy columns the index already keeps (layer, owner code, retired): the rows a live index packs
  its documents into (``recall.doc_table``), restored as a ``DocTable`` over the mapped rows, which
  makes a ``Doc`` object of a row only when something reads that document (a recall's
  candidates), once, and keeps it (documents are mutated in place: a status, a counter's freshness);
* **the rest** per tenant in one JSON file: counters, beliefs, A/B windows, agent codes, stored
  items' versions, the split-directive threads (as document numbers), persons; and the outcome
  ids already counted.

The format is versioned (``INDEX_VERSION``) and names ``Doc``'s fields: a snapshot written by
another version, or with other fields, is refused as stale, and the log is folded instead.
Truncated or corrupt files are refused by ``snapshot_files.open_generation`` before anything
is read. The owner's and the restored document numbers are the same, so the vectors of the same
generation are linked one to one (``LayeredIndex.link_all``), with no key hashed.
"""

from __future__ import annotations

import dataclasses
import io
import os
import time
from pathlib import Path

import numpy as np
import orjson

from hindbrain.recall.doc_table import DocTable, decoders, json_default
from hindbrain.recall.documents import Belief, Counters, Doc, semantic_text
from hindbrain.recall.id_numbers import IdNumbers
from hindbrain.recall.index import RecallIndex
from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.snapshot_files import SnapshotRefused, open_generation
from hindbrain.recall.tenant_index import TenantIndex

# 2: a CJK character ends a lexical word (recall.tokenize): a snapshot's BM25 terms from before it
# are refused, and the log is folded again with the new tokens.
INDEX_VERSION = 2
DOC_FIELDS = tuple(f.name for f in dataclasses.fields(Doc))
BELIEF_FIELDS = tuple(f.name for f in dataclasses.fields(Belief))
_ID = DOC_FIELDS.index("id")  # where a packed row holds the document's id


_BELIEF_DECODERS = decoders(Belief)


def _read(path: Path, dtype) -> np.ndarray:
    if path.stat().st_size == 0:
        return np.zeros(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r")


# -- writing (the owner, with the fold lock held) ----------------------------------------------
def write_index(index: RecallIndex, folder: Path, counts: dict[str, int]) -> dict:
    """Writes every tenant's read model into ``folder``; returns the manifest's ``index``
    section and puts each tenant's document count in ``counts``."""
    tenants = []
    for n, (name, tenant) in enumerate(index.tenants.items()):
        stem = folder / f"x{n}"
        count = len(tenant.docs)
        counts[name] = count
        lexical = tenant.bm25.save(stem)
        if lexical["documents"] != count:
            raise RuntimeError(f"tenant {name!r}: {count} documents but {lexical['documents']} in its lexical index")
        rows = io.BytesIO()
        offsets = tenant.docs.write_rows(rows, count)  # the rows as they stand, no object made
        stem.with_suffix(".rows").write_bytes(rows.getbuffer())
        with rows.getbuffer() as view:
            bounds = offsets.tolist()
            ids = [orjson.loads(view[bounds[no] : bounds[no + 1]])[_ID] for no in range(count)]
        offsets.tofile(stem.with_suffix(".roff"))
        stem.with_suffix(".ids").write_bytes(orjson.dumps(ids))
        for column, array in (("layers", tenant._layers), ("owners", tenant._owners), ("retired", tenant._retired)):
            np.ascontiguousarray(array[:count]).tofile(stem.with_suffix(f".{column}"))
        state = {
            "counters": {item: dataclasses.astuple(c) for item, c in tenant.counters.items()},
            "beliefs": [[getattr(b, f) for f in BELIEF_FIELDS] for b in tenant.beliefs.values()],
            "windows": tenant.windows, "agent_codes": tenant.agent_codes,
            "versions": [[list(item), no] for item, no in tenant.versions.items()], "retired": tenant.retired,
            "last_said": [[list(key), no] for key, no in tenant.last_said.items()],
            "persons": tenant.persons,
        }
        stem.with_suffix(".state").write_bytes(orjson.dumps(state, default=json_default))
        tenants.append({"name": name, "stem": stem.name, "docs": count, "lexical": lexical})
    (folder / "outcomes.json").write_bytes(orjson.dumps(sorted(index._outcomes_seen)))
    (folder / "unit_decisions.json").write_bytes(orjson.dumps(sorted(index._unit_decisions_seen)))
    return {"version": INDEX_VERSION, "doc_fields": list(DOC_FIELDS), "belief_fields": list(BELIEF_FIELDS),
            "documents": sum(t["docs"] for t in tenants), "tenants": tenants}


# -- restoring ------------------------------------------------------------------------------
def restore_index(index: RecallIndex, folder: Path, manifest: dict) -> None:
    """Fills ``index`` (empty) with the read model of a checked generation; raises
    ``SnapshotRefused`` when it has none this version can read."""
    section = manifest.get("index")
    if section is None:
        raise SnapshotRefused(f"snapshot {folder.name} holds no recall index (vectors only)")
    want = {"version": INDEX_VERSION, "doc_fields": list(DOC_FIELDS), "belief_fields": list(BELIEF_FIELDS)}
    differs = sorted(k for k, v in want.items() if section.get(k) != v)
    if differs:
        raise SnapshotRefused(f"stale index snapshot {folder.name}: its {', '.join(differs)} differ from "
                              "this version's")
    if index.tenants:
        raise RuntimeError("restore a recall index snapshot into an empty index")
    try:
        for entry in section["tenants"]:
            index.tenants[entry["name"]] = _tenant(folder / entry["stem"], entry)
        index._outcomes_seen = set(orjson.loads((folder / "outcomes.json").read_bytes()))
        # a snapshot from before round thirty has none: refused, the index is rebuilt from the views
        index._unit_decisions_seen = set(orjson.loads((folder / "unit_decisions.json").read_bytes()))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        index.tenants.clear()
        raise SnapshotRefused(f"index snapshot {folder.name} cannot be read: {exc!r}") from None
    index.folded = int(manifest["offset"])


def _tenant(stem: Path, entry: dict) -> TenantIndex:
    count = int(entry["docs"])
    tenant = TenantIndex()
    tenant.bm25 = BM25Index.mapped(stem, entry["lexical"])
    offsets = _read(stem.with_suffix(".roff"), np.int64)
    if len(offsets) != count + 1:
        raise ValueError(f"{stem.with_suffix('.roff')}: {len(offsets) - 1} rows, the manifest {count}")
    tenant.docs = DocTable.over(Doc, _read(stem.with_suffix(".rows"), np.uint8), offsets)
    ids = orjson.loads(stem.with_suffix(".ids").read_bytes())
    if len(ids) != count:
        raise ValueError(f"{stem.with_suffix('.ids')}: {len(ids)} ids, the manifest {count}")
    tenant.by_id = IdNumbers.numbered(ids)
    size = max(1024, 2 * count)
    for column, dtype in (("layers", np.uint8), ("owners", np.int32), ("retired", bool)):
        saved = np.fromfile(stem.with_suffix(f".{column}"), dtype=dtype)
        if len(saved) != count:
            raise ValueError(f"{stem.with_suffix('.' + column)}: {len(saved)} values, the manifest {count}")
        held = np.zeros(size, dtype=dtype)
        held[:count] = saved
        setattr(tenant, f"_{column}", held)
    state = orjson.loads(stem.with_suffix(".state").read_bytes())
    tenant.counters = {item: Counters(*values) for item, values in state["counters"].items()}
    beliefs = (Belief(*[v if d is None else d(v) for d, v in zip(_BELIEF_DECODERS, values, strict=True)])
               for values in state["beliefs"])
    tenant.beliefs = {b.id: b for b in beliefs}
    tenant.windows = {k: tuple(v) for k, v in state["windows"].items()}
    tenant.agent_codes = state["agent_codes"]
    tenant.versions = {tuple(item): no for item, no in state["versions"]}
    tenant.retired = int(state["retired"])
    tenant.last_said = {tuple(key): no for key, no in state["last_said"]}
    tenant.persons = state["persons"]
    return tenant


def restore(index: RecallIndex, directory: Path, log_end: int, *, writable: bool = False) -> tuple[str, int]:
    """A process's start on a home with a snapshot: restores ``index`` (empty) and its vectors
    from the current generation; returns the line saying what it took (and why not) and the
    first log offset left to fold (0: nothing restored, fold it all).

    A replica (``writable`` False) maps the vectors read-only, layered under what it adds; the
    owner (``writable``) loads the graph, maps the codes copy-on-write (``VectorIndex.mapped``) and keeps adding. The
    vectors of documents that were not on the neural tier are queued for it, as when folded.
    A refused index with usable vectors keeps the vectors (mapped by key, as before this module)."""
    from hindbrain.recall.vector_snapshot import map_vectors, mapped_line

    began = time.perf_counter()
    semantic = index.semantic
    try:
        folder, manifest = open_generation(directory, log_end, "snapshot")
        vectors = None if semantic is None else map_vectors(
            folder, manifest, semantic.embedder.name, semantic.embedder.dim, semantic.window, writable=writable)
    except SnapshotRefused as exc:
        return f"snapshot: {exc}; folding the log{'' if semantic is None else ' and rebuilding the vectors'}", 0
    if semantic is not None and not writable:
        semantic.attach(vectors)
    try:
        if os.environ.get("HINDBRAIN_INDEX_SNAPSHOT") == "0":  # the start before this module (bench/distributed.py)
            raise SnapshotRefused("the index snapshot is switched off (HINDBRAIN_INDEX_SNAPSHOT=0)")
        restore_index(index, folder, manifest)
    except SnapshotRefused as exc:
        if semantic is not None and writable:
            return f"snapshot: {exc}; folding the log and rebuilding the vectors", 0
        line = "" if semantic is None else "; " + mapped_line(vectors, time.perf_counter() - began)
        return f"snapshot: {exc}; folding the log{line}", 0
    if semantic is not None:
        for name, tenant in index.tenants.items():
            mapped = vectors.tenants.get(name)
            count = len(tenant.docs)

            def pending(nos: np.ndarray, docs=tenant.docs) -> list:
                return [(no, docs[no].id, semantic_text(docs[no])) for no in nos.tolist()]

            if mapped is not None:
                semantic.restored(name, mapped.index if writable else None, mapped.tier, count, pending)
            elif count:  # no vectors saved for it: embedded as when folded
                semantic.add(name, pending(np.arange(count)))
    docs = sum(len(t.docs) for t in index.tenants.values())
    return (f"snapshot: restored {docs:,} documents of {len(index.tenants)} tenants"
            f"{'' if semantic is None else f', {vectors.vectors():,} vectors'} ({folder.name}, log offset "
            f"{index.folded:,}) in {time.perf_counter() - began:.2f} s"), index.folded
