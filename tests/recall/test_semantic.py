"""SemanticIndex: tenant wall, read-your-writes, background drain, cache reuse, failures kept."""

import threading
import time

import numpy as np
import pytest

from hindbrain.recall.embed import UseEmbedder, default_embedder
from hindbrain.recall.semantic import SemanticIndex


class Wrapped:
    """The real USE model, wrapped to count texts, fail on demand, or block until released."""

    def __init__(self, fail: bool = False):
        self.inner = default_embedder()
        self.name, self.dim = self.inner.name, self.inner.dim
        self.fail = fail
        self.gate: threading.Event | None = None
        self.texts = 0
        self.queries = 0
        self.threads: set[str] = set()

    def embed_queries(self, texts):
        self.queries += len(texts)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts):
        if self.gate is not None:
            self.gate.wait(10)
        if self.fail:
            raise RuntimeError("model unavailable")
        self.texts += len(texts)
        self.threads.add(threading.current_thread().name)
        return self.inner.embed_passages(texts)


def docs(n: int, prefix: str = "doc", start: int = 0) -> list[tuple[int, str, str]]:
    topics = ["the page keeps spinning after submit", "password reset email never arrives",
              "the export job fails with a timeout", "我的猫喜欢在阳光下睡觉", "页面一直转圈，提交后没有响应"]
    return [(i, f"{prefix}-{i}", f"{topics[i % len(topics)]} (case {i})") for i in range(start, start + n)]


@pytest.fixture
def make(tmp_path):
    opened: list[SemanticIndex] = []

    def _make(embedder=None, cache: bool = False, **kw) -> SemanticIndex:
        s = SemanticIndex(embedder or Wrapped(), tmp_path / "cache.sqlite" if cache else None, **kw)
        opened.append(s)
        return s

    yield _make
    for s in opened:
        s.close()


def test_tenants_never_see_each_other(make):
    s = make()
    s.add("acme", [(0, "a-0", "the export job fails with a timeout"), (1, "a-1", "password reset email never arrives")])
    s.add("globex", [(0, "g-0", "页面一直转圈"), (1, "g-1", "the page keeps spinning after submit"),
                     (2, "g-2", "extra doc only globex has")])
    q = s.embed_query("the page keeps spinning after submit")
    acme = s.search("acme", q, 10)
    globex = s.search("globex", q, 10)
    assert {d for d, _ in acme} == {0, 1} and max(c for _, c in acme) < 0.6  # acme has no such doc
    assert globex[0][0] == 1 and globex[0][1] > 0.99 and len(globex) == 3
    assert s.search("initech", q, 10) == []
    assert s.coverage("acme") == (2, 2) and s.coverage("initech") == (0, 0)


def test_search_reads_its_own_writes_inline(make):
    emb = Wrapped()
    s = make(emb)
    for i in range(5):  # the usual loop: write, then recall at once
        text = f"incident {i}: the export job fails with a timeout"
        s.add("acme", [(i, f"d{i}", text)])
        hits = s.search("acme", s.embed_query(text), 1)
        assert hits[0][0] == i and hits[0][1] > 0.99
    assert s.pending("acme") == 0


def test_large_backlog_is_not_waited_for(make):
    emb = Wrapped()
    emb.gate = threading.Event()  # the background thread blocks inside the model
    s = make(emb, inline_limit=10)
    s.add("acme", docs(50))
    t0 = time.perf_counter()
    assert s.search("acme", s.embed_query("the page keeps spinning"), 5) == []  # nothing indexed yet
    assert time.perf_counter() - t0 < 1.0
    assert s.pending("acme") == 50 and s.pending() == 50 and s.coverage("acme") == (0, 50)
    emb.gate.set()
    assert s.wait(10)
    assert s.pending() == 0 and s.coverage("acme") == (50, 50)
    assert emb.threads == {"hindbrain-semantic"}


def test_background_drain_batches(make):
    emb = Wrapped()
    s = make(emb, inline_limit=0)
    s.add("acme", docs(300))
    s.add("globex", docs(40, prefix="g"))
    assert s.wait(20)
    assert s.coverage("acme") == (300, 300) and s.coverage("globex") == (40, 40)
    assert emb.texts == 340 and s.memory_bytes() >= 340 * 512 * 2  # float16 rows
    hits = s.search("acme", s.embed_query("password reset email never arrives (case 16)"), 3)
    assert hits[0][0] == 16


def test_cache_is_reused_by_a_second_instance(make):
    first = make(cache=True)
    first.add("acme", docs(120))
    assert first.wait(20)
    first.close()

    emb = Wrapped()
    second = make(emb, cache=True)
    second.add("acme", docs(120))
    assert second.wait(20)
    assert emb.texts == 0  # every vector came from the cache
    assert second.coverage("acme") == (120, 120)
    hits = second.search("acme", second.embed_query("the export job fails with a timeout (case 7)"), 1)
    assert hits[0][0] == 7 and hits[0][1] > 0.99  # float16 round trip keeps the cosine
    second.add("acme", [(7, "doc-7", "an edited text is embedded again")])
    second.search("acme", second.embed_query("x"), 1)
    assert emb.texts == 1


