"""The batch forms of the ingest path's per-event stages against their one-by-one forms, in one process
(issue 28): an appended batch's exact cues, provenance verdicts and event documents, and the common
shape's validation. bench/api.py's generator (distinct structured events, en + zh), arms rotated.

    .venv/bin/python bench/ingest_batch.py                  # 5,000 events, 7 rounds
    .venv/bin/python bench/ingest_batch.py --size 20000 --rounds 5

Prints each arm's median CPU (``thread_time``) µs an event and the ratio batch / one by one. The
whole path through ``perceive_many`` is ``bench/ingest_profile.py``'s (main and branch alternated).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import random
import statistics
import time
from pathlib import Path

from hindbrain.brain import _perception
from hindbrain.recall import cues, provenance
from hindbrain.recall.event_documents import event_docs
from hindbrain.schemas.api import PerceiveInput, common_perceive, validated

_spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).parent / "api.py")
api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=5_000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    rng = random.Random(args.size)
    events = [api.event(rng, n) for n in range(args.size)]
    records = [_perception(validated(PerceiveInput, "perceive", **e).__dict__) for e in events]
    rows = [(r["envelope"]["record_id"], r, r["envelope"]["ts_us"], r["envelope"]["agent"]) for r in records]
    agents = [r["envelope"]["agent"] for r in records]
    ts = [r["envelope"]["ts_us"] for r in records]
    arms = {
        "exact cues + terms, one by one": lambda: [cues.indexed_terms(r, t) for r, t in zip(records, ts, strict=True)],
        "exact cues + terms, batch": lambda: cues.indexed_terms_many(records, ts),
        "provenance verdict, one by one": lambda: [provenance.event_quarantine(r, a)
                                                   for r, a in zip(records, agents, strict=True)],
        "provenance verdict, batch": lambda: provenance.event_quarantines(records, agents),
        "event documents, batch (event_docs)": lambda: event_docs(rows),
        "validation, pydantic model": lambda: [validated(PerceiveInput, "perceive", **e) for e in events],
        "validation, common shape": lambda: [common_perceive(e) for e in events],
    }
    assert cues.indexed_terms_many(records, ts) == [cues.indexed_terms(r, t) for r, t in zip(records, ts, strict=True)]
    assert provenance.event_quarantines(records, agents) == [provenance.event_quarantine(r, a)
                                                             for r, a in zip(records, agents, strict=True)]
    assert [common_perceive(e) for e in events] == [validated(PerceiveInput, "perceive", **e).__dict__ for e in events]
    spent: dict[str, list[float]] = {name: [] for name in arms}
    gc.collect()
    gc.disable()  # as under perceive_many (streams.gc_pause): a collection inside an arm would be charged to it
    names = list(arms)
    for n in range(args.rounds):
        for name in names[n % len(names):] + names[: n % len(names)]:  # rotated: no arm always first
            t = time.thread_time()
            arms[name]()
            spent[name].append((time.thread_time() - t) / args.size * 1e6)
    med = {name: statistics.median(v) for name, v in spent.items()}
    print(f"{args.size:,} events, {args.rounds} rounds, load average {os.getloadavg()[0]:.1f}")
    for name in names:
        print(f"{name:<40} {med[name]:7.2f} us/event")
    for one, batch in (("exact cues + terms, one by one", "exact cues + terms, batch"),
                       ("provenance verdict, one by one", "provenance verdict, batch"),
                       ("validation, pydantic model", "validation, common shape")):
        print(f"ratio {batch!r} / {one!r}: x{med[batch] / med[one]:.2f}")


if __name__ == "__main__":
    main()
