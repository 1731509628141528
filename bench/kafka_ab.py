"""Kafka replay and worker rates of two checkouts, interleaved on the same topics (old vs new).

    HINDBRAIN_KAFKA=127.0.0.1:19092 python bench/kafka_ab.py --old /work/main/.venv/bin/python \
        [--new .venv/bin/python] [--events 50000] [--repeats 5] [--only replay,worker]

Appends ``bench/distributed.py``'s ~1.2 KB perceptions once, then per round runs, alternating
which goes first: an in-process ``replay`` of every partition into a fresh chDB folder, in a
child process of each interpreter (so each imports its own checkout's code), and a
``hindbrain worker`` (aiokafka engine) of each, timed as ``bench/distributed.py`` does (from
the group's first commit to its last, counting the records past what the first commit
covered). Prints medians, new/old ratios and the load average, and each side's CPU seconds
per 1,000 records (the replay's process, the worker's over its whole run: on a machine other
sessions load, CPU is the steadier measure); the replays' digests are checked equal. Replay
never writes the log, so every replay and every fresh worker group reads the same records.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from distributed import one_kb_messages, wait_committed

from hindbrain.streams.kafka_log import KafkaLog

_REPLAY = """
import json, resource, sys
from hindbrain.projections.warehouse import Warehouse
from hindbrain.streams.kafka_log import KafkaLog
from hindbrain.streams.replay import replay
log = KafkaLog(sys.argv[1], prefix=sys.argv[2])
warehouse = Warehouse("chdb://" + sys.argv[3], database="replayed")
cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
before = cpu()
report = replay(log, warehouse)
print(json.dumps({"rate": report.records_per_second, "records": report.records, "digest": report.digest,
                  "cpu": cpu() - before}))
warehouse.close()
log.close()
"""


def replay_in(python: str, kafka: str, prefix: str) -> dict:
    folder = tempfile.mkdtemp(prefix="hb-kafka-ab-")
    try:
        # run in the temp folder: ``-c`` puts the cwd first on sys.path, and a checkout's own ``hindbrain/``
        # there would be imported by the other arm's python
        done = subprocess.run([python, "-c", _REPLAY, kafka, prefix, folder], capture_output=True, text=True,
                              cwd=folder)
        if done.returncode:  # say why: a CalledProcessError alone hid the replay's own traceback
            raise SystemExit(f"replay with {python} exited {done.returncode}:\n{done.stderr[-3000:]}")
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def worker_in(python: str, kafka: str, prefix: str, log: KafkaLog, events: int) -> tuple[float, float]:
    """(events/s from the first commit to the last, the worker's CPU seconds per 1,000 events
    over its whole run: start-up, fetch, inserts, background merges)."""
    group, home = f"ab-{uuid.uuid4().hex[:8]}", Path(tempfile.mkdtemp(prefix="hb-kafka-ab-"))
    env = {**os.environ, "HINDBRAIN_KAFKA": kafka, "HINDBRAIN_KAFKA_PREFIX": prefix, "HINDBRAIN_WORKER_GROUP": group,
           "HINDBRAIN_CLICKHOUSE": f"chdb://{home / 'views'}", "HINDBRAIN_BATCH_SIZE": "5000",
           "HINDBRAIN_BATCH_WITHIN": "0.2"}
    worker = subprocess.Popen([python, "-m", "hindbrain.cli", "--home", str(home), "worker", "--loglevel", "error",
                               "--engine", "aiokafka"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              cwd=home)
    try:
        first, last, covered = wait_committed(log, group)
        cpu = process_cpu(worker.pid)
    finally:
        worker.terminate()
        worker.wait(60)
        shutil.rmtree(home, ignore_errors=True)
    return (events - covered) / (last - first), 1000 * cpu / events


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="the baseline checkout's python (its venv)")
    ap.add_argument("--new", default=sys.executable)
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", default="replay,worker")
    args = ap.parse_args()
    kafka = os.environ.get("HINDBRAIN_KAFKA") or sys.exit("set HINDBRAIN_KAFKA=host:port (make kafka-up)")
    only = set(args.only.split(","))
    prefix = f"ab-{uuid.uuid4().hex[:8]}."
    log = KafkaLog(kafka, prefix=prefix)
    messages = one_kb_messages(args.events, seed=1)
    for i in range(0, len(messages), 5000):
        log.append(messages[i:i + 5000])
    runs: dict[str, list[float]] = {}
    digests = set()
    try:
        for n in range(args.repeats):
            order = [("old", args.old), ("new", args.new)][:: 1 if n % 2 == 0 else -1]
            for label, python in order:
                if "replay" in only:
                    got = replay_in(python, kafka, prefix)
                    digests.add(json.dumps(got["digest"], sort_keys=True))
                    runs.setdefault(f"replay {label}", []).append(got["rate"])
                    runs.setdefault(f"replay cpu {label}", []).append(1000 * got["cpu"] / got["records"])
                    print(f"round {n + 1}: {label} replay {got['rate']:,.0f} rec/s, "
                          f"{1000 * got['cpu'] / got['records']:.2f} CPU s per 1k; load {os.getloadavg()[0]:.1f}",
                          flush=True)
                if "worker" in only:
                    r, cpu = worker_in(python, kafka, prefix, log, args.events)
                    runs.setdefault(f"worker {label}", []).append(r)
                    runs.setdefault(f"worker cpu {label}", []).append(cpu)
                    print(f"round {n + 1}: {label} worker {r:,.0f} ev/s, {cpu:.2f} CPU s per 1k (with start-up); "
                          f"load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        log.close()
    print(f"\n{args.events:,} events of ~1.2 KB, median of {args.repeats} interleaved rounds")
    for what, target in (("replay", 50_000), ("worker", 15_000)):
        if f"{what} new" in runs:
            new, old = statistics.median(runs[f"{what} new"]), statistics.median(runs[f"{what} old"])
            print(f"{what:<8} new {new:>10,.0f}/s  old {old:>10,.0f}/s  new/old x{new / old:.2f}  "
                  f"target >= {target:,} {'PASS' if new >= target else 'MISS'}")
            new, old = statistics.median(runs[f"{what} cpu new"]), statistics.median(runs[f"{what} cpu old"])
            print(f"{'':<8} CPU s per 1,000: new {new:.3f}  old {old:.3f}  new/old x{new / old:.2f}")
    if "replay" in only:
        assert len(digests) == 1, "the two checkouts' replays made different views"
        print("replay digests: equal")


if __name__ == "__main__":
    main()
