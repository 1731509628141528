"""Trigger detection: each trigger fires on its cue, and quiet moments fire nothing."""

import pytest

from hindbrain.recall.triggers import detect_triggers


def fired(**kw) -> list[str]:
    return [h.trigger for h in detect_triggers(**kw)]


def test_a_quiet_moment_fires_nothing():
    assert fired(text="please summarise the report", expected="ok", actual="ok", recent_actions=["open"]) == []


def test_expected_versus_actual_is_an_anomaly():
    hits = detect_triggers(expected="success message", actual="no response")
    assert [h.trigger for h in hits] == ["anomaly"] and "no response" in hits[0].reason


@pytest.mark.parametrize("seen", ["Permission denied", "redirected to the login page", "白屏了", "页面一直转圈",
                                  "HTTP 403", "会话过期，请重新登录"])
def test_failure_signs_are_anomalies(seen):
    assert fired(text=seen) == ["anomaly"]


def test_the_same_action_repeated_without_progress():
    assert fired(recent_actions=["click submit", "Click  submit"], progressed=False) == ["no_progress"]
    assert fired(recent_actions=["click submit", "click submit"], progressed=True) == []
    assert fired(recent_actions=["open form", "click submit"], progressed=False) == []


def test_no_data_and_unresolved_entities():
    assert fired(results_found=0) == ["no_data"]
    assert fired(results_found=3) == []
    assert fired(unresolved_entities=["ACME-prod cluster"]) == ["unresolved_entity"]


@pytest.mark.parametrize("turn", ["上次你说过要用管理员账号", "我们讨论过这个方案", "还是老规矩吧",
                                  "Like last time, please", "you said the export runs at night",
                                  "as we discussed yesterday"])
def test_user_references_to_the_past(turn):
    assert "user_reference" in fired(text=turn)


def test_a_word_that_only_looks_like_a_reference_does_not_fire():
    assert fired(text="the previously unseen error") == []
    assert "user_reference" in fired(text="in our previous conversation you chose CSV")


def test_several_triggers_fire_together_in_order():
    assert fired(task_started=True, expected="a", actual="b", results_found=0, text="as before") == [
        "task_start", "anomaly", "no_data", "user_reference"
    ]
