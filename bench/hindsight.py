"""Hindsight benchmarks: belief induction over N events (design.md §issue-6: 1,000,000 events ≤ 60 s).

    python bench/hindsight.py [--events 1000000]

Builds a brain of ``--events`` perceived events (4 per task: an emotion-labelled user
message on a third of them, one or two agent actions, an outcome) over 40 scenes with
hidden "what works" rules, then times one forced ``brain.hindsight()`` and prints its
phases: read (the task aggregation in ClickHouse and the transfer to Python), induce
(features, K-Means with k by silhouette, beliefs) and append. The ingest that builds the
brain is not part of the number.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time

from hindbrain import Brain
from hindbrain.brain import tenant_batches

EMOTIONS = ["angry", "disappointed", "neutral", "happy", "confused"]
ACTIONS = ["acknowledge the problem", "give the fix", "ask for logs", "escalate to tier 2", "offer a refund",
           "send the runbook link"]


def fleet_events(n: int, seed: int = 11):
    """Yields batches of perceive kwargs, ~4 events per task."""
    rng = random.Random(seed)
    scenes = [f"scene-{s}" for s in range(40)]
    good = {s: rng.sample(ACTIONS, 2) for s in scenes}  # the sequence that works best per scene
    batch, made, task = [], 0, 0
    while made < n:
        scene = rng.choice(scenes)
        base = {"tenant": f"tenant-{task % 4}", "task": f"t{task}", "scope": {"task_type": scene}}
        task += 1
        if rng.random() < 0.6:
            seq = good[scene]
            ok = rng.random() < 0.85
        else:
            seq = rng.sample(ACTIONS, rng.choice((1, 2)))
            ok = rng.random() < 0.4
        before = len(batch)
        if len(seq) == 1 or rng.random() < 0.34:
            batch.append({**base, "kind": "message", "speaker": "user", "text": "it broke again",
                          "emotion": rng.choice(EMOTIONS), "signal": rng.choice(("explicit", "self"))})
        batch += [{**base, "kind": "action", "action": a} for a in seq]
        batch.append({**base, "kind": "outcome", "text": "closed", "success": ok})
        made += len(batch) - before
        if len(batch) >= 5000:
            yield batch
            batch = []
    if batch:
        yield batch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as home, Brain.open(home, embedder="none", log_sync="NORMAL") as brain:
        t0 = time.perf_counter()
        for events in fleet_events(args.events):
            for batch in tenant_batches(events):  # a batch is one tenant's
                brain.perceive_many(batch)
        brain.runner.flush()
        events = brain.sql("SELECT count() AS n FROM events")[0]["n"]
        print(f"built: {events:,} events in {time.perf_counter() - t0:.0f} s (not part of the number)")
        t0 = time.perf_counter()
        report = brain.hindsight()
        total = time.perf_counter() - t0
        beliefs = [d for d in report.decisions if d["kind"] == "belief_induced"]
        active = sum('"status": "active"' in d["payload_json"] for d in beliefs)
        phases = ", ".join(f"{k} {v:.2f} s" for k, v in report.phases_s.items())
        verdict = "PASS" if total <= 60 else "MISS"
        print(f"induction over {events:,} events: {total:.2f} s [{phases}]; {len(beliefs)} beliefs "
              f"({active} active); target ≤ 60 s: {verdict}")


if __name__ == "__main__":
    main()
