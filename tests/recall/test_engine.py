"""The recall engine end to end through the SDK: channels together, explanations, records."""

import json

import pytest

from hindbrain import Brain
from hindbrain.recall import channels
from hindbrain.recall import engine as engine_module
from hindbrain.recall.graph import GRAPH_MAX_DF
from hindbrain.recall.scoring import CHANNELS, Weights, fused, weighted


def ids(pack):
    return [i.id for i in pack.items]


def test_an_exact_error_code_beats_a_text_that_only_shares_words(lexical_brain):
    b = lexical_brain
    coded = b.perceive(tenant="acme", text="report export failed with ORA-00942 after the schema move")
    wordy = b.perceive(tenant="acme", text="report export failed after the schema move, the export failed again")
    pack = b.recall(tenant="acme", query="export failed ORA-00942", k=2)
    assert ids(pack)[0] == coded and wordy in ids(pack)
    top = pack.items[0].why["lexical"]
    assert "@code:ora-00942" in top["exact_cues"] and top["score"] > pack.items[1].why["lexical"]["score"]


def test_a_situation_query_finds_the_anomaly_through_its_cues(lexical_brain):
    b = lexical_brain
    anomaly = b.perceive(tenant="acme", kind="anomaly", text="clicked submit, nothing happened", system="IAM",
                         identity="normal account", action="submit change", expected="success message",
                         actual="no response")
    b.perceive(tenant="acme", text="IAM newsletter: new logo next week")
    pack = b.recall(tenant="acme", trigger="anomaly", situation={
        "system": "IAM", "identity": "normal account", "action": "submit change",
        "expected": "success message", "actual": "no response"})
    assert ids(pack)[0] == anomaly
    why = pack.items[0].why
    assert why["scenario"]["trigger"] == "anomaly"
    assert {"@entity:iam", "@action:submit change"} <= set(why["lexical"]["matched_terms"])


def test_the_graph_assembles_an_action_chain_from_fragments_weak_alone(lexical_brain):
    b = lexical_brain
    hit = b.learn(tenant="acme", condition="IAM role change returns 403", action="request approval",
                  entities=["IAM"])
    chained = b.learn(tenant="acme", condition="approval ticket is pending for a day", action="request approval",
                      entities=["IAM"])
    b.learn(tenant="acme", condition="the coffee machine is empty", action="refill beans", entities=["kitchen"])
    pack = b.recall(tenant="acme", query="IAM role change returns 403")
    assert ids(pack)[:1] == [hit] and chained in ids(pack)
    graph = next(i for i in pack.items if i.id == chained).why["graph"]
    assert graph["score"] > 0 and graph["via"][0]["id"] == hit
    assert set(graph["via"][0]["shared"]) == {"@entity:iam", "@action:request approval"}
    assert GRAPH_MAX_DF >= 100


def test_utility_comes_from_applied_outcomes_not_from_being_recalled(lexical_brain):
    b = lexical_brain
    # Each condition holds its own query terms, so neither covers the other in the gate.
    used = b.learn(tenant="acme", condition="deploy stalls at migration on the schema lock",
                   action="take the schema lock first")
    twin = b.learn(tenant="acme", condition="deploy stalls at migration on the report job",
                   action="wait for the report job")
    query = "deploy stalls at migration: schema lock or report job"
    for n in range(3):
        pack = b.recall(tenant="acme", query=query, task=f"t{n}")
        b.outcome(tenant="acme", recall_id=pack.recall_id, task=f"t{n}", applied=[used], success=True)
    pack = b.recall(tenant="acme", query=query)
    assert ids(pack)[0] == used
    why = {i.id: i.why["utility"] for i in pack.items}
    assert why[used]["success"] == 3 and why[twin]["applied"] == 0 and why[twin]["score"] == 0.5


