"""``hindbrain serve`` under load on loopback (issue 8), against in-process calls.

    python bench/http.py [--fragments 100000] [--embedder use] [--seconds 20] [--rate 200]

1. Builds a brain with ``--fragments`` units (bench/recall.py's synthetic corpus, through
   ``brain.learn``: the learner gates each) and measures, in this process, recall latency
   over the same queries and single-call perceive throughput: the baseline.
2. Starts ``hindbrain serve`` on that brain as a subprocess and a load generator here:
   recall open-loop at ``--rate`` requests/s for ``--seconds`` (latency counted from each
   request's scheduled time, so a stall is not hidden), then perceive closed-loop from 8
   keep-alive connections for ``--seconds``.

Prints p50/p99 of recall (HTTP and in-process, and their ratio) and perceive requests/s
(HTTP and in-process). Targets: recall p50 ≤ 10 ms, p99 ≤ 50 ms at 200 requests/s over
100k fragments; perceive ≥ 2,000 requests/s.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from hindbrain import Brain
from hindbrain.service.keys import KeyStore

HERE = Path(__file__).parent
spec = importlib.util.spec_from_file_location("bench_recall", HERE / "recall.py")
corpus = importlib.util.module_from_spec(spec)
spec.loader.exec_module(corpus)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def build(home: Path, n: int, embedder: str) -> None:
    rng = random.Random(corpus.SEED)
    t0 = time.perf_counter()
    with Brain.open(home, embedder=embedder) as brain:
        for i in range(n):
            u = corpus.unit(rng, i)
            brain.learn(tenant=corpus.TENANT, condition=u["condition"], action=u["action"], reason=u["reason"],
                        scope=u["scope"], entities=u["entities"], fragment_id=u["fragment_id"])
            if i % 20_000 == 0:
                print(f"  built {i} units ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        if brain.index.semantic is not None:
            brain.index.semantic.wait()  # every unit embedded (and cached) before timing anything
    print(f"built {n} units in {time.perf_counter() - t0:.0f} s", file=sys.stderr)


def recall_bodies(count: int) -> list[dict]:
    bodies = []
    for q in corpus.queries(random.Random(11), count):
        body = q.model_dump(exclude_unset=True)
        body.pop("tenant")
        bodies.append(body)
    return bodies


def in_process(home: Path, embedder: str, bodies: list[dict], seconds: float) -> tuple[list[float], float]:
    with Brain.open(home, embedder=embedder) as brain:
        for body in bodies[:50]:  # warm up like the server will be
            brain.recall(tenant=corpus.TENANT, **body)
        latencies = []
        for body in bodies:
            t = time.perf_counter()
            brain.recall(tenant=corpus.TENANT, **body)
            latencies.append(time.perf_counter() - t)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            brain.perceive(tenant=corpus.TENANT, agent="bench", text=f"in-process event {n}")
            n += 1
        rate = n / (time.perf_counter() - t0)
    return latencies, rate


class Client:
    def __init__(self, port: int, key: str):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}

    def post(self, path: str, body: dict) -> int:
        self.conn.request("POST", path, json.dumps(body), self.headers)
        resp = self.conn.getresponse()
        resp.read()
        return resp.status


def open_loop_recall(port: int, key: str, bodies: list[dict], rate: float, seconds: float) -> tuple[list, int]:
    total = int(rate * seconds)
    start = time.perf_counter() + 0.2
    latencies, errors, lock = [], [0], threading.Lock()
    workers = 16

    def worker(w: int) -> None:
        client = Client(port, key)
        for i in range(w, total, workers):
            due = start + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            status = client.post("/v1/recall", bodies[i % len(bodies)])
            done = time.perf_counter()
            with lock:
                latencies.append(done - due)
                errors[0] += status != 200

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, errors[0]


def closed_loop_perceive(port: int, key: str, seconds: float, connections: int = 8) -> tuple[float, int]:
    counts, errors, stop = [0] * connections, [0], time.perf_counter() + seconds

    def worker(w: int) -> None:
        client, n = Client(port, key), 0
        while time.perf_counter() < stop:
            if client.post("/v1/perceive", {"agent": f"load-{w}", "text": f"http event {w}-{n}"}) != 200:
                errors[0] += 1
            n += 1
        counts[w] = n

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - t0), errors[0]


def serve(home: Path, port: int, embedder: str) -> subprocess.Popen:
    env = {**os.environ, "HINDBRAIN_EMBEDDER": embedder}
    proc = subprocess.Popen([sys.executable, "-m", "hindbrain.cli", "--home", str(home), "serve", "--port", str(port)],
                            env=env)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/readyz")
            if conn.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("hindbrain serve did not become ready")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fragments", type=int, default=100_000)
    ap.add_argument("--embedder", default="use")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rate", type=float, default=200)
    ap.add_argument("--port", type=int, default=18080)
    args = ap.parse_args()
    bodies = recall_bodies(300)
    with tempfile.TemporaryDirectory(prefix="hindbrain-http-bench-") as tmp:
        home = Path(tmp)
        build(home, args.fragments, args.embedder)
        local, local_rate = in_process(home, args.embedder, bodies, min(args.seconds, 10))
        key = KeyStore(home).create(corpus.TENANT, "bench")
        proc = serve(home, args.port, args.embedder)
        try:
            Client(args.port, key).post("/v1/recall", bodies[0])
            for body in bodies[:50]:
                Client(args.port, key).post("/v1/recall", body)
            remote, recall_errors = open_loop_recall(args.port, key, bodies, args.rate, args.seconds)
            rate, perceive_errors = closed_loop_perceive(args.port, key, args.seconds)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    ms = 1000
    print(f"{args.fragments} fragments, embedder {args.embedder}, {len(remote)} recalls at {args.rate:.0f}/s "
          f"(errors {recall_errors}), perceive for {args.seconds:.0f} s (errors {perceive_errors})")
    print(f"recall p50: HTTP {pct(remote, 0.5) * ms:.2f} ms, in-process {pct(local, 0.5) * ms:.2f} ms "
          f"(ratio {pct(remote, 0.5) / pct(local, 0.5):.2f}x)  target <= 10 ms")
    print(f"recall p99: HTTP {pct(remote, 0.99) * ms:.2f} ms, in-process {pct(local, 0.99) * ms:.2f} ms "
          f"(ratio {pct(remote, 0.99) / pct(local, 0.99):.2f}x)  target <= 50 ms")
    print(f"perceive: HTTP {rate:,.0f} requests/s (8 connections), in-process {local_rate:,.0f} calls/s "
          f"(ratio {rate / local_rate:.2f})  target >= 2,000/s")
    print(f"recall HTTP median of means check: mean {statistics.fmean(remote) * ms:.2f} ms")


if __name__ == "__main__":
    main()
