"""An inference question's evidence says something (recall.informative): the asked person's small
talk, near any question that names them, no longer outranks the turn that implies the answer."""

from datetime import UTC, datetime

import pytest

from hindbrain import Brain
from hindbrain.recall import informative
from hindbrain.recall.documents import FUNCTION_WORDS
from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.tokenize import tokens


def test_the_factor_is_one_for_the_most_informative_and_falls_to_one_minus_the_weight():
    assert informative.factor(8.0, 8.0, weight=0.5) == 1.0
    assert informative.factor(0.0, 8.0, weight=0.5) == 0.5
    assert informative.factor(4.0, 8.0, weight=0.5) == pytest.approx(0.75)
    assert informative.factor(2.0, 8.0, weight=0.0) == 1.0  # off
    assert informative.factor(0.0, 0.0, weight=0.5) == 1.0  # nothing says anything: no order to change


def test_a_turns_terms_leave_out_its_speaker_and_function_words():
    terms = informative.said_terms("Mei: I took the staircase instead of the lift.", "Mei")
    assert "mei" not in terms and "the" not in terms and not FUNCTION_WORDS.intersection(terms)
    assert {"staircase", "lift"} <= set(terms)
    assert len(terms) == len(set(terms))
    assert informative.information(["staircase", "lift", "unseen"], {"staircase": 2.0, "lift": 1.5}) == 3.5


def test_idfs_are_the_scoring_idfs_and_an_unheld_term_has_df_zero():
    index = BM25Index()
    index.add_texts(["ladders are the worst", "the weather again", "the lift at the mall"])
    _, scored = index.scores(tokens("the ladders lift"))
    assert index.idfs(["the", "ladders", "lift"]) == pytest.approx([scored["the"], scored["ladders"], scored["lift"]])
    assert index.idfs(["gutters"])[0] > scored["ladders"]  # df 0 says more than df 1


def _counted(index: BM25Index, docs: list[tuple[int, str, None]]) -> list[float]:
    """What ``informations`` must return: each document's information from the index's idfs now."""
    terms = [informative.said_terms(text, None) for _, text, _ in docs]
    return [informative.information(ts, dict(zip(ts, index.idfs(ts), strict=True))) for ts in terms]


def test_a_new_document_changes_the_kept_information_and_the_factor():
    """Kept per index state: a document added since (one more holding "gutters") makes the first
    turn say less, so the second's factor rises; the values kept before it are not read again."""
    index = BM25Index()
    index.add_texts(["ladders are the worst, I cleaned the gutters", "the weather again, the lift at the mall",
                     "thursday works"])
    docs = [(0, "ladders are the worst, I cleaned the gutters", None), (1, "the weather again, the lift at the mall",
                                                                        None)]
    before = informative.informations(index, docs)
    assert before == pytest.approx(_counted(index, docs))
    index.add_texts(["the gutters overflowed"])
    after = informative.informations(index, docs)
    assert after == pytest.approx(_counted(index, docs))
    assert informative.factor(after[1], max(after)) > informative.factor(before[1], max(before))


def test_kept_information_is_not_counted_again(monkeypatch):
    index = BM25Index()
    index.add_texts(["ladders are the worst", "the weather again"])
    docs = [(0, "ladders are the worst", None), (1, "the weather again", None)]
    first = informative.informations(index, docs)
    counted = []
    monkeypatch.setattr(index, "idfs", lambda terms: counted.append(terms) or BM25Index.idfs(index, terms))
    assert informative.informations(index, docs[::-1]) == first[::-1]
    assert counted == []  # every document's information read back, no document frequency counted
    informative.informations(index, [*docs, (2, "worst gutters", None)])
    assert counted == [["gutters"]]  # only the term no document read before holds


