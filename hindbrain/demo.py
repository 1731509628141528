"""``hindbrain demo``: a small simulated fleet learns on the embedded default.

Several agents work on systems with hidden rules ("IAM changes need the admin account").
An agent that does not know a rule makes the naive mistake, perceives the anomaly
(expected vs actual), eventually finds the fix and proposes a cognition with ``learn``.
With recall, the *other* agents get that cognition injected before their next task on the
system and skip the mistake; without recall (same world, same seed, another tenant) every
agent keeps repeating it. Per round the demo prints the share of tasks that repeated a
mistake the fleet already knew the lesson for, with and without recall.

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
    known_tasks: int = 0
    repeated: int = 0
    first_try: int = 0
    tasks: int = 0
    injected_tokens: int = 0

    def add(self, other: ArmStats) -> None:
        for name in ("known_tasks", "repeated", "first_try", "tasks", "injected_tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def repeated_rate(self) -> float | None:
        return self.repeated / self.known_tasks if self.known_tasks else None


@dataclass
class Arm:
    tenant: str
    use_recall: bool
    known: set[str] = field(default_factory=set)  # systems whose lesson the fleet has learned


def run_task(brain: Brain, arm: Arm, agent: str, task_id: str, rule: HiddenRule, stats: ArmStats) -> None:
    """One agent, one task: recall at task start, act, recall again on the anomaly, learn."""
    who = dict(tenant=arm.tenant, agent=agent, task=task_id)
    known_before = rule.system in arm.known
    brain.perceive(**who, kind="observation", text=f"task: {rule.task}", system=rule.system,
                   entities=[rule.system])
    lesson = None
    if arm.use_recall:
        pack = brain.recall(**who, query=f"{rule.task} in {rule.system}", trigger="task_start",
                            situation={"system": rule.system, "action": rule.naive_action}, budget_tokens=160,
                            layers=RULE_LAYERS)
        stats.injected_tokens += pack.tokens
        lesson = _lesson_for(pack, rule)
    action = lesson.text if lesson else rule.naive_action
    stats.tasks += 1
    stats.known_tasks += known_before
    if rule.works(action):
        stats.first_try += 1
        brain.outcome(**who, recall_id=pack.recall_id, applied=[lesson.id], success=True, steps=1)
        return
    stats.repeated += known_before
    anomaly = brain.perceive(**who, kind="anomaly", text=f"{rule.actual} while trying to {rule.task}",
                             system=rule.system, identity=rule.identity, action=rule.naive_action,
                             expected=rule.expected, actual=rule.actual, entities=[rule.system])
    if arm.use_recall:
        pack = brain.recall(**who, trigger="anomaly", budget_tokens=160, layers=RULE_LAYERS,
                            situation={"system": rule.system, "identity": rule.identity,
                                       "action": rule.naive_action, "expected": rule.expected,
                                       "actual": rule.actual})
        stats.injected_tokens += pack.tokens
        lesson = _lesson_for(pack, rule)
        if lesson and rule.works(lesson.text):
            brain.outcome(**who, recall_id=pack.recall_id, applied=[lesson.id], success=True, steps=2)
            return
    # No usable lesson: the agent works it out the slow way, then writes the cognition down.
    fix = brain.perceive(**who, kind="action", action=rule.fix_action, system=rule.system, success=True,
                         entities=[rule.system])
    brain.learn(**who, condition=f"{rule.system}: {rule.task} gives '{rule.actual}'", action=rule.fix_action,
                reason=rule.reason, evidence=f"{rule.fix_action} worked", event_ids=[anomaly, fix],
                entities=[rule.system])
    arm.known.add(rule.system)
    brain.outcome(**who, success=True, steps=4)


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


def _pct(value: float | None) -> str:
    return "   -" if value is None else f"{100 * value:3.0f}%"


@dataclass
class DemoResult:
    home: Path
    rounds: list[dict[str, ArmStats]]  # per round: tenant -> stats
    totals: dict[str, ArmStats]
    seconds: float


WITH_RECALL, NO_MEMORY = "demo-with-recall", "demo-no-memory"


def simulate(brain: Brain, rounds: int = 6, seed: int = 7, agents: int = 4, tasks_per_agent: int = 3,
             progress=None) -> tuple[list[dict[str, ArmStats]], dict[str, ArmStats]]:
    """Run both arms over the same seeded schedule; returns per-round and total stats."""
    rng = random.Random(seed)
    schedule = [[[rng.choice(WORLD) for _ in range(tasks_per_agent)] for _ in range(agents)] for _ in range(rounds)]
    arms = [Arm(WITH_RECALL, True), Arm(NO_MEMORY, False)]
    totals = {arm.tenant: ArmStats() for arm in arms}
    per_round, done = [], 0
    for r, round_tasks in enumerate(schedule, 1):
        stats_of = {arm.tenant: ArmStats() for arm in arms}
        for arm in arms:
            for a, tasks in enumerate(round_tasks):
                for t, rule in enumerate(tasks):
                    run_task(brain, arm, f"agent-{a + 1}", f"r{r}-a{a + 1}-t{t + 1}", rule, stats_of[arm.tenant])
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
        some_fragment = brain.sql("SELECT fragment_id FROM fragments FINAL WHERE tenant = {t:String} LIMIT 1",
                                  {"t": WITH_RECALL})
        stats_now = brain.stats()
    print("\nshare of tasks that repeated a mistake the fleet already knew the lesson for")
    print(f"{'round':>5} | {'with recall':>11} {'no memory':>10} | {'first-try ok (with/without)':>28}")
    for r, stats_of in [(str(n), s) for n, s in enumerate(per_round, 1)] + [("all", totals)]:
        w, n = stats_of[WITH_RECALL], stats_of[NO_MEMORY]
        print(f"{r:>5} | {_pct(w.repeated_rate()):>11} {_pct(n.repeated_rate()):>10} | "
              f"{w.first_try:>12}/{w.tasks:<3} {n.first_try:>6}/{n.tasks:<3}")
    w = totals[WITH_RECALL]
    print(f"\ninjected context: {w.injected_tokens / max(w.tasks, 1):.0f} tokens per task with recall")
    print("most useful cognitions (feedback view):")
    for row in top:
        print(f"  applied {row['applied']:>3}, success {row['success']:>3}  {row['text'][:90]}")
    print(f"log: {stats_now['log_records']} records; views: {stats_now['views']}")
    print(f"done in {time.perf_counter() - started:.1f}s")
    if some_fragment:
        print(f"try:  hindbrain --home {home} explain {some_fragment[0]['fragment_id']}")
        print(f"      hindbrain --home {home} replay --check")
    return 0
