"""The columnar candidate scoring (``recall.raw_scores``, one C pass: ``_scan.raw_columns``) gives
bit-identical scores to the per-candidate composition of ``recall.channels`` / ``recall.scoring``
(the functions the explanation is built from), and to the numpy columns the C pass replaced
(``numpy_raw_scores``, kept here as its oracle), for every preset and arbitrary candidates."""

from __future__ import annotations

import math
from collections import UserDict

import numpy as np
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import beliefs as belief_layers
from hindbrain.recall import channels
from hindbrain.recall.asking import ASKING_PENALTY, asking_penalty
from hindbrain.recall.brevity import BREVITY_PENALTY, BREVITY_TOKENS, brevity_penalty
from hindbrain.recall.documents import Belief, Counters, Doc
from hindbrain.recall.query import Query
from hindbrain.recall.raw_scores import RawScores, raw_scores
from hindbrain.recall.scoring import PRESETS, Weights, combined

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


def numpy_raw_scores(docs: list, counters: dict, query, w, lexical: list[float], semantic: list[float],
                     graph: list[float], briefed: list) -> RawScores:
    """``raw_scores`` as numpy columns and a Python pass over the documents (c022a2a … 968d6eb), verbatim:
    the oracle of the C pass."""
    n = len(docs)
    if n == 0:
        return RawScores([], [], [], [])
    fused = w.method == "fused"
    scene, trigger, now_us, recall_scope = query.scene, query.trigger, query.now_us, query.scope
    prefers = channels.TRIGGER_PREFERS.get(trigger, ()) if trigger else ()
    facts = _document_facts(docs, counters, scene, prefers, now_us)
    scenario, success, failure, fresh, contradictions, reviewing, single = facts
    if recall_scope:
        scope_penalty, match = map(list, zip(*(channels.scope_fit(doc.scope, recall_scope) for doc in docs),
                                             strict=True))
    else:
        scope_penalty, match = [0.0] * n, [1.0] * n
    if fused:
        asks = [doc.asks for doc in docs]
        brief_tokens = [doc.tokens if doc.event_kind == "message" else BREVITY_TOKENS for doc in docs]
    else:
        asks, brief_tokens = [0.0] * n, [BREVITY_TOKENS] * n
    lexical_, semantic_, graph_ = (np.asarray(v, dtype=np.float64) for v in (lexical, semantic, graph))
    scenario_, fresh_ = np.asarray(scenario), np.asarray(fresh)
    success_, failure_ = np.asarray(success, dtype=np.float64), np.asarray(failure, dtype=np.float64)
    utility = (success_ + 1) / (success_ + failure_ + 2)
    relevance = (w.lexical * lexical_ + w.semantic * semantic_ + w.graph * graph_
                 + w.scenario * scenario_ + w.freshness * fresh_)
    total = relevance * (1.0 + w.utility * (2.0 * utility - 1.0)) if fused else relevance + w.utility * utility
    contradiction = np.minimum(channels.CONTRADICTION_CAP, channels.CONTRADICTION_PENALTY
                               * np.asarray(contradictions, dtype=np.float64))
    contradiction = contradiction + np.where(reviewing, channels.REVIEWING_PENALTY, 0.0)
    penalty = contradiction + np.asarray(scope_penalty, dtype=np.float64)
    penalty = penalty + np.where(single, channels.SINGLE_SOURCE_PENALTY, 0.0)
    if fused:
        unasked = max(0.0, 1.0 - query.associative)
        asks_ = np.asarray(asks, dtype=np.float64)
        penalty = penalty + np.where(asks_ != 0, ASKING_PENALTY * asks_ * unasked, 0.0)
        tokens_ = np.asarray(brief_tokens, dtype=np.float64)
        brevity = BREVITY_PENALTY * (1.0 - np.maximum(0.0, tokens_) / BREVITY_TOKENS) * unasked
        penalty = penalty + np.where(tokens_ < BREVITY_TOKENS, brevity, 0.0)
        score = total * (1.0 - np.minimum(1.0, penalty))
    else:
        score = total - penalty
    if briefed:
        score = score + w.belief_bias * np.array([belief_layers.bias(doc, briefed)[0] for doc in docs])
    else:
        score = score + 0.0
    columns = zip(lexical_.tolist(), semantic_.tolist(), graph_.tolist(), scenario, utility.tolist(), fresh,
                  strict=True)
    return RawScores([{"lexical": le, "semantic": se, "graph": gr, "scenario": sc, "utility": ut, "freshness": fr}
                      for le, se, gr, sc, ut, fr in columns], score.tolist(), penalty.tolist(), match)


def _document_facts(docs: list, counters: dict, scene, prefers, now_us: int) -> tuple[list, ...]:
    half_lives, of_layer, day = channels.HALF_LIFE_DAYS, channels.VOLATILITY_OF_LAYER, channels.US_PER_DAY
    scenario, success, failure, fresh, contradictions, reviewing, single = [], [], [], [], [], [], []
    for doc in docs:
        scope = doc.scope
        s = 0.5 if scene and (scope.get("scene") or scope.get("task_type")) == scene else 0.0
        if prefers and (doc.kind in prefers or doc.layer in prefers or (doc.event_kind or "") in prefers):
            s += 0.5
        scenario.append(s)
        c = counters.get(doc.id)
        if c is None:
            success.append(0)
            failure.append(0)
            contradictions.append(0)
        else:
            worked, failed = c.track
            success.append(worked)
            failure.append(failed)
            contradictions.append(c.contradiction)
        volatility = scope.get("volatility") if scope else None
        half_life = half_lives[volatility if volatility in half_lives else of_layer[doc.layer]]
        fresh.append(1.0 if half_life == math.inf else
                     0.5 ** (max(0.0, (now_us - doc.fresh_since_us) / day) / half_life))
        reviewing.append(doc.status == "reviewing")
        single.append(bool(doc.provenance))
    return scenario, success, failure, fresh, contradictions, reviewing, single


