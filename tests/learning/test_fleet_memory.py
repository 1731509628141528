"""Fleet memory (design.md §issue-8, design.md §seed-001-6.2): within a tenant each agent's episodic memory and its
untested lessons stay private; a unit enters the memory the agents share once it was tested — a
fix that worked in its agent's own task, or a successful application — marked with its provenance
until several independent agents stand behind it at a higher confidence, recorded as
``unit_shared`` decisions."""

import json

from hindbrain import Brain

IAM = {"system": "IAM", "identity": "normal account", "action": "submit change", "expected": "success message",
       "actual": "no response"}


def lesson_from(b, agent, task):
    """``agent`` fails in IAM as the normal account, then succeeds as admin: the learner's lesson."""
    b.perceive(tenant="acme", agent=agent, task=task, kind="anomaly", text="clicked submit, nothing happened", **IAM)
    b.perceive(tenant="acme", agent=agent, task=task, kind="outcome", text="submit succeeded as admin", system="IAM",
               identity="admin account", action="submit change", success=True)


def units(b, agent):
    return [i.id for i in b.recall(tenant="acme", agent=agent, situation=IAM, trigger="anomaly",
                                   layers=["experience"]).items]


def decisions(b, kind):
    return b.sql("SELECT * FROM decisions FINAL WHERE kind = {k:String} ORDER BY _offset", {"k": kind})


def test_a_fix_that_worked_reaches_the_fleet_marked_then_a_second_agent_makes_it_the_fleets(tmp_path):
    """design.md §issue-29 round two: a failure then, in the same task, a success is the lesson tested once. It
    reaches the other agents at once as a candidate with its provenance (before, it stayed private
    until its agent applied it again, and the others repeated the mistake meanwhile)."""
    with Brain.open(tmp_path / "b", embedder="none") as b:
        lesson_from(b, "a1", "t1")
        [accepted] = decisions(b, "unit_accepted")
        fid = accepted["subject_ids"][0]
        [shared] = decisions(b, "unit_shared")
        assert shared["subject_ids"] == [fid] and "a1's own failure then success in task t1" in shared["reason"]
        assert json.loads(shared["payload_json"])["unit"]["status"] == "candidate"
        assert units(b, "a1") == [fid] and units(b, "a3") == [fid]
        pack = b.recall(tenant="acme", agent="a3", situation=IAM, trigger="anomaly", layers=["experience"])
        assert pack.items[0].why["provenance"] == {"learned_by": "a1", "agents": 1, "verified": 0, "penalty": 0.1}
        assert "learned by a1, verified 0×" in pack.render(detail=True)
        lesson_from(b, "a2", "t2")  # a2 learns the same lesson on its own: the fleet stands behind it
        fleet = decisions(b, "unit_shared")[1]
        assert fleet["subject_ids"] == [fid] and "2 independent agents (a1, a2)" in fleet["reason"]
        assert "provenance" not in b.recall(tenant="acme", agent="a3", situation=IAM, trigger="anomaly",
                                            layers=["experience"]).items[0].why
    with Brain.open(tmp_path / "b", embedder="none") as b:  # the index is rebuilt from the views
        assert units(b, "a3") == [fid]


