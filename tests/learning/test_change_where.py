"""Change detection, round two (design.md §issue-29): *where* an option failed is its system and its scope (what
fails in prod may still work in test), an option that starts working loses its old failure reports,
and one that failed twice since it last worked loses its old success events even when the task never
found what works instead."""

from hindbrain import Brain

T = "acme"


def did(b, agent, task, option, ok, env="prod"):
    b.perceive(tenant=T, agent=agent, task=task, kind="action" if ok else "anomaly", system="Deploy", action=option,
               success=ok, scope={"env": env}, text=f"ship the release with {option} {'worked' if ok else 'failed'}",
               **({} if ok else {"expected": "live", "actual": "refused"}))


def outdated(b):
    return [set(r["subject_ids"]) for r in
            b.sql("SELECT subject_ids FROM decisions FINAL WHERE kind = 'events_outdated' ORDER BY _offset")]


def events(b, option, ok, env):
    return {r["event_id"] for r in b.sql(
        "SELECT event_id, scope FROM events FINAL WHERE action = {a:String} AND success = {s:Bool}",
        {"a": option, "s": ok}) if '"env": "' + env + '"' in str(r["scope"]).replace("'", '"')}


def test_a_failure_in_prod_outdates_nothing_of_test(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        did(b, "a1", "t0", "direct push", True, "prod")  # it once worked in prod too: that success goes
        did(b, "a1", "t1", "blue-green", False, "test")
        did(b, "a1", "t1", "direct push", True, "test")  # test: direct push works
        did(b, "a1", "t2", "direct push", True, "test")
        did(b, "a1", "t3", "direct push", False, "prod")
        did(b, "a1", "t3", "blue-green", True, "prod")  # prod: direct push fails, blue-green works
        kept = events(b, "direct push", True, "test")
        assert len(kept) == 2 and [events(b, "direct push", True, "prod")] == outdated(b)  # prod's, not test's
        assert not any(kept & s for s in outdated(b))
        rules = b.sql("SELECT fragment_id, status FROM unit_states FINAL")
        assert rules and all(r["status"] not in ("reviewing", "invalid") for r in rules)


def test_an_option_that_starts_working_outdates_its_old_failures(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        did(b, "a1", "t1", "canary", False)
        did(b, "a1", "t1", "blue-green", True)
        old = events(b, "canary", False, "prod")
        assert len(old) == 1 and not outdated(b)
        did(b, "a2", "t2", "blue-green", False)
        did(b, "a2", "t2", "canary", True)  # the world changed: canary works now
        assert any(old <= s for s in outdated(b))
        pack = b.recall(tenant=T, agent="a1", query="ship the release in Deploy", situation={"system": "Deploy"},
                        scope={"env": "prod"})
        assert not old & {i.id for i in pack.items}
        assert any(c["id"] in old and c["stage"] == "invalidation" for c in pack.cut)


def test_two_failures_since_it_last_worked_outdate_an_options_successes_one_does_not(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        did(b, "a1", "t1", "blue-green", True)
        did(b, "a1", "t2", "blue-green", True)
        worked = events(b, "blue-green", True, "prod")
        did(b, "a1", "t3", "blue-green", False)  # once: a transient error must not erase what works
        assert not outdated(b)
        did(b, "a1", "t4", "blue-green", True)  # it works again: the one failure was transient
        did(b, "a1", "t5", "blue-green", False)
        assert not any(worked & s for s in outdated(b))
        did(b, "a1", "t6", "blue-green", False)  # twice since it last worked, and no task found better
        assert any(worked <= s for s in outdated(b))


def test_who_did_it_is_part_of_the_option_a_success_as_admin_keeps_the_failure_as_normal(tmp_path):
    """The same action by another identity is another choice: "submit change" working as the admin
    account says nothing of "submit change" as the normal account, whose failure stays evidence."""
    with Brain.open(tmp_path / "b", embedder="none") as b:
        b.perceive(tenant=T, agent="a1", task="t1", kind="anomaly", text="nothing happened", system="IAM",
                   identity="normal account", action="submit change", expected="success message", actual="no response")
        b.perceive(tenant=T, agent="a1", task="t1", kind="outcome", success=True, system="IAM",
                   identity="admin account", action="submit change")
        assert not outdated(b)
        assert b.sql("SELECT count() AS n FROM decisions FINAL WHERE kind = 'unit_accepted'")[0]["n"] == 1
