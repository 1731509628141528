"""A ticket desk in plain text (design.md §issue-17, findings 5 and 6, point 4): no emotion labels, no
action events, satisfaction only as the customer's explicit feedback. The brain reads the
emotion of the customer's turn and the acts of the agent's reply, induction learns the belief,
and an angry ticket given as plain text is briefed it."""

from hindbrain import Brain
from hindbrain.recall.reading import reading, reply_acts

ANGRY = ("I'm furious: the API has been timing out AGAIN!", "用户很生气，接口超时",
         "This is unacceptable, the export is empty")
CALM = ("Hi, the API has been timing out - could you take a look?", "你好，发票金额不对，麻烦看一下。")
SORRY = "I'm really sorry about this, I understand how frustrating it is. "


def test_the_edge_reads_the_customers_emotion_and_the_agents_reply_acts():
    assert reading("message", "用户很生气，接口超时", "user", "a1", None) == (
        "angry", {"label_confidence": "0.8", "emotion_source": "lexicon/1"})
    assert reading("message", "I'm furious", "user", "a1", "calm") == ("calm", {})  # the caller's label stands
    assert reading("message", SORRY + "fixed", "a1", "a1", None) == (None, {"reply_acts": "empathize,answer"})
    assert reading("message", "非常抱歉给您带来困扰。已修复", "assistant", "a1", None)[1] == {
        "reply_acts": "empathize,answer"}
    assert reading("observation", "I'm furious", "user", "a1", None) == (None, {})
    assert reply_acts("the timeouts come from eu-2") == ("answer",) and reply_acts("") == ()


def test_plain_text_tickets_teach_a_belief_that_is_briefed_to_angry_tickets(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        n = 0
        for _ in range(12):
            for text in ANGRY + CALM:
                n += 1
                agent, task = f"a{n % 3}", f"t{n}"
                empathize = n % 2 == 0
                angry = text in ANGRY
                ok = empathize or not angry or n % 5 == 0  # the desk's hidden rule
                b.perceive(tenant="desk", agent=agent, task=task, kind="message", speaker="user", text=text)
                b.perceive(tenant="desk", agent=agent, task=task, kind="message", speaker=agent,
                           text=(SORRY if empathize else "") + "the timeouts come from eu-2; your key moved to eu-1.")
                b.perceive(tenant="desk", agent=agent, task=task, kind="feedback", speaker="user", signal="explicit",
                           polarity=1.0 if ok else -1.0, text="Thanks!" if ok else "Not satisfied with this reply.")
        b.hindsight()
        [belief] = b.sql("SELECT text, status FROM beliefs FINAL WHERE text LIKE 'if emotion in [angry]%empathize%'")
        assert belief["status"] == "active" and "then first ‘empathize’, then ‘answer’" in belief["text"]
        briefed = b.recall(tenant="desk", agent="a1", query="太离谱了！重置密码后无法登录，已经第三次了！",
                           trigger="task_start").briefing
        assert [x.text for x in briefed] == [belief["text"]]
        assert b.recall(tenant="desk", agent="a1", query="Quick question: my invoice shows the wrong amount.",
                        trigger="task_start").briefing == []
