"""Group commit of a recall's own records (design.md §issue-18): what a crash can lose, exactly.

A recall's recall and injection records wait up to ``HINDBRAIN_RECALL_COMMIT_MS`` for their
group commit; everything else (perceptions, outcomes) is durable when its call returns. The
crashes here are real: a child process calls the SDK and dies with ``os._exit`` (no close, no
flush, no atexit), and the parent reads the log it left.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from hindbrain.schemas.codec import registry
from hindbrain.streams.sqlite_log import SqliteLog

CHILD = textwrap.dedent("""
    import os, sqlite3, sys, time
    from hindbrain import Brain
    home, window_ms, then = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    brain = Brain.open(home, embedder="none", recall_commit_ms=window_ms)
    brain.perceive(tenant="acme", kind="anomaly", text="clicked submit in IAM, nothing happened", system="IAM")
    pack = brain.recall(tenant="acme", query="IAM submit nothing happened")
    if then == "outcome":
        brain.outcome(tenant="acme", recall_id=pack.recall_id, applied=[], success=True)
    elif then == "wait":
        # No call of its own, only reads of the file: the committer's commit, within 10 s (2,000 windows). A fixed
        # 0.5 s sleep here hoped that a loaded machine ran the committer's thread within it.
        log = sqlite3.connect(f"file:{home}/log.sqlite?mode=ro", uri=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not log.execute(
                "SELECT count(*) FROM records WHERE topic = 'injections'").fetchone()[0]:
            time.sleep(0.01)
    print(pack.recall_id, flush=True)
    os._exit(0)
""")


def crash_after(home, window_ms: float, then: str) -> tuple[str, list[str]]:
    """Runs the child; returns its recall id and the topics of the records its log holds, in order."""
    out = subprocess.run([sys.executable, "-c", CHILD, str(home), str(window_ms), then],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    log = SqliteLog(home / "log.sqlite")
    try:
        return out.stdout.split()[-1], [e.topic for e in log.read_all(0)]
    finally:
        log.close()


def test_a_crash_within_the_window_loses_the_recall_records_and_nothing_else(tmp_path):
    _, topics = crash_after(tmp_path, 60_000, "nothing")  # a window far longer than the child lives
    assert topics == ["perceptions"]


def test_an_outcome_commits_the_recall_it_names_before_itself(tmp_path):
    _, topics = crash_after(tmp_path, 60_000, "outcome")
    assert topics == ["perceptions", "recalls", "injections", "outcomes"]


def test_the_committer_commits_within_the_window_without_another_call(tmp_path):
    recall_id, topics = crash_after(tmp_path, 5, "wait")
    assert topics == ["perceptions", "recalls", "injections"]
    assert recall_id.startswith("rc_")


def test_with_no_window_the_recall_is_durable_when_it_returns(tmp_path):
    _, topics = crash_after(tmp_path, 0, "nothing")
    assert topics == ["perceptions", "recalls", "injections"]


def test_close_commits_the_deferred_records_without_waiting_out_the_window(tmp_path):
    """A stop (``hindbrain serve``'s SIGTERM ends in ``Brain.close``) commits what waits for its
    group commit at once; the committer thread used to sleep out its whole window first."""
    from hindbrain import Brain

    brain = Brain.open(tmp_path, embedder="none", recall_commit_ms=60_000)
    pack = brain.recall(tenant="acme", query="anything")
    time.sleep(0.2)  # the committer thread takes up the recall's window (where a thread is cannot be polled)
    started = time.monotonic()
    brain.close()
    assert time.monotonic() - started < 10
    log = SqliteLog(tmp_path / "log.sqlite")
    try:
        entries = log.read_all(0)
    finally:
        log.close()
    assert [e.topic for e in entries] == ["recalls", "injections"]
    assert registry.decode(entries[0].value)[1]["recall_id"] == pack.recall_id
