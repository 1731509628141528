"""What the static tier's vector adds cost the caller through a tenant's first documents (issue 28,
round fourteen): ``VectorIndex.add`` of static-tier batches of 5,000 (``bench/api.py``'s events) in
exact mode (float16 unit rows), the add that switches to graph mode (the first 20,000 rows turned
into int8 codes), then graph mode (``add_codes``). Thread CPU a document, median of the rounds.

    .venv/bin/python bench/exact_adds.py
    .venv/bin/python bench/exact_adds.py --arms base=/tmp/base/.venv/bin/python,new=.venv/bin/python

``--arms`` runs this script under each interpreter in turn (rounds interleaved: the machine is
shared), from a neutral folder so each arm imports its own checkout, and prints each arm's medians
and the ratio to the first.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import subprocess
import time
from pathlib import Path

BATCH = 5_000


def one_round(batches: int) -> dict[str, float]:
    """Thread-CPU µs a document of each phase's adds (one fresh index)."""
    import numpy as np

    from hindbrain.recall.static import default_static
    from hindbrain.recall.vectors import VectorIndex

    spec = importlib.util.spec_from_file_location("bench_api", Path(__file__).parent / "api.py")
    api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(api)
    rng = random.Random(batches)
    texts = [e.get("text") or e.get("action") or "" for e in (api.event(rng, n) for n in range(batches * BATCH))]
    static = default_static()
    index = VectorIndex(static.dim)
    spent: dict[str, list[float]] = {"exact": [], "switch": [], "graph": []}
    for b in range(batches):
        keys = np.arange(b * BATCH, (b + 1) * BATCH, dtype=np.int64)
        part = texts[b * BATCH : (b + 1) * BATCH]
        graph = index.takes_codes()
        rows = None if graph else static.embed_passages(part)
        codes = static.embed_codes(part)[0] if graph else None
        cpu = time.thread_time()
        if graph:
            index.add_codes(keys, codes, defer_graph=True)
        else:
            index.add(keys, rows, defer_graph=True, unit=True)
        cost = (time.thread_time() - cpu) / BATCH * 1e6
        spent["graph" if graph else "switch" if index.takes_codes() else "exact"].append(cost)
    return {phase: statistics.fmean(costs) for phase, costs in spent.items() if costs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=6, help="batches of 5,000 (the switch comes after 20,000)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--arms", default="", help="name=python,... : run each interpreter, rounds interleaved")
    ap.add_argument("--json", action="store_true", help="(internal) one round, printed as JSON")
    args = ap.parse_args()
    if args.json:
        print(json.dumps(one_round(args.batches)))
        return
    arms = [a.split("=", 1) for a in args.arms.split(",")] if args.arms else [["this", None]]
    results: dict[str, list[dict]] = {name: [] for name, _ in arms}
    for _ in range(args.rounds):
        for name, python in arms:
            if python is None:
                results[name].append(one_round(args.batches))
                continue
            out = subprocess.run([python, str(Path(__file__).resolve()), "--json", "--batches", str(args.batches)],
                                 cwd="/", capture_output=True, text=True, check=True).stdout
            results[name].append(json.loads(out.strip().splitlines()[-1]))
    first = arms[0][0]
    print(f"VectorIndex adds of static-tier batches of {BATCH:,}: thread CPU us a document, median of {args.rounds}")
    for name, rounds in results.items():
        cells = []
        for phase in ("exact", "switch", "graph"):
            mine = statistics.median(r[phase] for r in rounds)
            base = statistics.median(r[phase] for r in results[first])
            cells.append(f"{phase} {mine:6.2f} (x{mine / base:.2f})")
        print(f"  {name:<8} " + "   ".join(cells))


if __name__ == "__main__":
    main()
