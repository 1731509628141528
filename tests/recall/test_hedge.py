"""The trees' order hedged with the semantic channel's own (``recall.learned.hedge``,
docs/recall-quality.md round twenty-seven)."""

from types import SimpleNamespace

import pytest

from hindbrain import Brain
from hindbrain.recall import engine as engine_module
from hindbrain.recall import learned
from hindbrain.recall.engine import RecallEngine
from hindbrain.recall.query import build_query
from hindbrain.recall.scoring import Fusion
from hindbrain.schemas.api import RecallInput
from hindbrain.schemas.records import now_us


def test_rank_fusion_lets_the_semantic_first_rise_over_a_default_first_it_ranks_low():
    # 1: 1/2 + 0.7/4 = 0.675; 2: 1/3 + 0.7/2 = 0.683; 3: 1/4; 4: 0.7/3 = 0.233
    fused = learned.hedge_places([1, 2, 3], [2, 4, 1])
    assert [no for no, _ in fused] == [2, 1, 3, 4]
    assert [round(v, 3) for _, v in fused] == [0.683, 0.675, 0.25, 0.233]


def test_the_default_first_keeps_its_place_when_the_semantic_channel_ranks_it_second():
    assert [no for no, _ in learned.hedge_places([1, 2, 3], [2, 1, 3])] == [1, 2, 3]


def test_an_item_only_the_second_order_holds_counts_at_the_unpooled_weight_before_the_unpooled_top():
    # 4, the first order's never, at the second's place 1: 1.7 / 3 = 0.567 passes 2 (1/3 + 0.7/4 = 0.508); at
    # 0.7 (0.233) it would not — nor at a place past ``unpooled_top``
    assert [no for no, _ in learned.hedge_places([1, 2, 3], [1, 4, 2], 1.0, 0.7, 1.7, 2)] == [1, 4, 2, 3]
    assert [no for no, _ in learned.hedge_places([1, 2, 3], [1, 4, 2], 1.0, 0.7, 1.7, 1)] == [1, 2, 3, 4]
    assert [no for no, _ in learned.hedge_places([1, 2, 3], [1, 4, 2], 1.0, 0.7)] == [1, 2, 3, 4]
    assert learned.unpooled_weight(0.7, whole=True) == 1.7 and learned.unpooled_weight(0.7, whole=False) == 0.7


def _scored(no: int, score: float):
    return SimpleNamespace(no=no, score=score, why={"score": score})


def test_hedge_keeps_the_pools_size_and_scores_and_says_what_moved_each_item():
    a, b, c = _scored(1, 1.0), _scored(2, 0.8), _scored(3, 0.2)
    d, b_alone = _scored(4, 0.9), _scored(2, 0.5)
    # the two orders share one item of their top 5: weight 1.0 — a 0.5, b 0.667, c 0.25, d 0.5 (a's tie: the trees')
    out = learned.hedge([a, b, c], [d, b_alone])
    assert out == [b, a, d]  # the default's own item kept for b, c dropped: as many as the pool
    assert [s.score for s in out] == [1.0, 0.8, 0.2] and b.why["score"] == 1.0
    assert b.why["hedge"] == {"place": 0, "default_place": 1, "semantic_place": 1, "rrf": 0.6667, "weight": 1.0,
                              "reason": "raised from the default's rank 2 by the semantic channel's rank 2"}
    assert a.why["hedge"]["reason"] == "lowered from the default's rank 1: no rank in the semantic channel's pool"
    assert d.why["hedge"]["reason"] == "brought in by the semantic channel's rank 1"


def test_the_unpooled_preset_says_which_weight_a_never_pooled_item_got(monkeypatch):
    monkeypatch.setattr(learned, "HEDGE_UNPOOLED_WHOLE", True)
    a, b, c = _scored(1, 1.0), _scored(2, 0.8), _scored(3, 0.2)
    d, b_alone = _scored(4, 0.9), _scored(2, 0.5)
    # the two orders share one item of their top 5: weight 1.0 — a 0.5, b 0.667, c 0.25; d, never pooled, at
    # the trees' weight too: 2.0 / 2 = 1.0
    out = learned.hedge([a, b, c], [d, b_alone])
    assert out == [d, b, a]  # the default's own item kept for b, c dropped: as many as the pool
    assert [s.score for s in out] == [1.0, 0.8, 0.2] and d.why["score"] == 1.0
    assert b.why["hedge"] == {"place": 1, "default_place": 1, "semantic_place": 1, "rrf": 0.6667, "weight": 1.0,
                              "reason": "the default's rank 2, the semantic channel's rank 2"}
    assert a.why["hedge"]["reason"] == "lowered from the default's rank 1: no rank in the semantic channel's pool"
    assert d.why["hedge"] == {"place": 0, "default_place": None, "semantic_place": 0, "rrf": 1.0, "weight": 2.0,
                              "reason": "brought in by the semantic channel's rank 1, counted with the trees' "
                                        "weight too: outside their pool"}


