"""The fast semantic tier's rate on one core (``recall/static.py``), beside the neural model's
on the same texts in the same process (the machine is shared: read the ratio).

    .venv/bin/python bench/static_tier.py            # 50k texts of each kind, 3 rounds (~1 min)
    HINDBRAIN_EVAL_DATA=/work/shared/eval-data .venv/bin/python bench/static_tier.py   # + distinct texts

Kinds: English sentences, Chinese sentences, ``bench/api.py``'s structured events (a mix), and with
``HINDBRAIN_EVAL_DATA`` MADial-Bench's distinct dialogue and memory texts (en + zh, each once: the
first three are templates whose words repeat, so their bags repeat). Median of the rounds, in wall
time and in the calling thread's CPU time (one core's rate, what the target is about); the neural
model (USE) on 300 of the same texts. ``codes``: ``embed_codes``, the int8 codes the vector index
stores in graph mode (what ``perceive`` pays past 20k documents a tenant); a checkout without it
prints n/a.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import time
from pathlib import Path

from hindbrain.recall.embed import default_embedder
from hindbrain.recall.static import default_static


def madial_texts(root: Path) -> list[str]:
    """Every distinct string of 20+ characters in MADial-Bench's dialogue and memory files (en + zh)."""
    def strings(x):
        if isinstance(x, str):
            yield x
        elif isinstance(x, dict | list):
            for v in x.values() if isinstance(x, dict) else x:
                yield from strings(v)

    found: set[str] = set()
    for path in sorted(root.glob("madial-bench/*/MADial-Bench-*.json")):
        raw = path.read_text(encoding="utf-8")
        try:
            docs = [json.loads(raw)]
        except json.JSONDecodeError:  # one JSON document a line
            docs = [json.loads(line) for line in raw.splitlines() if line.strip()]
        found.update(s for s in strings(docs) if len(s) >= 20)
    return sorted(found)


def texts_of(kind: str, n: int) -> list[str]:
    if kind == "madial":
        return madial_texts(Path(os.environ["HINDBRAIN_EVAL_DATA"]))
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
    kinds = ("english", "chinese", "events") + (("madial",) if os.environ.get("HINDBRAIN_EVAL_DATA") else ())
    for kind in kinds:
        texts = texts_of(kind, args.n)
        fast, fast_cpu = rate(static.embed_passages, texts, args.rounds)
        codes = (f"{rate(static.embed_codes, texts, args.rounds)[1]:>9,.0f}" if hasattr(static, "embed_codes")
                 else f"{'n/a':>9}")
        slow, _ = rate(neural.embed_passages, texts[:300], 1)
        print(f"  {kind:<8} {len(texts):>6,} texts  static {fast:>9,.0f} texts/s ({fast_cpu:>9,.0f} a core's CPU; "
              f"codes {codes})   neural {slow:>6,.0f} texts/s   ratio {fast / slow:,.0f}x")


if __name__ == "__main__":
    main()
