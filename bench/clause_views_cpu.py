"""What the two extra views of a described-person question (``recall.indirect.described_clauses``)
cost at the embedder, uncached: a question a user asks once is not in the query cache. For each
held-out described question of the hard sets, the brain's embedder embeds the question alone and
the question with its two parts (one call, as ``Brain.recall`` does), interleaved with the order
alternating, timed with ``time.process_time`` (the process's CPU: the wall clock on a shared
machine measures the neighbours). Prints each arm's median and p90 (ms) and the median ratio.

    .venv/bin/python bench/clause_views_cpu.py --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from hindbrain import Brain  # noqa: E402
from hindbrain.recall.indirect import described_clauses  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    questions = [q.query for name in ("hard-en", "hard-zh") for q in quality.SETS[name]().half("heldout")
                 if described_clauses(q.query)]
    with tempfile.TemporaryDirectory() as home:
        brain = Brain.open(Path(home))
        embedder = brain.index.semantic.embedder
        embedder.embed_queries(["warm up"])
        cpu = {"one view": [], "three views": []}
        for r in range(args.rounds):
            for n, q in enumerate(questions):
                arms = (("one view", [q]), ("three views", [q, *described_clauses(q)]))
                for arm, texts in (arms if (n + r) % 2 else arms[::-1]):
                    start = time.process_time()
                    embedder.embed_queries(texts)
                    cpu[arm].append((time.process_time() - start) * 1000)
        brain.close()
    med = {a: statistics.median(v) for a, v in cpu.items()}
    p90 = {a: statistics.quantiles(v, n=10)[8] for a, v in cpu.items()}
    print(f"{len(questions)} described questions x {args.rounds} rounds ({embedder.name}): CPU ms an embedder call, "
          f"median (p90): one view {med['one view']:.3f} ({p90['one view']:.3f}), three views "
          f"{med['three views']:.3f} ({p90['three views']:.3f}); ratio x{med['three views'] / med['one view']:.3f}")


if __name__ == "__main__":
    main()
