"""``recovery/1`` across tasks (design.md §issue-29): with failure reports shared, the agent that finds what
works usually never failed itself; the first success of an option where other options failed before, in any
task and scope-alike, teaches the lesson a failure-then-success in one task would."""

import json

from hindbrain import Brain


def report(b, agent, task, action, ok, env="prod"):
    b.recall(tenant="acme", agent=agent, task=task, query="send the newsletter",
             situation={"system": "Mailer", "action": "send the newsletter"}, trigger="task_start",
             scope={"env": env})
    b.perceive(tenant="acme", agent=agent, task=task, kind="action" if ok else "anomaly", system="Mailer",
               action=action, success=ok, scope={"env": env},
               text=f"Mailer: {action} {'worked' if ok else 'failed'}")


def accepted(b):
    rows = b.sql("SELECT subject_ids, payload_json FROM decisions FINAL WHERE kind = 'unit_accepted' ORDER BY _offset")
    return [json.loads(r["payload_json"])["unit"] for r in rows]


def test_the_first_success_after_others_failed_teaches_the_lesson_once(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        report(b, "a1", "t1", "batch queue", False)
        report(b, "a1", "t1", "api gateway", False)  # a1's task ends without finding what works
        assert accepted(b) == []
        report(b, "a2", "t2", "smtp relay", True)  # a2 never failed: the fleet's trajectory teaches
        [unit] = accepted(b)
        assert unit["condition"] == "send the newsletter in Mailer fails" and unit["action"] == "smtp relay"
        report(b, "a3", "t3", "smtp relay", True)  # the option worked here before: nothing new
        report(b, "a4", "t4", "smtp relay", True, env="test")  # no failure in test: nothing to learn from
        assert len(accepted(b)) == 1
        [fragment] = b.sql("SELECT reason FROM fragments FINAL")
        assert fragment["reason"] == "the other options fail here (not: batch queue; not: api gateway)"
