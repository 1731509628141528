"""Consolidation (design.md §F4, F6; design.md §seed-001-4.2, §6.2): meta-rules and promoted beliefs.

**Promotion** (semantic → procedural): an active belief with confidence ≥
``PROMOTE_CONFIDENCE`` and more than ``PROMOTE_SUPPORT`` supporting events becomes a rule —
"when working on <scene> (with <emotions>), <actions>", its key events as evidence — proposed
once as a cognition that the learner gates like any other.

**Meta-rules** (near-duplicates):

Units of one tenant and layer whose words (condition and action) overlap by at least
``NEAR`` (Jaccard of token sets) but are not the very same lesson (that is the learner's
assimilation) form a group (single link). For each group the job proposes a meta-rule — the
group's best-proven unit's condition and action (most successes, then confidence), the
others named as its evidence — as a cognition record, then a ``units_merged`` decision.
The learner gates the meta-rule like any proposal and absorbs the originals into it
(``unit_absorbed``: kept, no longer injected, evidence of the meta-rule): the learner stays
the one writer of unit states, jobs only propose.

Pairs are compared within blocks that share one of a unit's ``BLOCK_TOKENS`` rarest
words, so the work grows with near neighbours, not with the square of the units.
"""

from __future__ import annotations

from hindbrain.jobs.units import LIVE, UnitRow
from hindbrain.learning.records import decision, derived_id
from hindbrain.projections.unit_states import UNITS_MERGED
from hindbrain.recall.provenance import belief_evidence
from hindbrain.recall.tokenize import tokens
from hindbrain.schemas.records import envelope

JOB = "hindsight.consolidation"
PROMOTE_CONFIDENCE, PROMOTE_SUPPORT = 0.9, 50
NEAR = 0.7
BLOCK_TOKENS = 3
MERGED = UNITS_MERGED
PRODUCER = "hindsight/hindbrain"

def groups(rules: list[UnitRow]) -> list[list[UnitRow]]:
    """Groups (≥ 2) of near-duplicate live rules, each of one tenant, layer and owner."""
    live = [r for r in rules if r.status in LIVE]
    words = [frozenset(tokens(f"{r.condition} {r.action}")) for r in live]
    lesson = [(" ".join(tokens(r.condition)), " ".join(tokens(r.action))) for r in live]
    df: dict[str, int] = {}
    for w in words:
        for t in w:
            df[t] = df.get(t, 0) + 1
    blocks: dict[tuple, list[int]] = {}
    for n, (r, w) in enumerate(zip(live, words, strict=True)):
        for t in sorted(w, key=lambda t: (df[t], t))[:BLOCK_TOKENS]:
            # Never across a privacy boundary: merging one agent's private rules with shared ones
            # (or another agent's) would carry them past the bar of shared memory. Nor across scopes: the
            # same fix learned in prod and in test is a rule of each (the meta-rule would keep one scope's,
            # and absorbing the other left that environment without its rule).
            where = tuple(sorted((str(k), str(v)) for k, v in r.scope.items()))
            blocks.setdefault((r.tenant, r.layer, r.owner, where, t), []).append(n)
    parent = list(range(len(live)))

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for members in blocks.values():
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                if lesson[a] == lesson[b] or root(a) == root(b):
                    continue
                if len(words[a] & words[b]) / len(words[a] | words[b]) >= NEAR:
                    parent[root(b)] = root(a)
    grouped: dict[int, list[UnitRow]] = {}
    for n, r in enumerate(live):
        grouped.setdefault(root(n), []).append(r)
    return [sorted(g, key=lambda r: r.fragment_id) for g in grouped.values() if len(g) >= 2]


def merge(group: list[UnitRow], now_us: int, run_id: str) -> list[tuple[str, dict]]:
    """The meta-rule's cognition record and the ``units_merged`` decision for one group."""
    best = max(group, key=lambda r: (r.successes, r.confidence, r.fragment_id))
    ids = [r.fragment_id for r in group]
    meta = derived_id("fr", "meta", *ids)
    tenant = best.tenant
    env = envelope("cognition", tenant, agent=best.owner, causation_ids=ids, producer=PRODUCER, record_id=meta,
                   ts_us=now_us)  # a meta-rule of private rules stays in their agent's private memory
    cognition = {
        "envelope": env, "fragment_id": meta, "condition": best.condition, "action": best.action,
        # The reason is the representative's own: it renders as the rule's BECAUSE in a prompt, where
        # "merged from 3 rules" would read as the cause. How it was merged is part of its evidence.
        "reason": best.reason or None,
        "evidence": f"merged from {len(group)} near-identical rules (words overlap ≥ {NEAR}); "
                    f"{sum(r.successes for r in group)} verified deliveries across them",
        "scope": {k: str(v) for k, v in best.scope.items()}, "source": best.source, "citation": best.citation,
        "confidence": max(r.confidence for r in group), "seed": False, "event_ids": ids, "entities": [],
    }
    merged = decision(MERGED, tenant, [meta, *ids], ids, f"{len(group)} near-identical rules merge into {meta}; "
                      f"the originals become its evidence", {"meta": meta, "originals": ids,
                                                              "representative": best.fragment_id},
                      now_us, JOB, {"near": NEAR}, f"{run_id}:{meta}", producer=PRODUCER)
    return [("cognition", cognition), merged]


def promotions(beliefs: list, proposed: set[str], now_us: int, run_id: str) -> list[tuple[str, dict]]:
    """Cognition records for the beliefs ready to become rules (not proposed before)."""
    out = []
    for b in beliefs:
        fid = derived_id("fr", "promoted", b.belief_id)
        if b.status != "active" or b.confidence < PROMOTE_CONFIDENCE or b.support <= PROMOTE_SUPPORT or fid in proposed:
            continue
        where = [f"working on {b.condition['scene']}"] if "scene" in b.condition else ["working on such tasks"]
        if "emotions" in b.condition:
            where.append(f"the user feels {' or '.join(b.condition['emotions'])}")
        actions = list(b.actions)
        action = "first " + ", then ".join(actions) if len(actions) > 1 else actions[0]
        env = envelope("cognition", b.tenant, causation_ids=[b.belief_id], producer=PRODUCER, record_id=fid,
                       ts_us=now_us)
        out.append(("cognition", {
            "envelope": env, "fragment_id": fid, "condition": " and ".join(where), "action": action,
            "reason": f"a belief held by outcomes: {b.text}", "evidence": belief_evidence(b.belief_id),
            "scope": {k: str(v) for k, v in b.scope.items()}, "source": "lived", "citation": None,
            "confidence": round(b.confidence, 6), "seed": False, "event_ids": list(b.key_event_ids),
            "entities": [],
        }))
    return out
