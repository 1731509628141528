"""Distributed-mode benchmarks against a real Kafka broker, each beside its embedded baseline.

    HINDBRAIN_KAFKA=127.0.0.1:19092 python bench/distributed.py [--events N] [--repeats R]

Prints, as medians of R runs (default 3):
1. producer: records/s appended by one process (KafkaLog, acks=all) vs the SQLite log;
2. end to end: ~1 KB events/s from Kafka into the views by ONE `hindbrain worker` process
   (each engine: Faust, and aiokafka, the default; chDB views), timed from its first commit
   to its last, vs the embedded runner
   projecting the same records;
3. replay from Kafka (every partition from offset 0) vs replay from the SQLite log, in-process
   and with 2 worker processes (chunks of partitions, each worker on its own connection);
4. recall freshness: p50/p99 seconds from another process's append to "recallable" in a
   Brain's index (its IndexTail), target p99 <= 1 s;
5. the columnar decode (streams/columnar.py) against the per-record path it replaces, both in
   this run (HINDBRAIN_COLUMNAR_DECODE=0 is the baseline): replay in-process and the worker;
   and both straight into chDB (HINDBRAIN_KAFKA_BATCHES=0 is the columnar baseline): replay
   of the Kafka record batches (streams/kafka_batches.py), the worker on the same record batches
   (KafkaProjector: paused perception partitions, one INSERT…SELECT a partition and fetch);
   the three replays' digests are checked equal;
6. the embedder group (streams/embedders.py): texts/s into the vectors topic with 1 and 2
   `hindbrain embedder` processes (one BLAS thread each), per worker, and the workers a
   5,000 ev/s shard needs at that rate.
Each run uses fresh topic names (a unique prefix) and fresh temporary folders. ``--only`` picks
sections (producer, e2e, replay, freshness, columnar, embedders).

    python bench/distributed.py --replica-start 100000 [--replica-modes restore,fold[,rebuild]] [--owner]
        [--replica-home DIR] [--no-graph] [--baseline-repeats B] [--replica-vectors 1000000] [--repeats R]

needs no broker: it times a recall replica's start (design.md §issue-28, point 4) on a home of N
events, each start in a fresh process: ``restore`` (the owner's snapshot: read model and vectors,
then the log after it), ``fold`` (the vectors mapped, the whole log folded: the start before
``recall.index_snapshot``), ``rebuild`` (no snapshot), R rounds alternating, medians and their
ratios against the last mode; ``--owner`` also times the owner's reopen (its own snapshot vs the
views); ``--replica-vectors M`` also
times the vector layer alone at M synthetic 512-d vectors (the graph build a replica used to
redo, vs checking and mapping the saved files).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from hindbrain.brain import Brain
from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.codec import registry
from hindbrain.schemas.records import envelope
from hindbrain.streams.kafka_log import KafkaLog
from hindbrain.streams.log import Message
from hindbrain.streams.replay import replay
from hindbrain.streams.runner import EmbeddedRunner
from hindbrain.streams.sqlite_log import SqliteLog
from hindbrain.streams.topics import TOPICS, key_of

WORDS = [f"{w}{i}" for i in range(400) for w in ("deploy", "submit", "IAM", "timeout", "账户", "权限")]


def one_kb_messages(n: int, seed: int) -> list[Message]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        record = {
            "envelope": envelope("perception", f"tenant-{i % 8}", agent=f"agent-{i % 32}", task=f"task-{i}"),
            "kind": "message", "text": " ".join(rng.choices(WORDS, k=120))[:900], "system": "IAM",
            "identity": None, "action": None, "expected": None, "actual": None, "entities": ["IAM"],
            "scope": {"env": "prod"}, "signal": None, "success": None, "polarity": None, "session": None,
            "speaker": None, "emotion": None,
        }
        out.append(Message("perceptions", key_of(record), registry.encode("perception", record)))
    return out


def rate(n: int, seconds: float) -> float:
    return n / seconds if seconds else float("inf")


def bench_producer(kafka: str, messages: list[Message], folder: Path) -> tuple[float, float]:
    log = KafkaLog(kafka, prefix=f"bench-{uuid.uuid4().hex[:8]}.")
    try:
        log.partitions("perceptions")  # topic creation is not part of the number
        t0 = time.perf_counter()
        for i in range(0, len(messages), 5000):
            log.append(messages[i : i + 5000])
        kafka_rate = rate(len(messages), time.perf_counter() - t0)
    finally:
        log.close()
    sqlite = SqliteLog(folder / "producer.sqlite")
    t0 = time.perf_counter()
    for i in range(0, len(messages), 5000):
        sqlite.append(messages[i : i + 5000])
    sqlite.close()
    return kafka_rate, rate(len(messages), time.perf_counter() - t0)


def wait_committed(log: KafkaLog, group: str, timeout_s: float = 300) -> tuple[float, float, int]:
    """(time of the first progress, time everything was committed, records the first progress
    seen covered) of ``group``."""
    ends = {(t.name, p): log.end_offset(t.name, p) for t in TOPICS for p in log.partitions(t.name)}
    first, covered = None, 0
    deadline = time.monotonic() + timeout_s
    while True:
        done = {k: log.committed(group, *k) for k in ends}
        if first is None and any(done.values()):
            first, covered = time.perf_counter(), sum(done.values())
        if all(done[k] >= ends[k] for k in ends):
            return first or time.perf_counter(), time.perf_counter(), covered
        if time.monotonic() > deadline:
            raise TimeoutError(f"{group} stuck at {done} of {ends}")
        time.sleep(0.01)


def bench_end_to_end(kafka: str, messages: list[Message], folder: Path, engine: str = "faust") -> tuple[float, float]:
    prefix, group = f"bench-{uuid.uuid4().hex[:8]}.", f"bench-{uuid.uuid4().hex[:8]}"
    folder = folder / engine
    folder.mkdir()
    log = KafkaLog(kafka, prefix=prefix)
    try:
        for i in range(0, len(messages), 5000):
            log.append(messages[i : i + 5000])
        env = {**os.environ, "HINDBRAIN_KAFKA": kafka, "HINDBRAIN_KAFKA_PREFIX": prefix,
               "HINDBRAIN_WORKER_GROUP": group, "HINDBRAIN_CLICKHOUSE": f"chdb://{folder / 'worker-views'}",
               "HINDBRAIN_BATCH_SIZE": "5000", "HINDBRAIN_BATCH_WITHIN": "0.2"}
        worker = subprocess.Popen([sys.executable, "-m", "hindbrain.cli", "--home", str(folder), "worker",
                                   "--loglevel", "error", "--engine", engine], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            first, last, covered = wait_committed(log, group)
        finally:
            worker.terminate()
            worker.wait(60)
        # the first commit already covers a batch or more (a raw fetch per partition): count from there
        kafka_rate = rate(len(messages) - covered, last - first)
    finally:
        log.close()
    sqlite = SqliteLog(folder / "e2e.sqlite")
    sqlite.append(messages)
    warehouse = Warehouse(f"chdb://{folder / 'embedded-views'}")
    warehouse.migrate()
    t0 = time.perf_counter()
    EmbeddedRunner(sqlite, warehouse, batch_size=5000).catch_up(chunk=5000)
    embedded_rate = rate(len(messages), time.perf_counter() - t0)
    warehouse.close()
    sqlite.close()
    return kafka_rate, embedded_rate


def bench_replay(kafka: str, messages: list[Message], folder: Path, workers: int = 0) -> tuple[float, float]:
    """Replay from Kafka vs from the SQLite log, in-process or with ``workers`` processes."""
    log = KafkaLog(kafka, prefix=f"bench-{uuid.uuid4().hex[:8]}.")
    sqlite = SqliteLog(folder / f"replay-{workers}.sqlite")
    warehouse = Warehouse(f"chdb://{folder / 'replay-views'}", database=f"from_kafka_{workers}")
    try:
        for i in range(0, len(messages), 5000):
            log.append(messages[i : i + 5000])
        kafka_rate = replay(log, warehouse, workers=workers).records_per_second
        sqlite.append(messages)
        embedded = Warehouse(warehouse.url, database=f"from_sqlite_{workers}")
        embedded_rate = replay(sqlite, embedded, workers=workers).records_per_second
        embedded.close()
    finally:
        warehouse.close()
        log.close()
        sqlite.close()
    return kafka_rate, embedded_rate


def with_switches(switches: dict[str, bool], fn, *args, **kwargs):
    """``fn(*args)`` with each ``HINDBRAIN_*`` switch set on or off, restored after (env vars reach
    worker subprocesses): ``HINDBRAIN_COLUMNAR_DECODE`` (the columnar decode) and
    ``HINDBRAIN_KAFKA_BATCHES`` (perceptions straight into chDB)."""
    before = {name: os.environ.get(name) for name in switches}
    os.environ.update({name: "1" if on else "0" for name, on in switches.items()})
    try:
        return fn(*args, **kwargs)
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name)
            else:
                os.environ[name] = value


def switches(columnar: bool, batches: bool) -> dict[str, bool]:
    return {"HINDBRAIN_COLUMNAR_DECODE": columnar, "HINDBRAIN_KAFKA_BATCHES": batches}


def bench_kafka_replay(kafka: str, messages: list[Message], folder: Path, columnar: bool,
                       batches: bool = False) -> tuple[float, dict]:
    """Replay from Kafka in-process: (records/s, digest), with the columnar decode on or off and
    the record batches straight into chDB (``streams/kafka_batches.py``) on or off."""
    log = KafkaLog(kafka, prefix=f"bench-{uuid.uuid4().hex[:8]}.")
    warehouse = Warehouse(f"chdb://{folder / 'replay-views'}",
                          database=f"columnar_{int(columnar)}{int(batches)}_{uuid.uuid4().hex[:6]}")
    try:
        for i in range(0, len(messages), 5000):
            log.append(messages[i : i + 5000])
        report = with_switches(switches(columnar, batches), replay, log, warehouse)
        return report.records_per_second, report.digest
    finally:
        warehouse.close()
        log.close()


def event_messages(n: int, seed: int) -> list[Message]:
    """``bench/api.py``'s distinct structured events (en + zh, ~70 chars) as perceptions: the
    texts the embedded default's per-worker rate is measured on. From 128 agents: keys spread
    evenly over the 4 partitions (api.py's 8 agents put 5 of them on one partition, which
    capped what a second worker could take to 3/8 of the texts)."""
    from api import event

    rng = random.Random(seed)
    out = []
    for i in range(n):
        e = event(rng, i)
        record = {"envelope": envelope("perception", e["tenant"], agent=f"agent-{i % 128}", task=e["task"]),
                  "kind": e["kind"], "text": e["text"], "system": e["system"], "identity": None,
                  "action": e["action"], "expected": None, "actual": None, "entities": [], "scope": {},
                  "signal": None, "success": e.get("success"), "polarity": None, "session": None, "speaker": None,
                  "emotion": None}
        out.append(Message("perceptions", key_of(record), registry.encode("perception", record)))
    return out


def bench_pool(messages: list[Message]) -> float:
    """The embedded default's rate on the same texts: one ``recall.workers`` process, batches of 64."""
    from hindbrain.recall.workers import EmbedderPool

    texts = [registry.decode(m.value)[1]["text"] for m in messages]
    pool = EmbedderPool("use", 1)
    try:
        pool.embed_many([["warm-up"]])
        t0 = time.perf_counter()
        for i in range(0, len(texts), 64):
            pool.embed_many([texts[i : i + 64]])
        return rate(len(texts), time.perf_counter() - t0)
    finally:
        pool.close()


