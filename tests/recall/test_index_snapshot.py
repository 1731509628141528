"""The recall read model saved and restored (``recall.index_snapshot``): a restored index equals
the saved one field by field, its lexical index scores as the one saved (over later documents
too), a replica and a reopened owner fold only the log after the snapshot and answer as the
owner, and a damaged or stale snapshot is refused by name and the log folded instead."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from hindbrain import Brain
from hindbrain.brain import vector_snapshots
from hindbrain.recall import lexical
from hindbrain.recall.doc_table import DocTable
from hindbrain.recall.index import RecallIndex
from hindbrain.recall.index_snapshot import restore
from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.snapshot_files import current_manifest
from hindbrain.recall.vector_snapshot import write_snapshot
from hindbrain.service.replica import Follower
from hindbrain.settings import Settings
from hindbrain.streams.sqlite_log import ALL_TOPICS

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "service"))
from test_one_fold import _arrange, _differences  # noqa: E402
from test_replicas import events  # noqa: E402

WORDS = ["alpha", "beta", "gamma", "delta", "页面", "转圈", "@entity:iam", "error", "403", "forbidden", "export",
         "timeout"]


def corpus(n: int, seed: int) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [[WORDS[i] for i in rng.integers(0, len(WORDS), rng.integers(1, 9))] + [f"case{seed}-{d}"]
            for d in range(n)]


def same_scores(a: BM25Index, b: BM25Index, words: list[str] = WORDS) -> None:
    assert len(a) == len(b)
    for query in (words[:2], words[4:6] + words[5:6], ["case1-7", words[2]], ["nothing-here"], words):
        (sa, ia), (sb, ib) = a.scores(query), b.scores(query)
        assert np.allclose(sa, sb, atol=1e-6) and ia.keys() == ib.keys()
        assert all(abs(ia[t] - ib[t]) < 1e-9 for t in ia)
    for term in (*words, "case1-3", "case2-4", "absent"):
        assert sorted(a.docs_with(term).tolist()) == sorted(b.docs_with(term).tolist())
        assert (a.docs_with(term, max_df=3) is None) == (b.docs_with(term, max_df=3) is None)


@pytest.mark.parametrize("collide", [False, True])
def test_a_mapped_lexical_index_scores_as_the_saved_one_with_documents_added_after(tmp_path, monkeypatch, collide):
    if collide:  # every term shares one of 3 hashes: the vocabulary's bytes still tell them apart
        monkeypatch.setattr(lexical, "term_hash", lambda term: len(term.encode()) % 3)
    first, later = corpus(300, 1), corpus(80, 2)
    whole = BM25Index()
    whole.add_many(first[:200])
    for terms in first[200:]:
        whole.add(terms)  # single adds: postings on the tails, as ``observe`` leaves them
    mapped = BM25Index.mapped(tmp_path / "x0", whole.save(tmp_path / "x0"))
    same_scores(whole, mapped)
    assert mapped.docs_with("alpha", max_df=3) is None  # a common term: counted, not gathered
    for index in (whole, mapped):
        index.add_many(later[:50])
        for terms in later[50:]:
            index.add(terms)
    same_scores(whole, mapped)
    # the owner saving again over its own restored index: the base and what followed, in one
    again = BM25Index.mapped(tmp_path / "x1", mapped.save(tmp_path / "x1"))
    same_scores(whole, again)


def test_a_restored_index_equals_the_saved_one_field_by_field(tmp_path):
    with Brain.open(tmp_path / "brain", embedder="none") as brain:
        _arrange(brain)
        brain.runner.flush()
        saved = brain.index
        end = brain.log.end_offset(ALL_TOPICS, 0)
        write_snapshot(saved, tmp_path / "snap", end)
        restored = RecallIndex()
        line, offset = restore(restored, tmp_path / "snap", end)
        assert line.startswith("snapshot: restored") and offset == saved.folded == end
        assert set(restored.tenants) == {"t", "u"}
        for name, tenant in restored.tenants.items():
            assert isinstance(tenant.docs, DocTable) and tenant.docs.made == 0  # objects only when read
            assert _differences(saved.tenants[name], tenant) == [], name
            assert tenant.persons == saved.tenants[name].persons
            assert tenant.last_said == saved.tenants[name].last_said  # threads by document number
            same_scores(saved.tenants[name].bm25, tenant.bm25, TERMS if name == "t" else OTHER)
        assert restored._outcomes_seen == saved._outcomes_seen
        assert restored._unit_decisions_seen == saved._unit_decisions_seen
        assert any(d.quarantine for d in restored.tenants["t"].docs) and restored.tenants["t"].retired == 3


TERMS = ["iam", "account", "403", "refund", "@entity:iam", "admin", "the", "prefers"]
OTHER = ["another", "tenant", "event", "s", "x", "y", "z"]
QUERIES = [{"tenant": "acme", "query": "export timeout"}, {"tenant": "acme", "query": "页面 转圈"},
           {"tenant": "acme", "agent": "agent-1",
            "situation": {"system": "iam", "actual": "reset email never arrives"}},
           {"tenant": "acme", "query": "zeppelin hangar door"}]
N = 300


def answers(recall) -> list[list[tuple[str, float]]]:
    return [[(item.id, round(item.score, 5)) for item in recall(dict(q)).items] for q in QUERIES]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A closed brain's home (its close wrote the snapshot), then reopened by the owner from that
    snapshot and given a tail: events, a unit and an outcome the snapshot does not hold."""
    path = tmp_path_factory.mktemp("owner")
    with Brain.open(path, embedder="static") as brain:
        brain.perceive_many(events(N))
        assert brain.index.semantic.wait(60)
    covered = current_manifest(vector_snapshots(Settings(home=path)))["offset"]
    with Brain.open(path, embedder="static") as brain:
        assert brain.index_start.startswith(f"snapshot: restored {N:,} documents"), brain.index_start
        brain.perceive(tenant="acme", agent="agent-1", text="the zeppelin hangar door sticks in cold weather")
        brain.perceive_many(events(20, start=N))
        unit = brain.learn(tenant="acme", condition="the export job times out", action="export month by month",
                           reason="smaller batches")
        pack = brain.recall(tenant="acme", query="export timeout")
        brain.outcome(tenant="acme", task="z", recall_id=pack.recall_id, applied=[unit], success=True)
        brain.runner.flush()
        owner = answers(lambda q: brain.recall(**q))
    return path, covered, owner


