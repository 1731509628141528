"""The dialogue form's lexical weight chosen by the target it serves: fusion never below its best
single channel (design.md §issue-30), through ``Brain.recall`` on MADial.

For each weight (the ``fused`` preset with only the dialogue end's lexical weight changed) and for
each channel alone, R@5 of every language on one half; then, per weight, its **margin**: fused
R@5 minus the better single channel's, per language. The weight chosen is the one whose worst
margin over the languages is highest, ties broken by the mean R@5 (``choose``): a rule that only
picks a weight never below the channels on the tuning halves when one exists. Run on the tuning
half to choose; on the held-out half only to report.

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/dialogue_lexical.py --half tuning
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from hindbrain.recall.engine import RecallEngine  # noqa: E402
from hindbrain.recall.scoring import PRESETS, Fusion  # noqa: E402

WEIGHTS = (0.0, 0.025, 0.05, 0.075, 0.1, 0.15)


def with_dialogue_lexical(w: float) -> Fusion:
    base = PRESETS["fused"]
    return replace(base, name=f"fused, dialogue lexical {w:g}", dialogue=replace(base.dialogue, lexical=w))


def per_question(brain, data: quality.DataSet, questions: list[quality.Question], fusion: Fusion) -> list[float]:
    """Each question's R@5 through ``Brain.recall`` with ``fusion`` as the brain's engine."""
    brain.engine = RecallEngine(brain.index, fusion)
    return [r[5] for r in quality.through_recall(brain, data, questions)[0]]


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test p-value of ``wins`` against ``losses`` (ties left out)."""
    n = wins + losses
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2 ** n if n else 1.0
    return min(1.0, 2 * tail)


def choose(r5: dict[str, dict[str, float]], channels: dict[str, dict[str, float]]) -> float:
    """The weight with the highest worst margin over the languages (fused R@5 − the best single
    channel's), ties within 1e-9 broken by the mean R@5, then by the smaller weight."""
    langs = list(channels)

    def key(w: str):
        margin = min(r5[w][lang] - max(channels[lang].values()) for lang in langs)
        return (round(margin, 9), round(sum(r5[w][lang] for lang in langs) / len(langs), 9), -float(w))
    return float(max(r5, key=key))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half", default="tuning", choices=("tuning", "heldout", "all"))
    ap.add_argument("--madial", type=Path, default=quality.MADIAL)
    ap.add_argument("--weights", default=",".join(f"{w:g}" for w in WEIGHTS), help="comma-separated weights to try")
    args = ap.parse_args()
    weights = [float(w) for w in args.weights.split(",")]
    r5: dict[str, dict[str, float]] = {f"{w:g}": {} for w in weights}
    channels: dict[str, dict[str, float]] = {}
    against: dict[str, dict[str, tuple[int, int]]] = {f"{w:g}": {} for w in weights}  # vs semantic alone
    for lang in ("zh", "en"):
        data = quality.madial(lang, args.madial)
        questions = data.half(args.half)
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            try:
                each = {ch: per_question(brain, data, questions, quality.alone(ch)) for ch in ("lexical", "semantic")}
                channels[lang] = {ch: 100 * statistics.fmean(v) for ch, v in each.items()}
                for w in weights:
                    got = per_question(brain, data, questions, with_dialogue_lexical(w))
                    r5[f"{w:g}"][lang] = 100 * statistics.fmean(got)
                    pairs = list(zip(got, each["semantic"], strict=True))
                    against[f"{w:g}"][lang] = (sum(a > b for a, b in pairs), sum(a < b for a, b in pairs))
            finally:
                brain.close()
    print(f"| dialogue lexical weight ({args.half}, R@5) | zh | en | worst margin to the best channel | "
          "questions better / worse than semantic alone, zh; en (sign test p) |")
    print("|---|---:|---:|---:|---|")
    for w, cells in r5.items():
        margin = min(cells[lang] - max(channels[lang].values()) for lang in channels)
        signs = "; ".join(f"{a} / {b} (p {sign_test(a, b):.2f})"
                          for a, b in (against[w][lang] for lang in ("zh", "en")))
        print(f"| {w} | {cells['zh']:.1f} | {cells['en']:.1f} | {margin:+.1f} | {signs} |")
    for ch in ("lexical", "semantic"):
        print(f"| {ch} alone | {channels['zh'][ch]:.1f} | {channels['en'][ch]:.1f} | | |")
    print(f"chosen by the worst margin: {choose(r5, channels):g}")


if __name__ == "__main__":
    main()
