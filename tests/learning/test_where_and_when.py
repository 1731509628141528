"""Lessons where they hold and change that is not a flake (design.md §issue-29, round three): the same fix
learned in another environment is a rule there; an option that keeps working for independent agents is a
routine; a rule that failed once stays trusted until the system shows its option replaced; a rule in review
that an agent heeded is not verified by it."""

import json

from hindbrain import Brain

SITUATION = {"system": "Mailer", "action": "send the newsletter"}


def report(b, agent, task, action, ok, env="prod", applied=None):
    """One attempt as the simulators' agents make it: recall, act, perceive what happened (and, with
    ``applied``, the outcome naming what was followed)."""
    pack = b.recall(tenant="acme", agent=agent, task=task, query="send the newsletter", situation=SITUATION,
                    trigger="task_start", scope={"env": env})
    b.perceive(tenant="acme", agent=agent, task=task, kind="action" if ok else "anomaly", system="Mailer",
               action=action, success=ok, scope={"env": env}, text=f"Mailer: {action} {'worked' if ok else 'failed'}")
    if applied is not None:
        b.outcome(tenant="acme", agent=agent, task=task, recall_id=pack.recall_id, applied=applied, success=ok)
    return pack


def units(b):
    """fragment id → (action, scope, status) of every unit the learner accepted."""
    rows = b.sql("SELECT fragment_id, action, scope FROM fragments FINAL")
    status = {r["fragment_id"]: r["status"] for r in b.sql("SELECT fragment_id, status FROM unit_states FINAL")}
    return {r["fragment_id"]: (r["action"], dict(r["scope"]), status.get(r["fragment_id"])) for r in rows}


def rule_of(b, action, env):
    [fid] = [f for f, (a, scope, _) in units(b).items() if a == action and scope.get("env") == env]
    return fid


def status(b, fid):
    return units(b)[fid][2]


def verified_then_failed_once(b):
    """A rule learned in test ("smtp relay" worked where "batch queue" failed), verified once by
    an agent applying it, then failing once where it was applied; returns its id."""
    report(b, "a1", "t1", "batch queue", False, "test")
    report(b, "a2", "t2", "smtp relay", True, "test")
    rule = rule_of(b, "smtp relay", "test")
    report(b, "a3", "t3", "smtp relay", True, "test", applied=[rule])
    report(b, "a4", "t4", "smtp relay", False, "test", applied=[rule])
    return rule


