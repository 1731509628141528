"""The neural tier yields to a bulk import (``SemanticIndex.importing``): while a perceive call of
``BULK_EVENTS`` or more runs, and ``BULK_LINGER_S`` after, the background thread starts no embedding
(the workers share the caller's caches and memory bus), at most ``BULK_YIELD_S`` at a stretch; smaller
calls never hold it back; every event keeps its static vector at return."""

import time

from hindbrain import Brain
from hindbrain.recall import semantic as semantic_mod
from hindbrain.recall.embed import default_embedder
from hindbrain.recall.semantic import BULK_EVENTS, SemanticIndex
from hindbrain.recall.static import default_static


class TimedPool:
    """An embedder pool noting when each call started (the real model computes the vectors)."""

    owned = False
    workers = 1

    def __init__(self):
        self.model = default_embedder()
        self.started: list[float] = []

    def embed_many(self, batches):
        self.started.append(time.monotonic())
        return [self.model.embed_passages(b) for b in batches]

    def close(self):
        pass


def _index(pool):
    return SemanticIndex(default_embedder(), static=default_static(), pool=pool, inline_limit=0)


def test_no_embedding_starts_while_a_bulk_import_runs_and_it_catches_up_after():
    pool = TimedPool()
    s = _index(pool)
    try:
        with s.importing(BULK_EVENTS):
            s.add("acme", [(i, f"d{i}", f"ticket {i}: the printer on floor {i % 7} jams") for i in range(200)])
            time.sleep(0.6)
            assert pool.started == []  # the tier waited for the import
            ended = time.monotonic()
        assert s.wait(60)
        assert pool.started and min(pool.started) >= ended
        assert s.tiers("acme", [0, 199]) == ["neural", "neural"]
    finally:
        s.close()


def test_a_small_call_does_not_hold_the_tier_back():
    pool = TimedPool()
    s = _index(pool)
    try:
        with s.importing(BULK_EVENTS - 1):
            s.add("acme", [(i, f"d{i}", f"ticket {i}: the printer jams") for i in range(20)])
            assert s.wait(30)  # embedded inside the call
        assert pool.started
    finally:
        s.close()


def test_a_bulk_import_longer_than_the_yield_slows_the_tier_but_never_stops_it(monkeypatch):
    monkeypatch.setattr(semantic_mod, "BULK_YIELD_S", 0.2)
    pool = TimedPool()
    s = _index(pool)
    try:
        with s.importing(BULK_EVENTS):
            s.add("acme", [(i, f"d{i}", f"ticket {i}: the printer jams") for i in range(20)])
            assert s.wait(30)  # a stream of bulk calls that never pauses: the tier still gets its steps
    finally:
        s.close()


def test_perceive_many_of_a_bulk_holds_the_neural_tier_until_it_returns(tmp_path):
    brain = Brain.open(tmp_path / "brain", embed_workers=0)
    pool = TimedPool()
    semantic = brain.index.semantic
    semantic.pool, semantic.upgrade_limit = pool, 0
    try:
        rows = [{"tenant": "acme", "agent": "a1", "text": f"ticket {n}: the printer on floor {n % 9} jams again"}
                for n in range(BULK_EVENTS * 3)]
        calls: list[tuple[float, float]] = []
        for part in range(2):  # two calls back to back, as an import makes them
            began = time.monotonic()
            brain.perceive_many(rows[part::2])
            calls.append((began, time.monotonic()))
        # no embedding started inside either call nor in the gap between them (BULK_LINGER_S)
        assert not [t for t in pool.started if calls[0][0] <= t < calls[1][1]], (pool.started, calls)
        pack = brain.recall(tenant="acme", agent="a1", query="printer jams on floor 3", k=3)
        assert pack.items  # found at once, by the static tier
        assert semantic.wait(120) and pool.started
    finally:
        brain.close()
