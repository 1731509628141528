"""Speed at the public API (issue 18): what a user's calls cost through ``Brain``, with default
arguments, on texts that are all distinct, beside ``bm25s`` in the same process as the
reference ratio (the machines are shared and noisy: ratios, not absolutes).

    .venv/bin/python bench/api.py                 # 10k and 100k events
    .venv/bin/python bench/api.py --sizes 10000   # quicker

Rows per size: ``perceive_many`` throughput (batches of 5,000), ``perceive`` p50 (one event),
``recall`` p50/p90/p99 (free text, situations, Chinese; default budget and layers), ``outcome``
p50, and ``bm25s`` indexing throughput and query p50 over the same texts. Each row prints its
issue 18 target. The engine-only benches (``bench/recall.py``, ``bench/foundation.py``) stay
diagnostics; these are the numbers of record.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time

from hindbrain import Brain

SYSTEMS = ("IAM", "billing portal", "VPN gateway", "data warehouse", "CRM sync", "工单系统", "报销系统", "权限平台")
VERBS = ("submit the change", "issue a refund", "renew the certificate", "export the report", "sync contacts",
         "关闭工单", "提交报销单", "开通数据库权限")
SYMPTOMS = ("nothing happened", "403 forbidden", "timed out after 30 s", "blank page", "权限不足", "校验未通过")
TARGETS = {"perceive_many": "≥ 30,000 ev/s", "recall p50": "≤ 10 ms", "recall p99": "≤ 25 ms (≤ 40 ms at 1M)"}


def event(rng: random.Random, n: int) -> dict:
    """A distinct structured event: a system, an action, a symptom and a number nobody repeats."""
    system, verb, symptom = rng.choice(SYSTEMS), rng.choice(VERBS), rng.choice(SYMPTOMS)
    kind = rng.choice(("anomaly", "action", "observation", "message"))
    return {"tenant": "bench", "agent": f"agent-{n % 8}", "task": f"t{n // 4}", "kind": kind,
            "text": f"ticket {n}: {verb} in {system} — {symptom} (case {rng.randrange(10**9)})",
            "system": system, "action": verb, **({"success": False} if kind == "anomaly" else {})}


def queries(rng: random.Random, count: int) -> list[dict]:
    out = []
    for _ in range(count):
        system, verb, symptom = rng.choice(SYSTEMS), rng.choice(VERBS), rng.choice(SYMPTOMS)
        out.append(rng.choice((
            {"query": f"how do I {verb} in {system}? it says {symptom}"},
            {"situation": {"system": system, "action": verb, "actual": symptom}, "trigger": "anomaly"},
            {"query": f"{system} {verb} 失败了怎么办"},
        )))
    return out


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def measure(size: int, embedder: str | None, recalls: int) -> list[tuple[str, str, str]]:
    rng = random.Random(size)
    events = [event(rng, n) for n in range(size)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="hindbrain-api-") as home:
        kw = {"embedder": embedder} if embedder else {}
        with Brain.open(home, **kw) as brain:
            t = time.perf_counter()
            for start in range(0, size, 5_000):
                brain.perceive_many(events[start:start + 5_000])
            ingest = size / (time.perf_counter() - t)
            rows.append(("perceive_many", f"{ingest:,.0f} ev/s", TARGETS["perceive_many"]))
            one = []
            for n in range(200):
                t = time.perf_counter()
                brain.perceive(**event(rng, size + n))
                one.append(time.perf_counter() - t)
            rows.append(("perceive p50", f"{1000 * statistics.median(one):.2f} ms", ""))
            latencies, packs = [], []
            for q in queries(rng, recalls):
                t = time.perf_counter()
                packs.append(brain.recall(tenant="bench", agent="agent-1", **q))
                latencies.append(time.perf_counter() - t)
            rows += [("recall p50", f"{1000 * statistics.median(latencies):.1f} ms", TARGETS["recall p50"]),
                     ("recall p90", f"{1000 * pct(latencies, 0.9):.1f} ms", ""),
                     ("recall p99", f"{1000 * pct(latencies, 0.99):.1f} ms", TARGETS["recall p99"])]
            spent = []
            for n, pack in enumerate(packs[:200]):
                t = time.perf_counter()
                brain.outcome(tenant="bench", task=f"o{n}", recall_id=pack.recall_id,
                              applied=[i.id for i in pack.items[:1]], success=True)
                spent.append(time.perf_counter() - t)
            rows.append(("outcome p50", f"{1000 * statistics.median(spent):.2f} ms", ""))
    rows += _bm25s([e["text"] for e in events], rng, recalls)
    return rows


def _bm25s(texts: list[str], rng: random.Random, recalls: int) -> list[tuple[str, str, str]]:
    """The reference: ``bm25s`` indexing the same texts and answering the same kind of query."""
    try:
        import bm25s
    except ImportError:  # a dev dependency: say so instead of failing the whole bench
        return [("bm25s", "not installed (pip install -e '.[dev]')", "")]
    t = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)
    indexed = len(texts) / (time.perf_counter() - t)
    spent = []
    for q in queries(rng, recalls):
        text = q.get("query") or " ".join(q["situation"].values())
        t = time.perf_counter()
        retriever.retrieve(bm25s.tokenize([text], show_progress=False), k=10, show_progress=False)
        spent.append(time.perf_counter() - t)
    return [("bm25s index", f"{indexed:,.0f} docs/s", "reference"),
            ("bm25s query p50", f"{1000 * statistics.median(spent):.2f} ms", "reference")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--recalls", type=int, default=300)
    ap.add_argument("--embedder", default=None, help="default: the brain's default (the semantic channel)")
    args = ap.parse_args()
    for size in (int(s) for s in args.sizes.split(",")):
        t = time.perf_counter()
        rows = measure(size, args.embedder, args.recalls)
        print(f"\n{size:,} events through Brain (defaults{', embedder=' + args.embedder if args.embedder else ''})")
        for name, value, target in rows:
            print(f"  {name:<18} {value:>22}   {target}")
        print(f"  ({time.perf_counter() - t:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