def test_every_candidate_and_cut_is_in_the_recall_record(lexical_brain):
    b = lexical_brain
    for env in ("prod", "test"):
        b.learn(tenant="acme", condition=f"role change in {env}", action=f"use the {env} procedure",
                scope={"env": env})
    pack = b.recall(tenant="acme", query="role change procedure", scope={"env": "prod"})
    assert [c["stage"] for c in pack.cut] == ["scope"]
    cut_id = pack.cut[0]["id"]
    [recall] = [e["record"] for e in b.explain(cut_id) if e["record_type"] == "recall"]
    by_id = {c["item_id"]: c for c in recall["candidates"]}
    assert (by_id[cut_id]["stage"], by_id[cut_id]["reason"]) == ("scope", "scope env=test does not match env=prod")
    assert by_id[ids(pack)[0]]["stage"] == "selected" and by_id[ids(pack)[0]]["reason"] is None
    [injected] = b.sql("SELECT item_ids FROM injections WHERE recall_id = {r:String}", {"r": pack.recall_id})
    assert injected["item_ids"] == ids(pack)


def test_a_candidate_keeps_its_numbers_and_verdict_and_its_full_explanation_only_on_explain(lexical_brain):
    b = lexical_brain
    for env in ("prod", "test"):
        b.learn(tenant="acme", condition=f"role change in {env}", action=f"use the {env} procedure",
                scope={"env": env})

    def recorded(pack) -> tuple[list[str], dict]:
        [recall] = [e["record"] for e in b.explain(pack.cut[0]["id"]) if e["record_type"] == "recall"
                    and e["record"]["recall_id"] == pack.recall_id]
        return recall["score_names"], {c["item_id"]: c for c in recall["candidates"]}

    pack = b.recall(tenant="acme", query="role change procedure", scope={"env": "prod"})
    (names, by_id), cut_id, kept = recorded(pack), pack.cut[0]["id"], ids(pack)[0]
    # the returned item's full explanation went to the agent in the pack; the record keeps its verdict
    assert "fusion" in pack.items[0].why and by_id[kept]["why_json"] is None and by_id[kept]["stage"] == "selected"
    cut = by_id[cut_id]  # cut: its score, every channel's, bm25, the penalties, the gate's verdict
    assert cut["why_json"] is None and cut["stage"] == "scope" and cut["score"] > 0
    scores = dict(zip(names, cut["scores"], strict=True))
    assert set(CHANNELS) | {"bm25", "penalties"} <= set(scores) and scores["bm25"] > 0
    explained = b.recall(tenant="acme", query="role change procedure", scope={"env": "prod"}, explain=True)
    _, full = recorded(explained)
    assert "fusion" in json.loads(full[kept]["why_json"])  # explain: every candidate in full
    why = json.loads(full[cut_id]["why_json"])
    assert "fusion" in why and why["gate"]["stage"] == "scope" == full[cut_id]["stage"]
    assert why["lexical"]["score"] == round(scores["lexical"], 4)


def test_beliefs_are_briefed_by_layer_and_recorded_as_injected(lexical_brain):
    b = lexical_brain
    refund = b.believe(tenant="acme", text="if the customer is angry and the ticket is a fault then acknowledge "
                                           "first, then give the fix", confidence=0.8, support=12,
                       scope={"scene": "refund"})
    b.believe(tenant="acme", text="if the user is ann then answer in Chinese", confidence=0.9, support=5,
              scope={"user": "ann"})
    b.believe(tenant="acme", text="weak global hunch", confidence=0.5, support=3)
    b.perceive(tenant="acme", text="customer angry about a refund fault ticket")
    pack = b.recall(tenant="acme", query="angry customer refund", scene="refund", user="bob")
    assert [i.id for i in pack.briefing] == [refund]
    assert "Beliefs:" in pack.render() and "acknowledge" in pack.render()
    assert pack.items and pack.items[0].why["belief_bias"]["beliefs"] == [refund]
    [injected] = b.sql("SELECT item_ids FROM injections WHERE recall_id = {r:String}", {"r": pack.recall_id})
    assert injected["item_ids"][0] == refund
    assert b.recall(tenant="acme", query="angry customer refund", scene="billing").briefing == []


