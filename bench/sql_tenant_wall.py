"""Another tenant's recall while one tenant sends long SQL, parsed in the brain's process or in the worker's.

    python bench/sql_tenant_wall.py [--home DIR] [--rounds 3] [--recalls 40] [--terms 5800] [--embedder none]

One brain, ``--events`` events for each of two tenants. Tenant ``globex`` recalls ``--recalls`` times alone,
``--gap`` seconds apart (quiet); then the same, and on until ``--queries`` of acme's were answered, while a thread
sends tenant ``acme``'s long query (``SELECT count() FROM events WHERE text = 'n0' OR text = 'n1' OR …``,
``--terms`` terms: ~99 kB at 5,800, the size robust41 measured) back to back through ``Brain.tenant_sql``, what
``/v1/sql``'s lane calls (noisy). Two arms in one process, alternated each round (the first arm rotates), so both
share the machine's load of the moment:

* ``brain``: sqlglot's parse and check run in the brain's process (``Warehouse.tenant_apply`` calls them here),
  what the base did before round thirty-two;
* ``worker``: they run in the tenant worker process (``tenant_apply``'s own path since round thirty-two).

The query itself runs in the worker in both arms. Printed per arm: globex's recall p50 and p99 in ms, quiet and
noisy, the medians over rounds; the long query's wall and the CPU it took on the brain's thread, holding the
interpreter lock (medians of all it sent), and how many it sent; ``uptime``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from contextlib import contextmanager

from hindbrain import Brain
from hindbrain.schemas.api import InvalidInput


def long_query(terms: int) -> str:
    """A query of ``terms`` OR'ed comparisons: every check passes, sqlglot's parse is the cost."""
    return "SELECT count() AS n FROM events WHERE " + " OR ".join(f"text = 'n{i}'" for i in range(terms))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def recall_walls(brain: Brain, count: int, gap: float = 0.0, until=lambda: True) -> list[float]:
    """globex's recall wall times (ms): ``count`` recalls ``gap`` seconds apart, and more until ``until()``."""
    walls: list[float] = []
    while len(walls) < count or not until():
        started = time.perf_counter()
        brain.recall(tenant="globex", agent="bot", query=f"globex order {len(walls) % 7} shipped")
        walls.append((time.perf_counter() - started) * 1000)
        time.sleep(gap)
    return walls


def answered(sent: list, count: int):
    """Whether ``count`` queries were answered (``sent`` holds their walls)."""
    return lambda: len(sent) >= count


@contextmanager
def attacking(brain: Brain, query: str, walls: list[float]):
    """acme's long query sent back to back by a thread while the block runs; into ``walls`` each one's wall and the
    CPU it took on the brain's thread (s): Python there holds the interpreter lock every recall needs."""
    stop = threading.Event()

    def attack() -> None:
        while not stop.is_set():
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                brain.tenant_sql(query, tenant="acme")
            except InvalidInput as exc:  # a limit stopped it: still the load this measures
                print(f"  acme's query refused: {str(exc)[:120]}")
            walls.append((time.perf_counter() - started, time.thread_time() - cpu))

    thread = threading.Thread(target=attack, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def parse_in_brain(brain: Brain, on: bool):
    """``on``: ``tenant_apply`` calls its function in this process (the base's parse), else the worker does."""
    warehouse = brain.warehouse
    if on:
        warehouse.tenant_apply = lambda function, *arguments, marker=None: function(*arguments)
    try:
        yield
    finally:
        warehouse.__dict__.pop("tenant_apply", None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--recalls", type=int, default=40)
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--terms", type=int, default=5800)
    parser.add_argument("--embedder", default="none")
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between two recalls of globex")
    parser.add_argument("--queries", type=int, default=2, help="acme's queries answered in each noisy phase")
    args = parser.parse_args()
    home = args.home or tempfile.mkdtemp(prefix="sql-tenant-wall-")
    query = long_query(args.terms)
    print(f"query: {len(query):,} characters; uptime: {os.popen('uptime').read().strip()}")
    arms = ["brain", "worker"]
    results = {arm: {"quiet": [], "noisy": [], "query": []} for arm in arms}
    with Brain.open(home, embedder=args.embedder) as brain:
        for tenant in ("acme", "globex"):
            brain.perceive_many([{"tenant": tenant, "agent": "bot", "text": f"{tenant} order {n} shipped to "
                                   f"warehouse {n % 13}"} for n in range(args.events)])
        brain.sql("SELECT 1", tenant="acme")  # the worker and the views exist before any arm
        recall_walls(brain, 5)
        for r in range(args.rounds):
            for arm in arms[r % 2:] + arms[:r % 2]:
                with parse_in_brain(brain, arm == "brain"):
                    quiet = recall_walls(brain, args.recalls, args.gap)
                    sent: list[tuple[float, float]] = []
                    with attacking(brain, query, sent):  # until acme's queries were answered --queries times
                        noisy = recall_walls(brain, args.recalls, args.gap, answered(sent, args.queries))
                    results[arm]["query"] += sent
                for phase, walls in (("quiet", quiet), ("noisy", noisy)):
                    results[arm][phase].append((percentile(walls, 0.5), percentile(walls, 0.99)))
                print(f"  round {r} {arm}: quiet p50/p99 {percentile(quiet, 0.5):.1f}/"
                      f"{percentile(quiet, 0.99):.1f} ms, noisy {percentile(noisy, 0.5):.1f}/"
                      f"{percentile(noisy, 0.99):.1f} ms", flush=True)
    for arm in arms:
        q, n, sent = results[arm]["quiet"], results[arm]["noisy"], results[arm]["query"]
        print(f"{arm}: globex recall p50 quiet {statistics.median(p for p, _ in q):.1f} ms -> noisy "
              f"{statistics.median(p for p, _ in n):.1f} ms; p99 {statistics.median(p for _, p in q):.1f} -> "
              f"{statistics.median(p for _, p in n):.1f} ms; acme's query {statistics.median(w for w, _ in sent):.2f} "
              f"s, of it {statistics.median(c for _, c in sent):.2f} s CPU on the brain's thread (medians over "
              f"{len(sent)})")
    print(f"uptime: {os.popen('uptime').read().strip()}")


if __name__ == "__main__":
    main()
