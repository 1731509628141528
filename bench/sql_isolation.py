"""Tenant SQL against a served brain (design.md §issue-27, points 1 and 5): isolation and the walls.

    python bench/sql_isolation.py [--seconds 24] [--rounds 4] [--events 3000] [--home DIR]

1. Builds a brain with two tenants (``victim``: ``--events`` messages, one of them a secret;
   ``analyst``: as many) and starts ``hindbrain serve`` on it with default arguments.
2. Measures the victim's recall latency over HTTP (an agent key, one request at a time, 20 ms
   apart) for ``--seconds`` while nothing else runs (quiet), then for as long while an analyst
   key keeps the heaviest allowed query running: a cross join that runs until the limit
   (``max_execution_time``) stops it, back to back, from two connections (one runs, one
   waits in the SQL lane). Quiet and loaded alternate ``--rounds`` times, so drift on the
   shared machine falls on both. Also the victim's perceive latency in the same windows.
3. Sends every attack of ``tests/security/test_sql_sandbox.py`` with the analyst key and counts
   answers that ran (2xx), that show a line of ``/etc/passwd``, the brain's folder or the
   victim's secret, and 5xx.
4. Leaves 6 heavy queries 1.5 s after sending them (on the owner's and a replica's connections
   in turn) and times the next query: it waits for the lane, so a query that ran on after its
   client left shows as a wait of seconds (the limit), one that was killed as a fraction.

Prints p50/p99 quiet and loaded and their ratios (target: loaded recall p99 <= 2x quiet), and
the counts (target: 0, 0, 0, 0).
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from hindbrain import Brain
from hindbrain.service.keys import KeyStore

HERE = Path(__file__).parent
SECRET = "victim-card-4111-1111-password-hunter2"
HEAVY = "SELECT count() FROM events a, events b, events c, events d"
spec = importlib.util.spec_from_file_location("sandbox_tests", HERE.parent / "tests/security/test_sql_sandbox.py")
sandbox = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sandbox)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def build(home: Path, events: int) -> None:
    with Brain.open(home) as brain:
        for tenant in ("victim", "analyst"):
            batch = [{"tenant": tenant, "agent": "bot", "text": f"{tenant} note {n} about billing export {n % 17}"}
                     for n in range(events)]
            for start in range(0, events, 500):
                brain.perceive_many(batch[start:start + 500])
        brain.perceive(tenant="victim", agent="bot", text=f"my card {SECRET}")


def serve(home: Path, port: int, output) -> subprocess.Popen:
    """``hindbrain serve`` with default arguments, once ready."""
    proc = subprocess.Popen([sys.executable, "-m", "hindbrain.cli", "--home", str(home), "serve", "--port", str(port)],
                            stdout=output, stderr=output)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            status, body = post(port, "GET", "/readyz", None, "")
            ready = body.get("replicas", {"serving": 0, "of": 0})
            if status == 200 and ready["serving"] == ready["of"]:
                return proc
        except OSError:
            pass
        time.sleep(0.5)
    proc.kill()
    raise RuntimeError("hindbrain serve did not become ready")


def post(port: int, method: str, path: str, body: dict | None, key: str, conn=None) -> tuple[int, dict]:
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, json.dumps(body) if body is not None else None,
                     {"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
        answer = conn.getresponse()
        data = answer.read()
        return answer.status, json.loads(data) if data else {}
    finally:
        if own:
            conn.close()


def victim_window(port: int, key: str, seconds: float) -> tuple[list[float], list[float], int]:
    """Recall and perceive latencies (ms) of the victim, one request at a time; and non-2xx count."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    recalls, perceives, failed, n = [], [], 0, 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        n += 1
        for path, body, into in (("/v1/recall", {"agent": "bot", "query": f"billing export {n % 17}"}, recalls),
                                 ("/v1/perceive", {"agent": "bot", "text": f"victim works on {n}"}, perceives)):
            started = time.perf_counter()
            status, _ = post(port, "POST", path, body, key, conn)
            into.append((time.perf_counter() - started) * 1000)
            failed += status >= 300
        time.sleep(0.02)
    conn.close()
    return recalls, perceives, failed


def heavy_load(port: int, key: str, stop: threading.Event, statuses: list) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    while not stop.is_set():
        status, body = post(port, "POST", "/v1/sql", {"query": HEAVY}, key, conn)
        statuses.append((status, str(body)[:200]))
    conn.close()


