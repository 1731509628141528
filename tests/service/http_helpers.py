"""A real ``hindbrain serve`` app on a loopback port, in this process, and a tiny client."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from contextlib import contextmanager

import uvicorn

from hindbrain import Brain
from hindbrain.service.http import create_app
from hindbrain.service.keys import KeyStore
from hindbrain.service.wire import uvicorn_options


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(home, embedder: str = "none", app_of=None, **brain_settings):
    """Yield ``(base_url, brain, keys)`` while uvicorn serves the app on a free port
    (``brain_settings``: e.g. Kafka's, for a brain whose log is a broker; ``app_of(brain, keys)``:
    another ASGI app than ``create_app``'s)."""
    with Brain.open(home, embedder=embedder, **brain_settings) as brain:
        keys = KeyStore(home)
        port = free_port()
        server = uvicorn.Server(uvicorn.Config((app_of or create_app)(brain, keys), host="127.0.0.1", port=port,
                                               log_level="warning", access_log=False,
                                               **uvicorn_options(brain.settings)))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the HTTP server did not start")
            time.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}", brain, keys
        finally:
            server.should_exit = True
            thread.join(timeout=20)


def wait_ready(proc, base: str, timeout_s: float = 60.0) -> None:
    """Poll ``/readyz`` until the ``hindbrain serve`` process ``proc`` answers 200; fail with
    its stderr if it exits first."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if call(base, "GET", "/readyz")[0] == 200:
                return
        except OSError:
            pass
        assert proc.poll() is None, f"hindbrain serve exited: {proc.stderr.read() if proc.stderr else ''}"
        assert time.monotonic() < deadline, "hindbrain serve did not become ready"
        time.sleep(0.05)


def call(base: str, method: str, path: str, body=None, key: str | None = None, headers: dict | None = None):
    """``(status, json body or text, response headers)`` (headers match case-insensitively);
    ``body`` bytes are sent as they are."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method, headers={
        "Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {}), **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, _decode(resp.read()), resp.headers
    except urllib.error.HTTPError as err:
        return err.code, _decode(err.read()), err.headers


def _decode(raw: bytes):
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode()
