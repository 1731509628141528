"""What a recall's log records cost on their way, as e3e8de2 wrote them (schema v1) and as now (v2).

    python bench/recall_record.py --home H [--recalls 200] [--explain]

``H`` is a copy of a home (``bench/served.py --home H --size 100000`` builds one; opening writes
to it). Runs ``--recalls`` first-time recalls through ``Brain.recall`` (``served.distinct_queries``:
api.py's mix, each naming its own case, agent-1, defaults otherwise) and keeps, for each, the
engine's result. From the same result it builds the recall's records both ways: ``v1``, every
pooled candidate with its ``why`` as JSON (the brief one of a cut candidate, the full one of a
returned item: e3e8de2's ``recall_records``, restated here), and ``v2``, today's
``recall_records`` (the gate's verdict and the numbers typed; a ``why`` only on ``explain``). Then
it times every step those records take after the engine, both shapes alternated recall by recall
in this process (so the engine's noise and the machine's load fall on both alike), on this
thread's CPU clock: building them, the Avro encoding the log holds, a replica's hand-over frame
(its JSON head and the values, the encoding aside) and the owner's ``unframe``, the append to a
scratch SQLite log (``synchronous=NORMAL``: the write, not the disk's fsync), a replay's
``registry.decode``, and the projection into rows (``project_batch``; the views' insert left out:
the rows are the same for both shapes). Prints each step's median per shape, their sum, the
records' bytes and the load average.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import struct
import tempfile
import time
from pathlib import Path

import orjson

HERE = Path(__file__).parent
STEPS = ("build", "encode", "frame", "unframe", "sqlite_append", "decode", "project")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorded_in_v1(q, result) -> tuple[dict, dict]:
    """e3e8de2's ``recall_records``, restated: every pooled candidate with its ``why`` as JSON."""
    from hindbrain.recall.records import _belief_why, _json
    from hindbrain.schemas.records import envelope, new_id

    recall_id = new_id("recall")
    env = dict(tenant=q.tenant, agent=q.agent, task=q.task)
    briefed = [{"item_id": b.id, "item_kind": "belief", "score": b.confidence,
                "why_json": _json(_belief_why(b, layer, result.arms.get(b.id)))} for b, layer in result.briefed]
    considered = [{"item_id": s.doc.id, "item_kind": s.doc.kind, "score": s.score, "why_json": _json(s.why)}
                  for s in result.ranked]
    recall = {
        "envelope": {**envelope("recall", record_id=recall_id, **env), "schema_version": 1},
        "recall_id": recall_id, "query": q.query, "situation": dict(q.situation), "trigger": q.trigger,
        "scope": dict(q.scope), "budget_tokens": q.budget_tokens, "k": q.k, "layers": list(q.layers or []),
        "candidates": briefed + considered,
    }
    injected = [(b.id, "belief", b.tokens, b.confidence, result.arms.get(b.id, (None, None))[1])
                for b, _ in result.briefed]
    injected += [(i.id, i.doc.kind, i.doc.tokens, i.relevance, None) for i in result.selected]
    injection = {
        "envelope": envelope("injection", causation_ids=[recall_id], **env),
        "recall_id": recall_id, "budget_tokens": q.budget_tokens,
        "items": [{"item_id": item, "item_kind": kind, "rank": n, "tokens": tokens, "score": score, "arm": arm}
                  for n, (item, kind, tokens, score, arm) in enumerate(injected)],
    }
    return recall, injection


def results_of_recalls(home: Path, bodies: list[dict], explain: bool) -> list[tuple]:
    """(validated input, engine result) of each recall, through ``Brain.recall``."""
    import hindbrain.brain as brain_module
    from hindbrain import Brain

    tenant, kept = _load("api").TENANT, []
    original = brain_module.recall_records

    def keeping(q, result):
        kept.append((q, result))
        return original(q, result)

    brain_module.recall_records = keeping
    try:
        with Brain.open(home) as brain:
            for body in bodies:
                brain.recall(tenant=tenant, explain=explain, **body)
    finally:
        brain_module.recall_records = original
    return kept


