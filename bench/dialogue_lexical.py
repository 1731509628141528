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


def r_at_5(brain, data: quality.DataSet, questions: list[quality.Question], fusion: Fusion) -> float:
    """R@5 through ``Brain.recall`` with ``fusion`` as the brain's engine."""
    brain.engine = RecallEngine(brain.index, fusion)
    return quality.mean_recalls(quality.through_recall(brain, data, questions)[0])[5]


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
    args = ap.parse_args()
    r5: dict[str, dict[str, float]] = {f"{w:g}": {} for w in WEIGHTS}
    channels: dict[str, dict[str, float]] = {}
    for lang in ("zh", "en"):
        data = quality.madial(lang, args.madial)
        questions = data.half(args.half)
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            try:
                channels[lang] = {ch: r_at_5(brain, data, questions, quality.alone(ch))
                                  for ch in ("lexical", "semantic")}
                for w in WEIGHTS:
                    r5[f"{w:g}"][lang] = r_at_5(brain, data, questions, with_dialogue_lexical(w))
            finally:
                brain.close()
    print(f"| dialogue lexical weight ({args.half}, R@5) | zh | en | worst margin to the best channel |")
    print("|---|---:|---:|---:|")
    for w, cells in r5.items():
        margin = min(cells[lang] - max(channels[lang].values()) for lang in channels)
        print(f"| {w} | {cells['zh']:.1f} | {cells['en']:.1f} | {margin:+.1f} |")
    for ch in ("lexical", "semantic"):
        print(f"| {ch} alone | {channels['zh'][ch]:.1f} | {channels['en'][ch]:.1f} | |")
    print(f"chosen by the worst margin: {choose(r5, channels):g}")


if __name__ == "__main__":
    main()
