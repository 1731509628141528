"""What ``RecallPack.render()`` writes for a model to read (design.md §issue-29): a rule in review is not an
instruction, an event's words are said once, a rule's facts are few."""

from hindbrain.recall.pack import Recalled, RecallPack, failing_options, said_once


def rule(status, reason="the other options fail here (not: api gateway)", scope=None):
    return Recalled("fr_1", "fragment", "", [], 1.0, {}, "lived", "experience", 0.62, 30, scope or {"env": "test"},
                    condition="send the newsletter in Mailer fails", action="smtp relay", reason=reason,
                    status=status)


def test_a_rule_in_review_reads_as_what_failed_not_as_what_to_do():
    sound = RecallPack("rc_1", [rule("stable")], 400, scope={"env": "test"}).render(detail=True)
    assert "→ DO smtp relay | BECAUSE the other options fail here (not: api gateway)" in sound
    assert "[env=test; stable 0.62; fr_1]" in sound and "lived" not in sound and "confidence" not in sound
    doubted = RecallPack("rc_1", [rule("reviewing")], 400).render()
    assert "→ DOUBTED: smtp relay failed here lately" in doubted
    assert "DO smtp" not in doubted and "not: api gateway" not in doubted  # its reason names today's answer


def test_by_default_a_rule_that_answers_is_one_bare_line():
    """design.md §issue-29: no title, no header, no facts; the extractor's reason reduced to what it names as
    failing; where the rule holds only when the recall did not say it."""
    here = RecallPack("rc_1", [rule("stable")], 400, scope={"env": "test"}).render()
    assert here == "WHEN send the newsletter in Mailer fails → DO smtp relay (not: api gateway)"
    anywhere = RecallPack("rc_1", [rule("stable")], 400).render()
    assert anywhere == "WHEN send the newsletter in Mailer fails → DO smtp relay (not: api gateway)  [env=test]"
    own = RecallPack("rc_1", [rule("stable", reason="refunds over 100 need approval")], 400, scope={"env": "test"})
    assert own.render().endswith("→ DO smtp relay | BECAUSE refunds over 100 need approval")  # a caller's reason
    named = RecallPack("rc_1", [rule("stable", scope={"user": "Mailer"})], 400).render()
    assert "[user=" not in named  # the condition names it already


def test_failing_options_is_the_extractors_not_clause_only():
    assert failing_options("it needs the admin account (not: submit as the normal account)") == \
        "(not: submit as the normal account)"
    assert failing_options("the other options fail here (not: a; not: b)") == "(not: a; not: b)"
    assert failing_options("permission operations need admin") == ""
    assert failing_options(None) == ""


def test_an_event_says_its_words_once():
    text = "Mailer (test): send the newsletter using api gateway failed - got 401 from gateway. — system: Mailer / " \
           "action: api gateway / actual: 401 from gateway"
    assert said_once(text) == "Mailer (test): send the newsletter using api gateway failed - got 401 from gateway."
    bare = "nothing happened — system: IAM / action: submit / actual: no response"
    assert said_once(bare) == bare  # the suffix says what the words do not
    assert said_once("system: IAM / action: submit") == "system: IAM / action: submit"
    event = Recalled("ev_1", "event", text, ["ev_1"], 1.0, {}, "perceived", "episodic", 0.6, 30)
    assert "— system:" not in RecallPack("rc_1", [event], 400).render()
    assert RecallPack("rc_1", [event], 400).render().endswith(
        "- perceived: “Mailer (test): send the newsletter using api gateway failed - got 401 from gateway.”")
    assert "(ev_1)" in RecallPack("rc_1", [event], 400).render(detail=True)  # its day and id on request
