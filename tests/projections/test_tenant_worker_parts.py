"""The tenant SQL worker's copy of the brain's parts (docs/security.md, round thirty): the brain inserts and merges
while the worker answers; a tenant query sees every row once, neither a merged part beside its sources nor a
part left out because the brain merged it away while the worker linked."""

import os
import signal
import subprocess
import sys

import pytest

from hindbrain import Brain
from hindbrain.projections import tenant_worker


@pytest.mark.parametrize("part, other, covered", [
    ("all_1_5_1", "all_3_3_0", True), ("all_1_5_1", "all_1_5_1", False), ("all_1_5_1", "all_6_6_0", False),
    ("all_1_1_0_7", "all_1_1_0", True), ("all_1_1_0", "all_1_1_0_7", False), ("202601_1_2_1", "all_1_1_0", False),
    ("all_2_2_1", "all_1_2_0", False),
])
def test_which_part_holds_another_s_rows(part, other, covered):
    assert tenant_worker.covers(part, other) is covered


@pytest.mark.parametrize("loaded, now, attach", [
    ({"all_1_1_0"}, {"all_1_1_0", "all_3_3_0", "all_2_2_0"}, ["all_2_2_0", "all_3_3_0"]),  # inserts, in order
    ({"all_1_1_0", "all_2_2_0"}, {"all_1_1_0", "all_2_2_0", "all_1_2_1"}, None),  # a merge beside its sources
    ({"all_1_1_0", "all_2_2_0"}, {"all_1_2_1"}, None),  # a merge, its sources removed
    ({"all_1_1_0"}, {"all_1_1_0", "all_2_2_0", "all_3_3_0", "all_2_3_1"}, None),  # a merge of two new parts
    ({"all_1_1_0"}, {"all_1_1_0_4"}, None),  # a mutation
])
def test_only_an_insert_s_parts_are_attached_one_by_one(loaded, now, attach):
    assert tenant_worker.only_added(frozenset(loaded), frozenset(now)) == attach


def test_a_part_merged_away_while_it_was_linked_is_found_in_the_merged_one(tmp_path, monkeypatch):
    # The brain lists {all_1_1_0, all_2_2_0}; before the worker links all_2_2_0 the brain merges both into
    # all_1_2_1 and removes them (chDB's old_parts_lifetime is 0). Linking what was listed left all_2_2_0's rows
    # out of the worker's copy until the next write (the base: a copy of all_1_1_0 alone).
    source, target = tmp_path / "brain", tmp_path / "copy"
    for part in ("all_1_1_0", "all_1_2_1"):
        (source / part).mkdir(parents=True)
        (source / part / "data.bin").write_text(part)
    stale = [frozenset({"all_1_1_0", "all_2_2_0"})]  # the first listing of the brain's folder; then the folder's
    real = tenant_worker.part_names
    monkeypatch.setattr(tenant_worker, "part_names",
                        lambda path: stale.pop() if stale and path == str(source) else real(path))
    linked = tenant_worker.link_parts(str(source), str(target))
    assert linked == {"all_1_1_0", "all_1_2_1"} and set(os.listdir(target)) == linked
    assert os.stat(target / "all_1_2_1" / "data.bin").st_ino == os.stat(source / "all_1_2_1" / "data.bin").st_ino


def test_a_tenant_query_sees_each_row_once_across_the_brain_s_inserts_and_merges(tmp_path):
    count = "SELECT count() AS n, uniqExact(event_id) AS ids FROM events"
    with Brain.open(tmp_path / "b", embedder="none") as brain:
        for n in range(1, 4):  # a part a round: attached one by one in the worker
            brain.perceive(tenant="acme", agent="bot-1", text=f"acme note {n}")
            assert brain.sql(count, tenant="acme") == [{"n": n, "ids": n}]
        brain.warehouse.command("OPTIMIZE TABLE events FINAL")  # the brain merges what the worker attached
        assert brain.sql(count, tenant="acme") == [{"n": 3, "ids": 3}]
        brain.perceive(tenant="acme", agent="bot-1", text="acme after the merge")
        assert brain.sql(count, tenant="acme") == [{"n": 4, "ids": 4}]
        brain.warehouse.command("OPTIMIZE TABLE events FINAL")
        brain.perceive(tenant="acme", agent="bot-1", text="acme after the second merge")
        assert brain.sql(count, tenant="acme") == [{"n": 5, "ids": 5}]



# A worker's folder as a brain killed with its worker (SIGKILL to both) leaves it: made by another process, a
# snapshot whose hard links keep the parts they name on disk, nothing left to remove it.
LEFT_BEHIND = """
import os, sys, tempfile
home = tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=sys.argv[1])
os.makedirs(os.path.join(home, "snapshot", "store"))
os.link(sys.argv[2], os.path.join(home, "snapshot", "store", "data.bin"))
print(home, flush=True)
os.kill(os.getpid(), 9)
"""


def test_the_folder_a_killed_brain_s_worker_left_is_swept_when_a_brain_opens_the_folder(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as brain:
        assert brain.sql("SELECT count() AS n FROM events", tenant="acme") == [{"n": 0}]
        mine = brain.warehouse._worker._home
        part = next(p for p in (tmp_path / "b").rglob("*.bin"))
        left = subprocess.run([sys.executable, "-c", LEFT_BEHIND, os.path.dirname(mine), str(part)],
                              capture_output=True, text=True, timeout=30)
        assert left.returncode == -signal.SIGKILL and os.path.isdir(home := left.stdout.strip())
        brain.warehouse.isolate_tenants()  # what Brain.open runs (hindbrain.brain.open_views)
        assert not os.path.exists(home)  # at the base, in the system's temporary folder, never swept
        assert os.path.isdir(mine) and os.listdir(os.path.dirname(mine)) == [os.path.basename(mine)]  # its own
        assert brain.sql("SELECT count() AS n FROM events", tenant="acme") == [{"n": 0}]


def test_a_folder_left_by_an_earlier_process_of_the_same_id_is_swept(tmp_path):
    # In a container the brain has the same small process id at every start: a folder its killed predecessor left
    # bears this process's id. At the base a sweep took it for this process's own and kept it for good.
    with Brain.open(tmp_path / "b", embedder="none") as brain:
        assert brain.sql("SELECT count() AS n FROM events", tenant="acme") == [{"n": 0}]
        mine = brain.warehouse._worker._home
        left = os.path.join(os.path.dirname(mine), f"{os.getpid()}-left")
        os.makedirs(os.path.join(left, "snapshot"))
        brain.warehouse.isolate_tenants()  # what Brain.open runs (hindbrain.brain.open_views)
        assert not os.path.exists(left)
        assert os.listdir(os.path.dirname(mine)) == [os.path.basename(mine)]  # its live worker's, kept
        assert brain.sql("SELECT count() AS n FROM events", tenant="acme") == [{"n": 0}]
