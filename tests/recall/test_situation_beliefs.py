"""Beliefs meet situations (design.md §issue-17, point 4): a belief whose condition names an emotion is
briefed to the decisions of that emotion — said by the caller or inferred from the text."""

from hindbrain.recall.emotion import infer

RULE = "if emotion in [angry] then first empathize, then fix (145 of 166 such tasks succeeded)"


def test_the_lexicon_names_the_emotion_a_text_voices_in_both_languages():
    assert infer("用户很生气，接口超时") == ("angry", 0.8)  # a sure cue: it voices nothing else
    assert infer("This is unacceptable, the export failed again") == ("angry", 0.8)
    assert infer("this is ridiculous, the export failed again") == ("angry", 0.6)  # often a figure of speech
    assert infer("我很失望") == ("disappointed", 0.8)
    assert infer("the export failed with a timeout") is None and infer(None) is None


def test_an_emotion_belief_is_briefed_to_its_situation_and_no_other(lexical_brain):
    b = lexical_brain
    b.perceive(tenant="desk", text="ticket 1: the API times out")
    belief = b.believe(tenant="desk", text=RULE, confidence=0.82, support=145)
    briefed = b.recall(tenant="desk", query="用户很生气，接口超时").briefing
    assert [x.id for x in briefed] == [belief] and briefed[0].why["layer"] == "situation"
    assert b.recall(tenant="desk", query="接口超时").briefing == []  # nobody said or showed anger
    assert [x.id for x in b.recall(tenant="desk", query="the API times out", emotion="Angry").briefing] == [belief]
    assert b.recall(tenant="desk", query="the API times out", emotion="happy").briefing == []


def test_a_scene_belief_with_an_emotion_needs_both_when_the_emotion_is_known(lexical_brain):
    b = lexical_brain
    b.perceive(tenant="desk", text="ticket 2: refund pending")
    belief = b.believe(tenant="desk", text="if emotion in [angry] and scene = billing then refund first (9 of 10)",
                       confidence=0.8, support=12, scope={"scene": "billing"})
    assert [x.id for x in b.recall(tenant="desk", query="refund", scene="billing", emotion="angry").briefing] == [
        belief]
    assert b.recall(tenant="desk", query="refund", scene="shipping", emotion="angry").briefing == []
    assert b.recall(tenant="desk", query="refund", scene="billing", emotion="happy").briefing == []
    # the emotion unknown: briefed by its scene, as before
    assert [x.id for x in b.recall(tenant="desk", query="refund", scene="billing").briefing] == [belief]
