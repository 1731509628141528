"""An ensemble's members given an equal say per recall (``recall.members``) against their fixed
mix (``EnsembleEmbedder``'s weights alone): ``Brain.recall`` with defaults under each arm, in one
process over the same brain, question by question interleaved (which arm goes first rotates: a
query's second recall finds its vectors cached), so the machine's drift hits both arms alike.
Prints R@5 (and all gold in the top 5) per half and question type, the semantic channel alone
under each arm beside it, and each arm's latency.

    HINDBRAIN_EMBEDDER=use+e5 .venv/bin/python bench/members_ab.py --sets madial-zh,madial-en \\
        --madial ../shared/eval-data/madial-bench/derived

With a single-model embedder both arms are the same ranking (a check of the bench itself).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402
from indirect_ab import one, row  # noqa: E402

from hindbrain.recall.engine import RecallEngine  # noqa: E402

ARMS = ("fixed mix", "equal members")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="madial-zh,madial-en")
    ap.add_argument("--half", default="both", choices=("tuning", "heldout", "both"))
    ap.add_argument("--madial", type=Path, default=quality.MADIAL)
    args = ap.parse_args()
    for name in args.sets.split(","):
        data = quality.madial(name.split("-")[1], args.madial) if name.startswith("madial-") else quality.SETS[name]()
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            print(f"\n## {name}: embedder {brain.index.semantic.embedder.name}", flush=True)
            default = brain.engine
            semantic = RecallEngine(brain.index, quality.alone("semantic"))
            for half in (("tuning", "heldout") if args.half == "both" else (args.half,)):
                questions = data.half(half)
                got = {a: [] for a in ARMS}
                took = {a: [] for a in ARMS}
                alone = {a: [] for a in ARMS}
                for n, q in enumerate(questions):
                    for a in ARMS[n % 2:] + ARMS[: n % 2]:
                        default.equal_members = semantic.equal_members = a == "equal members"
                        brain.engine = default
                        r, t = one(brain, data, q)
                        got[a].append(r)
                        took[a].append(t)
                        brain.engine = semantic
                        alone[a].append(one(brain, data, q)[0])
                brain.engine = default
                default.equal_members = True
                cats = sorted({q.category for q in questions})
                print(f"\n### {name}, {half} half: {len(questions)} questions")
                print("| arm | R@5 | " + " | ".join(cats) + " |")
                for a in ARMS:
                    row(a, got[a], questions, cats)
                for a in ARMS:
                    row(f"semantic channel alone, {a}", alone[a], questions, cats)
                base = statistics.median(took[ARMS[0]])
                for a in ARMS:
                    p50, p99 = statistics.median(took[a]), statistics.quantiles(took[a], n=100)[98]
                    print(f"  latency {a}: p50 {p50:.2f} ms, p99 {p99:.2f} ms, p50 ratio x{p50 / base:.2f}", flush=True)
            brain.close()


if __name__ == "__main__":
    main()