# Mei's small talk, Tom's turns, and one turn of Mei's that implies she would not enjoy the ride: it
# shares no word with the question.
WORLDS = {
    "en": ("Mei", "Tom", "Would Mei enjoy a hot-air balloon ride?",
           "Ladders are the worst, I made my brother clean the gutters.",
           ["Thursday works for me.", "The weather has been all over the place.", "Time flies, honestly.",
            "Not bad, just busy with work stuff.", "Ha, that's so typical of you."],
           ["Did you see the match last night?", "I'm thinking of repainting the bathroom blue.",
            "Sounds good to me."]),
    "zh": ("美玲", "志强", "美玲会喜欢坐热气球吗？",
           "梯子我是真怕，上次让我弟去清理的排水槽。",
           ["周四我可以。", "最近天气变来变去的。", "时间过得真快。", "还行，就是工作忙。", "哈哈，你就是这样。"],
           ["你看昨晚的比赛了吗？", "我打算把浴室刷成蓝色。", "听起来不错。"]),
}


@pytest.fixture(scope="module", params=sorted(WORLDS))
def world(request, tmp_path_factory):
    asked, other, question, evidence, small_talk, others = WORLDS[request.param]
    brain = Brain.open(tmp_path_factory.mktemp(f"informative-{request.param}") / "brain")
    turns = [(asked, t) for t in small_talk] + [(other, t) for t in others] + [(asked, evidence)]
    ids = [brain.perceive(tenant="t", agent="chat", kind="message", session=f"s{n}", speaker=who, text=text,
                          ts=datetime(2024, 1, 1 + n, tzinfo=UTC)) for n, (who, text) in enumerate(turns)]
    brain.index.semantic.wait()
    yield brain, question, ids[-1], ids[: len(small_talk)]
    brain.close()


def _place(brain, question: str, item_id: str) -> tuple[int, dict]:
    pack = brain.recall(tenant="t", agent="chat", query=question, k=10, layers=["episodic"], explain=True)
    ranked = [i.id for i in pack.items]
    return ranked.index(item_id), {i.id: i.why for i in pack.items}


def test_the_evidence_rises_over_small_talk_and_says_why(world, monkeypatch):
    brain, question, evidence, small_talk = world
    with_prior, why = _place(brain, question, evidence)
    monkeypatch.setattr(informative, "WEIGHT", 0.0)
    without, plain = _place(brain, question, evidence)
    assert with_prior < without, "the turn that says something is placed higher for an inference question"
    assert why[evidence]["informative"]["of_most"] == 1.0  # it says the most of the pool
    assert all(why[s]["informative"]["factor"] < 1.0 for s in small_talk if s in why)
    assert all("informative" not in w for w in plain.values())  # off: nothing scaled, nothing said


def test_a_question_that_is_no_inference_is_left_alone(world):
    brain, _, evidence, _ = world
    pack = brain.recall(tenant="t", agent="chat", query="Tell me about ladders and gutters, 梯子", k=10,
                        layers=["episodic"], explain=True)
    assert all("informative" not in i.why for i in pack.items)


def test_a_question_names_a_speaker_as_a_whole_word_or_its_characters():
    assert informative.names_one_of("Can you list Samuel's pets?", {"Samuel", "Henry"})
    assert not informative.names_one_of("Who is Samuelson?", {"Samuel"})
    assert not informative.names_one_of("Can you list the pets?", {"Samuel", None})
    assert informative.names_one_of("江河家里都有哪些宠物？", {"江河", "张伟"})


# A question of fact that names the asked person: no inference, yet their small talk is near it too.
NAMED = {"en": "What is Mei afraid of?", "zh": "美玲讨厌什么？"}


def test_a_question_naming_a_speaker_is_ordered_by_what_turns_say(world, request, monkeypatch):
    brain, _, evidence, small_talk = world
    question = NAMED[request.node.callspec.params["world"]]
    with_prior, why = _place(brain, question, evidence)
    monkeypatch.setattr(informative, "NAMED", False)
    without, plain = _place(brain, question, evidence)
    assert with_prior < without, "the turn that says something is placed higher for a question naming its speaker"
    assert why[evidence]["informative"]["of_most"] == 1.0
    assert all(why[s]["informative"]["factor"] < 1.0 for s in small_talk if s in why)
    assert all("informative" not in w for w in plain.values())  # inference questions only: left alone