def test_rrf_is_an_option(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none", recall_method="rrf") as b:
        first = b.perceive(tenant="acme", text="SSO login loop on the billing portal")
        b.perceive(tenant="acme", text="billing portal slow")
        pack = b.recall(tenant="acme", query="SSO login loop billing portal")
        assert ids(pack)[0] == first and pack.items[0].why["method"] == "rrf"


def test_the_semantic_channel_matches_near_synonyms_across_languages(brain):
    """Seed 000 exp. 6: "页面一直转圈" ≈ "提交后长期没有响应" — no shared words, same meaning."""
    spinning = brain.perceive(tenant="acme", kind="anomaly", text="提交后长期没有响应")
    brain.perceive(tenant="acme", text="季度报表已经发给财务")
    brain.perceive(tenant="acme", text="the quarterly report went to finance")
    pack = brain.recall(tenant="acme", query="页面一直转圈")
    assert ids(pack)[0] == spinning
    semantic = [i.why["semantic"]["score"] for i in pack.items]
    assert pack.items[0].why["lexical"]["score"] == 0 and semantic[0] > max(semantic[1:], default=0)
    english = brain.recall(tenant="acme", query="the page keeps spinning after I click submit", k=1)
    assert ids(english) == [spinning]
    # found by whichever tier scored it first (static at once); the same once the neural vectors are in
    assert brain.index.semantic.wait(60)
    pack = brain.recall(tenant="acme", query="页面一直转圈")
    assert ids(pack)[0] == spinning
    assert pack.items[0].why["semantic"]["model"] == "use-m3" and pack.items[0].why["semantic"]["tier"] == "neural"


@pytest.mark.parametrize("preset", ["fused", "seed", "rrf"])
def test_each_explanation_adds_up_to_its_score(tmp_path, monkeypatch, preset):
    """Scores are computed without explanations and the pool is explained afterwards: the
    two paths must agree, channel by channel, for items linked by the graph too, under every
    preset (RRF's score is a rank fusion: there only the channel contributions are checked)."""
    monkeypatch.setenv("HINDBRAIN_RECALL_PRESET", preset)
    with Brain.open(tmp_path / "b", embedder="none") as b:
        b.learn(tenant="acme", condition="IAM role change returns 403", action="request approval",
                entities=["IAM"], scope={"env": "prod"})
        b.learn(tenant="acme", condition="approval ticket is pending for a day", action="request approval",
                entities=["IAM"], scope={"env": "test"})
        b.perceive(tenant="acme", kind="anomaly", text="IAM submit does nothing", system="IAM",
                   action="submit change")
        pack = b.recall(tenant="acme", query="IAM role change returns 403", scope={"env": "prod"},
                        trigger="anomaly")
    explained = json.loads(json.dumps([i.why for i in pack.items]))
    assert explained and any(why["graph"]["score"] > 0 for why in explained)
    for why in explained:
        assert why["fusion"]["preset"] == preset
        if preset != "rrf":
            total = sum(why[ch]["contribution"] for ch in CHANNELS)
            bias = why.get("belief_bias", {}).get("contribution", 0.0)
            assert abs(total - why["penalties"] + bias - why["score"]) < 1e-3
        weights = Weights(**{ch: why[ch]["weight"] for ch in CHANNELS}, method=why["fusion"]["method"])
        combine = fused if weights.method == "fused" else weighted
        _, parts = combine({ch: why[ch]["score"] for ch in CHANNELS}, weights)
        for ch in CHANNELS:
            assert abs(why[ch]["contribution"] - parts[ch]) < 1e-3, ch


@pytest.mark.parametrize("scale", [None, (0.2, 0.8), (0.5, 0.5), (0.6, 0.4), (-0.3, 0.9)])
def test_the_inlined_semantic_scores_are_the_channels_own(scale):
    """``engine._semantic_scores`` inlines ``channels.normalised_semantic_score`` (``semantic_score`` without
    a scale) for every candidate (round twenty-nine): the same float for each, a number without a cosine 0."""
    cosines = {n: c for n, c in enumerate([-1.0, -0.3, 0.0, 0.1999, 0.2, 0.2001, 0.37, 0.5, 0.6, 0.7999, 0.8, 0.83,
                                            0.9, 1.0, 1.2, 1 / 3, 2 / 3, 0.1 + 0.2])}
    nos = [*cosines, 99, 100]
    got = engine_module._semantic_scores(nos, cosines, scale)
    own = {no: channels.semantic_score(cosines.get(no)) if scale is None
           else channels.normalised_semantic_score(cosines.get(no), *scale) for no in nos}
    assert list(got) == nos and all(got[no] == own[no] and type(got[no]) is float for no in nos)
    assert got[99] == got[100] == 0.0
