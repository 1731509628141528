"""Round thirty-two (docs/security.md, "The sender is the key"): what vouches for an outcome or a lesson sent
through the service is the API key that sent it, not the agent names in its body. A key bound to an agent speaks
for that agent; a key not bound to one may name any agent, so it is one sender whatever names it uses. On the base
one unbound key naming two agents weighed as two reporters in an A/B window and as two independent agents in fleet
verification."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "service"))
sys.path.append(str(Path(__file__).resolve().parents[1] / "jobs"))
from hindsight_helpers import DAY_US, hindsight_at, tasks  # noqa: E402
from http_helpers import call, serving  # noqa: E402

from hindbrain.jobs.ab import WindowRule  # noqa: E402
from hindbrain.schemas.records import now_us  # noqa: E402

RULE = WindowRule(min_per_arm=10)  # a small window: its verdict is clear at 10 outcomes an arm


def _open_window(b):
    b.perceive_many(tasks("ack", 40, 36, "fault", ["acknowledge the problem", "give the fix"], "angry", seed=1)
                    + tasks("esc", 40, 35, "fault", ["escalate to tier 2"], "angry", seed=2))
    [opened] = [d for d in hindsight_at(b, now_us(), RULE).decisions if d["kind"] == "ab_window_opened"]
    return opened["subject_ids"]


def _briefed(b, task, a, c):
    pack = b.recall(tenant="acme", task=task, query="an angry customer reports a fault", scene="fault")
    [given] = [i for i in pack.briefing if i.id in (a, c)]
    return pack.recall_id, given.why["ab_window"]["arm"]


def test_one_unbound_key_naming_two_agents_is_one_reporter_in_a_window(tmp_path):
    with serving(tmp_path / "served") as (base, b, keys):
        window, a, c = _open_window(b)
        b.perceive(tenant="acme", agent="helper-2", kind="observation", text="the status page shows all green")
        key = keys.create("acme", "integration", "agent")  # bound to no agent
        for n in range(30):  # failure on every A task, success on every B one, alternately "as" two agents
            task = f"forged-{n}"
            recall_id, arm = _briefed(b, task, a, c)
            status, body, _ = call(base, "POST", "/v1/outcome", {"agent": ("mallory", "trent")[n % 2], "task": task,
                                                                 "recall_id": recall_id, "success": arm == "B"}, key)
            assert status == 200, body
        key_id = key.split("_")[1]
        assert {r["producer"] for r in b.sql("SELECT DISTINCT producer FROM outcomes")} == {f"key/{key_id}"}
        assert not [d for d in hindsight_at(b, now_us(), RULE).decisions if d["kind"].startswith("ab_window")]
        [settled] = [d for d in hindsight_at(b, now_us() + 15 * DAY_US, RULE).decisions
                     if d["kind"] == "ab_window_settled"]
        assert settled["subject_ids"][0] == window
        assert settled["reason"].startswith("no winner (14 days passed): A 0/0, B 0/0"), settled["reason"]
        assert f"outcomes of key:{key_id} (naming mallory/trent), its only reporter" in settled["reason"]


def test_keys_bound_to_two_agents_are_two_reporters(tmp_path):
    """The honest fleet over the service: each agent's own bound key; its outcomes settle as they did."""
    with serving(tmp_path / "served") as (base, b, keys):
        window, a, c = _open_window(b)
        bound = [keys.create("acme", name, "agent", agent=name) for name in ("agent-0", "agent-1")]
        for n in range(60):  # B truly better: every B task succeeds, every A task fails
            task = f"live-{n}"
            recall_id, arm = _briefed(b, task, a, c)
            status, body, _ = call(base, "POST", "/v1/outcome", {"task": task, "recall_id": recall_id,
                                                                 "success": arm == "B"}, bound[n % 2])
            assert status == 200, body
        [settled] = [d for d in hindsight_at(b, now_us(), RULE).decisions if d["kind"] == "ab_window_settled"]
        assert settled["subject_ids"][0] == window and settled["reason"].startswith("B wins"), settled["reason"]


LESSON = {"condition": "submit change in IAM gives no response", "action": "switch to the admin account",
          "reason": "permission changes need admin", "evidence": "worked after switching", "task": "t1"}


def _fleet_shares(b) -> list[str]:
    return [r["reason"] for r in b.sql("SELECT reason FROM decisions FINAL WHERE kind = 'unit_shared'")
            if "independent agents" in r["reason"]]


def test_one_unbound_key_naming_two_agents_is_one_source_for_fleet_verification(tmp_path):
    with serving(tmp_path / "served") as (base, b, keys):
        key = keys.create("acme", "integration", "agent")
        for agent in ("a1", "a2", "a3"):  # the same lesson "rediscovered" three times, by one key
            status, body, _ = call(base, "POST", "/v1/learn", {**LESSON, "agent": agent}, key)
            assert status == 200, body
        b.runner.flush()
        assert _fleet_shares(b) == []
        units = b.sql("SELECT payload_json FROM decisions FINAL WHERE kind = 'unit_accepted'")
        assert len(units) == 1 and f'"agents": ["key:{key.split("_")[1]}"]' in units[0]["payload_json"]


def test_keys_bound_to_two_agents_are_two_sources_for_fleet_verification(tmp_path):
    with serving(tmp_path / "served") as (base, b, keys):
        for agent in ("a1", "a2", "a3"):
            status, body, _ = call(base, "POST", "/v1/learn", LESSON, keys.create("acme", agent, "agent", agent=agent))
            assert status == 200, body
        b.runner.flush()
        [shared] = _fleet_shares(b)
        assert "independent agents (a1, a2" in shared


def test_an_agent_beside_a_key_that_names_no_agent_is_not_the_tenant_s_fleet(tmp_path):
    """Round thirty-one's amendment counts a tenant's one agent whole. A tenant's own integration reporting with a
    key but naming no agent named no one, so an attacker's bound key beside it was "the fleet" and settled alone
    (on the base: "B wins"). The integration's key is a sender now: the attacker is one of two."""
    with serving(tmp_path / "served") as (base, b, keys):
        window, a, c = _open_window(b)
        integration, mallory = keys.create("acme", "integration", "agent"), keys.create("acme", "m", "agent",
                                                                                         agent="mallory")
        status, body, _ = call(base, "POST", "/v1/outcome", {"task": "ticket-1", "success": True}, integration)
        assert status == 200, body
        for n in range(30):
            task = f"forged-{n}"
            recall_id, arm = _briefed(b, task, a, c)
            status, body, _ = call(base, "POST", "/v1/outcome", {"task": task, "recall_id": recall_id,
                                                                 "success": arm == "B"}, mallory)
            assert status == 200, body
        assert not [d for d in hindsight_at(b, now_us(), RULE).decisions if d["kind"].startswith("ab_window")]
        [settled] = [d for d in hindsight_at(b, now_us() + 15 * DAY_US, RULE).decisions
                     if d["kind"] == "ab_window_settled"]
        assert settled["subject_ids"][0] == window and settled["reason"].startswith("no winner"), settled["reason"]
