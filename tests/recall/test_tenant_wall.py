"""The tenant wall: a recall never returns, cuts, records or explains another tenant's data.

A randomized property test (hypothesis) fills one brain with 2–4 tenants whose memories
deliberately overlap: the same English and Chinese vocabulary, byte-identical texts (one
tenant may mirror another's memories exactly), the same entities ("IAM") and error codes
("403"). Random recalls (free text and ``situation`` cues, layer subsets, scopes, budgets,
``k``) must then only ever touch the querying tenant: returned items and their evidence,
the gate's cuts, the recall and injection records (log and views), and ``explain``.

Only the public API is used (``Brain.open``, ``perceive``, ``perceive_many``, ``learn``,
``recall``, ``explain``, ``sql``; ``believe`` and recall's ``scene``/``user`` when the brain
has them, so the belief briefing is covered too), so the property holds whatever channels
the recall engine grows. Opening a brain costs a second or two, so each test class (lexical
only, then with the semantic channel) shares one; every example namespaces its tenants with
a fresh prefix, so examples never see each other.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hindbrain import Brain
from hindbrain.learning.authority import trust_raised

LAYERS = ("episodic", "experience", "knowledge")
TRIGGERS = ("task_start", "anomaly", "no_progress", "no_data", "unresolved_entity", "user_reference")
SITUATION_FIELDS = ("system", "identity", "action", "expected", "actual")
# Tenant names that differ only by case, a suffix, a trailing space or a separator: a wall
# keyed on a prefix, a normalised or a trimmed name would leak between them.
# (a trailing space is refused at the edge since round twenty-eight: "acme " and "acme" printed alike)
TENANT_NAMES = ("acme", "acme2", "ACME", "acme x", "acme-corp", "acme_corp", "globex", "租户甲", "租户乙")

WORDS = (
    "submit", "nothing", "happened", "permission", "denied", "admin", "account", "IAM", "iam", "403",
    "HTTP 403", "error-403", "E403", "login", "timeout", "export", "billing", "retry", "token", "expired",
    "change", "request", "prod", "staging", "VPN",
    "提交", "按钮", "没有反应", "权限不足", "管理员账号", "页面一直转圈",
    "白屏", "会话过期", "重新登录", "导出", "计费", "超时",
)
SHARED_TEXTS = (  # whole texts several tenants write byte for byte
    "clicked submit, nothing happened",
    "IAM returned HTTP 403 permission denied",
    "提交按钮没有反应",
    "权限不足，请使用管理员账号",
    "error-403 on IAM change request 权限不足",
    "billing export timed out, retry later",
    "会话过期，请重新登录 (403)",
)
ENTITIES = ("IAM", "403", "billing", "VPN", "change request", "admin account", "权限", "计费系统")
SYSTEMS = ("IAM", "billing", "VPN gateway", "计费系统", "权限中心")
SCOPE_KEYS = ("env", "region")
SCOPE_VALUES = ("prod", "test", "eu", "cn")
ID = re.compile(r"\b[a-z]{2,3}_[0-9a-f]{32}\b")  # a record id: type prefix + 128 random bits

texts = st.one_of(
    st.sampled_from(SHARED_TEXTS),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map("".join),  # Chinese style: no spaces
)
scopes = st.dictionaries(st.sampled_from(SCOPE_KEYS), st.sampled_from(SCOPE_VALUES), max_size=2)
entity_lists = st.lists(st.sampled_from(ENTITIES), max_size=3, unique=True)

events = st.fixed_dictionaries(
    {"text": texts, "kind": st.sampled_from(("message", "observation", "action", "anomaly", "feedback", "outcome"))},
    optional={
        "entities": entity_lists, "scope": scopes, "system": st.sampled_from(SYSTEMS), "identity": texts,
        "action": texts, "expected": texts, "actual": texts, "agent": st.sampled_from(("agent-1", "agent-7")),
        "task": st.sampled_from(("t-1", "t-42")), "session": st.sampled_from(("s-1", "s-2")),
    },
)
units = st.fixed_dictionaries(
    {"condition": texts, "action": texts, "supports": st.lists(st.integers(0, 99), max_size=3, unique=True)},
    optional={
        "reason": texts, "evidence": texts, "scope": scopes, "entities": entity_lists,
        "source": st.sampled_from(("lived", "read")), "seed": st.booleans(),
        "confidence": st.floats(0.0, 1.0), "agent": st.sampled_from(("agent-1", "agent-7")),
    },
)
SCENES = ("iam-change", "billing-export", "权限变更")
USERS = ("alice", "bob", "张三")
beliefs = st.fixed_dictionaries(  # briefed globally (confident, well supported), per scene or per user
    {"text": texts, "supports": st.lists(st.integers(0, 99), max_size=3, unique=True),
     "scope": st.one_of(st.just({}), st.fixed_dictionaries({"scene": st.sampled_from(SCENES)}),
                        st.fixed_dictionaries({"user": st.sampled_from(USERS)}))},
    optional={"confidence": st.sampled_from((0.95, 0.5)), "support": st.sampled_from((60, 3)),
              "status": st.sampled_from(("active", "active", "reviewing"))},
)
memories = st.tuples(st.lists(events, min_size=1, max_size=6), st.lists(units, max_size=4),
                     st.lists(beliefs, max_size=2))


@st.composite
def queries(draw, n_tenants: int) -> dict:
    """One recall: who asks (``n_tenants`` is a tenant with no memories at all) and how."""
    q: dict = {"asker": draw(st.one_of(st.integers(0, n_tenants - 1), st.integers(0, n_tenants)))}
    if draw(st.booleans()):
        q["query"] = draw(texts)
    situation = draw(st.dictionaries(st.sampled_from(SITUATION_FIELDS), st.one_of(st.sampled_from(SYSTEMS), texts),
                                     max_size=3))
    if situation or "query" not in q:
        q["situation"] = situation or {"system": draw(st.sampled_from(SYSTEMS))}
    layers = draw(st.one_of(st.none(), st.lists(st.sampled_from(LAYERS), max_size=3, unique=True)))
    if layers is not None:
        q["layers"] = layers
    q["scope"] = draw(scopes)
    q["budget_tokens"] = draw(st.one_of(st.integers(100, 4000), st.integers(100, 4000), st.integers(1, 100)))
    q["k"] = draw(st.one_of(st.none(), st.integers(1, 12)))
    q["trigger"] = draw(st.one_of(st.none(), st.sampled_from(TRIGGERS)))
    q["scene"] = draw(st.one_of(st.none(), st.sampled_from(SCENES)))  # dropped if recall does not take them
    q["user"] = draw(st.one_of(st.none(), st.sampled_from(USERS)))
    return q


@st.composite
def worlds(draw, max_queries: int = 5) -> dict:
    n = draw(st.integers(2, 4))
    names = draw(st.lists(st.sampled_from(TENANT_NAMES), min_size=n, max_size=n, unique=True))
    held = draw(st.lists(memories, min_size=n, max_size=n))
    if draw(st.booleans()):  # the second tenant also holds a byte-identical copy of the first's memories
        held[1] = tuple(mine + theirs for mine, theirs in zip(held[0], held[1], strict=True))
    return {"names": names, "memories": held, "bulk": draw(st.booleans()),
            "queries": draw(st.lists(queries(n), min_size=2, max_size=max_queries))}


class Ledger:
    """Who owns which id, from what ``perceive``/``learn``/``recall`` returned."""

    def __init__(self):
        self.owner: dict[str, str] = {}

    def own(self, tenant: str, ids) -> list[str]:
        ids = [ids] if isinstance(ids, str) else list(ids)
        for i in ids:
            assert self.owner.setdefault(i, tenant) == tenant, f"id {i} returned to two tenants"
        return ids

    def check(self, tenant: str, item_id: str, what: str) -> None:
        owner = self.owner.get(item_id)
        assert owner is not None, f"{what} {item_id!r} was never written by anyone"
        assert owner == tenant, f"{what} {item_id} of tenant {owner!r} reached tenant {tenant!r}"

    def check_text(self, tenant: str, record, what: str) -> None:
        """Every known id mentioned anywhere in ``record`` (nested, or inside JSON strings) is the tenant's."""
        for item_id in ID.findall(json.dumps(record, ensure_ascii=False, default=repr)):
            if item_id in self.owner:
                self.check(tenant, item_id, what)


