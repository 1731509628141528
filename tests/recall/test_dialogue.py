"""A query as users send it: a dialogue is split into views, a question stays itself."""

from hindbrain.recall.dialogue import MAX_TURN_VIEWS, parse_turns, views

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


def test_questions_and_labelled_text_are_one_view():
    for text in ("When did Caroline go to the support group?", "error: 403 on submit\nnote: it worked yesterday",
                 "system: IAM / identity: normal account / action: submit change", "Step 1: open\nStep 2: close",
                 "IAM 提交后没有响应"):
        v = views(text)
        assert v.form == "text" and v.texts == [text] and v.lexical == text, text
