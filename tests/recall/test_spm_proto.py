"""``e5_query.spm_model``: the SentencePiece proto written in one pass is byte for byte the one
the former field-by-field writer made (kept here as the oracle), for any pieces, scores and
special types — long pieces (two- and three-byte length prefixes), any float32, types past a
one-byte varint — and it refuses scores that do not match the pieces as the former did."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall.e5_query import _field, spm_model

PIECES = st.lists(st.one_of(st.binary(max_size=8), st.binary(min_size=100, max_size=300)), max_size=40)
SCORES = st.floats(width=32, allow_nan=False)
KINDS = st.sampled_from([1, 2, 3, 4, 6, 127, 128, 300, 1 << 40])


def former_spm_model(pieces: list[bytes], scores: np.ndarray, specials: dict[int, int]) -> bytes:
    body = bytearray()
    for i, (piece, score) in enumerate(zip(pieces, scores.tolist(), strict=True)):
        msg = _field(1, 2, piece) + _field(2, 5, struct.pack("<f", score)) + _field(3, 0, specials.get(i, 1))
        body += _field(1, 2, msg)
    trainer = _field(3, 0, 1) + _field(4, 0, len(pieces))
    normalizer = _field(1, 2, b"identity") + _field(3, 0, 1) + _field(4, 0, 0) + _field(5, 0, 1)
    return bytes(body) + _field(2, 2, trainer) + _field(3, 2, normalizer)


@st.composite
def models(draw):
    pieces = draw(PIECES)
    scores = np.array(draw(st.lists(SCORES, min_size=len(pieces), max_size=len(pieces))), dtype=np.float32)
    indexes = st.integers(0, max(len(pieces) - 1, 0))
    specials = draw(st.dictionaries(indexes, KINDS, max_size=min(len(pieces), 6))) if pieces else {}
    return pieces, scores, specials


@settings(max_examples=100, deadline=None)
@given(models())
def test_the_proto_is_the_former_writers_byte_for_byte(model):
    pieces, scores, specials = model
    assert spm_model(pieces, scores, specials) == former_spm_model(pieces, scores, specials)


def test_a_piece_longer_than_two_varint_bytes_and_a_wrong_number_of_scores():
    pieces = [b"x" * 20000, b"\xe2\x96\x81a", b""]
    scores = np.array([-1.5, 0.0, 3.0e38], dtype=np.float32)
    assert spm_model(pieces, scores, {2: 3}) == former_spm_model(pieces, scores, {2: 3})
    for wrong in (scores[:2], np.append(scores, np.float32(1))):
        for writer in (spm_model, former_spm_model):
            with pytest.raises(ValueError):
                writer(pieces, wrong, {})
