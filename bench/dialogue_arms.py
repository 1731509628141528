"""Arms of a dialogue recall, through ``Brain.recall`` on the dialogue sets' tuning questions (MADial's
tuning halves and ``dial-*``: 360 dialogues), each paired with the first arm question by question
(docs/recall-quality.md, round twenty-eight (dialogues)).

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/dialogue_arms.py \\
        --arms default,decay:1,late:0.5/0.4/0.1,hedge:1/0.7,semantic,semantic+decay:1

One brain a set, every arm in it (the same memory vectors); an arm is a setting changed for its
recalls and put back. Arms (``+`` joins several):

* ``default`` — the product as it is;
* ``decay:D`` — the turns weighed ``D`` ** age in the late interaction's turn mean (the product's 0.5,
  ``channels.TURN_DECAY``);
* ``late:J/B/M[/D]`` — the late interaction's weights on the joined view, the best turn and the turns'
  mean (and the decay);
* ``e5w:W`` — e5's weight in the dialogue mix (USE's 1; the trees stay those filed for the shipped mix);
* ``pool:N`` — the pool the trees re-order; ``notrees`` — the fused order;
* ``views:N`` — the user's most recent turns embedded as views of their own;
* ``hedge:K/W`` — a dialogue hedged as a question is (``learned.hedge``, k and weight);
* ``unpooled:0|1`` — the hedge's item the trees never pooled at the semantic weight alone (0) or with the
  trees' too (1, ``learned.HEDGE_UNPOOLED_WHOLE``);
* ``prf:M/B`` — e5's cue moved toward its M best memories by B (pseudo-relevance feedback);
* ``semantic`` — "semantic alone" (``quality.alone``), what ``bench/quality.py`` prints.

Printed: R@1 / R@5 / R@10 per set, the mean R@5 over the sets, and the arm's R@5 minus the first
arm's, per question, mean ± standard error over all the questions. Deterministic for one build.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from hindbrain.recall import channels, dialogue, e5_dialogue, learned  # noqa: E402
from hindbrain.recall.engine import RecallEngine, _DialogueMix  # noqa: E402

SETS = ("madial-zh", "madial-en", "dial-zh", "dial-en")


@contextlib.contextmanager
def patched(owner, name: str, value):
    """``owner.name`` set to ``value`` inside the block, put back after."""
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


def late_weights(joined: float, best: float, mean: float, decay: float = channels.TURN_DECAY):
    """``channels.late_interaction`` with other weights on its three parts and another turn decay
    (the sets' queries are all dialogues: every late interaction of their recalls is a dialogue's)."""
    def late(cosines):
        if cosines.shape[1] == 1:
            return cosines[:, 0]
        turns = cosines[:, 1:]
        weights = np.array([decay ** (turns.shape[1] - 1 - i) for i in range(turns.shape[1])], np.float32)
        with np.errstate(invalid="ignore"):
            return joined * cosines[:, 0] + best * turns.max(axis=1) + mean * (turns @ weights / weights.sum())
    return late


def feedback(best: int, beta: float):
    """``_DialogueMix.e5_cosines`` with e5's cue moved toward its ``best`` nearest memories of the
    recall's first candidates by ``beta`` (the moved cue kept for the recall's later candidates)."""
    def e5_cosines(self, rows):
        moved = getattr(self, "_moved", None)
        if moved is None:
            cue = self._query.result()
            if not len(rows):
                return rows @ cue
            top = np.argsort(-(rows @ cue))[:best]
            moved = cue + beta * rows[top].mean(axis=0)
            self._moved = moved = moved / np.linalg.norm(moved)
        return rows @ moved
    return e5_cosines


def arm(name: str, brain) -> contextlib.AbstractContextManager:
    """The setting ``name`` names (the module docstring), as a context."""
    if "+" in name:
        stack = contextlib.ExitStack()
        for part in name.split("+"):
            stack.enter_context(arm(part, brain))
        return stack
    kind, _, value = name.partition(":")
    numbers = [float(v) for v in value.split("/")] if value else []
    if kind == "default":
        return contextlib.nullcontext()
    if kind == "semantic":
        return patched(brain, "engine", RecallEngine(brain.index, quality.alone("semantic")))
    if kind == "decay":
        return patched(channels, "late_interaction", late_weights(0.5, 0.25, 0.25, numbers[0]))
    if kind == "late":
        return patched(channels, "late_interaction", late_weights(*numbers))
    if kind == "e5w":
        return patched(e5_dialogue, "E5_WEIGHT", numbers[0])
    if kind == "pool":
        return patched(brain.engine, "pool", int(numbers[0]))
    if kind == "notrees":
        return patched(brain.engine, "learned", False)
    if kind == "views":
        return patched(dialogue, "MAX_TURN_VIEWS", int(numbers[0]))
    if kind == "prf":
        return patched(_DialogueMix, "e5_cosines", feedback(int(numbers[0]), numbers[1]))
    if kind == "hedge":
        stack = contextlib.ExitStack()
        stack.enter_context(patched(learned, "hedges", lambda q: os.environ.get("HINDBRAIN_HEDGE", "1") != "0"))
        stack.enter_context(patched(learned, "HEDGE_K", numbers[0]))
        stack.enter_context(patched(learned, "HEDGE_WEIGHT", numbers[1]))
        return stack
    if kind == "unpooled":
        return patched(learned, "HEDGE_UNPOOLED_WHOLE", bool(numbers[0]))
    raise SystemExit(f"unknown arm {name!r} (see --help)")


def measure(sets: list[str], arms: list[str], half: str) -> dict[tuple[str, str], list[dict[int, float]]]:
    """(set, arm) → each question's R@k."""
    out = {}
    for name in sets:
        data = quality.load(name)
        questions = data.half(half)
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            try:
                for a in arms:
                    with arm(a, brain):
                        out[(name, a)] = quality.through_recall(brain, data, questions)[0]
            finally:
                brain.close()
        print(f"{name}: {len(questions)} questions", flush=True)
    return out


def report(sets: list[str], arms: list[str], got: dict) -> None:
    print(f"\n| arm | {' | '.join(sets)} | mean R@5 | R@5 − {arms[0]}, per question |")
    print("|---|" + "---:|" * (len(sets) + 1) + "---|")
    first = [r[5] for s in sets for r in got[(s, arms[0])]]
    for a in arms:
        rows = [quality.mean_recalls(got[(s, a)]) for s in sets]
        diff = [100 * (r[5] - f) for r, f in zip((r for s in sets for r in got[(s, a)]), first, strict=True)]
        se = statistics.stdev(diff) / len(diff) ** 0.5
        cells = " | ".join(f"{r[1]:.1f} / {r[5]:.1f} / {r[10]:.1f}" for r in rows)
        print(f"| {a} | {cells} | {statistics.fmean(r[5] for r in rows):.2f} | "
              f"{statistics.fmean(diff):+.2f} ± {se:.2f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arms", default="default", help="comma-separated (the first is the one paired against)")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--half", default="tuning", choices=("tuning", "heldout", "all"))
    args = ap.parse_args()
    sets, arms = args.sets.split(","), args.arms.split(",")
    report(sets, arms, measure(sets, arms, args.half))


if __name__ == "__main__":
    main()