def test_embedder_failure_is_kept_and_items_are_not_lost(make):
    emb = Wrapped(fail=True)
    s = make(emb, inline_limit=0)
    s.add("acme", docs(70))
    assert not s.wait(10)  # stalled on the error: wait says so instead of hanging
    assert isinstance(s.last_error, RuntimeError) and s.failures >= 1
    assert s.pending("acme") == 70 and s.coverage("acme") == (0, 70)
    emb.fail = False
    s.add("acme", [])  # any add (or search) is the retry signal
    assert s.wait(20)
    assert s.pending() == 0 and s.coverage("acme") == (70, 70)


def test_inline_failure_keeps_serving(make):
    emb = Wrapped()
    s = make(emb)
    s.add("acme", docs(3))
    assert s.wait(10)
    emb.fail = True
    late = docs(2, start=3)
    s.add("acme", late)
    hits = s.search("acme", s.embed_query("the page keeps spinning after submit (case 0)"), 2)
    assert hits and hits[0][0] == 0  # what is indexed still answers
    assert s.last_error is not None and s.pending("acme") == 2
    emb.fail = False
    assert s.search("acme", s.embed_query(late[0][2]), 1)[0][0] == 3


def test_concurrent_adds_and_searches(make):
    s = make()
    errors = []

    def tenant_loop(tenant: str):
        try:
            for i in range(20):
                text = f"{tenant} incident {i}: the page keeps spinning"
                s.add(tenant, [(i, f"{tenant}-{i}", text)])
                assert s.search(tenant, s.embed_query(text), 1)[0][0] == i
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=tenant_loop, args=(t,)) for t in ("a", "b", "c")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert s.wait(10) and all(s.coverage(t) == (20, 20) for t in "abc")


def test_close_is_final(make):
    s = make()
    s.close()
    s.close()
    with pytest.raises(RuntimeError):
        s.add("acme", docs(1))
    assert np.asarray(s.embed_query("still works")).shape == (512,)


def test_readded_document_keeps_its_newest_text(make):
    s = make(cache=True)
    s.add("acme", [(0, "d0", "the export job fails with a timeout")])
    assert s.wait(10)
    s.add("acme", [(0, "d0", "password reset email never arrives"), (0, "d0", "the export job fails with a timeout")])
    s.add("acme", [(0, "d0", "我的猫喜欢在阳光下睡觉")])
    hits = s.search("acme", s.embed_query("我的猫喜欢在阳光下睡觉"), 1)
    assert hits[0][0] == 0 and hits[0][1] > 0.99 and s.coverage("acme") == (1, 1)


def test_precomputed_vectors_are_searchable_without_the_model(make):
    embedder = Wrapped()
    s = make(embedder)
    rows = np.eye(embedder.dim, dtype=np.float32)[:3] * 5.0  # not unit length: add_vectors normalises
    s.add_vectors("acme", np.array([0, 1, 2]), rows)
    hits = s.search("acme", np.eye(embedder.dim, dtype=np.float32)[1], 2)
    assert hits[0][0] == 1 and hits[0][1] == pytest.approx(1.0, abs=1e-3)
    assert embedder.texts == 0 and s.coverage("acme") == (3, 3)
    assert s.search("other", np.eye(embedder.dim, dtype=np.float32)[1], 2) == []


def test_a_following_index_takes_vectors_from_the_owners_cache_and_embeds_only_its_inline_backlog(make):
    owner_model, replica_model = Wrapped(), Wrapped()
    owner = make(owner_model, cache=True)
    replica = make(replica_model, cache=True, follow=True)
    owner.add("acme", docs(300))
    assert owner.wait(60)
    owner._flush_cache()  # what its background thread does when idle; closing would too
    replica.add("acme", docs(300))
    assert replica.wait(10) and replica.coverage("acme") == (300, 300)
    assert replica_model.texts == 0  # every vector came from the owner's cache
    # Documents the owner has not embedded yet wait for it (no model call in the background) ...
    replica.add("acme", docs(400, start=300))
    time.sleep(0.5)
    assert replica.pending("acme") == 400 and replica_model.texts == 0
    owner.add("acme", docs(400, start=300))
    assert owner.wait(60)
    owner._flush_cache()
    assert replica.wait(10) and replica.coverage("acme") == (700, 700) and replica_model.texts == 0
    # ... but a search embeds a small backlog inline, like the owner's: an agent reads its own writes.
    replica.add("acme", [(700, "doc-700", "the printer on floor three jams on duplex jobs")])
    query = replica.embed_query("printer jams on duplex")
    assert replica.search("acme", query, 1)[0][0] == 700 and replica_model.texts == 1


def test_a_following_index_needs_a_cache(tmp_path):
    with pytest.raises(ValueError, match="cache"):
        SemanticIndex(Wrapped(), None, follow=True)


def test_warm_loads_the_query_model_before_the_first_search(make):
    model = Wrapped()
    model.inner = UseEmbedder()  # a model of its own: the process's shared one may be loaded already
    index = make(model)
    assert not model.inner._model.loaded  # lazy: a server's first recall would load it
    index.warm()
    assert model.inner._model.loaded and model.queries == 1
