"""The learned fusion (recall.learned): trees evaluated as arrays, the pool re-ordered with its
fused scores handed out again, every move explained; the shipped trees through Brain.recall."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain import Brain
from hindbrain.recall import e5_dialogue, learned
from hindbrain.recall.expand import VIA_KINDS
from hindbrain.recall.learned import FEATURES, Trees

LEXICAL = FEATURES.index("lexical")


def _stump(feature: int, threshold: float, left: float, right: float) -> dict:
    return {"feature": [feature, 0, 0], "threshold": [threshold, 0, 0], "left": [1, 0, 0], "right": [2, 0, 0],
            "missing_left": [True, True, True], "leaf": [False, True, True], "value": [0.0, left, right]}


def _trees(*stumps: dict, baseline: float = 0.0) -> Trees:
    return Trees.from_json({"features": list(FEATURES), "baseline": baseline, "depth": 1, "trees": list(stumps)})


def _candidate(lexical: float, semantic: float, score: float, ts: int):
    return SimpleNamespace(channel_scores={"lexical": lexical, "semantic": semantic, "graph": 0.0, "scenario": 0.0,
                                           "freshness": 0.0},
                           score=score, cosine=semantic, why={"score": score},
                           doc=SimpleNamespace(ts_us=ts, event_kind="observation"))


def _query():
    return SimpleNamespace(terms=["magic", "trick"], indirect=False, described=False, views=None, associative=1.0)


def test_trees_add_their_leaves_to_the_baseline():
    trees = _trees(_stump(LEXICAL, 0.5, -1.0, 2.0), _stump(LEXICAL, 0.1, 0.0, 0.5), baseline=-0.25)
    x = np.zeros((3, len(FEATURES)))
    x[:, LEXICAL] = [0.0, 0.3, 0.9]
    assert trees.margin(x).tolist() == [-1.25, -0.75, 2.25]


def test_a_tree_file_for_other_features_is_refused():
    with pytest.raises(ValueError, match="features"):
        Trees.from_json({"features": ["lexical"], "baseline": 0.0, "depth": 1, "trees": [_stump(0, 0.5, 0, 1)]})


def test_features_place_each_candidate_in_its_pool():
    pool = [_candidate(0.0, 0.9, 1.0, 3), _candidate(1.0, 0.5, 0.8, 1), _candidate(0.0, 0.1, 0.2, 2)]
    x = learned.features(pool, _query())
    col = {f: n for n, f in enumerate(FEATURES)}
    assert x.shape == (3, len(FEATURES))
    assert x[:, col["lexical_rank"]].tolist() == [0.5, 0.0, 1.0]
    assert x[:, col["fused_share"]].tolist() == [1.0, 0.8, 0.2]
    assert x[:, col["cosine_gap"]].round(6).tolist() == [0.0, -0.4, -0.8]
    assert x[:, col["lexical_reach"]].tolist() == pytest.approx([1 / 3] * 3)
    assert x[:, col["age_rank"]].tolist() == [0.0, 1.0, 0.5]  # the newest first


def test_rerank_moves_items_and_keeps_the_pools_scores(monkeypatch):
    # A stump that values a lexical hit: the second candidate takes the first place and its score.
    monkeypatch.setattr(learned, "trees", lambda *_: _trees(_stump(LEXICAL, 0.5, -1.0, 1.0)))
    pool = [_candidate(0.0, 0.9, 1.0, 3), _candidate(1.0, 0.5, 0.8, 1), _candidate(0.0, 0.1, 0.2, 2)]
    first, second = pool[0], pool[1]
    out = learned.rerank(pool, _query())
    assert out[0] is second and out[1] is first
    assert [s.score for s in out] == [1.0, 0.8, 0.2]
    assert second.why["learned"] == {"probability": round(1 / (1 + np.exp(-1.0)), 4), "place": 0, "fused_place": 1,
                                     "fused_score": 0.8}
    assert second.why["score"] == 1.0


def test_a_track_record_scales_the_probability(monkeypatch):
    # The trees never saw outcomes: a rule that worked keeps the lead its track record gives it.
    monkeypatch.setattr(learned, "trees", lambda *_: _trees(_stump(LEXICAL, 0.5, -1.0, 1.0)))
    pool = [_candidate(1.0, 0.5, 1.0, 1), _candidate(0.0, 0.9, 0.8, 2)]
    pool[1].channel_scores["utility"] = 1.0
    assert learned.rerank(list(pool), _query(), utility_weight=0.5)[0] is pool[0]  # 0.73 against 0.27 × 1.5
    pool[1].channel_scores["utility"], pool[0].channel_scores["utility"] = 1.0, 0.0
    out = learned.rerank(list(pool), _query(), utility_weight=3.0)  # 0.73 × −2 against 0.27 × 4
    assert out[0] is pool[1] and out[0].why["learned"]["track_record"] == 4.0


def _madial_like(brain, perceive: bool = True) -> list:
    for n, text in enumerate(["Bart danced at the Christmas party and felt very happy.",
                              "Bart won the 100 metres at the school sports day.",
                              "Bart burnt his toast this morning and was annoyed.",
                              "Bart performed a card trick for his cousins at New Year."] * perceive):
        brain.perceive(tenant="u1", agent="madial", kind="observation", text=text, event_id=f"m{n}")
    brain.index.semantic.wait()
    query = '<Bart>: "I am doing a magic trick at the New Year party!"\n<Assistant>: "Great!"\n' \
            '<Bart>: "What should I wear?"'
    return brain.recall(tenant="u1", agent="madial", query=query, k=4, layers=["episodic"]).items


def test_the_shipped_trees_order_a_recall_and_explain_it(tmp_path):
    assert learned.enabled(), "recall/fusion_trees.json ships with the package"
    with Brain.open(tmp_path / "brain") as brain:
        items = _madial_like(brain)
    assert items
    moves = [item.why["learned"] for item in items]
    assert all(0.0 <= m["probability"] <= 1.0 for m in moves)
    assert len({m["place"] for m in moves}) == len(moves)  # each item its own place
    assert [m["probability"] for m in sorted(moves, key=lambda m: m["place"])] == \
        sorted((m["probability"] for m in moves), reverse=True)  # placed by the trees


def test_the_switch_leaves_the_fused_order(tmp_path, monkeypatch):
    monkeypatch.setenv("HINDBRAIN_LEARNED_FUSION", "0")
    with Brain.open(tmp_path / "brain") as brain:
        items = _madial_like(brain)
    assert items and not any("learned" in item.why for item in items)


@pytest.fixture
def fresh_trees():
    """``learned.trees`` reads each file once: a test that moves the files reads them again."""
    learned.trees.cache_clear()
    yield
    learned.trees.cache_clear()


def test_each_embedder_gets_the_trees_fitted_on_its_pools(fresh_trees):
    # USE's trees misplace the quality mode's candidates (its cosines spread otherwise): each
    # embedder with a file of its own is ordered by trees fitted on pools it scored.
    from hindbrain.recall.embed import USE_E5_NAME

    assert learned.trees().embedder == "use-m3"
    assert learned.trees(USE_E5_NAME).embedder == USE_E5_NAME
    assert learned.trees(USE_E5_NAME).value.tolist() != learned.trees().value.tolist()


def test_an_embedder_without_trees_gets_uses_named_and_logged(fresh_trees, caplog):
    pool = [_candidate(0.0, 0.9, 1.0, 3), _candidate(1.0, 0.5, 0.8, 1)]
    with caplog.at_level("WARNING", logger="hindbrain.recall.learned"):
        out = learned.rerank(pool, _query(), embedder="e5-small-q4-sym")
    assert all(s.why["learned"]["trees"] == "use-m3" for s in out)
    assert "none fitted on the pools of 'e5-small-q4-sym'" in caplog.text
    assert "trees" not in learned.rerank(pool, _query())[0].why["learned"]  # USE's own: nothing to say


def test_a_missing_tree_file_falls_back_to_uses_and_says_so(fresh_trees, monkeypatch, caplog):
    monkeypatch.setitem(learned.MODEL_FILES, "some-model", "fusion_trees_some_model.json")  # not shipped
    with caplog.at_level("WARNING", logger="hindbrain.recall.learned"):
        assert learned.trees("some-model").embedder == "use-m3"
    assert "fusion_trees_some_model.json" in caplog.text


def test_a_tree_file_fitted_on_another_embedder_is_refused(fresh_trees, monkeypatch, tmp_path):
    (tmp_path / "fusion_trees.json").write_text(learned.MODEL_PATH.read_text("utf-8"))
    data = {"features": list(FEATURES), "embedder": "use-m3", "baseline": 0.0, "depth": 1,
            "trees": [_stump(LEXICAL, 0.5, -1.0, 1.0)]}
    (tmp_path / "other.json").write_text(json.dumps(data))  # USE's trees filed for another model
    monkeypatch.setattr(learned, "MODEL_DIR", tmp_path)
    monkeypatch.setitem(learned.MODEL_FILES, "some-model", "other.json")
    with pytest.raises(ValueError, match="fitted on the pools of 'use-m3'.*filed for 'some-model'"):
        learned.trees("some-model")


def test_the_engine_asks_for_its_embedders_trees(tmp_path, monkeypatch):
    asked = []
    monkeypatch.setattr(learned, "trees", lambda embedder="": asked.append(embedder) or
                        _trees(_stump(LEXICAL, 0.5, -1.0, 1.0)))
    with Brain.open(tmp_path / "brain") as brain:
        # a small tenant's first dialogue reads its writes (e5_dialogue.INLINE_TEXTS): the trees fitted on
        # USE's cosines mixed with e5's (a larger backlog's first recalls are USE's: test_e5_dialogue)
        assert _madial_like(brain)
        assert set(asked) == {e5_dialogue.MIXED_NAME}
        asked.clear()
        assert brain.recall(tenant="u1", agent="madial", query="what trick did Bart do?", layers=["episodic"]).items
        assert set(asked) == {brain.index.semantic.embedder.name} == {"use-m3"}  # a question: USE's own


def test_the_walk_in_c_is_the_numpy_definition_bit_for_bit():
    """``Trees.margin`` (``_scan.tree_sums``) against ``py_margin`` on the shipped trees, rows
    drawn around the trees' own thresholds so every branch is taken, ties at a threshold too."""
    trees = learned.trees()
    rng = np.random.default_rng(28)
    x = rng.normal(0.0, 1.0, (500, len(FEATURES)))
    splits = trees.feature[trees.left != np.arange(len(trees.left))]
    at = trees.threshold[trees.left != np.arange(len(trees.left))]
    for row in range(0, 500, 2):  # half the rows sit exactly on some thresholds (``<=`` goes left)
        pick = rng.integers(0, len(splits), 8)
        x[row, splits[pick]] = at[pick]
    assert np.array_equal(trees.margin(x), trees.py_margin(x))
    assert trees.margin(x[:0]).shape == (0,)