class Wall:
    """The brain under test, and what its recall accepts beyond the foundation API."""

    def __init__(self, brain: Brain):
        self.brain = brain
        self.believes = callable(getattr(brain, "believe", None))  # beliefs, hence briefings
        try:  # scene / user (briefing layers) are newer recall keywords: probe them once
            brain.recall(tenant=f"probe-{uuid.uuid4().hex[:8]}", query="probe", scene="s", user="u")
            self.scene_and_user = True
        except ValueError:
            self.scene_and_user = False

    def recall(self, tenant: str, q: dict):
        fields = {k: v for k, v in q.items() if k != "asker" and (self.scene_and_user or k not in ("scene", "user"))}
        return self.brain.recall(tenant=tenant, **fields)


@pytest.fixture(scope="class")
def wall(request, tmp_path_factory):
    """One brain per test class (examples use tenants of their own), always closed before
    the next class opens its own: chDB serves one folder per process at a time."""
    embedder = request.cls.embedder
    try:
        b = Brain.open(tmp_path_factory.mktemp(f"tenant-wall-{embedder}"), embedder=embedder)
    except (ValueError, ImportError) as exc:
        pytest.skip(f"embedder {embedder!r} unavailable: {exc}")
    try:
        if embedder != "none":  # the model loads lazily: make it fail here, as a skip, if it cannot
            probe = f"probe-{uuid.uuid4().hex[:8]}"
            b.perceive(tenant=probe, text="probe")
            b.recall(tenant=probe, query="probe")
    except ImportError as exc:
        b.close()
        pytest.skip(f"embedder {embedder!r} unavailable: {exc}")
    try:
        yield Wall(b)
    finally:
        b.close()


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    """Ids are random, so one ledger serves every brain of the module."""
    return Ledger()


