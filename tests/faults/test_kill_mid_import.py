"""A brain killed (SIGKILL) in the middle of a bulk import, while its projector thread inserts rounds
behind the writer and its offsets wait for the next append (``streams.runner``, round fifteen):
every ``perceive_many`` that returned is in the log, and once reopened the views equal the log
replayed (what ``hindbrain replay --check`` compares)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from fault_helpers import assert_acknowledged_logged, assert_views_equal_the_log

from hindbrain import Brain

# The child imports: batches of 50 perceived, each batch's ids printed once ``perceive_many`` returned.
# Its inserts are slowed (200 ms each) so that rounds are in flight and the backlog at its bound when killed.
CHILD = textwrap.dedent("""
    import sys, time
    from hindbrain import Brain

    brain = Brain.open(sys.argv[1], embedder="none", batch_size=20)
    brain.runner.backlog_records = 100
    insert = brain.warehouse.insert_arrow
    def slow(table, data):
        time.sleep(0.2)
        return insert(table, data)
    brain.warehouse.insert_arrow = slow
    n = 0
    while True:
        ids = brain.perceive_many([{"tenant": "acme", "agent": "a", "text": f"the export of report {n + i} hangs"}
                                   for i in range(50)])
        n += 50
        print(" ".join(ids), flush=True)
""")


def test_a_brain_killed_mid_import_loses_nothing_acknowledged_and_its_views_equal_the_log(tmp_path):
    home = tmp_path / "home"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(home)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    acknowledged: set[str] = set()
    try:
        for line in proc.stdout:
            acknowledged.update(line.split())
            if len(acknowledged) >= 600:  # past the bound many times: rounds in flight, offsets not yet written
                break
        time.sleep(0.1)  # into the next round's insert (200 ms), after the next append wrote what it could
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert len(acknowledged) >= 600, "the child died before it was killed"
    assert_acknowledged_logged(home, acknowledged)
    with Brain.open(home, embedder="none") as brain:  # the reopen projects what the views missed
        in_views = {row["event_id"] for row in brain.sql("SELECT event_id FROM events FINAL")}
    assert acknowledged <= in_views
    assert_views_equal_the_log(home)
