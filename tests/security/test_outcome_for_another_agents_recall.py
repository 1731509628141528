"""Round thirty-three (docs/security.md, "An adversary's eleventh sweep"): a recall proves what reached the context of
the agent it was made for, not of whoever names its id. On the base a key bound to mallory, given bot-1's recall ids
(a log, a trace, a shared prompt), reported failures on them: each was a *proven* failure of the operator's rule —
three made it invalid for every agent — and bot-1's own report on the same recall was refused as answered already."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "service"))
from http_helpers import call, serving  # noqa: E402

FRAUD = dict(condition="a refund is asked for an order over 500 dollars", action="run the fraud check before refunding")
ASK = {"query": "a customer asks a refund for an order over 500 dollars"}


def _recall(base: str, key: str, rule: str) -> str:
    status, pack, _ = call(base, "POST", "/v1/recall", ASK, key)
    assert status == 200 and rule in [i["id"] for i in pack["items"]], pack
    return pack["recall_id"]


def _outcome(base: str, key: str, recall_id: str, rule: str, success: bool, task: str) -> None:
    status, body, _ = call(base, "POST", "/v1/outcome", {"recall_id": recall_id, "applied": [rule], "success": success,
                                                         "task": task}, key)
    assert status == 200, body


def test_another_agent_s_outcomes_on_bot_1_s_recalls_prove_nothing_and_spend_nothing(tmp_path):
    with serving(tmp_path / "served") as (base, b, keys):
        bot1 = keys.create("acme", "bot-1", "agent", agent="bot-1")
        mallory = keys.create("acme", "mallory", "agent", agent="mallory")
        rule = b.learn(tenant="acme", seed=True, **FRAUD)
        b.runner.flush()
        recalls = [_recall(base, bot1, rule) for _ in range(3)]
        for n, recall_id in enumerate(recalls):
            _outcome(base, mallory, recall_id, rule, False, f"forged-{n}")
        b.runner.flush()

        def state() -> dict:
            [row] = b.sql("SELECT status, successes, failures FROM unit_states FINAL WHERE fragment_id = {f:String}",
                          {"f": rule})
            return row

        assert state() == {"status": "reviewing", "successes": 0, "failures": 3}  # the base: invalid
        _outcome(base, bot1, recalls[0], rule, True, "real")  # bot-1's own report on its recall still counts
        b.runner.flush()
        assert state() == {"status": "verified", "successes": 1, "failures": 3}  # the base: refused, "answered"
        [verdict] = b.sql("SELECT payload_json FROM decisions WHERE has(subject_ids, {f:String}) "
                          "AND kind = 'unit_verified'", {"f": rule})
        assert '"verdict": "worked"' in verdict["payload_json"]  # a proven delivery: utility credited
