"""Opening and closing an embedded brain on a fresh folder: CPU and wall, same process.

A ``Warehouse`` opens one chDB session per role (writer, analysts' reader, tenants' limited
session, the one that creates the database and cancels tenant queries); each session's start
reads the engine's ~1,300 settings. The baseline arm opens the fifth session the warehouse
had before the database-creating one was kept as the canceller (issue 31, point 7: the suite
opens hundreds of brains). Arms alternate, each on a new folder; prints medians and the ratio.

    python bench/open_brain.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import clickhouse_connect

from hindbrain import Brain


def open_close(fifth_session: bool) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``Brain.open`` + ``close`` on a new folder."""
    with tempfile.TemporaryDirectory(prefix="open-brain-") as home:
        cpu, wall = time.process_time(), time.perf_counter()
        brain = Brain.open(home, embedder="none")
        if fifth_session:  # what the warehouse's former separate canceller session cost
            clickhouse_connect.get_client(dsn=brain.warehouse.url, database=brain.warehouse.database).close()
        brain.close()
        return time.process_time() - cpu, time.perf_counter() - wall


def before_and_now(run, repeats: int, labels: tuple[str, str], unit: str = "ms") -> None:
    """Alternates ``run(True)`` (before) and ``run(False)`` (now), each returning (CPU s, wall s),
    ``repeats`` times; prints each arm's medians in ``unit`` (ms or s) and the ratio now/before."""
    scale = 1000 if unit == "ms" else 1
    runs: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(repeats):
        for arm in (True, False):
            runs[arm].append(run(arm))
    med = {arm: (statistics.median(c for c, _ in r), statistics.median(w for _, w in r)) for arm, r in runs.items()}
    width = max(map(len, labels))
    for arm, label in zip((True, False), labels, strict=True):
        print(f"{label:{width}s} cpu {med[arm][0] * scale:7.2f} {unit}   wall {med[arm][1] * scale:7.2f} {unit}   "
              f"(median of {repeats})")
    print(f"ratio now/before: cpu {med[False][0] / med[True][0]:.2f}   wall {med[False][1] / med[True][1]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    open_close(False)  # imports, the engine's first start
    before_and_now(open_close, args.repeats, ("five sessions (before)", "four sessions (now)"))

if __name__ == "__main__":
    main()
