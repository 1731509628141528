"""Fleet memory (issue 8, seed 001 §6.2): within a tenant each agent's episodic memory and
the lessons of its own experience stay private; a unit enters the memory the agents share
only when several independent agents stand behind it at a higher confidence, recorded as a
``unit_shared`` decision. One agent's bad experience cannot reach the others."""

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


def test_a_lesson_is_private_until_a_second_agent_learns_it_then_every_agent_recalls_it(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        lesson_from(b, "a1", "t1")
        [accepted] = decisions(b, "unit_accepted")
        fid = accepted["subject_ids"][0]
        assert units(b, "a1") == [fid] and units(b, "a2") == [] and units(b, "a3") == []
        assert decisions(b, "unit_shared") == []
        lesson_from(b, "a2", "t2")  # a2 learns the same lesson on its own
        [shared] = decisions(b, "unit_shared")
        assert shared["subject_ids"] == [fid] and "2 independent agents (a1, a2)" in shared["reason"]
        assert json.loads(shared["payload_json"])["unit"]["shared"] is True
        assert units(b, "a3") == [fid]  # an agent that never met IAM gets it now
    with Brain.open(tmp_path / "b", embedder="none") as b:  # the index is rebuilt from the views
        assert units(b, "a3") == [fid]


def test_an_untested_lesson_stays_private_but_one_verified_by_outcomes_reaches_the_fleet_at_once(tmp_path):
    """Issue 17: waiting for a second agent to rediscover a lesson made every other agent repeat
    the mistake first. A lesson its agent applied successfully is shared at once, marked with
    its provenance and ranked below what the fleet verified; a lesson nobody applied stays private."""
    with Brain.open(tmp_path / "b", embedder="none") as b:
        lesson_from(b, "a1", "t1")
        fid = decisions(b, "unit_accepted")[0]["subject_ids"][0]
        assert units(b, "a2") == []  # untested: one agent's single experience does not spread
        pack = b.recall(tenant="acme", agent="a1", situation=IAM, task="v1")
        b.outcome(tenant="acme", agent="a1", task="v1", recall_id=pack.recall_id, applied=[fid], success=True)
        [shared] = decisions(b, "unit_shared")
        assert shared["subject_ids"] == [fid] and "verified by outcomes (1 successful application by a1)" in \
            shared["reason"]
        pack = b.recall(tenant="acme", agent="a2", situation=IAM, trigger="anomaly", layers=["experience"])
        [item] = pack.items
        assert item.id == fid and item.why["provenance"] == {"learned_by": "a1", "agents": 1, "verified": 1,
                                                             "penalty": 0.1}
        assert "learned by a1, verified 1×" in pack.render()
        assert item.why["penalties"] >= 0.1 * item.why["score"]  # ranked below what the fleet verified
    with Brain.open(tmp_path / "b", embedder="none") as b:  # provenance is rebuilt from the views
        [item] = [i for i in b.recall(tenant="acme", agent="a3", situation=IAM, layers=["experience"], k=5).items
                  if i.id == fid]
        assert item.why["provenance"]["learned_by"] == "a1"
        lesson_from(b, "a2", "t2")  # a second agent learns it too: now the fleet stands behind it
        assert len(decisions(b, "unit_shared")) == 2
        [item] = [i for i in b.recall(tenant="acme", agent="a3", situation=IAM, layers=["experience"], k=5).items
                  if i.id == fid]
        assert "provenance" not in item.why


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
                         seed=True, confidence=0.9)  # a seed is the operator's, never an agent's (issue 27)
        private = b.learn(tenant="acme", agent="a1", condition="the printer jams", action="open tray two")
        pref = b.recall(tenant="acme", agent="a2", query="write the weekly answers for alice", user="alice")
        assert preference["subject_ids"][0] in {i.id for i in pref.items}  # the user's word, not a1's experience
        other = {i.id for i in b.recall(tenant="acme", agent="a2", query="deploys Friday VPN drops printer jams").items}
        assert {agentless, seeded} <= other and private not in other