def _bits(result: RawScores) -> tuple:
    """Every number as its bits and type (``==`` would take -0.0 for 0.0)."""
    def bits(x):
        return type(x).__name__, x.hex() if isinstance(x, float) else x
    return ([[(k, bits(v)) for k, v in row.items()] for row in result.channels], [bits(x) for x in result.scores],
            [bits(x) for x in result.penalties], [bits(x) for x in result.matches])


# wider than ``candidate``: ages past 2**53 µs and in the future (Python's int arithmetic, not doubles),
# a last use before or after the event, scopes not a dict, volatilities no half-life names, learner verdicts,
# long and short messages, any share of questions
ages = st.one_of(st.integers(-30, 4000).map(lambda d: d * DAY), st.integers(-(2 ** 60), 2 ** 60),
                 st.integers(0, 10 ** 6))


# An odd candidate's parts, built once: a strategy made inside the composite is built again (its label
# and emptiness worked out anew) at every draw, most of the drawing's CPU
ODD_KIND = st.sampled_from(["event", "fragment"])
ODD_SCOPE = st.dictionaries(st.sampled_from(["env", "scene", "task_type", "volatility"]),
                            st.sampled_from(["prod", "deploy", "", "high", "low", "red_line", "medium", "weird"]),
                            max_size=4)
ODD_LAYER = st.sampled_from(["episodic", "experience", "knowledge", "identity"])
ODD_EVENT_KIND = st.sampled_from([None, "", "message", "anomaly", "action"])
ODD_STATUS = st.sampled_from(["active", "reviewing", "candidate"])
ODD_USED = st.one_of(st.just(0), st.integers(NOW - 900 * DAY, NOW + 5 * DAY))
ODD_PROVENANCE = st.sampled_from([None, {}, {"learned_by": "a", "agents": 1, "verified": 1}])
ODD_ASKS = st.one_of(st.sampled_from([0.0, 1 / 3, 1.0]), st.floats(0.0, 1.0))
ODD_COUNTERS = st.one_of(st.none(), st.builds(Counters, *[st.integers(0, 9)] * 6))
ODD_SCORE = st.one_of(unit, st.sampled_from([0, 1]))
TOKENS = st.integers(0, 40)


@st.composite
def odd_candidate(draw, n: int):
    kind = draw(ODD_KIND)
    scope = draw(ODD_SCOPE)
    doc = Doc(id=f"d{n}", kind=kind, layer=draw(ODD_LAYER),
              text="export job timeout", event_ids=[f"e{n}"], source="perceived", confidence=0.9,
              scope=UserDict(scope) if draw(st.booleans()) and draw(st.booleans()) else scope,
              ts_us=NOW - draw(ages), tokens=draw(TOKENS), event_kind=draw(ODD_EVENT_KIND),
              status=draw(ODD_STATUS), last_used_us=draw(ODD_USED), provenance=draw(ODD_PROVENANCE),
              asks=draw(ODD_ASKS))
    counters = draw(ODD_COUNTERS)
    return doc, counters, draw(ODD_SCORE), draw(ODD_SCORE), draw(ODD_SCORE)


weights = st.builds(Weights, *[st.one_of(st.floats(0.0, 2.0), st.integers(0, 2))] * 7,
                    method=st.sampled_from(["weighted", "fused", "rrf"]))


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(1, 16).flatmap(lambda n: st.tuples(*[odd_candidate(i) for i in range(n)])), weights,
       st.one_of(st.sampled_from([0.0, 0.3, 1.0, 1.5]), st.floats(0.0, 1.0)),
       st.sampled_from([None, "anomaly", "task_start", "user_reference", "unknown"]),
       st.sampled_from([None, "", "deploy", "prod"]), scopes, st.booleans())
def test_c_pass_is_the_numpy_columns_bit_for_bit(cands, w, associative, trigger, scene, scope, briefing):
    query = Query(tenant="t", text="q", semantic_text="q", terms=["q"], exact=frozenset(), trigger=trigger,
                  scope=scope, scene=scene, user=None, layers=None, budget_tokens=500, k=None, now_us=NOW,
                  associative=associative)
    briefed = [Belief("b1", "the export job", 0.8, 3, "active", {}, ["e1"], NOW, cues=frozenset({"export", "job"}))] \
        if briefing else []
    docs = [c[0] for c in cands]
    counters = {c[0].id: c[1] for c in cands if c[1] is not None}
    lexical, semantic, graph = ([c[i] for c in cands] for i in (2, 3, 4))
    args = (docs, counters, query, w, lexical, semantic, graph, briefed)
    assert _bits(raw_scores(*args)) == _bits(numpy_raw_scores(*args))


def test_a_scope_that_is_no_mapping_fails_as_the_python_pass_did():
    doc = Doc(id="d", kind="event", layer="episodic", text="t", event_ids=[], source="s", confidence=1.0,
              scope=None, ts_us=NOW)
    query = Query(tenant="t", text="q", semantic_text="q", terms=[], exact=frozenset(), trigger=None, scope={},
                  scene="deploy", user=None, layers=None, budget_tokens=500, k=None, now_us=NOW)
    for score in (raw_scores, numpy_raw_scores):
        try:
            score([doc], {}, query, PRESETS["fused"].text, [0.0], [0.0], [0.0], [])
        except AttributeError:
            continue
        raise AssertionError(f"{score.__name__} scored a document whose scope is None")
