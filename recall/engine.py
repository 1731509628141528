"""The recall engine: candidates from the channels, one explained score each, then the gate.

1. **Candidates**: the best lexical hits (words + cue terms) and the nearest semantic
   neighbours, in the requested layers;
2. **graph**: the strongest candidates lend support to others sharing an entity and/or an
   action with them, and pull in items reachable only that way (rare cues only: a cue
   shared by hundreds of items is not a link);
3. **score**: every channel of ``recall.channels`` for every candidate, combined by
   ``recall.scoring`` (the seed's weights or RRF), minus penalties, plus the belief bias;
   then, for a question, the items one link away from the best hits (a name they hold, their
   neighbouring turns) are lifted or added (``recall.expand``), each explained in ``why``;
   the default preset's pool is ordered by the learned trees (``recall.learned.rerank``) and,
   for a question, that order fused with the semantic channel's own (``learned.hedge``);
4. **gate**: the best ``pool`` candidates go through ``recall.gate`` after the briefing has
   taken its share of the budget.

IO-free apart from reading the in-memory index; timings per stage are returned for the
latency benchmark.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from hindbrain.recall import beliefs as belief_layers
from hindbrain.recall import channels, e5_dialogue, expand, indirect, informative
from hindbrain.recall import learned as learned_fusion
from hindbrain.recall.asking import asking_penalty
from hindbrain.recall.brevity import brevity_penalty
from hindbrain.recall.documents import FUNCTION_WORDS, Belief, Doc, semantic_text
from hindbrain.recall.event_documents import SITUATION_LABELS
from hindbrain.recall.freezing import freezer
from hindbrain.recall.gate import GateItem, gate
from hindbrain.recall.graph import graph
from hindbrain.recall.index import RecallIndex
from hindbrain.recall.lexical import best_hits
from hindbrain.recall.query import Query
from hindbrain.recall.raw_scores import raw_scores
from hindbrain.recall.scoring import (
    CHANNELS,
    DEFAULT_PRESET,
    Fusion,
    Weights,
    competition_ranks,
    fused,
    preset,
    rrf,
    weighted,
)
from hindbrain.recall.tenant_index import TenantIndex
from hindbrain.streams.gc_pause import gc_paused

FETCH = 64  # hits each search channel contributes (at least k)
POOL = 32  # scored candidates that reach the gate and the recall record (at least k)
TURN_FETCH = 16  # semantic hits each single turn of a dialogue query adds


@dataclass
class Scored:
    doc: Doc
    score: float
    why: dict
    scope_match: float
    channel_scores: dict[str, float] = field(default_factory=dict)
    no: int = -1  # the document's number in its tenant index
    penalty: float = 0.0
    cosine: float | None = None  # the semantic channel's (late interaction) cosine
    chain: float = 0.0  # the graph's chain support (``linked.chains``), which the gate reads typed


@dataclass
class Shared:
    """What a recall's scorings compute alike whatever their weights, by document number: the
    hedge's second scoring (``learned.hedge``) reads the first's instead of computing it again. The
    same query, views and candidates give the same values, so both orders are as if computed apart."""

    seed_links: dict = field(default_factory=dict)  # each expansion seed's links (``expand.expand``)
    late: dict[int, float] = field(default_factory=dict)  # late-interaction cosines (``_late_cosines``)
    clause: dict[int, tuple[float, float]] = field(default_factory=dict)  # ``_clause_cosines``'
    # a state question's asked person, their told turns and those turns' cosines to its two parts
    state: tuple | None = None


@dataclass
class RecallResult:
    ranked: list[Scored]  # the pool, best first, every why filled
    selected: list[GateItem]
    cut: list[dict]
    briefed: list[tuple[Belief, str]]
    timings_ms: dict[str, float] = field(default_factory=dict)
    arms: dict[str, tuple[str, str]] = field(default_factory=dict)  # briefed belief → (A/B window, arm)


class RecallEngine:
    """``fusion``: a preset (``recall.scoring.PRESETS``), or one ``Weights`` for every query."""

    def __init__(self, index: RecallIndex, fusion: Fusion | Weights | None = None, pool: int = POOL,
                 fetch: int = FETCH, quarantine: bool = True, learned: bool | None = None):
        if isinstance(fusion, Weights):
            fusion = Fusion("custom", fusion, fusion)
        self.index, self.fusion, self.pool, self.fetch = index, fusion or preset(DEFAULT_PRESET), pool, fetch
        self.quarantine = quarantine  # the gate's poisoning defence (recall.provenance); off only to measure it
        # The learned ranker re-orders the default preset's pool only, and only with a semantic
        # channel: it was fitted on that pool, whose cosines and semantic ranks are half its
        # features (recall.learned); None: on unless HINDBRAIN_LEARNED_FUSION=0.
        self.learned = ((learned_fusion.enabled() if learned is None else learned)
                        and self.fusion.name == DEFAULT_PRESET and index.semantic is not None)

    def recall(self, query: Query) -> RecallResult:
        # Scoring allocates only acyclic, short-lived dicts; without the pause, their churn
        # triggered full collections over the index's objects (~170 ms at 100k units).
        with gc_paused():
            result = self._recall(query)
        freezer.settle()  # the documents it read into objects: out of the full collections (recall.freezing)
        return result

    def _recall(self, query: Query) -> RecallResult:
        clock = _Clock()
        tenant = self.index.tenants.get(query.tenant)
        if tenant is None:
            return RecallResult([], [], [], [], clock.laps)
        if query.user is None and (named := tenant.person_named(query.text)):
            # "How does Lin like answers?" with no ``user``: the recall is for the user it names, so that
            # user's own preferences are in scope (and nobody else's), as if ``user`` had been passed
            query = replace(query, user=named)
        mask = tenant.visible_mask(query.layers, query.agent)
        fetch = max(self.fetch, query.k or 0)
        semantic, texts = self.index.semantic, query.semantic_views
        vectors = semantic.embed_queries_async(texts) if semantic is not None and texts else None
        e5 = None
        if vectors is not None and query.form == "dialogue" and semantic.dialogue is not None:
            semantic.want_dialogue(query.tenant)
            # a tenant whose dialogue memories wait for e5 in a small number reads its writes: this recall
            # makes them (and waits for e5's load, once a process); a larger backlog is the workers' to make,
            # the recall making what fits its budget and reading USE's alone until e5's passes are loaded
            small = semantic.dialogue.backlog(query.tenant) <= e5_dialogue.INLINE_TEXTS
            e5 = _DialogueMix(semantic, tenant, query.tenant,
                              semantic.dialogue_query_async(query.views.cue)
                              if small or e5_dialogue.query_ready() else None,
                              budget=math.inf if small else None)
        lexical = self._lexical(tenant, query, mask, fetch)
        clock.lap("lexical")
        near, views = self._semantic(query, mask, clock, fetch, vectors)
        if query.described and query.views is not None:
            speakers = _participants(tenant, [*lexical, *near])
            query = replace(query, readings=tuple(indirect.in_person(part, speakers) for part in query.views.turns[:2]))
            if views is not None:
                near, views = self._in_person(query, mask, near, views)
        arms = belief_layers.window_arms(tenant.windows, query.decision_key)
        emotion = query.emotion[0] if query.emotion else None
        beliefs = [b for b in tenant.beliefs.values() if not self.quarantine or belief_layers.briefable(b, query.user)]
        briefed = _within(belief_layers.briefing(beliefs, query.scene, query.user,
                                                 admitted=frozenset(arms), emotion=emotion), query.budget_tokens)
        ranked, explain = self.score(tenant, query, lexical, near, mask, [b for b, _ in briefed], views, e5)
        clock.lap("score")
        items = [GateItem(s.doc, s.score, s.scope_match, s.why, semantic=s.channel_scores.get("semantic", 0.0),
                          chain=s.chain) for s in ranked]
        terms = frozenset(query.terms)
        for item in items:
            _explain_terms(item, terms)
        reserved = sum(b.tokens for b, _ in briefed)
        recall_scope = {**query.scope, "user": query.user} if query.user else query.scope
        selected, cut = gate(items, recall_scope, query.budget_tokens, query.k, reserved_tokens=reserved,
                           task=query.task, trigger=query.trigger, user=query.user, quarantine=self.quarantine,
                           system=query.system)
        for item in items:  # the explanation last, from the verdict: it never feeds back into the decision
            if item.stage:
                item.why["gate"] = item.explanation()
        clock.lap("gate")
        returned = {i.id for i in selected}
        explain([s for s in ranked if query.explain or s.doc.id in returned])
        clock.lap("explain")
        arms = {b.id: arms[b.id] for b, _ in briefed if b.id in arms}
        return RecallResult(ranked, selected, cut, briefed, clock.laps, arms)

    # -- channels that search ------------------------------------------------------------
    def _lexical(self, tenant: TenantIndex, query: Query, mask, fetch: int) -> dict[int, tuple[float, float]]:
        """doc number → (bm25, query information) for the best ``fetch`` lexical hits. Under a mask
        a recurring one's visible documents alone are scored (``BM25Index.visible_scores``: the same
        scores, and the best hits' tie rule, newest first, holds as their numbers keep their order)."""
        if mask is None:
            scores, idfs = tenant.bm25.scores(query.terms)
            docs = None
        else:
            docs, scores, idfs = tenant.bm25.visible_scores(query.terms, mask)
        hits = best_hits(scores, fetch)  # equal scores at the cut: the newest documents
        # A query term no document holds still carries information (idf as if df = 0): without
        # it, a query whose only known word is "the" would be fully "covered" by any document.
        unseen = math.log(1.0 + (len(tenant.bm25) + 0.5) / 0.5)
        information = sum(idfs.get(t, unseen) for t in query.terms)
        numbers = hits if docs is None else docs[hits]
        return {int(d): (float(scores[h]), information) for d, h in zip(numbers.tolist(), hits.tolist(), strict=True)}

    def _semantic(self, query: Query, mask, clock, fetch: int, pending) -> tuple[list[int], np.ndarray | None]:
        """The doc numbers nearest to each view (``fetch`` for the joined query, ``TURN_FETCH``
        for each single turn of a dialogue) and the views' vectors (``pending``: their future,
        started before the lexical search). Their cosines are taken afterwards for every
        candidate at once (``_late_cosines``)."""
        semantic = self.index.semantic
        if pending is None:
            return [], None
        vectors = pending.result()
        clock.lap("embed")
        hits = [no for no, _ in semantic.search(query.tenant, vectors[0], fetch, mask)]
        for vector in vectors[1:]:
            hits += [no for no, _ in semantic.search(query.tenant, vector, TURN_FETCH, mask)]
        clock.lap("semantic")
        return hits, vectors

    def _in_person(self, query: Query, mask, near: list[int], views: np.ndarray) -> tuple[list[int], np.ndarray]:
        """A described-person question's parts also as its conversation's participants would say
        them (``query.readings``): more views, and the semantic hits of each."""
        said = [r for part in query.readings for r in part] if expand.PERSON_VIEWS else []
        if not said:
            return near, views
        semantic = self.index.semantic
        more = semantic.embed_queries(said)
        hits = [no for vector in more for no, _ in semantic.search(query.tenant, vector, TURN_FETCH, mask)]
        return near + hits, np.vstack([views, more])

    def _upgrade(self, tenant: TenantIndex, name: str, near: list[int],
                 lexical: dict[int, tuple[float, float]]) -> None:
        """The candidates still on their static vector get the model's now, the semantic
        channel's best first, then the lexical ones (``SemanticIndex.upgrade``: bounded, each
        text once): a recall right after a bulk import ranks in the model's space."""
        docs = tenant.docs
        order = list(dict.fromkeys([*near, *sorted(lexical, key=lambda no: -lexical[no][0])]))
        self.index.semantic.upgrade(name, order, lambda no: (docs[no].id, semantic_text(docs[no])))

    def _late_cosines(self, tenant_name: str, nos: list[int], vectors: np.ndarray | None,
                      e5: _DialogueMix | None = None) -> dict[int, float]:
        """doc number → the late-interaction cosine (``channels.late_interaction``) of every
        candidate with a vector, whichever channel found it; a dialogue's (``e5``) mixed with e5's
        for its dialogue-kind candidates."""
        if vectors is None or not nos:
            return {}
        late = channels.late_interaction(self.index.semantic.cosines(tenant_name, nos, vectors))
        if e5 is not None:
            late = e5.mixed(nos, late)
        return {no: float(c) for no, c in zip(nos, late.tolist(), strict=True) if c == c}

    def _shared_late_cosines(self, tenant_name: str, nos: list[int], vectors: np.ndarray | None,
                             e5: _DialogueMix | None, shared: Shared) -> dict[int, float]:
        """``_late_cosines`` of ``nos``, those this recall computed already read from ``shared``."""
        return _memoised(shared.late, nos, lambda missing: self._late_cosines(tenant_name, missing, vectors, e5))

    def _shared_clause_cosines(self, query: Query, nos: list[int], views: np.ndarray | None,
                               shared: Shared) -> dict[int, tuple[float, float]] | None:
        """``_clause_cosines`` of ``nos``, those this recall computed already read from ``shared``; None for a
        question not cut in two parts."""
        if views is None or len(views) < 3 or not nos:
            return None
        return _memoised(shared.clause, nos, lambda missing: self._clause_cosines(query, missing, views))

    def _clause_cosines(self, query: Query, nos: list[int], views: np.ndarray | None
                        ) -> dict[int, tuple[float, float]] | None:
        """doc number → its cosine to each part of a described-person question cut in two
        (``indirect.described_clauses``: views 1 and 2), each part also read as the
        conversation's participants would say it (``query.readings``; their vectors are cached
        by then): the best of those readings."""
        if views is None or len(views) < 3 or not nos:
            return None
        semantic = self.index.semantic
        parts = []
        for said, vector in zip(query.readings, views[1:3], strict=False):
            rows = np.vstack([vector[None, :], semantic.embed_queries(list(said))]) if said else vector[None, :]
            parts.append(np.fmax.reduce(semantic.cosines(query.tenant, nos, rows), axis=1))
        if len(parts) < 2:
            return None
        return {no: (float(h), float(t)) for no, h, t in zip(nos, parts[0].tolist(), parts[1].tolist(), strict=True)
                if h == h and t == t}

    def _part_cosines(self, query: Query, nos: list[int], parts: tuple[str, ...]
                      ) -> dict[int, tuple[float, ...]]:
        """doc number → its cosine to each of a question's ``parts`` (``indirect.state_clauses``' two,
        ``indirect.after_clauses``' two, a change question's one)."""
        semantic = self.index.semantic
        if not nos or not parts:
            return {}
        rows = semantic.cosines(query.tenant, nos, semantic.embed_queries(list(parts)))
        return {no: tuple(float(c) for c in row) for no, row in zip(nos, rows.tolist(), strict=True)
                if all(c == c for c in row)}

    # -- scoring -------------------------------------------------------------------------
    def weights(self, query: Query) -> Weights:
        """The fusion's weights for ``query``: by its associative share and whether it is indirect."""
        return self.fusion.for_query(query.associative, query.indirect)

    def score(self, tenant: TenantIndex, query: Query, lexical: dict[int, tuple[float, float]],
              near: list[int], mask, briefed: list[Belief], views: np.ndarray | None = None,
              e5: _DialogueMix | None = None, weights: Weights | None = None,
              shared: Shared | None = None, discarded: frozenset[int] = frozenset()):
        """Every channel for every candidate; returns the best ``pool`` (at least ``k``), best
        first, each with a brief ``why`` (channel scores, what the gate reads), and the function
        that replaces a pooled item's brief ``why`` by the full explanation: building that costs
        more than the scores, so the recall builds it only for what it returns.
        ``near``: the semantic search's candidates; ``views``: the query views' vectors; ``e5``: a
        dialogue's e5 mix (``recall.e5_dialogue``), or None; ``weights``: these instead of the fusion's
        (the semantic channel's own order, ``learned.hedge``), the trees not applied; ``shared``: what
        this recall's scorings computed so far that does not depend on the weights (``Shared``; the
        hedge's second scoring reads the same ``lexical`` and ``near``, so the same candidates);
        ``discarded``: the numbers whose pooled item the caller drops (the hedge keeps the first scoring's
        item of a number both pools hold): their brief ``why`` is not built."""
        w = self.weights(query) if weights is None else weights
        normalised = w.method == "fused"  # per-query normalised lexical and semantic scores
        found = list(dict.fromkeys([*lexical, *near]))
        if views is not None and weights is None:  # once a recall: the hedge's second scoring reads the same
            self._upgrade(tenant, query.tenant, near, lexical)  # candidates, upgraded by the first
        shared = Shared() if shared is None else shared
        cosines = self._shared_late_cosines(query.tenant, found, views, e5, shared) if views is not None else {}
        best_bm25 = max((bm25 for bm25, _ in lexical.values()), default=0.0)
        nexact = len(query.exact)
        docs = tenant.docs.take(found)
        lexical_scores = {}
        for no, doc in zip(found, docs, strict=True):
            bm25, information = lexical.get(no, (0.0, 0.0))
            matched = sum(1 for c in doc.exact if c in query.exact) if nexact else 0
            lexical_scores[no] = (channels.relative_lexical_score(bm25, best_bm25, matched, nexact) if normalised
                                  else channels.lexical_score(bm25, information, matched, nexact))
        scale = _scale(cosines.values()) if normalised else None

        def semantic_of(no: int) -> float:
            cosine = cosines.get(no)
            return channels.semantic_score(cosine) if scale is None else \
                channels.normalised_semantic_score(cosine, *scale)

        # The graph's seeds: the search channels' view of relevance (an equal mix when both are off).
        wl, ws = (w.lexical, w.semantic) if w.lexical + w.semantic > 0 else (1.0, 1.0)
        semantic_scores = _semantic_scores(found, cosines, scale)
        base = {no: (wl * lexical_scores[no] + ws * semantic_scores[no]) / (wl + ws) for no in found}
        linked = graph(tenant, base, mask, docs)
        reached = linked.candidates[len(found):]
        if reached and views is not None:
            cosines.update(self._shared_late_cosines(query.tenant, reached, views, e5, shared))
            semantic_scores.update(_semantic_scores(reached, cosines, scale))
        nos = linked.candidates
        scored = self._raw(tenant, query, w, nos, [lexical_scores.get(no, 0.0) for no in nos],
                           [semantic_scores.get(no, 0.0) for no in nos], cosines,
                           [linked.scores.get(no, 0.0) for no in nos], briefed, linked.docs)
        if w.method == "rrf":
            self._rrf(scored, w)
        scored.sort(key=lambda s: (-s.score, s.doc.id))
        expanded = self._expand(tenant, query, w, scored, mask, views, cosines, semantic_of, briefed, e5, shared)
        size = max(self.pool, query.k or 0)
        pool = scored[:size]
        alone, fed = None, {}
        if self.learned and weights is None and learned_fusion.hedges(query):
            # the semantic channel's own order (the hedge's second), scored before the trees so its best can
            # join their pool (``learned.fed_pool``); an item both pools hold is the first's: the other's dropped
            alone, _ = self.score(tenant, query, lexical, near, mask, briefed, views, e5,
                                  learned_fusion.SEMANTIC_ALONE, shared, discarded=frozenset(s.no for s in pool))
            pool, fed = learned_fusion.fed_pool(pool, scored, [s.no for s in alone],
                                                learned_fusion.POOL_FROM_SEMANTIC)
        for s in pool:
            s.chain = linked.chains.get(s.no, 0.0)
            if s.no in discarded:
                continue
            s.why = _brief_why(s, lexical.get(s.no, (0.0, 0.0))[0], linked)
            if s.no in expanded:
                s.why["expansion"] = expanded[s.no].why(tenant)
        # an inference question's evidence, or that of a question naming a participant, says something:
        # each pooled turn's share of what the most informative one says, a factor on its probability
        # (the trees') or its fused score
        said = _informative(tenant, pool, discarded) if _asks_what_someone_said(tenant, query, pool) else None
        if self.learned and weights is None:  # a dialogue's mixed cosines: the trees fitted on the mix's pools
            pairs = {no for no, e in expanded.items() if e.pair} if learned_fusion.KEEP_PLACED else set()
            placed = learned_fusion.placed_slots(pool, pairs)  # before the trees re-order the pool
            trees = e5_dialogue.MIXED_NAME if e5 is not None and e5.active else self.index.semantic.embedder.name
            pool = learned_fusion.rerank(pool, query, w.utility, trees, said)
            for s in pool:
                if s.no in fed:
                    s.why["learned"]["from_semantic"] = fed[s.no]
            if alone is not None:  # the trees' order hedged with the semantic channel's own
                pool = learned_fusion.hedge(pool, alone)
            pool = learned_fusion.keep_placed(pool, placed)  # the expansion's pair or chain in its slots
            pool = pool[:size]  # as many as the gate saw before the feed
        elif said is not None:
            for s, factor in zip(pool, said, strict=True):
                s.score *= factor
            pool.sort(key=lambda s: (-s.score, s.doc.id))
        semantic = self.index.semantic
        model = semantic.embedder.name if semantic is not None else "none"
        nviews = 0 if views is None else len(views)

        def explain(pooled: list[Scored]) -> None:
            """The full explanations, in place of the brief ones (the gate's decision and the
            matched terms kept): built for what is returned, the whole pool on ``explain``."""
            # which tier's vector scored each (one look-up for all: a lock and the tier array each)
            tiers = semantic.tiers(query.tenant, [s.no for s in pooled]) if semantic is not None and pooled else []
            for s, tier in zip(pooled, tiers or [None] * len(pooled), strict=True):
                _explained(s, tier)

        def _explained(s: Scored, tier: str | None) -> None:
            full = self._explain(tenant, query, w, s, lexical.get(s.no, (0.0, 0.0)), best_bm25, scale,
                                 linked.links(tenant, s.no), model, nviews, briefed)
            if semantic is not None and s.cosine is not None:
                full["semantic"].update(tier=tier, model=semantic.model_of(tier))
                if e5 is not None and s.no in e5.scored:  # which vectors scored it: USE's and e5's, mixed
                    full["semantic"].update(model=e5_dialogue.MIXED_NAME, e5_tier=e5_dialogue.MEMORY_MODEL)
                elif e5 is not None and s.no in e5.pending:  # USE's alone: its e5 vector is not made yet
                    full["semantic"].update(e5_tier="pending", e5_shift=round(e5.shift, 4) if e5.active else None)
            if "matched_terms" in s.why["lexical"]:
                full["lexical"]["matched_terms"] = s.why["lexical"]["matched_terms"]
            if "gate" in s.why:
                full["gate"] = s.why["gate"]
            if "chain" in s.why["graph"]:
                full["graph"]["chain"] = s.why["graph"]["chain"]
            if "expansion" in s.why:
                full["expansion"] = s.why["expansion"]
            if "informative" in s.why:
                full["informative"] = s.why["informative"]
            if "learned" in s.why:
                full["learned"] = s.why["learned"]
                full["score"] = round(s.score, 6)
            if "hedge" in s.why:
                full["hedge"] = s.why["hedge"]
                full["score"] = round(s.score, 6)
            if "placed" in s.why:
                full["placed"] = s.why["placed"]
                full["score"] = round(s.score, 6)
            s.why.clear()
            s.why.update(full)

        return pool, explain

    def _expand(self, tenant: TenantIndex, query: Query, w: Weights, scored: list[Scored], mask,
                views: np.ndarray | None, cosines: dict[int, float], semantic_of, briefed: list[Belief],
                e5: _DialogueMix | None, shared: Shared) -> dict[int, expand.Expansion]:
        """Evidence that spans turns (``recall.expand``): lifts, in place, the items one link
        away from the best hits (adding those no channel found), re-sorts ``scored`` and
        returns document number → the expansion that placed it. A question's need; a
        dialogue's (associative share 1) memories are single events, so it is off there."""
        strength = 1.0 - query.associative
        if strength <= 0 or not scored or w.method != "fused":
            return {}
        by_no = {s.no: s for s in scored}
        seeds = [(s.no, s.score) for s in scored[: expand.EXPAND_SEEDS]]
        # a described person is known only through the names that join their turns: any name links
        inside = expand.NAME_INSIDE and not query.described
        found = expand.expand(tenant, seeds, {no: s.score for no, s in by_no.items()}, scored[0].score,
                              set(query.terms), mask, strength, inside, shared.seed_links)
        # a question about a person it only describes: the name-linked pairs of the best hits,
        # each turn scored on its own
        links, chains, clause, later = [], [], None, None
        act = indirect.description_part(query.views.turns) if query.views is not None else None
        parts = query.views.turns if query.views is not None else ()  # the question's two parts, for ``why``
        after = _afterwards_parts(query, act) if expand.LATER_PAIRS and views is not None else ()
        if query.described and expand.PAIRS and not (after and expand.DESCRIBED_LATER):
            hits = [s.no for s in scored[: expand.EXPAND_SEEDS]]
            clause = self._shared_clause_cosines(query, [s.no for s in scored], views, shared)
            more = expand.clause_seeds(clause)
            links = expand.pair_links(tenant, hits, set(query.terms), mask, more)
            if not query.relative:  # a turn relating two people is a chain's link, no pair's act or attribute
                links = expand.without_relations(tenant, links)
            if query.relative and expand.CHAINS:
                chains = expand.chain_links(tenant, hits, set(query.terms), mask, more)
            if expand.LATER_PAIRS and indirect.asks_afterwards(query.text):  # the doer's later turn, not an earlier
                links = expand.told_later(tenant, links)
        elif expand.STATE_PAIRS and views is not None and (state := indirect.state_clauses(query.text)) \
                and len(named := _named_participants(tenant, query, scored)) == 1:
            # a state at the time of an event: a turn of the asked person's telling each, joined by their speaker
            person = next(iter(named))
            if (kept := shared.state) is None or kept[0] != person:  # once a recall
                turns = expand.told(tenant, expand.speaker_turns(tenant, person, mask))
                kept = person, turns, self._part_cosines(query, turns, tuple(indirect.without_person(p, person)
                                                                             for p in state))
                shared.state = kept
            _, turns, clause = kept
            clause, act, parts = dict(clause), 1, state
            links = expand.state_links(tenant, [s.no for s in scored], turns, clause)
        elif after:
            # what became of someone afterwards: the deed's turn and one told after it, joined by the doer's
            # name, each valued by its own part of the question
            starts = [s.no for s in scored[: expand.LATER_SEEDS]]
            links = expand.without_relations(tenant, expand.later_links(tenant, starts, set(query.terms), mask))
            turns = list(dict.fromkeys(no for link in links for no in link[:2]))
            clause, parts = self._part_cosines(query, turns, after), after
            later, links = expand.best_later(links, clause), []
        elif expand.CHANGE_PAIRS and views is not None \
                and ((changed := indirect.asks_change(query.text))
                     or (expand.NOW_PAIRS and indirect.asks_now(query.text))) \
                and len(named := _named_participants(tenant, query, scored)) == 1:
            # what changed for someone: two of their turns on the subject, from different sessions
            person = next(iter(named))
            turns = [no for no in expand.said_once(tenant, expand.speaker_turns(tenant, person, mask))
                     if not tenant.docs[no].asks]
            parts = (indirect.without_person(query.text, person),)
            clause = self._part_cosines(query, turns, parts)
            # "now" alone: a change only if the person told the subject in two sessions (``NOW_NEAR``)
            later = expand.best_change(tenant, turns, clause, None if changed else expand.NOW_NEAR)
        elif expand.JOINT_PAIRS and len(named := _named_participants(tenant, query, scored)) >= 2:
            # a question about what several participants share: a turn of each, joined by a rare word
            links = expand.joint_links(tenant, [s.no for s in scored], named, set(query.terms), mask)
        new = list(dict.fromkeys(no for no in [*found, *(d for _, d, _ in links), *(n for c in chains for n in c[1:3]),
                                               *(later.turns if later is not None else ())]
                                 if no not in by_no))
        if new and views is not None:
            cosines.update(self._shared_late_cosines(query.tenant, new, views, e5, shared))
        for s in self._raw(tenant, query, w, new, [0.0] * len(new), [semantic_of(no) for no in new], cosines,
                           [0.0] * len(new), briefed):
            by_no[s.no] = s
            scored.append(s)
        # the own scores of the new items are known now: recompute their expansion against them
        own = {no: s.score for no, s in by_no.items()}
        found = expand.expand(tenant, seeds, own, scored[0].score, set(query.terms), mask, strength, inside,
                              shared.seed_links)
        if query.described and later is None and clause is not None and new and expand.BY_CLAUSE > 0:  # by each part
            clause.update(self._shared_clause_cosines(query, new, views, shared) or {})
        pair = later or expand.best_chain(chains, own, clause, act) or expand.best_pair(links, own, clause, act)
        placed = expand.pair_placed(pair, own) if pair is not None else {}
        # none, or among the best places already (a later or change pair keeps its turns there all the same)
        # a link through a name opening its seed's clause tells of someone else's doing: no slot (``subject_link``)
        unslotted = expand.role_unslotted(tenant, found, query.text)
        if later is None and all(own.get(no) == score for no, score in placed.items()):
            found = expand.within_slots(found, own, slots=expand.EXPAND_SLOTS, unslotted=unslotted)
        else:  # the pair (or chain) takes the expansion's slot among the best places
            for no in pair.turns[1:]:
                found.pop(no, None)
            slots = None if expand.EXPAND_SLOTS is None else max(0, expand.EXPAND_SLOTS - 1)
            found = expand.within_slots(found, {**own, **placed}, slots=slots, unslotted=unslotted)
            steps = [(pair.partner, pair.seed, pair.via), (pair.seed, pair.partner, pair.via)]
            if pair.far is not None:
                steps.append((pair.far, pair.partner, pair.far_via))
            turn_parts = dict(zip(pair.turns, pair.parts, strict=False))
            for no, other, via in steps:
                found[no] = expand.Expansion(no, other, via, placed[no], pair=True,
                                             clause=_clause_of(parts, clause, no, turn_parts.get(no)))
        for no, e in found.items():
            by_no[no].score = e.score
        scored.sort(key=lambda s: (-s.score, s.doc.id))
        return found

    def _raw(self, tenant: TenantIndex, query: Query, w: Weights, nos: list[int], lexical: list[float],
             semantic: list[float], cosines: dict[int, float], graph_scores: list[float],
             briefed: list[Belief], docs: list[Doc] | None = None) -> list[Scored]:
        """The channel scores, penalties and belief bias of the candidates ``nos`` (their documents
        ``docs`` when read already), without explanations: one columnar pass
        (``recall.raw_scores``), not a dozen calls per candidate."""
        docs = tenant.docs.take(nos) if docs is None else docs
        raw = raw_scores(docs, tenant.counters, query, w, lexical, semantic, graph_scores, briefed)
        return [Scored(doc, score, {}, match, ch, no=no, penalty=penalty, cosine=cosines.get(no))
                for doc, no, ch, score, penalty, match in zip(docs, nos, raw.channels, raw.scores, raw.penalties,
                                                              raw.matches, strict=True)]

    def _explain(self, tenant: TenantIndex, query: Query, w: Weights, s: Scored, lexical: tuple[float, float],
                 best_bm25: float, scale: tuple[float, float] | None, links: list, model: str, views: int,
                 briefed: list[Belief]) -> dict:
        """``item.why``: every channel's facts, weight and contribution, the penalties, the
        belief bias and the score, from the same functions that scored it."""
        doc, counters = s.doc, tenant.counters.get(s.doc.id)
        matched_exact = [c for c in doc.exact if c in query.exact]
        p = {"lexical": channels.lexical(*lexical, matched_exact, len(query.exact),
                                         best_bm25 if w.method == "fused" else None),
             "semantic": channels.semantic(s.cosine, model, views, scale),
             "graph": channels.graph(links),
             "scenario": channels.scenario(query.scene, _item_scene(doc), query.trigger, _traits(doc)),
             "utility": channels.utility(*((counters.applied, *counters.track) if counters else (0, 0, 0))),
             "freshness": channels.freshness(doc.fresh_since_us, query.now_us,
                                             channels.volatility_of(doc.layer, doc.scope))}
        _, contributions = (fused if w.method == "fused" else weighted)(s.channel_scores, w)
        why = {ch: {**p[ch][1], "weight": getattr(w, ch), "contribution": round(contributions[ch], 4)}
               for ch in CHANNELS}
        _, why["contradiction_penalty"] = channels.contradiction_penalty(
            doc.status, counters.contradiction if counters else 0)
        _, _, why["scope"] = channels.scope_mismatch(doc.scope, query.scope)
        if doc.provenance:
            why["provenance"] = {**doc.provenance, "penalty": channels.SINGLE_SOURCE_PENALTY}
        if doc.asks and w.method == "fused":
            why["asks"] = {"share": round(doc.asks, 3),
                           "penalty": round(asking_penalty(doc.asks, query.associative), 4)}
        if doc.event_kind == "message" and w.method == "fused":
            brevity = brevity_penalty(doc.tokens, query.associative)
            if brevity > 0:
                why["brevity"] = {"tokens": doc.tokens, "penalty": round(brevity, 4)}
        strength, belief_ids = belief_layers.bias(doc, briefed)
        if belief_ids:
            why["belief_bias"] = {"beliefs": belief_ids, "contribution": round(w.belief_bias * strength, 4)}
        # what the penalties took from the score: subtracted, or (fused) the share they scaled away
        taken = sum(contributions.values()) * min(1.0, s.penalty) if w.method == "fused" else s.penalty
        why["penalties"] = round(taken, 4)
        why["fusion"] = {"preset": self.fusion.name, "method": w.method, "query_form": query.form,
                         "associative": round(query.associative, 3)}
        if query.indirect:
            why["fusion"]["indirect"] = True  # an inference or a described person: meaning leads
        if w.method == "rrf":
            why["method"] = "rrf"
            why["score"] = round(s.score, 6)
        else:
            why["score"] = round(s.score, 4)
        return why

    @staticmethod
    def _rrf(scored: list[Scored], w: Weights) -> None:
        """Replace the weighted sums by reciprocal-rank fusion of the raw channel scores;
        penalties then scale the fused score down (RRF scores are not on the channels' scale)."""
        fused = rrf({ch: competition_ranks([s.channel_scores[ch] for s in scored]) for ch in CHANNELS}, w)
        for n, s in enumerate(scored):
            s.score = sum(fused.get(n, {}).values()) * (1.0 - min(1.0, s.penalty))


