"""What ``HindbrainStore`` costs per call on an embedded Brain: put, get, a query search (a recall)
and a listing, as medians over ``--calls`` calls, with ``--items`` items already stored in one
tenant (spread over ``--users`` users of one agent, every tenth key rewritten once).

    python bench/langgraph_store.py [--items 2000] [--users 20] [--calls 50] [--embedder none]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from hindbrain import Brain
from hindbrain.integrations.langgraph import HindbrainStore

TOPICS = ("invoice", "printer", "badge", "lunch", "deploy", "locker", "parking", "vpn", "laptop", "travel")


def median_ms(call, n: int) -> float:
    times = []
    for i in range(n):
        start = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--embedder", default="none")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home, Brain.open(Path(home) / "b", embedder=args.embedder) as brain:
        store = HindbrainStore(brain)

        def ns(i: int) -> tuple[str, str, str]:
            return ("acme", "bot", f"user-{i % args.users}")

        def text(i: int) -> str:
            return f"note {i} about the {TOPICS[i % len(TOPICS)]} of user-{i % args.users}"

        for i in range(args.items):
            store.put(ns(i), f"k{i}", {"text": text(i)})
        for i in range(0, args.items, 10):
            store.put(ns(i), f"k{i}", {"text": text(i) + " (revised)"})
        put = median_ms(lambda i: store.put(ns(i), f"new{i}", {"text": text(i)}), args.calls)
        get = median_ms(lambda i: store.get(ns(i), f"k{i}"), args.calls)
        search = median_ms(lambda i: store.search(ns(i), query=f"the {TOPICS[i % len(TOPICS)]} of user-{i}"),
                           args.calls)
        listing = median_ms(lambda i: store.search(ns(i), limit=10), args.calls)
    print(f"{args.items} items over {args.users} users, embedder {args.embedder}, medians of {args.calls} calls:")
    print(f"  put {put:.1f} ms · get {get:.1f} ms · search with a query {search:.1f} ms · listing {listing:.1f} ms")


if __name__ == "__main__":
    main()
