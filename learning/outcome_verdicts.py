"""Outcome verdicts: what an outcome proves about the units its task applied (the recall it names, ``Credit``),
and the decision records of a unit's lifecycle changes."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from hindbrain.learning import attribution, lifecycle
from hindbrain.learning.learner_state import TenantState
from hindbrain.learning.records import decision
from hindbrain.schemas.decision_kinds import DecisionKind

LIFECYCLE_JOB = "learner.lifecycle"
UNIT_ATTRIBUTED = DecisionKind.UNIT_ATTRIBUTED  # the learner's verdict on an applied unit, when no state changes


class OutcomeVerdicts:
    """``Learner``'s decisions on outcomes, and the decision records of any lifecycle change (``_changes``)."""

    # -- outcomes ----------------------------------------------------------------------------
    def _recall(self, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        scope, situation = record.get("scope") or {}, record.get("situation") or {}
        domain = scope.get("scene") or scope.get("task_type") or situation.get("system")
        t = self._tenant(record["envelope"]["tenant"])
        if domain:
            t.recall_domain[record["recall_id"]] = domain
        task = record["envelope"]["task"]
        if task and situation.get("action") and task not in t.goals:  # the task's first recall names its goal
            t.goals[task] = situation["action"]
        return []

    def _injection(self, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        """What the recall put into the agent's context, kept for the outcome that names it (``_credit``)."""
        t = self._tenant(record["envelope"]["tenant"])
        units = t.units
        # a known unit's id as the unit holds it: 50,000 recalls' ids are then pointers to strings held once (in
        # memory and, pickle memoising them, in the snapshot), not ~80 bytes each again
        recall_id = record["recall_id"]
        t.injected[recall_id] = tuple(u.fragment_id if (u := units.get(i["item_id"])) else i["item_id"]
                                      for i in record["items"] if i["item_kind"] == "fragment")
        if agent := record["envelope"]["agent"]:  # the same recall id object as ``injected``'s key, names interned
            t.recalled_by[recall_id] = sys.intern(lifecycle.agent_identity(agent))
        return []

    def _outcome(self, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        env = record["envelope"]
        t = self._tenant(env["tenant"])
        applied = [fid for fid in dict.fromkeys(record["applied"]) if fid in t.units]
        credit = _credit(t, record["recall_id"], env["record_id"], env["agent"])  # spends the recall, restoring too
        if env["task"]:  # what the task's feedback moves (``_feedback``): the units a recall proves it was given.
            # A claim naming no recall, then "that was wrong" in the task, counted as a proven contradiction:
            # two such tasks of one agent made a seed rule invalid (round thirty-two, docs/security.md).
            t.applied[env["task"]] = [fid for fid in applied if credit.proven and credit.refused(fid) is None]
        if restoring:
            return []
        domain = t.recall_domain.get(record["recall_id"] or "")
        tried = t.tried.get(env["task"] or "", [])
        out = []
        corrected_by = t.recovered.get(env["task"] or "")
        contradicted = t.contradicted.get(env["task"] or "", set())
        for fid in applied:
            if (refusal := credit.refusal(fid)) is not None:  # the recall it names gives this unit no credit
                out.append(self._verdict_only(env, fid, "none", refusal, credit.refused(fid)))
                continue
            if fid in contradicted:  # the recovery counted this failure against it already: only its verdict
                out.append(self._verdict_only(env, fid, "failed", "applied; its action failed and another option "
                                              "worked: debited (already contradicted by the task's recovery)"))
                continue
            if t.units[fid].status == "reviewing" and tried and not attribution.performed(t.units[fid].action, tried):
                # A rule in review reads "X failed here lately" (``recall.pack``): an agent that heeded it did
                # something else, which says nothing for "do X" (credited, it was verified again the next task).
                out.append(self._verdict_only(env, fid, "none", "applied while in review, its action not "
                                              "performed: heeded as a warning, no verdict on it"))
                continue
            # Inside the task, what the unit's own action did decides, not the task's end (design.md §issue-17):
            # applied, failed, then another option succeeded is a failure of this unit.
            worked = attribution.outcome_of(t.units[fid].action, tried, record["success"])
            if not worked and corrected_by not in (None, fid):
                # It failed, and the same task found what works instead: not a flake but
                # evidence against it with an alternative — a contradiction, in review at once.
                out += self._changes(env, fid, lifecycle.on_contradiction(
                    t.units[fid], env["record_id"], f"failed where {corrected_by} worked in the same task",
                    lifecycle.sender_of(env["agent"], env["producer"]), proven=credit.proven),
                    contradiction=True, verdict="failed")
                continue
            # the sender vouches (``sender_of``): an unbound key is one source whatever agents it names
            changes = lifecycle.on_outcome(t.units[fid], worked, domain, env["record_id"],
                                           lifecycle.sender_of(env["agent"], env["producer"]), proven=credit.proven)
            # Utility (``credited`` / ``debited``) counts what an injection proved: a claim naming no recall
            # would raise (or sink) a unit's rank for everyone as surely as it would have promoted it.
            out += self._changes(env, fid, changes, verdict=("worked" if worked else "failed") if credit.proven
                                 else None)
        return out

    def _verdict_only(self, env: dict, fid: str, verdict: str, reason: str, refused: str | None = None
                      ) -> tuple[str, dict]:
        """The attribution of an outcome to unit ``fid`` that changes nothing else about it; ``refused``: why the
        outcome gets no credit (``Credit.refused``), in the payload for an audit to count."""
        self.counts[UNIT_ATTRIBUTED] += 1
        payload = {"verdict": verdict} if refused is None else {"verdict": verdict, "refused": refused}
        return decision(UNIT_ATTRIBUTED, env["tenant"], [fid], [env["record_id"]], reason, payload,
                        env["ts_us"], LIFECYCLE_JOB, {"rule": lifecycle.RULE_VERSION},
                        f"{env['record_id']}:{fid}:verdict")

    def _changes(self, env: dict, fid: str, changes: list[lifecycle.Change], cause: str | None = None,
                 job: str = LIFECYCLE_JOB, contradiction: bool = False, verdict: str | None = None
                 ) -> list[tuple[str, dict]]:
        """The decisions recording ``changes`` to unit ``fid``; ``contradiction`` marks the first one as the
        evidence against it that ``projections.feedback`` counts as the ``contradiction`` signal, ``verdict``
        ("worked" / "failed") as what the unit did in its task (``credited`` / ``debited``: its utility)."""
        out = []
        for change in changes:
            self.counts[change.kind] += 1
            payload = {"unit": lifecycle.state_of(change.unit)}
            if contradiction and not out:
                payload["contradiction"] = True
            if verdict and not out:
                payload["verdict"] = verdict
            if change.kind == DecisionKind.UNIT_REVIEWING and change.unit.contradictions:
                payload["learning"] = "accommodation"  # the evidence does not fit: the unit must change
            out.append(decision(change.kind, env["tenant"], [fid], [env["record_id"]], change.reason, payload,
                                env["ts_us"], job, {"rule": lifecycle.RULE_VERSION, **lifecycle.THRESHOLDS},
                                f"{cause or env['record_id']}:{change.kind}"))
        return out


@dataclass(frozen=True)
class Credit:
    """What an outcome's recall id proves about the units it says it applied (docs/learning.md, round
    twenty-five): a unit is credited or debited only if the recall it names injected it, and only the first
    outcome naming a recall counts. Without a recall id, or with one this tenant's learner never saw (another
    tenant's, or older than ``RECENT`` recalls), nothing proves the unit was in the agent's context: the outcome
    is evidence (``lifecycle.on_outcome``'s ``proven``) that never promotes past verified."""

    recall_id: str | None
    injected: frozenset[str] | None  # what the recall injected; None: no recall id, or an unknown one
    answered_by: str | None  # the outcome that spent the recall before this one

    @property
    def proven(self) -> bool:
        return self.injected is not None

    def refused(self, fid: str) -> str | None:
        """Why the outcome gives ``fid`` nothing (``answered`` / ``not_injected``), or None: it counts."""
        if self.answered_by is not None:
            return "answered"
        if self.injected is not None and fid not in self.injected:
            return "not_injected"
        return None

    def refusal(self, fid: str) -> str | None:
        """``refused``'s reason as the decision says it."""
        why = self.refused(fid)
        if why == "answered":
            return (f"recall {self.recall_id} was answered already by outcome {self.answered_by}: one outcome per "
                    "recall gets credit, this one none (kept on the log)")
        if why == "not_injected":
            return (f"recall {self.recall_id} did not inject it: an outcome credits only what its recall put into "
                    "the agent's context, this one none")
        return None


def _credit(t: TenantState, recall_id: str | None, outcome_id: str, agent: str | None = None) -> Credit:
    """The ``Credit`` of the outcome ``outcome_id`` (sent as ``agent``) naming ``recall_id``; the first outcome naming
    a recall spends it (``answered``), whatever it credits: a second one — another report, or the same one sent
    again — is refused. A recall proves what reached the context of the agent it was made for: an outcome naming
    another agent is evidence only, as one naming no recall, and leaves the recall to its agent (round
    thirty-three: mallory's key, given bot-1's recall ids, debited bot-1's rules as proven failures — three end a
    unit — and bot-1's own report was then refused as "answered already"). An outcome naming no agent, or a recall
    that named none, is not compared: only a bound key's agent is the edge's word (an unbound key names any)."""
    if not recall_id:
        return Credit(None, None, None)
    recalled_by = t.recalled_by.get(recall_id)
    if not lifecycle.speaks_for(agent, recalled_by):
        return Credit(recall_id, None, None)
    answered_by = t.answered.get(recall_id)
    if answered_by is None:
        t.answered[recall_id] = outcome_id
    injected = t.injected.get(recall_id)
    return Credit(recall_id, None if injected is None else frozenset(injected), answered_by)