def _hedged(semantic: tuple[int, ...]) -> list:
    pool = [_scored(no, 1.0 - no / 10) for no in (1, 2, 3, 4, 5, 6)]
    return learned.hedge(pool, [_scored(no, 0.5) for no in semantic])


def test_an_item_the_trees_never_pooled_counts_at_its_semantic_place_with_the_trees_weight_too(monkeypatch):
    # four of the top 5 shared: weight 0.7; 7, outside the trees' pool, at the semantic 3rd: 1.7 / 4 = 0.425
    # passes the trees' 3rd (1/4 + 0.7/5 = 0.39); at 0.7 alone (0.175) it falls under their 4th (0.317)
    assert learned.HEDGE_UNPOOLED_TOP == 5
    monkeypatch.setattr(learned, "HEDGE_UNPOOLED_WHOLE", True)  # the preset (off by default)
    out = _hedged((2, 1, 7, 3, 4))
    assert [s.no for s in out] == [1, 2, 7, 3, 4, 5]
    assert out[2].why["hedge"]["weight"] == 1.7 and out[2].why["hedge"]["rrf"] == 0.425
    assert out[2].why["hedge"]["reason"].endswith("counted with the trees' weight too: outside their pool")
    assert {s.why["hedge"]["weight"] for s in out if s.no != 7} == {learned.HEDGE_WEIGHT}
    monkeypatch.setattr(learned, "HEDGE_UNPOOLED_WHOLE", False)  # the rule before: the semantic weight alone
    out = _hedged((2, 1, 7, 3, 4))
    assert [s.no for s in out] == [1, 2, 3, 4, 7, 5] and out[4].why["hedge"]["weight"] == learned.HEDGE_WEIGHT


def test_a_never_pooled_item_past_the_semantic_top_counts_the_semantic_weight_alone(monkeypatch):
    monkeypatch.setattr(learned, "HEDGE_UNPOOLED_WHOLE", True)
    # 8 at the semantic 5th, within HEDGE_UNPOOLED_TOP: 1.7 / 6 = 0.283 passes the trees' 5th (1/6); 7 at the
    # 6th, past it: 0.7 / 7 = 0.1 under the trees' 5th — whole (1.7 / 7 = 0.243) it would pass it too
    out = _hedged((2, 1, 3, 4, 8, 7))
    assert [s.no for s in out] == [1, 2, 3, 4, 8, 5]


def test_the_semantic_order_weighs_more_where_the_two_orders_disagree_on_the_top():
    trees = [1, 2, 3, 4, 5, 6]
    assert learned.hedge_weight(trees, [2, 1, 3, 4, 9]) == learned.HEDGE_WEIGHT  # 4 of the top 5 shared
    assert learned.hedge_weight(trees, [2, 1, 3, 9, 10]) == learned.HEDGE_WEIGHT_APART  # 3 shared
    assert learned.hedge_weight(trees, [9, 10, 11, 12, 13, 1]) == learned.HEDGE_WEIGHT_APART  # 1 beyond the top 5
    assert learned.HEDGE_WEIGHT < learned.HEDGE_WEIGHT_APART


def test_a_hedge_of_orders_apart_lets_the_semantic_second_pass_the_trees_third(monkeypatch):
    # apart (one item shared): weight 1.0 — 8 at 1/3 passes 3 at 1/4; at 0.7 (8 at 0.233) it would not
    # (the items the trees never pooled at the semantic weight alone: what this test is about is that weight)
    monkeypatch.setattr(learned, "HEDGE_UNPOOLED_WHOLE", False)
    pool = [_scored(no, 1.0 - no / 10) for no in (1, 2, 3, 4, 5, 6)]
    out = learned.hedge(pool, [_scored(no, 0.5) for no in (7, 8, 1, 9, 10)])
    assert [s.no for s in out] == [1, 7, 2, 8, 3, 4]
    assert {s.why["hedge"]["weight"] for s in out} == {learned.HEDGE_WEIGHT_APART}
    # agreeing (four shared): the trees order their shared top at the weight 0.7, as before round thirty
    pool = [_scored(no, 1.0 - no / 10) for no in (1, 2, 3, 4, 5, 6)]
    out = learned.hedge(pool, [_scored(no, 0.5) for no in (2, 1, 3, 4, 7)])
    assert [s.no for s in out] == [1, 2, 3, 4, 5, 6]
    assert {s.why["hedge"]["weight"] for s in out} == {learned.HEDGE_WEIGHT}