def write(wall: Wall, ledger: Ledger, tenants: list[str], held: list[tuple], bulk: bool) -> None:
    """Events round-robin across tenants (so their records interleave in the log), then units
    and beliefs resting on events of their own tenant."""
    brain = wall.brain
    events_of: dict[str, list[str]] = {t: [] for t in tenants}
    for n in range(max(len(evs) for evs, *_ in held)):
        for tenant, (evs, *_) in zip(tenants, held, strict=True):
            if n >= len(evs):
                continue
            if bulk and n == 0:  # a tenant's events in one perceive_many batch
                events_of[tenant] += ledger.own(tenant, brain.perceive_many([{**e, "tenant": tenant} for e in evs]))
            elif not bulk:
                events_of[tenant] += ledger.own(tenant, brain.perceive(tenant=tenant, **evs[n]))

    def rest_on_own_events(tenant: str, fields: dict) -> dict:
        own = events_of[tenant]
        supports = dict.fromkeys(own[i % len(own)] for i in fields.pop("supports"))
        return {**fields, "event_ids": list(supports)}

    for tenant, (_, units_, beliefs_) in zip(tenants, held, strict=True):
        for unit in units_:
            fields = rest_on_own_events(tenant, dict(unit))
            if fields.get("source") == "read":
                fields["citation"] = "IAM admin guide §4.3 (HTTP 403)"
            if trust_raised(fields.get("seed", False), fields.get("confidence"), fields.get("source", "lived")):
                fields.pop("agent", None)  # a seed or a raised confidence is an operator's, never an agent's
            ledger.own(tenant, brain.learn(tenant=tenant, **fields))
        for belief in beliefs_ if wall.believes else ():
            fields = {"confidence": 0.95, "support": 60, **rest_on_own_events(tenant, dict(belief))}
            ledger.own(tenant, brain.believe(tenant=tenant, **fields))


def recalled_items(pack) -> list:
    """What the pack hands the agent: its items and, once the engine has one, its briefing."""
    return [*pack.items, *(getattr(pack, "briefing", None) or [])]


def assert_pack_walled(ledger: Ledger, tenant: str, pack) -> set[str]:
    """Items, their evidence and the gate's cuts are the tenant's; returns every id the pack names."""
    named = set()
    for item in recalled_items(pack):
        ledger.check(tenant, item.id, "recalled item")
        for event_id in item.event_ids:
            ledger.check(tenant, event_id, f"evidence of {item.id}")
        named |= {item.id, *item.event_ids}
        ledger.check_text(tenant, item.why, f"id in the why of {item.id}")  # graph seeds, belief bias ...
    for cut in pack.cut:
        ledger.check(tenant, cut["id"], "cut candidate")
        ledger.check_text(tenant, cut, f"id in the cut of {cut['id']}")
        named.add(cut["id"])
    return named


