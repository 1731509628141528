"""Knowledge updates (design.md §issue-17, point 5): a newer explicit statement by the same user on the
same subject supersedes the older one — kept, marked superseded by a decision naming the
newer one, never injected again; a preference on another subject stands beside it."""

from hindbrain import Brain


def say(b, user, text, session):
    b.perceive(tenant="acme", agent="a1", kind="message", speaker="user", signal="explicit", session=session,
               text=text, scope={"user": user})


def preferences(b, user):
    pack = b.recall(tenant="acme", agent="a2", query=f"write the weekly status answer for {user}", user=user,
                    trigger="task_start")
    return [i.action for i in pack.items if i.kind == "fragment"], pack


def decisions(b, kind):
    return b.sql("SELECT * FROM decisions FINAL WHERE kind = {k:String} ORDER BY _offset", {"k": kind})


def test_a_changed_preference_is_obeyed_from_the_next_task(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        say(b, "alice", "Please always answer me in bullet points", "s1")
        say(b, "alice", "I prefer answers in Chinese, please", "s1")
        say(b, "bob", "Please always answer me in bullet points", "s1")
        [old] = [d["subject_ids"][0] for d in decisions(b, "unit_accepted")
                 if "bullet" in d["payload_json"] and "alice" in d["payload_json"]]
        say(b, "alice", "Actually, no more bullet points for me: write short plain paragraphs from now on", "s2")
        [superseded] = decisions(b, "unit_superseded")
        assert superseded["subject_ids"] == [old] and "bullet" in superseded["reason"]
        newer = superseded["evidence_ids"][0]
        actions, pack = preferences(b, "alice")
        assert any("paragraphs" in a for a in actions) and any("Chinese" in a for a in actions)
        assert not any("always answer me in bullet points" in a for a in actions)
        assert {"id": old, "stage": "invalidation"} in [{"id": c["id"], "stage": c["stage"]} for c in pack.cut]
        [state] = b.sql("SELECT status FROM unit_states FINAL WHERE fragment_id = {f:String}", {"f": old})
        assert state["status"] == "superseded" and newer != old
        assert any("bullet points" in a for a in preferences(b, "bob")[0])  # bob's own word stands
    with Brain.open(tmp_path / "b", embedder="none") as b:  # replayed from the log, the same
        actions, _ = preferences(b, "alice")
        assert not any("always answer me in bullet points" in a for a in actions)


def test_chinese_revision_supersedes_too(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        say(b, "lin", "以后请用要点列表回答我", "s1")
        say(b, "lin", "别再用要点列表了，以后请写简短的段落", "s2")
        assert len(decisions(b, "unit_superseded")) == 1
        actions, _ = preferences(b, "lin")
        assert any("段落" in a for a in actions) and not any(a.endswith("以后请用要点列表回答我") for a in actions)


def test_a_user_speaking_in_their_own_name_is_heard_and_their_old_words_go_with_the_old_rule(tmp_path):
    """design.md §issue-17, finding 6: integrations pass the person's name as the speaker and no signal.
    A standing instruction ("please always", "from now on") is explicit by its own words; the
    user it binds is the speaker; once superseded, neither the old unit nor the old statement
    comes back, and the user's own question of this task is not injected back to it."""
    with Brain.open(tmp_path / "b", embedder="none") as b:
        old_words = b.perceive(tenant="acme", agent="a1", kind="message", speaker="Priya", session="s1",
                               text="Please always answer me in bullet points.")
        b.perceive(tenant="acme", agent="a1", kind="message", speaker="Lena", session="s2", text="I like hiking.")
        b.perceive(tenant="acme", agent="a2", kind="message", speaker="a2", session="s1",
                   text="From now on I will answer in bullet points.")  # the agent's own turn binds no user
        [first] = decisions(b, "unit_accepted")
        assert "Priya" in first["payload_json"]
        b.perceive(tenant="acme", agent="a3", kind="message", speaker="Priya", session="s3",
                   text="Actually, no more bullet points for me: write short plain paragraphs from now on.")
        assert len(decisions(b, "unit_superseded")) == 1
        assert len(decisions(b, "unit_accepted")) == 2  # Priya's two: no rule from Lena's hiking or the agent
        question = b.perceive(tenant="acme", agent="a1", task="q1", kind="message", speaker="Priya",
                              text="How do I rotate my API key?")
        pack = b.recall(tenant="acme", agent="a1", task="q1", query="answer Priya's question", user="Priya",
                        trigger="task_start")
        assert "paragraphs" in pack.items[0].text
        assert not any("always answer me in bullet points" in i.text for i in pack.items)
        cuts = {c["id"]: c["stage"] for c in pack.cut}
        assert cuts.get(old_words) == "invalidation" and cuts.get(question) == "context"
