"""Do full garbage collections grow with what a brain indexed? With and without the Refreezer.

    python bench/gc_growth.py [--events 30000] [--probes 5]

Through ``Brain.open`` with defaults and ``perceive_many`` in batches of 5,000 (``bench/api.py``'s
events). After each batch it times ``--probes`` explicit full collections (``gc.collect()``: what an
automatic one costs the thread it lands on) and prints their median. The same run is repeated
with the ``Refreezer`` listener taken out (the old behaviour: only what existed at ``Brain.open``
is frozen), in this process, so the ratio of the last to the first batch compares the two
under the same load. Target: the refrozen brain's full collection does not grow with the data.
"""

from __future__ import annotations

import argparse
import gc
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from api import event  # noqa: E402  (a bench beside this one: the same events)

from hindbrain.brain import Brain  # noqa: E402
from hindbrain.streams.gc_pause import Refreezer  # noqa: E402

BATCH = 5_000


def full_collection_ms(probes: int) -> float:
    spent = []
    for _ in range(probes):
        t = time.perf_counter()
        gc.collect()
        spent.append(1000 * (time.perf_counter() - t))
    return statistics.median(spent)


def run(events: int, probes: int, refreeze: bool) -> list[float]:
    """Median full-collection ms after each batch of ``BATCH`` events."""
    folder = Path(tempfile.mkdtemp(prefix="hb-gc-"))
    rng = random.Random(7)
    try:
        with Brain.open(folder / "brain") as brain:
            if not refreeze:
                brain.runner.listeners[:] = [f for f in brain.runner.listeners if not isinstance(f, Refreezer)]
            out = []
            for start in range(0, events, BATCH):
                brain.perceive_many([event(rng, n) for n in range(start, start + BATCH)])
                out.append(full_collection_ms(probes))
            return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=30_000)
    ap.add_argument("--probes", type=int, default=5)
    args = ap.parse_args()
    rows = {"without Refreezer (old)": run(args.events, args.probes, refreeze=False),
            "with Refreezer (default)": run(args.events, args.probes, refreeze=True)}
    print(f"full collection, median of {args.probes} (ms), after each batch of {BATCH:,} events:")
    for label, values in rows.items():
        print(f"{label:<26}" + " ".join(f"{v:7.1f}" for v in values) + f"   last/first {values[-1] / values[0]:.2f}")


if __name__ == "__main__":
    main()