TURNS = [("Ana", "I adopted a grey kitten from the shelter last week."),
         ("Ben", "Of course! That's what friends are for."),
         ("Ana", "The kitten sleeps on my keyboard all day."),
         ("Ben", "What is the best thing to do for now?"),
         ("Ana", "We drove to the coast and watched the whales."),
         ("Ben", "Is that what you did before?"),
         ("Ana", "My sister is allergic to cats, so she visits less."),
         ("Ben", "Bye for now!")]


@pytest.fixture(scope="module")
def brain(tmp_path_factory):
    with Brain.open(tmp_path_factory.mktemp("hedge") / "brain") as brain:
        for n, (speaker, text) in enumerate(TURNS):
            brain.perceive(tenant="t", agent="chat", kind="message", speaker=speaker, session="s1", text=text,
                           event_id=f"e{n}")
        brain.index.semantic.wait()
        yield brain


def _ranked(brain, fusion=None, text="What is the pet Ana got for now?") -> list:
    query = build_query(RecallInput(tenant="t", query=text, k=8, budget_tokens=100000, layers=["episodic"],
                                    explain=True), now_us())
    engine = RecallEngine(brain.index, fusion) if fusion else brain.engine
    return engine.recall(query).ranked


def test_a_question_is_hedged_and_each_item_names_its_place_in_the_semantic_order(brain):
    hedged = _ranked(brain)
    alone = [s.doc.id for s in _ranked(brain, Fusion("semantic alone", learned.SEMANTIC_ALONE,
                                                     learned.SEMANTIC_ALONE))]
    assert all("hedge" in s.why for s in hedged)
    for place, s in enumerate(hedged):
        h = s.why["hedge"]
        assert h["place"] == place
        assert h["semantic_place"] == (alone.index(s.doc.id) if s.doc.id in alone else None)
    values = [s.why["hedge"]["rrf"] for s in hedged]
    assert values == sorted(values, reverse=True)


def test_the_switch_leaves_the_trees_order(brain, monkeypatch):
    monkeypatch.setenv("HINDBRAIN_HEDGE", "0")
    ranked = _ranked(brain)
    assert ranked and not any("hedge" in s.why for s in ranked)
    assert [s.why["learned"]["place"] for s in ranked] == list(range(len(ranked)))


def test_a_dialogue_is_ordered_by_the_trees_alone(monkeypatch):
    def query(text):
        return build_query(RecallInput(tenant="t", query=text), now_us())
    dialogue = '<Ana>: "I got a kitten!"\n<Assistant>: "Lovely!"\n<Ana>: "What should I buy for it?"'
    assert learned.hedges(query("What pet did Ana get?")) and not learned.hedges(query(dialogue))
    monkeypatch.setenv("HINDBRAIN_HEDGE", "0")
    assert not learned.hedges(query("What pet did Ana get?"))


DESCRIBED = "What pet does the person who drove to the coast have?"


@pytest.mark.parametrize("text", [DESCRIBED, "What is the pet Ana got for now?"])
def test_the_second_scoring_reads_the_firsts_cosines_and_orders_as_if_computed_apart(brain, monkeypatch, text):
    """The hedge's second scoring reads the late and clause cosines the first computed (``Shared``):
    each candidate's are computed once a recall, and the order and scores are those of scorings that
    compute their own (round twenty-eight)."""
    late, clause = [], []
    late_cosines, clause_cosines = RecallEngine._late_cosines, RecallEngine._clause_cosines
    monkeypatch.setattr(RecallEngine, "_late_cosines",
                        lambda self, t, nos, *a: late.extend(nos) or late_cosines(self, t, nos, *a))
    monkeypatch.setattr(RecallEngine, "_clause_cosines",
                        lambda self, q, nos, *a: clause.extend(nos) or clause_cosines(self, q, nos, *a))
    shared = [(s.doc.id, s.score) for s in _ranked(brain, text=text)]
    assert late and len(late) == len(set(late)) and len(clause) == len(set(clause))
    assert bool(clause) == (text == DESCRIBED)
    monkeypatch.setattr(RecallEngine, "_shared_late_cosines",
                        lambda self, t, nos, v, e5, memo: self._late_cosines(t, nos, v, e5))
    monkeypatch.setattr(RecallEngine, "_shared_clause_cosines",
                        lambda self, q, nos, v, memo: self._clause_cosines(q, nos, v))
    assert [(s.doc.id, s.score) for s in _ranked(brain, text=text)] == shared



