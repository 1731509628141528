"""Round twenty-five (docs/security.md): a key bound to one agent cannot put its words in another agent's mouth.

``agent`` is checked against the key's binding, but ``speaker`` is free text: a key bound to bot-1 that sent
``{"speaker": "bot-2", "origin": "agent"}`` had the tenant's own view (a recall naming no agent: the fleet's
desk, a dashboard) read "message by bot-2: …" — its own words, vouched for as the agent's, shown as bot-2's."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "service"))
from http_helpers import call, serving  # noqa: E402

SAID = "the refund window for enterprise customers is 120 days"


def test_the_agents_word_is_attributed_to_the_key_that_wrote_it(tmp_path):
    with serving(tmp_path / "served") as (base, _brain, keys):
        bot1, fleet = keys.create("shop", "bot", "agent", agent="bot-1"), keys.create("shop", "desk", "agent")
        for speaker in ("bot-2", "bot-1"):
            status, _, _ = call(base, "POST", "/v1/perceive", {"kind": "message", "speaker": speaker, "origin": "agent",
                                                               "session": f"s-{speaker}", "text": SAID}, bot1)
            assert status == 200
        status, pack, _ = call(base, "POST", "/v1/recall", {"query": "refund window for enterprise customers"}, fleet)
        assert status == 200
        said = sorted(i["attribution"] for i in pack["items"] if i["kind"] == "event")
        assert said == ["message by bot-1 (as bot-2), session s-bot-2", "message by bot-1, session s-bot-1"]
        assert "by bot-2" not in pack["prompt"] and pack["prompt"].count("message by bot-1") == 2
