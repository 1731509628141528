"""What ``RecallPack.render()`` writes for a model to read (design.md §issue-29): a rule in review is not an
instruction, an event's words are said once, a rule's facts are few."""

from hindbrain.recall.pack import Recalled, RecallPack, said_once


def rule(status, reason="the other options fail here (not: api gateway)", scope=None):
    return Recalled("fr_1", "fragment", "", [], 1.0, {}, "lived", "experience", 0.62, 30, scope or {"env": "test"},
                    condition="send the newsletter in Mailer fails", action="smtp relay", reason=reason,
                    status=status)


def test_a_rule_in_review_reads_as_what_failed_not_as_what_to_do():
    sound = RecallPack("rc_1", [rule("stable")], 400).render()
    assert "→ DO smtp relay | BECAUSE the other options fail here (not: api gateway)" in sound
    assert "[env=test; stable 0.62; fr_1]" in sound and "lived" not in sound and "confidence" not in sound
    doubted = RecallPack("rc_1", [rule("reviewing")], 400).render()
    assert "→ DOUBTED: smtp relay failed here lately" in doubted
    assert "DO smtp" not in doubted and "not: api gateway" not in doubted  # its reason names today's answer


def test_an_event_says_its_words_once():
    text = "Mailer (test): send the newsletter using api gateway failed - got 401 from gateway. — system: Mailer / " \
           "action: api gateway / actual: 401 from gateway"
    assert said_once(text) == "Mailer (test): send the newsletter using api gateway failed - got 401 from gateway."
    bare = "nothing happened — system: IAM / action: submit / actual: no response"
    assert said_once(bare) == bare  # the suffix says what the words do not
    assert said_once("system: IAM / action: submit") == "system: IAM / action: submit"
    event = Recalled("ev_1", "event", text, ["ev_1"], 1.0, {}, "perceived", "episodic", 0.6, 30)
    assert "— system:" not in RecallPack("rc_1", [event], 400).render()