class _DialogueMix:
    """One dialogue recall's e5 side (``recall.e5_dialogue``): the future of e5's vector of the
    dialogue's cue (``QueryViews.cue``; None while the pass loads: the recall is USE's); the candidates
    whose cosine it mixed (``scored``) and the dialogue-kind ones that kept USE's because their e5 vector
    is not made yet (``pending``), for their ``why``.

    A candidate without its e5 vector is put on the mix's scale, not left on USE's: the mix of USE's
    cosine with e5's as this recall's mixed candidates have it relative to USE's, ``use + shift``
    (``shift``: the median of their ``e5 − use``). e5's cosines run higher than USE's, so its USE
    cosine alone would sink it under every mixed one, and USE's cosine plus nothing but a constant
    would let it jump over them; the shift keeps it where a candidate with its USE cosine lands on
    average, and USE's order among the pending ones. Under ``MIN_PAIRS`` mixed candidates the shift is
    not read (a median of a few) and the recall is USE's alone (``active`` False: USE's trees order it,
    fitted on USE's cosines), unless none is pending. Decided once, on the recall's first candidates,
    so every candidate of one recall is on one scale; the inline pass's time (``budget``) is the
    recall's, over all its calls."""

    MIN_PAIRS = 8

    def __init__(self, semantic, tenant: TenantIndex, tenant_name: str, query_vector,
                 budget: float | None = None):
        self.semantic, self.tenant, self.tenant_name, self._query = semantic, tenant, tenant_name, query_vector
        self.budget = e5_dialogue.INLINE_BUDGET_S if budget is None else budget
        self.scored: set[int] = set()
        self.pending: set[int] = set()
        self.active: bool | None = None if query_vector is not None else False  # decided on the first call
        self.shift = 0.0

    def e5_cosines(self, rows: np.ndarray) -> np.ndarray:
        """e5's cosines of the candidates' unit ``rows`` to the query's cue (``bench/e5_score_arms.py``
        swaps this one step to read other scorings through the default's whole path)."""
        return rows @ self._query.result()

    def mixed(self, nos: list[int], late: np.ndarray) -> np.ndarray:
        """``late`` (USE's late-interaction cosines of ``nos``) with the dialogue-kind ones mixed with
        e5's (``e5_dialogue.mix``), those whose e5 vector is pending shifted onto the mix's scale; the
        other kinds keep USE's."""
        docs = self.tenant.docs.take(nos)
        at = [i for i, d in enumerate(docs) if d.event_kind in e5_dialogue.DIALOGUE_KINDS]
        if not at or self.active is False:
            self.pending.update(nos[i] for i in at)
            return late
        mine = [nos[i] for i in at]
        rows, have, spent = self.semantic.dialogue.vectors(
            self.tenant_name, mine, lambda nos: [self.semantic.text_of(self.tenant_name, no) for no in nos],
            self.budget)
        self.budget = max(0.0, self.budget - spent)
        late = np.array(late, dtype=np.float32, copy=True)
        got = [at[j] for j in have]
        e5 = self.e5_cosines(rows) if have else np.zeros(0, np.float32)
        if self.active is None:
            use = late[got]
            known = use == use
            self.active = len(got) == len(at) or int(known.sum()) >= self.MIN_PAIRS
            if not self.active:
                self.pending.update(mine)
                return late
            if known.any():  # read by this call's pending ones, and a later call's (the graph's, expansion's)
                self.shift = float(np.median(e5[known] - use[known]))
        late[got] = e5_dialogue.mix(late[got], e5)
        waiting = sorted(set(at) - set(got))
        late[waiting] = e5_dialogue.mix(late[waiting], late[waiting] + self.shift)
        self.scored.update(nos[i] for i in got)
        self.pending.update(nos[i] for i in waiting)
        return late


