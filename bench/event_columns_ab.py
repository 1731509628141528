"""A batch's events folded as columns against the per-document fold, in one process (issue 28, round fourteen):
over bench/api.py's events in batches of 5,000, two indexes grown side by side, one by ``event_docs`` then
``TenantIndex.add_many`` (a ``Doc`` an event: the fold before, kept as the oracle), one by ``event_columns`` then
``TenantIndex.add_events``, the arms alternated batch by batch so the machine's drift hits both.

    .venv/bin/python bench/event_columns_ab.py                 # 100k events
    .venv/bin/python bench/event_columns_ab.py --size 20000

Prints each arm's median thread CPU µs an event (the batches' medians) for the documents (4a's last step and
what it calls) and the add (4b), and the ratios; the two indexes' packed rows are asserted equal, document for
document.
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
from hindbrain.recall import index
from hindbrain.schemas.api import common_perceive_many

_spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).parent / "api.py")
api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api)

ARMS = {"docs": (index.event_docs, index.TenantIndex.add_many),
        "columns": (index.event_columns, index.TenantIndex.add_events)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    args = ap.parse_args()
    rng = random.Random(args.size)
    events = [api.event(rng, n) for n in range(args.size)]
    batches = [perception_records(common_perceive_many(events[s : s + args.batch]))
               for s in range(0, args.size, args.batch)]
    indexes = {name: index.TenantIndex() for name in ARMS}
    spent: dict[tuple[str, str], list[float]] = {(name, part): [] for name in ARMS for part in ("docs", "add")}
    gc.collect()
    gc.disable()  # as under perceive_many (streams.gc_pause); collected between batches, outside the timings
    try:
        for b, batch in enumerate(batches):
            rows = [(r["envelope"]["record_id"], r, r["envelope"]["ts_us"], r["envelope"]["agent"]) for r in batch]
            for name in (list(ARMS) if b % 2 else list(ARMS)[::-1]):
                make, add = ARMS[name]
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
    a, b = indexes["columns"].docs, indexes["docs"].docs
    assert len(a) == len(b) == args.size and all(a.row(n) == b.row(n) for n in range(args.size))
    print(f"{args.size:,} events in batches of {args.batch:,}; load average {os.getloadavg()[0]:.1f}")
    totals = {arm: [d + a for d, a in zip(spent[arm, "docs"], spent[arm, "add"], strict=True)] for arm in ARMS}
    for part, name in (("docs", "documents"), ("add", "add"), (None, "both")):
        series = {arm: spent[arm, part] if part else totals[arm] for arm in ARMS}
        base, new = (statistics.median(series[arm]) for arm in ("docs", "columns"))
        per_batch = statistics.median(x / y for x, y in zip(series["columns"], series["docs"], strict=True))
        print(f"{name:<10} docs {base:6.2f} -> columns {new:6.2f} us/event  x{new / base:.2f} "
              f"(per-batch ratio median x{per_batch:.2f})")


if __name__ == "__main__":
    main()
