"""The vector index's float16 casts in C (``_scan.to_halves``/``from_halves``, issue 28 round
fourteen) against numpy's ``astype``, their oracle, bit for bit: every float32 bit pattern (finite,
subnormal, ties, the half range's edges, inf and NaN, which are left to numpy), and the exact-mode
rows and the codes of the switch to graph mode they feed."""

from __future__ import annotations

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hindbrain.recall import _scan, vectors
from hindbrain.recall.vectors import VectorIndex, _unit_rows, from_half, py_quantize, quantize, to_half, unit_halves

# any 32-bit pattern: normal, subnormal, the half range's edges, overflow, inf and NaN
_BITS = st.integers(0, 2**32 - 1)
# values near the half's interesting points: ties between two halves, the subnormal halves, 65504
_EDGES = st.sampled_from([0.0, -0.0, 65504.0, 65519.996, 65520.0, 6.1035156e-05, 5.9604645e-08, 2.9802322e-08,
                          2.9802326e-08, 1.0009766, 1.0004883, 1.0014648, -1.0004883, 0.099975586, 1e-9, np.inf])


def _bits(values) -> np.ndarray:
    return np.array(values, dtype=np.uint32).view(np.float32)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's overflow warning, on the values left to it
@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(_BITS.map(lambda b: _bits([b])[0]), _EDGES), max_size=40))
def test_to_half_is_numpys_cast_bit_for_bit(values):
    x = np.array(values, dtype=np.float32)
    assert np.array_equal(to_half(x).view(np.uint16), x.astype(np.float16).view(np.uint16))


@settings(max_examples=examples(300), deadline=None)
@given(hnp.arrays(np.uint16, st.integers(0, 40)))
def test_from_half_is_numpys_cast_bit_for_bit(bits):
    x = bits.view(np.float16)
    assert np.array_equal(from_half(x).view(np.uint32), x.astype(np.float32).view(np.uint32))


_ROWS = st.floats(-2.0**63, 2.0**63, allow_nan=False, allow_subnormal=True, width=32)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's own, on the rows it is left
@settings(max_examples=examples(300), deadline=None)
@given(hnp.arrays(np.float32, hnp.array_shapes(min_dims=2, max_dims=2, max_side=300), elements=_ROWS),
       st.sampled_from([1.0, 1e-20, 1e-3, 1e15]))
def test_unit_halves_is_numpys_unit_rows_then_cast_bit_for_bit(rows, scale):
    rows = (rows * np.float32(scale)).astype(np.float32)
    rows[::4] = 0.0  # a zero row stays zero
    assert np.array_equal(unit_halves(rows).view(np.uint16), _unit_rows(rows).astype(np.float16).view(np.uint16))


def test_the_c_casts_decline_what_numpy_must_do_and_check_sizes():
    if not _scan.to_halves(np.ones(9, np.float32), np.empty(9, np.float16)):
        pytest.skip("no F16C on this CPU: numpy casts every value")
    out = np.empty(9, np.float16)
    # a value past the half's range (numpy warns of the overflow), inf, NaN: declined, numpy's cast then
    for bad in (70000.0, np.inf, np.nan):
        assert not _scan.to_halves(np.array([0.5] * 8 + [bad], np.float32), out)
        assert not _scan.to_halves(np.array([bad] + [0.5] * 8, np.float32), out)
    assert not _scan.from_halves(np.array([1.0, np.nan], np.float16), np.empty(2, np.float32))
    assert _scan.from_halves(np.array([1.0, np.inf, -np.inf], np.float16), np.empty(3, np.float32))
    with pytest.raises(ValueError, match="as many values"):
        _scan.to_halves(np.ones(4, np.float32), np.empty(3, np.float16))
    with pytest.raises(ValueError, match="as many values"):
        _scan.unit_halves(np.ones((2, 4), np.float32), np.empty(6, np.float16), 4)
    assert not _scan.unit_halves(np.array([[3e19, 1.0]], np.float32), np.empty(2, np.float16), 2)  # norm overflows
    with pytest.raises(ValueError, match="as many values"):
        _scan.from_halves(np.ones(4, np.float16), np.empty(3, np.float32))


def test_exact_rows_and_the_switch_to_graph_codes_are_numpys():
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((300, 64)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    index = VectorIndex(64, exact_limit=200)
    index.add(np.arange(200), rows[:200], defer_graph=True, unit=True)
    kept = index._rows.take(np.arange(200))
    unit = rows[:200] / np.linalg.norm(rows[:200], axis=1, keepdims=True)  # exact mode scales again
    assert np.array_equal(kept.view(np.uint16), unit.astype(np.float16).view(np.uint16))
    assert np.array_equal(quantize(kept), py_quantize(kept.astype(np.float32)))
    index.add(np.arange(200, 300), rows[200:], defer_graph=True, unit=True)  # past the limit: graph mode
    assert index.takes_codes()
    assert np.array_equal(index._blocks[0][:200], py_quantize(kept.astype(np.float32)))


@pytest.mark.parametrize("part", [1, 7, 512])
def test_the_switch_makes_codes_of_every_row_whatever_its_parts(monkeypatch, part):
    """The switch to graph mode widens and quantizes the float16 rows a part at a time (``_SWITCH_ROWS``):
    every present row's codes, scattered keys and a last part cut short included, the others left zero."""
    monkeypatch.setattr(vectors, "_SWITCH_ROWS", part)
    rng = np.random.default_rng(part)
    rows = rng.standard_normal((230, 32)).astype(np.float32)
    keys = np.arange(0, 460, 2)  # every other key: the present ones are not a range
    index = VectorIndex(32, exact_limit=200)
    index.add(keys[:200], rows[:200], defer_graph=True)
    kept = index._rows.take(keys[:200])
    index.add(keys[200:], rows[200:], defer_graph=True)  # past the limit: the switch
    assert index.takes_codes()
    block = index._blocks[0]
    assert np.array_equal(block[keys[:200]], py_quantize(kept.astype(np.float32)))
    assert not block[1:400:2].any()
