"""The three arms a simulated fleet runs with, behind one small interface: no memory,
naive RAG (store every event, inject the top-k by similarity, no gate, no feedback), and
hindbrain through its public SDK — exactly the calls a real agent makes."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from hindbrain.recall.tokenize import estimate_tokens

RULE_LAYERS = ("identity", "knowledge", "experience")


@dataclass(frozen=True)
class Injected:
    id: str
    text: str
    tokens: int


class Ledger:
    """Where an arm's task results go: outcome records in a brain, under the arm's tenant,
    so the report is SQL over the views like any other analytics (``hindbrain report``).
    With ``recall_of`` (hindbrain's own arm) the outcome is the real SDK outcome: it names
    the task's recall and credits what was applied; a baseline's credits nothing."""

    def __init__(self, brain=None, tenant: str | None = None, recall_of: dict[str, str] | None = None):
        self.brain, self.tenant, self.recall_of = brain, tenant, recall_of
        self.world = ""  # set by the run: which world's rounds these are

    def final(self, task, success: bool, steps: int, applied: list[str], notes: dict) -> None:
        if self.brain is None:
            return
        credit = {} if self.recall_of is None else {"applied": applied,
                                                    "recall_id": self.recall_of.get(task.task_id)}
        self.brain.outcome(tenant=self.tenant, agent=task.agent, task=task.task_id, success=success, steps=steps,
                           notes=json.dumps({**notes, "world": self.world, "final": True}), **credit)


class NoMemory:
    name = "no memory"

    def __init__(self, ledger: Ledger | None = None):
        self.ledger = ledger or Ledger()

    def recall(self, task, **query) -> list[Injected]:
        return []

    def perceive(self, task, **fields) -> None:
        pass

    def outcome(self, task, applied: list[str], success: bool, steps: int) -> None:
        pass

    def end_round(self) -> None:
        pass


class NaiveRag:
    """Every event's text (with its structured fields) is stored; a recall injects the
    ``k`` most similar by TF-IDF cosine over hashed words and bigrams, ungated."""

    name = "naive RAG"

    def __init__(self, k: int = 5, ledger: Ledger | None = None):
        from sklearn.feature_extraction.text import HashingVectorizer

        self.k, self.ledger = k, ledger or Ledger()
        self.vectorizer = HashingVectorizer(n_features=2 ** 18, ngram_range=(1, 2), alternate_sign=False,
                                            norm="l2")
        self.texts: list[str] = []
        self.rows = []

    def perceive(self, task, **fields) -> None:
        parts = [fields.get("text") or ""]
        parts += [f"{k}: {fields[k]}" for k in ("system", "identity", "action", "expected", "actual")
                  if fields.get(k)]
        parts += [f"{k}: {v}" for k, v in (fields.get("scope") or {}).items()]
        text = " — ".join(p for p in parts if p)
        self.texts.append(text)
        self.rows.append(self.vectorizer.transform([text]))

    def recall(self, task, query: str = "", situation: dict | None = None, scope: dict | None = None,
               **_) -> list[Injected]:
        if not self.texts:
            return []
        from scipy.sparse import vstack

        words = " ".join([query, *(situation or {}).values(), *(f"{k}: {v}" for k, v in (scope or {}).items())])
        q = self.vectorizer.transform([words])
        scores = (vstack(self.rows) @ q.T).toarray().ravel()
        best = np.argsort(-scores, kind="stable")[: self.k]
        return [Injected(f"ev{n}", self.texts[n], estimate_tokens(self.texts[n])) for n in best if scores[n] > 0]

    def outcome(self, task, applied: list[str], success: bool, steps: int) -> None:
        pass  # naive RAG takes no feedback

    def end_round(self) -> None:
        pass


class Hindbrain:
    """The brain through its SDK: perceive, recall (gated, within a budget), outcome. At a
    task's start and on an anomaly the agent recalls with the default layers (``rule_layers_at_start``:
    rules only at the start, the earlier policy)."""

    name = "hindbrain"

    def __init__(self, brain, tenant: str, budget_tokens: int = 160, rule_layers_at_start: bool = False):
        self.brain, self.tenant, self.budget = brain, tenant, budget_tokens
        self.rule_layers_at_start = rule_layers_at_start  # True: task-start recalls ask for the rule layers only
        self._recall_of: dict[str, str] = {}
        self.ledger = Ledger(brain, tenant, self._recall_of)

    def perceive(self, task, **fields) -> None:
        self.brain.perceive(tenant=self.tenant, agent=task.agent, task=task.task_id, **fields)

    def recall(self, task, **query) -> list[Injected]:
        if query.get("trigger") == "task_start" and self.rule_layers_at_start:  # rules, not the timeline
            query = {**query, "layers": list(RULE_LAYERS)}
        pack = self.brain.recall(tenant=self.tenant, agent=task.agent, task=task.task_id, budget_tokens=self.budget,
                                 **query)
        self._recall_of[task.task_id] = pack.recall_id
        return [Injected(i.id, i.text, i.tokens) for i in (*pack.briefing, *pack.items)]

    def outcome(self, task, applied: list[str], success: bool, steps: int) -> None:
        self.brain.outcome(tenant=self.tenant, agent=task.agent, task=task.task_id, applied=applied, success=success,
                           recall_id=self._recall_of.get(task.task_id), steps=steps)

    def end_round(self) -> None:
        self.brain.hindsight()  # the nightly batch: beliefs from the day's tasks

