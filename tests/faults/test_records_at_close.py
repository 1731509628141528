"""Records appended while a brain closes are in the views it leaves (what ``replay --check`` compares).

A served brain's request threads run until its services stop, which ``Brain.close`` does after the
runner's close: a recall in flight then defers its records after the close's last flush, and the
runner's close appends them. The window is arranged, not waited for: the recall runs where close
saves the vectors, between its flush and the runner's close. Since round twenty-four no ``Brain`` call
starts once ``close`` began (``BrainClosed``, hindbrain/open_calls.py) and a running one ends before the
flush, so the recall here is its body without that gate: records that reach the runner in the window
anyway (a recall's deferred records, its committer's) are what the runner's close must project.
"""

from __future__ import annotations

from fault_helpers import assert_views_equal_the_log

from hindbrain import Brain


def test_a_recall_deferred_after_the_last_flush_of_a_close_is_projected_by_the_close(tmp_path):
    home = tmp_path / "brain"
    brain = Brain.open(home, embedder="none")  # a batch of 2,000: a recall's records alone never make one due
    brain.perceive(tenant="acme", kind="anomaly", text="the export hangs at 99 percent", system="reports")
    checkpoint = brain.checkpoint_vectors

    def recall_meanwhile():
        pack = Brain.recall.__wrapped__(brain, tenant="acme", query="export hangs")  # past the call gate
        assert pack.items, "the recall found nothing: it injects nothing and appends only its own record"
        return checkpoint()

    brain.checkpoint_vectors = recall_meanwhile
    brain.close()
    assert_views_equal_the_log(home)  # "the views lag the log" when the close left them pending
