"""The owner's vectors saved and mapped (``recall.vector_snapshot``): a mapped index answers as
the one saved, a layered one translates the owner's document numbers to the replica's, and a
replica started on a home with a snapshot finds the owner's top-k without a model call, while a
truncated or corrupt snapshot is refused by name and rebuilt."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from hindbrain import Brain
from hindbrain.recall.snapshot_files import SnapshotRefused, current_manifest
from hindbrain.recall.vector_snapshot import (
    Checkpoints,
    LayeredIndex,
    MappedTenant,
    doc_hashes,
    open_snapshot,
)
from hindbrain.recall.vectors import VectorIndex
from hindbrain.service.replica import Follower
from hindbrain.settings import Settings

sys.path.insert(0, str(Path(__file__).parents[1] / "service"))
from test_replicas import events  # noqa: E402

DIM = 32


def clustered(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(8, DIM))
    return (centres[rng.integers(0, 8, n)] + 0.4 * rng.normal(size=(n, DIM))).astype(np.float32)


def graph_index(vectors: np.ndarray, unbuilt: int) -> VectorIndex:
    """A graph-mode index (a small exact limit) with the last ``unbuilt`` vectors still on its tail."""
    index = VectorIndex(DIM, exact_limit=50)
    index.add(np.arange(len(vectors)), vectors, defer_graph=True)
    index.build_graph(len(vectors) - unbuilt)
    assert index.unbuilt == unbuilt and not index.exact
    return index


def test_a_mapped_graph_answers_as_the_index_it_was_saved_from_and_refuses_adds(tmp_path):
    vectors = clustered(400)
    index = graph_index(vectors, unbuilt=30)
    mapped = VectorIndex.mapped(tmp_path / "t0", index.save(tmp_path / "t0"))
    allowed = np.arange(400) % 3 == 0
    for q in clustered(20, seed=1):
        for mask in (None, allowed):
            want, got = index.search(q, 10, mask), mapped.search(q, 10, mask)
            assert want[0].tolist() == got[0].tolist()
            assert np.allclose(want[1], got[1])
    assert len(mapped) == 400 and mapped.unbuilt == 0  # its tail is scanned for good: nothing builds it
    assert np.allclose(mapped.cosines(np.array([3, 7]), vectors[:2]), index.cosines(np.array([3, 7]), vectors[:2]))
    with pytest.raises(RuntimeError, match="read-only"):
        mapped.add(np.array([1]), vectors[:1])


def test_a_graph_saved_at_another_connectivity_maps_and_reopens_at_its_own(tmp_path):
    """Homes built before round thirteen hold graphs at connectivity 32 (the default is 30 since):
    usearch's restore and the C walk take it from the file's header, not from ``CONNECTIVITY``, so
    such a graph maps and walks as saved, and its reopened owner says and keeps its connectivity
    (usearch inserts at the file's: one graph, one connectivity) and saves a graph every node of
    which a search reaches."""
    from hindbrain.recall.graph_check import GraphFile
    from hindbrain.recall.vectors import CONNECTIVITY, quantize

    old = 32
    vectors = clustered(700)
    index = VectorIndex(DIM, exact_limit=50, connectivity=old)
    index.add(np.arange(600), vectors[:600])
    meta = index.save(tmp_path / "t0")
    assert GraphFile(tmp_path / "t0.usearch").connectivity == old != CONNECTIVITY
    mapped = VectorIndex.mapped(tmp_path / "t0", meta)
    assert mapped.connectivity == mapped._walker.connectivity == old
    everyone = mapped._state >= 2  # graphed
    for q in clustered(20, seed=1):
        want = index.search(q, 10)
        assert mapped.search(q, 10)[0].tolist() == want[0].tolist()
        _, sims, _ = mapped._walker.walk(quantize(q / np.linalg.norm(q))[0], everyone, mapped._next, 64, 4096)
        assert np.allclose(sims[:10], want[1], atol=1e-3)  # the C walk routes on the file's layout (ties aside)
    owner = VectorIndex.mapped(tmp_path / "t0", meta, writable=True)
    assert owner.connectivity == old
    owner.add(np.arange(600, 700), vectors[600:])
    assert owner.unbuilt == 0
    owner.save(tmp_path / "t1")
    assert owner.check_saved(tmp_path / "t1") == 0
    graph = GraphFile(tmp_path / "t1.usearch")
    assert (graph.connectivity, graph.connectivity_base) == (old, 2 * old)
    for key in (5, 320, 650):
        assert owner.search(vectors[key], 1)[0][0] == key


def test_a_layered_index_finds_the_mapped_vectors_under_its_own_numbers_and_new_ones_hide_them(tmp_path):
    vectors = clustered(300)
    owner = graph_index(vectors, unbuilt=0)
    mapped = VectorIndex.mapped(tmp_path / "t0", owner.save(tmp_path / "t0"))
    ids = [f"doc-{n}" for n in range(300)]
    hashes = doc_hashes((d, f"text {d}") for d in ids)
    order = np.argsort(hashes, kind="stable")
    layered = LayeredIndex(MappedTenant(mapped, hashes[order], order.astype(np.int64), np.full(300, 2, np.int8)))
    ours = np.random.default_rng(2).permutation(300)  # the replica numbers the documents otherwise
    found, tier = layered.match(ours, doc_hashes((ids[o], f"text {ids[o]}") for o in range(300)))
    assert found.all() and (tier == 2).all() and len(layered) == 300
    query = vectors[5]
    want_keys, want_sims = owner.search(query, 10)
    got_keys, got_sims = layered.search(query, 10)
    assert got_keys.tolist() == ours[want_keys].tolist() and np.allclose(got_sims, want_sims)
    # a new vector for the best document: the replica's own wins, the mapped one is hidden
    best = int(got_keys[0])
    layered.add(np.array([best]), -query[None, :])
    keys, _ = layered.search(query, 10)
    assert best not in keys.tolist() and len(layered) == 300
    assert layered.cosines(np.array([best]), query[None, :])[0, 0] < -0.99
    # a different text under the same id is not the mapped document
    found, _ = layered.match(np.array([0]), doc_hashes([(ids[0], "edited text")]))
    assert not found.any()


def count_model_calls(semantic) -> list[int]:
    calls: list[int] = []
    for model in filter(None, (semantic.embedder, semantic.static)):
        embed = model.embed_passages
        model.embed_passages = lambda texts, embed=embed: (calls.append(len(texts)), embed(texts))[1]
    return calls


def top_ids(index, tenant: str, query: str, k: int = 10) -> list[tuple[str, float]]:
    semantic = index.semantic
    found = semantic.search(tenant, semantic.embed_queries([query])[0], k)
    return [(index.tenant(tenant).docs[no].id, round(sim, 4)) for no, sim in found]


QUERIES = ["export job timeout", "reset email missing", "页面 转圈"]
N = 120  # events the owner perceived


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A closed brain's home whose vectors are all neural, and the owner's answers to QUERIES."""
    path = tmp_path_factory.mktemp("owner")
    with Brain.open(path) as brain:
        brain.perceive_many(events(N))
        assert brain.index.semantic.wait(120)
        answers = {q: top_ids(brain.index, "acme", q) for q in QUERIES}
    return path, answers


def started(home: Path) -> tuple[Follower, list[int]]:
    follower = Follower(Settings(home=home))
    calls = count_model_calls(follower.index.semantic)
    follower.catch_up()
    return follower, calls


def test_a_replica_maps_the_owners_vectors_and_finds_its_top_k_without_a_model_call(home):
    path, answers = home
    manifest = current_manifest(path / "cache" / "vectors")
    assert manifest["vectors"] == manifest["neural"] == N and manifest["offset"] >= N
    follower, calls = started(path)
    try:
        assert follower.vectors.startswith(f"snapshot: restored {N} documents of 1 tenants, {N} vectors")
        assert calls == [] and follower.index.semantic.mapped_docs == N
        assert {q: top_ids(follower.index, "acme", q) for q in QUERIES} == answers
        assert follower.index.semantic.tiers("acme", [0, N - 1]) == ["neural", "neural"]
        assert follower.index.semantic.settled()
    finally:
        follower.close()


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_snapshot_is_refused_by_name_and_the_replica_rebuilds(home, tmp_path, damage):
    path, answers = home
    copy = tmp_path / "home"
    shutil.copytree(path, copy)
    vectors = copy / "cache" / "vectors"
    data = next(vectors.glob("gen-*/t0.f16"))
    raw = bytearray(data.read_bytes())
    if damage == "truncated":
        data.write_bytes(raw[: len(raw) // 2])
    else:
        raw[len(raw) // 2] ^= 0x40
        data.write_bytes(raw)
    follower, calls = started(copy)
    try:
        assert f"{damage} snapshot" in follower.vectors and "rebuilding" in follower.vectors
        assert follower.index.semantic.mapped_docs == 0 and sum(calls) == N  # the static tier, as before
        assert follower.index.semantic.wait(60)  # the neural vectors, from the owner's cache
        for q in QUERIES:  # the cache keeps float16: near-ties may swap, the similarities agree
            rebuilt = top_ids(follower.index, "acme", q)
            assert np.allclose([s for _, s in rebuilt], [s for _, s in answers[q]], atol=0.005)
            assert len({d for d, _ in rebuilt} & {d for d, _ in answers[q]}) >= 8
    finally:
        follower.close()


def test_a_snapshot_ahead_of_the_log_or_of_another_model_is_stale(home):
    path, _ = home
    held = current_manifest(path / "cache" / "vectors")
    with pytest.raises(SnapshotRefused, match="beyond the log's end"):
        open_snapshot(path / "cache" / "vectors", held["model"], held["dim"], held["window"], log_end=10)
    with pytest.raises(SnapshotRefused, match="stale vector snapshot"):
        open_snapshot(path / "cache" / "vectors", "another-model", held["dim"], held["window"], log_end=10**9)


def test_a_replica_embeds_only_the_documents_after_the_snapshot(home, tmp_path):
    path, _ = home
    copy = tmp_path / "home"
    shutil.copytree(path, copy, ignore=shutil.ignore_patterns("views"))  # chDB: one copy of a table per process
    with Brain.open(copy) as brain:  # the owner goes on; its snapshot (at close) still holds the first N
        fresh = brain.perceive(tenant="acme", text="the zeppelin hangar door sticks in cold weather")
        brain.perceive_many(events(19, start=N))
        brain.runner.flush()
        follower, calls = started(copy)
        try:
            assert follower.index.semantic.mapped_docs == N and sum(calls) == 20  # the tail's static tier only
            assert top_ids(follower.index, "acme", "airship hangar gate jammed", k=1)[0][0] == fresh
        finally:
            follower.close()


def test_checkpoints_write_a_snapshot_once_the_vectors_grew_and_not_again_until_they_grow(tmp_path):
    with Brain.open(tmp_path / "brain", embedder="static") as brain:
        brain.perceive_many(events(1_100))
        assert brain.index.semantic.wait(60)
        target = tmp_path / "snapshots"
        checkpoints = Checkpoints(brain.index, target, lambda: 1_100, interval=0.05).start()
        try:
            # until the checkpoint thread has noted what it wrote: the manifest is visible a moment
            # before (Checkpoints.write seals, then reads it back), and due() asked in between sees
            # the snapshot as not yet taken
            deadline = time.monotonic() + 30
            while (current_manifest(target) is None or not checkpoints.written) and time.monotonic() < deadline:
                time.sleep(0.05)
            held = current_manifest(target)
            assert held is not None and held["vectors"] == 1_100 and held["offset"] == 1_100
            assert not checkpoints.due()  # nothing new since
            brain.perceive_many(events(5, start=1_100))
            assert not checkpoints.due()  # 5 is below the growth that pays for a snapshot
        finally:
            checkpoints.stop()
        assert checkpoints.last_error is None


def test_a_layered_mask_over_keys_linked_one_to_one_is_the_translated_one(tmp_path):
    """``_base_mask`` takes a mask as it stands over the keys ``link_all`` linked to themselves and
    translates the rest: the same mask as translating every key (``py_base_mask``), after links
    one to one, links by hash that renumber some of those keys, hidden keys and masks of every length."""
    vectors = clustered(300)
    mapped = VectorIndex.mapped(tmp_path / "t0", graph_index(vectors, unbuilt=0).save(tmp_path / "t0"))
    ids = [f"doc-{n}" for n in range(300)]
    hashes = doc_hashes((d, f"text {d}") for d in ids)
    order = np.argsort(hashes, kind="stable")
    rng = np.random.default_rng(4)
    tier = np.full(len(mapped._state), 2, np.int8)
    layered = LayeredIndex(MappedTenant(mapped, hashes[order], order.astype(np.int64), tier))

    kept = []  # read-only masks asked again after every change (a tenant's kept visible masks)
    for length in (120, 300, 520):
        kept.append(rng.random(length) < 0.5)
        kept[-1].flags.writeable = False

    def check() -> None:
        for length in (0, 120, 300, 301, 520):
            allowed = rng.random(length) < 0.5
            assert layered._base_mask(allowed).tolist() == layered.py_base_mask(allowed).tolist()
        for allowed in kept:
            made = layered._base_mask(allowed)
            assert made.tolist() == layered.py_base_mask(allowed).tolist() and not made.flags.writeable
            assert layered._base_mask(allowed) is made  # no link since: the same base mask, not made again

    check()
    layered.link_all(200)  # a replica's restored documents: linked to the same numbers
    assert layered._same >= 200
    check()
    moved = rng.permutation(np.arange(150, 300))[:60]  # some renumbered by hash (beyond and inside the prefix)
    layered.match(moved[::-1].copy() + 1000, doc_hashes((ids[o], f"text {ids[o]}") for o in moved))
    assert layered._same < 200
    check()
    layered.add(np.array([3, 1010]), vectors[:2])  # hidden by our own vectors
    check()
    layered.link_all(300)
    check()
