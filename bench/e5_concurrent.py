"""The quality mode's query embedding with its e5 member on a thread of its own (issue 30, round
fifteen): wall time of ``EnsembleEmbedder.embed_query_views`` (USE over a dialogue's views, e5 over
its joined turns) with ``concurrent`` on and off, on the same query back to back (the arm first
rotated), every MADial dialogue of both languages. The e5 member is the mode's as configured (ORT's
pass where onnxruntime is installed). Also the process CPU of both, which concurrency must not raise.

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        .venv/bin/python bench/e5_concurrent.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import madial_offline as mo  # noqa: E402

from hindbrain.recall.dialogue import views  # noqa: E402
from hindbrain.recall.embed import embedder_from_name  # noqa: E402


def main() -> None:
    import json

    ens = embedder_from_name("use+e5")
    texts = [views(r["query"]).texts for lang in ("zh", "en")
             for line in (mo.MADIAL / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines()
             if (r := json.loads(line)).get("gold")]
    ens.embed_query_views(texts[0])  # warm-up: loads both models, starts the thread
    arms = (True, False)
    wall = {a: [] for a in arms}
    cpu = {a: [] for a in arms}
    for i, view_texts in enumerate(texts):
        for arm in arms[i % 2:] + arms[:i % 2]:
            ens.concurrent = arm
            w, c = time.perf_counter(), time.process_time()
            ens.embed_query_views(view_texts)
            wall[arm].append((time.perf_counter() - w) * 1e3)
            cpu[arm].append((time.process_time() - c) * 1e3)
    print(f"use+e5 embed_query_views, {len(texts)} MADial dialogues (views median "
          f"{statistics.median(len(t) for t in texts)}), arms alternated; load {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")
    print("| e5 member | wall p50 ms | wall p90 | wall p99 | process CPU p50 ms |")
    print("|---|---:|---:|---:|---:|")
    for arm in arms:
        print(f"| {'own thread' if arm else 'after USE, same thread'} | {statistics.median(wall[arm]):.2f} | "
              f"{np.percentile(wall[arm], 90):.2f} | {np.percentile(wall[arm], 99):.2f} | "
              f"{statistics.median(cpu[arm]):.2f} |")
    ratio = [a / b for a, b in zip(wall[True], wall[False], strict=True)]
    print(f"wall ratio own thread / same thread, per query: p50 ×{statistics.median(ratio):.2f}")


if __name__ == "__main__":
    main()
