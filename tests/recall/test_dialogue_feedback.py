"""A dialogue's semantic feedback (``channels.with_feedback``): each candidate's cosine to the
best memory added to its late-interaction cosine; a question keeps its plain cosine."""

import numpy as np
import pytest

from hindbrain import Brain
from hindbrain.recall import channels
from hindbrain.recall.vectors import VectorIndex

MEMORIES = ["Bart danced at the Christmas party and felt very happy.",
            "Bart won the 100 metres at the school sports day.",
            "Bart burnt his toast this morning and was annoyed.",
            "Bart performed a card trick for his cousins at New Year."]
DIALOGUE = '<Bart>: "I am doing a magic trick at the New Year party!"\n<Assistant>: "Great!"\n' \
           '<Bart>: "What should I wear?"'


def test_feedback_adds_the_weighted_cosine_to_the_best_and_keeps_nan():
    late = np.array([0.5, 0.3, np.nan], dtype=np.float32)
    out = channels.with_feedback(late, np.array([1.0, 0.8, np.nan], dtype=np.float32), 0.1)
    np.testing.assert_allclose(out[:2], [0.6, 0.38], rtol=1e-6)
    assert np.isnan(out[2])


@pytest.mark.parametrize("exact_limit", [10**9, 2])
def test_vectors_are_the_rows_cosines_read(exact_limit):
    rng = np.random.default_rng(0)
    data = rng.standard_normal((6, 16)).astype(np.float32)
    index = VectorIndex(16, exact_limit=exact_limit)
    index.add(np.arange(5), data[:5])
    got = index.vectors(np.array([1, 4, 9]))  # 9 was never added
    assert got.shape == (3, 16) and np.isnan(got[2]).all()
    np.testing.assert_allclose(np.linalg.norm(got[:2], axis=1), 1.0, atol=2e-3)
    np.testing.assert_allclose(got[:2] @ data[5], index.cosines(np.array([1, 4]), data[5:6])[:, 0]
                               * np.linalg.norm(data[5]), rtol=1e-4, atol=1e-5)


def _recall(brain, query: str):
    for n, text in enumerate(MEMORIES):
        brain.perceive(tenant="u1", agent="madial", kind="observation", text=text, event_id=f"m{n}")
    brain.index.semantic.wait()
    return brain.recall(tenant="u1", agent="madial", query=query, k=4, layers=["episodic"], explain=True).items


def test_a_dialogue_scores_with_feedback_from_its_best_memory(tmp_path, monkeypatch):
    """Each item's semantic cosine is its late interaction plus FEEDBACK × its cosine to the
    memory of the highest late interaction; ``why`` names that memory. Fails without it."""
    weight = channels.FEEDBACK
    assert weight > 0
    with Brain.open(tmp_path / "on") as brain:
        on = {item.id: item.why["semantic"] for item in _recall(brain, DIALOGUE)}
    monkeypatch.setattr(channels, "FEEDBACK", 0.0)
    with Brain.open(tmp_path / "off") as brain:
        off = {item.id: item.why["semantic"] for item in _recall(brain, DIALOGUE)}
    sources = {why["feedback"]["from"] for why in on.values()}
    assert len(sources) == 1 and not any("feedback" in why for why in off.values())
    best = sources.pop()
    assert on[best]["cosine"] == pytest.approx(off[best]["cosine"] + weight, abs=2e-3)  # its cosine to itself: 1
    assert all(on[i]["cosine"] > off[i]["cosine"] for i in on if i in off)  # every candidate resembles it a little
    assert max(off, key=lambda i: off[i]["cosine"]) == best  # the best memory by the late interaction


def test_a_question_keeps_its_plain_cosine(tmp_path):
    with Brain.open(tmp_path / "brain") as brain:
        items = _recall(brain, "who performed a card trick at New Year?")
    assert items and not any("feedback" in item.why["semantic"] for item in items)
