"""What the default's e5 for dialogues costs on a large home (issue 30, round eighteen): the e5 tier's
rate on the home's dialogue-kind events, a dialogue-form recall's process CPU p50 / p99 once its
candidates have their e5 vectors, and the resident bytes e5's load adds.

    cp -a /tmp/homes/h100k /tmp/x/h && .venv/bin/python bench/e5_dialogue_cost.py /tmp/x/h [--fill 2000]

Run it on a copy (it writes the e5 vectors into the home's cache). The same script on a checkout
without ``recall.e5_dialogue`` reads the same recalls with USE alone (the A/B's other arm).
Steps: (1) open the home; (2) let the e5 tier embed ``--fill`` queued dialogue-kind texts and read
its thread's CPU per text; (3) stop the tier (so its CPU does not count in a recall's) and run the
dialogue recalls twice: the first pass makes the candidates' missing vectors (at most 128 a recall),
the second is the row (the steady state, every candidate's vector made). Process CPU per recall:
the e5 query runs on a thread of its own, which a thread clock would leave out.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from api import SYMPTOMS, SYSTEMS, TENANT, VERBS, rss_split  # noqa: E402

from hindbrain import Brain  # noqa: E402
from hindbrain.heap_trim import release_free_heap  # noqa: E402

NAMES = ("Ann", "Bo", "Chen", "Dana", "李雷", "韩梅")


def dialogue(rng: random.Random) -> str:
    """A user telling an assistant about a ticket over three turns (``QueryViews.form == "dialogue"``)."""
    who, system, verb, symptom = rng.choice(NAMES), rng.choice(SYSTEMS), rng.choice(VERBS), rng.choice(SYMPTOMS)
    return (f'<{who}>: "I tried to {verb} in {system} this morning."\n<Assistant>: "What happened?"\n'
            f'<{who}>: "It just says {symptom}, and I need it done today."')


def fill_rate(brain, count: int) -> str:
    """The e5 tier's texts per CPU second over its first ``count`` texts: the process's CPU while
    nothing else runs in it (Python 3.11 does not name its threads for ``/proc``, so the semantic
    thread's own clock cannot be read; the rest of the process is idle, so this is an upper bound)."""
    dialogue_vectors = brain.index.semantic.dialogue
    started, cpu, wall = dialogue_vectors.memory_bytes(), time.process_time(), time.monotonic()
    while dialogue_vectors.memory_bytes() - started < count * 768 and dialogue_vectors.queued():
        time.sleep(0.5)
    made = (dialogue_vectors.memory_bytes() - started) // 768
    spent = time.process_time() - cpu
    return (f"e5 tier: {made} texts in {spent:.1f} s of the process's CPU ({made / max(spent, 1e-9):.0f} texts / "
            f"CPU s; wall {time.monotonic() - wall:.0f} s), {dialogue_vectors.queued()} documents still queued")


def recalls(brain, qs: list[str], walls: list[float] | None = None) -> list[float]:
    """Each recall's process CPU (ms); its wall time appended to ``walls`` when given."""
    took = []
    for q in qs:
        started, wall = time.process_time(), time.perf_counter()
        brain.recall(tenant=TENANT, query=q)
        took.append((time.process_time() - started) * 1e3)
        if walls is not None:
            walls.append((time.perf_counter() - wall) * 1e3)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("home", type=Path)
    ap.add_argument("--fill", type=int, default=2000, help="e5 texts to time the tier on (0: skip)")
    ap.add_argument("--recalls", type=int, default=200)
    args = ap.parse_args()
    rng = random.Random(7)
    qs = [dialogue(rng) for _ in range(args.recalls)]
    with Brain.open(args.home) as brain:
        brain.index.semantic.wait()
        semantic = brain.index.semantic
        e5 = getattr(semantic, "dialogue", None)
        release_free_heap()
        before = rss_split()
        if e5 is not None:  # the tier fills a tenant once a dialogue asks of it (as the first recall would)
            semantic.want_dialogue(TENANT)
        if e5 is not None and args.fill:
            print(fill_rate(brain, args.fill), flush=True)
        if e5 is not None:
            semantic.dialogue_texts = None  # the tier stops: a recall's process CPU is its own
            time.sleep(1.0)
        first = recalls(brain, qs)
        release_free_heap()
        after = rss_split()
        walls: list[float] = []
        second = recalls(brain, qs, walls)
        p, w = np.percentile(second, [50, 90, 99]), np.percentile(walls, [50, 90, 99])
        print(f"dialogue recall wall over {len(walls)} (second pass): p50 {w[0]:.1f}, p90 {w[1]:.1f}, "
              f"p99 {w[2]:.1f} ms", flush=True)
        print(f"dialogue recall process CPU over {len(second)} (second pass): p50 {p[0]:.1f}, p90 {p[1]:.1f}, "
              f"p99 {p[2]:.1f} ms; first pass p50 {statistics.median(first):.1f}, max {max(first):.0f} ms; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
        grew = {k: (after[k] - before[k]) / 2**20 for k in before}
        print("resident growth from the open to after the first pass (MiB): "
              + ", ".join(f"{k} {v:+.1f}" for k, v in grew.items())
              + (f"; e5 vectors held {e5.memory_bytes() / 2**20:.1f} MiB" if e5 is not None else ""), flush=True)


if __name__ == "__main__":
    main()
