"""``hindbrain demo``: a simulated fleet learns on the embedded default (design.md §issue-7).

One world (``hindbrain.sim.world``): systems with hidden rules, one of them Chinese, a rule
that changes in round 4 (the old lesson is falsified), a system whose rule differs between
prod and test, unseen systems built like known ones (transfer), and users who state a
preference once. The same seeded schedule runs through three arms — no memory, naive RAG
(every event, top-5 by similarity, ungated), hindbrain through its public SDK — and agents
act only on what was injected. Nobody calls ``learn``: hindbrain's learner extracts the
lessons from the agents' own trajectories, outcomes verify them, hindsight induces beliefs.
Then a ticket desk (design.md §seed-002): only outcomes can tell the agents that upset customers want
the problem acknowledged first. Everything is a record in the log; the report is SQL over
the views.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from hindbrain.brain import Brain
from hindbrain.progress import stage
from hindbrain.sim import compare, default_world, tenant_of, ticket_world
from hindbrain.sim.report import rounds as report_rounds
from hindbrain.sim.report import unit_metrics, write_html
from hindbrain.sim.run import desk_table, metrics_table, rounds_table
from hindbrain.sim.world import World

ARMS = 3  # no memory, naive RAG, hindbrain: each runs the whole schedule


def run_world(world: World, brain: Brain, name: str) -> dict:
    """The three arms through ``world``, as one stage of the demo's progress."""
    tasks = sum(len(r) for r in world.schedule)
    with stage(f"{name}, three arms", total=ARMS * tasks, unit="tasks") as progress:
        return compare(world, brain, progress=lambda done, total: progress.advance())


def holds_a_fleet(home: Path) -> bool:
    """Whether a simulated fleet already ran in ``home``: its outcomes are under the ``sim-`` tenants.
    A second run on the same home would start from the first one's memory (hindbrain right from
    round 1, no mistakes to repeat), which measures nothing (design.md §issue-29)."""
    if not home.is_dir() or not any(home.iterdir()):
        return False
    with Brain.open(home, embedder="none") as brain:
        return bool(brain.sql("SELECT 1 FROM outcomes WHERE tenant LIKE 'sim-%' LIMIT 1"))


def fresh_home(home: Path | None) -> Path:
    """``home`` when it is new or empty; else a new sibling directory (``<home>-2``, ``-3`` …), saying so on
    standard output, so the demo never reuses an earlier fleet's memory."""
    if home is None:
        return Path(tempfile.mkdtemp(prefix="hindbrain-demo-"))
    if not holds_a_fleet(home):
        return home
    n = 2
    while (home.parent / f"{home.name}-{n}").exists():
        n += 1
    fresh = home.parent / f"{home.name}-{n}"
    print(f"hindbrain demo: {home} already holds a simulated fleet, whose memory would carry over into this run; "
          f"starting a fresh one in {fresh} (to look at the earlier one: hindbrain --home {home} report)", flush=True)
    return fresh


def run_demo(home: Path | None = None, rounds: int = 6, seed: int = 7) -> int:
    """The CLI's ``demo``: run the fleet and the ticket desk, print the tables and a few
    views, write the HTML report. Progress goes to standard error (``hindbrain.progress``).
    A ``home`` that already holds a fleet is left alone: the run starts fresh next to it."""
    home = fresh_home(Path(home) if home else None)
    world = default_world(seed, rounds)
    print(f"hindbrain demo: {world.agents} agents, {len({t.system for t in world.traps})} systems with hidden rules "
          f"and {len(world.preferences)} users with preferences, {rounds} rounds, three arms; brain at {home}",
          flush=True)
    started = time.perf_counter()
    with stage("open the brain"):
        brain = Brain.open(home)
    with brain:
        fleet = run_world(world, brain, "the fleet")
        desk = run_world(ticket_world(seed), brain, "the ticket desk")
        tenant = {"t": tenant_of(world, "hindbrain")}
        top = brain.sql(
            "SELECT f.text, fb.applied, fb.success FROM feedback AS fb "
            "INNER JOIN (SELECT fragment_id, text FROM fragments FINAL WHERE tenant = {t:String}) AS f "
            "ON f.fragment_id = fb.item_id WHERE fb.tenant = {t:String} ORDER BY fb.success DESC LIMIT 3", tenant)
        some_fragment = brain.sql("SELECT fragment_id FROM unit_states FINAL WHERE tenant = {t:String} "
                                  "AND status IN ('verified', 'stable') LIMIT 1", tenant)
        learned = brain.sql("SELECT job, count() AS n FROM decisions FINAL WHERE tenant = {t:String} "
                            "AND kind = 'unit_accepted' GROUP BY job ORDER BY job", tenant)
        states = brain.sql("SELECT status, count() AS n FROM unit_states FINAL WHERE tenant = {t:String} "
                           "GROUP BY status ORDER BY status", tenant)
        with stage("the learning report") as progress:
            learning = unit_metrics(brain)
            report = write_html(home / "report.html", report_rounds(brain), learning)
            progress.summary = str(report)
        stats_now = brain.stats()
    print("\nthe fleet: the same schedule through every arm; agents act only on what was injected")
    print("\n".join(rounds_table(fleet)) + "\n\n" + "\n".join(metrics_table(fleet)))
    print("\n" + "\n".join(desk_table(desk)))
    print("\nhindbrain's units, proposed by: " + ", ".join(f"{r['job']} {r['n']}" for r in learned)
          + "; states: " + ", ".join(f"{r['status']} {r['n']}" for r in states))
    print("most useful cognitions (feedback view):")  # applied/success counted from outcomes
    for row in top:
        print(f"  applied {row['applied']:>3}, success {row['success']:>3}  {row['text'][:90]}")
    print("hindbrain's own learning: " + ", ".join(
        f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in learning.items() if v is not None))
    print(f"learning report (HTML, learning curves, the SQL behind them): {report}")
    print(f"log: {stats_now['log_records']} records; views: {stats_now['views']}")
    print(f"done in {time.perf_counter() - started:.1f}s")
    if some_fragment:
        print(f"try:  hindbrain --home {home} explain {some_fragment[0]['fragment_id']}")
        print(f"      hindbrain --home {home} report")
        print(f"      hindbrain --home {home} replay --check")
    return 0
