"""``hindbrain serve`` as a process manager runs it: started by the CLI, stopped by SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

from http_helpers import call, wait_ready

from hindbrain.service.keys import KeyStore


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_sigterm_stops_the_server_and_closes_the_brain(tmp_path):
    key, port = KeyStore(tmp_path).create("acme", "tests"), _free_port()
    env = {**os.environ, "HINDBRAIN_EMBEDDER": "none"}
    proc = subprocess.Popen([sys.executable, "-m", "hindbrain.cli", "--home", str(tmp_path), "serve",
                             "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(proc, base)
        status, body, _ = call(base, "POST", "/v1/perceive", {"text": "served, then stopped"}, key)
        assert status == 200 and body["event_id"]
        snapshot = tmp_path / "cache" / "learner.snapshot"
        assert not snapshot.exists()  # written when the brain closes
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
        assert snapshot.exists()  # Brain.close ran: the SIGTERM did not cut the process short
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
