"""Indirect questions (recall.indirect): an inference or a person only described lowers the lexical weight."""

from datetime import UTC, datetime

import pytest

from hindbrain import Brain
from hindbrain.recall.indirect import indirect
from hindbrain.recall.query import build_query
from hindbrain.recall.scoring import PRESETS
from hindbrain.schemas.api import RecallInput


@pytest.mark.parametrize("question", [
    "Would Anna like a week of hiking in the Alps?",
    "Why might Omar skip the office party?",
    "Is a jazz club a good outing for Ravi?",
    "Is Lena likely to move abroad next year?",
    "Where does the colleague who fixed Sam's laptop live now?",
    "What pet does whoever repaired the roof have?",
    "Should Ines take the night train?",
    "丽丽会喜欢去海边露营吗？",
    "王强适合养一条大狗吗？",
    "帮小李搬家的那个人现在在哪儿工作？",
    "周末晚上阿明多半在干什么？",
])
def test_inference_and_described_people_are_indirect(question):
    assert indirect(question)


@pytest.mark.parametrize("question", [
    "What did Leila see in Lisbon?",
    "When did Henry adopt Biscuit?",
    "Could you list Liam's pets?",  # a request to the assistant, not a supposition
    "Would you remind me where Zoe grew up?",
    "Why did Felix's dog need to see a vet?",  # a reason stated in a turn: a fact
    "What is Aisha's current job?",
    "张伟大概什么时候搬到深圳的？",  # "roughly when": a fact
    "我的朋友小王住在哪里？",
    "刘洋的荷兰猪生了什么病？",
    "",
])
def test_direct_questions_are_not(question):
    assert not indirect(question)


def test_only_a_plain_questions_form_is_read():
    def q(text):
        return build_query(RecallInput(tenant="t", query=text), 0)

    assert q("Would Anna enjoy a week of hiking?").indirect
    assert not q("What did Anna do last week?").indirect
    dialogue = "<Anna>: would you like to hear about my trip?\n<Assistant>: sure!\n<Anna>: it might rain"
    assert not q(dialogue).indirect  # a dialogue's form is associative already


def test_the_fused_preset_scales_lexical_for_an_indirect_question():
    fused = PRESETS["fused"]
    direct, scaled = fused.for_query(0.0), fused.for_query(0.0, indirect=True)
    assert scaled.lexical == pytest.approx(direct.lexical * fused.indirect_lexical)
    assert scaled.lexical < direct.lexical
    assert scaled.semantic == direct.semantic
    assert PRESETS["seed"].for_query(0.0, indirect=True) == PRESETS["seed"].for_query(0.0)  # the seed as specified


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    brain = Brain.open(tmp_path_factory.mktemp("indirect") / "brain")
    turns = [("Tom", "The new sports car advert is everywhere, they want you to buy one soon."),
             ("Mei", "Cancelled the gym and both streaming subscriptions, every penny goes to the house deposit."),
             ("Tom", "I made pasta again tonight.")]
    ids = [brain.perceive(tenant="t", agent="chat", kind="message", session="s1", speaker=who, text=text,
                          ts=datetime(2024, 1, 1, tzinfo=UTC)) for who, text in turns]
    brain.index.semantic.wait()
    yield brain, ids
    brain.close()


def test_an_indirect_questions_lexical_channel_carries_no_weight_and_says_why(chat):
    brain, (decoy, *_) = chat
    pack = brain.recall(tenant="t", agent="chat", query="Is Mei likely to buy a new sports car soon?", k=3,
                        layers=["episodic"], explain=True)
    why = next(i.why for i in pack.items if i.id == decoy)
    assert why["fusion"]["indirect"] is True
    assert why["lexical"]["score"] > 0.5, "the decoy carries the question's words"
    assert why["lexical"]["weight"] == pytest.approx(PRESETS["fused"].text.lexical * PRESETS["fused"].indirect_lexical)
    direct = brain.recall(tenant="t", agent="chat", query="Which sports car advert is everywhere?", k=3,
                          layers=["episodic"], explain=True)
    assert "indirect" not in direct.items[0].why["fusion"]
    assert direct.items[0].id == decoy