def assert_records_walled(brain: Brain, ledger: Ledger, asked: list[tuple[str, object]]) -> None:
    """The recall and injection rows in the views name only the asking tenant's items."""
    tenant_of = {pack.recall_id: tenant for tenant, pack in asked}
    rows = brain.sql(
        "SELECT 'recall' AS record, recall_id, tenant, candidate_ids AS item_ids FROM recalls FINAL "
        "WHERE recall_id IN {ids:Array(String)} UNION ALL "
        "SELECT 'injection' AS record, recall_id, tenant, item_ids FROM injections FINAL "
        "WHERE recall_id IN {ids:Array(String)}", {"ids": list(tenant_of)})
    recorded = sorted(r["recall_id"] for r in rows if r["record"] == "recall")
    assert recorded == sorted(tenant_of), "every recall is recorded, once"
    for row in rows:
        tenant = tenant_of[row["recall_id"]]
        assert row["tenant"] == tenant, row
        for item_id in row["item_ids"]:
            ledger.check(tenant, item_id, f"item in the {row['record']} record of {row['recall_id']}")


def assert_lineage_walled(brain: Brain, ledger: Ledger, named: set[str]) -> None:
    """Everything the views say about an item (its own row, who recalled or injected it,
    what cites it) is its owner's: a recall of another tenant that touched it would show."""
    if not named:
        return
    rows = brain.sql("SELECT subject_id, groupUniqArray(tenant) AS tenants FROM lineage "
                     "WHERE subject_id IN {ids:Array(String)} GROUP BY subject_id", {"ids": sorted(named)})
    for row in rows:
        assert row["tenants"] == [ledger.owner[row["subject_id"]]], row


def assert_explained_walled(brain: Brain, ledger: Ledger, tenant: str, subject_id: str) -> None:
    chain = brain.explain(subject_id)
    assert chain, f"explain({subject_id}) found nothing"
    for entry in chain:
        record = entry["record"]
        assert record["envelope"]["tenant"] == tenant, (
            f"explain({subject_id}) for {tenant!r} shows a {entry['record_type']} record of "
            f"{record['envelope']['tenant']!r}")
        ledger.check_text(tenant, record, f"id in the {entry['record_type']} record behind {subject_id}")


EXPLAINED_PER_EXAMPLE = 1  # explain reads the lineage view and the log (~30 ms): sample, for the 30 s budget
PROPERTY = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def check_world(wall: Wall, ledger: Ledger, world: dict) -> None:
    prefix = uuid.uuid4().hex[:8]
    tenants = [f"{prefix}:{name}" for name in world["names"]]
    stranger = f"{prefix}:stranger"  # asks, but never wrote anything
    write(wall, ledger, tenants, world["memories"], world["bulk"])

    asked, named, to_explain = [], set(), {}
    for q in world["queries"]:
        tenant = ([*tenants, stranger])[q["asker"]]
        pack = wall.recall(tenant, q)
        ledger.own(tenant, pack.recall_id)
        if tenant == stranger:
            assert not recalled_items(pack) and not pack.cut, "a tenant with no memories recalled something"
        named |= assert_pack_walled(ledger, tenant, pack)
        asked.append((tenant, pack))
        # fragments first: their explanation also pulls in the events they rest on
        for item in sorted(recalled_items(pack), key=lambda i: i.kind != "fragment"):
            to_explain.setdefault(item.id, tenant)

    brain = wall.brain
    assert_records_walled(brain, ledger, asked)
    assert_lineage_walled(brain, ledger, named)
    tenant, pack = asked[0]
    assert_explained_walled(brain, ledger, tenant, pack.recall_id)  # the recall + injection, from the log
    for item_id, tenant in list(to_explain.items())[:EXPLAINED_PER_EXAMPLE]:
        assert_explained_walled(brain, ledger, tenant, item_id)


