"""Dialogue-form tuning data (bench/data/dialogue-tuning/, the ``dial-*`` sets of bench/quality.py): read
as tuning questions only, never a held-out number; bench/fusion_dialogue.py trains on them with MADial's
tuning rows, folding whole dialogues, and can weigh every set alike."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from by_path import module_at

from hindbrain.recall.learned import FEATURES

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module", autouse=True)
def one_openmp_thread():
    """The trees' fits (sklearn's HistGradientBoosting) on one OpenMP thread: on two cores shared
    with three other test workers its threads spin waiting for each other (the six-set test took
    8.0 s of CPU on two threads against 4.5 s on one, and 189 s of wall in a loaded `make test`).
    The fit's result does not depend on the thread count (each feature's histogram and best split
    is one thread's work). sklearn's OpenMP runtime is loaded first: threadpoolctl limits only
    the libraries already loaded."""
    import sklearn.ensemble  # noqa: F401 - loads the OpenMP runtime the limit applies to
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="openmp"):
        yield


@pytest.fixture(scope="module")
def dialogue():
    return module_at(BENCH / "fusion_dialogue.py", "fusion_dialogue")


def _write(root: Path, lang: str) -> None:
    mems = [{"id": 1001 + n, "user_id": 1, "time": "2024-01-01", "scene": "Activity", "emotion": "Calm",
             "event": f"Maya did thing {n}."} for n in range(3)]
    queries = [{"id": n, "user_id": 1, "query": f'<BOD>\n<Maya>: "thing {n}"\n', "test_turn": [2],
                "gold": [1001 + n]} for n in range(3)]
    for name, rows in (("memories", mems), ("queries", queries)):
        (root / f"madial_{lang}_{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")


def test_a_dialogue_tuning_set_is_all_tuning_and_its_own_dialogues(dialogue, tmp_path):
    quality = dialogue.quality
    _write(tmp_path, "en")
    data = quality.load("dial-en", dialogue_root=tmp_path)
    assert data.name == "dial-en" and len(data.questions) == 3
    assert all(q.tuning for q in data.questions) and data.half("heldout") == []  # even ids too: no held-out half
    # a dialogue of its own in the folds: never MADial's dialogue 0 / 2 (whose ids are "en-0", "zh-0")
    assert {dialogue.dialogue_of(q.qid) for q in data.questions} == {"en-0", "en-1", "en-2"}
    assert dialogue.dialogue_of("zh-0") == dialogue.dialogue_of("en-0") == "0"
    assert "dial-en" not in quality.DEFAULT_SETS and "dial-en" in quality.TUNING_ONLY


def _pools(prefix: str, n: int) -> list:
    x = np.zeros((2, len(FEATURES)))
    return [(f"{prefix}-{i}", True, {"a"}, ["a", "b"], x) for i in range(n)]


def test_cross_validation_trains_on_the_new_sets_and_folds_whole_dialogues(dialogue):
    sets = {"madial-zh": _pools("zh", 10), "madial-en": _pools("en", 10), "dial-en": _pools("dial-en", 10)}
    seen = []

    def recording(train, _others):
        seen.append({n: {p[0] for p in ps} for n, ps in train.items()})
        return lambda x: np.arange(len(x))

    scores = dialogue.cross_validated(recording, sets, [])
    assert len(seen) == dialogue.FOLDS * dialogue.REPEATS and set(scores) == set(sets)
    every = {n: {p[0] for p in ps} for n, ps in sets.items()}
    for repeat in range(dialogue.REPEATS):
        held_out = []
        for train in seen[repeat * dialogue.FOLDS:(repeat + 1) * dialogue.FOLDS]:
            assert train["dial-en"]  # the new rows train every fold
            out = {n: every[n] - train[n] for n in sets}
            # both languages of a MADial dialogue out together
            assert {dialogue.dialogue_of(q) for q in out["madial-zh"]} == \
                {dialogue.dialogue_of(q) for q in out["madial-en"]}
            held_out += [q for qs in out.values() for q in qs]
        assert sorted(held_out) == sorted(q for qs in every.values() for q in qs)  # each scored once a draw
    without = dialogue.without(("dial-en",), recording)
    without(sets, [])
    assert set(seen[-1]) == {"madial-zh", "madial-en"}


def test_each_set_weighs_the_same(dialogue):
    small, large = _pools("zh", 3), _pools("conv", 12)
    w = dialogue.set_weights([small, large])
    assert len(w) == 2 * 15 and w[:6].sum() == pytest.approx(w[6:].sum()) and w.mean() == pytest.approx(1.0)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_committed_sets_are_what_their_readme_says(dialogue, lang):
    root = BENCH / "data" / "dialogue-tuning"
    data = dialogue.quality.load(f"dial-{lang}")
    mems = [json.loads(line) for line in (root / f"madial_{lang}_memories.jsonl").read_text("utf-8").splitlines()]
    owner = {f"m{m['id']}": f"u{m['user_id']}" for m in mems}
    assert len(mems) == 120 and len(data.questions) == 100 and data.half("heldout") == []
    assert all(owner[g] == q.tenant for q in data.questions for g in q.gold)  # gold is the asker's own memory
    last_turns = [q.query.rstrip("\n").rsplit("\n", 1)[-1] for q in data.questions]
    assert not any(turn.startswith("<Assistant>") for turn in last_turns)  # each ends on the user's turn


def _learnable(prefix: str, n: int, seed: int) -> list:
    """Pools whose gold is the candidate with the highest semantic score: something trees can learn."""
    rng = np.random.default_rng(seed)
    semantic = FEATURES.index("semantic")
    out = []
    for i in range(n):
        x = rng.random((4, len(FEATURES)))
        ids = [f"{prefix}{i}-{c}" for c in range(4)]
        out.append((f"{prefix}-{i}", True, {ids[int(np.argmax(x[:, semantic]))]}, ids, x))
    return out


def test_the_six_set_arms_write_trees_the_product_reads(dialogue, tmp_path):
    from hindbrain.recall import learned
    from hindbrain.recall.e5_dialogue import MIXED_NAME

    sets = {"madial-zh": _learnable("zh", 20, 0), "madial-en": _learnable("en", 20, 1),
            "dial-en": _learnable("dial-en", 20, 2)}
    others = [_learnable("conv", 30, 3)]
    name = "trees, six sets, the dialogue sets weighted as one (round nineteen's 'each set weighted equally')"
    for arm in (name, f"{name}, MADial's rows only"):
        out = tmp_path / "dialogue.json"
        candidates = dialogue.arms(learned.model_path(MIXED_NAME), new_data=True)
        assert dialogue.writable(arm, candidates[arm])
        dialogue.write_chosen(arm, candidates[arm], sets, others, out)
        written = json.loads(out.read_text("utf-8"))
        model = learned.model_from_json(written)
        assert isinstance(model, learned.Trees) and model.embedder == MIXED_NAME
        rows = written["fitted_by"].split("dialogue sets in the rows: ")[1].split(";")[0].split(", ")
        assert rows == (["madial-zh", "madial-en"] if arm.endswith("rows only") else list(sets))
        # it learned the semantic column: pools it never saw, ranked by it (chance 25 %, labels reversed ~0 %)
        unseen = _learnable("unseen", 40, 9)
        hits = sum(pool[3][int(np.argmax(model.margin(pool[4])))] in pool[2] for pool in unseen)
        assert hits >= 0.75 * len(unseen), hits
