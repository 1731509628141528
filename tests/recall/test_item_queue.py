"""The neural tier's queue (``recall.semantic.ItemQueue``): the items, in the order a deque of
tuples gave them, with numbers-only items held as int64 runs instead of a tuple each."""

import random
import threading
import time
import tracemalloc
from collections import deque

import numpy as np
import pytest

from hindbrain.recall.semantic import ItemQueue, SemanticIndex


def test_the_queue_gives_the_items_a_deque_gave_in_the_same_order():
    """Random runs of numbers, whole items, takes and failed steps put back: the same items as
    the deque of tuples the queue replaced, at every step, and the same length."""
    rng = random.Random(5)
    queue, model, no = ItemQueue(), deque(), 0
    for _ in range(2_000):
        op = rng.random()
        if op < 0.3:
            run = list(range(no, no + rng.randrange(0, 40)))
            no += len(run)
            queue.extend_numbers(run)
            model.extend((n, None, None) for n in run)
        elif op < 0.45:
            items = [(no + i, f"d{no + i}", f"text {no + i}") for i in range(rng.randrange(0, 5))]
            no += len(items)
            queue.extend(items)
            model.extend(items)
        else:
            k = rng.randrange(0, 70)
            taken = queue.take(k)
            expected = [model.popleft() for _ in range(min(k, len(model)))]
            assert taken == expected
            if taken and rng.random() < 0.2:  # a failed step: its items back in front, in order
                queue.put_back(taken)
                model.extendleft(reversed(taken))
        assert len(queue) == len(model) and bool(queue) == bool(model)
        assert list(queue) == list(model)
    assert queue.take(len(model) + 5) == list(model)
    assert not queue and queue.take(3) == []


def test_a_run_of_numbers_must_be_flat():
    with pytest.raises(ValueError, match="1-d run"):
        ItemQueue().extend_numbers(np.zeros((2, 2), dtype=np.int64))


def test_a_run_is_the_queues_own_copy():
    run = np.arange(4, dtype=np.int64)
    queue = ItemQueue()
    queue.extend_numbers(run)
    run[:] = 9
    assert [no for no, _, _ in queue.take(4)] == [0, 1, 2, 3]


class Gated:
    """An embedder that waits for ``gate`` before each batch: the queue stays full meanwhile."""

    name, dim = "gated", 8

    def __init__(self):
        self.gate = threading.Event()

    def embed_queries(self, texts):
        return self.embed_passages(texts)

    def embed_passages(self, texts):
        self.gate.wait(20)
        return np.ones((len(texts), self.dim), dtype=np.float32)


def test_queued_numbers_cost_bytes_not_objects_and_are_embedded_with_their_texts():
    """With the texts kept by the owner (``text_of``) a queued document costs its 8 B number, not
    a tuple and an int (~100 B with the deque's slot: ~60 B an event at the end of a 100k
    import); each is still embedded with its own text."""
    semantic = SemanticIndex(Gated(), inline_limit=0)
    texts = {0: "first"}
    semantic.text_of = lambda tenant, no: texts[no]
    try:
        semantic.add("z", [(0, "z0", "first")])
        while semantic._tenants["z"].queue:  # the background thread holds it, waiting at the gate
            time.sleep(0.01)
        n = 20_000
        items = [(no, f"e{no}", f"text {no}") for no in range(1, n + 1)]
        texts.update({no: text for no, _, text in items})
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        semantic.add("z", items)
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        held = sum(d.size_diff for d in after.compare_to(before, "filename")
                   if d.traceback[0].filename.endswith(("semantic.py", "numpy/core/numeric.py")))
        assert len(semantic._tenants["z"].queue) == n
        assert held < 24 * n, f"{held / n:.0f} B a queued number"
        assert semantic._tenants["z"].queue.take(2) == [(1, None, None), (2, None, None)]
        semantic._tenants["z"].queue.put_back([(1, None, None), (2, None, None)])
        semantic.embedder.gate.set()
        assert semantic.wait(30)
        assert semantic.neural_count("z") == n + 1
    finally:
        semantic.embedder.gate.set()
        semantic.close()
