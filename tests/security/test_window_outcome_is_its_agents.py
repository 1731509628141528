"""Round thirty-three (docs/security.md, "A recall's outcome is its agent's"): an A/B window counts a recall's first
outcome that may speak for the agent the recall was made for (``lifecycle.speaks_for``, the learner's credit rule).
On the base the window took each recall's first outcome whoever sent it: mallory's key, seeing the honest agents'
recall ids as they were served (a live trace), reported on each before them — A always working, B never — so every
arm held mallory's reports alone, none counted, and the honest fleet's evidence for B was never read."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1] / "service"))
sys.path.append(str(Path(__file__).resolve().parents[1] / "jobs"))
from hindsight_helpers import hindsight_at, tasks  # noqa: E402
from http_helpers import call, serving  # noqa: E402

from hindbrain.jobs.ab import WindowRule  # noqa: E402
from hindbrain.schemas.records import now_us  # noqa: E402

RULE = WindowRule(min_per_arm=10)  # a small window: its verdict is clear at 10 outcomes an arm


def _open_window(b) -> list[str]:
    b.perceive_many(tasks("ack", 40, 36, "fault", ["acknowledge the problem", "give the fix"], "angry", seed=1)
                    + tasks("esc", 40, 35, "fault", ["escalate to tier 2"], "angry", seed=2))
    [opened] = [d for d in hindsight_at(b, now_us(), RULE).decisions if d["kind"] == "ab_window_opened"]
    return opened["subject_ids"]


def _recalled(base: str, key: str, task: str, a: str, c: str) -> tuple[str, str]:
    """(recall id, arm) of a recall served to ``key``'s agent."""
    status, pack, _ = call(base, "POST", "/v1/recall", {"task": task, "query": "an angry customer reports a fault",
                                                        "scene": "fault"}, key)
    assert status == 200, pack
    [given] = [i for i in pack["briefing"] if i["id"] in (a, c)]
    return pack["recall_id"], given["why"]["ab_window"]["arm"]


def _report(base: str, key: str, task: str, recall_id: str, success: bool) -> None:
    status, body, _ = call(base, "POST", "/v1/outcome", {"task": task, "recall_id": recall_id, "success": success},
                           key)
    assert status == 200, body


def test_a_report_on_another_agent_s_recall_does_not_decide_its_window_evidence(tmp_path):
    with serving(tmp_path / "served") as (base, b, keys):
        window, a, c = _open_window(b)
        honest = [keys.create("acme", name, "agent", agent=name) for name in ("bot-1", "bot-2")]
        mallory = keys.create("acme", "mallory", "agent", agent="mallory")
        for n in range(30):
            task = f"live-{n}"
            recall_id, arm = _recalled(base, honest[n % 2], task, a, c)
            _report(base, mallory, f"forged-{n}", recall_id, arm == "A")  # first: A works, B never does
            _report(base, honest[n % 2], task, recall_id, arm == "B")  # the truth: B works, A never does
        [settled] = [d for d in hindsight_at(b, now_us(), RULE).decisions if d["kind"] == "ab_window_settled"]
        assert settled["subject_ids"][0] == window
        assert settled["reason"].startswith("B wins"), settled["reason"]  # the base: no window settled
        assert "outcomes of mallory on recalls made for other agents not counted" in settled["reason"]
