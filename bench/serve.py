"""``hindbrain serve`` under load on loopback (design.md §issue-8), against in-process calls.

    python bench/serve.py [--fragments 100000] [--embedder use] [--seconds 20] [--rates 50,100,200] [--home DIR]

1. Builds a brain with ``--fragments`` units (bench/recall.py's synthetic corpus, through
   ``brain.learn``: the learner gates each) and measures, in this process, recall latency
   over the same queries and single-call perceive throughput: the baseline.
2. Starts ``hindbrain serve`` on that brain as a subprocess and a load generator here:
   recall open-loop at ``--rate`` requests/s for ``--seconds`` (latency counted from each
   request's scheduled time, so a stall is not hidden), then perceive closed-loop from 32
   keep-alive connections for ``--seconds``; the generator is asyncio on raw sockets.

Also measures the recall capacity (closed loop on 1 and 4 connections). Prints p50/p99 of
recall (HTTP and in-process, and their ratio) and perceive requests/s (HTTP, median of three
runs, and in-process). Targets: recall p50 ≤ 10 ms, p99 ≤ 50 ms at 200 requests/s over
100k fragments; perceive ≥ 2,000 requests/s.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
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


def warm(brain) -> None:
    """Until the reopened brain's vector graph holds every vector (the server's /readyz waits too)."""
    semantic = brain.index.semantic
    while semantic is not None and (semantic.pending() or semantic.unbuilt()):
        time.sleep(0.5)


def in_process(home: Path, embedder: str, bodies: list[dict], seconds: float) -> tuple[list[float], float]:
    with Brain.open(home, embedder=embedder) as brain:
        warm(brain)
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
    """A keep-alive HTTP/1.1 connection for the warm-up (http.client is fine there)."""

    def __init__(self, port: int, key: str):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}

    def post(self, path: str, body: dict) -> int:
        self.conn.request("POST", path, json.dumps(body), self.headers)
        resp = self.conn.getresponse()
        resp.read()
        return resp.status


def request_bytes(path: str, body: dict, key: str) -> bytes:
    data = json.dumps(body).encode()
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data


async def exchange(reader, writer, raw: bytes, served: Counter | None = None) -> int:
    """One request on a kept-alive connection; returns the status (``served`` counts the
    answering process, ``x-hindbrain-served-by``). The load generator runs on the same 2 cores
    as the server, so it is asyncio and raw sockets, not threads and http.client (which cost
    more CPU per request than the server's own route)."""
    writer.write(raw)
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    lines = head.lower().split(b"\r\n")
    length = next(int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length"))
    if served is not None:
        served[next((line.split(b":")[1].strip().decode() for line in lines
                     if line.startswith(b"x-hindbrain-served-by")), "owner")] += 1
    await reader.readexactly(length)
    return status


def open_loop_recall(port: int, key: str, bodies: list[dict], rate: float, seconds: float) -> tuple[list, int]:
    """``rate`` recalls a second for ``seconds``, each sent at its scheduled time on a free
    connection (up to 64); latency counts from the schedule, so queueing shows."""
    raws = [request_bytes("/v1/recall", b, key) for b in bodies]

    async def run():
        conns = asyncio.Queue()
        for _ in range(64):
            conns.put_nowait(await asyncio.open_connection("127.0.0.1", port))
        latencies, errors = [], 0
        start = time.perf_counter() + 0.1

        async def one(i: int):
            nonlocal errors
            due = start + i / rate
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            reader, writer = await conns.get()
            status = await exchange(reader, writer, raws[i % len(raws)])
            latencies.append(time.perf_counter() - due)
            errors += status != 200
            conns.put_nowait((reader, writer))

        await asyncio.gather(*(one(i) for i in range(int(rate * seconds))))
        return latencies, errors

    return asyncio.run(run())


def closed_loop_perceive(port: int, key: str, seconds: float, connections: int = 32,
                         batch: int = 0) -> tuple[float, int]:
    """As many perceive requests as ``connections`` keep-alive connections get answered
    (events per second; ``batch`` > 0: that many events a request, on ``/v1/perceive/batch``)."""

    async def run():
        stop, counts, errors = time.perf_counter() + seconds, [0] * connections, [0]

        async def worker(w: int):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            n = 0
            while time.perf_counter() < stop:
                event = {"agent": f"load-{w}", "text": f"http event {w}-{n}"}
                raw = (request_bytes("/v1/perceive/batch", {"events": [{**event, "text": f"{event['text']}.{b}"}
                                                                       for b in range(batch)]}, key) if batch
                       else request_bytes("/v1/perceive", event, key))
                errors[0] += await exchange(reader, writer, raw) != 200
                n += max(batch, 1)
            counts[w] = n
            writer.close()

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(connections)))
        return sum(counts) / (time.perf_counter() - t0), errors[0]

    return asyncio.run(run())


