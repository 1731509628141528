"""Where the owner's resident bytes per event go (issue 28, point 3), through ``Brain.open`` with
defaults and ``perceive_many`` in batches of 5,000 (``bench/api.py``'s distinct structured events).

    .venv/bin/python bench/memory.py                       # 20k events
    .venv/bin/python bench/memory.py --size 100000 --top 25

Prints, per event: the RSS growth over the import (what ``bench/api.py`` reports, native
allocations included: the vector graph, numpy, chDB), the Python heap growth ``tracemalloc``
sees, and its biggest holders by source line (``--top``), measured after a full collection.
Then what the recall index's parts report about themselves (vectors, lexical index). The
tracing makes the import ~2x slower: this bench is for bytes, ``bench/api.py`` for speed.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import tempfile
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import TENANT, event, resident_bytes  # noqa: E402  (the numbers of record use the same events)

from hindbrain import Brain  # noqa: E402

BATCH = 5_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=20_000)
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--no-trace", action="store_true", help="RSS only (tracemalloc off)")
    ap.add_argument("--depth", type=int, default=1, help="frames kept per allocation; > 1 prints the callers")
    args = ap.parse_args()
    rng = random.Random(args.size)
    events = [event(rng, n) for n in range(args.size)]
    with tempfile.TemporaryDirectory(prefix="hindbrain-memory-") as home, Brain.open(home) as brain:
        brain.perceive(tenant=TENANT, agent="agent-0", text="warm-up")
        brain.recall(tenant=TENANT, agent="agent-0", query="warm-up")
        gc.collect()
        rss0 = resident_bytes()
        if not args.no_trace:
            tracemalloc.start(args.depth)
            before = tracemalloc.take_snapshot()
        for start in range(0, args.size, BATCH):
            brain.perceive_many(events[start:start + BATCH])
        gc.collect()
        n = args.size
        print(f"{n:,} events: RSS growth {(resident_bytes() - rss0) / n:,.0f} B/event")
        if not args.no_trace:
            after = tracemalloc.take_snapshot()
            traced = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
            diffs = after.compare_to(before, "lineno" if args.depth == 1 else "traceback")
            total = sum(d.size_diff for d in diffs)
            print(f"  python heap (tracemalloc) {total / n:,.0f} B/event ({traced / 2**20:,.0f} MiB traced)")
            for d in diffs[: args.top]:
                frame = d.traceback[0]
                print(f"    {d.size_diff / n:>8,.0f} B/event  {d.count_diff / n:>6.2f} blocks/event  "
                      f"{Path(frame.filename).name}:{frame.lineno}")
                for caller in list(d.traceback)[1:]:
                    print(f"{'':>40}{Path(caller.filename).name}:{caller.lineno}")
        semantic = brain.index.semantic
        if semantic is not None:
            print(f"  vector indexes report {semantic.memory_bytes() / n:,.0f} B/event "
                  f"({semantic.pending():,} texts still queued for the neural tier)")


if __name__ == "__main__":
    main()
