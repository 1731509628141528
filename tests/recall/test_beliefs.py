"""The warm briefing's layers and the belief bias."""

from hindbrain.recall.beliefs import bias, briefing, layer_of
from hindbrain.recall.documents import Belief, Doc
from hindbrain.recall.tokenize import tokens


def belief(id, text="if the user is angry then first acknowledge", *, confidence=0.8, support=10, scope=None,
           status="active", event_ids=()):
    return Belief(id, text, confidence, support, status, scope or {}, list(event_ids), 0, 10,
                  frozenset(tokens(text)) - {"if", "then", "the", "is"})


def test_layers_global_needs_high_confidence_and_many_events_scene_and_user_need_a_match():
    assert layer_of(belief("g", confidence=0.95, support=60), None, None) == "global"
    assert layer_of(belief("g", confidence=0.95, support=50), None, None) is None
    assert layer_of(belief("g", confidence=0.85, support=60), None, None) is None
    assert layer_of(belief("s", scope={"scene": "refund"}), "refund", None) == "scene"
    assert layer_of(belief("s", scope={"scene": "refund"}), "billing", None) is None
    assert layer_of(belief("u", scope={"user": "ann"}), None, "ann") == "user"
    assert layer_of(belief("u", scope={"user": "ann"}), None, "bob") is None
    assert layer_of(belief("r", confidence=0.99, support=99, status="reviewing"), None, None) is None


def test_at_most_four_and_every_layer_gets_a_seat():
    beliefs = [belief(f"g{n}", confidence=0.99 - n / 100, support=100) for n in range(5)]
    beliefs += [belief("s1", scope={"scene": "refund"}), belief("u1", scope={"user": "ann"})]
    chosen = briefing(beliefs, "refund", "ann")
    assert len(chosen) == 4
    assert [(b.id, layer) for b, layer in chosen] == [("g0", "global"), ("s1", "scene"), ("u1", "user"),
                                                       ("g1", "global")]


def test_bias_for_items_a_belief_rests_on_or_names():
    b = belief("b1", "if a ticket is a refund fault then acknowledge first", confidence=0.9, event_ids=["ev_1"])
    rests_on = Doc("ev_1", "event", "episodic", "anything", ["ev_1"], "perceived", 1, {}, 0)
    names_it = Doc("ev_2", "event", "episodic", "refund fault ticket from ann", ["ev_2"], "perceived", 1, {}, 0)
    unrelated = Doc("ev_3", "event", "episodic", "lunch at noon", ["ev_3"], "perceived", 1, {}, 0)
    assert bias(rests_on, [b]) == (0.9, ["b1"])
    assert bias(names_it, [b]) == (0.9, ["b1"])
    assert bias(unrelated, [b]) == (0.0, [])
