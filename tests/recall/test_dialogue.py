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


def test_late_interaction_weighs_turns_by_the_decay_it_is_given():
    import numpy as np

    from hindbrain.recall.channels import late_interaction, turn_decay
    cosines = np.array([[0.4, 0.8, 0.2]], np.float32)  # joined, an older turn, the last turn
    assert late_interaction(cosines, 1.0)[0] == np.float32(0.5 * 0.4 + 0.25 * 0.8 + 0.25 * 0.5)
    assert late_interaction(cosines, 0.5)[0] == np.float32(0.5 * 0.4 + 0.25 * 0.8 + 0.25 * (0.4 + 0.2) / 1.5)
    assert turn_decay("dialogue") == 1.0 and turn_decay("lines") == turn_decay("text") == 0.5


def test_a_dialogues_user_turns_count_alike_in_its_semantic_cosine(tmp_path, monkeypatch):
    """USE's cosine of a dialogue's memories (e5 kept out, so the cosine is USE's late interaction):
    half the joined view, a quarter the best turn, a quarter the turns' plain mean — the older turn
    (the magic trick) as much as the last (the outfit); round twenty-eight (dialogues)."""
    import numpy as np

    from hindbrain import Brain
    from hindbrain.recall import e5_dialogue

    monkeypatch.setattr(e5_dialogue, "available", lambda: False)
    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "0")
    memories = ["Bart performed a card trick for his cousins at New Year.", "Bart bought a red jacket for the show.",
                "Bart burnt his toast this morning and was annoyed.", "Bart's cat sleeps on the sofa all day."]
    with Brain.open(tmp_path / "b") as brain:
        for n, text in enumerate(memories):
            brain.perceive(tenant="u1", agent="madial", kind="observation", text=text, event_id=f"m{n}")
        brain.index.semantic.wait()
        assert brain.index.semantic.dialogue is None
        items = brain.recall(tenant="u1", agent="madial", query=MADIAL_LIKE, k=4, layers=["episodic"],
                             explain=True).items
        v = views(MADIAL_LIKE)
        semantic = brain.index.semantic
        vectors = semantic.embed_queries([v.joined, *v.turns])
        nos = [brain.index.tenants["u1"].by_id.get(i.id) for i in items]
        cos = semantic.cosines("u1", nos, vectors)
    assert len(v.turns) == 3 and len(items) == len(memories)
    expected = 0.5 * cos[:, 0] + 0.25 * cos[:, 1:].max(axis=1) + 0.25 * cos[:, 1:].mean(axis=1)
    got = np.array([i.why["semantic"]["cosine"] for i in items])
    assert np.abs(got - expected).max() <= 2e-3
