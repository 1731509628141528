"""The columnar candidate scoring (``recall.raw_scores``) gives bit-identical scores to the
per-candidate composition of ``recall.channels`` / ``recall.scoring`` it replaced (the
functions the explanation is built from), for every preset and arbitrary candidates."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import beliefs as belief_layers
from hindbrain.recall import channels
from hindbrain.recall.asking import asking_penalty
from hindbrain.recall.brevity import brevity_penalty
from hindbrain.recall.index import Belief, Counters, Doc
from hindbrain.recall.query import Query
from hindbrain.recall.raw_scores import raw_scores
from hindbrain.recall.scoring import PRESETS, combined

NOW = 1_800_000_000_000_000
DAY = 86_400 * 1_000_000


def reference(doc: Doc, counters: dict, query: Query, w, lexical: float, semantic: float, graph: float,
              briefed: list) -> tuple[dict, float, float, float]:
    """The engine's per-candidate scoring before ``raw_scores`` (``RecallEngine._raw``), verbatim."""
    c = counters.get(doc.id)
    (success, failure), contradictions = (c.track, c.contradiction) if c else ((0, 0), 0)
    scene = doc.scope.get("scene") or doc.scope.get("task_type")
    raw = {
        "lexical": lexical,
        "semantic": semantic,
        "graph": graph,
        "scenario": channels.scenario_score(query.scene, scene, query.trigger, {doc.kind, doc.layer,
                                                                                doc.event_kind or ""}),
        "utility": channels.utility_score(success, failure),
        "freshness": channels.freshness_score(doc.fresh_since_us, query.now_us,
                                              channels.volatility_of(doc.layer, doc.scope)),
    }
    total = combined(raw, w)
    scope_penalty, match = channels.scope_fit(doc.scope, query.scope)
    penalty = channels.contradiction_amount(doc.status, contradictions) + scope_penalty
    if doc.provenance:
        penalty += channels.SINGLE_SOURCE_PENALTY
    if doc.asks and w.method == "fused":
        penalty += asking_penalty(doc.asks, query.associative)
    if doc.event_kind == "message" and w.method == "fused":
        penalty += brevity_penalty(doc.tokens, query.associative)
    bias = w.belief_bias * belief_layers.bias(doc, briefed)[0] if briefed else 0.0
    score = total * (1.0 - min(1.0, penalty)) if w.method == "fused" else total - penalty
    return raw, score + bias, penalty, match


unit = st.floats(0.0, 1.0, allow_nan=False)
scopes = st.dictionaries(st.sampled_from(["env", "scene", "task_type", "volatility", "user"]),
                         st.sampled_from(["prod", "test", "deploy", "high", "red_line", "lin"]), max_size=3)


@st.composite
def candidate(draw, n: int):
    kind = draw(st.sampled_from(["event", "fragment"]))
    doc = Doc(id=f"d{n}", kind=kind, layer=draw(st.sampled_from(["episodic", "experience", "knowledge"])),
              text=draw(st.sampled_from(["export job timeout", "retry the export", "登录失败 重试"])),
              event_ids=[f"e{n}", *draw(st.lists(st.sampled_from(["e1", "e2"]), max_size=1))], source="perceived",
              confidence=0.9, scope=draw(scopes), ts_us=NOW - draw(st.integers(0, 400)) * DAY,
              tokens=draw(st.integers(0, 40)),
              event_kind=draw(st.sampled_from([None, "message", "anomaly", "action"])) if kind == "event" else None,
              status=draw(st.sampled_from(["active", "reviewing", "verified"])),
              last_used_us=draw(st.sampled_from([0, NOW - 3 * DAY])),
              provenance=draw(st.sampled_from([None, {"learned_by": "a", "agents": 1, "verified": 1}])),
              asks=draw(st.sampled_from([0.0, 0.25, 1.0, 1 / 3])))
    counters = draw(st.one_of(st.none(), st.builds(Counters, *[st.integers(0, 6)] * 6)))
    return doc, counters, draw(unit), draw(unit), draw(unit)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12).flatmap(lambda n: st.tuples(*[candidate(i) for i in range(n)])),
       st.sampled_from(sorted(PRESETS)), st.sampled_from([0.0, 0.3, 1.0]),
       st.sampled_from([None, "anomaly", "task_start"]), st.sampled_from([None, "deploy"]), scopes,
       st.booleans())
def test_columnar_scores_are_the_per_candidate_scores(cands, name, associative, trigger, scene, scope, briefing):
    query = Query(tenant="t", text="q", semantic_text="q", terms=["q"], exact=frozenset(), trigger=trigger,
                  scope=scope, scene=scene, user=None, layers=None, budget_tokens=500, k=None, now_us=NOW,
                  associative=associative)
    w = PRESETS[name].for_query(associative)
    briefed = [Belief("b1", "the export job", 0.8, 3, "active", {}, ["e1"], NOW, cues=frozenset({"export", "job"}))] \
        if briefing else []
    docs = [c[0] for c in cands]
    counters = {c[0].id: c[1] for c in cands if c[1] is not None}
    lexical, semantic, graph = ([c[i] for c in cands] for i in (2, 3, 4))
    got = raw_scores(docs, counters, query, w, lexical, semantic, graph, briefed)
    for n, doc in enumerate(docs):
        raw, score, penalty, match = reference(doc, counters, query, w, lexical[n], semantic[n], graph[n], briefed)
        assert got.channels[n] == raw
        assert (got.scores[n], got.penalties[n], got.matches[n]) == (score, penalty, match)  # exactly, not approx


def test_no_candidates():
    query = Query(tenant="t", text="q", semantic_text="q", terms=[], exact=frozenset(), trigger=None, scope={},
                  scene=None, user=None, layers=None, budget_tokens=500, k=None, now_us=NOW)
    assert raw_scores([], {}, query, PRESETS["fused"].text, [], [], [], []) == ([], [], [], [])