def test_a_bad_node_table_or_row_width_raises():
    trees = _trees(_stump(LEXICAL, 0.5, -1.0, 2.0))
    with pytest.raises(ValueError, match="features"):
        trees.margin(np.zeros((2, 3)))
    broken = Trees(trees.feature, trees.threshold, trees.left + 10, trees.right, trees.value, trees.roots,
                   trees.baseline, trees.depth, trees.features)
    with pytest.raises(ValueError, match="out of range"):
        broken.margin(np.zeros((2, len(FEATURES))))


def numpy_features(pool, query) -> np.ndarray:
    """``learned.features`` as numpy columns and a Python pass over the pool (up to 968d6eb), verbatim: the
    oracle of its C pass (``_scan.pool_features``)."""
    n = len(pool)
    if not n:
        return np.zeros((0, len(FEATURES)))
    facts = _pool_facts(pool)
    channels, fused, ts, message, expansion, cos = (facts[:, :5], facts[:, 5], facts[:, 6], facts[:, 7],
                                                     facts[:, 8], facts[:, 9])
    best = fused.max() or 1.0
    kinds = [_via_kind(s) for s in pool]
    via = np.array([[float(k == v) for v in VIA_KINDS] for k in kinds]).reshape(n, len(VIA_KINDS))
    found = np.isfinite(cos)
    top = cos[found].max() if found.any() else 0.0
    cos = np.where(found, cos, cos[found].min() if found.any() else 0.0)
    lexical = channels[:, 0]
    flags = (np.log1p(len(query.terms)) if query.terms else 0.0, float(query.indirect), float(query.described),
             float(query.views is not None and query.views.form == "dialogue"))
    full = np.full
    return np.column_stack([channels, fused, fused / best, full(n, query.associative), message, _rank(ts), via,
                            expansion, _rank(lexical), _rank(channels[:, 1]), _rank(fused), cos, cos - top,
                            full(n, float((lexical > 0).mean())), *(full(n, f) for f in flags)])


