"""The dialogue's semantic feedback (``channels.with_feedback``: each candidate's cosine to the
best memory added to its late-interaction cosine) through ``Brain.recall`` on MADial, arms in
one brain per language: the default engine (learned trees on) with ``channels.FEEDBACK`` set per
arm, and the semantic channel alone with and without it (the "never below its best single
channel" target). Per arm and language: R@5 on the half, the questions better / worse than the
first arm, and the calling thread's CPU time a recall (the arms alternated per question, so
the load they see is the same). Choose on ``--half tuning``; report ``--half heldout`` once.

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/madial_feedback.py --half tuning --weights 0,0.1
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

from hindbrain.recall import channels  # noqa: E402
from hindbrain.recall.engine import RecallEngine  # noqa: E402


def one(brain, data: quality.DataSet, q: quality.Question) -> tuple[float, float]:
    """(R@5, thread CPU ms) of one question through ``Brain.recall`` as the harness calls it."""
    start = time.thread_time()
    pack = brain.recall(tenant=q.tenant, agent=data.agent, query=q.query, layers=["episodic"], k=10,
                        budget_tokens=100000)
    cpu = (time.thread_time() - start) * 1000
    ranked = list(dict.fromkeys(e for item in pack.items for e in (item.event_ids or [item.id])))
    return quality.recall_at(q.gold, ranked)[5], cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half", default="tuning", choices=("tuning", "heldout", "all"))
    ap.add_argument("--madial", type=Path, default=quality.MADIAL)
    ap.add_argument("--weights", default="0,0.1", help="comma-separated feedback weights (the first is the base)")
    ap.add_argument("--rounds", type=int, default=2, help="passes over the questions (CPU medians over all)")
    args = ap.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    arms = [(f"default, feedback {w:g}", w, None) for w in weights]
    arms += [(f"semantic alone, feedback {w:g}", w, "semantic") for w in dict.fromkeys((weights[0], weights[-1]))]
    r5 = {name: {} for name, _, _ in arms}
    cpu = {name: {} for name, _, _ in arms}
    signs = {name: {} for name, _, _ in arms}
    for lang in ("zh", "en"):
        data = quality.madial(lang, args.madial)
        questions = data.half(args.half)
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            engines = {name: RecallEngine(brain.index, quality.alone(ch) if ch else None) for name, _, ch in arms}
            got = {name: [] for name, _, _ in arms}
            took = {name: [] for name, _, _ in arms}
            try:
                for rnd in range(args.rounds):
                    for i, q in enumerate(questions):
                        turn = arms[i % len(arms):] + arms[: i % len(arms)]  # rotate the first arm
                        for name, w, _ in turn:
                            channels.FEEDBACK = w
                            brain.engine = engines[name]
                            r, c = one(brain, data, q)
                            took[name].append(c)
                            if rnd == 0:
                                got[name].append(r)
            finally:
                brain.close()
        base = got[arms[0][0]]
        for name, _, _ in arms:
            r5[name][lang] = 100 * statistics.fmean(got[name])
            cpu[name][lang] = statistics.median(took[name])
            signs[name][lang] = (sum(a > b for a, b in zip(got[name], base, strict=True)),
                                 sum(a < b for a, b in zip(got[name], base, strict=True)))
    print(f"| arm ({args.half}, R@5) | zh | en | better / worse than `{arms[0][0]}`, zh; en "
          "| CPU p50 ms a recall, zh / en |")
    print("|---|---:|---:|---|---|")
    for name, _, _ in arms:
        s = "; ".join(f"{a} / {b}" for a, b in (signs[name][lang] for lang in ("zh", "en")))
        print(f"| {name} | {r5[name]['zh']:.1f} | {r5[name]['en']:.1f} | {s} | "
              f"{cpu[name]['zh']:.2f} / {cpu[name]['en']:.2f} |")


if __name__ == "__main__":
    main()
