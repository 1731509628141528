"""The neural tier in the fleet: an embedder consumer group writes ``vectors``, the Brain's
recall turns from the static tier to the neural one as they arrive, and a replay (a fresh
Brain on the same topics) gets the neural tier back from ``vectors`` without the model."""

from __future__ import annotations

import time

import numpy as np
import pytest

from hindbrain import Brain
from hindbrain.streams.embedders import EmbedderWorker, decode_vector, encode_vector, fair_batches

TEXTS = ["the nightly backup job failed because the disk was full",
         "payroll export timed out against the finance database",
         "the nightly backup job failed because the disk was full",  # the same text: embedded once
         "a customer could not reset the password on the mobile app"]


def tiers_of(brain: Brain, query: str) -> dict[str, str]:
    pack = brain.recall(tenant="acme", query=query, layers=["episodic"], k=10)
    return {item.id: item.why.get("semantic", {}).get("tier") for item in pack.items}


def wait_for(predicate, what, timeout: float = 240.0):
    """Polls ``predicate`` until it holds; the deadline only bounds a run on a loaded machine
    (a whole suite on 2 busy cores took ~90 s here for what takes ~10 s alone). ``what`` is the
    message, or a function giving it then (the state the wait stopped in)."""
    deadline = time.monotonic() + timeout
    while not (got := predicate()):
        assert time.monotonic() < deadline, what() if callable(what) else what
        time.sleep(0.1)
    return got


def follow_state(brain: Brain) -> str:
    """Where a following brain's neural tier stands: documents indexed, vectors read from the
    topic, items still waiting for theirs, whether the tails run."""
    from hindbrain.streams.embedders import VectorTail
    from hindbrain.streams.kafka_runner import IndexTail

    semantic = brain.index.semantic
    tenant = brain.index.tenants.get("acme")
    tails = {type(s).__name__: (s.alive, getattr(s, "received", None), getattr(s, "_error", None))
             for s in brain.services if isinstance(s, VectorTail | IndexTail)}
    return (f"documents {0 if tenant is None else len(tenant.docs)}, neural {semantic.neural_count('acme')}, "
            f"pending {semantic.pending('acme')}, tails (alive, received, error) {tails}")


def test_the_embedder_group_makes_the_neural_tier_and_a_replay_reads_it_back(tmp_path, kafka):
    settings = dict(kafka=kafka.bootstrap, kafka_prefix=kafka.prefix, worker_group=f"{kafka.prefix}projector",
                    kafka_embedders=True)
    query = "backup failure storage exhausted"
    with Brain.open(tmp_path / "live", **settings) as brain:
        ids = brain.perceive_many([{"tenant": "acme", "text": t} for t in TEXTS])
        assert set(tiers_of(brain, query).values()) == {"static"}  # before any embedder ran
        log = kafka.log()
        worker = EmbedderWorker(log, brain.index.semantic.embedder, f"{kafka.prefix}embedders")
        worker.start()
        try:
            wait_for(lambda: brain.index.semantic.neural_count("acme") == len(ids),
                     lambda: f"the embedder group's vectors never reached recall: {follow_state(brain)}")
        finally:
            worker.stop()
            log.close()
        assert worker.embedded == worker.produced == 3  # the repeated text once
        assert set(tiers_of(brain, query).values()) == {"neural"}

    # A replay: a fresh home and projector group rebuild the views from offset 0, and the
    # neural tier comes back from the vectors topic; no embedder runs now.
    with Brain.open(tmp_path / "replayed", **{**settings, "worker_group": f"{kafka.prefix}replay"}) as again:
        wait_for(lambda: again.index.semantic.neural_count("acme") == len(ids),
                 lambda: f"the replayed brain never read the neural tier back from the vectors topic: "
                         f"{follow_state(again)}")
        got = tiers_of(again, query)
        assert got and set(got) <= set(ids) and set(got.values()) == {"neural"}


def test_batches_take_tenants_in_turn():
    items = [("bulk", bytes([i]), f"b{i}") for i in range(6)] + [("small", b"s", "s0")]
    batches = fair_batches(items, size=2)
    assert [t for t, _, _ in batches[0]] == ["bulk", "small"]  # the late small tenant is in the first batch
    assert sum(len(b) for b in batches) == len(items)


def test_a_vector_message_round_trips_and_a_cut_one_is_refused():
    vec = np.linspace(-1, 1, 512, dtype=np.float32)
    model, back = decode_vector(encode_vector("use", vec))
    assert model == "use" and np.allclose(back, vec, atol=1e-3)
    with pytest.raises(ValueError, match="cut"):
        decode_vector(encode_vector("use", vec)[:-1])
