"""Simulated worlds: systems with hidden rules (some change at a given round) and users
with preferences. Deterministic for a seed. The world judges only the text of what an agent
does, so an agent can act on nothing but what it was given."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Trap:
    """A system whose task fails with the naive action until the agent does ``fix``;
    from ``changes_at`` on (a round), the environment changed and only ``new_fix`` works."""

    system: str
    task: str
    naive: str
    identity: str
    expected: str
    actual: str
    fix: str
    key: str  # what a working action contains
    changes_at: int | None = None
    new_fix: str | None = None
    new_key: str | None = None
    new_actual: str | None = None
    appears_at: int = 1  # the round from which tasks come: later ones are unseen systems (transfer)
    like: str | None = None  # the known system this one is structurally similar to
    env: str | None = None  # a scoped rule: this variant holds in this environment only

    @property
    def scope(self) -> dict:
        return {"env": self.env} if self.env else {}

    def works(self, action: str, round_no: int) -> bool:
        return (self.new_key if self.changed(round_no) else self.key) in action

    def changed(self, round_no: int) -> bool:
        return self.changes_at is not None and round_no >= self.changes_at

    def failure(self, round_no: int) -> str:
        return self.new_actual if self.changed(round_no) and self.new_actual else self.actual

    def right_fix(self, round_no: int) -> str:
        return self.new_fix if self.changed(round_no) else self.fix


@dataclass(frozen=True)
class Preference:
    """A user who states once how answers must be, and judges every later answer by it."""

    user: str
    statement: str
    key: str  # what an obeying answer contains


@dataclass(frozen=True)
class Ticket:
    """A customer's fault ticket (design.md §seed-002's example). Upset customers (angry, disappointed)
    are satisfied far more often when the reply first acknowledges the problem; calm ones
    do not care. Nobody tells the agents: only outcomes, and hindsight's beliefs, can."""

    emotion: str
    luck: float  # the world's dice for this ticket, drawn with the schedule
    explore: bool  # whether this agent tries something new when nothing was injected

    @property
    def upset(self) -> bool:
        return self.emotion in ("angry", "disappointed")

    def works(self, acknowledged: bool) -> bool:
        return self.luck < (TICKET_SUCCESS[(self.upset, acknowledged)])


TICKET_SUCCESS = {(True, True): 0.9, (True, False): 0.35, (False, True): 0.9, (False, False): 0.9}
TICKET_SCENE = "fault ticket"
ACKNOWLEDGE, FIX = "acknowledge the problem", "give the fix"


@dataclass(frozen=True)
class Task:
    round_no: int
    agent: str
    task_id: str
    trap: Trap | None = None
    user: Preference | None = None  # a preference task: answer this user
    ticket: Ticket | None = None


@dataclass
class World:
    traps: tuple[Trap, ...]
    preferences: tuple[Preference, ...]
    rounds: int = 6
    agents: int = 4
    tasks_per_agent: int = 3
    seed: int = 7
    name: str = "fleet"
    tickets: bool = False  # a ticket desk: every task is a customer's fault ticket
    schedule: list[list[Task]] = field(default_factory=list)

    def __post_init__(self):
        rng = random.Random(self.seed)
        for r in range(1, self.rounds + 1):
            tasks = []
            for a in range(1, self.agents + 1):
                for t in range(1, self.tasks_per_agent + 1):
                    tid = f"r{r}-a{a}-t{t}"
                    if self.tickets:
                        emotion = rng.choices(("angry", "disappointed", "neutral"), (0.35, 0.25, 0.4))[0]
                        tasks.append(Task(r, f"agent-{a}", tid, ticket=Ticket(emotion, rng.random(),
                                                                                rng.random() < 0.4)))
                    elif self.preferences and rng.random() < 0.25:
                        tasks.append(Task(r, f"agent-{a}", tid, user=rng.choice(self.preferences)))
                    else:
                        open_now = [t for t in self.traps if t.appears_at <= r]
                        new = [t for t in open_now if t.appears_at == r]
                        pick = new[0] if new and not any(x.trap in new for x in tasks if x.trap) else \
                            rng.choice(open_now)
                        tasks.append(Task(r, f"agent-{a}", tid, trap=pick))
            self.schedule.append(tasks)


TRAPS = (
    Trap("IAM", "change a user's permissions", "submit the change as the normal account", "normal account",
         "success message", "no response after clicking submit",
         "switch to the admin account, then submit once", "admin account"),
    Trap("Billing", "export the monthly invoice report", "run the export on the live billing database", "analyst",
         "a CSV download", "query killed after 30s timeout", "run the export on the reporting replica",
         "reporting replica"),
    Trap("Deploy", "deploy the payments service to production", "run the deploy pipeline directly",
         "release engineer", "pipeline starts", "blocked: change ticket required",
         "open a change ticket first, then run the deploy pipeline", "change ticket",
         changes_at=4, new_fix="book a slot on the release train, then deploy", new_key="release train",
         new_actual="blocked: deploys go through the release train now"),
    Trap("CRM", "bulk-update customer tags", "send all rows in one update request", "ops agent", "rows updated",
         "HTTP 413 payload too large", "update the rows in batches of 200", "batches of 200"),
    Trap("工单系统", "关闭客户投诉工单", "直接点击关闭按钮", "客服", "工单已关闭", "提示：需要先填写处理结果",
         "先填写处理结果，再关闭工单", "处理结果"),
    # Conflicting scoped rules: the same system, another rule per environment.
    Trap("Vault", "read the payments database password", "read the secret with the service token", "service",
         "the secret", "403 permission denied", "request a break-glass token from the on-call lead",
         "break-glass token", env="prod"),
    Trap("Vault", "read the payments database password", "read the secret with the service token", "service",
         "the secret", "403 permission denied", "use the shared dev token from the test vault", "shared dev token",
         env="test"),
    # Unseen systems built like known ones (transfer): first contact in round 3 and 5.
    Trap("IAM-EU", "change a user's permissions", "submit the change as the normal account", "normal account",
         "success message", "no response after clicking submit",
         "switch to the admin account, then submit once", "admin account", appears_at=3, like="IAM"),
    Trap("CRM-Asia", "bulk-update customer tags", "send all rows in one update request", "ops agent",
         "rows updated", "HTTP 413 payload too large", "update the rows in batches of 200", "batches of 200",
         appears_at=5, like="CRM"),
)
PREFERENCES = (
    Preference("alice", "I prefer answers in Chinese, please", "in Chinese"),
    Preference("bob", "from now on please keep answers under five bullet points", "five bullet points"),
)


def default_world(seed: int = 7, rounds: int = 6) -> World:
    return World(TRAPS, PREFERENCES, rounds=rounds, seed=seed)


def ticket_world(seed: int = 7, rounds: int = 10) -> World:
    """A ticket desk: 12 tickets a round; beliefs need volume, so it runs longer."""
    return World((), (), rounds=rounds, seed=seed, name="tickets", tickets=True)
