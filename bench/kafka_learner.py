"""The fleet's learner (``KafkaLearner``) over a real broker: events/s from its start until caught up, and its CPU
(issue 28; docs/speed.md, "The Kafka learner, round thirteen").

    HINDBRAIN_KAFKA=127.0.0.1:19092 .venv/bin/python bench/kafka_learner.py [--size 50000] [--rounds 3] \
        [--arms base=/other/checkout/.venv/bin/python,new=.venv/bin/python] [--worlds api.py,learning.py]

Per round, world and arm (the arms' order alternates by round), appends the world's perceptions under a fresh topic
prefix (bench/learner_cpu.py's worlds: bench/api.py's events, where nothing is learned, and bench/learning.py's
fleet, where tasks fail then succeed), then starts a ``KafkaLearner`` as ``hindbrain learner`` does (its own
consumer group, the default batch size) in a child process of the arm's interpreter, so each arm imports its own
checkout. The child times it from ``start()`` until its group's committed offsets reach the topic's ends: a learner
commits a batch once it is folded and what it learned appended, in every version (``wait_until_caught_up``
returned before the last batch's fold until round thirteen). Prints per run the events/s, the learner thread's
CPU (its asyncio loop: fetch, decode, fold, hand-off of its appends) and the process's CPU in µs an event, then
medians per world and arm and each arm's ratio to the first. The file needs nothing of round thirteen's code.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from hindbrain.streams.kafka_log import KafkaLog
from hindbrain.streams.processing import to_messages

sys.path.insert(0, str(Path(__file__).resolve().parent))

from learner_cpu import worlds  # noqa: E402

_CHILD = """
import json, sys, time
from hindbrain.learning.kafka_learner import KafkaLearner
from hindbrain.settings import Settings
from hindbrain.streams.kafka_log import KafkaLog
bootstrap, prefix, events = sys.argv[1], sys.argv[2], int(sys.argv[3])
log = KafkaLog(bootstrap, prefix=prefix)
ends = {p: log.end_offset("perceptions", p) for p in log.partitions("perceptions")}
learner = KafkaLearner(log, prefix + "learner", None, Settings().batch_size)
wall, cpu = time.perf_counter(), time.process_time()
learner.start()
clock = time.pthread_getcpuclockid(learner._thread.ident)
while any(log.committed(learner.group, "perceptions", p) < end for p, end in ends.items()):
    if not learner.alive:
        learner.stop()  # raises its error
    time.sleep(0.02)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
thread = time.clock_gettime(clock)
learned = sum(learner.learner.counts.values())
learner.stop()
log.close()
print(json.dumps({"rate": events / wall, "thread_us": 1e6 * thread / events, "process_us": 1e6 * cpu / events,
                  "wall": wall, "counts": learned}))
"""



def run_arm(python: str, bootstrap: str, records: list[tuple[str, dict]]) -> dict:
    """One learner of ``python``'s checkout over ``records``, appended under a fresh prefix first."""
    prefix = f"bench-learner.{uuid.uuid4().hex[:12]}."
    log = KafkaLog(bootstrap, prefix=prefix)
    try:
        t = time.perf_counter()
        log.append(to_messages(records))
        appended = len(records) / (time.perf_counter() - t)
    finally:
        log.close()
    out = subprocess.run([python, "-c", _CHILD, bootstrap, prefix, str(len(records))], check=True,
                         capture_output=True, text=True).stdout
    return {**json.loads(out.strip().splitlines()[-1]), "appended": appended}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--arms", default=f"this={sys.executable}", help="name=python,... (the first is the baseline)")
    ap.add_argument("--worlds", default="api.py,learning.py")
    args = ap.parse_args()
    bootstrap = os.environ.get("HINDBRAIN_KAFKA")
    if not bootstrap:
        sys.exit("set HINDBRAIN_KAFKA=host:port (a Kafka 4.x broker: `make kafka-up`)")
    arms = dict(arm.split("=", 1) for arm in args.arms.split(","))
    chosen = {name: records for name, records in worlds(args.size).items() if name in args.worlds.split(",")}
    results: dict[tuple[str, str], list[dict]] = {}
    for round_ in range(args.rounds):
        order = list(arms) if round_ % 2 == 0 else list(arms)[::-1]
        for name, records in chosen.items():
            for arm in order:
                got = run_arm(arms[arm], bootstrap, records)
                results.setdefault((name, arm), []).append(got)
                print(f"round {round_ + 1} {name:<12} {arm:<8} {got['rate']:9,.0f} ev/s  learner thread "
                      f"{got['thread_us']:6.1f} µs/ev  process {got['process_us']:6.1f} µs/ev  ({got['wall']:.2f} s, "
                      f"{got['counts']:,} counted; appended at {got['appended']:,.0f} rec/s)  "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
    for name in chosen:
        base = None
        for arm in arms:
            runs = results[(name, arm)]
            med = {k: statistics.median(r[k] for r in runs) for k in ("rate", "thread_us", "process_us")}
            base = base or med
            print(f"{name:<12} {arm:<8} median of {len(runs)}: {med['rate']:9,.0f} ev/s "
                  f"(x{med['rate'] / base['rate']:.2f})"
                  f"  thread {med['thread_us']:6.1f} µs/ev (x{med['thread_us'] / base['thread_us']:.2f})"
                  f"  process {med['process_us']:6.1f} µs/ev (x{med['process_us'] / base['process_us']:.2f})",
                  flush=True)


if __name__ == "__main__":
    main()
