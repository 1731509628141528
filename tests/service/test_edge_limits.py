"""The walls at the edge (design.md §issue-27, points 6 and 8): what one connection can take from the others,
on raw sockets against a real server on loopback (slow headers, a trickled body, an 8 MB
header); bad ids; ``serve`` on a busy port. Rates and what needs a key: test_edge_access.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest
from http_helpers import call, serving

from hindbrain.schemas.api import InvalidInput

DEADLINE_S = 1.0  # the header and body deadlines of these servers
SLACK_S = 4.0  # a loaded machine's scheduling, on top of a deadline


def _connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=DEADLINE_S + SLACK_S)


def _answer(conn: socket.socket) -> bytes:
    """Everything the server sends until it closes (b"" when it closed without a word)."""
    data = b""
    try:
        while chunk := conn.recv(65536):
            data += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return data


def _served_meanwhile(base: str) -> None:
    started = time.monotonic()
    assert call(base, "GET", "/healthz")[0] == 200
    assert time.monotonic() - started < DEADLINE_S  # not queued behind the stalled connection


@pytest.fixture(scope="module")
def strict(tmp_path_factory):
    """A server with short deadlines and a 16 kB header limit."""
    home = tmp_path_factory.mktemp("strict")
    with serving(home, header_timeout=DEADLINE_S, body_timeout=DEADLINE_S, max_header_bytes=16384) as served:
        yield served


def test_slow_headers_get_408_within_the_deadline_while_another_client_is_served(strict):
    base, *_ = strict
    slow = _connect(base)
    slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")  # and never the rest
    started = time.monotonic()
    _served_meanwhile(base)
    answer = _answer(slow)
    assert answer.startswith(b"HTTP/1.1 408 ") and b"HINDBRAIN_HEADER_TIMEOUT" in answer
    assert time.monotonic() - started < DEADLINE_S + SLACK_S
    silent = _connect(base)  # a connection that sends nothing at all is closed too
    assert _answer(silent) == b""


def test_a_trickled_body_gets_408_and_nothing_is_acted_on(strict):
    base, brain, keys = strict
    key = keys.create("acme", "trickle")
    before = brain.stats()["log_records"]
    body = b'{"text": "trickled in"}'
    slow = _connect(base)
    slow.sendall(b"POST /v1/perceive HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Authorization: Bearer " + key.encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:5])
    started = time.monotonic()
    _served_meanwhile(base)
    answer = _answer(slow)
    assert answer.startswith(b"HTTP/1.1 408 ") and b"HINDBRAIN_BODY_TIMEOUT" in answer
    assert time.monotonic() - started < DEADLINE_S + SLACK_S
    assert brain.stats()["log_records"] == before


def test_an_8_mb_header_gets_431_before_it_is_read_whole(strict):
    base, *_ = strict
    big = _connect(base)
    sent = [0]

    def flood():  # the server may stop reading: send from a thread, the answer is read here
        try:
            big.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            chunk = b"X-Big: " + b"a" * 65536 + b"\r\n"
            while sent[0] < 8 << 20:
                big.sendall(chunk)
                sent[0] += len(chunk)
        except OSError:
            pass

    thread = threading.Thread(target=flood, daemon=True)
    thread.start()
    answer = _answer(big)
    assert answer.startswith(b"HTTP/1.1 431 ") and b"HINDBRAIN_MAX_HEADER_BYTES" in answer, answer[:200]
    _served_meanwhile(base)
    thread.join(timeout=10)
    # headers under the limit pass
    assert call(base, "GET", "/healthz", headers={"X-Fine": "a" * 8000})[0] == 200


@pytest.mark.parametrize("path, body, field", [
    ("/v1/keys", {"agent": " "}, ["body", "agent"]),
    ("/v1/keys", {"agent": "bot\n7"}, ["body", "agent"]),
    ("/v1/perceive", {"text": "t", "event_id": "ev\r\n1"}, ["body", "event_id"]),
    ("/v1/perceive/batch", {"events": [{"text": "t", "event_id": "ev\x00"}]}, ["body", "events", 0, "event_id"]),
    ("/v1/outcome", {"success": True, "applied": ["fr\u20281"]}, ["body", "applied", 0]),
    ("/v1/outcome", {"success": True, "recall_id": "rc\x1b[2J"}, ["body", "recall_id"]),
    ("/v1/learn", {"condition": "c", "action": "a", "event_ids": ["ev\x85"]}, ["body", "event_ids", 0]),
    ("/v1/approve", {"fragment_id": "fr\t1", "approver": "ops"}, ["body", "fragment_id"]),
    ("/v1/invalidate", {"fragment_id": "fr1", "reason": "r", "evidence": ["ev\x7f"]}, ["body", "evidence", 0]),
    ("/v1/explain/fr%0A1", None, ["path", "item_id"]),
    ("/v1/explain/fr%00", None, ["path", "item_id"]),
])
def test_bad_ids_and_a_blank_key_agent_are_a_422_naming_the_field(strict, path, body, field):
    base, brain, keys = strict
    admin = keys.create("acme", "edges", "admin")
    before = brain.stats()["log_records"]
    status, answer, _ = call(base, "POST" if body is not None else "GET", path, body, admin)
    assert status == 422 and answer["detail"][0]["loc"] == field, answer
    assert brain.stats()["log_records"] == before


@pytest.mark.parametrize("item_id", ["\ud800", "a\udfffb", "x\x00", "x\ny", ""])
def test_explain_refuses_a_bad_id_with_invalid_input(strict, item_id):
    _, brain, _ = strict
    with pytest.raises(InvalidInput, match="explain: field 'item_id'"):
        brain.explain(item_id, tenant="acme")


def test_serve_on_a_busy_port_fails_at_once_in_one_line(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "hindbrain.cli", "--home", str(tmp_path), "serve", "--port",
                               str(port)], env={**os.environ, "HINDBRAIN_EMBEDDER": "none"}, capture_output=True,
                              text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"hindbrain serve: cannot listen on 127.0.0.1:{port}: "
                                                "Address already in use"]
    assert not (tmp_path / "log.sqlite").exists()  # refused before the brain was opened
    assert time.monotonic() - started < 30


def test_mcp_over_http_on_a_busy_port_fails_at_once_in_one_line(tmp_path, capsys):
    from hindbrain.service.mcp import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["--home", str(tmp_path), "--transport", "http", "--port", str(port)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"hindbrain mcp: cannot listen on 127.0.0.1:{port}: Address already in use"]
    assert not (tmp_path / "log.sqlite").exists()  # refused before the brain was opened


@pytest.mark.parametrize("agent", [" ", "bot\n7"])
def test_the_cli_refuses_a_blank_or_control_character_key_agent_in_one_line(tmp_path, capsys, agent):
    from hindbrain.cli import main

    assert main(["--home", str(tmp_path), "keys", "create", "--tenant", "acme", "--agent", agent]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("keys create: keys: field 'agent': ")
