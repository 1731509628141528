"""Progress of the long commands (design.md §issue-20 point 3): a live bar in a terminal, a line per stage
in a log — never carriage-return frames in a file or a pipe."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from hindbrain import Brain
from hindbrain.progress import LONG_STAGE_S, Stage


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_in_a_log_a_stage_is_one_line_when_it_ends():
    out = io.StringIO()
    with Stage("the fleet", total=200, unit="tasks", stream=out, clock=(clock := Clock())) as s:
        for _ in range(200):
            s.advance()
        clock.now = 12.34
        s.summary = "report.html"
    assert out.getvalue() == "the fleet: 200/200 tasks in 12.3 s; report.html\n"


def test_named_steps_are_a_line_each_and_a_stage_without_a_count_says_when_it_was_done():
    out = io.StringIO()
    with Stage("hindsight", unit="phases", stream=out, clock=Clock()) as s:
        s.step("induce 0.40 s")
        s.step("append 0.01 s")
    with Stage("open the brain", stream=out, clock=Clock()):
        pass
    assert out.getvalue().splitlines() == ["hindsight: induce 0.40 s", "hindsight: append 0.01 s",
                                           "hindsight: 2 phases in 0.0 s", "open the brain: done in 0.0 s"]


def test_a_long_stage_also_reports_every_ten_percent_once_it_has_run_a_minute():
    out, clock = io.StringIO(), Clock()
    with Stage("replay", total=1000, unit="records", stream=out, clock=clock) as s:
        s.advance(500)  # quick: no line yet
        clock.now = LONG_STAGE_S
        for _ in range(50):
            s.advance(10)
    lines = out.getvalue().splitlines()
    # the first line where the minute passed, then one at each ten percent; none at the end's 100 %
    assert lines[:-1] == [f"replay: {p}% ({10 * p}/1000 records, 60 s)" for p in (51, 60, 70, 80, 90)]
    assert lines[-1] == "replay: 1000/1000 records in 60.0 s"


def test_a_failed_stage_says_where_it_stopped_and_the_error_goes_on():
    out = io.StringIO()
    with pytest.raises(RuntimeError), Stage("seed", total=10, unit="entries", stream=out, clock=Clock()) as s:
        s.advance(3)
        raise RuntimeError("boom")
    assert out.getvalue() == "seed: 3/10 entries stopped after 0.0 s\n"


def test_a_terminal_gets_a_live_bar():
    out = io.StringIO()
    with Stage("the fleet", total=3, unit="tasks", stream=out, interactive=True) as s:
        for _ in range(3):
            s.advance()
    assert "\r" in out.getvalue() and "3/3 tasks" in out.getvalue() and "100%" in out.getvalue()


def test_replay_into_a_pipe_prints_one_line_per_stage_and_no_frames(tmp_path):
    home = tmp_path / "brain"
    with Brain.open(home, embedder="none") as brain:
        for n in range(5):
            brain.perceive(tenant="acme", kind="observation", text=f"event {n}")
        records = brain.stats()["log_records"]
    done = subprocess.run([sys.executable, "-m", "hindbrain.cli", "--home", str(home), "replay", "--check"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "HINDBRAIN_EMBEDDER": "none"})
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr + done.stdout
    stages = [line for line in done.stderr.splitlines() if line.startswith(("the live views", "replay into"))]
    assert len(stages) == 2, done.stderr
    assert stages[0].startswith("the live views up to the end of the log: ")
    assert stages[1].startswith(f"replay into a fresh database: {records}/{records} records in ")
    assert "every view equals the live one" in done.stdout
