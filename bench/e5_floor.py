"""The least CPU an e5-small query pass could take on this machine (design.md §issue-30, point 2:
can ``use+e5`` fit the default's budget the way ``recall/use_query.py`` cut USE's pass?).

e5-small is 12 layers of width 384 (feed-forward 1536): four products a layer (Q/K/V together,
the attention's output, the feed-forward's two). This times only those products, for a query of
``L`` tokens, in the three forms open to a rewrite of the pass: float32 (numpy/OpenBLAS), bfloat16
and int8, both packed once by numkong (usearch's SIMD library, a dependency already; what
``use_query`` uses for USE). The attention itself, layer norms, GELU and quantising the
activations come on top, so a real pass costs more than every row here.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/e5_floor.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numkong
import numpy as np

HIDDEN, FFN, LAYERS = 384, 1536, 12
SHAPES = ((HIDDEN, 3 * HIDDEN), (HIDDEN, HIDDEN), (HIDDEN, FFN), (FFN, HIDDEN))  # in × out, a layer


def flops(tokens: int) -> int:
    return 2 * tokens * LAYERS * sum(a * b for a, b in SHAPES)


def arms(rng: np.random.Generator) -> dict:
    """Each form's product: ``x`` (tokens × in) by one layer's weight number ``i``."""
    f32 = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    bf16 = [numkong.dots_pack(numkong.astype(np.ascontiguousarray(w.T), "bf16"), dtype="bf16") for w in f32]
    i8 = [numkong.dots_pack(rng.integers(-127, 127, (s[1], s[0]), dtype=np.int8)) for s in SHAPES]
    return {
        "float32": (lambda x, i: x @ f32[i], np.float32),
        "bfloat16": (lambda x, i: np.asarray(numkong.dots_packed(numkong.astype(x, "bf16"), bf16[i])), np.float32),
        "int8": (lambda x, i: np.asarray(numkong.dots_packed(x, i8[i])), np.int8),
    }


def cpu_ms(product, inputs: list[np.ndarray], repeat: int) -> float:
    """Median thread CPU of all 12 layers' products, over ``repeat`` passes."""
    runs = []
    for _ in range(repeat):
        started = time.thread_time()
        for _ in range(LAYERS):
            for i, x in enumerate(inputs):
                product(x, i)
        runs.append((time.thread_time() - started) * 1000)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", default="16,32,70,120", help="query lengths (70: MADial's median joined turns)")
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"e5-small's products only, thread CPU median of {args.repeat}; load {os.getloadavg()[0]:.1f}")
    print("| tokens | float32 ms | bfloat16 ms | int8 ms | int8 G ops/s |")
    print("|---:|---:|---:|---:|---:|")
    forms = arms(rng)
    for tokens in (int(t) for t in args.tokens.split(",")):
        cells = []
        for product, dtype in forms.values():
            if dtype is np.int8:
                inputs = [rng.integers(-127, 127, (tokens, s[0]), dtype=np.int8) for s in SHAPES]
            else:
                inputs = [rng.standard_normal((tokens, s[0])).astype(np.float32) for s in SHAPES]
            cells.append(cpu_ms(product, inputs, args.repeat))
        print(f"| {tokens} | " + " | ".join(f"{c:.2f}" for c in cells) + f" | {flops(tokens) / cells[-1] / 1e6:.0f} |",
              flush=True)


if __name__ == "__main__":
    main()
