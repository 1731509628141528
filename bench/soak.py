"""Soak test of ``hindbrain serve`` (design.md §issue-19 point 5): a simulated fleet for minutes on end.

    python bench/soak.py                            # 50 agents for 10 minutes: the run of record
    python bench/soak.py --minutes 1 --agents 10    # a quick run (15-second windows)

1. Starts a real ``hindbrain serve`` (its defaults: the USE embedder, ``--replicas auto``) on an
   empty brain in a temporary home, with one API key per tenant (``--tenants``), and waits
   for ``/readyz`` (bench/serve.py's ``serve``).
2. Runs ``--agents`` agents, one keep-alive HTTP connection each, for ``--minutes``. An agent
   works tasks of the fleet simulator's world (``hindbrain.sim.world.TRAPS``: systems with
   hidden rules, one of which changes halfway) with the simulator's policy
   (``hindbrain.sim.run.choose``: act on the first injected item that names a fix, else the
   naive action): perceive the task, recall at task start, sometimes perceive a batch of tool
   output (bench/api.py's distinct events), act; on a failure perceive the anomaly and
   recall again; report the outcome naming the recall and the items applied; now and then
   ``learn`` the lesson a human showed. Between calls an agent thinks (exponential,
   ``--think`` seconds on average: a model call), so the offered load is a fleet's, not a
   stress test's; the offered and achieved request rates are printed. Then, for
   ``--quiet-minutes`` (default a fifth of ``--minutes``), agents only recall and report
   outcomes: nothing is perceived, so memory growth there is not the index's.
3. Samples the resident memory (``/proc/<pid>/status`` VmRSS) of the server and of each
   recall replica (its child processes), and their CPU time (the server's cost per request,
   steadier than latency on a shared machine), every ``--sample`` seconds.
4. Prints per window (a minute by default): requests, errors by status, p50/p99 per route and
   the memory; at the end the error rate, the p99 of the last window against the first after
   the warm-up (one window), the memory growth from the end of the warm-up to the end (%,
   and per 1,000 events perceived, in each half of the run after the warm-up: a leak keeps
   growing when the data does not, the index grows with what is perceived), and the loss
   check after a clean stop (SIGTERM): every acknowledged event, outcome, recall and learned
   unit id is in the log exactly once and in the views. PASS/MISS per target (design.md §issue-19):
   0 lost, p99 stable within 2x, memory growth < 10 % after warm-up.

The load generator shares the machine's cores with the server; absolute latencies on a
shared machine are noisy, the ratios less so.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib.util
import os
import random
import signal
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from hindbrain.schemas.codec import registry
from hindbrain.service.keys import KeyStore
from hindbrain.settings import Settings
from hindbrain.sim.arms import Injected
from hindbrain.sim.run import choose
from hindbrain.sim.world import TRAPS, Trap
from hindbrain.streams.sqlite_log import SqliteLog


def _bench(name: str):
    """A sibling bench module (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", Path(__file__).parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


serve_bench, api_bench = _bench("serve"), _bench("api")
pct = serve_bench.pct
ROUTES = ("perceive", "perceive/batch", "recall", "outcome", "learn")
TOPIC_OF = {"events": "perceptions", "outcomes": "outcomes", "recalls": "recalls", "units": "cognitions"}
CHANGE_ROUND, ROUNDS = 4, 6  # the world's Deploy rule changes at round 4 of 6: here, halfway through the run


# -- what the agents saw --------------------------------------------------------------------------------
@dataclass
class Window:
    """One window of the run: every answered request's latency per route, and the statuses."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter = field(default_factory=Counter)  # (route, status or exception name)


@dataclass
class Tally:
    """What the fleet sent and was told, per window, and every id the server acknowledged."""

    start: float
    window: float
    windows: dict[int, Window] = field(default_factory=lambda: defaultdict(Window))
    acked: dict[str, list[str]] = field(default_factory=lambda: {kind: [] for kind in TOPIC_OF})
    answered: int = 0  # requests answered so far, whatever the status
    slow_s: float = float("inf")  # ``--slow-ms``: requests at least this slow are kept in ``slow``
    slow: list[tuple[float, str, float]] = field(default_factory=list)  # (wall clock at start, route, seconds)

    def record(self, route: str, status: int | str, latency: float) -> None:
        w = self.windows[int((time.perf_counter() - self.start) / self.window)]
        w.statuses[(route, status)] += 1
        self.answered += 1
        if status == 200:
            w.latencies[route].append(latency)
        if latency >= self.slow_s:
            self.slow.append((time.time() - latency, route, latency))

    def events(self) -> int:
        return len(self.acked["events"])


class Fleet:
    """The HTTP calls an agent makes, timed and tallied; ``None`` for anything but a 200."""

    def __init__(self, client: httpx.AsyncClient, tally: Tally):
        self.client, self.tally = client, tally

    async def post(self, route: str, body: dict) -> dict | None:
        t = time.perf_counter()
        try:
            answer = await self.client.post(f"/v1/{route}", json=body)
        except httpx.HTTPError as exc:  # a timeout or a dropped connection: an error, never acknowledged
            self.tally.record(route, type(exc).__name__, time.perf_counter() - t)
            return None
        self.tally.record(route, answer.status_code, time.perf_counter() - t)
        if answer.status_code != 200:
            return None
        return answer.json()

    async def perceive(self, **event) -> None:
        if (answer := await self.post("perceive", event)) is not None:
            self.tally.acked["events"].append(answer["event_id"])

    async def perceive_batch(self, events: list[dict]) -> None:
        if (answer := await self.post("perceive/batch", {"events": events})) is not None:
            self.tally.acked["events"] += answer["event_ids"]

    async def recall(self, **query) -> tuple[str | None, list[Injected]]:
        answer = await self.post("recall", {"budget_tokens": 160, **query})
        if answer is None:
            return None, []
        self.tally.acked["recalls"].append(answer["recall_id"])
        return answer["recall_id"], [Injected(i["id"], i["text"], i["tokens"])
                                     for i in (*answer["briefing"], *answer["items"])]

    async def outcome(self, **report) -> None:
        if (answer := await self.post("outcome", report)) is not None:
            self.tally.acked["outcomes"].append(answer["outcome_id"])

    async def learn(self, **unit) -> None:
        if (answer := await self.post("learn", unit)) is not None:
            self.tally.acked["units"].append(answer["fragment_id"])


# -- one agent ------------------------------------------------------------------------------------------
@dataclass
class Agent:
    """A simulated agent: the fleet simulator's trap tasks over HTTP, with think time."""

    name: str
    fleet: Fleet
    rng: random.Random
    think: float  # mean seconds between two calls
    deadline: float  # perf_counter time at which no new task starts
    quiet_until: float  # after the deadline until then, read-only tasks: recall and outcome, nothing perceived
    tasks: int = 0

    async def pause(self) -> None:
        await asyncio.sleep(self.rng.expovariate(1 / self.think))

    def round_no(self) -> int:
        elapsed = 1 - (self.deadline - time.perf_counter()) / (self.deadline - self.fleet.tally.start)
        return 1 + min(ROUNDS - 1, int(elapsed * ROUNDS))

    async def run(self) -> None:
        while (now := time.perf_counter()) < self.quiet_until:
            self.tasks += 1
            trap, task = self.rng.choice(TRAPS), f"{self.name}-t{self.tasks}"
            await (self.task(trap, task, self.round_no()) if now < self.deadline else self.look_up(trap, task))

    async def look_up(self, trap: Trap, task: str) -> None:
        """A read-only task (the quiet phase): recall, act, report; no event, so the index
        does not grow and any memory growth is the requests' own."""
        await self.pause()
        recall_id, injected = await self.fleet.recall(
            agent=self.name, task=task, query=f"{trap.task} in {trap.system}", trigger="task_start",
            scope=trap.scope, situation={"system": trap.system, "action": trap.naive})
        action, item = choose(injected, trap, tuple(t for t in TRAPS if t.system == trap.system and t is not trap))
        await self.report(recall_id, item, trap.works(action, ROUNDS), 1)

    async def task(self, trap: Trap, task: str, round_no: int) -> None:
        """One task as ``hindbrain.sim.run`` runs it: recall, act on what was injected, recall
        again on an anomaly, report the outcome naming the recall and what was applied."""
        rivals = tuple(t for t in TRAPS if t.system == trap.system and t is not trap)
        ids = {"agent": self.name, "task": task}
        common = {**ids, "system": trap.system, "entities": [trap.system], "scope": trap.scope}
        await self.pause()
        await self.fleet.perceive(kind="observation", text=f"task: {trap.task} (ticket {self.rng.randrange(10**6)})",
                                  **common)
        await self.pause()
        recall_id, injected = await self.fleet.recall(
            **ids, query=f"{trap.task} in {trap.system}", trigger="task_start", scope=trap.scope,
            situation={"system": trap.system, "action": trap.naive})
        if self.rng.random() < 0.3:  # the tool's output, several lines at once
            await self.pause()
            await self.fleet.perceive_batch([tool_output(self.rng, self.name, task)
                                             for _ in range(self.rng.randint(2, 8))])
        action, item = choose(injected, trap, rivals)
        await self.pause()
        if trap.works(action, round_no):
            await self.fleet.perceive(kind="action", action=action, identity=trap.identity, success=True,
                                      text=f"{trap.task}: done", **common)
            return await self.report(recall_id, item, True, 1)
        failure = trap.failure(round_no)
        await self.fleet.perceive(kind="anomaly", text=f"{failure} while trying to {trap.task}", action=action,
                                  identity=trap.identity, expected=trap.expected, actual=failure, **common)
        if item is not None:  # the applied lesson failed
            await self.report(recall_id, item, False, 1)
        await self.pause()
        recall_id, injected = await self.fleet.recall(**ids, trigger="anomaly", scope=trap.scope, situation={
            "system": trap.system, "identity": trap.identity, "action": action, "expected": trap.expected,
            "actual": failure})
        second, item = choose(injected, trap, rivals)
        await self.pause()
        if second != action and trap.works(second, round_no):
            await self.fleet.perceive(kind="action", action=second, identity=trap.identity, success=True,
                                      text=f"{trap.task}: done", **common)
            return await self.report(recall_id, item, True, 2)
        fix = trap.right_fix(round_no)  # a human does it; the agent sees how
        await self.fleet.perceive(kind="action", action=fix, identity=trap.identity, success=True,
                                  text=f"{trap.task}: done by a human", **common)
        await self.report(recall_id, None, False, 4)
        if self.rng.random() < 0.2:  # the agent writes the lesson down itself
            await self.pause()
            await self.fleet.learn(**ids, condition=f"{trap.task} in {trap.system} fails with {failure}",
                                   action=fix, reason=f"{trap.naive} does not work there", entities=[trap.system],
                                   scope=trap.scope)

    async def report(self, recall_id: str | None, item: Injected | None, success: bool, steps: int) -> None:
        await self.pause()
        await self.fleet.outcome(agent=self.name, recall_id=recall_id, applied=[item.id] if item else [],
                                 success=success, steps=steps)


def tool_output(rng: random.Random, agent: str, task: str) -> dict:
    """A line of a tool's output: bench/api.py's distinct event, as this agent's."""
    event = api_bench.event(rng, rng.randrange(10**9))
    del event["tenant"]
    return {**event, "agent": agent, "task": task, "kind": "observation"}


# -- the server's memory --------------------------------------------------------------------------------
def rss_bytes(pid: int) -> int | None:
    """A process's resident set (VmRSS), or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            line = next(line for line in status if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return None
    return int(line.split()[1]) * 1024


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user + system), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_of(pid: int) -> list[int]:
    """The live child processes of ``pid`` (the recall replicas of a server)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if parent == pid:
                found.append(int(entry))
    return sorted(found)


@dataclass(frozen=True)
class Sample:
    """The server at one moment: resident memory of the owner and each replica, the CPU time
    they used so far (a contention-free measure of the server's cost per request, where
    latency on a shared machine is not), the machine's load, and the events acknowledged."""

    at: float  # seconds since the fleet started
    owner: int
    replicas: dict[int, int]  # pid -> bytes
    events: int
    requests: int  # answered by then
    cpu: float  # seconds, owner and live replicas
    load: float  # the machine's 1-minute load average

    @property
    def total(self) -> int:
        return self.owner + sum(self.replicas.values())


def sample(pid: int, at: float, events: int, requests: int) -> Sample:
    children = children_of(pid)
    replicas = {c: rss for c in children if (rss := rss_bytes(c))}
    with open("/proc/loadavg") as loadavg:
        load = float(loadavg.read().split()[0])
    cpu = cpu_seconds(pid) + sum(map(cpu_seconds, children))
    return Sample(at, rss_bytes(pid) or 0, replicas, events, requests, cpu, load)


async def sample_server(pid: int, tally: Tally, every: float, samples: list[Sample], stop: asyncio.Event) -> None:
    while not stop.is_set():
        samples.append(sample(pid, time.perf_counter() - tally.start, tally.events(), tally.answered))
        await idle(stop, every)


async def idle(stop: asyncio.Event, seconds: float) -> None:
    """Wait ``seconds``, or less if ``stop`` is set meanwhile."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


# -- the run --------------------------------------------------------------------------------------------
async def run_fleet(port: int, keys: list[str], args, pid: int) -> tuple[Tally, list[Sample], float]:
    seconds, quiet = args.minutes * 60, args.quiet_minutes * 60
    tally = Tally(time.perf_counter(), args.window, slow_s=args.slow_ms / 1000 if args.slow else float("inf"))
    samples: list[Sample] = []
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample_server(pid, tally, args.sample, samples, stop))
    printer = asyncio.create_task(print_windows(tally, samples, args, stop))
    clients = [httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=args.timeout,
                                 headers={"Authorization": f"Bearer {keys[n % len(keys)]}"})
               for n in range(args.agents)]
    # The load generator's own full collections (25-50 ms measured with gc.callbacks) would
    # count in the latencies it measures: what is alive now lives as long as the run.
    gc.freeze()
    agents = [Agent(f"agent-{n}", Fleet(c, tally), random.Random(args.seed * 1000 + n), args.think,
                    tally.start + seconds, tally.start + seconds + quiet) for n, c in enumerate(clients)]
    await asyncio.gather(*(a.run() for a in agents))
    elapsed = time.perf_counter() - tally.start
    stop.set()
    await asyncio.gather(sampler, printer)
    for c in clients:
        await c.aclose()
    return tally, samples, elapsed


async def print_windows(tally: Tally, samples: list[Sample], args, stop: asyncio.Event) -> None:
    """Each window's line as soon as it is over (the run is long: show it going)."""
    shown = 0
    while True:
        done = int((time.perf_counter() - tally.start) / args.window)
        while shown < done:
            print(window_line(shown, tally, samples) + ("  (quiet)" if shown * args.window >= args.minutes * 60
                                                        else ""), flush=True)
            shown += 1
        if stop.is_set():  # the tail: tasks in flight at the deadline finishing
            for n in range(shown, max(tally.windows, default=-1) + 1):
                print(window_line(n, tally, samples) + "  (tail)", flush=True)
            return
        await idle(stop, 1.0)


def window_line(n: int, tally: Tally, samples: list[Sample]) -> str:
    w = tally.windows.get(n, Window())
    requests = sum(w.statuses.values())
    errors = Counter(status for (_, status), k in w.statuses.items() for _ in range(k) if status != 200)
    routes = "  ".join(f"{r} {ms(pct(v, .5))}/{ms(pct(v, .99))}" for r in ROUTES if (v := w.latencies.get(r)))
    server = ""
    if (span := bracket(samples, n * tally.window, (n + 1) * tally.window)) is not None:
        cpu = cpu_per_request(tally, samples, n)
        server = (f"  | rss {mb(span[1].total)}, server CPU {'-' if cpu is None else ms(cpu)} ms/request, "
                  f"load {span[1].load:.1f}")
    return (f"  window {n + 1:>2} ({n * tally.window:>4.0f}-{(n + 1) * tally.window:.0f} s): {requests:>6} requests, "
            f"errors {dict(errors) or 0}  p50/p99 ms: {routes}{server}")


def bracket(samples: list[Sample], start: float, end: float) -> tuple[Sample, Sample] | None:
    """The samples nearest a window's start and end (None before there are two)."""
    if len(samples) < 2:
        return None
    a = min(samples, key=lambda s: abs(s.at - start))
    b = min(samples, key=lambda s: abs(s.at - end))
    return (a, b) if b.at > a.at else None


def ms(seconds: float) -> str:
    return f"{1000 * seconds:.0f}" if seconds >= 0.1 else f"{1000 * seconds:.1f}"


def mb(n: float) -> str:
    return f"{n / 2**20:,.0f} MB"


# -- the loss check -------------------------------------------------------------------------------------
def logged_ids(log_path: Path) -> dict[str, Counter]:
    """Per kind (events, outcomes, recalls, units), how often each record id is in the log."""
    log = SqliteLog(log_path)
    try:
        counts = {}
        for kind, topic in TOPIC_OF.items():
            ids, offset = Counter(), 0
            while entries := log.read(topic, 0, offset, 10_000):
                ids.update(registry.decode(e.value)[1]["envelope"]["record_id"] for e in entries)
                offset = entries[-1].offset + 1
            counts[kind] = ids
        return counts
    finally:
        log.close()


def in_views(home: Path) -> dict[str, set[str]]:
    """The event and outcome ids of the views, read through a Brain opened on the stopped server's home."""
    from hindbrain import Brain

    with Brain.open(home, embedder="none") as brain:
        return {"events": {r["event_id"] for r in brain.sql("SELECT event_id FROM events")},
                "outcomes": {r["outcome_id"] for r in brain.sql("SELECT outcome_id FROM outcomes")}}


@dataclass(frozen=True)
class Loss:
    kind: str
    acked: int
    lost: int  # acknowledged, not in the log
    duplicated: int  # in the log more than once
    unacked: int  # in the log, never acknowledged (a timeout's request that was written; the learner's units)
    missing_in_views: int | None = None


def loss(kind: str, acked: list[str], logged: Counter, views: set[str] | None) -> Loss:
    ids = set(acked)
    return Loss(kind, len(ids), len(ids - logged.keys()), sum(1 for n in logged.values() if n > 1),
                len(logged.keys() - ids), None if views is None else len(ids - views))


# -- the verdicts ---------------------------------------------------------------------------------------
def p99_ratios(tally: Tally, warmup: int, windows: int) -> dict[str, tuple[float, float, float]]:
    """Per route (and all together): p99 of the first window after the warm-up, of the last
    full window (of ``windows``: the tail after the deadline, tasks finishing, is left out),
    and the worst window after the warm-up as a ratio to the first."""
    full = [n for n in sorted(tally.windows) if warmup <= n < windows]
    out = {}
    for route in (*ROUTES, "all"):
        def p99(n: int, route=route) -> float | None:
            lat = tally.windows[n].latencies
            values = [x for v in lat.values() for x in v] if route == "all" else lat.get(route, [])
            return pct(values, .99) if len(values) >= 20 else None  # a p99 of fewer is one sample

        series = [(n, p) for n in full if (p := p99(n)) is not None]
        if len(series) >= 2:
            first = series[0][1]
            out[route] = (first, series[-1][1], max(p for _, p in series[1:]) / first)
    return out


def memory_growth(samples: list[Sample], warmup_s: float, end_s: float) -> dict:
    """RSS at the end of the warm-up and at the end of the run (``end_s``, before the quiet
    phase); growth in %, and per 1,000 events perceived over the run after the warm-up and in
    each of its halves: the index grows with what is perceived, steadily per event; a leak
    shows as growth per event that rises, or as growth without events, which the quiet phase
    measures (from the first sample after the last event was acknowledged to the last)."""
    after = [s for s in samples if warmup_s <= s.at <= end_s]
    if len(after) < 3:
        return {}
    first, last = after[0], after[-1]
    middle = min(after, key=lambda s: abs(s.at - (first.at + last.at) / 2))

    def per_k(a: Sample, b: Sample) -> float | None:
        return (b.total - a.total) / (b.events - a.events) * 1000 if b.events > a.events else None

    quiet = [s for s in samples if s.at > end_s and s.events == samples[-1].events]
    return {"warm": first, "end": last, "growth": (last.total - first.total) / first.total,
            "per_k": per_k(first, last), "per_k_halves": (per_k(first, middle), per_k(middle, last)),
            "peak": max(s.total for s in after), "quiet": (quiet[0], quiet[-1]) if len(quiet) >= 2 else None}


def cpu_per_request(tally: Tally, samples: list[Sample], n: int) -> float | None:
    """The server's CPU seconds (owner and replicas) per request answered in window ``n``."""
    span = bracket(samples, n * tally.window, (n + 1) * tally.window)
    requests = sum(tally.windows[n].statuses.values()) if n in tally.windows else 0
    return (span[1].cpu - span[0].cpu) / requests if span and requests else None


def quiet_line(quiet: tuple[Sample, Sample] | None, args) -> str:
    if quiet is None:
        return "  quiet phase: too few samples after the last event (--quiet-minutes longer than --sample)"
    a, b = quiet
    return (f"  quiet phase (recall and outcome only, {args.quiet_minutes:g} min; measured {a.at:.0f}-{b.at:.0f} s): "
            f"{mb(a.total)} -> {mb(b.total)} ({(b.total - a.total) / a.total:+.1%}; owner {mb(a.owner)} -> "
            f"{mb(b.owner)}, replicas {mb(a.total - a.owner)} -> {mb(b.total - b.owner)}) over "
            f"{b.requests - a.requests:,} requests, no new event")


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def summary(args, tally: Tally, samples: list[Sample], elapsed: float, losses: list[Loss],
            stderr_tracebacks: int) -> list[str]:
    warmup = max(1, round(args.warmup / args.window))
    statuses = Counter()
    for w in tally.windows.values():
        statuses.update(w.statuses)
    total = sum(statuses.values())
    errors = Counter(status for (_, status), k in statuses.items() for _ in range(k) if status != 200)
    by_route = Counter(route for (route, _), k in statuses.items() for _ in range(k))
    lines = [f"\n{args.agents} agents, {args.tenants} tenant(s), {elapsed / 60:.1f} min, think {args.think} s, "
             f"embedder {args.embedder}, replicas {args.replicas}",
             f"requests {total:,}: offered {args.agents / args.think:.0f}/s (at zero latency), achieved "
             f"{total / elapsed:.1f}/s; " + ", ".join(f"{r} {by_route[r]:,}" for r in ROUTES),
             f"events acknowledged {tally.events():,} ({tally.events() / elapsed:.1f}/s)",
             f"errors {sum(errors.values())} ({sum(errors.values()) / max(total, 1):.3%}): {dict(errors) or 'none'}; "
             f"tracebacks in the server's output: {stderr_tracebacks}"]
    windows = round(args.minutes * 60 / args.window)
    ratios = p99_ratios(tally, warmup, windows)
    lines.append(f"p99 after the warm-up ({warmup} window(s) of {args.window:.0f} s): first window -> last, "
                 "worst window / first")
    for route, (first, last, worst) in ratios.items():
        lines.append(f"  {route:<15} {ms(first):>6} -> {ms(last):>6} ms  last/first {last / first:.2f}x  "
                     f"worst/first {worst:.2f}x")
    cpu = [c for n in range(warmup, windows) if (c := cpu_per_request(tally, samples, n)) is not None]
    if len(cpu) >= 2:
        lines.append(f"  server CPU per request {ms(cpu[0])} -> {ms(cpu[-1])} ms (last/first {cpu[-1] / cpu[0]:.2f}x); "
                     f"machine load {min(s.load for s in samples):.1f}-{max(s.load for s in samples):.1f} "
                     f"on {os.cpu_count()} cores")
    growth = memory_growth(samples, warmup * args.window, args.minutes * 60)
    if growth:
        warm, end = growth["warm"], growth["end"]
        halves = " / ".join("-" if h is None else mb(h) for h in growth["per_k_halves"])
        per_k = "-" if growth["per_k"] is None else mb(growth["per_k"])
        lines += [f"memory (RSS, server + {len(end.replicas)} replica(s)): {mb(warm.total)} at {warm.at:.0f} s "
                  f"(owner {mb(warm.owner)}, replicas {', '.join(mb(r) for r in warm.replicas.values()) or '-'}) -> "
                  f"{mb(end.total)} at {end.at:.0f} s (owner {mb(end.owner)}, replicas "
                  f"{', '.join(mb(r) for r in end.replicas.values()) or '-'}); peak {mb(growth['peak'])}",
                  f"  growth {growth['growth']:+.1%} over {end.events - warm.events:,} events: {per_k} per 1k events "
                  f"(first half / second half after the warm-up: {halves})",
                  quiet_line(growth["quiet"], args),
                  f"  replica processes seen: {len({p for s in samples for p in s.replicas})} "
                  f"(a restarted replica is a new pid)"]
    lines.append("loss check after a clean stop (acknowledged ids vs the log, and the views):")
    for x in losses:
        views = "" if x.missing_in_views is None else f", missing in the views {x.missing_in_views}"
        lines.append(f"  {x.kind:<9} acknowledged {x.acked:>7,}: lost {x.lost}, duplicated in the log {x.duplicated}"
                     f", in the log unacknowledged {x.unacked:,}{views}")
    lost = sum(x.lost + x.duplicated + (x.missing_in_views or 0) for x in losses)
    route_ratios = [last / first for route, (first, last, _) in ratios.items() if route != "all"]
    lines += [f"{verdict(lost == 0 and total > 0)}  0 lost: {lost} lost, duplicated or missing in the views",
              f"{verdict(bool(route_ratios) and max(route_ratios) <= 2)}  p99 stable within 2x: last/first "
              f"{max(route_ratios, default=float('nan')):.2f}x at worst over the routes",
              f"{verdict(bool(growth) and growth['growth'] < 0.10)}  memory growth < 10 % after warm-up: "
              f"{growth['growth']:+.1%}" if growth else "MISS  memory growth: too few samples after the warm-up"]
    return lines


def count_tracebacks(path: Path) -> int:
    return path.read_text(errors="replace").count("Traceback (most recent call last)")


def tracebacks(path: Path, most: int = 3, context: int = 3) -> list[str]:
    """The server output's first ``most`` tracebacks, each with the ``context`` lines before it:
    the output lives in the run's temporary folder, so what went wrong is printed before it goes."""
    lines = path.read_text(errors="replace").splitlines()
    out: list[str] = []
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
    for start in starts[:most]:
        end = start + 1
        while end < len(lines) and (lines[end].startswith((" ", "\t")) or not lines[end].strip()):
            end += 1  # the frames are indented; the exception's own line ends the traceback
        out += ["", f"server output, lines {max(start - context, 0) + 1}-{end + 1}:"]
        out += lines[max(start - context, 0): end + 1]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=50)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--tenants", type=int, default=5, help="API keys, one tenant each; agents take them in turn")
    ap.add_argument("--think", type=float, default=1.0, help="an agent's mean seconds between two calls")
    ap.add_argument("--quiet-minutes", type=float, help="then read-only tasks (recall, outcome) for this long: "
                                                        "memory with no new data (default: a fifth of --minutes)")
    ap.add_argument("--window", type=float, help="seconds per reported window (default 60, or a quarter of a "
                                                 "shorter run)")
    ap.add_argument("--warmup", type=float, help="seconds of warm-up, excluded from the ratios (default: a window)")
    ap.add_argument("--sample", type=float, default=5.0, help="seconds between memory samples")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds before a request counts as an error")
    ap.add_argument("--embedder", default=Settings.model_fields["embedder"].default,
                    help="HINDBRAIN_EMBEDDER of the server (default: the product's default)")
    ap.add_argument("--replicas", default="auto")
    ap.add_argument("--port", type=int, default=18000 + random.randrange(1000))
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--slow", type=Path, help="write each request at least --slow-ms slow here (wall clock time at "
                                              "its start, route, ms): to line up with a trace of the server's stalls")
    ap.add_argument("--slow-ms", type=float, default=50.0)
    args = ap.parse_args()
    args.window = args.window or min(60.0, args.minutes * 60 / 4)
    args.warmup = args.warmup if args.warmup is not None else args.window
    args.quiet_minutes = args.quiet_minutes if args.quiet_minutes is not None else args.minutes / 5
    with tempfile.TemporaryDirectory(prefix="hindbrain-soak-") as tmp:
        home, output = Path(tmp) / "brain", Path(tmp) / "serve.log"
        keys = [KeyStore(home).create(f"tenant-{n}", "soak") for n in range(args.tenants)]
        with output.open("w") as out:
            proc = serve_bench.serve(home, args.port, args.embedder, args.replicas, output=out)
            try:
                print(f"hindbrain serve ready on :{args.port} (pid {proc.pid}); {args.agents} agents for "
                      f"{args.minutes:g} min, windows of {args.window:.0f} s", flush=True)
                tally, samples, elapsed = asyncio.run(run_fleet(args.port, keys, args, proc.pid))
            finally:
                proc.send_signal(signal.SIGTERM)  # a clean stop: the brain closes, the group commits
                code = proc.wait(timeout=120)
        logged = logged_ids(home / "log.sqlite")
        views = in_views(home)
        losses = [loss(kind, tally.acked[kind], logged[kind], views.get(kind)) for kind in TOPIC_OF]
        lines = summary(args, tally, samples, elapsed, losses, count_tracebacks(output))
        lines.insert(1, f"server exit code {code} after SIGTERM")
        lines += tracebacks(output)
    if args.slow:
        args.slow.write_text("".join(f"{t:.3f} {route} {s * 1000:.1f}\n" for t, route, s in sorted(tally.slow)))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
