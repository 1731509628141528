"""The fast semantic tier's rate on one core (``recall/static.py``), beside the neural model's
on the same texts in the same process (the machine is shared: read the ratio).

    .venv/bin/python bench/static_tier.py            # 50k texts of each kind, 3 rounds (~1 min)

Kinds: English sentences, Chinese sentences, and ``bench/api.py``'s structured events (a mix).
Median of the rounds, in wall time and in the calling thread's CPU time (one core's rate, what the
target is about); the neural model (USE) on 300 of the same texts.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import time
from pathlib import Path

from hindbrain.recall.embed import default_embedder
from hindbrain.recall.static import default_static


def texts_of(kind: str, n: int) -> list[str]:
    rng = random.Random(5)
    if kind == "english":
        return [f"agent {i} saw the export job fail with a timeout on host db-{i % 97} while retrying ticket {i}"
                for i in range(n)]
    if kind == "chinese":
        return [f"用户{i}说页面一直转圈，提交后没有响应，订单{rng.randrange(10**6)}" for i in range(n)]
    spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).parent / "api.py")
    api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(api)
    return [api.event(rng, i)["text"] for i in range(n)]


def rate(embed, texts: list[str], rounds: int) -> tuple[float, float]:
    """(texts per second of wall time, texts per second of this thread's CPU), medians of the
    rounds: on a shared machine the wall rate is the scheduler's, the CPU rate what one core does."""
    spent, cpu = [], []
    for _ in range(rounds):
        t, c = time.perf_counter(), time.thread_time()
        embed(texts)
        spent.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
    return len(texts) / statistics.median(spent), len(texts) / statistics.median(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    static, neural = default_static(), default_embedder()
    static.embed_passages(["warm-up"])
    neural.embed_passages(["warm-up"])
    print(f"{static.name}: {len(static.table.tokens):,} tokens, {static.dim} dims")
    for kind in ("english", "chinese", "events"):
        texts = texts_of(kind, args.n)
        fast, fast_cpu = rate(static.embed_passages, texts, args.rounds)
        slow, _ = rate(neural.embed_passages, texts[:300], 1)
        print(f"  {kind:<8} static {fast:>9,.0f} texts/s ({fast_cpu:>9,.0f} a core's CPU)   neural {slow:>6,.0f} "
              f"texts/s   ratio {fast / slow:,.0f}x")


if __name__ == "__main__":
    main()
