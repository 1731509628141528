"""A tenant SQL worker's start and a query's cost (docs/speed.md, round thirty).

For each of ``--starts`` rounds: the worker is dropped (``limit_tenants``, as a limit change or a kill would),
then one tenant query is timed (it starts a worker: its wall, and the worker's CPU and memory once it answered),
then ``--queries`` more on the warm worker (their wall, and the worker's CPU a query). Prints medians as JSON,
and the zygote's own CPU and memory where there is one (round thirty). Run it with the venv of each checkout to
compare them (alternated runs; the load is the caller's to state):

    .venv/bin/python bench/worker_start.py --starts 15
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

from hindbrain import Brain
from hindbrain.projections import tenant_worker

_TICK = os.sysconf("SC_CLK_TCK")
QUERY = "SELECT count() AS n FROM events WHERE text LIKE 'acme%'"


def cpu_seconds(pid: int) -> float:
    """User and system CPU of a process so far, its ended children's not included (``/proc/<pid>/stat``)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def memory_mib(pid: int) -> tuple[float, float]:
    """Resident and proportional (shared pages split among their sharers) memory of a process, MiB."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        kb = {line.split(":")[0]: int(line.split()[1]) for line in f if line.split(":")[0] in ("Rss", "Pss")}
    return kb["Rss"] / 1024, kb["Pss"] / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--starts", type=int, default=15)
    parser.add_argument("--queries", type=int, default=20)
    args = parser.parse_args()
    rows: dict[str, list[float]] = {name: [] for name in ("start_ms", "start_cpu_ms", "rss_mib", "pss_mib", "query_ms",
                                                          "query_cpu_ms")}
    with tempfile.TemporaryDirectory() as home, Brain.open(f"{home}/b", embedder="none") as brain:
        for i in range(50):
            brain.perceive(tenant="acme", agent="bot-1", text=f"acme note {i}")
        for _ in range(args.starts):
            brain.warehouse.limit_tenants()  # drops the worker: the next query starts one
            started = time.perf_counter()
            assert brain.sql(QUERY, tenant="acme") == [{"n": 50}]
            rows["start_ms"].append((time.perf_counter() - started) * 1000)
            pid = brain.warehouse._worker._process.pid
            rows["start_cpu_ms"].append(cpu_seconds(pid) * 1000)
            rss, pss = memory_mib(pid)
            rows["rss_mib"].append(rss)
            rows["pss_mib"].append(pss)
            cpu = cpu_seconds(pid)
            for _ in range(args.queries):
                started = time.perf_counter()
                brain.sql(QUERY, tenant="acme")
                rows["query_ms"].append((time.perf_counter() - started) * 1000)
            rows["query_cpu_ms"].append((cpu_seconds(pid) - cpu) * 1000 / args.queries)
    medians = {k: round(statistics.median(v), 1) for k, v in rows.items()}
    zygote = getattr(tenant_worker, "ZYGOTE", None)  # none at a checkout before round thirty
    if zygote is not None and zygote._process is not None:
        medians["zygote_own_cpu_ms"] = round(cpu_seconds(zygote._process.pid) * 1000)
        medians["zygote_rss_mib"], medians["zygote_pss_mib"] = (round(m, 1) for m in memory_mib(zygote._process.pid))
    print(json.dumps(medians))


if __name__ == "__main__":
    main()
