"""Ingest round eight (issue 28) against the paths it replaced, kept as oracles: the C passes of
``recall/_scan.c`` (``token_hashes``, the learner's word sets, against ``stable_hashes`` of
``py_tokens``; ``quantize``, the vector index's int8 codes, against numpy's ``py_quantize``), the
static tier's unit rows taken as they are, and write hygiene's size test against the whole Jaccard."""

from __future__ import annotations

from array import array

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hindbrain.learning.learner import _word_hashes
from hindbrain.recall import _scan
from hindbrain.recall.tokenize import SEPARATOR, py_tokens
from hindbrain.recall.vectors import py_quantize, quantize

# the tokenisers' edges, as tests/recall/test_scan.py draws them (joiners, CJK of both classes,
# "İ" and "Σ" whose lowercase changes length or depends on context, the separator, a NUL)
_PIECES = ["error-503", "a.b:c/d@e", "x_y", "-", "_", ".", "@", " ", SEPARATOR, "\x00", "²", "٣", "İstanbul",
           "ΟΔΟΣ", "Σ", "e\u0301", "Straße", "中文", "报销系统", "关", "한국어", "カタカナ", "ﬁ", "ǅ",
           "timeout", "IAM", "3.5"]
texts = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=6)), max_size=12).map("".join)


def _fnv1a(word: str) -> int:
    """64-bit FNV-1a over the code points, as a signed int (``stable_hashes``' definition)."""
    h = 0xCBF29CE484222325
    for ch in word:
        h = ((h ^ ord(ch)) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h - (1 << 64) if h >= 1 << 63 else h


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(texts, max_size=6))
def test_token_hashes_are_the_hashes_of_each_texts_oracle_tokens(said):
    assert _scan.token_hashes(said) == {_fnv1a(t) for text in said for t in py_tokens(text)}
    with pytest.raises(TypeError, match="must be str"):
        _scan.token_hashes([*said, None])


@settings(max_examples=150, deadline=None)
@given(st.fixed_dictionaries({}, optional={
    "text": texts, "system": texts, "identity": texts, "action": texts, "expected": texts, "actual": texts,
    "entities": st.lists(texts, max_size=3)}))
def test_an_events_word_hashes_are_those_of_its_joined_words(record):
    """The learner's set, each field tokenised apart, is the set of the fields joined by spaces (what it
    hashed before): a token never spans a space, and lowercasing never looks across one."""
    said = [record.get(k) for k in ("text", "system", "identity", "action", "expected", "actual")]
    joined = " ".join([s for s in said if s] + list(record.get("entities") or ()))
    expected = {_fnv1a(t) for t in py_tokens(joined)}
    assert list(array("q", _word_hashes(record))) == sorted(expected)  # packed: the set's values, ascending


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(texts, max_size=6))
def test_token_hash_bytes_are_token_hashes_packed_sorted(said):
    """Round nine: the learner's word set packed in C (no int or set made) against ``token_hashes``."""
    assert list(array("q", _scan.token_hash_bytes(said))) == sorted(_scan.token_hashes(said))
    with pytest.raises(TypeError, match="must be str"):
        _scan.token_hash_bytes([*said, None])


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), unique=True, max_size=40),
       st.lists(st.integers(-(2**63), 2**63 - 1), unique=True, max_size=40), st.randoms())
def test_shared_hashes_counts_the_intersection_in_any_order(a, b, rng):
    """Any order: a learner snapshot holds sets packed unsorted (as iterated)."""
    b = b + rng.sample(a, len(a) // 2)  # some shared
    rng.shuffle(a)
    rng.shuffle(b)
    assert _scan.shared_hashes(array("q", a).tobytes(), array("q", b).tobytes()) == len(set(a) & set(b))
    with pytest.raises(ValueError, match="whole int64s"):
        _scan.shared_hashes(b"123", b"")


finite = st.floats(-2.0**100, 2.0**100, allow_nan=False, allow_subnormal=True, width=32)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's own, on the rows it is left (subnormal peaks)
@settings(max_examples=examples(300), deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=2, max_side=40), elements=finite))
def test_quantize_gives_numpys_codes_bit_for_bit(rows):
    rows[::3] = 0.0  # zero rows stay zero
    assert np.array_equal(quantize(rows), py_quantize(rows))


def test_quantize_rounds_ties_to_even_as_numpy_does_and_leaves_non_finite_rows_to_numpy():
    # peak 127: the scale is exactly 1, so x.5 values meet rint's ties (to even: 0.5 -> 0, 1.5 -> 2)
    ties = np.array([[127.0, 0.5, 1.5, 2.5, -0.5, -1.5, -126.5, 3.4999998]], dtype=np.float32)
    assert quantize(ties).tolist() == py_quantize(ties).tolist() == [[127, 0, 2, 2, 0, -2, -126, 3]]
    unit = np.random.default_rng(7).standard_normal((500, 256)).astype(np.float32)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    assert np.array_equal(quantize(unit), py_quantize(unit))
    with np.errstate(invalid="ignore"):
        odd = np.array([[1.0, np.inf], [0.5, 0.25]], dtype=np.float32)
        assert np.array_equal(quantize(odd), py_quantize(odd))  # the C pass declines; numpy's codes
    with pytest.raises(ValueError, match="int8"):
        _scan.quantize(unit, np.empty((500, 255), dtype=np.int8), 256)


