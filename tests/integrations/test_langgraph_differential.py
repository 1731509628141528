"""``HindbrainStore`` against LangGraph's own ``InMemoryStore``: random sequences of put / get /
delete / search / list_namespaces / batch run on both (a hypothesis state machine), and every
answer ``BaseStore`` defines is compared: values, keys, namespaces, the order of listings with
limit and offset, filters, ``created_at``/``updated_at``, a batch's reads seeing the state before
its writes, and for a query search the items that clearly match (relevance with a floor).

The reference is normalized in one documented way (docs/langgraph.md, "Differences from
InMemoryStore"): InMemoryStore keeps a namespace that a ``get`` touched or that its deletes
emptied; hindbrain lists only namespaces holding an item, so the reference's empty namespaces
are dropped after each step. Bounded: a few seconds (``max_examples``, ``stateful_step_count``).
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule
from langgraph.store.base import GetOp, ListNamespacesOp, MatchCondition, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from hindbrain import Brain
from hindbrain.integrations.langgraph import HindbrainStore

WORDS = ("french", "german", "answers", "short", "coffee", "weather")
SUFFIXES = (("bot",), ("bot", "bob"), ("bot", "ann"), ("crm",), ("bot", "bob", "profile"))
KEYS = ("k1", "k2", "k3")
_tenants = itertools.count()


def bag_of_words(texts: list[str]) -> list[list[float]]:
    """The reference's embedding: one dimension per word of ``WORDS`` (its cosine ranks the items
    sharing the query's word first)."""
    return [[float(t.lower().count(w)) + 1e-3 for w in WORDS] for t in texts]


texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
values = st.one_of(texts.map(lambda t: {"text": t}),
                   st.builds(lambda n, t: {"n": n, "tag": t}, st.integers(0, 3), st.sampled_from(WORDS)))
filters = st.one_of(st.none(), st.builds(lambda n: {"n": n}, st.integers(0, 3)),
                    st.builds(lambda n: {"n": {"$gte": n}}, st.integers(0, 3)))


@pytest.fixture(scope="module")
def brain(tmp_path_factory):
    with Brain.open(tmp_path_factory.mktemp("differential") / "brain", embedder="none") as b:
        yield b


def plain(item) -> tuple | None:
    """What the contract defines of an item (timestamps are compared apart)."""
    return None if item is None else (tuple(item.namespace), item.key, item.value)


