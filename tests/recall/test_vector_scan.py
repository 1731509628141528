"""The exact scan of vectors not yet in the graph (a bulk import's tail, a selective mask):
exact against brute force over the int8 codes, whatever the mask's shape, and no Python work
per scanned vector (a recall right after a 100k import scans the whole tail for every view)."""

import gc
import sys
from collections import Counter

import numpy as np
import pytest

from hindbrain.recall.vectors import VectorIndex, quantize

DIM = 32


def unit(n: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def backlog(n: int) -> tuple[VectorIndex, np.ndarray]:
    """A graph-mode index whose ``n`` vectors all wait for the graph (every search scans them)."""
    data = unit(n, seed=n)
    index = VectorIndex(DIM, exact_limit=10)
    index.add(np.arange(n), data, defer_graph=True)
    assert not index.exact and index.unbuilt == n
    return index, data


def brute_force(data: np.ndarray, query: np.ndarray, allowed: np.ndarray | None, k: int) -> np.ndarray:
    """The top-``k`` cosines over the int8 codes (what the index stores), float64."""
    codes = quantize(data).astype(np.float64)
    q = quantize(query[None, :])[0].astype(np.float64)
    cos = codes @ q / np.maximum(np.linalg.norm(codes, axis=1) * np.linalg.norm(q), 1e-30)
    if allowed is not None:
        cos = np.where(allowed[: len(cos)], cos, -np.inf)
    return np.sort(cos)[::-1][:k]


MASKS = {
    "none": lambda n, rng: None,
    "two thirds hidden (other agents' private events)": lambda n, rng: rng.random(n) < 0.34,
    "a few keys spread out (gathered)": lambda n, rng: rng.random(n) < 0.01,
    "one contiguous run": lambda n, rng: (np.arange(n) > n // 3) & (np.arange(n) < n // 2),
    "nothing": lambda n, rng: np.zeros(n, dtype=bool),
}


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("n", [500, 40_000])  # one block, and across the 32k-row block boundary
def test_the_tail_scan_is_exact(mask, n):
    index, data = backlog(n)
    rng = np.random.default_rng(7)
    allowed = MASKS[mask](n, rng)
    for query in unit(5, seed=1):
        for k in (1, 10, 64):
            keys, sims = index.search(query, k, allowed)
            want = brute_force(data, query, allowed, k)
            want = want[np.isfinite(want)]
            assert len(keys) == len(want)
            if allowed is not None:
                assert allowed[keys].all()
            assert len(set(keys.tolist())) == len(keys)
            assert (np.diff(sims) <= 0).all()  # best first
            np.testing.assert_allclose(sims, want, atol=1e-5)
            # each returned key's own cosine is the one reported
            np.testing.assert_allclose(brute_force(data[keys], query, None, len(keys)), np.sort(sims)[::-1],
                                       atol=1e-5)


def test_a_zero_vector_in_the_tail_scores_zero():
    index, data = backlog(200)
    index.add(np.array([5]), np.zeros((1, DIM), dtype=np.float32), defer_graph=True)
    keys, sims = index.search(data[9], 200)
    assert sims[keys.tolist().index(5)] == 0.0


def python_calls(fn) -> int:
    calls: Counter = Counter()

    def count(frame, event, arg):
        if event == "call":
            calls[frame.f_code] += 1

    # A collection during the count would run other tests' finalizers (``__del__``) as calls of
    # this thread: in the full suite one added 2 calls to one of two counts. Collect first, then
    # count with the collector off, so only ``fn``'s own calls are counted.
    gc.collect()
    gc.disable()
    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(None)
        gc.enable()
    return sum(calls.values())


def test_scanning_a_bigger_tail_costs_no_more_python_calls():
    """10x the unbuilt vectors, under a mask that hides two thirds of them (the shape of a fleet
    brain's backlog): the same number of Python calls, so the scan's cost is the kernel's."""
    counts = []
    for n in (2_000, 20_000):  # both inside one block: the per-block work is the same
        index, _ = backlog(n)
        allowed = np.random.default_rng(3).random(n) < 0.34
        query = unit(1, seed=2)[0]
        index.search(query, 32, allowed)  # first-call imports and caches out of the count
        counts.append(python_calls(lambda index=index, allowed=allowed, query=query: index.search(query, 32, allowed)))
    assert counts[0] == counts[1]
