"""RecentVectors: the neural tier's dedup of texts embedded lately (recall.semantic); with a cache, the
vectors not flushed yet and the cache are the dedup instead."""

import gc
import hashlib
import random
import time
import tracemalloc
import weakref
from collections import Counter, OrderedDict

import numpy as np
import pytest

from hindbrain.recall import semantic
from hindbrain.recall.semantic import EmbeddingCache, RecentVectors, SemanticIndex


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


class Hashed:
    """A model stand-in: each text's unit vector made from its hash (so equal texts get equal vectors),
    every text it embeds counted."""

    name, dim = "hashed", 512

    def __init__(self):
        self.seen: Counter = Counter()

    def embed_passages(self, texts):
        self.seen.update(texts)
        return np.stack([_unit(1, seed=int.from_bytes(hashlib.blake2b(t.encode()).digest()[:4], "little"))[0]
                         for t in texts])

    embed_queries = embed_passages


def test_with_a_cache_the_dedup_keeps_no_more_than_the_vectors_not_flushed(tmp_path):
    # the last 4,096 recent vectors (4 MB of float16 rows) were kept beside the cache that holds them too
    index = SemanticIndex(Hashed(), tmp_path / "c.sqlite")
    try:
        tracemalloc.start()
        index.add("t", [(i, None, f"text number {i}") for i in range(6_000)])
        assert index.wait(120)
        held = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, semantic.__file__)])
        tracemalloc.stop()
        assert index.coverage("t") == (6_000, 6_000)
    finally:
        tracemalloc.stop()
        index.close()
    # at most the last unflushed step's rows (< _FLUSH + a step, 1 KB each) and the tenant's small arrays
    assert sum(stat.size for stat in held.statistics("filename")) < 2 << 20


def test_with_a_cache_a_text_not_flushed_yet_is_not_embedded_again(tmp_path):
    model = Hashed()
    index = SemanticIndex(model, tmp_path / "c.sqlite")
    writes = []

    def failing_put(rows):  # the cache cannot be written: the vectors stay unflushed
        writes.append(len(rows))
        raise OSError("disk full")

    index._cache.put = failing_put
    try:
        index.add("t", [(0, None, "the same words"), (1, None, "other words")])
        deadline = time.monotonic() + 30
        while not writes and time.monotonic() < deadline:  # embedded, then the flush failed
            time.sleep(0.01)
        assert writes and index.coverage("t") == (2, 2)
        index.add("t", [(2, None, "the same words")])
        index.search("t", _unit(1)[0], 3)  # the backlog inline: its one text is a hit among the unflushed
        assert model.seen == Counter({"the same words": 1, "other words": 1})
        assert index.coverage("t") == (3, 3)
        np.testing.assert_array_equal(index.cosines("t", [0], _unit(1)), index.cosines("t", [2], _unit(1)))
        assert isinstance(index.last_error, OSError)
    finally:
        index._cache.put = lambda rows: None
        index.close()


def test_with_a_cache_a_flushed_text_is_found_in_it_as_a_recent_one_would_be(tmp_path):
    model = Hashed()
    index = SemanticIndex(model, tmp_path / "c.sqlite")
    try:
        index.add("t", [(i, None, f"words {i}") for i in range(600)])
        assert index.wait(60)
        index.add("t", [(600 + i, None, f"words {i}") for i in range(600)])
        assert index.wait(60)
        assert index.coverage("t") == (1_200, 1_200)
        assert set(model.seen.values()) == {1}
        # the model's float32 vector against the cache's float16 one, each stored as float16 rows
        np.testing.assert_allclose(index.cosines("t", list(range(600)), _unit(1)),
                                   index.cosines("t", list(range(600, 1_200)), _unit(1)), rtol=0, atol=1e-4)
    finally:
        index.close()