def _brief_why(s: Scored, bm25: float, linked) -> dict:
    """A pooled candidate's channel scores, penalties and score: what the gate reads (bm25 for
    the matched terms, the semantic score, the graph's chain support) and what the recall record keeps
    of a candidate that was cut. Written out in ``CHANNELS``' order (``recall.raw_scores`` refuses to
    import if it changes): a comprehension over the names cost ~1 µs more for each of the pool's 32."""
    ch = s.channel_scores
    why = {"lexical": {"score": round(ch["lexical"], 4), "bm25": round(bm25, 4)},
           "semantic": {"score": round(ch["semantic"], 4)}, "graph": {"score": round(ch["graph"], 4)},
           "scenario": {"score": round(ch["scenario"], 4)}, "utility": {"score": round(ch["utility"], 4)},
           "freshness": {"score": round(ch["freshness"], 4)}}
    if s.no in linked.chains:
        why["graph"]["chain"] = round(linked.chains[s.no], 4)
    why["penalties"] = round(s.penalty, 4)
    why["score"] = round(s.score, 6)
    return why


def _memoised(known: dict, nos: list[int], compute) -> dict | None:
    """Each of ``nos``'s value from ``known``, ``compute`` (number list → dict, or None when there is nothing of
    the kind) called for those not in it only, its answer kept in ``known``; None when ``compute`` says None."""
    missing = [no for no in nos if no not in known]
    computed = compute(missing) if missing else {}
    if computed is None:
        return None
    known.update(computed)
    return {no: known[no] for no in nos if no in known}


