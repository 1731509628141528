"""Run a world through an arm, as the agents of a fleet would, and count what happened.

An agent acts **only** on what was injected: before a task it recalls; it takes the fix
the first injected item names (the world's key phrases), else the naive action. A mistake
is perceived with its expected-vs-actual, the agent recalls again on the anomaly, and if
nothing injected helps it gives up: a human does the task (a failure for the agent) and the
agent perceives how — the trajectory hindbrain's learner extracts the lesson from. A user states a preference in
their first session; in later sessions the answer obeys it only if it was injected. The
same world, seed and policy run for every arm.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hindbrain.sim.arms import Injected
from hindbrain.sim.world import Task, Trap, World


@dataclass
class Counts:
    tasks: int = 0
    successes: int = 0  # done by the agent (within two attempts), not handed to a human
    first_try: int = 0
    known_tasks: int = 0  # trap tasks whose current rule this agent had already solved once
    repeated: int = 0  # ... in which it repeated the mistake
    fleet_known: int = 0  # trap tasks whose current rule some agent of the fleet had solved once
    fleet_repeated: int = 0  # ... in which the agent made the mistake again
    steps: int = 0
    pref_tasks: int = 0  # answers to a user who stated a preference in an earlier session
    pref_obeyed: int = 0
    injected_tokens: int = 0
    stale_failures: int = 0  # failures from applying a rule the environment had changed
    scoped_tasks: int = 0  # tasks on a system whose rule differs per environment
    wrong_scope: int = 0  # ... in which the agent applied another environment's rule
    upset_tickets: int = 0  # tickets from angry or disappointed customers
    upset_solved: int = 0
    belief_guided: int = 0  # tickets whose reply followed an injected belief
    first_contacts: int = 0  # first tasks on an unseen system built like a known one (transfer)
    first_contact_successes: int = 0
    rule_first: int = 0  # known tasks whose task-start recall brought the working rule as its first item

    def add(self, other: Counts) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @staticmethod
    def rate(part: int, whole: int) -> float | None:
        return part / whole if whole else None

    def metrics(self) -> dict[str, float | None]:
        return {
            "success rate": self.rate(self.successes, self.tasks),
            "repeated-mistake rate": self.rate(self.repeated, self.known_tasks),
            "fleet repeated mistakes": self.rate(self.fleet_repeated, self.fleet_known),
            "preference consistency": self.rate(self.pref_obeyed, self.pref_tasks),
            "steps per task": self.rate(self.steps, self.tasks),
            "tokens per success": self.rate(self.injected_tokens, self.successes),
            "transfer (first contact)": self.rate(self.first_contact_successes, self.first_contacts),
            "wrong-environment rule": self.rate(self.wrong_scope, self.scoped_tasks),
            "upset-customer tickets solved": self.rate(self.upset_solved, self.upset_tickets),
            "rule first at task start": self.rate(self.rule_first, self.known_tasks),
        }


PLAIN_METRICS = ("steps per task", "tokens per success")  # the others are shares, shown as %


def format_metric(metric: str, value: float | None, missing: str = "-") -> str:
    if value is None:
        return missing
    return f"{value:.1f}" if metric in PLAIN_METRICS else f"{100 * value:.0f}%"


def metrics_table(runs: dict) -> list[str]:
    """The arms side by side, a metric a line, and when a falsified rule stopped being injected."""
    names = list(runs)
    metrics = {n: runs[n].total.metrics() for n in names}
    lines = [f"{'':>24}  " + "  ".join(f"{n:>10}" for n in names)]
    lines += [f"{m:>24}  " + "  ".join(f"{format_metric(m, metrics[n][m]):>10}" for n in names)
              for m in metrics[names[0]]]
    dropped = [f"{n}: {'never' if r.stale_until_dropped is None else r.stale_until_dropped}" for n, r in runs.items()
               if r.total.stale_failures]
    lines.append(f"failures until a falsified rule stops being injected: {', '.join(dropped)}" if dropped else
                 "failures until a falsified rule stops being injected: not exercised (no arm applied the old rule "
                 "after the change in this schedule)")
    return lines


def rounds_table(runs: dict) -> list[str]:
    """Per round and arm: the success rate / the repeated-mistake rate."""
    names = list(runs)
    lines = ["round | " + " | ".join(f"{n:>22}" for n in names) + "   (success / repeated mistakes)"]
    for r in range(len(runs[names[0]].rounds)):
        cells = []
        for n in names:
            c = runs[n].rounds[r]
            cells.append(f"{format_metric('', c.rate(c.successes, c.tasks)):>10} / "
                         f"{format_metric('', c.rate(c.repeated, c.known_tasks)):>9}")
        lines.append(f"{r + 1:>5} | " + " | ".join(cells))
    return lines


DESK_HEADLINE = ("the ticket desk (seed 002): upset customers are satisfied far more often when the reply first "
                 "acknowledges the problem; only outcomes, through hindsight's beliefs, can tell the agents")


def desk_table(runs: dict) -> list[str]:
    """The ticket desk per arm: upset customers satisfied per round, overall, and the replies a belief guided."""
    lines = [DESK_HEADLINE]
    for n, run in runs.items():
        per_round = " ".join(f"{c.upset_solved}/{c.upset_tickets}" for c in run.rounds)
        overall = format_metric("", run.total.metrics()["upset-customer tickets solved"])
        lines.append(f"{n:>12}: upset customers satisfied per round {per_round}; overall {overall}; "
                     f"replies guided by a belief {run.total.belief_guided}")
    return lines


@dataclass
class ArmRun:
    name: str
    rounds: list[Counts] = field(default_factory=list)
    total: Counts = field(default_factory=Counts)
    stale_until_dropped: int | None = None  # failures before a falsified rule stopped being injected
    _solvers: dict = field(default_factory=dict)  # (system, rule version) → the agents that solved it
    _stated: set = field(default_factory=set)  # users who stated their preference
    _seen_systems: set = field(default_factory=set)
    _stale_ids: set = field(default_factory=set)  # items whose old fix failed after the change
    _stale_failures: int = 0  # so far in the run


def simulate(world: World, arm, progress=None) -> ArmRun:
    run = ArmRun(arm.name)
    arm.ledger.world = world.name
    done, total = 0, sum(len(r) for r in world.schedule)
    for tasks in world.schedule:
        counts = Counts()
        for task in tasks:
            if task.trap is not None:
                rivals = tuple(t for t in world.traps if t.system == task.trap.system and t is not task.trap)
                _trap_task(arm, run, task, task.trap, counts, rivals)
            elif task.ticket is not None:
                _ticket_task(arm, task, task.ticket, counts)
            else:
                _preference_task(arm, run, task, counts)
            done += 1
            if progress:
                progress(done, total)
        run.rounds.append(counts)
        run.total.add(counts)
        arm.end_round()  # e.g. the nightly hindsight run
    return run


def _named_action(item: Injected, trap: Trap) -> str:
    """The fix this item names for ``trap``, or "" when it names none."""
    return next((action for key, action in ((trap.new_key, trap.new_fix), (trap.key, trap.fix))
                 if key and key in item.text), "")


def choose(injected: list[Injected], trap: Trap, rivals: tuple[Trap, ...] = ()) -> tuple[str, Injected | None]:
    """The action the agent takes: the fix the first injected item names — of this system's
    rule in any environment (``rivals``: the agent cannot tell them apart) — else the naive one."""
    for item in injected:
        for t in (trap, *rivals):
            for key, action in ((t.new_key, t.new_fix), (t.key, t.fix)):
                if key and key in item.text:
                    return action, item
    return trap.naive, None


def _trap_task(arm, run: ArmRun, task: Task, trap: Trap, counts: Counts, rivals: tuple[Trap, ...] = ()) -> None:
    r, version, scope = task.round_no, (trap.changed(task.round_no), trap.env), trap.scope
    counts.tasks += 1
    solvers = run._solvers.get((trap.system, version), set())
    known, fleet_known = task.agent in solvers, bool(solvers)
    counts.known_tasks += known
    counts.fleet_known += fleet_known
    tokens = 0
    arm.perceive(task, kind="observation", text=f"task: {trap.task}", system=trap.system, entities=[trap.system],
                 scope=scope)
    injected = arm.recall(task, query=f"{trap.task} in {trap.system}", trigger="task_start",
                          situation={"system": trap.system, "action": trap.naive}, scope=scope)
    tokens += sum(i.tokens for i in injected)
    rule_first = known and bool(injected) and trap.works(_named_action(injected[0], trap), r)
    counts.rule_first += rule_first
    _watch_stale(run, trap, r, injected)
    action, item = choose(injected, trap, rivals)
    wrong = trap.env is not None and action in {t.fix for t in rivals}
    counts.scoped_tasks += trap.env is not None
    counts.wrong_scope += wrong
    first_contact = trap.like is not None and trap.system not in run._seen_systems
    run._seen_systems.add(trap.system)
    counts.first_contacts += first_contact
    notes = {"arm": arm.name, "round": r, "kind": "trap", "system": trap.system, "env": trap.env, "known": known,
             "fleet_known": fleet_known,
             "first_contact": first_contact, "wrong_scope": wrong, "rule_first": rule_first}
    if trap.works(action, r):
        counts.first_contact_successes += first_contact
        counts.first_try += 1
        _did(arm, task, trap, action)
        return _finish(arm, task, counts, True, 1, tokens, [item.id] if item else [], notes)
    repeated, fleet_repeated = known and action == trap.naive, fleet_known and action == trap.naive
    counts.repeated += repeated
    counts.fleet_repeated += fleet_repeated
    notes["repeated"], notes["fleet_repeated"] = repeated, fleet_repeated
    if trap.changed(r) and action == trap.fix and item is not None:
        counts.stale_failures += 1
        run._stale_failures += 1
        run._stale_ids.add(item.id)
    failure = trap.failure(r)
    arm.perceive(task, kind="anomaly", text=f"{failure} while trying to {trap.task}", system=trap.system,
                 identity=trap.identity, action=action, expected=trap.expected, actual=failure,
                 entities=[trap.system], scope=scope)
    if item:
        arm.outcome(task, [item.id], False, 1)  # the applied lesson failed
    injected = arm.recall(task, trigger="anomaly", situation={
        "system": trap.system, "identity": trap.identity, "action": action, "expected": trap.expected,
        "actual": failure}, scope=scope)
    tokens += sum(i.tokens for i in injected)
    second, item = choose(injected, trap, rivals)
    if second != action and trap.works(second, r):
        counts.first_contact_successes += first_contact
        _did(arm, task, trap, second)  # the success after the anomaly: a trajectory to learn from
        return _finish(arm, task, counts, True, 2, tokens, [item.id] if item else [], notes)
    fix = trap.right_fix(r)  # the agent gives up; a human does it, and the agent sees how
    arm.perceive(task, kind="action", action=fix, system=trap.system, identity=trap.identity, success=True,
                 text=f"{trap.task}: done by a human", entities=[trap.system], scope=scope)
    run._solvers.setdefault((trap.system, version), set()).add(task.agent)
    return _finish(arm, task, counts, False, 4, tokens, [], notes)


def _did(arm, task: Task, trap: Trap, action: str) -> None:
    arm.perceive(task, kind="action", action=action, system=trap.system, identity=trap.identity, success=True,
                 text=f"{trap.task}: done", entities=[trap.system], scope=trap.scope)


def _finish(arm, task: Task, counts: Counts, success: bool, steps: int, tokens: int, applied: list[str],
            notes: dict) -> None:
    counts.successes += success
    counts.steps += steps
    counts.injected_tokens += tokens
    arm.ledger.final(task, success, steps, applied, {**notes, "tokens": tokens})


def _watch_stale(run: ArmRun, trap: Trap, round_no: int, injected: list[Injected]) -> None:
    """After a change, the first task of that system in which none of the items whose old fix
    failed is injected any more ends the count (in failures so far)."""
    if not trap.changed(round_no) or run.stale_until_dropped is not None or not run._stale_ids:
        return
    if not {i.id for i in injected} & run._stale_ids:
        run.stale_until_dropped = run._stale_failures


def _preference_task(arm, run: ArmRun, task: Task, counts: Counts) -> None:
    pref = task.user
    counts.tasks += 1
    session = f"{pref.user}-{task.task_id}"
    notes = {"arm": arm.name, "round": task.round_no, "kind": "preference", "user": pref.user}
    if pref.user not in run._stated:  # the first session: the user says it, the answer obeys it
        run._stated.add(pref.user)
        arm.perceive(task, kind="message", speaker="user", signal="explicit", session=session,
                     text=pref.statement, scope={"user": pref.user})
        return _finish(arm, task, counts, True, 1, 0, [], {**notes, "stated": True})
    injected = arm.recall(task, query=f"write the weekly status answer for {pref.user}", trigger="task_start",
                          scope={"user": pref.user})
    used = next((i for i in injected if pref.key in i.text), None)
    counts.pref_tasks += 1
    counts.pref_obeyed += used is not None
    _finish(arm, task, counts, used is not None, 1, sum(i.tokens for i in injected), [used.id] if used else [],
            {**notes, "obeyed": used is not None})


def _ticket_task(arm, task: Task, ticket, counts: Counts) -> None:
    """A fault ticket: the customer writes (with an emotion label from the support tool),
    the agent recalls for the scene, replies — acknowledging first only when an injected
    belief says so for this emotion, or when it explores — and the customer's verdict is the
    outcome."""
    from hindbrain.sim.world import ACKNOWLEDGE, FIX, TICKET_SCENE

    counts.tasks += 1
    scope = {"task_type": TICKET_SCENE, "label_confidence": "0.9"}
    arm.perceive(task, kind="message", speaker="user", text="the export is broken again, this is unacceptable",
                 emotion=ticket.emotion, scope=scope)
    injected = arm.recall(task, query="answer the customer's fault ticket", trigger="task_start", scene=TICKET_SCENE)
    tokens = sum(i.tokens for i in injected)
    told = next((i for i in injected if ACKNOWLEDGE in i.text and ticket.emotion in i.text), None)
    acknowledge = told is not None or ticket.explore
    for action in ((ACKNOWLEDGE, FIX) if acknowledge else (FIX,)):
        arm.perceive(task, kind="action", action=action, scope=scope)
    success = ticket.works(acknowledge)
    arm.perceive(task, kind="outcome", text="customer verdict", success=success, scope=scope)
    counts.upset_tickets += ticket.upset
    counts.upset_solved += ticket.upset and success
    counts.belief_guided += told is not None
    _finish(arm, task, counts, success, len((ACKNOWLEDGE, FIX) if acknowledge else (FIX,)), tokens,
            [told.id] if told else [], {"arm": arm.name, "round": task.round_no, "kind": "ticket",
                                        "emotion": ticket.emotion, "upset": ticket.upset,
                                        "guided": told is not None})
