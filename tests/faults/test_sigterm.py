"""Fault injection: SIGTERM to ``hindbrain serve`` while it group-commits requests (design.md §issue-19).

A real ``python -m hindbrain.cli serve`` process; clients on several threads send perceptions
one at a time and in batches (each with ids of their own, so a request that got no answer is
known too) and recalls (whose records wait for a group commit, ``HINDBRAIN_RECALL_COMMIT_MS``),
all at once so the server's owner thread commits them in groups. SIGTERM lands mid-stream. A
request counts as acknowledged when it was answered 200; every other outcome (refused
connection, reset, 503) is not. Then: the process exits 0 and prints no traceback; every
acknowledged perception and recall is in the log; a reopened brain's views hold them and
equal the log.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time

from fault_helpers import assert_acknowledged_logged, assert_views_equal_the_log, call, free_port

from hindbrain import Brain
from hindbrain.service.keys import KeyStore

CLIENTS = 6
ACKNOWLEDGED_BEFORE_SIGTERM = 150  # requests answered 200 before the signal: mid-stream
CLIENT_TIMEOUT_S = 30.0


class Client(threading.Thread):
    """Sends requests until the server stops answering (or a time bound); keeps what was
    acknowledged (200) and the ids of everything sent."""

    def __init__(self, n: int, port: int, key: str, answered: threading.Semaphore):
        super().__init__(name=f"client-{n}", daemon=True)
        self.n, self.port, self.key, self.answered = n, port, key, answered
        self.acknowledged: set[str] = set()  # event and recall ids answered 200
        self.sent: set[str] = set()
        self.statuses: dict[int, int] = {}
        self.failures = 0

    def run(self) -> None:
        deadline = time.monotonic() + CLIENT_TIMEOUT_S
        i = 0
        while time.monotonic() < deadline and self.failures < 3:
            i += 1
            try:
                self.one(i)
            except OSError:  # refused or reset: the server is going or gone
                self.failures += 1
                time.sleep(0.05)

    def one(self, i: int) -> None:
        kind = i % 3
        if kind == 0:
            ids = [f"ev-{self.n}-{i}"]
            path, body = "/v1/perceive", {"text": f"client {self.n} saw {i}: submit did nothing", "event_id": ids[0]}
        elif kind == 1:
            ids = [f"ev-{self.n}-{i}-{j}" for j in range(5)]
            path, body = "/v1/perceive/batch", {"events": [{"text": f"client {self.n} batch {i}.{j}", "event_id": e}
                                                           for j, e in enumerate(ids)]}
        else:
            ids, path, body = [], "/v1/recall", {"query": f"submit did nothing {i}"}
        self.sent.update(ids)
        status, answer = self.post(path, body)
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if status != 200:
            return
        self.acknowledged.update(ids or [answer["recall_id"]])
        self.answered.release()

    def post(self, path: str, body: dict) -> tuple[int, dict]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json",
                                                          "Authorization": f"Bearer {self.key}"})
            resp = conn.getresponse()
            raw = resp.read()
            return resp.status, json.loads(raw) if resp.status == 200 else {}
        finally:
            conn.close()


def start_server(home, port: int) -> subprocess.Popen:
    """``hindbrain serve`` on ``port``, its stderr in ``home/serve.err`` (a pipe nobody reads
    while it runs would block a server that logs much); returns once it is ready."""
    # A recall's records wait for a commit window longer than the test: the recalls answered
    # since the last perception are committed by the shutdown alone.
    env = {**os.environ, "HINDBRAIN_EMBEDDER": "none", "HINDBRAIN_RECALL_COMMIT_MS": "60000"}
    with open(home / "serve.err", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "hindbrain.cli", "--home", str(home), "serve", "--port",
                                 str(port), "--replicas", "0", "--log-level", "warning"],
                                env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 60
    while True:
        try:
            if call(f"http://127.0.0.1:{port}", "GET", "/readyz")[0] == 200:
                return proc
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise AssertionError(f"hindbrain serve did not become ready:\n{(home / 'serve.err').read_text()[-3000:]}")
        time.sleep(0.1)


def test_sigterm_mid_stream_loses_no_acknowledged_request(tmp_path):
    key, port = KeyStore(tmp_path).create("acme", "tests", "admin"), free_port()
    proc = start_server(tmp_path, port)
    answered = threading.Semaphore(0)
    clients = [Client(n, port, key, answered) for n in range(CLIENTS)]
    try:
        for c in clients:
            c.start()
        for _ in range(ACKNOWLEDGED_BEFORE_SIGTERM):
            assert answered.acquire(timeout=30), "the server stopped answering before the signal"
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        for c in clients:
            c.join(timeout=CLIENT_TIMEOUT_S + 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = (tmp_path / "serve.err").read_text()
    assert code == 0, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]

    acknowledged = set().union(*(c.acknowledged for c in clients))
    sent = set().union(*(c.sent for c in clients))
    recalls = {i for i in acknowledged if i.startswith("rc_")}
    assert len(acknowledged) > ACKNOWLEDGED_BEFORE_SIGTERM and recalls
    assert all(c.failures for c in clients), "a client never saw the server go: the signal came after the stream"
    ids = assert_acknowledged_logged(tmp_path, acknowledged)
    assert all(ids[i] == 1 for i in acknowledged)
    unanswered = len((sent - acknowledged) & set(ids))
    print(f"{len(acknowledged)} acknowledged ({len(recalls)} recalls), {unanswered} more perceptions written "
          f"without an answer, statuses {[c.statuses for c in clients]}")

    with Brain.open(tmp_path, embedder="none") as brain:
        events = {r["event_id"] for r in brain.sql("SELECT event_id FROM events FINAL")}
        assert acknowledged - recalls <= events
        in_views = {r["recall_id"] for r in brain.sql("SELECT recall_id FROM recalls FINAL")}
        assert recalls <= in_views
    assert_views_equal_the_log(tmp_path)