def _semantic_scores(nos: list[int], cosines: dict[int, float], scale: tuple[float, float] | None
                     ) -> dict[int, float]:
    """``channels.normalised_semantic_score`` of each of ``nos`` over ``scale`` (``channels.semantic_score``
    without one), the same expressions inlined: two calls a candidate were ~3 % of a question's recall."""
    if scale is None:
        return {no: 0.0 if (c := cosines.get(no)) is None else max(0.0, min(1.0, c)) for no in nos}
    lowest, highest = scale
    if highest <= lowest:
        return {no: 0.0 if cosines.get(no) is None else 1.0 for no in nos}
    span = highest - lowest
    return {no: 0.0 if (c := cosines.get(no)) is None else max(0.0, min(1.0, (c - lowest) / span)) for no in nos}


def _scale(cosines) -> tuple[float, float]:
    """(lowest, highest) cosine among the candidates: the semantic score's min-max range."""
    values = list(cosines)
    return (min(values), max(values)) if values else (0.0, 0.0)


def _item_scene(doc: Doc) -> str | None:
    return doc.scope.get("scene") or doc.scope.get("task_type")


def _traits(doc: Doc) -> set[str]:
    return {doc.kind, doc.layer, doc.event_kind or ""}


def _participants(tenant: TenantIndex, nos: list[int]) -> set[str]:
    """The conversation's participants as far as a recall sees them: the speakers of its first
    ``expand.PARTICIPANT_SAMPLE`` candidates."""
    return {tenant.docs[no].speaker for no in nos[: expand.PARTICIPANT_SAMPLE]} - {None}


