"""RecentVectors: the neural tier's dedup of texts embedded lately (recall.semantic)."""

import gc
import random
import weakref
from collections import OrderedDict

import numpy as np
import pytest

from hindbrain.recall.semantic import EmbeddingCache, RecentVectors


def _unit(rows: int, dim: int = 512, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((rows, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_a_workers_batch_is_not_kept_alive_by_its_rows():
    # the rows were views of the batch: 4,096 of them kept 64 float32 batches (8 MB) alive
    recent = RecentVectors(size=128)
    batch = _unit(64)
    gone = weakref.ref(batch)
    recent.put([bytes([i]) for i in range(64)], batch)
    del batch
    gc.collect()
    assert gone() is None
    assert len(recent.get([bytes([5])])) == 1


def test_a_recent_hit_is_the_vector_a_cache_hit_gives(tmp_path):
    vecs = _unit(20, seed=1)
    hashes = [f"h{i}".encode() for i in range(20)]
    cache = EmbeddingCache(tmp_path / "c.sqlite", "m", 512)
    cache.put(list(zip(hashes, vecs, strict=True)))
    recent = RecentVectors()
    recent.put(hashes, vecs)
    from_cache, from_recent = cache.get(hashes), recent.get(hashes)
    cache.close()
    assert sorted(from_recent) == list(range(20))
    for i in range(20):
        assert from_recent[i].dtype == np.float32
        np.testing.assert_array_equal(from_recent[i], from_cache[i])


def test_least_recently_used_texts_go_first_as_an_ordered_dict_would():
    rng = random.Random(3)
    size, dim = 8, 4
    recent, model = RecentVectors(size=size), OrderedDict()
    for step in range(3_000):
        keys = [bytes([rng.randrange(20)]) for _ in range(rng.randrange(1, 6))]
        if rng.random() < 0.5:
            vecs = np.random.default_rng(step).standard_normal((len(keys), dim)).astype(np.float32)
            recent.put(keys, vecs)
            for k, v in zip(keys, vecs, strict=True):
                model[k] = v
                model.move_to_end(k)
            while len(model) > size:
                model.popitem(last=False)
        else:
            got = recent.get(keys)
            want = {}
            for i, k in enumerate(keys):
                if k in model:
                    want[i] = model[k]
                    model.move_to_end(k)
            assert sorted(got) == sorted(want)
            for i, v in want.items():
                unit = v.astype(np.float16).astype(np.float32)
                np.testing.assert_allclose(got[i], unit / np.linalg.norm(unit), rtol=0, atol=1e-6)
        assert len(recent) == len(model)


def test_a_size_below_one_is_refused():
    with pytest.raises(ValueError, match="size"):
        RecentVectors(size=0)