def bench_embedders(kafka: str, messages: list[Message], workers: int) -> float:
    """Texts/s that ``workers`` `hindbrain embedder` processes put into the vectors topic, from
    the first vector to the last (the model's load is not in the number)."""
    prefix, group = f"bench-{uuid.uuid4().hex[:8]}.", f"bench-{uuid.uuid4().hex[:8]}"
    log = KafkaLog(kafka, prefix=prefix)
    folder = Path(tempfile.mkdtemp(prefix="hb-emb-"))
    procs = []
    try:
        for i in range(0, len(messages), 5000):
            log.append(messages[i : i + 5000])
        log.partitions("vectors")
        env = {**os.environ, "HINDBRAIN_KAFKA": kafka, "HINDBRAIN_KAFKA_PREFIX": prefix,
               "HINDBRAIN_WORKER_GROUP": group, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1"}
        procs = [subprocess.Popen([sys.executable, "-m", "hindbrain.cli", "--home", str(folder / f"e{n}"),
                                   "embedder", "--loglevel", "error"], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for n in range(workers)]
        first = None
        deadline = time.monotonic() + 1800
        while True:
            done = sum(log.end_offset("vectors", p) for p in log.partitions("vectors"))
            if first is None and done:
                first = (time.perf_counter(), done)
            if done >= len(messages):
                return rate(done - first[1], time.perf_counter() - first[0])
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError(f"embedders stopped at {done} of {len(messages)} vectors")
            time.sleep(0.05)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(60)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def bench_freshness(kafka: str, folder: Path, samples: int = 200) -> tuple[float, float]:
    prefix = f"bench-{uuid.uuid4().hex[:8]}."
    other = KafkaLog(kafka, prefix=prefix)
    lags = []
    with Brain.open(folder / "fresh", kafka=kafka, kafka_prefix=prefix) as brain:
        for i in range(samples):
            record = {"envelope": envelope("perception", "acme", agent="other-agent"), "kind": "message",
                      "text": f"marker {i}", "system": None, "identity": None, "action": None, "expected": None,
                      "actual": None, "entities": [], "scope": {}, "signal": None, "success": None,
                      "polarity": None, "session": None, "speaker": None, "emotion": None}
            t0 = time.perf_counter()
            other.append([Message("perceptions", key_of(record), registry.encode("perception", record))])
            event_id = record["envelope"]["record_id"]
            while event_id not in brain.index.tenant("acme").by_id:
                time.sleep(0.001)
                assert time.perf_counter() - t0 < 10, "an event never became recallable"
            lags.append(time.perf_counter() - t0)
    other.close()
    lags.sort()
    return lags[len(lags) // 2], lags[int(len(lags) * 0.99) - 1]


def _bench_module(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{name}", Path(__file__).parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _settle(semantic, timeout: float = 3600.0) -> None:
    deadline = time.monotonic() + timeout
    while not semantic.settled() and time.monotonic() < deadline:
        time.sleep(0.2)


def replica_home(folder: Path, events: int, embedder: str, graph: bool = True) -> Path:
    """A closed brain of ``events`` distinct events (bench/api.py's), every text embedded, so its
    close wrote the snapshot a replica maps; ``graph``: every vector in its graph too (a 1M graph
    takes over an hour on one loaded core: without it the snapshot holds the vectors unbuilt,
    which a replica maps the same way and scans instead of walking). Kept if it exists."""
    home = folder / "home"
    if (home / "cache" / "vectors" / "CURRENT").exists():
        print(f"home: reusing {home}", flush=True)
        return home
    api = _bench_module("api")
    rng = random.Random(28)
    began = time.perf_counter()
    with Brain.open(home, embedder=embedder) as brain:
        for start in range(0, events, 5_000):
            brain.perceive_many([api.event(rng, n) for n in range(start, min(events, start + 5_000))])
        built = time.perf_counter()
        if brain.index.semantic is not None:
            brain.index.semantic.wait()
            if graph:
                _settle(brain.index.semantic)
        print(f"home: {events:,} events perceived in {built - began:.0f} s, vectors "
              f"{'settled' if graph else 'embedded'} {time.perf_counter() - built:.0f} s later; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    return home


def start_replica(home: Path, embedder: str, mode: str) -> dict:
    """A replica's read model started on ``home`` until it would announce itself (its log folded
    and its vectors settled): seconds per phase, model calls, bytes its vectors hold. ``mode``:
    ``restore`` (the snapshot's index and vectors, the log after it), ``fold`` (the vectors
    mapped, the whole log folded: HINDBRAIN_INDEX_SNAPSHOT=0, the start before
    ``recall.index_snapshot``) or ``rebuild`` (no snapshot: the vectors rebuilt too)."""
    from hindbrain.service.replica import Follower
    from hindbrain.settings import Settings

    snapshots, hidden = home / "cache" / "vectors", home / "cache" / "vectors.hidden"
    if mode == "rebuild":
        snapshots.rename(hidden)
    os.environ["HINDBRAIN_INDEX_SNAPSHOT"] = "0" if mode == "fold" else "1"
    try:
        t0 = time.perf_counter()
        follower = Follower(Settings(home=home, embedder=embedder))
        semantic = follower.index.semantic
        calls = []
        for model in filter(None, (semantic.embedder, semantic.static)) if semantic else ():
            embed = model.embed_passages
            model.embed_passages = lambda texts, embed=embed: (calls.append(len(texts)), embed(texts))[1]
        t1 = time.perf_counter()
        follower.catch_up()
        t2 = time.perf_counter()
        while follower.warming():
            time.sleep(0.05)
        t3 = time.perf_counter()
        tenant = next(iter(follower.index.tenants.values()))
        made = getattr(tenant.docs, "made", len(tenant.docs))
        out = {"total": t3 - t0, "open": t1 - t0, "fold": t2 - t1, "settle": t3 - t2, "texts embedded": sum(calls),
               "vector bytes": semantic.memory_bytes() if semantic else 0, "note": follower.vectors,
               "docs made": made, "rss": _rss()}
        follower.close()
        return out
    finally:
        os.environ.pop("HINDBRAIN_INDEX_SNAPSHOT", None)
        if mode == "rebuild":
            hidden.rename(snapshots)


def reopen_owner(home: Path, embedder: str, mode: str, settle_cap: float = 120.0) -> dict:
    """The owner's ``Brain.open`` on ``home``: ``restore`` (its own snapshot, the graph loaded) or
    ``load`` (HINDBRAIN_INDEX_SNAPSHOT=0: the index loaded from the views, the graph rebuilt in the
    background, as before). Seconds to open and until the vectors settle (at most ``settle_cap``
    more); the home is left as it was (no snapshot written at close)."""
    os.environ["HINDBRAIN_INDEX_SNAPSHOT"] = "0" if mode == "load" else "1"
    t0 = time.perf_counter()
    brain = Brain.open(home, embedder=embedder)
    t1 = time.perf_counter()
    semantic = brain.index.semantic
    while semantic is not None and not semantic.settled() and time.perf_counter() - t1 < settle_cap:
        time.sleep(0.1)
    t2 = time.perf_counter()
    settled = semantic is None or semantic.settled()
    brain.checkpoint_vectors = lambda: None  # measure, do not touch the home
    brain.close()
    return {"open": t1 - t0, "settle": t2 - t1, "settled": settled, "note": brain.index_start, "rss": _rss()}


def bench_owner_reopen(home: Path, repeats: int, embedder: str) -> None:
    runs: dict[str, list[dict]] = {"restore": [], "load": []}
    for n in range(repeats):
        for mode in runs:
            r = _in_child(reopen_owner, home, embedder, mode)
            runs[mode].append(r)
            print(f"owner round {n + 1} {mode}: open {r['open']:.2f} s, then vectors "
                  f"{'settled' if r['settled'] else 'still building'} after {r['settle']:.1f} s; RSS "
                  f"{r['rss'] / 2**20:,.0f} MiB; {r['note']}; load {os.getloadavg()[0]:.1f}", flush=True)
    med = {k: statistics.median(r["open"] for r in v) for k, v in runs.items()}
    settle = {k: statistics.median(r["settle"] for r in v) for k, v in runs.items()}
    print(f"\nowner reopen, median of {repeats}: restore {med['restore']:.2f} s (+{settle['restore']:.1f} s to "
          f"settle) vs load from the views {med['load']:.2f} s (+{settle['load']:.1f} s to settle, capped); "
          f"load/restore open {med['load'] / med['restore']:.1f}x")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def bench_replica_start(events: int, repeats: int, embedder: str, vectors: int, modes: list[str],
                        keep: Path | None = None, graph: bool = True, baseline_repeats: int | None = None,
                        owner: bool = False) -> None:
    folder = keep or Path(tempfile.mkdtemp(prefix="hb-replica-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        home = replica_home(folder, events, embedder, graph)
        runs: dict[str, list[dict]] = {mode: [] for mode in modes}
        for n in range(repeats):
            for mode in modes:
                if mode == modes[-1] and n >= (baseline_repeats or repeats):
                    continue  # a 1M fold is ~10 min a round here: fewer rounds of the baseline
                r = _in_child(start_replica, home, embedder, mode)  # a fresh process: nothing cached in it
                runs[mode].append(r)
                print(f"round {n + 1} {mode}: {r['total']:.2f} s (open {r['open']:.2f}, fold {r['fold']:.2f}, settle "
                      f"{r['settle']:.2f}), {r['texts embedded']:,} texts embedded, {r['docs made']:,} documents made "
                      f"objects, vectors hold {r['vector bytes'] / 2**20:.0f} MiB, RSS {r['rss'] / 2**20:,.0f} MiB; "
                      f"{r['note']}; load {os.getloadavg()[0]:.1f}", flush=True)
        med = {k: {f: statistics.median(r[f] for r in v) for f in ("total", "open", "fold", "settle", "rss")}
               for k, v in runs.items()}
        base = med[modes[-1]]["total"]
        print(f"\nreplica start at {events:,} events ({embedder} embedder), median of {repeats}: " + "; ".join(
            f"{mode} {m['total']:.2f} s (open {m['open']:.2f}, fold {m['fold']:.2f}, settle {m['settle']:.2f}, "
            f"RSS {m['rss'] / 2**20:,.0f} MiB; {modes[-1]}/{mode} {base / m['total']:.1f}x)"
            for mode, m in med.items()))
        if owner:
            bench_owner_reopen(home, repeats, embedder)
    finally:
        if keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    if vectors:
        bench_vector_layer(vectors)


def _in_child(fn, *args):
    """``fn(*args)`` in a fresh process (a replica is a process of its own: nothing this one
    loaded or cached helps it): its result, pickled back."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(fn, args)


def bench_vector_layer(n: int) -> None:
    """The vector part alone at ``n`` vectors: the graph a replica rebuilt vs the snapshot it maps."""
    import numpy as np

    from hindbrain.recall.snapshot_files import crc
    from hindbrain.recall.vectors import VectorIndex

    folder = Path(tempfile.mkdtemp(prefix="hb-vectors-"))
    try:
        rng = np.random.default_rng(28)
        centres = rng.normal(size=(2_000, 512)).astype(np.float32)
        index = VectorIndex(512)
        for start in range(0, n, 50_000):
            part = min(n, start + 50_000) - start
            vecs = centres[rng.integers(0, 2_000, part)] + 0.6 * rng.normal(size=(part, 512)).astype(np.float32)
            index.add(np.arange(start, start + part), vecs, defer_graph=True)
        t0 = time.perf_counter()
        index.build_graph(threads=2)  # 2 threads: the fastest rebuild there is (a replica's used 1)
        rebuilt = time.perf_counter() - t0
        t0 = time.perf_counter()
        meta = index.save(folder / "t0")
        saved = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in folder.iterdir())
        queries = centres[:50] + 0.6 * rng.normal(size=(50, 512)).astype(np.float32)
        want = [index.search(q, 10)[0].tolist() for q in queries]
        del index
        t0 = time.perf_counter()
        for p in folder.iterdir():
            crc(p)
        checked = time.perf_counter() - t0
        t0 = time.perf_counter()
        mapped = VectorIndex.mapped(folder / "t0", meta)
        opened = time.perf_counter() - t0
        t0 = time.perf_counter()
        got = [mapped.search(q, 10)[0].tolist() for q in queries]
        searched = (time.perf_counter() - t0) / len(queries)
        same = sum(a == b for a, b in zip(want, got, strict=True))
        print(f"vector layer at {n:,} vectors: rebuild (graph, 2 threads) {rebuilt:.1f} s vs snapshot: saved in "
              f"{saved:.1f} s ({size / 2**20:,.0f} MiB), CRC-checked in {checked:.2f} s, mapped in {opened:.3f} s, "
              f"first 50 searches {1000 * searched:.1f} ms each, {same}/50 top-10 identical to the saved index's; "
              f"rebuild/(check+map) {rebuilt / (checked + opened):,.0f}x; load {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="producer,e2e,replay,freshness,columnar,embedders",
                    help="comma-separated sections to run")
    ap.add_argument("--embed-texts", type=int, default=3000, help="distinct ~900-char texts for the embedder rows")
    ap.add_argument("--replica-start", type=int, default=0, metavar="N",
                    help="only time a replica's start on N events, old vs new (no broker needed)")
    ap.add_argument("--replica-vectors", type=int, default=0, metavar="M",
                    help="with --replica-start: also the vector layer alone at M vectors")
    ap.add_argument("--replica-embedder", default="static",
                    help="the brain's embedder there (default static: the home is built in minutes, not hours)")
    ap.add_argument("--replica-modes", default="restore,fold",
                    help="with --replica-start: restore (the snapshot), fold (vectors mapped, the log folded), "
                         "rebuild (no snapshot); ratios are against the last")
    ap.add_argument("--replica-home", type=Path, default=None,
                    help="with --replica-start: build the home here and keep it (reused when it exists)")
    ap.add_argument("--no-graph", action="store_true",
                    help="with --replica-start: do not wait for the owner's graph before its close")
    ap.add_argument("--baseline-repeats", type=int, default=None,
                    help="with --replica-start: rounds of the last (baseline) mode, if fewer than --repeats")
    ap.add_argument("--owner", action="store_true",
                    help="with --replica-start: also the owner's reopen, restored vs loaded from the views")
    args = ap.parse_args()
    only = set(args.only.split(","))
    if args.replica_start:
        return bench_replica_start(args.replica_start, args.repeats, args.replica_embedder, args.replica_vectors,
                                   args.replica_modes.split(","), args.replica_home, not args.no_graph,
                                   args.baseline_repeats, args.owner)
    kafka = os.environ.get("HINDBRAIN_KAFKA") or sys.exit("set HINDBRAIN_KAFKA=host:port (make kafka-up)")
    messages = one_kb_messages(args.events, seed=1)
    size = statistics.mean(len(m.value) for m in messages)
    runs: dict[str, list[float]] = {}
    for n in range(args.repeats):
        folder = Path(tempfile.mkdtemp(prefix="hb-dist-"))
        try:
            sections = (("producer", "producer", bench_producer), ("e2e", "end to end", bench_end_to_end),
                        ("e2e", "end to end aiokafka", lambda *a: bench_end_to_end(*a, engine="aiokafka")),
                        ("replay", "replay", bench_replay),
                        ("replay", "replay 2 workers", lambda *a: bench_replay(*a, workers=2)))
            for name, fn in ((name, fn) for section, name, fn in sections if section in only):
                kafka_value, embedded_value = fn(kafka, messages, folder)
                runs.setdefault(f"{name} kafka", []).append(kafka_value)
                runs.setdefault(f"{name} embedded", []).append(embedded_value)
                print(f"run {n + 1}: {name}: kafka {kafka_value:,.0f}/s, embedded {embedded_value:,.0f}/s", flush=True)
            if "columnar" in only:
                digest = None
                # The per-record baseline, the columnar decode through Arrow, and straight into chDB
                # (replay: the record batches; the worker: one INSERT…SELECT per fetch), same run.
                for label, on, direct in (("per-record", False, False), ("columnar", True, False),
                                          ("direct", True, True)):
                    r, same = bench_kafka_replay(kafka, messages, folder, on, batches=direct)
                    assert digest in (None, same), f"the {label} replay's digest differs from the per-record one"
                    digest = same
                    (folder / f"e2e-{label}").mkdir()
                    e2e, _ = with_switches(switches(on, direct), bench_end_to_end, kafka, messages,
                                           folder / f"e2e-{label}", engine="aiokafka")
                    runs.setdefault(f"replay {label}", []).append(r)
                    runs.setdefault(f"worker {label}", []).append(e2e)
                    print(f"run {n + 1}: {label}: replay {r:,.0f} rec/s, worker {e2e:,.0f} ev/s; "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)
            if "embedders" in only:
                texts = event_messages(args.embed_texts, seed=n)
                r = bench_pool(texts)
                runs.setdefault("embedders pool", []).append(r)
                print(f"run {n + 1}: 1 embedded-default worker process: {r:,.0f} texts/s", flush=True)
                for workers in (1, 2):
                    r = bench_embedders(kafka, texts, workers)
                    runs.setdefault(f"embedders {workers}", []).append(r)
                    print(f"run {n + 1}: {workers} embedder(s): {r:,.0f} texts/s", flush=True)
            if "freshness" in only:
                p50, p99 = bench_freshness(kafka, folder)
                runs.setdefault("freshness p50", []).append(p50)
                runs.setdefault("freshness p99", []).append(p99)
                print(f"run {n + 1}: freshness p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms", flush=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"\nhindbrain distributed bench: {args.events:,} events of ~{size:.0f} bytes, median of {args.repeats}")
    rows = (("producer records/s", "producer", 30_000),
            ("end-to-end events/s, 1 Faust worker", "end to end", 15_000),
            ("end-to-end events/s, 1 aiokafka worker", "end to end aiokafka", 15_000),
            ("replay records/s, in-process", "replay", 50_000),
            ("replay records/s, 2 worker processes", "replay 2 workers", 50_000))
    for label, key, target in rows:
        if f"{key} kafka" not in med:
            continue
        k, e = med[f"{key} kafka"], med[f"{key} embedded"]
        print(f"{label:<40}{k:>12,.0f}  target >= {target:,}  {'PASS' if k >= target else 'MISS'}"
              f"   embedded {e:,.0f} (kafka/embedded {k / e:.2f})")
    if "replay direct" in med:
        for what, target in (("replay", 50_000), ("worker", 15_000)):
            new, col, old = med[f"{what} direct"], med[f"{what} columnar"], med[f"{what} per-record"]
            print(f"{what + ' straight into chDB, /s':<40}{new:>12,.0f}  target >= {target:,}  "
                  f"{'PASS' if new >= target else 'MISS'}   columnar {col:,.0f} (x{new / col:.2f}), "
                  f"per-record {old:,.0f} (x{new / old:.2f}); columnar/per-record {col / old:.2f}")
    if "embedders 1" in med:
        one, two = med["embedders 1"], med["embedders 2"]
        print(f"{'embedder group texts/s, 1 / 2 workers':<40}{one:>12,.0f} / {two:,.0f}  per worker {one:,.0f} / "
              f"{two / 2:,.0f}  (2 vs 1: {two / one:.2f}x; embedded default's 1 worker: "
              f"{med['embedders pool']:,.0f}, group/default {one / med['embedders pool']:.2f})")
        print(f"{'embedders a 5,000 ev/s shard needs':<40}{math.ceil(5000 / one):>12}  at {one:,.0f} texts/s "
              f"each (a core each; distinct texts: repeats are deduped)")
    if "freshness p99" not in med:
        return
    p99 = med["freshness p99"]
    print(f"{'recall freshness p50 / p99 (s)':<40}{med['freshness p50']:>6.3f} / {p99:.3f}  target p99 <= 1 s  "
          f"{'PASS' if p99 <= 1 else 'MISS'}   embedded: immediate (same process)")


if __name__ == "__main__":
    main()
