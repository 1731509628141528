"""Where a Kafka replay's insert goes: one record-batch ``INSERT … SELECT`` into tables of each kind.

    HINDBRAIN_KAFKA=127.0.0.1:19092 python bench/replay_insert.py [--events 50000] [--repeats 9] [--all]

Appends ``bench/distributed.py``'s ~1.2 KB perceptions to a fresh topic prefix once, frames the
record batches of partition 0 (``--all``: of every partition, as one statement) as replay does
(``streams/kafka_batches.py``), then per round, in alternating order, times the process CPU of
the same statement into a fresh table of each kind:

* ``events``: the view as declared (parts up to 128 MiB written compact);
* ``wide``: the same table with ClickHouse's default (a part past 10 MiB written wide: a file or
  more per column);
* ``null``: a ``Null`` table of the same columns (the Native read and the statement; nothing written);
* ``plan``: ``EXPLAIN PLAN`` of the statement's ``SELECT`` (planning alone).

Prints the median and minimum CPU ms of each and its ratio to ``events``, and the load average:
CPU, not wall time, because the machine is shared (the minimum is the least disturbed round).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import tempfile
import uuid

from distributed import one_kb_messages

from hindbrain.projections.events import TABLE
from hindbrain.projections.warehouse import Warehouse
from hindbrain.streams import kafka_batches
from hindbrain.streams.kafka_log import KafkaLog

END = 10**15  # past any offset: every framed row is kept


def cpu() -> float:
    return sum(resource.getrusage(resource.RUSAGE_SELF)[:2])


def framed_perceptions(kafka: str, events: int, every_partition: bool) -> kafka_batches.Framed:
    log = KafkaLog(kafka, prefix=f"bench-insert-{uuid.uuid4().hex[:8]}.")
    try:
        messages = one_kb_messages(events, seed=0)
        for i in range(0, len(messages), 5000):
            log.append(messages[i:i + 5000])
        partitions = log.partitions("perceptions") if every_partition else [0]
        sets = [s for p in partitions
                for s in log.read_batches("perceptions", p, 0, log.end_offset("perceptions", p))]
    finally:
        log.close()
    return kafka_batches.frame(sets, 0, END)


def variants(database: str, path: str, framed: kafka_batches.Framed) -> dict[str, tuple[str, str]]:
    """``{name: (CREATE TABLE of table T, statement)}``."""
    insert = kafka_batches.insert_sql(database, path, 0).replace(
        f"`{database}`.`events`", f"`{database}`.`T`")
    create = TABLE.create_sql(database).replace(f"`{database}`.`events`", f"`{database}`.`T`")
    wide = create.replace(TABLE.settings_sql, "min_bytes_for_wide_part = 10485760")
    null = re.sub(r"ENGINE = .*", "ENGINE = Null", create, flags=re.S)
    plan = "EXPLAIN PLAN SELECT " + insert.split(") SELECT ", 1)[1].rsplit(" SETTINGS", 1)[0]
    return {"events": (create, insert), "wide": (wide, insert), "null": (null, insert), "plan": (create, plan)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--all", action="store_true", help="every partition's batches in one statement")
    args = ap.parse_args()
    framed = framed_perceptions(os.environ["HINDBRAIN_KAFKA"], args.events, args.all)
    fd, path = tempfile.mkstemp(suffix=".native", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    with os.fdopen(fd, "wb") as f:
        f.write(framed.data)
    warehouse = Warehouse(f"chdb://{tempfile.mkdtemp(prefix='hb-insert-')}", database="bench")
    try:
        runs: dict[str, list[float]] = {}
        cases = variants(warehouse.database, path, framed)
        for n in range(args.repeats):
            for name, (create, sql) in (list(cases.items()) if n % 2 == 0 else list(reversed(cases.items()))):
                warehouse.command(f"DROP TABLE IF EXISTS `{warehouse.database}`.`T`")
                warehouse.command(create)
                before = cpu()
                if sql.startswith("EXPLAIN"):
                    warehouse.query(sql)
                else:
                    warehouse.command(sql)
                runs.setdefault(name, []).append(cpu() - before)
        print(f"{framed.rows:,} records, {len(framed.data) / 1e6:.1f} MB of Native columns; "
              f"median of {args.repeats} interleaved rounds; load {os.getloadavg()[0]:.1f}")
        base = statistics.median(runs["events"])
        for name, seconds in runs.items():
            median = statistics.median(seconds)
            print(f"{name:8} CPU {median * 1000:7.1f} ms (min {min(seconds) * 1000:6.1f})  x{median / base:.2f}")
    finally:
        warehouse.close()
        os.unlink(path)


if __name__ == "__main__":
    main()