def closed_loop_recall(port: int, key: str, bodies: list[dict], seconds: float, connections: int,
                       served: Counter | None = None) -> tuple[float, list]:
    """Recalls as fast as ``connections`` keep-alive connections get answered: the server's
    recall capacity (requests/s) and the latencies at that load (``served``: answers per process)."""
    raws = [request_bytes("/v1/recall", b, key) for b in bodies]

    async def run():
        stop, latencies = time.perf_counter() + seconds, []

        async def worker(w: int):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            n = w
            while time.perf_counter() < stop:
                t = time.perf_counter()
                await exchange(reader, writer, raws[n % len(raws)], served)
                latencies.append(time.perf_counter() - t)
                n += connections
            writer.close()

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(w) for w in range(connections)))
        return len(latencies) / (time.perf_counter() - t0), latencies

    return asyncio.run(run())


def serve(home: Path, port: int, embedder: str | None, replicas: str = "auto", output=None,
          python: str = sys.executable) -> subprocess.Popen:
    """``hindbrain serve`` on ``home`` with ``python`` (a checkout's interpreter), once it and its
    recall replicas all serve (its stdout and stderr to ``output``, a file, if given).
    ``embedder`` None: the home's own (``HINDBRAIN_EMBEDDER`` as the environment has it)."""
    env = {**os.environ, **({"HINDBRAIN_EMBEDDER": embedder} if embedder else {})}
    proc = subprocess.Popen([python, "-m", "hindbrain.cli", "--home", str(home), "serve", "--port", str(port),
                             "--replicas", replicas], env=env, stdout=output, stderr=output)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{python} serve exited {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/readyz")
            answer = conn.getresponse()
            ready = json.loads(answer.read()).get("replicas", {"serving": 0, "of": 0})
            if answer.status == 200 and ready["serving"] == ready["of"]:
                return proc
            time.sleep(0.5)
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("hindbrain serve did not become ready")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fragments", type=int, default=100_000)
    ap.add_argument("--embedder", default="use")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rates", default="50,100,200", help="recall request rates to run, one after the other")
    ap.add_argument("--port", type=int, default=18080)
    ap.add_argument("--home", help="keep the built brain here and reuse it on the next run (default: a temp dir)")
    args = ap.parse_args()
    bodies = recall_bodies(300)
    with tempfile.TemporaryDirectory(prefix="hindbrain-http-bench-") as tmp:
        home = Path(args.home or tmp)
        if not (home / "log.sqlite").exists():
            build(home, args.fragments, args.embedder)
        local, local_rate = in_process(home, args.embedder, bodies, min(args.seconds, 10))
        key = KeyStore(home).create(corpus.TENANT, "bench")
        proc = serve(home, args.port, args.embedder)
        try:
            Client(args.port, key).post("/v1/recall", bodies[0])
            for body in bodies[:50]:
                Client(args.port, key).post("/v1/recall", body)
            capacity = {c: closed_loop_recall(args.port, key, bodies, min(args.seconds, 10), c) for c in (1, 4)}
            runs = {}
            for rate in [float(r) for r in args.rates.split(",")]:
                runs[rate] = open_loop_recall(args.port, key, bodies, rate, args.seconds)
            # The machine is shared: three runs, the median reported with the spread.
            perceive_runs = [closed_loop_perceive(args.port, key, args.seconds / 2) for _ in range(3)]
            batch_rate, _ = closed_loop_perceive(args.port, key, args.seconds / 2, batch=10)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    ms = 1000
    print(f"{args.fragments} fragments, embedder {args.embedder}; in-process recall p50 {pct(local, 0.5) * ms:.2f} ms, "
          f"p99 {pct(local, 0.99) * ms:.2f} ms")
    for r, (remote, errors) in runs.items():
        print(f"recall over HTTP at {r:.0f}/s ({len(remote)} requests, errors {errors}): "
              f"p50 {pct(remote, 0.5) * ms:.2f} ms "
              f"({pct(remote, 0.5) / pct(local, 0.5):.2f}x in-process), p99 {pct(remote, 0.99) * ms:.2f} ms "
              f"({pct(remote, 0.99) / pct(local, 0.99):.2f}x)   target p50 <= 10, p99 <= 50 at 200/s")
    for c, (throughput, lat) in capacity.items():
        print(f"recall capacity, closed loop on {c} connection(s): {throughput:.0f} requests/s, "
              f"p50 {pct(lat, 0.5) * ms:.2f} ms ({pct(lat, 0.5) / pct(local, 0.5):.2f}x in-process)")
    rates = sorted(r for r, _ in perceive_runs)
    errors = sum(e for _, e in perceive_runs)
    print(f"perceive: HTTP {rates[1]:,.0f} requests/s (median of 3: {', '.join(f'{r:,.0f}' for r in rates)}; "
          f"32 connections, errors {errors}), in-process {local_rate:,.0f} calls/s (ratio {rates[1] / local_rate:.2f})"
          f"  target >= 2,000/s")
    print(f"perceive in batches of 10 over HTTP: {batch_rate:,.0f} events/s")


if __name__ == "__main__":
    main()
