"""Fault injection: an embedded brain reopens on views whose engine set a part aside as broken.

``Warehouse.check_written`` finds the parts a running brain wrote with empty files; a merge the
engine runs after a brain's last round (or files a disk lost while the brain was closed) is found
only by the engine when it loads the part at the next open: it detaches it
(``detached/broken-on-start_…``) and serves the table without its rows, while the runner's offset
passed them long ago. Arranged without timing: the fragments' parts merged into one, the brain
closed, the merged part left as a full disk leaves a part (every file empty) and the parts it
covers removed, as the engine's cleanup removes them once their lifetime passed.
"""

from __future__ import annotations

import shutil

from fault_helpers import assert_views_equal_the_log, merged, unwritten

from hindbrain import Brain

CONDITIONS = {"fr-0": "IAM submit does nothing", "fr-1": "the export hangs at ninety percent",
              "fr-2": "the billing page shows a blank total", "fr-3": "login loops back to the start page"}


def test_a_part_found_broken_at_open_sends_the_projection_back_to_the_start_of_the_log(tmp_path):
    home = tmp_path / "brain"
    with Brain.open(home, embedder="none", batch_size=8) as brain:
        for fragment, condition in CONDITIONS.items():
            brain.learn(tenant="acme", condition=condition, action="ask the operator", fragment_id=fragment)
            brain.runner.flush()  # a round and its part each
        name, path, covered = merged(brain.warehouse, "fragments")
        assert name.split("_")[1] == "1" and covered  # holds the first round's block, and the rounds' parts
    unwritten(path)
    for part in covered:
        shutil.rmtree(part)
    with Brain.open(home, embedder="none", batch_size=8) as brain:
        live = {r["fragment_id"] for r in brain.sql("SELECT fragment_id FROM fragments FINAL")}
        assert live == set(CONDITIONS)  # projected again from the log's start
        for fragment, condition in CONDITIONS.items():  # the index is built from the views once they hold them
            pack = brain.recall(tenant="acme", query=condition, layers=["experience"])
            assert [i.id for i in pack.items] == [fragment]
        assert brain.warehouse.broken_parts() == []  # dropped: the next open does not project again
    assert_views_equal_the_log(home)