def steps_of(q, result, version: int, log) -> tuple[dict[str, float], int]:
    """Thread CPU ms of each step for one recall's records in schema ``version``, and the recall
    record's bytes."""
    from hindbrain.recall.records import recall_records
    from hindbrain.schemas.codec import registry
    from hindbrain.service.handover import unframe
    from hindbrain.streams.log import Message, Position
    from hindbrain.streams.processing import Decoded, project_batch
    from hindbrain.streams.topics import TOPIC_OF, key_of

    spent = {}
    t0 = time.thread_time()
    recall, injection = recall_records(q, result) if version == 2 else recorded_in_v1(q, result)
    spent["build"] = time.thread_time() - t0
    records = [("recall", recall), ("injection", injection)]
    t0 = time.thread_time()
    messages = [Message(TOPIC_OF[rt], key_of(r), registry.encode(rt, r, version if rt == "recall" else None))
                for rt, r in records]
    spent["encode"] = time.thread_time() - t0
    t0 = time.thread_time()  # handover.frame without its encoding (timed above)
    head = orjson.dumps([[rt, r] for rt, r in records], option=orjson.OPT_SERIALIZE_NUMPY)
    parts = [struct.pack("<I", len(messages)), struct.pack("<I", len(head)), head]
    for m in messages:
        parts += [struct.pack("<I", len(m.value)), m.value]
    body = b"".join(parts)
    spent["frame"] = time.thread_time() - t0
    t0 = time.thread_time()
    unframe(body)
    spent["unframe"] = time.thread_time() - t0
    t0 = time.thread_time()
    positions = log.append(messages)
    spent["sqlite_append"] = time.thread_time() - t0
    t0 = time.thread_time()
    for m in messages:
        registry.decode(m.value)
    spent["decode"] = time.thread_time() - t0
    decoded = [Decoded(Position(p.topic, 0, p.offset), rt, r) for p, (rt, r) in zip(positions, records, strict=True)]
    t0 = time.thread_time()
    project_batch(decoded, 0)
    spent["project"] = time.thread_time() - t0
    return {k: v * 1000 for k, v in spent.items()}, len(messages[0].value)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", required=True)
    ap.add_argument("--recalls", type=int, default=200)
    ap.add_argument("--explain", action="store_true", help="recall(explain=True): every candidate explained in full")
    args = ap.parse_args()

    from hindbrain.streams.sqlite_log import SqliteLog

    bodies = _load("served").distinct_queries(random.Random(11), args.recalls + 20)
    load0 = os.getloadavg()[0]
    kept = results_of_recalls(Path(args.home), bodies, args.explain)[20:]  # the first ones warm the caches
    times = {v: {s: [] for s in STEPS} for v in (1, 2)}
    sizes: dict[int, list[int]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as scratch:
        logs = {v: SqliteLog(Path(scratch) / f"v{v}.sqlite", synchronous="NORMAL") for v in (1, 2)}
        for n, (q, result) in enumerate(kept):
            for version in (1, 2) if n % 2 else (2, 1):
                spent, size = steps_of(q, result, version, logs[version])
                sizes[version].append(size)
                for step, ms in spent.items():
                    times[version][step].append(ms)
        for log in logs.values():
            log.close()
    print(f"{len(kept)} first-time recalls, explain={args.explain}, candidates p50 "
          f"{statistics.median(len(r.ranked) for _, r in kept):.0f}, load {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"{'schema':<8}{'bytes':>8}" + "".join(f"{s:>14}" for s in STEPS) + f"{'sum':>8}{'served':>8}")
    for version in (1, 2):
        med = {s: statistics.median(times[version][s]) for s in STEPS}
        served = sum(med[s] for s in STEPS if s not in ("decode", "project"))  # what a served recall pays
        print(f"v{version:<7}{statistics.median(sizes[version]):>8,.0f}" + "".join(f"{med[s]:>14.3f}" for s in STEPS)
              + f"{sum(med.values()):>8.3f}{served:>8.3f}")
    print("ms of thread CPU a recall (medians); 'served': build + encode + frame + unframe + append; "
          "'decode' is a replay's, 'project' the rows before the views' insert", flush=True)


if __name__ == "__main__":
    main()
