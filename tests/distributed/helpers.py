"""Helpers for the worker proofs: a workload, real ``hindbrain worker`` processes, offsets, views.

chDB serves one process per folder, so every worker gets a folder of its own and this
process opens a worker's folder only after that worker exited (``dump_views``), one folder
at a time, closing it before the next.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from aiokafka.errors import KafkaError

from hindbrain.projections.views import TABLES
from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams.log import Message, Position
from hindbrain.streams.replay_chunk import project_entries
from hindbrain.streams.sink import insert_batch
from hindbrain.streams.topics import TOPIC_OF, TOPICS, key_of

T0 = 1_767_225_600_000_000  # a fixed clock: records are the same whoever makes them
GARBAGE = b"\x00 not an Avro record"
SOURCE_TOPICS = [t.name for t in TOPICS if t.name != "dead_letters"]
ALL_TOPICS = [*SOURCE_TOPICS, "dead_letters"]  # dead_letters last: workers append to it while projecting


# -- the workload ------------------------------------------------------------------------------
@dataclass
class Workload:
    messages: list[Message]
    garbage_at: int  # index in ``messages`` of the value that is not a record
    distinct: dict[str, int] = field(default_factory=dict)  # table -> distinct records (rows) expected

    def parts(self, n: int) -> list[list[Message]]:
        size = -(-len(self.messages) // n)
        return [self.messages[i:i + size] for i in range(0, len(self.messages), size)]


def _env(record_type: str, n: int, tenant: str, agent: str, causation=()) -> dict:
    return envelope(record_type, tenant, agent=agent, task=f"t-{n % 17}", record_id=f"{record_type[:2]}-{n}",
                    ts_us=T0 + n, causation_ids=causation)


def workload(rounds: int = 300) -> Workload:
    """About ``10 * rounds`` messages: per round 6 perceptions, 1 cognition, 1 recall, 1 injection,
    1 outcome, keyed by 3 tenants x 8 agents (so every partition of the 4-partition topics gets
    data); every 25th round a decision; every 10th round one record appended a second time
    (at-least-once delivery); one garbage value on ``perceptions`` at the first quarter."""
    records: list[tuple[str, dict]] = []
    duplicates: list[tuple[str, dict]] = []
    n = 0
    for r in range(rounds):
        tenant, agent = f"tenant-{r % 3}", f"agent-{r % 8}"
        for i in range(6):
            n += 1
            records.append(("perception", {
                "envelope": _env("perception", n, tenant, f"agent-{(r + i) % 8}"),
                "kind": "anomaly" if n % 5 == 0 else "message",
                "text": f"event {n}: 提交后没有响应 submit does nothing in system {n % 11}",
                "system": f"sys-{n % 11}", "identity": None, "action": None, "expected": None, "actual": None,
                "entities": [f"sys-{n % 11}"], "scope": {"env": "prod"}, "signal": None, "success": None,
                "polarity": None, "session": f"s-{r}", "speaker": "user" if i % 2 else "agent", "emotion": None,
            }))
        records.append(("cognition", {
            "envelope": _env("cognition", r, tenant, agent, causation=[f"pe-{n}"]), "fragment_id": f"fr-{r}",
            "condition": f"submit does nothing in sys-{r % 11}", "action": "switch to the admin account",
            "reason": "permission operations need admin", "evidence": f"worked as admin in round {r}",
            "scope": {"env": "prod"}, "source": "lived", "citation": None, "confidence": None, "seed": False,
            "event_ids": [f"pe-{n}", f"pe-{n - 1}"], "entities": [f"sys-{r % 11}"],
        }))
        records.append(("recall", {
            "envelope": _env("recall", r, tenant, agent), "recall_id": f"rc-{r}", "query": f"sys-{r % 11} submit",
            "situation": {"system": f"sys-{r % 11}"}, "trigger": "anomaly", "scope": {}, "budget_tokens": 200,
            "k": None, "layers": [], "score_names": [],
            "candidates": [{"item_id": i, "item_kind": "fragment", "score": 1.0, "why_json": None, "stage": None,
                            "reason": None, "scores": []}
                           for i in (f"fr-{r}", f"fr-{max(r - 1, 0)}")],
        }))
        records.append(("injection", {
            "envelope": _env("injection", r, tenant, agent, causation=[f"rc-{r}"]), "recall_id": f"rc-{r}",
            "budget_tokens": 200,
            "items": [{"item_id": f"fr-{r}", "item_kind": "fragment", "rank": 0, "tokens": 12, "score": 1.0,
                       "arm": None}],
        }))
        records.append(("outcome", {
            "envelope": _env("outcome", r, tenant, agent, causation=[f"rc-{r}"]), "recall_id": f"rc-{r}",
            "applied": [f"fr-{r}"], "success": r % 3 != 0, "steps": 1 + r % 4, "notes": None,
        }))
        if r % 25 == 0:
            records.append(("decision", {
                "envelope": _env("decision", r, tenant, "job"), "decision_id": f"dc-{r}", "kind": "belief_induced",
                "subject_ids": [f"be-{r}"], "evidence_ids": [f"pe-{n}"], "inputs_json": "{}", "reason": "cluster",
                "decided_by": {"job": "induce", "version": "1", "parameters_json": "{}"},
                "payload_json": json.dumps({"belief_id": f"be-{r}", "text": f"if sys-{r % 11} then admin",
                                            "confidence": 0.8, "support": 3}),
            }))
        if r % 10 == 5:
            duplicates.append(records[-1 - (r // 10) % 5])  # an outcome, injection, recall, ...
            records.append(duplicates[-1])  # the same record, appended again
    counts: dict[str, int] = {}
    for rt, _ in records:
        counts[rt] = counts.get(rt, 0) + 1
    dup_counts: dict[str, int] = {}
    for rt, _ in duplicates:
        dup_counts[rt] = dup_counts.get(rt, 0) + 1
    distinct = {rt: counts[rt] - dup_counts.get(rt, 0) for rt in counts}
    messages = [Message(TOPIC_OF[rt], key_of(rec), registry.encode(rt, rec)) for rt, rec in records]
    garbage_at = len(messages) // 4
    messages.insert(garbage_at, Message("perceptions", "tenant-1/agent-3", GARBAGE))
    return Workload(messages, garbage_at, {"events": distinct["perception"], "fragments": distinct["cognition"],
                               "recalls": distinct["recall"], "injections": distinct["injection"],
                               "outcomes": distinct["outcome"], "decisions": distinct["decision"],
                               "beliefs": distinct["decision"], "dead_letters": 1})


def produce(log, messages: list[Message], chunk: int = 500) -> list[Position]:
    out: list[Position] = []
    for i in range(0, len(messages), chunk):
        out += log.append(messages[i:i + chunk])
    return out


# -- offsets -------------------------------------------------------------------------------------
def ends(log, topics=ALL_TOPICS) -> dict[tuple[str, int], int]:
    return {(t, p): log.end_offset(t, p) for t in topics for p in log.partitions(t)}


def committed(log, group: str, topics=ALL_TOPICS, timeout_s: float = 30.0) -> dict[tuple[str, int], int]:
    """The group's committed offsets. Retries retriable broker errors: on a fresh broker the
    group coordinator (``__consumer_offsets``) takes a moment to exist."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return {(t, p): log.committed(group, t, p) for t in topics for p in log.partitions(t)}
        except KafkaError as exc:
            if not exc.retriable or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def wait_for(predicate, timeout_s: float, what: str, poll_s: float = 0.2, workers=()) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        for w in workers:
            w.check_alive()
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(poll_s)