def test_unit_static_rows_make_the_same_codes_unscaled_and_exact_rows_are_scaled_as_always():
    """``VectorIndex.add(unit=True)``: the static table's rows go to the int8 codes as they are (its pool
    scales them to unit length); their codes are those of the rows scaled again, and exact mode's float16
    rows are the scaled ones either way."""
    from hindbrain.recall.static import default_static
    from hindbrain.recall.vectors import VectorIndex, _unit_rows

    static = default_static()
    assert static.unit_rows
    words = ["printer", "refund", "IAM role", "中文", "vpn"] * 40
    said = [f"{w} {n} 报销 timeout-{n % 7}" for n, w in enumerate(words)]
    rows = static.embed_passages(said)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(quantize(rows), quantize(_unit_rows(rows)))
    keys, probe = np.arange(len(rows)), rows[:5] + rows[5:10]
    for limit in (0, 10_000):  # graph mode at once, exact mode
        told, scaled = VectorIndex(static.dim, exact_limit=limit), VectorIndex(static.dim, exact_limit=limit)
        told.add(keys, rows, defer_graph=True, unit=True)
        scaled.add(keys, rows, defer_graph=True)
        assert np.array_equal(told.cosines(keys, probe), scaled.cosines(keys, probe))


@settings(max_examples=examples(400), deadline=None)
@given(st.sets(st.integers(0, 40), max_size=30), st.sets(st.integers(0, 40), max_size=30))
def test_the_merge_similarity_decides_as_the_whole_jaccard_did(now, before):
    """``learner._merge_similarity`` (sizes first) against the Jaccard over both whole sets; the previous
    set packed in any order (a snapshot's), the new one sorted."""
    from hindbrain.learning.learner import MERGE_SIMILARITY, _merge_similarity

    if not now:
        return  # the learner never compares an event without words
    whole = len(now & before) / len(now | before)
    expected = whole if whole >= MERGE_SIMILARITY else None
    assert _merge_similarity(array("q", sorted(now)).tobytes(), array("q", before).tobytes()) == expected


def _said_fields(record: dict) -> list:
    """What ``_word_hashes`` hashed before round fourteen: the truthy said fields, then the entities."""
    said = [v for v in (record.get(k) for k in ("text", "system", "identity", "action", "expected", "actual")) if v]
    return said + list(record.get("entities") or ())


@settings(max_examples=examples(300), deadline=None)
@given(st.fixed_dictionaries({}, optional={
    "text": st.one_of(st.none(), texts), "system": texts, "identity": st.one_of(st.none(), texts), "action": texts,
    "expected": texts, "actual": texts, "kind": texts, "entities": st.one_of(st.none(), st.lists(texts, max_size=3))}))
def test_record_hash_bytes_reads_the_fields_the_learner_listed(record):
    """Round fourteen: the record's said fields read in C equal ``token_hash_bytes`` of the list the learner built
    (fields it does not hash, such as ``kind``, are not read; None and empty fields are skipped)."""
    assert _scan.record_hash_bytes(record) == _scan.token_hash_bytes(_said_fields(record))


def test_record_hash_bytes_refuses_what_is_not_text():
    with pytest.raises(TypeError, match="must be str"):
        _scan.record_hash_bytes({"text": "ok", "action": 3})
    with pytest.raises(TypeError, match="must be str"):
        _scan.record_hash_bytes({"entities": ["a", None]})
    with pytest.raises(TypeError, match="takes a dict"):
        _scan.record_hash_bytes([("text", "ok")])
    assert _scan.record_hash_bytes({"text": "", "action": 0, "entities": []}) == b""


def _blocks(code_points: list[int], size: int = 128) -> list[list[str]]:
    return [[chr(c) for c in code_points[n:n + size]] for n in range(0, len(code_points), size)]


def test_record_hash_bytes_walks_every_code_point_as_str_lower_would():
    """Round nineteen: a text is walked where it lies, each code point lowered as it is read, and a text holding
    one str.lower would not leave alone (a cased letter beyond ASCII, U+0130, the capital sigma) goes the former
    way. Every code point, against ``token_hash_bytes`` (the former path): those str.lower leaves alone in blocks
    joined as one word, by spaces, by joiners and beside CJK; each of the others alone beside ASCII letters."""
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    alone = [c for c in points if chr(c).lower() == chr(c)]
    for block in _blocks(alone):
        for text in ("".join(block), " ".join(block), "Ab-" + "-".join(block) + ".cD", "中".join(block)):
            record = {"text": text, "system": "X" + text[:9], "entities": [text[::-1]]}
            assert _scan.record_hash_bytes(record) == _scan.token_hash_bytes(_said_fields(record)), block[0]
    for c in sorted(set(points) - set(alone)):
        for text in (f"aB{chr(c)}cd", f"Ab-{chr(c)}.Σx {chr(c)}中"):
            assert _scan.record_hash_bytes({"text": text}) == _scan.token_hash_bytes([text]), hex(c)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=8)), min_size=40, max_size=300).map(" ".join),
       st.lists(texts, max_size=40))
def test_record_hash_bytes_of_long_texts_and_many_entities(text, entities):
    """Past the stack buffer (96 hashes) and the insertion sort's bound (64): the same set as the former path."""
    record = {"text": text, "action": text[::-1], "entities": entities}
    assert _scan.record_hash_bytes(record) == _scan.token_hash_bytes(_said_fields(record))


class _Shouting(str):
    def lower(self):  # a str subclass's own lower is called, as str.lower's copy was
        return "shout"


def test_record_hash_bytes_of_a_str_subclass_calls_its_lower():
    record = {"text": _Shouting("Quiet"), "entities": [_Shouting("Calm")]}
    assert _scan.record_hash_bytes(record) == _scan.token_hash_bytes(_said_fields(record))
    assert _scan.record_hash_bytes(record) == _scan.token_hash_bytes(["shout"])