def _afterwards_parts(query: Query, act: int | None) -> tuple[str, str] | tuple[()]:
    """(deed, later) of a question asking what became of someone afterwards: cut at the comma before the asking
    (``indirect.after_clauses``), or, for a question describing its person by the deed ("What happened later to
    whoever painted the mural?") and not asking for a relative (whose answer is a chain), its description and the
    rest (``expand.DESCRIBED_LATER``). Empty otherwise."""
    if query.described:
        if not (expand.DESCRIBED_LATER and not query.relative and act is not None and query.views is not None
                and indirect.asks_afterwards(query.text)):
            return ()
        turns = query.views.turns
        return turns[act], turns[1 - act]
    return indirect.after_clauses(query.text)


def _named_participants(tenant: TenantIndex, query: Query, scored: list[Scored]) -> set[str]:
    """The conversation's participants (``_participants``) that ``query`` names (``informative.names_one_of``)."""
    return {p for p in _participants(tenant, [s.no for s in scored]) if informative.names_one_of(query.text, {p})}


def _asks_what_someone_said(tenant: TenantIndex, query: Query, pool: list[Scored]) -> bool:
    """Whether the information factor orders ``pool``: an inference question, or (``informative.NAMED``)
    a question naming one of the pool's speakers, whose own small talk is nearest it (a short turn
    embeds mostly as its speaker's name); never a described person's, which pairs its turns."""
    if informative.WEIGHT <= 0 or query.described or query.views is None or query.form != "text":
        return False
    if query.indirect:
        return True
    return informative.NAMED and informative.names_one_of(query.text, {s.doc.speaker for s in pool} - {None})


