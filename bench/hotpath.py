"""The hot path through ``Brain`` (design.md §issue-28, round two): ``perceive_many`` throughput with default
arguments on bench/api.py's distinct structured events (en + zh, batches of 5,000), the bytes the
brain's process holds per event (``tracemalloc``), recall latency with defaults once the neural
tier has settled (``--recalls``), and the costs this round cut, old and new code on the same
inputs in one process (medians of interleaved repeats; the machine is shared).

    .venv/bin/python bench/hotpath.py                      # 20k events, then the A/B rows
    .venv/bin/python bench/hotpath.py --sizes 20000 100000 --memory
    .venv/bin/python bench/hotpath.py --no-parts --recalls 300   # runs on older checkouts too

To compare checkouts, run it interleaved with each checkout's own interpreter (``--no-parts``):
a ratio of runs taken minutes apart on this machine says more about its load than the code.
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import statistics
import sys
import tempfile
import time
import tracemalloc
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import TENANT, event, queries  # noqa: E402  (bench/api.py's events: the numbers of record use the same)

from hindbrain import Brain  # noqa: E402

BATCH = 5_000


def ingest(size: int, memory: bool, recalls: int = 0) -> tuple[float, float | None, list[float]]:
    """(events per second through ``perceive_many``, bytes held per event or None, the seconds
    of ``recalls`` default recalls once every vector is neural)."""
    rng = random.Random(size)
    events = [event(rng, n) for n in range(size)]
    with tempfile.TemporaryDirectory(prefix="hindbrain-ingest-") as home, Brain.open(home) as brain:
        brain.perceive_many(events[:100])  # models and tables loaded before the clock starts
        gc.collect()
        if memory:
            tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0] if memory else 0
        t0 = time.perf_counter()
        for start in range(100, size, BATCH):
            brain.perceive_many(events[start:start + BATCH])
        spent = time.perf_counter() - t0
        held = None
        if memory:
            gc.collect()
            held = (tracemalloc.get_traced_memory()[0] - before) / (size - 100)
            tracemalloc.stop()
        latencies = []
        if recalls:
            brain.index.semantic.wait(600)
            asked = queries(rng, recalls + 20)
            for n, q in enumerate(asked):
                t = time.perf_counter()
                brain.recall(tenant=TENANT, agent=f"agent-{n % 8}", **q)
                if n >= 20:  # the first twenty warm the caches
                    latencies.append(time.perf_counter() - t)
    return (size - 100) / spent, held, latencies


def interleaved(old, new, repeats: int = 7) -> tuple[float, float]:
    """Median seconds of ``old()`` and ``new()``, run alternately."""
    o, n = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        old()
        o.append(time.perf_counter() - t)
        t = time.perf_counter()
        new()
        n.append(time.perf_counter() - t)
    return statistics.median(o), statistics.median(n)


def parts(count: int = 5_000) -> list[tuple[str, float, float]]:
    """(what, old µs per event, new µs per event) for each cost this round cut."""
    from hindbrain.learning.learner import _word_hashes
    from hindbrain.recall import cues
    from hindbrain.recall.disguise import _table, unmasked
    from hindbrain.recall.event_documents import situation_text
    from hindbrain.recall.tokenize import SEPARATOR, joined_tokens, tokens

    rng = random.Random(7)
    events = [{**e, "scope": {}} for e in (event(rng, n) for n in range(count))]
    docs = [f"{e['text']}{SEPARATOR}{situation_text(e)}" for e in events]
    texts, table = [e["text"] for e in events], _table()  # every text holds an em dash: none is ASCII
    hint_ignorecase = re.compile(cues._ACCOUNT_HINT.pattern, re.ASCII | re.IGNORECASE)  # as it was
    fields = ("text", "system", "identity", "action", "expected", "actual")
    rows = []
    for what, old, new in (
        ("unmasking a line", lambda: [unicodedata.normalize("NFKC", t).translate(table) for t in texts],
         lambda: [unmasked(text) for text in texts]),
        ("account hint of exact cues", lambda: [hint_ignorecase.search(t) for t in texts],
         lambda: [cues._ACCOUNT_HINT.search(t.lower()) for t in texts]),
        ("index tokens", lambda: [tokens(d) for d in docs], lambda: [joined_tokens(d) for d in docs]),
        ("learner word set", lambda: [frozenset(tokens(" ".join(filter(None, map(e.get, fields))))) for e in events],
         lambda: [_word_hashes(e) for e in events]),
    ):
        o, n = interleaved(old, new)
        rows.append((what, o / count * 1e6, n / count * 1e6))
    return rows + [expansion_seeds(events[:2_000])]


def expansion_seeds(events: list[dict], seeds: int = 300) -> tuple[str, float, float]:
    """A recall's expansion reads each of its five best hits' candidate names; a fleet's recalls
    find the same hits again. Old: the names worked out on every call (the cache emptied
    first); new: cached per text. µs per seed."""
    from hindbrain.recall import expand

    with tempfile.TemporaryDirectory(prefix="hindbrain-hotpath-") as home, Brain.open(home, embedder="none") as brain:
        brain.perceive_many(events)
        tenant = brain.index.tenants[TENANT]
        asked = [random.Random(n).randrange(len(tenant.docs) // 10) for n in range(seeds)]  # hits recur

        def uncached():
            for no in asked:
                expand._name_terms.cache_clear()
                expand.bridge_terms(tenant, no, set())

        o, n = interleaved(uncached, lambda: [expand.bridge_terms(tenant, no, set()) for no in asked])
    return "expansion, a seed's bridge terms", o / seeds * 1e6, n / seeds * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000])
    ap.add_argument("--memory", action="store_true", help="also bytes held per event (tracemalloc: ~2x slower)")
    ap.add_argument("--recalls", type=int, default=0, help="then time this many default recalls")
    ap.add_argument("--no-parts", action="store_true", help="no old/new rows (they import this round's code)")
    args = ap.parse_args()
    for size in args.sizes:
        rate, held, latencies = ingest(size, args.memory, args.recalls)
        print(f"perceive_many {size:,} events: {rate:,.0f} ev/s" + (f", {held:,.0f} B/event held" if held else ""))
        if latencies:
            latencies.sort()
            print(f"recall at {size:,}: p50 {statistics.median(latencies) * 1e3:.1f} ms, "
                  f"p99 {latencies[int(0.99 * (len(latencies) - 1))] * 1e3:.1f} ms ({len(latencies)} recalls)")
    if not args.no_parts:
        for what, old, new in parts():
            print(f"{what}: {old:.1f} -> {new:.1f} µs/event (x{old / new:.2f})")


if __name__ == "__main__":
    main()
