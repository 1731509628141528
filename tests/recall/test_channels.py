"""Each channel alone: the score it gives and the explanation it writes."""

import math

import pytest

from hindbrain.recall import channels
from hindbrain.recall.scoring import Weights, competition_ranks, rrf, weighted

DAY_US = 86_400 * 1_000_000


def test_lexical_is_the_share_of_query_information_matched_plus_the_exact_cue_boost():
    half, why = channels.lexical(bm25=2.0, query_information=4.0, matched_exact=[], query_exact=0)
    assert half == pytest.approx(0.5) and why["coverage"] == pytest.approx(0.5)
    boosted, why = channels.lexical(bm25=2.0, query_information=4.0, matched_exact=["@code:403"], query_exact=2)
    assert boosted == pytest.approx(0.5 + channels.EXACT_BOOST / 2) and why["exact_cues"] == ["@code:403"]
    assert channels.lexical(9.0, 4.0, ["@code:403"], 1)[0] == 1.0  # capped
    assert channels.lexical(0.0, 0.0, [], 0)[0] == 0.0


def test_semantic_clips_cosine_and_says_when_the_item_was_not_a_neighbour():
    assert channels.semantic(0.7, "use-m3")[0] == pytest.approx(0.7)
    assert channels.semantic(-0.2, "use-m3")[0] == 0.0
    score, why = channels.semantic(None, "use-m3")
    assert score == 0.0 and "nearest" in why["note"]


def test_graph_fragments_weak_alone_are_strong_together():
    one_entity = channels.graph([("fr_a", 0.6, ["@entity:iam"])])[0]
    entity_and_action = channels.graph([("fr_a", 0.6, ["@entity:iam", "@action:submit change"])])[0]
    two_hits = channels.graph([("fr_a", 0.6, ["@entity:iam", "@action:submit change"]),
                               ("fr_b", 0.5, ["@entity:iam", "@action:submit change"])])
    assert one_entity == pytest.approx(0.3)
    assert entity_and_action == pytest.approx(0.6)
    assert two_hits[0] == pytest.approx(1 - 0.4 * 0.5)
    assert [v["id"] for v in two_hits[1]["via"]] == ["fr_a", "fr_b"]
    assert channels.graph([])[0] == 0.0


def test_scenario_scene_and_trigger_each_give_half():
    assert channels.scenario("deploy", "deploy", "anomaly", {"fragment", "experience"})[0] == 1.0
    assert channels.scenario("deploy", "billing", "anomaly", {"fragment"})[0] == 0.5
    assert channels.scenario(None, None, "user_reference", {"event", "message"})[0] == 0.5
    assert channels.scenario(None, None, "task_start", {"event", "episodic", "message"})[0] == 0.0


def test_utility_counts_outcomes_of_applied_items_only():
    assert channels.utility(0, 0, 0)[0] == 0.5
    good, bad = channels.utility(4, 4, 0)[0], channels.utility(4, 0, 4)[0]
    assert good == pytest.approx(5 / 6) and bad == pytest.approx(1 / 6)


def test_freshness_decays_by_volatility_and_red_lines_never_fade():
    now = 400 * DAY_US
    assert channels.freshness(now - 7 * DAY_US, now, "high")[0] == pytest.approx(0.5)
    assert channels.freshness(now - 90 * DAY_US, now, "medium")[0] == pytest.approx(0.5)
    assert channels.freshness(0, now, "red_line")[0] == 1.0
    assert channels.volatility_of("episodic", {}) == "high"
    assert channels.volatility_of("experience", {"volatility": "red_line"}) == "red_line"
    assert channels.volatility_of("knowledge", {"volatility": "bogus"}) == "low"


def test_penalties_for_reviewing_contradicted_and_out_of_scope_items():
    assert channels.contradiction_penalty("verified", 0)[0] == 0.0
    assert channels.contradiction_penalty("reviewing", 0)[0] == pytest.approx(channels.REVIEWING_PENALTY)
    assert channels.contradiction_penalty("verified", 9)[0] == pytest.approx(channels.CONTRADICTION_CAP)
    penalty, match, why = channels.scope_mismatch({"env": "test"}, {"env": "prod"})
    assert penalty == channels.SCOPE_PENALTY and match == 0.0 and why["conflicts"] == {"env": "test ≠ prod"}
    assert channels.scope_mismatch({}, {"env": "prod"})[1] == 0.8  # general item
    assert channels.scope_mismatch({"env": "prod"}, {"env": "prod"})[:2] == (0.0, 1.0)


def test_the_seed_weights_are_the_default_and_combine_linearly():
    w = Weights()
    assert (w.lexical, w.semantic, w.graph, w.scenario, w.utility, w.freshness) == (0.30, 0.25, 0.20, 0.10, 0.10, 0.05)
    total, parts = weighted({"lexical": 1.0, "semantic": 0.5, "freshness": 1.0}, w)
    assert total == pytest.approx(0.30 + 0.125 + 0.05) and parts["graph"] == 0.0
    with pytest.raises(ValueError, match="method"):
        Weights(method="max")
    with pytest.raises(ValueError, match="negative"):
        Weights(lexical=-1)


def test_rrf_rewards_items_several_channels_rank_high():
    fused = rrf({"lexical": {1: 1, 2: 2}, "semantic": {2: 1, 3: 2}}, Weights(lexical=1, semantic=1))
    assert sum(fused[2].values()) > sum(fused[1].values()) > sum(fused[3].values())
    assert math.isclose(fused[1]["lexical"], 1 / 61)


def test_ranks_tie_equal_scores_and_a_flat_channel_ranks_nothing():
    assert competition_ranks([0.9, 0.5, 0.5, 0.1, 0.0]) == {0: 1, 1: 2, 2: 2, 3: 4}
    assert competition_ranks([0.5, 0.5, 0.5]) == {}  # utility with no evidence anywhere: no order
