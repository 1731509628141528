"""The test suite's CPU by test and by scope, not only its wall (docs/speed.md, "make test's time, round twenty-seven").

`--durations=0` times each test's wall. On `make test`'s four workers over two cores a test that waits (for an
embed worker under SCHED_IDLE, a broker's session timeout, a server's start) lasts long and costs nothing: the
other workers use the cores meanwhile. What the suite's wall follows is its CPU, so this plugin records both:

    PYTHONPATH=bench .venv/bin/python -m pytest -p suite_cpu --cpu-log=/tmp/cpu.jsonl -n 4 --dist loadscope ...
    .venv/bin/python bench/suite_cpu.py /tmp/cpu.jsonl [--top 30]

Each test's line holds its wall, the CPU of the test's process over the test (every thread of it: a brain's
background threads, chDB's, an earlier test's threads still settling) and the CPU of the subprocesses it reaped
(a CLI run, a server, a fresh interpreter; an embed worker shared by the process is reaped at its exit and is
not counted), and the tenant SQL zygote's and its workers' that ended during it. Setup, call and teardown together.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections import defaultdict
from collections.abc import Iterable

import pytest


def pytest_addoption(parser):
    parser.addoption("--cpu-log", default=None, help="append each test's wall and CPU, one JSON line a test")


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _zygote_cpu() -> float:
    """The tenant SQL zygote's CPU, its own and its ended workers' (``/proc/<pid>/stat``: utime, stime, cutime,
    cstime). Its workers are its children, not the test process's (round thirty): reaped by it, their CPU reaches
    RUSAGE_CHILDREN only when the zygote is reaped. A zygote that ended was reaped by the test process (``Zygote``
    waits for the one it replaces), so its whole CPU then entered RUSAGE_CHILDREN: a test's share is the later
    reading less the earlier one whichever zygote each read, and no CPU is counted twice."""
    from hindbrain.projections.tenant_zygote import ZYGOTE

    process = ZYGOTE._process
    if process is None:
        return 0.0
    try:
        with open(f"/proc/{process.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return sum(int(t) for t in fields[11:15]) / os.sysconf("SC_CLK_TCK")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = item.config.getoption("--cpu-log")
    if not path:
        yield
        return
    wall, cpu, children, zygote = time.perf_counter(), time.process_time(), _children_cpu(), _zygote_cpu()
    yield
    line = {"nodeid": item.nodeid, "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
            "children": _children_cpu() - children + _zygote_cpu() - zygote,
            "worker": os.environ.get("PYTEST_XDIST_WORKER", ""), "end": time.time()}
    # one short line written in append mode: the workers' lines do not interleave
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")


def scope_of(nodeid: str) -> str:
    """``--dist loadscope``'s scope: the test's class, else its module (tests/scheduling.py's rule)."""
    return nodeid.rsplit("::", 1)[0]


def by_scope(lines: Iterable[dict]) -> dict[str, dict[str, float]]:
    """Each scope's summed wall, own CPU and reaped children's CPU."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: {"wall": 0.0, "cpu": 0.0, "children": 0.0})
    for line in lines:
        scope = sums[scope_of(line["nodeid"])]
        for key in ("wall", "cpu", "children"):
            scope[key] += line[key]
    return dict(sums)


def worker_ends(lines: Iterable[dict]) -> dict[str, float]:
    """Each xdist worker's last test's end, in seconds after the first test's end anywhere: the suite's wall is
    the latest; a worker that ends long before it idled while the last scopes ran elsewhere (lines of a log
    written before round thirty-one carry no worker: none then)."""
    timed = [line for line in lines if "end" in line]
    if not timed:
        return {}
    first = min(line["end"] for line in timed)
    ends: dict[str, float] = {}
    for line in timed:
        ends[line["worker"]] = max(ends.get(line["worker"], 0.0), line["end"] - first)
    return dict(sorted(ends.items()))


def _table(rows: dict[str, dict[str, float]], top: int) -> str:
    order = sorted(rows, key=lambda name: -(rows[name]["cpu"] + rows[name]["children"]))[:top]
    return "\n".join(f"{rows[n]['cpu'] + rows[n]['children']:8.1f} {rows[n]['cpu']:8.1f} {rows[n]['children']:8.1f} "
                     f"{rows[n]['wall']:8.1f}  {n}" for n in order)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", help="the --cpu-log file")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    with open(args.log, encoding="utf-8") as log:
        lines = [json.loads(text) for text in log if text.strip()]
    tests = {line["nodeid"]: line for line in lines}
    total = {key: sum(line[key] for line in lines) for key in ("wall", "cpu", "children")}
    print(f"{len(lines)} tests: wall {total['wall']:.1f} s, CPU {total['cpu']:.1f} s in the test processes "
          f"+ {total['children']:.1f} s in reaped subprocesses")
    header = "   total      own children     wall"
    print(f"\nscopes by CPU\n{header}\n{_table(by_scope(lines), args.top)}")
    print(f"\ntests by CPU\n{header}\n{_table(tests, args.top)}")
    if ends := worker_ends(lines):
        print("\nlast test's end by worker (s after the first test's)\n"
              + "\n".join(f"{worker or 'main':>6} {end:8.1f}" for worker, end in ends.items()))


if __name__ == "__main__":
    main()