def test_a_person_described_as_the_one_who_with_no_noun_after_it():
    """"…的那位" / "…的那名": the measure word is for a person, so no 人 / 朋友 need follow it."""
    from hindbrain.recall.indirect import described_clauses, describes_relative, describes_someone

    asked = "帮韩蕾照看绿植的那位从事什么职业？"
    assert describes_someone(asked) and not describes_relative(asked)
    assert described_clauses(asked) == ("帮韩蕾照看绿植", "的那位从事什么职业？")
    assert describes_relative("给褚航提供露营装备的那位的另一半靠什么谋生？")
    assert describes_relative("给褚航提供露营装备的那名同事的老婆在哪儿上班？")
    assert not describes_someone("那位老师讲得很好。")  # no description before it


def test_a_person_described_by_a_reduced_relative_clause():
    """"the person responsible for …" / "in charge of …" describe a person as "who" does."""
    from hindbrain.recall.indirect import described_clauses, describes_relative, describes_someone

    asked = "What does the person responsible for the sweets when Yusuf turned 30 do for a living?"
    assert describes_someone(asked) and not describes_relative(asked)
    assert described_clauses(asked) == ("What does the person",
                                        "responsible for the sweets when Yusuf turned 30 do for a living?")
    assert describes_relative("Where does the spouse of the friend in charge of the music at Ana's party work?")
    assert not describes_someone("Who is responsible for the sweets?")  # asks who: no person described


def test_a_person_described_then_pointed_at_with_no_de():
    """"修好了漏雨的屋顶那人的上司": "那人" / "那位" / "那个人" straight after the deed closes the description as
    "的那个人" does (round thirty-three); after a clause's end it points back to a person already asked about."""
    from hindbrain.recall.indirect import described_clauses, describes_relative, describes_someone, description_part

    asked = "修好了漏雨的屋顶那人的上司开什么车？"
    assert describes_someone(asked) and describes_relative(asked)
    assert described_clauses(asked) == ("修好了漏雨的屋顶", "那人的上司开什么车？")
    assert description_part(described_clauses(asked)) == 0  # the deed comes first in Chinese
    assert describes_relative("把小猫从树上救下来那位的兄弟姐妹最近在学哪种外文？")
    assert describes_someone("找到了走丢的狗那个人后来搬去哪了？")
    assert not describes_someone("谁修好了漏雨的屋顶？那人之后去了哪里？")  # "那人" opens its clause
    assert not describes_someone("那人是谁？")


@pytest.mark.parametrize("question", [
    "What can't the mentor of the one who baked Priya's wedding cake eat?",
    "How old is the landlord of whoever found the lost dog?",
    "Which language is the tutor of the person who fixed Mei's bike learning?",
    "把小猫从树上救下来的那个人的房东不能吃什么？",
    "翻译了那份合同的那个人的发小会哪样乐器？",
    "组织了街坊聚会的那个人的师父是做什么工作的？",
])
def test_a_relative_asked_through_a_teacher_a_landlord_or_a_childhood_friend(question):
    """The roles of teaching, lodging and old friendship ask through a relation as "the flatmate of …" does: the
    answer is a chain of three turns (round thirty-three); before, the question was read as about the described
    person alone."""
    from hindbrain.recall.indirect import describes_relative

    assert describes_relative(question)


def test_after_a_state_is_a_time_not_an_asking_of_what_came_after():
    """"受伤之后" names the time of a state that befell someone, as "after that injury" does (round thirty-three);
    "之后" after a deed, or opening its clause, still asks what came after."""
    from hindbrain.recall.indirect import after_clauses, asks_afterwards

    assert not asks_afterwards("叶澜受伤之后在医院整夜作伴的那位喂着哪种小生灵？")
    assert not asks_afterwards("志远生病以后是谁一直在照顾他？")
    assert asks_afterwards("他辞职之后去了哪里？")
    assert asks_afterwards("谁修好了漏雨的屋顶？那人之后去了哪里？")
    # the state's "以后" is passed over, the clause's "后来" is what cuts
    asked = "志远生病以后，谁来照顾他？后来他搬去哪了？"
    assert after_clauses(asked) == ("志远生病以后，谁来照顾他", "后来他搬去哪了？")
