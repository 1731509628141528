"""The event documents' C assembly and the cue words' C prefilter against the Python they replaced, in one
process (issue 28): ``event_docs`` then ``TenantIndex.add_many`` over bench/api.py's events in batches of 5,000,
two indexes grown side by side, one with the oracles patched in (``index.py_event_docs_of``,
``Prefilter.automaton_matching``), the arms alternated batch by batch so the machine's drift hits both.

    .venv/bin/python bench/event_docs_ab.py                 # 100k events
    .venv/bin/python bench/event_docs_ab.py --size 20000

Prints each arm's median thread CPU µs an event (the batches' medians) and the ratios; the two indexes'
packed rows are asserted equal, document for document.
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

from hindbrain.brain import perception_records
from hindbrain.recall import event_documents, literals, tenant_index
from hindbrain.schemas.api import common_perceive_many

_spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).parent / "api.py")
api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api)

NATIVE = (event_documents.event_docs_of, literals.Prefilter.matching)
ORACLES = (event_documents.py_event_docs_of, literals.Prefilter.automaton_matching)


def _use(arm: tuple) -> None:
    event_documents.event_docs_of, literals.Prefilter.matching = arm


def fold_side_by_side(arms: dict[str, tuple], size: int, batch: int) -> dict[tuple[str, str], list[float]]:
    """bench/api.py's ``size`` events in batches of ``batch``, folded by each arm (``make`` the batch's documents
    from its rows, ``add`` them to the arm's own ``TenantIndex``), the arms alternated batch by batch; each arm's
    thread CPU µs an event per batch for ``docs`` and ``add``. The indexes' packed rows are asserted equal."""
    rng = random.Random(size)
    events = [api.event(rng, n) for n in range(size)]
    batches = [perception_records(common_perceive_many(events[s : s + batch])) for s in range(0, size, batch)]
    indexes = {name: tenant_index.TenantIndex() for name in arms}
    spent: dict[tuple[str, str], list[float]] = {(name, part): [] for name in arms for part in ("docs", "add")}
    gc.collect()
    gc.disable()  # as under perceive_many (streams.gc_pause); collected between batches, outside the timings
    try:
        for b, records in enumerate(batches):
            rows = [(r["envelope"]["record_id"], r, r["envelope"]["ts_us"], r["envelope"]["agent"]) for r in records]
            for name in (list(arms) if b % 2 else list(arms)[::-1]):
                make, add = arms[name]
                t = time.thread_time()
                docs = make(rows)
                t1 = time.thread_time()
                add(indexes[name], docs)
                t2 = time.thread_time()
                spent[name, "docs"].append((t1 - t) / len(rows) * 1e6)
                spent[name, "add"].append((t2 - t1) / len(rows) * 1e6)
                del docs
            gc.collect()
    finally:
        gc.enable()
    first, *others = (indexes[name].docs for name in arms)
    assert all(len(other) == len(first) == size and all(first.row(n) == other.row(n) for n in range(size))
               for other in others)
    return spent


def _documents_with(arm: tuple):
    """``index.event_docs`` run with ``arm``'s event documents and prefilter patched in (restored after)."""
    def make(rows):
        _use(arm)
        try:
            return event_documents.event_docs(rows)
        finally:
            _use(NATIVE)
    return make


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    args = ap.parse_args()
    arms = {name: (_documents_with(arm), tenant_index.TenantIndex.add_many)
            for name, arm in (("oracles", ORACLES), ("native", NATIVE))}
    spent = fold_side_by_side(arms, args.size, args.batch)
    print(f"{args.size:,} events in batches of {args.batch:,}; load average {os.getloadavg()[0]:.1f}")
    for part, name in (("docs", "event_docs"), ("add", "add_many")):
        base, new = (statistics.median(spent[arm, part]) for arm in ("oracles", "native"))
        per_batch = statistics.median(x / y for x, y in zip(spent["native", part], spent["oracles", part], strict=True))
        print(f"{name:<11} oracles {base:6.2f} -> native {new:6.2f} us/event  x{new / base:.2f} "
              f"(per-batch ratio median x{per_batch:.2f})")


if __name__ == "__main__":
    main()