def test_a_replica_restores_the_snapshot_folds_only_the_tail_and_answers_as_the_owner(home, tmp_path):
    path, covered, owner = home
    copy = tmp_path / "home"
    shutil.copytree(path, copy, ignore=shutil.ignore_patterns("views"))  # chDB: one copy of a table per process
    follower = Follower(Settings(home=copy, embedder="static"))
    try:
        assert follower.vectors.startswith(f"snapshot: restored {N + 22:,} documents"), follower.vectors
        assert follower.next_offset > covered  # the owner's reopen wrote a newer snapshot at its close
        assert answers(lambda q: follower.recall(q)[0]) == owner
        assert follower.index.semantic.mapped_docs == N + 22
        # a tail after that snapshot: one more event, folded from the log, its vector the replica's own
        with Brain.open(copy, embedder="static") as brain:
            brain.perceive(tenant="acme", text="a lighthouse keeper reports fog")
        assert follower.catch_up() >= 1
        assert follower.index.tenants["acme"].docs[-1].text == "a lighthouse keeper reports fog"
        pack, _ = follower.recall({"tenant": "acme", "query": "lighthouse fog"})
        assert pack.items[0].id == follower.index.tenants["acme"].docs[-1].id
    finally:
        follower.close()


@pytest.mark.parametrize("damage", ["corrupt", "stale"])
def test_a_damaged_or_stale_index_snapshot_is_refused_by_name_and_the_log_folded(home, tmp_path, damage):
    path, _, owner = home
    copy = tmp_path / "home"
    shutil.copytree(path, copy, ignore=shutil.ignore_patterns("views"))  # chDB: one copy of a table per process
    generation = min(vector_snapshots(Settings(home=copy)).glob("gen-*"), key=lambda g: int(g.name[4:]))
    (generation.parent / "CURRENT").write_text(generation.name)  # the older one of the two kept: fewer documents
    if damage == "corrupt":
        rows = generation / "x0.rows"
        raw = bytearray(rows.read_bytes())
        raw[len(raw) // 3] ^= 0x20
        rows.write_bytes(raw)
    else:
        manifest = json.loads((generation / "manifest.json").read_text())
        manifest["index"]["doc_fields"] = [*manifest["index"]["doc_fields"], "a_field_from_another_version"]
        (generation / "manifest.json").write_text(json.dumps(manifest))
    follower = Follower(Settings(home=copy, embedder="static"))
    try:
        line = follower.vectors
        if damage == "corrupt":
            assert "corrupt snapshot" in line and "x0.rows" in line and "folding the log" in line, line
        else:
            assert "stale index snapshot" in line and "doc_fields" in line and "vectors: mapped" in line, line
        assert follower.next_offset == 0 and not follower.index.tenants
        follower.catch_up()
        assert len(follower.index.tenants["acme"].docs) == N + 22
        assert follower.index.semantic.wait(60)  # the vectors it did not map, from the owner's cache
        # the cache keeps float16 (the snapshot int8 codes): near-ties may swap, the scores agree
        for got, want in zip(answers(lambda q: follower.recall(q)[0]), owner, strict=True):
            # the same best answer; among items the owner scores exactly alike, either order is it
            assert len(got) == len(want) and all(g in {i for i, s in want if s == want[0][1]} for g, _ in got[:1]), (
                got, want)
            assert len({i for i, _ in got} & {i for i, _ in want}) >= 0.8 * len(want)
            assert np.allclose([s for _, s in got], [s for _, s in want], atol=0.005), (got, want)
    finally:
        follower.close()


class _FoldLockWatch:
    """``RecallIndex.fold_lock`` in a test: notes, at each acquire, whether the acquiring thread
    holds the log writer's lock too."""

    def __init__(self, lock, writer):
        self.lock, self.writer, self.writer_held = lock, writer, []

    def __enter__(self):
        self.writer_held.append(self.writer.owned())
        return self.lock.__enter__()

    def __exit__(self, *exc):
        return self.lock.__exit__(*exc)

    def acquire(self, *args, **kwargs):
        self.writer_held.append(self.writer.owned())
        return self.lock.acquire(*args, **kwargs)

    def release(self):
        return self.lock.release()


def test_a_snapshot_takes_the_log_writers_lock_before_the_fold_lock(tmp_path):
    # The group commit folds its records under the log writer's lock; a snapshot that took the
    # fold lock first and then read the log's end under the writer's lock deadlocked against it
    # (a close hung forever in the suite). Both must take them in one order: writer, then fold.
    with Brain.open(tmp_path / "brain", embedder="static") as brain:
        brain.perceive(tenant="acme", agent="agent-1", text="the boiler pressure gauge reads high")
        watch = _FoldLockWatch(brain.index.fold_lock, brain.log.lock)
        brain.index.fold_lock = watch
        brain.perceive(tenant="acme", agent="agent-1", text="the boiler was vented and reads normal")
        assert brain.checkpoint_vectors() is not None  # it wrote: the fold lock was taken
        assert watch.writer_held and all(watch.writer_held), watch.writer_held
        brain.index.fold_lock = watch.lock