def _rank(values: np.ndarray) -> np.ndarray:
    return np.argsort(np.argsort(-values, kind="stable"), kind="stable") / max(1, len(values) - 1)


def _pool_facts(pool) -> np.ndarray:
    nan = float("nan")
    rows = []
    for s in pool:
        get, expansion = s.channel_scores.get, s.why.get("expansion")
        rows.append((get("lexical", 0.0), get("semantic", 0.0), get("graph", 0.0), get("scenario", 0.0),
                     get("freshness", 0.0), s.score, s.doc.ts_us, float(s.doc.event_kind == "message"),
                     expansion.get("score", 0.0) if expansion else 0.0, nan if s.cosine is None else s.cosine))
    return np.array(rows, dtype=np.float64)


def _via_kind(s) -> str:
    expansion = s.why.get("expansion")
    return expansion.get("via", "").split(":", 1)[0] if expansion else ""


# few distinct values, so that ties (ranks by position) and a pool whose best fused score is 0 are common
values = st.one_of(st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0]), st.floats(-2.0, 2.0))
channel_names = ["lexical", "semantic", "graph", "scenario", "freshness", "utility"]


# A candidate's drawn parts, built once: a strategy made inside the composite is built again (its label
# and emptiness worked out anew) at every draw, most of this test's CPU; the examples are the same.
EXPANSION = st.one_of(
    st.none(), st.just({}),
    st.fixed_dictionaries({"score": values, "via": st.sampled_from([f"{k}:x" for k in VIA_KINDS]
                                                                   + [*VIA_KINDS, "", "other:y", "a:b:c"])}),
    st.fixed_dictionaries({"via": st.sampled_from(VIA_KINDS)}))
