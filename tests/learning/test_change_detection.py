"""Change detection (design.md §issue-29 points 1 and 4): when the option a verified rule recommends fails
where it used to succeed and another one works, the older evidence goes with the rule — its
success events are outdated (a decision in the log, marked in ``explain``, no longer injected),
the rule is contradicted (the ``contradiction`` feedback signal, penalised) — and the first
success after the change teaches the new answer."""

from hindbrain import Brain

T = "acme"
SITUATION = {"system": "Dashboards", "action": "edit the dashboard"}


def task(b, agent, n, option, works, apply=True):
    """One task: recall, do what the first rule says (else ``option``), and report it as the simulators do."""
    who = dict(tenant=T, agent=agent, task=f"{agent}-t{n}")
    pack = b.recall(**who, query="edit the sales dashboard in Dashboards", trigger="task_start", situation=SITUATION)
    rule = next((i for i in pack.items if i.kind == "fragment"), None)
    did = rule.action if (rule and apply) else option
    ok = works(did)
    b.perceive(**who, kind="action" if ok else "anomaly", system="Dashboards", action=did, success=ok,
               text=f"edit the dashboard {'succeeded' if ok else 'was refused'} with {did}",
               **({} if ok else {"actual": "403 refused", "expected": "saved"}))
    if not ok:
        fix = "use the owner role" if "editor" in did else "use the editor role"
        b.perceive(**who, kind="action", system="Dashboards", action=fix, success=True,
                   text=f"edit the dashboard succeeded with {fix}")
    b.outcome(**who, recall_id=pack.recall_id, applied=[rule.id] if rule and apply else [], success=ok, steps=1)
    return pack, did


def decisions(b, kind):
    return b.sql("SELECT * FROM decisions FINAL WHERE kind = {k:String} ORDER BY _offset", {"k": kind})


def test_a_changed_world_outdates_the_old_answer_and_its_events(tmp_path):
    before = lambda action: "editor role" in action  # noqa: E731
    after = lambda action: "owner role" in action  # noqa: E731
    with Brain.open(tmp_path / "b", embedder="none") as b:
        task(b, "a1", 0, "save as viewer", before)  # fails, then the editor role works: a lesson
        for n in range(1, 4):
            assert task(b, "a1", n, "save as viewer", before)[1] == "use the editor role"
        [old_rule] = {r["fragment_id"] for r in b.sql("SELECT fragment_id, status FROM unit_states FINAL "
                                                      "WHERE status IN ('verified', 'stable')")}
        old_events = [r["event_id"] for r in b.sql("SELECT event_id FROM events FINAL WHERE success "
                                                   "AND action = 'use the editor role'")]
        assert len(old_events) >= 3
        assert not decisions(b, "events_outdated")  # nothing changed yet: nothing outdated
        # The world changes: the editor role is refused, the owner role works.
        pack, did = task(b, "a1", 4, "save as viewer", after)
        assert did == "use the editor role"  # the old answer, once
        [outdated] = decisions(b, "events_outdated")
        assert set(old_events) <= set(outdated["subject_ids"]) and "editor role" in outdated["reason"]
        counters = b.sql("SELECT contradiction FROM feedback WHERE item_id = {f:String}", {"f": old_rule})
        assert counters and counters[0]["contradiction"] == 1  # one verdict, counted once
        [state] = b.sql("SELECT status FROM unit_states FINAL WHERE fragment_id = {f:String}", {"f": old_rule})
        assert state["status"] in ("reviewing", "invalid")
        # explain marks the outdated event; recall no longer injects it, nor the old rule first
        assert any(e["record"].get("kind") == "events_outdated" for e in b.explain(old_events[0], tenant=T))
        pack, did = task(b, "a1", 5, "save as viewer", after)
        assert did == "use the owner role"  # the new answer, learned from the first success after the change
        assert not {i.id for i in pack.items} & set(old_events)
        assert {c["id"] for c in pack.cut if c["reason"].startswith("outdated")} <= set(old_events)
    with Brain.open(tmp_path / "b", embedder="none") as b:  # replayed from the log: the same
        pack = b.recall(tenant=T, agent="a1", task="x", query="edit the sales dashboard in Dashboards",
                        trigger="task_start", situation=SITUATION)
        assert not {i.id for i in pack.items} & set(old_events)
        assert b.sql("SELECT contradiction FROM feedback WHERE item_id = {f:String}", {"f": old_rule})[0][
            "contradiction"] == 1


def test_nothing_is_outdated_while_the_old_answer_still_works(tmp_path):
    """A failure of another option (the naive one) outdates nothing of the answer that works."""
    works = lambda action: "editor role" in action  # noqa: E731
    with Brain.open(tmp_path / "b", embedder="none") as b:
        for n in range(4):
            task(b, f"a{n}", n, "save as viewer", works, apply=False)  # each agent fails naively, then succeeds
        outdated = decisions(b, "events_outdated")
        assert all("editor role" not in d["reason"].split("worked")[0] for d in outdated)
        assert not b.sql("SELECT item_id FROM feedback WHERE contradiction > 0")


def test_utility_counts_the_learners_verdict_not_the_reported_outcome(tmp_path):
    """Applied, its action failed, another option worked, and the task is reported a success: the learner
    debits the unit, and the utility channel counts that failure (live and after reopening)."""
    works = lambda action: "editor role" in action  # noqa: E731
    with Brain.open(tmp_path / "b", embedder="none") as b:
        task(b, "a1", 0, "save as viewer", works)
        task(b, "a1", 1, "save as viewer", works)  # applied and worked: credited
        who = dict(tenant=T, agent="a1", task="a1-t2")
        pack = b.recall(**who, query="edit the sales dashboard in Dashboards", trigger="task_start",
                        situation=SITUATION)
        rule = next(i for i in pack.items if i.kind == "fragment")
        b.perceive(**who, kind="anomaly", system="Dashboards", action=rule.action, actual="403", expected="saved")
        b.perceive(**who, kind="action", system="Dashboards", action="use the owner role", success=True)
        b.outcome(**who, recall_id=pack.recall_id, applied=[rule.id], success=True, steps=2)
        [row] = b.sql("SELECT success, failure, credited, debited FROM feedback WHERE item_id = {f:String}",
                      {"f": rule.id})
        assert (row["success"], row["failure"]) == (2, 0)  # what the agent reported
        assert (row["credited"], row["debited"]) == (1, 1)  # what the learner judged

        def utility():
            p = b.recall(tenant=T, agent="a1", query="edit the sales dashboard in Dashboards", explain=True)
            return next(i.why["utility"] for i in (*p.items, ) if i.id == rule.id) if any(
                i.id == rule.id for i in p.items) else None
        live = utility()
        assert live is None or (live["success"], live["failure"]) == (1, 1)
    with Brain.open(tmp_path / "b", embedder="none") as b:
        [row] = b.sql("SELECT credited, debited FROM feedback WHERE item_id = {f:String}", {"f": rule.id})
        assert (row["credited"], row["debited"]) == (1, 1)
        counters = b.index.tenants[T].counters[rule.id]
        assert counters.track == (1, 1) and (counters.success, counters.failure) == (2, 0)