def check_byte_identical_tenants(wall: Wall, ledger: Ledger, names: tuple[str, str] = ("acme", "globex")) -> None:
    brain, prefix = wall.brain, uuid.uuid4().hex[:8]
    acme, globex = (f"{prefix}:{name}" for name in names)
    written: dict[str, set[str]] = {}
    for tenant in (acme, globex):  # the same memories, byte for byte; only the ids differ
        anomaly = brain.perceive(
            tenant=tenant, agent="agent-7", kind="anomaly", text="clicked submit, nothing happened (HTTP 403)",
            system="IAM", identity="normal account", action="submit change", expected="success message",
            actual="no response", entities=["IAM", "403"], scope={"env": "prod"})
        message = brain.perceive(tenant=tenant, kind="message", text="提交按钮没有反应，权限不足",
                                 entities=["IAM"], scope={"env": "prod"})
        unit = brain.learn(
            tenant=tenant, condition="IAM submit does nothing or returns 403",
            action="switch to the admin account 管理员账号", reason="permission operations need admin",
            evidence="submit succeeded as admin", scope={"env": "prod"}, event_ids=[anomaly, message],
            entities=["IAM"])
        written[tenant] = set(ledger.own(tenant, [anomaly, message, unit]))
        if wall.believes:
            written[tenant] |= set(ledger.own(tenant, brain.believe(
                tenant=tenant, text="IAM changes need the admin account", confidence=0.95, support=60,
                scope={"scene": "iam-change"}, event_ids=[anomaly])))
    assert not written[acme] & written[globex]

    cue = {"query": "IAM submit 403 权限不足 admin", "budget_tokens": 2000, "scope": {"env": "prod"},
           "situation": {"system": "IAM", "identity": "normal account", "actual": "no response"},
           "scene": "iam-change"}
    seen = {}
    for tenant in (acme, globex):
        pack = wall.recall(tenant, cue)
        ledger.own(tenant, pack.recall_id)
        ids = {item.id for item in recalled_items(pack)}
        assert ids and ids <= written[tenant], f"{tenant} recalled {ids - written[tenant]} of the other tenant"
        assert {e for item in recalled_items(pack) for e in item.event_ids} <= written[tenant]
        assert {c["id"] for c in pack.cut} <= written[tenant]
        assert_pack_walled(ledger, tenant, pack)
        for item_id in ids:
            assert_explained_walled(brain, ledger, tenant, item_id)
        assert_explained_walled(brain, ledger, tenant, pack.recall_id)
        seen[tenant] = pack
    assert_records_walled(brain, ledger, list(seen.items()))
    assert_lineage_walled(brain, ledger, written[acme] | written[globex])
    # symmetric memories, symmetric answers: the same texts come back, each from its own tenant
    assert sorted(i.text for i in recalled_items(seen[acme])) == sorted(i.text for i in recalled_items(seen[globex]))


class TestLexicalRecall:
    """Lexical channels only (words, exact cues, graph, beliefs): the bulk of the examples."""

    embedder = "none"

    # 20 examples, not 40: derandomized, which worlds are drawn depends on max_examples, and of
    # three wall mutations (the index keyed on the lower-cased, the stripped or a 4-letter prefix
    # of the name) 40 examples caught only the prefix, 20 catch all three; the pairs below
    # catch all three whatever is drawn.
    @settings(max_examples=20, **PROPERTY)
    @given(world=worlds())
    def test_recall_never_crosses_the_tenant_wall(self, wall, ledger, world):
        check_world(wall, ledger, world)

    def test_byte_identical_tenants_each_see_only_their_own(self, wall, ledger):
        check_byte_identical_tenants(wall, ledger)

    @pytest.mark.parametrize("names", [("acme", "ACME"), ("acme", "acme x"), ("acme", "acme2"),
                                       ("acme-corp", "acme_corp"), ("租户甲", "租户乙")])
    def test_tenants_whose_names_differ_by_case_space_or_suffix_see_only_their_own(self, wall, ledger, names):
        """A wall keyed on a normalised, trimmed or prefixed name would merge these pairs."""
        check_byte_identical_tenants(wall, ledger, names)


class TestSemanticRecall:
    """The same wall with the semantic channel on (embeddings find what shares no word)."""

    embedder = "use"

    @settings(max_examples=8, **PROPERTY)
    @given(world=worlds(max_queries=3))  # a query embedding costs ~0.1 s here: fewer recalls per world
    def test_recall_never_crosses_the_tenant_wall(self, wall, ledger, world):
        check_world(wall, ledger, world)

    def test_byte_identical_tenants_each_see_only_their_own(self, wall, ledger):
        check_byte_identical_tenants(wall, ledger)
