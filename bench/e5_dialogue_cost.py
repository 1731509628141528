"""What the default's e5 for dialogues costs on a large home (issue 30, round eighteen): the e5 tier's
rate on the home's dialogue-kind events, a dialogue-form recall's process CPU p50 / p99 once its
candidates have their e5 vectors, and the resident bytes e5's load adds.

    cp -a /tmp/homes/h100k /tmp/x/h && .venv/bin/python bench/e5_dialogue_cost.py /tmp/x/h [--fill 2000]

Run it on a copy (it writes the e5 vectors into the home's cache). The same script on a checkout
without ``recall.e5_dialogue`` reads the same recalls with USE alone (the A/B's other arm).
Steps: (1) open the home; (2) let the e5 tier embed ``--fill`` queued dialogue-kind texts and read
its thread's CPU per text; (3) stop the tier (so its CPU does not count in a recall's) and run the
dialogue recalls twice: the first pass makes what its inline budget allows of its candidates' missing
vectors (``INLINE_BUDGET_S``; before round nineteen up to 128 a recall) and hurries the others to the
tier; the catch-up (``catch_up``, at most ``--catch-up-s``) waits for e5's query pass, runs the recalls
once untimed so every candidate lacking its vector is hurried, and runs the tier until those are made,
saying what it waited for and how long; the second pass is the row (the steady state, every
candidate's vector made, or the catch-up's line says how many were not). Process CPU per recall: the
e5 query runs on a thread of its own, which a thread clock would leave out. With embed workers (the
default) the tier's CPU is theirs, not the process's: step (2) then reads the owner's share only.
"""

from __future__ import annotations

import argparse
import itertools
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


def first_pass_left(tier, before: int) -> set[int]:
    """The distinct documents a pass hurried to the front of the tenant's queue (its entries past
    ``before``, repeats included) that still have no e5 row: what the second pass should find made."""
    with tier._lock:
        queue = tier._queued.get(TENANT, ())
        front = list(itertools.islice(queue, max(0, len(queue) - before)))
    return lacking(tier, front)


def lacking(tier, nos) -> set[int]:
    """Those of ``nos`` without an e5 row yet."""
    with tier._lock:
        rows = tier._rows.get(TENANT)
        return {no for no in nos if rows is None or not rows.has(no)}


def catch_up(brain, texts, qs: list[str], limit: float) -> str:
    """Brings the tier up to the second pass's candidates, within ``limit`` seconds: waits for e5's
    query pass (a recall before it loaded is USE's and asks the tier for nothing: with ``--fill 0`` at
    load 10 the whole first pass ran before it, hurrying nothing), runs ``qs`` once untimed (the tier
    stopped) so every candidate still without its e5 vector is hurried to the front of the queue, runs
    the tier until each of those has its row, then stops it and waits (bounded) for the step in flight:
    the tier's thread must not run beside the second pass. Before round twenty it waited ``or
    tier.inflight`` with the tier still running: a step is nearly always in flight over a 100k
    tenant's queue, so past ``limit`` the wait never ended (docs/speed.md, round twenty)."""
    from hindbrain.recall import e5_dialogue

    tier, started = brain.index.semantic.dialogue, time.monotonic()
    while not e5_dialogue.query_ready() and time.monotonic() - started < limit:
        time.sleep(0.2)
    loaded = time.monotonic() - started
    before = tier.queued()
    recalls(brain, qs)  # the hurry pass: what the second pass's candidates lack goes to the queue's front
    hurried = tier.queued() - before
    wanted = first_pass_left(tier, before)
    # made on the tier's thread at the bench's priority: the niced worker crawls on a busy box
    pool, tier.pool = tier.pool, None
    brain.index.semantic.dialogue_texts = texts
    with brain.index.semantic._cond:
        brain.index.semantic._cond.notify_all()
    left = wanted
    while left and time.monotonic() - started < limit:
        time.sleep(0.5)
        left = lacking(tier, left)
    caught = time.monotonic() - started
    brain.index.semantic.dialogue_texts = None  # the tier stops after its step in flight
    while tier.inflight and time.monotonic() - started < limit + 120:
        time.sleep(0.1)
    stopped = time.monotonic() - started
    tier.pool = pool
    left = lacking(tier, left)
    return (f"catch-up: e5's query pass {'loaded' if e5_dialogue.query_ready() else 'NOT loaded'} after "
            f"{loaded:.1f} s; waited for the {len(wanted)} distinct documents ({hurried} queue entries, "
            f"repeats included) the hurry pass left without e5: {len(wanted) - len(left)} made by "
            f"{caught:.1f} s wall{'' if not left else f' ({len(left)} still missing: the {limit:.0f} s limit)'}"
            f"; the tier stopped {stopped - caught:.1f} s later ({tier.inflight} still in flight)")


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
    ap.add_argument("--catch-up-s", type=float, default=600.0, help="the longest the tier catches up between passes")
    ap.add_argument("--first-only", action="store_true", help="stop after the first pass")
    ap.add_argument("--budget-ms", type=float, help="the inline budget (e5_dialogue.INLINE_BUDGET_S) to run with")
    args = ap.parse_args()
    if args.budget_ms is not None:
        from hindbrain.recall import e5_dialogue

        e5_dialogue.INLINE_BUDGET_S = args.budget_ms / 1e3
    rng = random.Random(7)
    qs = [dialogue(rng) for _ in range(args.recalls)]
    with Brain.open(args.home) as brain:
        brain.index.semantic.wait()
        semantic = brain.index.semantic
        semantic.warm()  # USE's query model and the static table, as a server loads them at its start
        e5 = getattr(semantic, "dialogue", None)
        release_free_heap()
        before = rss_split()
        if e5 is not None:  # the tier fills a tenant once a dialogue asks of it (as the first recall would)
            semantic.want_dialogue(TENANT)
        if e5 is not None and args.fill:
            print(fill_rate(brain, args.fill), flush=True)
        texts = semantic.dialogue_texts
        if e5 is not None:
            semantic.dialogue_texts = None  # the tier stops: a recall's process CPU is its own
            while getattr(e5, "inflight", 0):
                time.sleep(0.1)
            time.sleep(1.0)
        first_walls: list[float] = []
        first = recalls(brain, qs, first_walls)
        print(f"dialogue recall wall over {len(first_walls)} (first pass): p50 {statistics.median(first_walls):.1f}, "
              f"p90 {np.percentile(first_walls, 90):.1f}, max {max(first_walls):.0f} ms (the process's first "
              f"{first_walls[0]:.0f}, the others' max {max(first_walls[1:], default=0):.0f}); process CPU p50 "
              f"{statistics.median(first):.1f}, p90 {np.percentile(first, 90):.1f}, max {max(first):.0f} (others' "
              f"{max(first[1:], default=0):.0f}) ms; load {os.getloadavg()[0]:.1f}", flush=True)
        if args.first_only:
            return
        if e5 is not None and hasattr(e5, "hurry"):
            print(catch_up(brain, texts, qs, args.catch_up_s), flush=True)
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