def test_hindbrain_store_answers_as_langgraphs_in_memory_store(brain):
    class Differential(RuleBasedStateMachine):
        @initialize()
        def fresh(self):
            self.tenant = f"diff-{next(_tenants)}"
            self.ours = HindbrainStore(brain)
            self.ref = InMemoryStore(index={"dims": len(WORDS), "embed": bag_of_words})
            self.unindexed: set[tuple] = set()  # items whose live version was put with index=False

        def ns(self, suffix: tuple[str, ...]) -> tuple[str, ...]:
            return (self.tenant, *suffix)

        def settle(self):
            """The reference's one normalization (module docstring)."""
            for namespace in [n for n, items in self.ref._data.items() if not items]:
                del self.ref._data[namespace]

        def both(self, ops: list) -> tuple[list, list]:
            ours, ref = self.ours.batch(ops), self.ref.batch(ops)
            self.settle()
            for op in ops:
                if isinstance(op, PutOp):
                    where = (tuple(op.namespace), op.key)
                    (self.unindexed.add if op.index is False else self.unindexed.discard)(where)
            return ours, ref

        def check(self, op, ours, ref):
            if isinstance(op, GetOp):
                assert plain(ours) == plain(ref)
                if ours is not None:  # an overwrite is a new item: created when last put, as the reference's
                    assert ours.created_at == ours.updated_at
                    assert abs((ref.updated_at - ref.created_at).total_seconds()) < 0.01
            elif isinstance(op, SearchOp) and op.query:
                self.check_query(op, ours, ref)
            elif isinstance(op, SearchOp):
                assert [plain(i) for i in ours] == [plain(i) for i in ref]
            elif isinstance(op, ListNamespacesOp):
                assert ours == ref
            else:
                assert ours is None and ref is None

        def check_query(self, op, ours, ref):
            """Relevance with a floor: every answer shares the query's word and was indexed; the
            items of the reference that do (its best-ranked) are exactly ours, best first."""
            matching = [plain(i) for i in ref if op.query in str(i.value)
                        and (tuple(i.namespace), i.key) not in self.unindexed]
            assert all(op.query in str(i.value) for i in ours)
            assert all((tuple(i.namespace), i.key) not in self.unindexed for i in ours)
            assert sorted(map(plain, ours)) == sorted(matching)
            assert [i.score for i in ours] == sorted((i.score for i in ours), reverse=True)

        def run(self, ops: list):
            if any(isinstance(op, SearchOp) and op.filter and "$" in str(op.filter) for op in ops):
                ours = self.ours.batch(ops)
                try:
                    ref = self.ref.batch(ops)
                except TypeError:  # the reference raises on $gte over an item without the field; ours leaves it out
                    assert all(isinstance(i.value.get("n"), int) for i in ours[0])
                    return
                for op, a, b in zip(ops, ours, ref, strict=True):
                    self.check(op, a, b)
                return
            ours, ref = self.both(ops)
            for op, a, b in zip(ops, ours, ref, strict=True):
                self.check(op, a, b)

        def put_op(self, suffix, key, value, unindexed):
            return PutOp(self.ns(suffix), key, value, index=False if unindexed else None)

        @rule(suffix=st.sampled_from(SUFFIXES), key=st.sampled_from(KEYS), value=values, unindexed=st.booleans())
        def put(self, suffix, key, value, unindexed):
            self.run([self.put_op(suffix, key, value, unindexed)])

        @rule(suffix=st.sampled_from(SUFFIXES), key=st.sampled_from(KEYS))
        def delete(self, suffix, key):
            self.run([PutOp(self.ns(suffix), key, None)])

        @rule(suffix=st.sampled_from(SUFFIXES), key=st.sampled_from(KEYS))
        def get(self, suffix, key):
            self.run([GetOp(self.ns(suffix), key)])
            self.settle()  # the reference's get made the namespace if it had none

        @rule(depth=st.integers(0, 3), filter_=filters, limit=st.integers(1, 4), offset=st.integers(0, 3))
        def listing(self, depth, filter_, limit, offset):
            prefix = self.ns(("bot", "bob", "profile")[:depth])
            self.run([SearchOp(prefix, filter_, limit, offset)])

        @rule(depth=st.integers(0, 2), word=st.sampled_from(WORDS))
        def query(self, depth, word):
            # limit 20: more than the items a run puts, so the floor decides what comes back
            self.run([SearchOp(self.ns(("bot", "bob")[:depth]), None, 20, 0, query=word)])

        @rule(max_depth=st.one_of(st.none(), st.integers(1, 3)), suffix=st.sampled_from(((), ("bot",), ("crm",))),
              limit=st.integers(1, 4), offset=st.integers(0, 2))
        def namespaces(self, max_depth, suffix, limit, offset):
            self.run([ListNamespacesOp((MatchCondition("prefix", self.ns(suffix)),), max_depth, limit, offset)])

        @rule(data=st.data())
        def batch(self, data):
            """A put and reads of the same keys in one batch: the reads see the state before it."""
            suffix, key = data.draw(st.sampled_from(SUFFIXES)), data.draw(st.sampled_from(KEYS))
            put = self.put_op(suffix, key, data.draw(values), data.draw(st.booleans()))
            delete = PutOp(self.ns(suffix), data.draw(st.sampled_from(KEYS)), None)
            reads = [GetOp(self.ns(suffix), key), SearchOp(self.ns(suffix[:1]), None, 10, 0)]
            ops = data.draw(st.permutations([put, delete, *reads]))
            self.run(ops)
            self.settle()

    Differential.TestCase.settings = settings(max_examples=12, stateful_step_count=10, deadline=None,
                                              suppress_health_check=list(HealthCheck))
    Differential.TestCase().runTest()


def test_a_namespace_a_batch_empties_and_refills_keeps_its_place_in_listings(brain):
    """Found by the state machine above (a random run): one batch deletes a namespace's only item and puts
    another key there. The reference empties the namespace and refills it in place; hindbrain, which drops
    a namespace with its last item, wrote the delete first and listed the namespace last."""
    tenant = f"diff-{next(_tenants)}"
    ours, ref = HindbrainStore(brain), InMemoryStore()
    for store in (ours, ref):
        store.put((tenant, "bot", "bob"), "k1", {"text": "first"})
        store.put((tenant, "bot"), "k1", {"text": "second"})
        store.batch([PutOp((tenant, "bot", "bob"), "k1", None), PutOp((tenant, "bot", "bob"), "k2", {"text": "third"})])
    listed = [[plain(i) for i in store.search((tenant, "bot"))] for store in (ours, ref)]
    assert listed[0] == listed[1] == [((tenant, "bot", "bob"), "k2", {"text": "third"}),
                                      ((tenant, "bot"), "k1", {"text": "second"})]