def _clause_of(parts: tuple[str, ...], clause: dict[int, tuple[float, float]] | None, no: int,
               part: int | None) -> tuple[str, float] | None:
    """A pair's turn's part of the question (its text, ``parts``: ``indirect.described_clauses`` or
    ``indirect.state_clauses``) and its cosine to it, for ``why``; None when the pair was valued by own scores."""
    if part is None or not clause or part >= len(parts):
        return None
    return parts[part], clause.get(no, (0.0, 0.0))[part]


def _informative(tenant: TenantIndex, pool: list[Scored], discarded: frozenset[int] = frozenset()) -> list[float]:
    """Each pooled candidate's information factor (``recall.informative.factor``; what each says,
    kept per index state by ``informative.informations``), also written into its ``why`` unless its
    number is ``discarded`` (``RecallEngine.score``)."""
    said = informative.informations(tenant.bm25, [(s.no, s.doc.text, s.doc.speaker) for s in pool])
    most = max(said, default=0.0)
    factors = [informative.factor(value, most) for value in said]
    for s, value, f in zip(pool, said, factors, strict=True):
        if s.no in discarded:
            continue
        s.why["informative"] = {"information": round(value, 3), "of_most": round(value / most, 3) if most else 0.0,
                                "factor": round(f, 4)}
    return factors


