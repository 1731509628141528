"""The examples in ``examples/`` run as written (a newcomer copies them first). The HTTP
client's ``client_loop.py`` runs against the served brain of ``test_client.py``; the LangGraph agent
in ``tests/integrations/test_langgraph.py``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_python_agent_loop_learns_from_its_first_task(tmp_path):
    env = {**os.environ, "HINDBRAIN_EMBEDDER": "none"}
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "agent_loop.py"), str(tmp_path / "brain")],
                         env=env, capture_output=True, text=True, timeout=120, check=True).stdout
    assert "first task failed (and taught a lesson); second task succeeded with the lesson" in out
    assert "WHEN " in out and "admin account" in out  # the injected rule, as the prompt shows it


def test_the_mcp_client_configuration_is_valid_json_naming_the_cli():
    config = json.loads((ROOT / "examples" / "mcp" / "mcp_servers.json").read_text())
    servers = config["mcpServers"]
    assert servers and all(entry.get("command") == "hindbrain" and "mcp" in entry["args"]
                           or entry.get("url", "").endswith("/mcp") for entry in servers.values())


def test_the_curl_session_is_valid_shell():
    assert subprocess.run(["bash", "-n", str(ROOT / "examples" / "curl.sh")], capture_output=True).returncode == 0


def test_the_mcp_agent_loop_recalls_its_lesson_through_the_mcp_tools(tmp_path):
    env = {**os.environ, "HINDBRAIN_EMBEDDER": "none"}
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "mcp" / "mcp_agent.py"), str(tmp_path / "brain")],
                         env=env, capture_output=True, text=True, timeout=120, check=True).stdout
    assert "tools: learn, outcome, perceive, recall" in out
    assert "WHEN submit does nothing in IAM → DO switch to the admin account" in out
    assert "outcome reported: applied ['fr_" in out  # the recalled lesson was applied
