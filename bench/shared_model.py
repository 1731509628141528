"""Brains with the default embedder opened one after another in one process: a model each
(before) against the process's one shared model (now), same process.

A brain's semantic channel embeds its first query with USE in-process; before, every brain
built its own ``UseEmbedder`` and so loaded the weights and parsed the 128,000-piece
tokenizer again (issue 31, point 7: a test worker or a server opens many brains). Each arm
opens a brain on a new folder, perceives one event, recalls once and closes; arms alternate
after one warm-up brain each. Prints medians (CPU of this process and its children, wall)
and the ratio.

    python bench/shared_model.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from open_brain import before_and_now  # noqa: E402

from hindbrain import Brain  # noqa: E402
from hindbrain.recall import embed  # noqa: E402


def cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def one_brain(model_per_brain: bool) -> tuple[float, float]:
    """(CPU s, wall s) of open, perceive, recall, close with the default embedder."""
    shared = embed._FACTORIES["use"]
    if model_per_brain:  # what embedder_from_name("use") did before: a new, unloaded model
        embed._FACTORIES["use"] = embed.UseEmbedder
    try:
        with tempfile.TemporaryDirectory(prefix="shared-model-") as home:
            c, w = cpu(), time.perf_counter()
            with Brain.open(home) as brain:
                brain.perceive(tenant="acme", text="clicked submit, nothing happened")
                brain.recall(tenant="acme", query="the submit button does nothing")
            return cpu() - c, time.perf_counter() - w
    finally:
        embed._FACTORIES["use"] = shared


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    one_brain(False), one_brain(True)  # imports, the embed worker, the shared model's one load
    before_and_now(one_brain, args.repeats, ("a model per brain (before)", "one model per process (now)"), "s")

if __name__ == "__main__":
    main()