CHANNEL_SCORES = st.dictionaries(st.sampled_from(channel_names), values)
COSINE = st.one_of(st.none(), values, st.sampled_from([float("nan"), float("inf"), -float("inf")]))
SCORE = st.one_of(values, st.just(float("nan")))
TS = st.one_of(st.integers(0, 5), st.integers(0, 2 ** 62))
EVENT_KIND = st.sampled_from([None, "message", "action"])


@st.composite
def pooled(draw):
    expansion = draw(EXPANSION)
    why = {"score": 0.0} if expansion is None else {"score": 0.0, "expansion": expansion}
    scores = draw(CHANNEL_SCORES)
    cosine = draw(COSINE)
    return SimpleNamespace(channel_scores=scores, score=draw(SCORE), cosine=cosine, why=why,
                           doc=SimpleNamespace(ts_us=draw(TS), event_kind=draw(EVENT_KIND)))


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(pooled(), min_size=1, max_size=40), st.lists(st.sampled_from(["a", "b"]), max_size=30),
       st.booleans(), st.booleans(), st.sampled_from([None, "dialogue", "question"]), values)
def test_features_in_c_are_the_numpy_columns_bit_for_bit(pool, terms, indirect, described, form, associative):
    query = SimpleNamespace(terms=terms, indirect=indirect, described=described, associative=associative,
                            views=None if form is None else SimpleNamespace(form=form))
    got, want = learned.features(pool, query), numpy_features(pool, query)
    assert got.shape == want.shape
    # bit for bit but for a zero's sign: numpy's max/min of 0.0 and -0.0 returns either, by its lanes; a
    # split (x <= threshold) cannot tell them apart, so the trees' margins are bit for bit
    assert (got + 0.0).tobytes() == (want + 0.0).tobytes()
    trees = learned.trees()
    assert trees.margin(got).tobytes() == trees.margin(want).tobytes()
