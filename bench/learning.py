"""Extraction + write-gate throughput of the learner (design.md §issue-5: ≥ 20,000 events/s).

    python bench/learning.py [--events 100000] [--runs 3]

A synthetic fleet's structured events — observations, anomalies, recoveries (identity or
action changed), outcomes, feedback and small talk — go through ``Learner.process`` as
decoded records (what the embedded runner hands it), and through ``perceive_many`` on an
embedded Brain with and without the learner attached, in the same process. Prints medians.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from hindbrain import Brain
from hindbrain.brain import tenant_batches
from hindbrain.learning.learner import Learner
from hindbrain.schemas.records import envelope
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded

SYSTEMS = ["IAM", "CRM", "ERP", "SSO", "Billing", "Vault", "Jira", "HRIS"]
ACTIONS = ["submit change", "request approval", "rotate the token", "export report", "open ticket"]


def events(n: int, seed: int = 5) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        task, system = f"t{i // 4}", rng.choice(SYSTEMS)
        phase = i % 4
        base = {"tenant": f"tenant-{i % 3}", "agent": f"a{i % 17}", "task": task, "system": system,
                "session": f"s{i // 40}"}
        if phase == 0:
            out.append({**base, "kind": "observation", "text": f"opened {system} to {rng.choice(ACTIONS)} #{i}"})
        elif phase == 1:
            out.append({**base, "kind": "anomaly", "text": f"nothing happened #{i}", "identity": "normal account",
                        "action": rng.choice(ACTIONS), "expected": "success message", "actual": "no response"})
        elif phase == 2:
            ok = rng.random() < 0.5
            out.append({**base, "kind": "outcome", "text": f"done #{i}", "action": rng.choice(ACTIONS),
                        "identity": "admin account" if ok else "normal account", "success": True})
        else:
            out.append({**base, "kind": rng.choice(["message", "feedback"]), "text": rng.choice(
                ["thanks", f"the reply about {system} was too long #{i}", "ok", f"great work on {system} #{i}"]),
                "polarity": rng.choice([-1.0, 1.0, None])})
    return out


def as_decoded(fields: list[dict]) -> list[Decoded]:
    keys = ("kind", "text", "system", "identity", "action", "expected", "actual", "success", "polarity", "session")
    out = []
    for n, f in enumerate(fields):
        record = {k: f.get(k) for k in keys}
        record.update(envelope=envelope("perception", f["tenant"], agent=f["agent"], task=f["task"]), entities=[],
                      scope={}, signal=None, speaker=None, emotion=None)
        out.append(Decoded(Position("perceptions", 0, n), "perception", record))
    return out


def learner_rate(decoded: list[Decoded]) -> tuple[float, int]:
    learner = Learner()
    t0 = time.perf_counter()
    emitted = learner.process(decoded)
    return len(decoded) / (time.perf_counter() - t0), len(emitted)


def ingest_rate(fields: list[dict], learn: bool) -> float:
    with tempfile.TemporaryDirectory() as home, Brain.open(home, embedder="none") as brain:
        if not learn:
            brain.runner.listeners.remove(brain.learning.observe)
        t0 = time.perf_counter()
        for start in range(0, len(fields), 5000):
            for batch in tenant_batches(fields[start:start + 5000]):  # a batch is one tenant's
                brain.perceive_many(batch)
        brain.runner.flush()
        return len(fields) / (time.perf_counter() - t0)


def reopen_seconds(fields: list[dict]) -> tuple[float, float]:
    """Seconds to open a brain holding ``fields`` with the learner's snapshot, and without it."""
    with tempfile.TemporaryDirectory() as home:
        with Brain.open(home, embedder="none", log_sync="NORMAL") as brain:
            for start in range(0, len(fields), 5000):
                for batch in tenant_batches(fields[start:start + 5000]):  # a batch is one tenant's
                    brain.perceive_many(batch)
        snapshot = Path(home) / "cache" / "learner.snapshot"
        t0 = time.perf_counter()
        Brain.open(home, embedder="none").close()
        with_snapshot = time.perf_counter() - t0
        snapshot.unlink()
        t0 = time.perf_counter()
        Brain.open(home, embedder="none").close()
        return with_snapshot, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    fields = events(args.events)
    decoded = as_decoded(fields)
    rates = [learner_rate(decoded) for _ in range(args.runs)]
    print(f"learner (extraction + write gate + hygiene + drift guard), {args.events:,} events: "
          f"median {statistics.median(r for r, _ in rates):,.0f} events/s {[round(r) for r, _ in rates]}; "
          f"{rates[0][1]:,} records emitted; target ≥ 20,000")
    with_learner, without = [], []
    for _ in range(args.runs):
        without.append(ingest_rate(fields[:50_000], learn=False))
        with_learner.append(ingest_rate(fields[:50_000], learn=True))
    a, b = statistics.median(with_learner), statistics.median(without)
    print(f"perceive_many into the views, 50,000 events: with the learner {a:,.0f} ev/s, without {b:,.0f} ev/s "
          f"(ratio {a / b:.2f})")
    reopen = [reopen_seconds(fields) for _ in range(args.runs)]
    s, f = statistics.median(r[0] for r in reopen), statistics.median(r[1] for r in reopen)
    print(f"reopening a brain of {args.events:,} events (index load + learner restore): with the learner's snapshot "
          f"{s:.2f} s, folding the log {f:.2f} s (ratio {s / f:.2f})")


if __name__ == "__main__":
    main()
