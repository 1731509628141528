"""A recall query as the engine sees it: free text and/or a structured situation, turned
into lexical terms, cue terms, an embedding text and the recall's context.

A situation ``{system, identity, action, expected, actual}`` becomes an *expected vs
actual* query (design.md §seed-000-exp-5): its fields are cues (``@entity:iam``, ``@account:normal``
...), and "expected success message but got no response" is what the semantic channel
embeds, so a memory written as "提交后长期没有响应" can still be found.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hindbrain.recall.cues import expected_vs_actual, query_cues, query_time_terms
from hindbrain.recall.dialogue import QueryViews, associative_share, views
from hindbrain.recall.documents import COORDINATE_PREFIXES
from hindbrain.recall.emotion import infer as infer_emotion
from hindbrain.recall.event_documents import situation_text
from hindbrain.recall.indirect import described_clauses, describes_relative, describes_someone, indirect
from hindbrain.recall.tokenize import tokens


@dataclass(frozen=True)
class Query:
    tenant: str
    text: str  # what the lexical channel reads
    semantic_text: str  # what the semantic channel embeds
    terms: list[str]  # word tokens + CJK bigrams + cue terms
    exact: frozenset[str]  # the query's exact cues (codes, URLs, accounts, systems)
    trigger: str | None
    scope: dict
    scene: str | None
    user: str | None
    layers: list[str] | None
    budget_tokens: int
    k: int | None
    now_us: int
    decision_key: str | None = None  # what an A/B window splits on: the task (else the agent)
    agent: str | None = None  # whose private memory the recall may see besides the shared one
    views: QueryViews | None = None  # a dialogue's views (recall.dialogue); None: one view, semantic_text
    associative: float = 0.0  # 0 a short question … 1 a dialogue or a long description (dialogue.associative_share)
    indirect: bool = False  # a question for an inference or about a person it only describes (recall.indirect)
    described: bool = False  # a question about a person it only describes by an act (recall.indirect)
    relative: bool = False  # … about that person's relative or associate ("the flatmate of whoever …")
    # each part of a described question as its conversation's participants would say it
    # (``indirect.in_person``): filled by the engine, which knows the participants
    readings: tuple[tuple[str, ...], ...] = ()
    emotion: tuple[str, float] | None = None  # (label, confidence): given (0.9) or inferred from the query
    task: str | None = None  # the recalling task: what it perceived is already in the agent's context
    explain: bool = False  # the full explanation for every pooled candidate, not only the returned ones
    system: str | None = None  # the situation's system: a verified rule of it answers the decision (recall.gate)

    @property
    def semantic_views(self) -> list[str]:
        """What the semantic channel embeds: the joined text first, then single turns."""
        if not self.semantic_text:
            return []
        return [self.semantic_text, *(self.views.turns if self.views else ())]

    @property
    def form(self) -> str:
        """"dialogue", "lines" (several untagged lines) or "text"."""
        return self.views.form if self.views else "text"


EXPLICIT = 0.9  # an emotion the caller names (design.md §seed-001-4.1: explicit)


def build_query(q, now_us: int) -> Query:
    """From a validated ``RecallInput``."""
    situation = dict(q.situation)
    seen = views(q.query) if q.query else None
    if seen is not None and seen.form == "text" and (clauses := described_clauses(q.query)):
        seen = replace(seen, turns=clauses)  # the description and the rest, each a view (recall.indirect)
    lexical_query, semantic_query = (seen.lexical, seen.joined) if seen else (None, None)
    listed = situation_text(situation)
    text = " / ".join(t for t in (lexical_query, listed) if t)
    # The words of the query and of the situation, tokenised once each (" / " joins no word):
    # the query's own count is how associative it is.
    words = tokens(lexical_query) if lexical_query else []
    semantic_text = " — ".join(t for t in (semantic_query, expected_vs_actual(situation) if situation else None) if t)
    cues = query_cues(q.query, situation, dict(q.scope)) + query_time_terms(q.query, now_us)
    scene = q.scene or q.scope.get("scene") or q.scope.get("task_type")
    associative = associative_share(seen.form, len(words)) if seen else 0.0
    return Query(
        tenant=q.tenant, text=text, semantic_text=semantic_text, terms=words + tokens(listed) + cues,
        exact=frozenset(c for c in cues if not c.startswith(COORDINATE_PREFIXES)), trigger=q.trigger,
        scope=dict(q.scope), scene=scene, user=q.user or q.scope.get("user"), layers=q.layers,
        budget_tokens=q.budget_tokens, k=q.k, now_us=now_us, decision_key=q.task or q.agent, agent=q.agent,
        views=seen, associative=associative, indirect=bool(seen) and seen.form == "text" and indirect(q.query),
        described=bool(seen) and seen.form == "text" and describes_someone(q.query),
        relative=bool(seen) and seen.form == "text" and describes_relative(q.query),
        emotion=(q.emotion.strip().lower(), EXPLICIT) if q.emotion else infer_emotion(q.query), task=q.task,
        explain=q.explain, system=situation.get("system") or None,
    )
