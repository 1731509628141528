"""A dialogue-form recall's fusion file (``fusion_trees_use_e5_dialogue.json``) may hold logistic
weights (recall.learned.Linear, what bench/fusion_dialogue.py exports when its cross-validation picks
them): such a file is read as weights, and the weights place a dialogue's order."""

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


def _plant(tmp_path, monkeypatch, dialogue: dict):
    """Every shipped fusion file copied into a folder the product reads, the dialogue's replaced."""
    planted = tmp_path / "models"
    planted.mkdir(exist_ok=True)
    for name in learned.MODEL_FILES.values():
        if (learned.MODEL_DIR / name).exists():
            (planted / name).write_text((learned.MODEL_DIR / name).read_text("utf-8"))
    (planted / DIALOGUE_FILE).write_text(json.dumps(dialogue))
    monkeypatch.setattr(learned, "MODEL_DIR", planted)
    monkeypatch.setattr(learned, "MODEL_PATH", planted / learned.MODEL_FILES[learned.DEFAULT_EMBEDDER])
    learned.trees.cache_clear()


def _logistic(weights: dict[str, float]) -> dict:
    return {"kind": "logistic", "features": list(FEATURES), "embedder": e5_dialogue.MIXED_NAME,
            "weights": [weights.get(f, 0.0) for f in FEATURES], "intercept": -1.0}


def test_a_logistic_file_filed_for_dialogues_is_read_as_weights(tmp_path, fresh_models, monkeypatch):
    assert type(learned.trees(e5_dialogue.MIXED_NAME)).__name__ == "Trees"  # what ships (round nineteen)
    data = _logistic({"semantic": 4.0, "lexical": 1.0})
    _plant(tmp_path, monkeypatch, data)
    model = learned.trees(e5_dialogue.MIXED_NAME)
    assert isinstance(model, Linear) and model.embedder == e5_dialogue.MIXED_NAME
    assert model.weights.tolist() == data["weights"] and model.intercept == data["intercept"]
    x = np.random.default_rng(19).normal(size=(7, len(FEATURES)))
    assert np.allclose(model.margin(x), data["intercept"] + x @ np.array(data["weights"]))
    assert type(learned.trees()).__name__ == "Trees"  # text questions keep USE's trees


def test_planted_dialogue_weights_place_a_dialogue_recalls_order(tmp_path, fresh_models, monkeypatch):
    _plant(tmp_path, monkeypatch, _logistic({"semantic": 6.0, "cosine": 6.0}))
    with Brain.open(tmp_path / "a") as brain:
        upright = [(i.id, i.why["learned"]["probability"]) for i in _dialogue_recall(brain)]
    _plant(tmp_path, monkeypatch, _logistic({"semantic": -6.0, "cosine": -6.0}))  # turned upside down
    with Brain.open(tmp_path / "b") as brain:
        upside_down = [(i.id, i.why["learned"]["probability"]) for i in _dialogue_recall(brain)]
    assert len(upright) == len(upside_down) >= 3
    assert [i for i, _ in upside_down] != [i for i, _ in upright]
    assert [p for _, p in upright] == sorted((p for _, p in upright), reverse=True)  # placed by the weights
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