def test_the_same_fix_learned_in_another_environment_is_that_environments_rule(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        for env in ("prod", "test"):
            report(b, "a1", f"t-{env}", "batch queue", False, env)
            report(b, "a2", f"u-{env}", "smtp relay", True, env)
        prod, test = rule_of(b, "smtp relay", "prod"), rule_of(b, "smtp relay", "test")
        assert prod != test  # not absorbed into the first: the gate would cut prod's rule in test
        pack = report(b, "a3", "v-test", "smtp relay", True, "test")
        assert [i.id for i in pack.items if i.kind == "fragment"] == [test]
        assert pack.render() == "WHEN send the newsletter in Mailer fails → DO smtp relay (not: batch queue)"


def test_an_option_that_keeps_working_for_independent_agents_becomes_a_routine(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        report(b, "a1", "t1", "smtp relay", True)
        report(b, "a1", "t2", "smtp relay", True)  # one agent twice: not yet the fleet's routine
        assert units(b) == {}
        report(b, "a2", "t3", "smtp relay", True, env="test")  # another scope: counted there
        assert units(b) == {}
        report(b, "a2", "t4", "smtp relay", True)
        [(fid, (action, scope, state))] = units(b).items()
        assert (action, scope, state) == ("smtp relay", {"env": "prod"}, "candidate")
        [shared] = b.sql("SELECT reason FROM decisions FINAL WHERE kind = 'unit_shared'")
        assert "a routine" in shared["reason"]
        pack = report(b, "a3", "t5", "smtp relay", True)
        assert pack.render() == "WHEN send the newsletter in Mailer → DO smtp relay"  # no reason: nothing failed
        report(b, "a4", "t6", "smtp relay", False)  # its premise, never failing here, is broken
        assert status(b, fid) == "reviewing"
        assert "DOUBTED: smtp relay failed here lately" in report(b, "a5", "t7", "api gateway", True).render()


def test_a_failure_resets_the_count_of_a_routine(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        report(b, "a1", "t1", "smtp relay", True)
        report(b, "a2", "t2", "smtp relay", False)
        report(b, "a3", "t3", "smtp relay", True)  # two agents it worked for, but it failed in between
        assert units(b) == {}


def test_one_failure_is_a_flake_until_the_system_shows_the_option_replaced(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        rule = verified_then_failed_once(b)  # verified, then one failure: a flake, perhaps
        assert status(b, rule) != "reviewing"
        report(b, "a5", "t5", "smtp relay", False, "prod")  # the option fails in prod too ...
        assert status(b, rule) != "reviewing"
        report(b, "a6", "t6", "api gateway", True, "prod")  # ... and another option replaced it there
        assert status(b, rule) == "reviewing"
        why = b.sql("SELECT reason FROM decisions FINAL WHERE kind = 'unit_reviewing' AND has(subject_ids, "
                    "{f:String})", {"f": rule})
        assert why and "'api gateway' replaced it" in why[0]["reason"]
        counted = b.sql("SELECT contradiction FROM feedback WHERE item_id = {f:String}", {"f": rule})[0]
        report(b, "a7", "t7", "api gateway", True, "prod")  # the same failure is not counted twice
        again = b.sql("SELECT contradiction FROM feedback WHERE item_id = {f:String}", {"f": rule})[0]
        assert again["contradiction"] == counted["contradiction"]


def test_a_flake_then_the_same_option_working_again_leaves_the_rule_trusted(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        rule = verified_then_failed_once(b)
        report(b, "a5", "t5", "smtp relay", True, "test", applied=[rule])
        report(b, "a6", "t6", "smtp relay", True, "prod")
        assert status(b, rule) in ("verified", "stable")


def test_a_rule_in_review_heeded_as_a_warning_is_not_verified_by_it(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        rule = verified_then_failed_once(b)
        report(b, "a5", "t5", "api gateway", True, "prod")  # not yet: smtp relay never failed in prod
        report(b, "a5", "t6", "smtp relay", False, "prod")
        report(b, "a6", "t7", "api gateway", True, "prod")
        assert status(b, rule) == "reviewing"
        # a7 reads "DOUBTED: smtp relay failed here lately", does something else, and cites the line it heeded
        report(b, "a7", "t8", "api gateway", True, "test", applied=[rule])
        assert status(b, rule) == "reviewing"
        [verdict] = [json.loads(r["payload_json"]) for r in b.sql(
            "SELECT payload_json FROM decisions FINAL WHERE kind = 'unit_attributed' AND has(subject_ids, {f:String})",
            {"f": rule})]
        assert verdict["verdict"] == "none"


def test_a_reopened_brain_counts_and_breaks_routines_as_the_running_one_did(tmp_path):
    """The learner's state is a fold of the log: a routine's count started before a restart goes on after it,
    and the routine a reopened brain did not teach itself is still broken by its option's first failure.
    The learner's snapshot (a cache of that fold) is removed at each restart: the log alone rebuilds it."""
    snapshot = tmp_path / "b" / "cache" / "learner.snapshot"
    with Brain.open(tmp_path / "b", embedder="none") as b:
        report(b, "a1", "t1", "smtp relay", True)
    snapshot.unlink()
    with Brain.open(tmp_path / "b", embedder="none") as b:
        report(b, "a2", "t2", "smtp relay", True)  # the second agent: counted with the first across the restart
        [fid] = units(b)
    snapshot.unlink()
    with Brain.open(tmp_path / "b", embedder="none") as b:
        assert status(b, fid) == "candidate"
        report(b, "a3", "t3", "smtp relay", False)
        assert status(b, fid) == "reviewing"
