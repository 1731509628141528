"""Round twenty-five (docs/security.md): a key grants no more than it holds.

An admin key bound to one agent may not seed (an operator's grant is never an agent's), yet it could mint an
unbound admin key (``POST /v1/keys``) and seed with that, or revoke the operator's own keys."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "service"))
from http_helpers import call, serving  # noqa: E402


def test_a_bound_key_makes_and_revokes_keys_of_its_own_agent_only(tmp_path):
    with serving(tmp_path / "served") as (base, _brain, keys):
        operator = keys.create("shop", "ops", "admin")
        bound = keys.create("shop", "ops-bot", "admin", agent="bot-1")
        status, body, _ = call(base, "POST", "/v1/keys", {"role": "admin"}, bound)
        assert status == 201 and body["agent"] == "bot-1"  # naming no agent: its own
        status, body, _ = call(base, "POST", "/v1/learn", {"condition": "c", "action": "a", "seed": True}, body["key"])
        assert status == 403  # so it cannot seed either
        status, body, _ = call(base, "POST", "/v1/keys", {"role": "agent", "agent": "bot-2"}, bound)
        assert status == 403 and "bot-1" in body["detail"]
        status, body, _ = call(base, "DELETE", f"/v1/keys/{operator.split('_')[1]}", None, bound)
        assert status == 403 and "bot-1" in body["detail"]
        assert keys.resolve(operator) is not None  # still live
        status, body, _ = call(base, "POST", "/v1/keys", {"role": "agent", "agent": "bot-2"}, operator)
        assert status == 201  # an unbound admin key binds as it likes
        status, _, _ = call(base, "DELETE", f"/v1/keys/{body['key_id']}", None, operator)
        assert status == 200


def test_a_bound_admin_key_makes_no_human_decision(tmp_path):
    with serving(tmp_path / "served") as (base, _brain, keys):
        operator = keys.create("shop", "ops", "admin")
        bound = keys.create("shop", "ops-bot", "admin", agent="bot-1")
        status, body, _ = call(base, "POST", "/v1/learn", {"condition": "deploys on Friday", "action": "wait"},
                               operator)
        fragment = body["fragment_id"]
        for path, payload in [("/v1/invalidate", {"fragment_id": fragment, "reason": "the deploy freeze ended"}),
                              ("/v1/approve", {"fragment_id": fragment, "accept": True, "approver": "bot-1"})]:
            status, body, _ = call(base, "POST", path, payload, bound)
            assert status == 403 and "human decision" in body["detail"] and "bot-1" in body["detail"], (path, body)
        status, body, _ = call(base, "POST", "/v1/invalidate", {"fragment_id": fragment,
                                                                "reason": "the deploy freeze ended"}, operator)
        assert status == 200 and body["decision_id"]