def test_the_second_scoring_builds_no_why_the_hedge_drops_and_every_why_is_as_if_built_for_all(brain, monkeypatch):
    """An item both pools hold is the trees' pool's in the hedged order (``learned.hedge``): the second
    scoring builds the brief ``why`` and information ``why`` only of its items the hedge may bring in
    (round twenty-nine); every ranked item's ``why`` and score are those of a recall that built them all.
    Pools of three and the semantic order weighted up, so that the hedge brings items in."""
    monkeypatch.setattr(learned, "HEDGE_WEIGHT", 20.0)
    engine = RecallEngine(brain.index, pool=3)
    texts = ["What are friends for?", "What is the best thing to do?", "Where does the cat sleep?"]

    def ranked():
        return [[(s.doc.id, s.score, s.why) for s in engine.recall(build_query(RecallInput(
            tenant="t", query=text, k=3, budget_tokens=100000, layers=["episodic"], explain=True), now_us())).ranked]
            for text in texts]

    built = []
    brief = engine_module._brief_why
    monkeypatch.setattr(engine_module, "_brief_why", lambda s, *a: built.append(s.no) or brief(s, *a))
    lists = ranked()
    assert any(why["hedge"]["default_place"] is None for items in lists for _, _, why in items)  # brought in
    assert all("lexical" in why and "hedge" in why for items in lists for _, _, why in items)
    calls = len(built)
    score = RecallEngine.score
    monkeypatch.setattr(RecallEngine, "score", lambda self, *a, discarded=frozenset(): score(self, *a))
    built.clear()
    assert ranked() == lists
    assert calls < len(built)  # the pools' shared numbers were built twice


def test_the_semantic_first_items_the_pool_lacks_join_it_in_the_semantic_order():
    pool, rest = [_scored(1, 1.0), _scored(2, 0.9)], [_scored(3, 0.5), _scored(4, 0.4), _scored(5, 0.3)]
    # the semantic order: 4, 1 (pooled already), 9 (never scored by the first scoring: no features), 3, 5
    fed, places = learned.fed_pool(pool, [*pool, *rest], [4, 1, 9, 3, 5], 4)
    assert [s.no for s in fed] == [1, 2, 4, 3] and places == {4: 0, 3: 3}
    assert fed[2] is rest[1]  # the first scoring's own item: its real features
    assert learned.fed_pool(pool, [*pool, *rest], [4, 1, 9, 3, 5], 0) == (pool, {})


def test_the_semantic_channels_best_join_the_trees_pool_and_say_so(brain, monkeypatch):
    """With ``POOL_FROM_SEMANTIC`` the trees rank the pool of 3 and semantic alone's first 2 it lacks; the
    hedged order keeps the pool's size; off (0, the old pool) the trees see the fused first 3 alone."""
    engine = RecallEngine(brain.index, pool=3)
    text = "Where does the cat sleep?"
    alone = [s.no for s in RecallEngine(brain.index, Fusion("semantic alone", learned.SEMANTIC_ALONE,
                                                            learned.SEMANTIC_ALONE), pool=3).recall(
        build_query(RecallInput(tenant="t", query=text, k=3, budget_tokens=100000, layers=["episodic"]),
                    now_us())).ranked]
    seen, rerank = [], learned.rerank
    monkeypatch.setattr(learned, "rerank", lambda pool, *a: seen.append([s.no for s in pool]) or rerank(pool, *a))

    def ranked():
        seen.clear()
        return engine.recall(build_query(RecallInput(tenant="t", query=text, k=3, budget_tokens=100000,
                                                     layers=["episodic"], explain=True), now_us())).ranked

    monkeypatch.setattr(learned, "POOL_FROM_SEMANTIC", 0)
    old = ranked()
    assert len(seen[0]) == 3 and not any("from_semantic" in s.why["learned"] for s in old)
    fused = seen[0]
    monkeypatch.setattr(learned, "POOL_FROM_SEMANTIC", 2)
    new = ranked()
    joined = [no for no in alone[:2] if no not in fused]
    assert joined and seen[0] == [*fused, *joined]
    assert len(new) <= 3
    for s in new:
        assert s.why["learned"].get("from_semantic") == (alone.index(s.no) if s.no in joined else None)