def wait_until_committed_to_end(log, group: str, timeout_s: float, workers=()) -> dict[tuple[str, int], int]:
    """Wait until ``group`` committed every partition's end offset; source topics first, then
    dead_letters (whose end is known only once the garbage record was dead-lettered). Returns
    the end offsets; fails naming the partitions still behind."""
    deadline = time.monotonic() + timeout_s
    for topics in (SOURCE_TOPICS, ["dead_letters"]):
        target = ends(log, topics)
        while True:
            now = committed(log, group, topics)
            behind = {f"{t}[{p}]": f"committed {now[t, p]} < end {e}" for (t, p), e in target.items() if now[t, p] < e}
            if not behind:
                break
            for w in workers:
                w.check_alive()
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout_s}s waiting for group {group!r} to commit every "
                                     f"end offset; still behind: {behind}")
            time.sleep(0.2)
    return ends(log)


# -- workers -------------------------------------------------------------------------------------
class WorkerProcess:
    """A real ``python -m hindbrain.cli worker`` in a folder of its own (chDB: one process per folder)."""

    def __init__(self, name: str, folder: Path, *, bootstrap: str, prefix: str, group: str, views: Path,
                 batch_size: int = 200, script: Path | None = None, env: dict[str, str] | None = None,
                 engine: str | None = None):
        """``script``: run that file instead of ``hindbrain.cli worker`` (same HINDBRAIN_* settings);
        ``engine``: the worker's ``--engine`` (default: the CLI's)."""
        self.name, self.folder, self.views = name, folder, views
        self.terminated = False
        folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HINDBRAIN_KAFKA": bootstrap, "HINDBRAIN_KAFKA_PREFIX": prefix,
               "HINDBRAIN_WORKER_GROUP": group, "HINDBRAIN_CLICKHOUSE": f"chdb://{views}",
               "HINDBRAIN_BATCH_WITHIN": "0.2", "HINDBRAIN_BATCH_SIZE": str(batch_size),
               "HINDBRAIN_HOME": str(folder), "PYTHONUNBUFFERED": "1", **(env or {})}
        command = ([sys.executable, str(script)] if script else
                   [sys.executable, "-m", "hindbrain.cli", "--home", str(folder), "worker", "--loglevel", "warning",
                    *(["--engine", engine] if engine else [])])
        self.logfile = folder / f"{name}.log"
        with open(self.logfile, "ab") as out:  # cwd: Faust makes its data folder (<group>-data) there
            self.proc = subprocess.Popen(command, env=env, cwd=folder, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)

    def log_tail(self, lines: int = 40) -> str:
        text = self.logfile.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"worker {self.name} exited early with {self.proc.returncode}:\n{self.log_tail()}")

    def kill(self) -> None:
        """kill -9: no shutdown code runs, nothing more is committed."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def terminate(self) -> None:
        """SIGTERM (once) without waiting: the worker finishes its batch, commits and leaves its group."""
        if self.proc.poll() is None and not self.terminated:
            self.terminated = True
            self.proc.send_signal(signal.SIGTERM)

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM, and wait for a graceful exit; its exit status."""
        if self.proc.poll() is None:
            self.terminate()
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
                raise AssertionError(f"worker {self.name} did not stop within {timeout_s}s of SIGTERM:\n"
                                     f"{self.log_tail()}") from None
        return self.proc.returncode

    def ensure_dead(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


def group_members(kafka, group: str) -> tuple[str, list[set[tuple[str, int]]]]:
    """The consumer group's state and, per member, its assigned (log topic, partition)s."""
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

    async def describe(admin):
        return (await admin.describe_consumer_groups([group]))[0].to_object()["groups"][0]

    described = kafka.admin(describe)
    members = []
    for m in described["members"]:
        raw = m["member_assignment"]
        assigned = ConsumerProtocolMemberAssignment.decode(raw).assignment if raw else []
        members.append({(t.removeprefix(kafka.prefix), p) for t, parts in assigned for p in parts})
    return described["state"], members


# -- views ---------------------------------------------------------------------------------------
def reference_digest(log, url: str, upto: dict[tuple[str, int], int] | None = None, database: str = "reference"):
    """The views the records should make: every source partition read back from Kafka (up to
    ``upto[(topic, partition)]`` if given) and projected in this process with the pure projector
    (dead letters derived as rows, as a replay does) into ``database`` at ``url``; the
    dead_letters topic is not read, so the workers' output plays no part. Returns the digest."""
    wh = Warehouse(url, database=database)
    try:
        wh.migrate()
        for topic in SOURCE_TOPICS:
            for partition in log.partitions(topic):
                offset, stop = 0, (upto or {}).get((topic, partition))
                while (stop is None or offset < stop) and (entries := log.read(topic, partition, offset, 2000)):
                    entries = [e for e in entries if stop is None or e.offset < stop]
                    if not entries:
                        break
                    insert_batch(wh, project_entries(entries, T0))
                    offset = entries[-1].offset + 1
        return wh.digest()
    finally:
        wh.close()


def dump_views(views: Path, database: str = "hindbrain") -> tuple[dict[str, tuple[int, int]], dict[str, pa.Table]]:
    """A (stopped) worker's folder: its views' digest, and every row of every view with the
    log columns, as Arrow. Raw rows, not FINAL: redelivered duplicates are kept."""
    wh = Warehouse(f"chdb://{views}", database=database)
    try:
        dump = {name: wh._client.query_arrow(f"SELECT {', '.join(f'`{c}`' for c in t.column_names)} FROM `{name}`")
                for name, t in TABLES.items()}
        return wh.digest(), dump
    finally:
        wh.close()


def positions(dump: dict[str, pa.Table]) -> set[tuple[str, int, int]]:
    """The log positions of the records that made rows in these views (the records projected)."""
    out: set[tuple[str, int, int]] = set()
    for data in dump.values():
        cols = [data.column(c).to_pylist() for c in ("_topic", "_partition", "_offset")]
        out.update(zip(*cols, strict=True))
    return out


def merged_digest(url: str, dumps: list[dict[str, pa.Table]]) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    """Insert every dump into one fresh database: ``(digest, raw rows per table)``. The tables
    are ReplacingMergeTree keyed by record identity, so what two workers both projected (a
    redelivery) collapses into one row in the digest (FINAL)."""
    wh = Warehouse(url, database="merged")
    try:
        wh.migrate()
        raw = {}
        for name, table in TABLES.items():
            parts = [d[name].cast(table.arrow_schema()) for d in dumps if d[name].num_rows]
            raw[name] = sum(p.num_rows for p in parts)
            for part in parts:
                wh.insert_arrow(table, part)
        return wh.digest(), raw
    finally:
        wh.close()


# Tables with exactly one row per record (the others derive rows: beliefs, feedback signals).
RECORD_TABLES = ("events", "fragments", "recalls", "injections", "outcomes", "decisions", "dead_letters")


def record_keys(dump: dict[str, pa.Table]) -> dict[str, set[tuple]]:
    """Per table, the distinct row identities (its ORDER BY key) in these views."""
    out = {}
    for name, table in TABLES.items():
        cols = [dump[name].column(c).to_pylist() for c in table.order_by]
        out[name] = set(zip(*cols, strict=True))
    return out


def records_projected(keys: dict[str, set[tuple]]) -> int:
    return sum(len(keys[t]) for t in RECORD_TABLES)
