"""General conditions (design.md §issue-17, point 3): a lesson conditions on the system, the task's goal
and the symptom, not on the option that happened to fail first; trajectories that differ only
in what failed on the way are one unit, and the rule names what works once and what fails as
"not: …"."""

from hindbrain import Brain

SYSTEM, GOAL = "工单系统", "关闭工单"


def trajectory(b, agent, task, failed, works="切换到二线主管账号"):
    """One agent's task: a task-start recall naming the goal, the options that failed, the one that worked."""
    pack = b.recall(tenant="desk", agent=agent, task=task, situation={"system": SYSTEM, "action": GOAL},
                    trigger="task_start")
    for option, symptom in failed:
        b.perceive(tenant="desk", agent=agent, task=task, kind="anomaly", system=SYSTEM, action=option, text=symptom,
                   actual=symptom)
    b.perceive(tenant="desk", agent=agent, task=task, kind="action", system=SYSTEM, action=works, success=True,
               text=f"{works}，{GOAL}成功")
    return pack


def accepted(b):
    return b.sql("SELECT f.fragment_id AS id, condition, action, reason FROM fragments AS f FINAL "
                 "JOIN unit_states AS s FINAL USING (tenant, fragment_id) "
                 "WHERE s.status NOT IN ('absorbed', 'rejected') ORDER BY f._offset")


def test_trajectories_that_differ_only_in_what_failed_are_one_general_unit(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        trajectory(b, "a1", "t1", [("刷新页面", "关闭失败：您无权关闭该工单（错误码 403）")])
        trajectory(b, "a2", "t2", [("清除浏览器缓存", "关闭失败：仍提示无权操作（错误码 403）"),
                                   ("先填写解决方案", "解决方案已保存，但关闭失败：权限不足")])
        [unit] = accepted(b)
        assert unit["condition"] == f"{GOAL} in {SYSTEM} fails"  # no failing option in the condition
        assert unit["action"] == "切换到二线主管账号"  # what works, once
        assert unit["reason"] == "the other options fail here (not: 刷新页面)"
        [absorbed] = b.sql("SELECT subject_ids, reason FROM decisions FINAL WHERE kind = 'unit_absorbed'")
        assert "the same lesson" in absorbed["reason"]
        # Another agent, whichever option it would have tried first, is told the working one.
        pack = b.recall(tenant="desk", agent="a1", task="t3", situation={"system": SYSTEM, "action": GOAL},
                        trigger="task_start")
        assert pack.items[0].id == unit["id"]
        text = pack.items[0].text
        assert text.count("切换到二线主管账号") == 1 and "not: 刷新页面" in text


def test_without_a_goal_the_condition_is_the_action_and_its_symptom_not_the_identity(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        b.perceive(tenant="acme", task="t1", kind="anomaly", system="IAM", identity="normal account",
                   action="submit change", text="nothing happened", actual="no response")
        b.perceive(tenant="acme", task="t1", kind="outcome", system="IAM", identity="admin account",
                   action="submit change", success=True, text="submitted as admin")
        [unit] = accepted(b)
        assert unit["condition"] == "submit change in IAM gives no response" and "normal" not in unit["condition"]
        assert unit["action"] == "switch to the admin account and submit change"
        assert unit["reason"] == "it needs the admin account (not: submit change as the normal account)"