# orders apart (no item of the trees' top 5 in the semantic one's): 2 and 1 at the semantic order's 11th and 12th
APART = [7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 2, 1]


def test_where_the_orders_are_apart_the_trees_places_count_only_within_the_semantic_reach():
    # reach 10, weight 1.0: 2 keeps only its semantic part (1/12), not the trees' 1/3 as well; 1, the trees' first,
    # keeps its lead; 3-6, which the semantic order does not hold, keep the trees' part
    fused = [no for no, _ in learned.hedge_places([1, 2, 3, 4, 5, 6], APART, 1.0, 1.0, reach=10)]
    assert fused == [1, 7, 8, 3, 9, 4, 10, 5, 11, 6, 12, 13, 14, 15, 16, 2]
    every = [no for no, _ in learned.hedge_places([1, 2, 3, 4, 5, 6], APART, 1.0, 1.0)]
    assert every[:4] == [1, 7, 2, 8]  # every place counting (reach None): 2 at 1/3 + 1/12 passes 8


def test_the_reach_applies_where_the_orders_are_apart_and_the_hedge_says_so(monkeypatch):
    monkeypatch.setattr(learned, "HEDGE_UNPOOLED_WHOLE", False)
    monkeypatch.setattr(learned, "HEDGE_REACH", 10)
    assert learned.hedge_reach(learned.HEDGE_WEIGHT_APART) == 10 and learned.hedge_reach(learned.HEDGE_WEIGHT) is None
    pool = [_scored(no, 1.0 - no / 10) for no in (1, 2, 3, 4, 5, 6)]
    by_no = {s.no: s for s in pool}
    out = learned.hedge(pool, [by_no.get(no) or _scored(no, 0.5) for no in APART])
    assert [s.no for s in out] == [1, 7, 8, 3, 9, 4]  # 2 left out: the trees' 2nd, the semantic order's 11th
    long = [_scored(no, 1.0 - no / 100) for no in (1, 2, 3, 4, 5, 6, *range(17, 41))]  # 2 kept: its why
    by_no = {s.no: s for s in long}
    learned.hedge(long, [by_no.get(no) or _scored(no, 0.5) for no in APART])
    assert by_no[2].why["hedge"]["reason"] == ("lowered from the default's rank 2: the semantic channel's rank 11; "
                                               "the default's rank not counted: past the semantic channel's 10th")
    assert "not counted" not in by_no[1].why["hedge"]["reason"]  # the trees' first leads whatever the semantic rank
    monkeypatch.setattr(learned, "HEDGE_REACH", None)  # every place of the trees' counts (rounds 27-32)
    pool = [_scored(no, 1.0 - no / 10) for no in (1, 2, 3, 4, 5, 6)]
    assert [s.no for s in learned.hedge(pool, [_scored(no, 0.5) for no in APART])] == [1, 7, 2, 8, 3, 9]


def test_a_placed_pair_keeps_its_slot_or_a_higher_place_and_comes_back_if_the_hedge_left_it_out():
    # the fused order 1..5; the expansion placed 3 (slot 3) and 5 (slot 5) as a pair, 9 as a chain's turn (slot 2)
    fused = [_scored(n, 1.0 - n / 10) for n in (1, 9, 3, 4, 5)]
    placed = learned.placed_slots(fused, {3, 5, 9})
    assert [(slot, s.no) for slot, s in placed] == [(1, 9), (2, 3), (4, 5)]
    by_no = {s.no: s for s in fused}
    # the trees and the hedge: 5 raised to the first place, 3 lowered to the 6th, 9 left out for 7
    hedged = [by_no[5], by_no[1], by_no[4], _scored(6, 0.3), _scored(8, 0.2), by_no[3], _scored(7, 0.1)]
    scores = [s.score for s in hedged]
    out = learned.keep_placed(hedged, placed)
    assert [s.no for s in out] == [5, 9, 3, 1, 4, 6, 8]  # 5 keeps the higher place; 9 and 3 their slots
    assert len(out) == len(hedged) and [s.score for s in out] == sorted(scores, reverse=True)
    assert by_no[3].why["placed"] == "the expansion's slot 3 kept: the trees and the hedge had it 6th"
    assert by_no[9].why["placed"] == "the expansion's slot 2 kept: the hedge had left it out"
    assert "placed" not in by_no[5].why  # not moved
    assert learned.keep_placed(hedged, []) is hedged