def _within(briefed: list[tuple[Belief, str]], budget: int) -> list[tuple[Belief, str]]:
    """The briefing comes first but never exceeds the budget on its own."""
    kept, used = [], 0
    for belief, layer in briefed:
        if used + belief.tokens <= budget:
            kept.append((belief, layer))
            used += belief.tokens
    return kept


def _explain_terms(item: GateItem, terms: frozenset[str]) -> None:
    """The query's ``terms`` a lexical hit holds (its words, link and exact cues): shown in ``why`` and,
    informative ones, what the gate's coverage reads (``GateItem.matched``). Intersected from the
    query's side (~20 terms), not through a union of the item's ~100 words."""
    lexical = item.why["lexical"]
    if lexical["bm25"] > 0:
        doc = item.doc
        matched = terms.intersection(item.words)
        if doc.links or doc.exact:
            matched = matched.union(terms.intersection(doc.links), terms.intersection(doc.exact))
        lexical["matched_terms"] = sorted(matched)[:20]
        # an item a link placed was found through its seed, not by the function words it shares
        # with the query: the gate's "matched on function words only" cut is not for it
        if not (expand.LINK_FOUND and "expansion" in item.why):
            item.matched = frozenset(matched - FUNCTION_WORDS - SITUATION_LABELS)


class _Clock:
    def __init__(self):
        self.laps: dict[str, float] = {}
        self._t = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = (now - self._t) * 1000
        self._t = now
