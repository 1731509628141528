"""Guards of what round eleven's designs for ``perceive_many`` must not change (docs/speed.md, "The
learner's share and the log's fsync, round eleven"): it returns once its records are durable (a crash
right after loses none, and the learner, catching up from its committed offset, holds what a learner
that never crashed holds), and a batch the disk refuses reaches neither the log, the recall index nor
the learner.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from hindbrain import Brain, LogWriteError
from hindbrain.learning import runtime
from hindbrain.learning.records import is_own
from hindbrain.schemas.codec import registry

sys.path.append(str(Path(__file__).resolve().parents[1] / "faults"))
from fault_helpers import fill, tmpfs  # noqa: E402

SYSTEMS = ("IAM", "billing portal", "VPN gateway")
ACTIONS = ("submit the change", "issue a refund", "renew the certificate", "export the report")


def trajectories(count: int, seed: int = 0) -> list[dict]:
    """Events the learner decides on: per task, failures then a success with another action (a
    recovery), successes of one action by many agents (a routine), near-repeats of an agent's
    event (merges), preferences; caller's ids and times, so two brains log the same records."""
    import random

    rng, out = random.Random(seed), []
    for n in range(count):
        system, task, agent = rng.choice(SYSTEMS), f"t{n // 6}", f"agent-{rng.randrange(5)}"
        step = n % 6
        if step < 3:
            fields = {"kind": "anomaly", "action": ACTIONS[step % 2], "success": False,
                      "text": f"{ACTIONS[step % 2]} in {system} did nothing"}
        elif step == 3:
            fields = {"kind": "action", "action": ACTIONS[2 + n % 2], "success": True,
                      "text": f"{ACTIONS[2 + n % 2]} in {system} worked"}
        elif step == 4:
            fields = {"kind": "observation", "text": f"{system} is slow today again ({n % 3})"}
        else:
            fields = {"kind": "message", "speaker": "user", "text": "please always answer in bullet points"}
        out.append({"tenant": "acme", "agent": agent, "task": task, "system": system, "event_id": f"ev-{seed}-{n}",
                    "ts": 1_700_000_000 + n, **fields})
    return out


def learned(home: Path) -> list[tuple[str, dict]]:
    """The learner's records in the log, in order (record type, record)."""
    with Brain.open(home) as brain:
        entries = brain.log.read_all(0, 1_000_000)
    out = [registry.decode(e.value) for e in entries]
    return [(rt, r) for rt, r in out if is_own(r) or rt == "dead_letter"]


def test_returned_batches_survive_a_crash_and_the_learner_catches_up(tmp_path):
    """A child perceives batches (each acknowledged id written down once ``perceive_many`` returned)
    and dies with ``os._exit``: no close, no flush, the learner's last batches past its offset.
    Reopened: every acknowledged record is in the log, and the learner, catching up from its
    committed offset, holds what a learner that never crashed holds."""
    home, acked = tmp_path / "h", tmp_path / "acked.json"
    events = trajectories(3_000, seed=3)  # past 2,000 records: the learner committed its offset once
    child = f"""
import json, os, sys
from hindbrain import Brain
events = json.loads(sys.stdin.read())
brain = Brain.open({str(home)!r}, embedder="none")
done = []
for start in range(0, len(events), 500):
    done += brain.perceive_many(events[start:start + 500])
    open({str(acked)!r}, "w").write(json.dumps(done))
os._exit(0)
"""
    subprocess.run([sys.executable, "-c", child], input=json.dumps(events), text=True, check=True, timeout=300,
                   env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    ids = set(json.loads(acked.read_text()))
    assert len(ids) == len(events)
    with sqlite3.connect(home / "log.sqlite") as db:  # as the crash left it: the learner had committed
        learner_at = db.execute("SELECT next_offset FROM consumer_offsets WHERE consumer = ?",
                                (runtime.CONSUMER,)).fetchone()[0]
    assert learner_at > 0
    with Brain.open(home, embedder="none") as brain:
        logged = {registry.decode(e.value)[1]["envelope"]["record_id"] for e in brain.log.read_all(0, 1_000_000)}
        assert ids <= logged
        crashed = dict(brain.learning.learner.tenants["acme"].units)
    with Brain.open(tmp_path / "never", embedder="none") as brain:
        for start in range(0, len(events), 500):
            brain.perceive_many(events[start:start + 500])
        assert brain.learning.learner.tenants["acme"].units == crashed
    assert learned(home) == learned(tmp_path / "never")


def test_a_refused_commit_leaves_the_batch_unseen(tmp_path):
    """The disk is full when the batch's COMMIT writes it: ``LogWriteError``, and neither the log,
    the recall index nor the learner holds any of its records; once there is room the brain goes on."""
    with tmpfs(tmp_path / "disk", "24m") as disk, Brain.open(disk / "h", embedder="none") as brain:
        brain.perceive(tenant="acme", agent="a", text="before the disk filled")
        counts = brain.learning.learner.counts.copy()
        filler = fill(disk)
        batch = [{"tenant": "acme", "agent": "a", "text": f"refused {n} " + "z" * 2_000, "event_id": f"rf-{n}"}
                 for n in range(600)]
        with pytest.raises(LogWriteError):
            brain.perceive_many(batch)
        logged = {registry.decode(e.value)[1]["envelope"]["record_id"] for e in brain.log.read_all(0, 1_000_000)}
        assert not logged & {e["event_id"] for e in batch}
        assert brain.learning.learner.counts == counts
        assert not any(e["event_id"] in brain.index.tenants["acme"].by_id for e in batch)
        filler.unlink()
        brain.perceive_many(batch)
        assert brain.learning.learner.counts["perceived_event"] == counts["perceived_event"] + len(batch)
