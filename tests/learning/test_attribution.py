"""Attribution inside a task (design.md §issue-17, point 2): an applied unit whose action was performed and
then failed is falsified, whatever the task's final outcome; a falsified rule stops being
injected after at most two such failures."""

from hindbrain import Brain
from hindbrain.learning.attribution import outcome_of, words

IAM = {"system": "IAM", "identity": "normal account", "expected": "success message", "actual": "no response"}


def test_the_last_time_the_units_own_action_was_performed_decides():
    rule = "switch to the admin account, then submit the change"
    admin, other = words("submit the change as the admin account"), words("ask the IAM team")
    assert outcome_of(rule, [(admin, True), (other, False)], task_success=True) is False  # it failed, another worked
    assert outcome_of(rule, [(admin, True), (admin, False)], task_success=True) is True  # failed once, then worked
    assert outcome_of(rule, [(other, False)], task_success=False) is False  # not performed: the task decides
    assert outcome_of(rule, [], task_success=True) is True


def task(b, n, rule, old_fix="switch to the admin account"):
    pack = b.recall(tenant="acme", agent="a1", task=f"t{n}", situation={**IAM, "action": "submit change"},
                    trigger="anomaly")
    b.perceive(tenant="acme", agent="a1", task=f"t{n}", kind="anomaly", text="still nothing happened",
               **{**IAM, "action": old_fix})
    b.perceive(tenant="acme", agent="a1", task=f"t{n}", kind="action", text="the IAM team approved it",
               system="IAM", identity="normal account", action="ask the IAM team to approve", success=True)
    b.outcome(tenant="acme", agent="a1", task=f"t{n}", recall_id=pack.recall_id, applied=[rule], success=True)
    return pack


def test_a_rule_that_fails_where_another_option_then_works_is_in_review_at_once_and_gives_way(tmp_path):
    """The task succeeded, but not by the rule: its action failed and the same task found what
    works instead — evidence against it with an alternative, a contradiction (in review at once),
    not a flake to count towards review."""
    with Brain.open(tmp_path / "b", embedder="none") as b:
        rule = b.learn(tenant="acme", condition="submit change in IAM as the normal account gives no response",
                       action="switch to the admin account", seed=True, confidence=0.9)
        assert [i.id for i in task(b, 1, rule).items][:1] == [rule]
        [state] = b.sql("SELECT status, successes, contradictions FROM unit_states FINAL "
                        "WHERE fragment_id = {f:String}", {"f": rule})
        assert state["successes"] == 0 and state["contradictions"] == 1  # not credited with the task's success
        assert state["status"] == "reviewing"
        [why] = b.sql("SELECT reason FROM decisions FINAL WHERE kind = 'unit_reviewing'")
        assert "worked in the same task" in why["reason"]
        pack = b.recall(tenant="acme", agent="a1", task="t3", situation={**IAM, "action": "submit change"},
                        trigger="anomaly")
        assert rule not in [i.id for i in pack.items]  # no longer injected: the option that worked is
        assert any("IAM team" in (i.action or "") for i in pack.items)


def test_a_rule_that_fails_twice_with_nothing_found_instead_is_falsified_and_dropped(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        rule = b.learn(tenant="acme", condition="submit change in IAM as the normal account gives no response",
                       action="switch to the admin account", seed=True, confidence=0.9)
        other = b.learn(tenant="acme", condition="submit change in IAM gives no response",
                        action="ask the IAM team to approve", seed=True, confidence=0.9)
        for n in (1, 2):
            pack = b.recall(tenant="acme", agent="a1", task=f"t{n}", situation={**IAM, "action": "submit change"},
                            trigger="anomaly")
            b.perceive(tenant="acme", agent="a1", task=f"t{n}", kind="anomaly", text="still nothing happened",
                       **{**IAM, "action": "switch to the admin account"})
            b.outcome(tenant="acme", agent="a1", task=f"t{n}", recall_id=pack.recall_id, applied=[rule], success=True)
        [state] = b.sql("SELECT status, successes, failures FROM unit_states FINAL WHERE fragment_id = {f:String}",
                        {"f": rule})
        assert state["successes"] == 0 and state["failures"] == 2 and state["status"] == "reviewing"
        pack = b.recall(tenant="acme", agent="a1", task="t3", situation={**IAM, "action": "submit change"},
                        trigger="anomaly")
        assert rule not in [i.id for i in pack.items] and other in [i.id for i in pack.items]


def test_a_rule_whose_action_worked_is_credited(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        rule = b.learn(tenant="acme", condition="submit change in IAM as the normal account gives no response",
                       action="ask the IAM team to approve", seed=True, confidence=0.9)
        task(b, 1, rule, old_fix="submit change")
        [state] = b.sql("SELECT successes, failures FROM unit_states FINAL WHERE fragment_id = {f:String}",
                        {"f": rule})
        assert state["successes"] == 1 and state["failures"] == 0