def loaded_window(port: int, agent: str, analyst: str, seconds: float) -> tuple[list, list, int, list]:
    stop, statuses = threading.Event(), []
    threads = [threading.Thread(target=heavy_load, args=(port, analyst, stop, statuses)) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(1.0)  # the first heavy query is running before the window opens
    recalls, perceives, failed = victim_window(port, agent, seconds)
    stop.set()
    for t in threads:
        t.join()
    return recalls, perceives, failed, statuses


def attack_counts(port: int, key: str, home: Path) -> dict:
    counts = {"attacks": 0, "ran (2xx)": 0, "file or setting reads": 0, "cross-tenant reads": 0, "5xx": 0}
    passwd, folder = "root:x:0:", str(home.resolve())
    for query in sandbox.attacks(home.resolve(), str(home.resolve() / "log.sqlite"), victim="victim"):
        status, body = post(port, "POST", "/v1/sql", {"query": query}, key)
        text = json.dumps(body)
        counts["attacks"] += 1
        counts["ran (2xx)"] += status < 300
        counts["5xx"] += status >= 500
        counts["file or setting reads"] += (passwd in text and passwd not in query) or (
            folder in text and folder not in query)
        counts["cross-tenant reads"] += SECRET in text
    return counts


def abandoned(port: int, key: str, trials: int = 6) -> list[float]:
    """Seconds the next query waited after each abandoned heavy query (killed: well under 1 s)."""
    waits = []
    for n in range(trials):
        if n % 2:  # one more connection: the owner deals connections in turn, so the next lands elsewhere
            post(port, "GET", "/healthz", None, key)
        body = json.dumps({"query": HEAVY}).encode()
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(f"POST /v1/sql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nContent-Type: "
                     f"application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        time.sleep(1.5)
        sock.close()
        started = time.perf_counter()
        post(port, "POST", "/v1/sql", {"query": "SELECT count() AS n FROM events"}, key)
        waits.append(time.perf_counter() - started)
    return waits


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=24.0, help="per phase (quiet, loaded), over all rounds")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--events", type=int, default=3000)
    ap.add_argument("--port", type=int, default=18000 + os.getpid() % 1000)
    ap.add_argument("--home", type=Path, default=None)
    args = ap.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="hindbrain-sqlbench-"))
    build(home, args.events)
    keys = KeyStore(home)
    agent, analyst = keys.create("victim", "bench"), keys.create("analyst", "bench", "analyst")
    with open(home / "serve.out", "w") as output:
        proc = serve(home, args.port, output)
        try:
            victim_window(args.port, agent, 2.0)  # warm-up
            quiet_r, quiet_p, loaded_r, loaded_p, failed, heavy = [], [], [], [], 0, []
            for _ in range(args.rounds):
                r, p, f = victim_window(args.port, agent, args.seconds / args.rounds)
                quiet_r += r
                quiet_p += p
                failed += f
                r, p, f, statuses = loaded_window(args.port, agent, analyst, args.seconds / args.rounds)
                loaded_r += r
                loaded_p += p
                failed += f
                heavy += statuses
            counts = attack_counts(args.port, analyst, home)
            waits = abandoned(args.port, analyst)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    limits = sorted({body for _, body in heavy})[:1]
    print(f"victim recall   quiet p50 {pct(quiet_r, .5):6.1f} ms  p99 {pct(quiet_r, .99):6.1f} ms   during heaviest "
          f"allowed query p50 {pct(loaded_r, .5):6.1f} ms  p99 {pct(loaded_r, .99):6.1f} ms   p99 ratio "
          f"{pct(loaded_r, .99) / pct(quiet_r, .99):.2f}x (target <= 2x)   n={len(quiet_r)}/{len(loaded_r)}")
    print(f"victim perceive quiet p50 {pct(quiet_p, .5):6.1f} ms  p99 {pct(quiet_p, .99):6.1f} ms   during heaviest "
          f"allowed query p50 {pct(loaded_p, .5):6.1f} ms  p99 {pct(loaded_p, .99):6.1f} ms   p99 ratio "
          f"{pct(loaded_p, .99) / pct(quiet_p, .99):.2f}x")
    print(f"victim non-2xx answers: {failed}; heavy queries answered: {len(heavy)} "
          f"(statuses {sorted({s for s, _ in heavy})}), e.g. {limits}")
    print(f"abandoned heavy queries: the next query waited {', '.join(f'{w:.2f}' for w in waits)} s "
          f"({sum(w < 3 for w in waits)} of {len(waits)} killed at once; one that ran on holds the lane ~8.5 s)")
    print("attacks over HTTP: " + ", ".join(f"{k} {v}" for k, v in counts.items())
          + " (targets: 0 ran, 0 reads, 0 5xx)")


if __name__ == "__main__":
    main()
