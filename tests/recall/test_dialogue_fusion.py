"""A dialogue-form recall's fusion (recall.learned.Linear, ``fusion_trees_use_e5_dialogue.json``):
the logistic weights bench/fusion_dialogue.py chose by cross-validation on MADial's tuning
dialogues are what the default reads, and a different file there changes a dialogue's order."""

import json

import numpy as np
import pytest

from hindbrain import Brain
from hindbrain.recall import e5_dialogue, learned
from hindbrain.recall.learned import FEATURES, Linear

DIALOGUE_FILE = learned.MODEL_FILES[e5_dialogue.MIXED_NAME]


@pytest.fixture
def fresh_models():
    """``learned.trees`` reads each file once: a test that moves the files reads them again."""
    learned.trees.cache_clear()
    yield
    learned.trees.cache_clear()


def _dialogue_recall(brain) -> list:
    for n, text in enumerate(["Bart danced at the Christmas party and felt very happy.",
                              "Bart won the 100 metres at the school sports day.",
                              "Bart burnt his toast this morning and was annoyed.",
                              "Bart performed a card trick for his cousins at New Year.",
                              "Bart lost his scarf on the bus home from the New Year party."]):
        brain.perceive(tenant="u1", agent="madial", kind="observation", text=text, event_id=f"m{n}")
    brain.index.semantic.wait()
    query = '<Bart>: "I am doing a magic trick at the New Year party!"\n<Assistant>: "Great!"\n' \
            '<Bart>: "What should I wear?"'
    return brain.recall(tenant="u1", agent="madial", query=query, k=5, layers=["episodic"]).items


def test_the_default_reads_the_dialogue_logistic_weights(fresh_models):
    shipped = json.loads((learned.MODEL_DIR / DIALOGUE_FILE).read_text("utf-8"))
    model = learned.trees(e5_dialogue.MIXED_NAME)
    assert isinstance(model, Linear) and model.embedder == e5_dialogue.MIXED_NAME
    assert model.weights.tolist() == shipped["weights"] and model.intercept == shipped["intercept"]
    x = np.random.default_rng(19).normal(size=(7, len(FEATURES)))
    assert np.allclose(model.margin(x), shipped["intercept"] + x @ np.array(shipped["weights"]))
    assert type(learned.trees()).__name__ == "Trees"  # text questions keep USE's trees


def test_a_planted_dialogue_file_changes_a_dialogue_recalls_order(tmp_path, fresh_models, monkeypatch):
    with Brain.open(tmp_path / "a") as brain:
        default = [(i.id, i.why["learned"]["probability"]) for i in _dialogue_recall(brain)]
    planted = tmp_path / "models"
    planted.mkdir()
    for name in learned.MODEL_FILES.values():
        if (learned.MODEL_DIR / name).exists():
            (planted / name).write_text((learned.MODEL_DIR / name).read_text("utf-8"))
    wrong = json.loads((planted / DIALOGUE_FILE).read_text("utf-8"))
    wrong["weights"] = [-w for w in wrong["weights"]]  # the chosen fit turned upside down
    (planted / DIALOGUE_FILE).write_text(json.dumps(wrong))
    monkeypatch.setattr(learned, "MODEL_DIR", planted)
    monkeypatch.setattr(learned, "MODEL_PATH", planted / learned.MODEL_FILES[learned.DEFAULT_EMBEDDER])
    learned.trees.cache_clear()
    with Brain.open(tmp_path / "b") as brain:
        upside_down = [(i.id, i.why["learned"]["probability"]) for i in _dialogue_recall(brain)]
    assert len(default) == len(upside_down) >= 3
    assert [i for i, _ in upside_down] != [i for i, _ in default]
    assert [p for _, p in default] == sorted((p for _, p in default), reverse=True)  # placed by the weights
    assert [p for _, p in upside_down] == sorted((p for _, p in upside_down), reverse=True)


@pytest.mark.parametrize("change, message", [
    ({"features": ["lexical"]}, "features"),
    ({"weights": [1.0]}, "finite weights"),
    ({"weights": [float("nan")] * len(FEATURES)}, "finite weights"),
])
def test_a_bad_weights_file_is_refused(change, message):
    data = {"kind": "logistic", "features": list(FEATURES), "embedder": e5_dialogue.MIXED_NAME,
            "weights": [0.0] * len(FEATURES), "intercept": 0.0, **change}
    with pytest.raises(ValueError, match=message):
        learned.model_from_json(data)
    with pytest.raises(ValueError, match="features"):
        Linear(np.zeros(len(FEATURES)), 0.0, FEATURES).margin(np.zeros((2, 3)))
