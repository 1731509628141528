"""What the gate takes from a conversation recall: gold items cut, per rule and per question category.

For each set's questions (``--half tuning`` by default: choices are made there), every recall runs twice —
as ``bench/quality.py``'s headline row (k 10, a budget that never binds) and at the defaults (k none,
400 tokens) — and the gate's verdict on each gold item that reached it is counted by rule: the relevance
cut (``under … of the best``), the function-words cut, the near-duplicate cut, the budget, the rest.
``--show N`` prints N cut gold items with their scores and reason, to read the classes.

    HINDBRAIN_EVAL_DATA=… .venv/bin/python bench/gate_cuts.py --sets hard3-en,hard3-zh --show 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import quality  # noqa: E402

from hindbrain.recall import engine as engine_module  # noqa: E402
from hindbrain.recall.gate import worth  # noqa: E402

SETS = ("conv-en", "conv-zh", "hard-en", "hard-zh", "hard3-en", "hard3-zh", "madial-zh", "madial-en",
        "hard2-en", "hard2-zh")
MODES = {"k10": {"k": 10, "budget_tokens": 100000}, "default": {}}


def rule_of(stage: str, reason: str) -> str:
    """The gate rule a cut's stage and reason name."""
    if stage == "covered" and "of the best" in reason:
        return "relevance"
    if stage == "covered" and "function words" in reason:
        return "function-words"
    if stage == "budget":
        return "k" if reason.startswith("beyond k=") else "budget"
    return stage


class Watch:
    """Wraps the engine's ``gate`` to keep each recall's judged items (the gate writes its verdict into them)."""

    def __init__(self):
        self.items = []
        self.inner = engine_module.gate

    def __call__(self, items, *args, **kwargs):
        self.items = items
        return self.inner(items, *args, **kwargs)


def measure(name: str, half: str, watch: Watch, show: int, dump: list | None = None) -> dict:
    data = quality.load(name)
    questions = data.half(half)
    counts = {mode: Counter() for mode in MODES}
    by_category = {mode: defaultdict(Counter) for mode in MODES}
    hits = {mode: [] for mode in MODES}
    shown = []
    with tempfile.TemporaryDirectory() as home:
        brain = quality.build(data, Path(home), False)
        try:
            for q in questions:
                for mode, sized in MODES.items():
                    pack = brain.recall(tenant=q.tenant, agent=data.agent, query=q.query, layers=["episodic"],
                                        **sized)
                    ranked = list(dict.fromkeys(e for item in pack.items for e in (item.event_ids or [item.id])))
                    hits[mode].append(quality.recall_at(q.gold, ranked))
                    best = max((i.relevance for i in watch.items), default=0.0)
                    if dump is not None and mode == "k10":
                        dump.append({"set": name, "q": q.qid, "category": q.category, "gold": sorted(q.gold),
                                     "items": [(i.id, i.relevance, worth(i), i.semantic,
                                                None if i.matched is None else len(i.matched), i.stage,
                                                rule_of(i.stage or "?", i.reason), i.doc.tokens)
                                               for i in watch.items]})
                    for place, item in enumerate(watch.items):
                        if item.id not in q.gold:
                            continue
                        rule = "selected" if item.stage == "selected" else rule_of(item.stage or "?", item.reason)
                        counts[mode][rule] += 1
                        by_category[mode][q.category or "-"][rule] += 1
                        if rule not in ("selected", "k") and mode == "default" and len(shown) < show:
                            shown.append((q, place, best, item))
        finally:
            brain.close()
    print(f"\n### {name} ({half}): {len(questions)} questions")
    for mode in MODES:
        r = quality.mean_recalls(hits[mode])
        print(f"  {mode}: R@1 {r[1]:.1f} R@5 {r[5]:.1f} R@10 {r[10]:.1f}; gold items by verdict: "
              + ", ".join(f"{k} {v}" for k, v in sorted(counts[mode].items())))
        for category, c in sorted(by_category[mode].items()):
            cut = {k: v for k, v in c.items() if k not in ("selected", "k")}
            if cut:
                print(f"    {category}: " + ", ".join(f"{k} {v}" for k, v in sorted(cut.items())))
    for q, place, best, item in shown:
        matched = None if item.matched is None else sorted(item.matched)
        print(f"  - [{q.category}] {q.query[:70]!r} → pool place {place}, rel {item.relevance:.3f} "
              f"(best {best:.3f}), semantic {item.semantic:.3f}, matched {matched}, "
              f"{item.doc.tokens} tokens: {item.stage}: {item.reason[:110]}\n      {item.doc.text[:120]!r}")
    return {mode: quality.mean_recalls(hits[mode]) for mode in MODES}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--half", default="tuning", choices=("tuning", "heldout", "all"))
    ap.add_argument("--show", type=int, default=0, help="cut gold items to print per set (default mode)")
    ap.add_argument("--dump", type=Path, help="write each k-10 recall's judged items here (JSON), to read offline")
    args = ap.parse_args()
    dump = [] if args.dump else None
    watch = Watch()
    engine_module.gate = watch
    measured = {name: measure(name, args.half, watch, args.show, dump) for name in args.sets.split(",")}
    for mode in MODES:
        print(f"\n{mode}: mean R@5 over sets "
              f"{statistics.fmean(m[mode][5] for m in measured.values()):.2f}, "
              f"R@10 {statistics.fmean(m[mode][10] for m in measured.values()):.2f}")
    if args.dump:
        args.dump.write_text(json.dumps(dump))


if __name__ == "__main__":
    main()
