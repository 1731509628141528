"""The served single ``/v1/perceive``, two or more interpreters (checkouts) alternated (docs/speed.md, "The served
single perceive, round thirty-three").

    python bench/served_perceive.py --arms base=<checkout>/.venv/bin/python,branch=.venv/bin/python \
        [--rounds 8 --seconds 5 --connections 8]

Each round starts ``hindbrain serve`` (``embedder=none``, no replicas) with each arm's interpreter in turn on a new
home of its own, warms it for a second, then runs bench/serve.py's closed loop of single perceive requests on
``--connections`` keep-alive connections. The order turns round every other round. Prints each arm's events/s and
the server's CPU (every thread of it) per request, and each round's ratio to the first arm, medians last. On a
shared machine the rate follows the other sessions more than the code: name one interpreter twice
(``a=…,a_again=…``) to see the spread of an arm against itself before reading a difference between two.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from served import cpu_seconds, serve

TENANT = "acme"


def new_key(python: str, home: Path) -> str:
    """An agent key of ``TENANT`` in ``home``, made by ``python``'s checkout (its own key format)."""
    code = ("import sys; from pathlib import Path; from hindbrain.service.keys import KeyStore; "
            f"print(KeyStore(Path(sys.argv[1])).create({TENANT!r}, 'bench'))")
    return subprocess.check_output([python, "-c", code, str(home)], text=True).strip().splitlines()[-1]


def one_run(python: str, home: Path, port: int, seconds: float, connections: int) -> tuple[float, float]:
    """Events/s and the server's CPU seconds a request, over ``seconds`` of single perceive requests."""
    key = new_key(python, home)
    with open(home / "serve.log", "w") as log:
        proc = serve.serve(home, port, "none", replicas="0", output=log, python=python)
    try:
        serve.closed_loop_perceive(port, key, 1.0, connections)  # imports, the first group commits
        before = cpu_seconds([proc.pid])
        rate, errors = serve.closed_loop_perceive(port, key, seconds, connections)
        spent = cpu_seconds([proc.pid]) - before
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    if errors:
        raise RuntimeError(f"{python}: {errors} perceive requests failed (see {home / 'serve.log'})")
    return rate, spent / (rate * seconds)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--arms", required=True, help="name=python,... (the first is the baseline)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--port", type=int, default=18571)
    args = ap.parse_args()
    arms = [tuple(arm.split("=", 1)) for arm in args.arms.split(",")]
    rates: dict[str, list[float]] = {name: [] for name, _ in arms}
    cpu: dict[str, list[float]] = {name: [] for name, _ in arms}
    root = Path(tempfile.mkdtemp(prefix="hindbrain-served-perceive-"))
    try:
        for n in range(args.rounds):
            for name, python in arms if n % 2 == 0 else arms[::-1]:
                home = root / f"{name}-{n}"
                home.mkdir()
                rate, per_request = one_run(python, home, args.port, args.seconds, args.connections)
                shutil.rmtree(home)
                rates[name].append(rate)
                cpu[name].append(per_request)
                print(f"round {n} {name}: {rate:,.0f} ev/s, {per_request * 1e6:.0f} µs of the server's CPU a request "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    first = arms[0][0]
    for name, _ in arms:
        ratio = [a / b for a, b in zip(rates[name], rates[first], strict=True)]
        cpu_ratio = [a / b for a, b in zip(cpu[name], cpu[first], strict=True)]
        print(f"{name}: {statistics.median(rates[name]):,.0f} ev/s, {statistics.median(cpu[name]) * 1e6:.0f} µs CPU a "
              f"request; paired against {first}: rate ×{statistics.median(ratio):.3f} "
              f"({min(ratio):.2f}–{max(ratio):.2f}), CPU ×{statistics.median(cpu_ratio):.3f}")


if __name__ == "__main__":
    main()
