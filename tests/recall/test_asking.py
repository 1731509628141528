"""A turn that asks does not answer (recall.asking): a question's recall demotes asking turns."""

from datetime import UTC, datetime

import pytest

from hindbrain import Brain
from hindbrain.recall.asking import ASKING_PENALTY, asking_penalty, asking_share


@pytest.mark.parametrize("text, share", [
    ("Does that band play any instrument live?", 1.0),
    ("Kofi took the pictures. Did you see them?", 0.5),
    ("The request GET /api?x=1 failed with 403.", 0.0),  # a "?" inside a token ends no sentence
    ("你去过那家店吗", 1.0),  # a Chinese question needs no mark: the final particle asks
    ("你在干什么？", 1.0),
    ("我上周去了北京。天气很好！", 0.0),
    ("", 0.0),
])
def test_the_share_of_sentences_that_ask(text, share):
    assert asking_share(text) == share


def test_the_penalty_is_a_questions_not_a_dialogues():
    assert asking_penalty(1.0, 0.0) == ASKING_PENALTY
    assert asking_penalty(0.5, 0.0) == ASKING_PENALTY / 2
    assert asking_penalty(1.0, 1.0) == 0.0  # a dialogue's memories are recalled by association
    assert asking_penalty(0.0, 0.0) == 0.0


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    brain = Brain.open(tmp_path_factory.mktemp("asking") / "brain")
    turns = [("Mei", "Does the band you saw play any instrument live, or is it all laptops?"),
             ("Tom", "Kofi plays the clarinet in a band every Friday."),
             ("Mei", "Nice, I made pasta again tonight."),
             ("Tom", "The weather has been so grey lately.")]
    ids = [brain.perceive(tenant="t", agent="chat", kind="message", session="s1", speaker=who, text=text,
                          ts=datetime(2024, 1, 1, tzinfo=UTC)) for who, text in turns]
    brain.index.semantic.wait()
    yield brain, ids
    brain.close()


def test_the_answer_outranks_the_turn_that_asks_with_the_questions_words(chat):
    brain, (asks, answers, *_) = chat
    pack = brain.recall(tenant="t", agent="chat", query="Which instrument does the band play live?", k=4,
                        layers=["episodic"], explain=True)
    order = [i.id for i in pack.items]
    assert asks in order, "demoted, never dropped"
    assert order.index(answers) < order.index(asks)
    why = next(i.why for i in pack.items if i.id == asks)
    assert why["asks"] == {"share": 1.0, "penalty": ASKING_PENALTY}
    assert "asks" not in next(i.why for i in pack.items if i.id == answers)


def test_a_dialogue_query_leaves_asking_turns_alone(chat):
    brain, (asks, *_) = chat
    dialogue = "\n".join(f"<user>: line {n}, the band I saw last week and whether they play live" for n in range(6))
    pack = brain.recall(tenant="t", agent="chat", query=dialogue, k=4, layers=["episodic"], explain=True)
    why = next(i.why for i in pack.items if i.id == asks)
    assert why["asks"]["penalty"] == 0.0
