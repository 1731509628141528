"""Another client's latency while the edge is attacked (design.md §issue-27, point 6): slowloris, trickled
bodies and 8 MB headers against ``hindbrain serve`` with its default settings.

    python bench/edge.py [--seconds 12] [--slow 200] [--trickle 50] [--floods 2]

Starts ``hindbrain serve`` (defaults: header deadline 10 s, body deadline 30 s, 64 kB of
headers) on a small brain, then measures one well-behaved client's recall, closed loop over
one keep-alive connection: ``--seconds`` quiet, then ``--seconds`` while ``--slow``
connections trickle header bytes, ``--trickle`` connections trickle a body, and ``--floods``
threads send 8 MB headers over and over. Prints the client's p50/p99 quiet and attacked, their
ratio (target: p99 ≤ 2× quiet), how the attackers were answered (408, 431, closed), and the 5xx
count (target 0). Quiet and attacked run against the same server, one after the other.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from hindbrain import Brain
from hindbrain.service.keys import KeyStore


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(home: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "hindbrain.cli", "--home", str(home), "serve", "--port", str(port)],
                            env={**os.environ, "HINDBRAIN_EMBEDDER": "none"}, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("hindbrain serve did not become ready")


def client(port: int, key: str, seconds: float, statuses: Counter) -> list[float]:
    """One well-behaved agent: recalls back to back on one keep-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    body = json.dumps({"query": "the export job stalls at night"})
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    latencies, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.perf_counter()
        conn.request("POST", "/v1/recall", body, headers)
        answer = conn.getresponse()
        answer.read()
        latencies.append(time.perf_counter() - started)
        statuses[answer.status] += 1
    conn.close()
    return latencies


def answered(sock: socket.socket) -> str:
    """How the server treated an attacking connection: its status code, or closed / open."""
    sock.settimeout(0.05)
    try:
        data = sock.recv(64)
    except TimeoutError:
        return "still open"
    except OSError:
        return "reset"
    return data[9:12].decode() if data.startswith(b"HTTP/1.1 ") else "closed"


def slowloris(port: int, n: int, stop: threading.Event, out: list) -> None:
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        conns.append(s)
    while not stop.wait(1.0):
        for s in conns:
            with contextlib.suppress(OSError):
                s.sendall(b"X-a: b\r\n")  # a header line a second, never the end
    out += [answered(s) for s in conns]


def trickle(port: int, key: str, n: int, stop: threading.Event, out: list) -> None:
    conns = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /v1/perceive HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + key.encode() +
                  b"\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{")
        conns.append(s)
    while not stop.wait(1.0):
        for s in conns:
            with contextlib.suppress(OSError):
                s.sendall(b" ")  # a body byte a second
    out += [answered(s) for s in conns]


def flood(port: int, stop: threading.Event, out: list) -> None:
    chunk = b"X-Big: " + b"a" * 65536 + b"\r\n"
    while not stop.is_set():
        s = socket.create_connection(("127.0.0.1", port))
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            for _ in range(128):  # 8 MB
                s.sendall(chunk)
        except OSError:
            pass
        out.append(answered(s))
        s.close()


def attack_for(port: int, key: str, args) -> dict[str, list[str]]:
    """Every attack at once for ``args.seconds`` (plus the second before the client starts);
    how each connection was answered."""
    stop, outcomes = threading.Event(), {"slow headers": [], "trickled bodies": [], "8 MB headers": []}
    attackers = [threading.Thread(target=slowloris, args=(port, args.slow, stop, outcomes["slow headers"])),
                 threading.Thread(target=trickle, args=(port, key, args.trickle, stop, outcomes["trickled bodies"]))]
    attackers += [threading.Thread(target=flood, args=(port, stop, outcomes["8 MB headers"]))
                  for _ in range(args.floods)]
    for t in attackers:
        t.start()
    time.sleep(args.seconds + 1.0)
    stop.set()
    for t in attackers:
        t.join(timeout=30)
    return outcomes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=12.0)
    ap.add_argument("--slow", type=int, default=200)
    ap.add_argument("--trickle", type=int, default=50)
    ap.add_argument("--floods", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hindbrain-edge-") as tmp:
        home = Path(tmp)
        with Brain.open(home, embedder="none") as brain:
            for i in range(200):
                brain.learn(tenant="victim", condition=f"the export job {i} stalls at night", action="restart it")
        key, attacker = KeyStore(home).create("victim"), KeyStore(home).create("mallory")
        port = free_port()
        proc = serve(home, port)
        try:
            statuses: Counter = Counter()
            client(port, key, 2.0, statuses)  # warm
            quiet = client(port, key, args.seconds, statuses)
            # the attackers in a process of their own: in this one they would take the client's GIL
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                attack = pool.apply_async(attack_for, (port, attacker, args))
                time.sleep(1.0)  # the attack under way
                attacked = client(port, key, args.seconds, statuses)
                outcomes = attack.get(timeout=args.seconds + 60)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"recall of another tenant, {len(quiet)} quiet / {len(attacked)} attacked requests:")
    print(f"  quiet    p50 {pct(quiet, .5) * 1e3:7.2f} ms  p99 {pct(quiet, .99) * 1e3:7.2f} ms")
    print(f"  attacked p50 {pct(attacked, .5) * 1e3:7.2f} ms  p99 {pct(attacked, .99) * 1e3:7.2f} ms")
    p50, p99 = pct(attacked, .5) / pct(quiet, .5), pct(attacked, .99) / pct(quiet, .99)
    print(f"  ratio    p50 {p50:7.2f} x     p99 {p99:7.2f} x     (target: p99 <= 2x)")
    print(f"  statuses {dict(statuses)}; 5xx: {sum(n for s, n in statuses.items() if s >= 500)}")
    for name, seen in outcomes.items():
        print(f"  {name}: {len(seen)} connections, after {args.seconds:g} s: {dict(Counter(seen))}")


if __name__ == "__main__":
    main()
