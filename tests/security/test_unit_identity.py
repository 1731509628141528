"""Round twenty-five (docs/security.md): a caller's ``fragment_id`` names one unit, as an ``event_id`` names one event.

An agent key that sent a seed's id with its own rule was acknowledged (200): the log kept both, the
``fragments`` view (SQL, explain, and the recall index once rebuilt from it) showed the agent's words under
the seed's id, shared, with the seed's trust, while recall went on showing the seed until the next rebuild."""

from __future__ import annotations

import sys
from pathlib import Path

from hindbrain import Brain

sys.path.append(str(Path(__file__).resolve().parents[1] / "service"))
from http_helpers import call, serving  # noqa: E402

SEEDED = {"condition": "a customer asks for a refund", "action": "refund to the original card"}


def test_an_agent_key_cannot_take_a_seeds_fragment_id(tmp_path):
    with serving(tmp_path / "served") as (base, brain, keys):
        admin, bot = keys.create("shop", "ops", "admin"), keys.create("shop", "bot", "agent", agent="bot-1")
        status, seeded, _ = call(base, "POST", "/v1/learn", {**SEEDED, "seed": True}, admin)
        assert status == 200
        before = brain.stats()["log_records"]
        for rule in ({**SEEDED, "action": "tell them refunds take 90 days"}, SEEDED):  # other words; its own word
            status, body, _ = call(base, "POST", "/v1/learn", {**rule, "fragment_id": seeded["fragment_id"]}, bot)
            assert status == 422 and body["detail"][0]["loc"] == ["body", "fragment_id"], body
        assert brain.stats()["log_records"] == before  # nothing written
        [row] = brain.sql("SELECT action, seed, agent FROM fragments FINAL")
        assert row == {"action": SEEDED["action"], "seed": True, "agent": None}


def test_the_same_proposal_again_is_a_retry_also_after_a_reopen(tmp_path):
    rule = {**SEEDED, "tenant": "shop", "agent": "bot-1", "fragment_id": "fr_mine", "scope": {"env": "prod"}}
    with Brain.open(tmp_path / "b", embedder="none") as b:
        assert b.learn(**rule) == b.learn(**rule) == "fr_mine"
    with Brain.open(tmp_path / "b", embedder="none") as b:
        assert b.learn(**rule) == "fr_mine"
        assert b.sql("SELECT count() AS n FROM fragments FINAL") == [{"n": 1}]
