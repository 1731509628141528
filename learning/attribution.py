"""Attribution inside a task (design.md §issue-17): which applied unit an outcome is evidence for.

An agent reports one outcome per task: ``outcome(applied=[...], success=...)``. When it applied
a rule, performed the rule's action, hit an anomaly, then tried another option that worked, the
task succeeded — but the rule failed. Crediting it with the task's success kept a falsified
rule alive and injected. So the learner keeps each task's performed actions (perceived events
with an ``action``: failed or succeeded, in order) and judges each applied unit by what *its*
action did:

* its action was performed and failed, and never succeeded afterwards → a failure of the unit,
  whatever the task's end;
* its action was performed and succeeded → a success;
* its action was not performed at all (or not perceived) → the task's outcome, as before.

"Its action was performed" means the performed action's informative words are (mostly) words
of the unit's action ("submit the change as admin" performed; "switch to the admin account and
submit the change" the unit's action). Pure functions, no IO.
"""

from __future__ import annotations

from functools import lru_cache

from hindbrain.recall.tokenize import tokens

MATCH = 0.6  # share of a performed action's informative words the unit's action must hold
_STOP = frozenset({"a", "an", "the", "to", "of", "in", "on", "for", "with", "as", "and", "or", "then", "first", "do",
                   "it", "this", "that", "by", "at", "from", "use", "try", "again"})


@lru_cache(maxsize=1 << 14)
def words(action: str) -> frozenset[str]:
    """An action's informative words (CJK as bigrams). Cached: a fleet repeats its actions and
    identities, and the learner asks this of every perceived event (issue 28: ~20 µs an event)."""
    return frozenset(t for t in tokens(action or "") if t not in _STOP)


def performs(unit_action: frozenset[str], performed: frozenset[str]) -> bool:
    """Whether a performed action is the unit's action."""
    return bool(performed) and len(performed & unit_action) >= MATCH * len(performed)


def outcome_of(unit_action: str, tried: list[tuple[frozenset[str], bool]], task_success: bool) -> bool:
    """Whether the unit worked in this task (see the module docstring). ``tried``: the task's
    performed actions in order, each (its words, it failed)."""
    mine = words(unit_action)
    results = [failed for performed, failed in tried if performs(mine, performed)]
    if not results:
        return task_success
    return not results[-1]  # the last time its action was performed decides


def performed(unit_action: str, tried: list[tuple[frozenset[str], bool]]) -> bool:
    """Whether the unit's action is among the task's performed actions at all."""
    mine = words(unit_action)
    return any(performs(mine, done) for done, _ in tried)
