"""A/B windows at decision time: which arm a decision gets (the hindsight jobs open and
settle the windows, ``jobs.windows``; recall only needs the split and the decision kinds).

The arm is a hash of the window and the task, so a task always sees the same arm and the
split needs no state; about half the tasks get each arm.
"""

from __future__ import annotations

import hashlib

from hindbrain.schemas.decision_kinds import DecisionKind

# decision kinds (subjects: window, A, B)
WINDOW_OPENED, WINDOW_SETTLED = DecisionKind.AB_WINDOW_OPENED, DecisionKind.AB_WINDOW_SETTLED


def arm_of(window_id: str, task_id: str) -> str:
    """The arm a task's decisions get in a window: stable, about half each."""
    return "A" if hashlib.blake2b(f"{window_id}|{task_id}".encode(), digest_size=8).digest()[0] < 128 else "B"
