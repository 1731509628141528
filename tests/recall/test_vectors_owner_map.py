"""A reopened owner maps its snapshot's int8 codes copy-on-write (issue 28: the owner held them
twice, once read into its blocks and once in the graph usearch loads).

What must hold: the codes are a mapping of the snapshot's file, not a copy (the pages are the
page cache's); whatever the owner then writes (a replaced vector, a new key in a saved block)
stays in the owner, so the file, its CRC and every replica mapping it keep the saved vectors;
and the owner's own accounting no longer counts the mapped codes."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from hindbrain.recall.vectors import _BLOCK, VectorIndex

DIM = 32


def _vectors(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


def _mapped_paths() -> set[str]:
    with open("/proc/self/maps") as f:
        return {line.split(maxsplit=5)[5].strip() for line in f if len(line.split(maxsplit=5)) > 5}


@pytest.fixture
def saved(tmp_path):
    vecs = _vectors(3_000, seed=1)
    index = VectorIndex(DIM, exact_limit=100)
    index.add(np.arange(len(vecs)), vecs)
    stem = tmp_path / "t0"
    meta = index.save(stem)
    assert index.check_saved(stem) == 0
    return stem, meta, vecs, index


def test_a_reopened_owner_maps_its_codes_instead_of_reading_them(saved):
    stem, meta, vecs, built = saved
    owner = VectorIndex.mapped(stem, meta, writable=True)
    assert str(stem.with_suffix(".codes")) in _mapped_paths()
    graph = owner._graph.memory_usage
    codes = stem.with_suffix(".codes").stat().st_size
    # the graph (with its own copy of each node's code) and per-key arrays (9 B a key, against
    # 32 B a code here): not the file's codes
    assert owner.memory_bytes() - graph < codes
    assert built.memory_bytes() >= codes  # an index built in the process holds its blocks
    assert owner.search(vecs[7], 1)[0].tolist() == [7]


def test_what_the_owner_writes_stays_in_the_owner(saved):
    stem, meta, vecs, _ = saved
    path = stem.with_suffix(".codes")
    before = zlib.crc32(path.read_bytes())
    owner = VectorIndex.mapped(stem, meta, writable=True)
    replica = VectorIndex.mapped(stem, meta)
    fresh = _vectors(3, seed=2)
    owner.add(np.array([7, 3_000, 3_001]), fresh)  # a replacement, and new keys in the saved block
    assert _BLOCK > 3_001
    assert owner.build_graph() == 0
    assert owner.search(fresh[0], 1)[0].tolist() == [7]
    assert owner.search(vecs[7], 1)[0].tolist() != [7]  # the old vector of 7 is gone from the owner
    assert sorted(owner.search(fresh[2], 1)[0].tolist()) == [3_001]
    assert zlib.crc32(path.read_bytes()) == before
    assert replica.search(vecs[7], 1)[0].tolist() == [7]  # the replica still maps the saved vector
    assert 3_000 not in replica.search(fresh[1], 5)[0].tolist()
    again = VectorIndex.mapped(stem, meta, writable=True)  # and a later reopen reads the saved ones
    assert again.search(vecs[7], 1)[0].tolist() == [7]


def test_the_owner_saves_what_it_wrote_and_a_new_generation_loads(saved, tmp_path):
    stem, meta, vecs, _ = saved
    owner = VectorIndex.mapped(stem, meta, writable=True)
    fresh = _vectors(2, seed=3)
    owner.add(np.array([11, 3_000]), fresh)
    assert owner.build_graph() == 0
    stem2 = tmp_path / "t1"
    meta2 = owner.save(stem2)
    assert owner.check_saved(stem2) == 0
    for writable in (False, True):
        later = VectorIndex.mapped(stem2, meta2, writable=writable)
        assert later.search(fresh[0], 1)[0].tolist() == [11]
        assert later.search(fresh[1], 1)[0].tolist() == [3_000]
        assert later.search(vecs[12], 1)[0].tolist() == [12]


def test_a_codes_file_of_the_wrong_size_is_refused(saved):
    stem, meta, _, _ = saved
    path = stem.with_suffix(".codes")
    path.write_bytes(path.read_bytes()[:-DIM])
    for writable in (False, True):
        with pytest.raises(ValueError, match="bytes, expected"):
            VectorIndex.mapped(stem, meta, writable=writable)
