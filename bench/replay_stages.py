"""Where an in-process Kafka replay's CPU goes, stage by stage (design.md §issue-28, point 5).

    HINDBRAIN_KAFKA=127.0.0.1:19092 python bench/replay_stages.py [--events 50000] [--rounds 5] [--prefix P]

Appends ``bench/distributed.py``'s ~1.2 KB perceptions under a fresh topic prefix (or replays an
existing ``--prefix``: replay never writes the log, so two checkouts can read the same topics),
then per round, into a fresh chDB folder, runs replay's path of the ``perceptions`` record batches
one stage after the other in this thread: the end offsets, the raw fetch of each 20k range
(``KafkaLog.read_batches``), ``kafka_batches.frame`` (batch headers, CRC, the records' checks and
their Native columns), the ``INSERT … SELECT`` (the block written to tmpfs; chDB: plan, Native read,
MergeTree write), then the digest (not
part of replay's rate). Prints each stage's process CPU and wall µs a record (process CPU:
the client's and chDB's threads included), then ``replay()`` itself (stages overlapped: its
rate, and its process CPU a record with the migration and the digest), and the load average.
Run it from a neutral folder with each checkout's interpreter to compare them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from distributed import one_kb_messages  # noqa: E402

from hindbrain.projections.warehouse import Warehouse  # noqa: E402
from hindbrain.streams import kafka_batches  # noqa: E402
from hindbrain.streams.kafka_log import KafkaLog  # noqa: E402
from hindbrain.streams.replay import _ends, replay  # noqa: E402

STAGES = ("ends", "fetch", "frame", "insert", "digest")


def staged(log: KafkaLog, folder: str, chunk: int = 20_000) -> tuple[int, dict[str, tuple[float, float]]]:
    """(records, {stage: (wall s, CPU s)}) of one replay of the perceptions done stage by stage."""
    warehouse = Warehouse(f"chdb://{folder}", database="stages")
    warehouse.migrate()
    spent = dict.fromkeys(STAGES, (0.0, 0.0))
    mark = [time.perf_counter(), time.process_time()]

    def lap(stage: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        spent[stage] = (spent[stage][0] + wall - mark[0], spent[stage][1] + cpu - mark[1])
        mark[:] = wall, cpu

    records = 0
    try:
        ends = _ends(log)
        lap("ends")
        for (topic, partition), end in ends.items():
            if topic != kafka_batches.TOPIC:
                continue
            for start in range(0, end, chunk):
                stop = min(start + chunk, end)
                sets = log.read_batches(topic, partition, start, stop)
                lap("fetch")
                framed = kafka_batches.frame(sets, start, stop)
                lap("frame")
                got = kafka_batches.insert_events(warehouse, framed, partition)
                lap("insert")
                if got != stop - start:
                    raise SystemExit(f"range {partition}@{start} was refused: not a clean topic")
                records += got
        warehouse.digest()
        lap("digest")
    finally:
        warehouse.close()
    return records, spent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--prefix", default=None, help="replay these topics (appended before) instead of fresh ones")
    args = ap.parse_args()
    kafka = os.environ.get("HINDBRAIN_KAFKA") or sys.exit("set HINDBRAIN_KAFKA=host:port (make kafka-up)")
    log = KafkaLog(kafka, prefix=args.prefix or f"bench-stages-{uuid.uuid4().hex[:8]}.")
    runs: dict[str, list[float]] = {}
    try:
        if args.prefix is None:
            messages = one_kb_messages(args.events, seed=1)
            for i in range(0, len(messages), 5000):
                log.append(messages[i:i + 5000])
        for n in range(args.rounds):
            folder = tempfile.mkdtemp(prefix="hb-stages-")
            try:
                records, spent = staged(log, folder)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            for stage, (wall, cpu) in spent.items():
                runs.setdefault(f"{stage} cpu", []).append(cpu / records * 1e6)
                runs.setdefault(f"{stage} wall", []).append(wall / records * 1e6)
            folder = tempfile.mkdtemp(prefix="hb-stages-")
            warehouse = Warehouse(f"chdb://{folder}", database="replayed")
            try:
                cpu = time.process_time()
                report = replay(log, warehouse)
                runs.setdefault("replay cpu", []).append((time.process_time() - cpu) / report.records * 1e6)
                runs.setdefault("replay rate", []).append(report.records_per_second)
            finally:
                warehouse.close()
                shutil.rmtree(folder, ignore_errors=True)
            print(f"round {n + 1}: replay {runs['replay rate'][-1]:,.0f} rec/s; "
                  + ", ".join(f"{s} {runs[f'{s} cpu'][-1]:.1f}" for s in STAGES)
                  + f" us CPU a record; load {os.getloadavg()[0]:.1f}", flush=True)
    finally:
        log.close()
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(f"\n{records:,} perceptions, median of {args.rounds} rounds, load {os.getloadavg()[0]:.1f}")
    for stage in STAGES:
        print(f"{stage:8} CPU {med[f'{stage} cpu']:6.2f} us a record   wall {med[f'{stage} wall']:6.2f}")
    print(f"replay() {med['replay rate']:,.0f} rec/s, CPU {med['replay cpu']:.2f} us a record "
          "(migration and digest included)")


if __name__ == "__main__":
    main()
