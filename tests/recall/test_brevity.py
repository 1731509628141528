"""A turn that says little answers little (recall.brevity): a question's recall demotes short chat messages."""

from datetime import UTC, datetime

import pytest

from hindbrain import Brain
from hindbrain.recall.brevity import BREVITY_PENALTY, BREVITY_TOKENS, brevity_penalty


def test_the_penalty_shrinks_with_what_the_turn_says_and_is_a_questions_only():
    assert brevity_penalty(0, 0.0) == BREVITY_PENALTY
    assert brevity_penalty(BREVITY_TOKENS // 2, 0.0) == pytest.approx(BREVITY_PENALTY / 2)
    assert brevity_penalty(BREVITY_TOKENS, 0.0) == 0.0
    assert brevity_penalty(200, 0.0) == 0.0
    assert brevity_penalty(2, 1.0) == 0.0  # a dialogue's memories are recalled by association
    assert brevity_penalty(2, 0.5) == pytest.approx(brevity_penalty(2, 0.0) / 2)


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    brain = Brain.open(tmp_path_factory.mktemp("brevity") / "brain")
    turns = [("Tom", "Time flies."),
             ("Mei", "Tom's cousin Kofi plays the clarinet in a jazz band every Friday night at the harbour.")]
    ids = [brain.perceive(tenant="t", agent="chat", kind="message", session="s1", speaker=who, text=text,
                          ts=datetime(2024, 1, 1, tzinfo=UTC)) for who, text in turns]
    brain.index.semantic.wait()
    yield brain, ids
    brain.close()


def test_a_short_turn_is_demoted_and_says_why_a_long_one_is_not(chat):
    brain, (short, long) = chat
    pack = brain.recall(tenant="t", agent="chat", query="What does Tom's cousin play?", k=2, layers=["episodic"],
                        explain=True)
    why = {i.id: i.why for i in pack.items}
    assert short in why, "demoted, never dropped"
    assert why[short]["brevity"]["penalty"] > 0
    assert why[short]["brevity"]["tokens"] < BREVITY_TOKENS
    assert "brevity" not in why[long]


def test_a_dialogue_query_leaves_short_turns_alone(chat):
    brain, (short, _) = chat
    dialogue = "\n".join(f"<Tom>: line {n}, how quickly the time goes and what my cousin plays" for n in range(6))
    pack = brain.recall(tenant="t", agent="chat", query=dialogue, k=2, layers=["episodic"], explain=True)
    assert "brevity" not in next(i.why for i in pack.items if i.id == short)
