"""The gate between ranking and the prompt (foundation version: scope, duplicates, budget).

Pure: candidates in, (selected, cut) out. Every cut says why, and the recall record keeps
it. The full gate (conflicts, credibility, injection value) comes with the recall engine.
"""

from __future__ import annotations


def scope_conflict(item_scope: dict, recall_scope: dict) -> str | None:
    """A scope coordinate both sides name with different values (e.g. env=prod vs test)."""
    for key, value in item_scope.items():
        if key in recall_scope and recall_scope[key] != value:
            return f"scope {key}={value} does not match {key}={recall_scope[key]}"
    return None


def select(candidates: list[dict], budget_tokens: int, k: int | None, scope: dict) -> tuple[list[dict], list[dict]]:
    """Walk candidates best first; keep those in scope, not duplicated, within budget.

    A candidate is a dict with at least ``id``, ``text``, ``tokens``, ``scope``.
    """
    selected, cut, seen_texts, used = [], [], set(), 0
    for c in candidates:
        reason = scope_conflict(c["scope"], scope)
        if reason is None and c["text"] in seen_texts:
            reason = "duplicate of a better-ranked item"
        if reason is None and k is not None and len(selected) >= k:
            reason = f"beyond k={k}"
        if reason is None and used + c["tokens"] > budget_tokens:
            reason = f"{c['tokens']} tokens do not fit the {budget_tokens - used} left of the budget"
        if reason:
            cut.append({"id": c["id"], "reason": reason})
            continue
        selected.append(c)
        seen_texts.add(c["text"])
        used += c["tokens"]
    return selected, cut
