"""Indirect questions (``recall.indirect``): ``Brain.recall`` with defaults, with the indirect
question's lexical scaling (``Fusion.indirect_lexical``) at each of ``--grid`` against without it
(1.0: the weights of before), in one process over the same brain, question by question
interleaved (which arm goes first alternates: a query's second recall finds its vector cached),
so the shared machine's drift hits every arm alike. Prints R@5 per half and question type (the
semantic channel alone beside it: what "never below its best single channel" compares with),
how many questions the detector marked, and each arm's latency (p50 / p99, ratio to 1.0).

    .venv/bin/python bench/indirect_ab.py --sets hard-en,hard-zh,conv-en,conv-zh --grid 0,0.1,0.3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from hindbrain.recall.engine import RecallEngine  # noqa: E402
from hindbrain.recall.indirect import indirect  # noqa: E402
from hindbrain.recall.scoring import PRESETS  # noqa: E402


def one(brain, data, q) -> tuple[dict[int, float], float]:
    start = time.perf_counter()
    pack = brain.recall(tenant=q.tenant, agent=data.agent, query=q.query, k=10, budget_tokens=100000,
                        layers=["episodic"])
    took = (time.perf_counter() - start) * 1000
    ranked = list(dict.fromkeys(e for item in pack.items for e in (item.event_ids or [item.id])))
    return quality.recall_at(q.gold, ranked), took


def interleaved(brain, data, questions: list, arms: list, set_arm) -> tuple[dict, dict]:
    """Each question asked once per arm (``set_arm(arm)`` switches to it), the arms' order rotated
    question by question so the machine's drift falls on every arm alike. Returns arm → the
    questions' recalls (``quality.recall_at``), and arm → their recall times (ms)."""
    got: dict = {a: [] for a in arms}
    took: dict = {a: [] for a in arms}
    for n, q in enumerate(questions):
        for a in arms[n % len(arms):] + arms[: n % len(arms)]:
            set_arm(a)
            r, t = one(brain, data, q)
            got[a].append(r)
            took[a].append(t)
    return got, took


def row(label: str, got: list[dict[int, float]], questions: list, cats: list[str]) -> None:
    """R@5 over the half and by question type, as a table row."""
    by = [quality.mean_recalls([r for q, r in zip(questions, got, strict=True) if q.category == c])[5] for c in cats]
    print(f"| {label} | {quality.mean_recalls(got)[5]:.1f} | " + " | ".join(f"{b:.1f}" for b in by) + " |")


def gold_table(title: str, questions: list, arms: list, got: dict) -> None:
    """Each arm's R@5 (and the share of questions with all gold in the top 5) over the half and by
    question type, as a table under ``title`` (``got``: arm → each question's recalls)."""
    cats = sorted({q.category for q in questions})
    print(f"\n### {title}: {len(questions)} questions; R@5 (all gold in the top 5, %)")
    print("| arm | all | " + " | ".join(cats) + " |")
    for a in arms:
        cells = []
        for c in [None, *cats]:
            rs = [r for q, r in zip(questions, got[a], strict=True) if c is None or q.category == c]
            cells.append(f"{quality.mean_recalls(rs)[5]:.1f} ({quality.all_gold(rs):.0f})")
        print(f"| {a} | " + " | ".join(cells) + " |", flush=True)


def latency(took: dict, label=str) -> None:
    """Each arm's p50, p99 and p50 ratio to the first arm's (``took``: arm → recall times, ms)."""
    base = statistics.median(next(iter(took.values())))
    for arm, times in took.items():
        p50, p99 = statistics.median(times), statistics.quantiles(times, n=100)[98]
        print(f"  latency {label(arm)}: p50 {p50:.2f} ms, p99 {p99:.2f} ms, p50 ratio x{p50 / base:.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="hard-en,hard-zh,conv-en,conv-zh")
    ap.add_argument("--grid", default="0,0.1,0.3", help="indirect_lexical values to compare with 1.0")
    ap.add_argument("--half", default="both", choices=("tuning", "heldout", "both"))
    args = ap.parse_args()
    values = [1.0, *(float(v) for v in args.grid.split(",") if float(v) != 1.0)]
    fused = PRESETS["fused"]
    for name in args.sets.split(","):
        data = quality.SETS[name]()
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            engines = {v: RecallEngine(brain.index, replace(fused, indirect_lexical=v)) for v in values}
            semantic = RecallEngine(brain.index, quality.alone("semantic"))
            halves = ("tuning", "heldout") if args.half == "both" else (args.half,)
            for half in halves:
                questions = data.half(half)
                got = {v: [] for v in values}
                took = {v: [] for v in values}
                for n, q in enumerate(questions):
                    order = values if n % 2 == 0 else values[::-1]
                    for v in order:
                        brain.engine = engines[v]
                        r, t = one(brain, data, q)
                        got[v].append(r)
                        took[v].append(t)
                brain.engine = semantic
                alone = [one(brain, data, q)[0] for q in questions]
                marked = sum(indirect(q.query) for q in questions)
                print(f"\n### {name}, {half} half: {len(questions)} questions, {marked} marked indirect")
                print("| ranking | R@5 | " + " | ".join(sorted({q.category for q in questions})) + " |")
                cats = sorted({q.category for q in questions})

                for v in values:
                    row(f"indirect_lexical {v}", got[v], questions, cats)
                row("semantic channel alone", alone, questions, cats)
                latency(took, lambda v: f"indirect_lexical {v}")
            brain.close()


if __name__ == "__main__":
    main()
