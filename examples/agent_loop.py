"""An agent's loop on the Python SDK: recall before acting, act on what was injected,
perceive what happened, report the outcome naming what was applied. Run it twice: the
second run finds the lesson the first one taught (nobody calls ``learn``).

    python examples/agent_loop.py [BRAIN_DIR]
"""

from __future__ import annotations

import sys

from hindbrain import Brain

SITUATION = {"system": "IAM", "identity": "normal account", "action": "submit the change as the normal account",
             "expected": "success message", "actual": "no response after clicking submit"}


def world(action: str) -> bool:
    """The hidden rule: permission changes need the admin account."""
    return "admin account" in action


def run_task(brain: Brain, agent: str, task: str, tenant: str = "acme") -> bool:
    """One task. ``brain`` may as well be a ``hindbrain.Client``: the same methods (client_loop.py)."""
    who = dict(tenant=tenant, agent=agent, task=task)
    pack = brain.recall(**who, query="change a user's permissions in IAM", trigger="task_start",
                        situation={"system": "IAM", "action": SITUATION["action"]}, budget_tokens=300)
    print(pack.render() or "(nothing recalled)")
    lesson = next((i for i in pack.items if i.kind == "fragment" and "admin account" in i.text), None)
    action = lesson.action if lesson else SITUATION["action"]
    if world(action):
        brain.perceive(**who, kind="action", action=action, system="IAM", success=True, text="permissions changed")
        brain.outcome(**who, recall_id=pack.recall_id, applied=[lesson.id] if lesson else [], success=True, steps=1)
        return True
    # The naive attempt failed: perceive the anomaly, then the fix that worked (here: a human's).
    brain.perceive(**who, kind="anomaly", text="clicked submit, nothing happened", **SITUATION)
    brain.perceive(**who, kind="action", action="switch to the admin account, then submit once", system="IAM",
                   identity="admin account", success=True, text="permissions changed as admin")
    brain.outcome(**who, recall_id=pack.recall_id, applied=[], success=False, steps=3)
    return False


if __name__ == "__main__":
    home = sys.argv[1] if len(sys.argv) > 1 else ".hindbrain-example"
    with Brain.open(home) as brain:
        first = run_task(brain, "agent-1", "t-1")
        second = run_task(brain, "agent-1", "t-2")
    print(f"first task {'succeeded' if first else 'failed (and taught a lesson)'}; "
          f"second task {'succeeded with the lesson' if second else 'failed'}")
