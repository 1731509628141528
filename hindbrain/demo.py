"""``hindbrain demo``: a small simulated fleet learns on the embedded default.

Several agents work on systems with hidden rules ("IAM changes need the admin account").
An agent that does not know a rule makes the naive mistake, perceives the anomaly
(expected vs actual) and eventually finds the fix; the **learner** extracts the lesson from
that trajectory by itself (rule ``recovery/1``: no LLM, no ``learn`` call). With recall,
the other agents get the lesson injected before their next task on the system, apply it,
and the outcome verifies it; with recall off (same world, same seeded schedule, another
tenant, the same learner) every agent keeps repeating the mistake. The world is flaky: any
attempt fails transiently with probability ``FLAKE``; agents retry once, and a task whose
retry fails too is reported as a failure (against the lesson it applied).

Per round the demo prints the share of tasks that repeated the mistake on a system whose
lesson had been *verified* (applied and succeeded once) before the task, in both arms over
the same task slots, and on systems whose lesson merely existed.

Agents act only on what was injected: the world judges the action text an agent takes.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hindbrain.brain import Brain
from hindbrain.sim import compare, default_world, ticket_world
from hindbrain.sim.report import rounds as report_rounds
from hindbrain.sim.report import unit_metrics, write_html
from hindbrain.sim.run import metrics_table

FLAKE = 0.15  # chance that any attempt fails transiently ("timeout, try again")


@dataclass(frozen=True)
class HiddenRule:
    system: str
    task: str
    naive_action: str
    identity: str
    expected: str
    actual: str
    fix_action: str
    reason: str
    key: str  # what the world requires the action to contain

    def works(self, action: str) -> bool:
        return self.key in action


WORLD = (
    HiddenRule("IAM", "change a user's permissions", "submit the change as the normal account", "normal account",
               "success message", "no response after clicking submit",
               "switch to the admin account, then submit once; do not click submit again",
               "permission operations in IAM need the admin account", "admin account"),
    HiddenRule("Billing", "export the monthly invoice report", "run the export on the live billing database",
               "analyst", "a CSV download", "query killed after 30s timeout",
               "run the export on the reporting replica", "the live billing database kills long queries",
               "reporting replica"),
    HiddenRule("Deploy", "deploy the payments service to production", "run the deploy pipeline directly",
               "release engineer", "pipeline starts", "blocked: change ticket required",
               "open a change ticket first, then run the deploy pipeline",
               "production deploys are gated by change tickets", "change ticket"),
    HiddenRule("CRM", "bulk-update customer tags", "send all rows in one update request", "ops agent",
               "rows updated", "HTTP 413 payload too large", "update the rows in batches of 200",
               "the CRM API rejects bodies over 1 MB", "batches of 200"),
    HiddenRule("工单系统", "关闭客户投诉工单", "直接点击关闭按钮", "客服", "工单已关闭",
               "提示：需要先填写处理结果", "先填写处理结果，再关闭工单", "工单系统要求关闭前记录处理结果",
               "处理结果"),
)


# Before acting, agents ask for rules (cognitions), not for the raw timeline.
RULE_LAYERS = ["experience", "knowledge"]


@dataclass
class ArmStats:
    tasks: int = 0
    first_try: int = 0  # right on the first attempt
    failed: int = 0  # tasks that failed even after the retry (flaky world)
    known_tasks: int = 0  # tasks on a system whose lesson the arm's memory held
    repeated_known: int = 0
    verified_tasks: int = 0  # task slots on a system whose lesson was verified (in the recall arm)
    repeated_verified: int = 0
    injected_tokens: int = 0

    def add(self, other: ArmStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def repeated_rate(self) -> float | None:
        """Repeated mistakes per task on a system whose lesson had been verified."""
        return self.repeated_verified / self.verified_tasks if self.verified_tasks else None

    def repeated_known_rate(self) -> float | None:
        return self.repeated_known / self.known_tasks if self.known_tasks else None


@dataclass
class Arm:
    tenant: str
    use_recall: bool
    known: set[str] = field(default_factory=set)  # systems whose lesson the learner extracted
    verified: set[str] = field(default_factory=set)  # systems whose lesson was applied and succeeded


@dataclass
class World:
    rng: random.Random

    def attempt(self, rule: HiddenRule, action: str) -> str:
        """``ok``, ``mistake`` (the hidden rule refused it) or ``flake`` (a transient failure)."""
        if not rule.works(action):
            return "mistake"
        return "flake" if self.rng.random() < FLAKE else "ok"


def run_task(brain: Brain, world: World, arm: Arm, agent: str, task_id: str, rule: HiddenRule, stats: ArmStats,
             verified_slot: bool) -> None:
    """One agent, one task: recall at task start, act, recall again on the anomaly; the
    learner extracts the lesson when the agent finds the fix itself."""
    who = dict(tenant=arm.tenant, agent=agent, task=task_id)
    stats.tasks += 1
    stats.known_tasks += rule.system in arm.known
    stats.verified_tasks += verified_slot
    brain.perceive(**who, kind="observation", text=f"task: {rule.task}", system=rule.system, entities=[rule.system])
    pack = lesson = None
    if arm.use_recall:
        pack = brain.recall(**who, query=f"{rule.task} in {rule.system}", trigger="task_start",
                            situation={"system": rule.system, "action": rule.naive_action}, budget_tokens=160,
                            layers=RULE_LAYERS)
        stats.injected_tokens += pack.tokens
        lesson = _lesson_for(pack, rule)
    action = lesson.text if lesson else rule.naive_action
    result = world.attempt(rule, action)
    if result != "mistake":
        stats.first_try += result == "ok"
        _finish(brain, world, arm, who, rule, action, result, pack, lesson, stats)
        return
    stats.repeated_known += rule.system in arm.known
    stats.repeated_verified += verified_slot
    brain.perceive(**who, kind="anomaly", text=f"{rule.actual} while trying to {rule.task}", system=rule.system,
                   identity=rule.identity, action=rule.naive_action, expected=rule.expected, actual=rule.actual,
                   entities=[rule.system])
    if arm.use_recall:
        pack = brain.recall(**who, trigger="anomaly", budget_tokens=160, layers=RULE_LAYERS,
                            situation={"system": rule.system, "identity": rule.identity,
                                       "action": rule.naive_action, "expected": rule.expected,
                                       "actual": rule.actual})
        stats.injected_tokens += pack.tokens
        lesson = _lesson_for(pack, rule)
        if lesson and rule.works(lesson.text):
            _finish(brain, world, arm, who, rule, lesson.text, world.attempt(rule, lesson.text), pack, lesson, stats)
            return
    # No usable lesson: the agent works it out the slow way. Its success after the anomaly,
    # with a different action, is the trajectory the learner turns into the lesson.
    brain.perceive(**who, kind="action", action=rule.fix_action, system=rule.system, identity=rule.identity,
                   success=True, text=f"{rule.task}: done", entities=[rule.system])
    arm.known.add(rule.system)
    brain.outcome(**who, success=True, steps=4)


def _finish(brain: Brain, world: World, arm: Arm, who: dict, rule: HiddenRule, action: str, result: str, pack,
            lesson, stats: ArmStats) -> None:
    """The right action was taken: on a transient failure the agent retries once."""
    steps = 1
    if result == "flake":
        brain.perceive(**who, kind="anomaly", text="timeout, try again", system=rule.system, action=action[:200],
                       actual="transient timeout", entities=[rule.system])
        result, steps = world.attempt(rule, action), 2
    success = result == "ok"
    stats.failed += not success
    if success and lesson:
        arm.verified.add(rule.system)
    brain.outcome(**who, recall_id=pack.recall_id if pack else None, applied=[lesson.id] if lesson else [],
                  success=success, steps=steps)


def _lesson_for(pack, rule: HiddenRule):
    """The first injected cognition the agent can act on for this system."""
    return next((i for i in pack.items if i.kind == "fragment" and rule.system in i.text), None)


def _progress(done: int, total: int, started: float) -> None:
    if done != total and done % max(1, total // 40):
        return
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total} tasks "
                     f"{time.perf_counter() - started:5.1f}s")
    sys.stderr.flush()


def _rate(part: int, whole: int) -> str:
    return "-" if not whole else f"{100 * part / whole:.0f}% ({part}/{whole})"


WITH_RECALL, NO_MEMORY = "demo-with-recall", "demo-no-memory"


def simulate(brain: Brain, rounds: int = 6, seed: int = 7, agents: int = 4, tasks_per_agent: int = 3,
             progress=None) -> tuple[list[dict[str, ArmStats]], dict[str, ArmStats]]:
    """Run both arms over the same seeded schedule; returns per-round and total stats.

    A task slot counts as "verified" when, in the recall arm, the system's lesson had been
    verified before it; the recall-off arm is measured on the same slots (its baseline)."""
    rng = random.Random(seed)
    schedule = [[[rng.choice(WORLD) for _ in range(tasks_per_agent)] for _ in range(agents)] for _ in range(rounds)]
    arms = [Arm(WITH_RECALL, True), Arm(NO_MEMORY, False)]
    worlds = {arm.tenant: World(random.Random(seed + 1)) for arm in arms}  # the same flakes in both arms
    totals = {arm.tenant: ArmStats() for arm in arms}
    per_round, done = [], 0
    for r, round_tasks in enumerate(schedule, 1):
        stats_of = {arm.tenant: ArmStats() for arm in arms}
        slots = [(a, t, rule) for a, tasks in enumerate(round_tasks) for t, rule in enumerate(tasks)]
        verified_slots: list[bool] = []
        for arm in arms:
            for n, (a, t, rule) in enumerate(slots):
                if arm.use_recall:
                    verified_slots.append(rule.system in arm.verified)
                run_task(brain, worlds[arm.tenant], arm, f"agent-{a + 1}", f"r{r}-a{a + 1}-t{t + 1}", rule,
                         stats_of[arm.tenant], verified_slots[n])
                done += 1
                if progress:
                    progress(done, 2 * rounds * agents * tasks_per_agent)
            totals[arm.tenant].add(stats_of[arm.tenant])
        per_round.append(stats_of)
    return per_round, totals


def run_demo(home: Path | None = None, rounds: int = 6, seed: int = 7, agents: int = 4,
             tasks_per_agent: int = 3) -> int:
    """The CLI's ``demo``: simulate, then print the per-round table and a few views."""
    home = Path(home) if home else Path(tempfile.mkdtemp(prefix="hindbrain-demo-"))
    print(f"hindbrain demo: {agents} agents, {len(WORLD)} systems with hidden rules, {rounds} rounds; brain at {home}")
    started = time.perf_counter()
    with Brain.open(home) as brain:
        per_round, totals = simulate(brain, rounds, seed, agents, tasks_per_agent,
                                     progress=lambda done, total: _progress(done, total, started))
        sys.stderr.write("\n")
        top = brain.sql(
            "SELECT f.text, fb.applied, fb.success FROM feedback AS fb "
            "INNER JOIN (SELECT fragment_id, text FROM fragments FINAL WHERE tenant = {t:String}) AS f "
            "ON f.fragment_id = fb.item_id WHERE fb.tenant = {t:String} ORDER BY fb.success DESC LIMIT 3",
            {"t": WITH_RECALL},
        )
        some_fragment = brain.sql("SELECT fragment_id FROM unit_states FINAL WHERE tenant = {t:String} "
                                  "AND status IN ('verified', 'stable') LIMIT 1", {"t": WITH_RECALL})
        learned = brain.sql("SELECT tenant, job, count() AS n FROM decisions FINAL WHERE kind = 'unit_accepted' "
                            "GROUP BY tenant, job ORDER BY tenant, job")
        states = brain.sql("SELECT status, count() AS n FROM unit_states FINAL WHERE tenant = {t:String} "
                           "GROUP BY status ORDER BY status", {"t": WITH_RECALL})
        sims = compare(default_world(seed, rounds), brain,
                       progress=lambda done, total: _progress(done, total, started))
        sys.stderr.write("\n")
        desk = compare(ticket_world(seed), brain, progress=lambda done, total: _progress(done, total, started))
        sys.stderr.write("\n")
        learning = unit_metrics(brain)
        report = write_html(home / "report.html", report_rounds(brain), learning)
        stats_now = brain.stats()
    print(f"\nrepeated mistakes per task on a system whose lesson was already verified (world flakes {FLAKE:.0%})")
    print(f"{'round':>5} | {'verified lesson':^27} | {'lesson known':^27} | {'first try ok':^13} | failed")
    print(f"{'':>5} | {'with recall':>13} {'recall off':>13} | {'with recall':>13} {'recall off':>13} | "
          f"{'with':>6} {'off':>6} | {'with':>3} {'off':>3}")
    for r, stats_of in [(str(n), s) for n, s in enumerate(per_round, 1)] + [("all", totals)]:
        w, n = stats_of[WITH_RECALL], stats_of[NO_MEMORY]
        rates = [_rate(w.repeated_verified, w.verified_tasks), _rate(n.repeated_verified, n.verified_tasks),
                 _rate(w.repeated_known, w.known_tasks), _rate(n.repeated_known, n.known_tasks)]
        print(f"{r:>5} | {rates[0]:>13} {rates[1]:>13} | {rates[2]:>13} {rates[3]:>13} | "
              f"{w.first_try:>3}/{w.tasks:<2} {n.first_try:>3}/{n.tasks:<2} | {w.failed:>3} {n.failed:>3}")
    print("units accepted (tenant, proposed by): "
          + ", ".join(f"{r['tenant']} {r['job']} {r['n']}" for r in learned))
    print("unit states with recall: " + ", ".join(f"{r['status']} {r['n']}" for r in states))
    w = totals[WITH_RECALL]
    print(f"\ninjected context: {w.injected_tokens / max(w.tasks, 1):.0f} tokens per task with recall")
    print("most useful cognitions (feedback view):")  # applied/success counted from outcomes
    for row in top:
        print(f"  applied {row['applied']:>3}, success {row['success']:>3}  {row['text'][:90]}")
    print("\nthe fleet simulator: one world (hidden rules, a rule that changes in round 4, user preferences), "
          "three arms")
    print("\n".join(metrics_table(sims)))
    print("\nthe ticket desk (seed 002): upset customers are satisfied far more often when the reply first "
          "acknowledges the problem; only outcomes, through hindsight's beliefs, can tell the agents")
    for n, run in desk.items():
        per_round = " ".join(f"{c.upset_solved}/{c.upset_tickets}" for c in run.rounds)
        print(f"{n:>12}: upset customers satisfied per round {per_round}; replies guided by a belief "
              f"{run.total.belief_guided}")
    print("hindbrain's own learning: " + ", ".join(
        f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in learning.items() if v is not None))
    print(f"learning report (HTML, learning curves, the SQL behind them): {report}")
    print(f"log: {stats_now['log_records']} records; views: {stats_now['views']}")
    print(f"done in {time.perf_counter() - started:.1f}s")
    if some_fragment:
        print(f"try:  hindbrain --home {home} explain {some_fragment[0]['fragment_id']}")
        print(f"      hindbrain --home {home} replay --check")
    return 0
