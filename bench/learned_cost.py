"""What the learned fusion (recall.learned) costs a recall: one brain, two engines over the same
index — the fused pool as it was, and the same pool re-ordered by the trees — alternated per
question, so both arms see the same load. Prints median wall and CPU per recall and the
median of the per-question ratios (learned ÷ fused).

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/learned_cost.py [--sets conv-en,madial-en]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fusion_fit  # noqa: E402
import quality  # noqa: E402

from hindbrain.recall.engine import RecallEngine  # noqa: E402
from hindbrain.recall.query import build_query  # noqa: E402
from hindbrain.recall.scoring import PRESETS  # noqa: E402
from hindbrain.schemas.api import RecallInput  # noqa: E402
from hindbrain.schemas.records import now_us  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="madial-zh,madial-en,conv-en")
    ap.add_argument("--limit", type=int, default=150, help="questions per set")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    sets = [fusion_fit.prefixed(quality.SETS[n](), n) for n in args.sets.split(",")]
    everything = quality.DataSet("all", [e for d in sets for e in d.events], [])
    with tempfile.TemporaryDirectory() as home:
        brain = quality.build(everything, Path(home))
        try:
            arms = {"fused": RecallEngine(brain.index, PRESETS["fused"], learned=False),
                    "learned": RecallEngine(brain.index, PRESETS["fused"], learned=True)}
            queries = [build_query(RecallInput(tenant=q.tenant, agent=d.agent, query=q.query, k=10,
                                               budget_tokens=100000, layers=["episodic"]), now_us())
                       for d in sets for q in d.questions[: args.limit]]
            for q in queries[:20]:  # warm: the query vectors cached, as in an agent's loop
                for engine in arms.values():
                    engine.recall(q)
            wall = {a: [] for a in arms}
            cpu = {a: [] for a in arms}
            ratio = []
            for r in range(args.rounds):
                for n, q in enumerate(queries):
                    order = list(arms) if (n + r) % 2 == 0 else list(arms)[::-1]
                    took = {}
                    for a in order:
                        c, w = time.process_time(), time.perf_counter()
                        arms[a].recall(q)
                        took[a] = time.perf_counter() - w
                        wall[a].append(took[a] * 1e3)
                        cpu[a].append((time.process_time() - c) * 1e3)
                    ratio.append(took["learned"] / took["fused"])
        finally:
            brain.close()
    for a in arms:
        print(f"{a:8} recall wall p50 {statistics.median(wall[a]):.2f} ms, p99 "
              f"{statistics.quantiles(wall[a], n=100)[98]:.2f} ms; CPU p50 {statistics.median(cpu[a]):.2f} ms")
    print(f"learned / fused, median of {len(ratio)} per-question ratios: ×{statistics.median(ratio):.3f}")


if __name__ == "__main__":
    main()
