"""Shared by the hindsight tests: task builders and a run at a chosen time."""

import random

from hindbrain.jobs import run_hindsight
from hindbrain.jobs.ab import DEFAULT_RULE

DAY_US = 86_400 * 1_000_000


def tasks(name, n, successes, scene, actions, emotion=None, signal="explicit", seed=0):
    """``n`` tasks of one scene: an optional emotion-labelled user message, the agent's
    ``actions``, an outcome; ``successes`` of them succeed."""
    rng = random.Random(seed)
    wins = set(rng.sample(range(n), successes))
    out = []
    for i in range(n):
        task = {"tenant": "acme", "task": f"{name}-{i}", "scope": {"task_type": scene}}
        if emotion:
            out.append({**task, "kind": "message", "speaker": "user", "text": f"this is the {i}th time it broke",
                        "emotion": emotion, "signal": signal})
        out += [{**task, "kind": "action", "action": a} for a in actions]
        out.append({**task, "kind": "outcome", "text": "closed", "success": i in wins})
    return out


def hindsight_at(b, when_us, rule=DEFAULT_RULE):
    """A forced hindsight run as if it were ``when_us`` (the jobs' clock is an argument)."""
    b.runner.flush()
    report = run_hindsight(b.warehouse, b.runner.submit, when_us, force=True, rule=rule)
    b.runner.flush()
    return report