def test_an_untested_lesson_stays_private_but_one_verified_by_outcomes_reaches_the_fleet_at_once(tmp_path):
    """design.md §issue-17: a lesson an agent proposed (``learn``, not a fix it saw work) stays private until its
    agent applies it successfully; then it is shared at once, marked with its provenance and ranked
    below what the fleet verified."""
    with Brain.open(tmp_path / "b", embedder="none") as b:
        fid = b.learn(tenant="acme", agent="a1", condition="submit change in IAM gives no response",
                      action="switch to the admin account, then submit change")
        assert units(b, "a2") == []  # untested: one agent's single proposal does not spread
        pack = b.recall(tenant="acme", agent="a1", situation=IAM, task="v1")
        assert fid in [i.id for i in pack.items]
        b.outcome(tenant="acme", agent="a1", task="v1", recall_id=pack.recall_id, applied=[fid], success=True)
        [shared] = decisions(b, "unit_shared")
        assert shared["subject_ids"] == [fid] and "verified by outcomes (1 successful application by a1)" in \
            shared["reason"]
        pack = b.recall(tenant="acme", agent="a2", situation=IAM, trigger="anomaly", layers=["experience"])
        [item] = pack.items
        assert item.id == fid and item.why["provenance"] == {"learned_by": "a1", "agents": 1, "verified": 1,
                                                             "penalty": 0.1}
        assert "learned by a1, verified 1×" in pack.render(detail=True)
        assert item.why["penalties"] >= 0.1 * item.why["score"]  # ranked below what the fleet verified
    with Brain.open(tmp_path / "b", embedder="none") as b:  # provenance is rebuilt from the views
        [item] = [i for i in b.recall(tenant="acme", agent="a3", situation=IAM, layers=["experience"], k=5).items
                  if i.id == fid]
        assert item.why["provenance"]["learned_by"] == "a1"


def test_episodic_memory_is_private_per_agent_and_the_tenant_view_sees_all(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        mine = b.perceive(tenant="acme", agent="a1", text="the staging certificate expires on Friday")
        theirs = b.perceive(tenant="acme", agent="a2", text="the staging certificate was renewed by hand")
        common = b.perceive(tenant="acme", text="staging certificates are managed by the platform team")

        def seen(agent):
            return {i.id for i in b.recall(tenant="acme", agent=agent, query="staging certificate").items}

        assert seen("a1") == {mine, common} and seen("a2") == {theirs, common}
        assert seen("a9") == {common}
        assert seen(None) == {mine, theirs, common}  # no agent named: the tenant's own view


def test_explicit_word_seeds_and_agentless_units_are_shared_from_the_start(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        b.perceive(tenant="acme", agent="a1", kind="message", speaker="user", signal="explicit",
                   text="I prefer answers in Chinese, please", scope={"user": "alice"})
        [preference] = decisions(b, "unit_accepted")
        agentless = b.learn(tenant="acme", condition="deploys on Friday", action="ask the release manager first")
        seeded = b.learn(tenant="acme", condition="the VPN drops", action="reconnect with the backup",
                         seed=True, confidence=0.9)  # a seed is the operator's, never an agent's (design.md §issue-27)
        private = b.learn(tenant="acme", agent="a1", condition="the printer jams", action="open tray two")
        pref = b.recall(tenant="acme", agent="a2", query="write the weekly answers for alice", user="alice")
        assert preference["subject_ids"][0] in {i.id for i in pref.items}  # the user's word, not a1's experience
        other = {i.id for i in b.recall(tenant="acme", agent="a2", query="deploys Friday VPN drops printer jams").items}
        assert {agentless, seeded} <= other and private not in other


def test_a_report_on_a_system_is_the_fleets_and_says_who_did_it(tmp_path):
    """design.md §issue-29: "Mailer: smtp relay failed" is a fact about the system every agent meets, not a1's
    private experience: a2 sees it before any lesson is learned (before, a2 repeated the failure). What a1
    noted in words stays a1's."""
    with Brain.open(tmp_path / "b", embedder="none") as b:
        failed = b.perceive(tenant="acme", agent="a1", task="t1", kind="anomaly", system="Mailer",
                            action="smtp relay", success=False, text="Mailer: smtp relay failed, connection refused")
        noted = b.perceive(tenant="acme", agent="a1", task="t1", kind="observation", system="Mailer",
                           text="Mailer: the relay looked slow today")
        pack = b.recall(tenant="acme", agent="a2", task="t2", query="send the newsletter with Mailer",
                        situation={"system": "Mailer", "action": "send the newsletter"}, trigger="task_start")
        seen = {i.id for i in pack.items}
        assert failed in seen and noted not in seen
        assert "anomaly seen by a1" in pack.render()
