"""A query as users send it: a dialogue is split into views, a question stays itself."""

from hindbrain.recall.dialogue import LONG_QUERY, MAX_TURN_VIEWS, SHORT_QUERY, associative_share, parse_turns, views

MADIAL_LIKE = ('<BOD>\n<Bart>: "Hey, did you know? I\'m going to perform a magic trick at the party!"\n'
               '<Assistant>: "That\'s fantastic! The audience will be captivated."\n'
               '<Bart>: "I get a bit nervous too."\n<Assistant>: "Take a deep breath!"\n'
               '<Bart>: "By the way, what should I wear?"\n')


def test_a_tagged_dialogue_keeps_the_users_turns_and_drops_the_assistants():
    v = views(MADIAL_LIKE)
    assert v.form == "dialogue" and v.speakers == ("Bart",)
    assert v.joined.splitlines() == ["Hey, did you know? I'm going to perform a magic trick at the party!",
                                     "I get a bit nervous too.", "By the way, what should I wear?"]
    assert "fantastic" not in v.joined and "fantastic" not in v.lexical
    assert v.turns == tuple(v.joined.splitlines()) and v.texts[0] == v.joined
    assert v.lexical.startswith("Bart ")  # a memory often names the person
    weights = v.turn_weights()
    assert weights == sorted(weights) and weights[-1] == 1.0  # the most recent turn weighs most


def test_e5s_cue_is_the_users_last_turn_after_the_assistants_turn_before_it():
    assert views(MADIAL_LIKE).cue == "Take a deep breath! By the way, what should I wear?"
    # the assistant spoke last: the cue is still the user's last turn and what it answered
    assert views("Ann: my cat is ill\nBot: which vet?\nAnn: the one on Elm Street\nBot: ok").cue == \
        "which vet? the one on Elm Street"
    assert views("Ann: my cat is ill\nBo: poor thing").cue == "poor thing"  # no assistant: the last turn
    assert views("用户：我今天数学考了满分！\n助手：真棒！\n用户：我好开心").cue == "真棒！ 我好开心"
    assert views("What should I wear?").cue == "What should I wear?"
    assert views("first line\nsecond line").cue == "second line"


def test_chinese_colons_plain_names_and_continuation_lines():
    turns = parse_turns("用户：我今天数学考了满分！\n继续说一句\n助手：真棒！\n用户：我好开心")
    assert [t.speaker for t in turns] == ["用户", "助手", "用户"]
    assert turns[0].text == "我今天数学考了满分！ 继续说一句"
    v = views("Alice: I lost my keys\nAssistant: oh no\nAlice: they were on a red keychain")
    assert v.form == "dialogue" and v.joined == "I lost my keys\nthey were on a red keychain"


def test_only_the_most_recent_turns_are_views_of_their_own():
    text = "\n".join(f"Sam: turn {n}\nAI: ok" for n in range(9))
    v = views(text)
    assert len(v.turns) == MAX_TURN_VIEWS and v.turns[-1] == "turn 8"
    assert len(v.joined.splitlines()) == 9  # the joined view keeps every user turn


def test_questions_and_labelled_text_are_not_dialogues():
    for text in ("When did Caroline go to the support group?",
                 "system: IAM / identity: normal account / action: submit change", "IAM 提交后没有响应"):
        v = views(text)
        assert v.form == "text" and v.texts == [text] and v.lexical == text, text
    for text in ("error: 403 on submit\nnote: it worked yesterday", "Step 1: open\nStep 2: close"):
        v = views(text)  # labels are not speakers: several lines, each a view of its own
        assert v.form == "lines" and v.turns == tuple(text.split("\n")) and v.speakers == (), text


def test_untagged_turns_are_views_too():
    v = views("I got full marks in maths today!\nI was so happy\nMum made dumplings to celebrate")
    assert v.form == "lines" and len(v.turns) == 3 and v.joined.count("\n") == 2


def test_how_associative_a_query_is():
    assert associative_share("dialogue", 3) == 1.0  # a conversation, however short
    assert associative_share("text", 8) == 0.0  # a question
    assert associative_share("lines", LONG_QUERY) == 1.0  # a long description or pasted turns
    middle = associative_share("text", (SHORT_QUERY + LONG_QUERY) // 2)
    assert 0.0 < middle < 1.0
