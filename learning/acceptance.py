"""Acceptance: the write gate's decision on each proposed unit (rejected, held, accepted, or absorbed into the
same lesson known already) and the ids and lessons that make a proposal the same one again."""

from __future__ import annotations

import json
from dataclasses import replace

from hindbrain.learning import extract, lifecycle, write_gate
from hindbrain.learning.learner_state import TenantState
from hindbrain.learning.lifecycle import Unit
from hindbrain.learning.records import cognition, decision, derived_id
from hindbrain.projections.fragments import initial_confidence, private_to
from hindbrain.recall.tokenize import tokens
from hindbrain.schemas.decision_kinds import DecisionKind

GATE_JOB = "learner.write_gate"
EXTRACT_JOB = "learner.extract"


class Acceptance:
    """``Learner``'s decisions on proposals (a caller's ``learn``, a seed file, an extraction)."""

    def _propose(self, env: dict, proposal: extract.Proposal, n: int = 0) -> list[tuple[str, dict]]:
        """An extracted unit (the ``n``-th from its cause): its cognition record, then the gate's decision on it."""
        self.counts["extracted"] += 1
        fragment_id = proposal_id(env, proposal, n)
        confidence = lifecycle.SIGNAL_CONFIDENCE[proposal.signal]
        # A unit from someone's explicit word (a user's stated preference, an explicit approval)
        # is theirs, not the relaying agent's experience: it goes to the shared memory at once.
        agent = None if proposal.signal == "explicit" else env["agent"]
        rt, record = cognition(env["tenant"], fragment_id, proposal, confidence, env["ts_us"], env["record_id"],
                               agent, env["task"])
        inputs = {"rule": proposal.rule, "coordinates": {k: v for k, v in proposal.coordinates.items() if v},
                  "signal": proposal.signal}
        return [(rt, record), *self._gate(record, confidence, inputs, EXTRACT_JOB)]

    @staticmethod
    def _restore_taught(t: TenantState, env: dict, proposal: extract.Proposal, taught: str, key) -> list:
        """While restoring, a proposal the running learner made here is not made again (its records are in
        the log), but what it taught must be known as it was: ``t.<taught>[key]`` is set to the unit the
        gate leaves standing once its decision is folded (``_apply``). Without it a reopened learner never
        broke a routine it had taught before the restart."""
        t.teaching[proposal_id(env, proposal)] = (taught, key)
        return []

    # -- proposals ---------------------------------------------------------------------------
    def _cognition(self, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        if record.get("scope"):  # folded while restoring too: change detection asks where a unit holds
            self._tenant(record["envelope"]["tenant"]).scopes[record["fragment_id"]] = dict(record["scope"])
        if restoring:
            return []
        return self._gate(record, initial_confidence(record), {"proposed_by": record["envelope"]["producer"]},
                          GATE_JOB)

    def _gate(self, record: dict, confidence: float, inputs: dict, job: str) -> list[tuple[str, dict]]:
        env, fid = record["envelope"], record["fragment_id"]
        t = self._tenant(env["tenant"])
        if record.get("scope"):
            t.scopes[fid] = dict(record["scope"])
        if fid in t.units:  # the same proposal again (a seed file imported twice): already decided
            self.counts["repeated_proposals"] += 1
            return []
        params = {"checks": list(write_gate.CHECKS), "hold_below": lifecycle.HOLD_BELOW, "rule": lifecycle.RULE_VERSION}
        evidence = list(record["event_ids"])
        owner = private_to(env["agent"], record["seed"])
        sender = lifecycle.sender_of(env["agent"], env["producer"])  # the source fleet verification counts
        unit = Unit(fid, "candidate", confidence, record["source"], record["condition"], record["action"],
                    evidence=tuple(evidence), agents=(sender,) if sender else (), shared=owner is None)
        failed = write_gate.failed_check(record["condition"], record["action"])
        if failed:
            check, why = failed
            self.counts["rejected"] += 1
            return [decision(DecisionKind.UNIT_REJECTED, env["tenant"], [fid], evidence, f"fails '{check}': {why}",
                             {"unit": lifecycle.state_of(replace(unit, status="rejected")), "check": check},
                             env["ts_us"], job, params, fid, inputs)]
        known = t.lessons.get(lesson_key(record["source"], record["condition"], record["action"], record.get("scope")))
        # A proposal that cites the known unit as its evidence (a meta-rule) is not that unit again.
        if known and known != fid and known in t.units and known not in record["event_ids"]:
            changes = (lifecycle.on_repetition(t.units[known], fid, sender)
                       if repeated_proposal(job, sender, t.units[known]) else
                       lifecycle.on_assimilation(t.units[known], confidence, fid, sender))
            absorbed = {"unit": lifecycle.state_of(replace(unit, status="absorbed")), "into": known,
                        "learning": "assimilation"}
            return [decision(DecisionKind.UNIT_ABSORBED, env["tenant"], [fid], [known],
                             f"the same lesson as {known}: absorbed into it as evidence (assimilation)", absorbed,
                             env["ts_us"], job, params, fid, inputs),
                    *self._changes(env, known, changes, cause=fid, job=job)]
        status = lifecycle.initial_status(confidence)
        kind = DecisionKind.UNIT_HELD if status == "held" else DecisionKind.UNIT_ACCEPTED
        reason = (f"confidence {confidence:.2f} < {lifecycle.HOLD_BELOW}: waits in the holding area for more evidence"
                  if status == "held" else
                  f"passes the four checks; starts in observation as a candidate at confidence {confidence:.2f}")
        layer = "knowledge" if record["source"] == "read" else "experience"
        accepted = replace(unit, status=status)
        out = [decision(kind, env["tenant"], [fid], evidence, reason,
                        {"unit": lifecycle.state_of(accepted), "layer": layer,
                         "checks": list(write_gate.CHECKS)}, env["ts_us"], job, params, fid, inputs)]
        if status == "candidate" and inputs.get("rule") in (extract.RECOVERY_RULE, extract.ROUTINE_RULE):
            routine = inputs.get("rule") == extract.ROUTINE_RULE
            out += self._changes(env, fid, lifecycle.sharing_recovered(accepted, env["task"], routine), cause=fid,
                                 job=job)
        return out


def repeated_proposal(job: str, agent: str | None, unit: Unit) -> bool:
    """Whether a proposal of the unit's lesson is its agent's word again: a caller's own ``learn`` (the write
    gate's job) by an agent already among the unit's sources. The extractor's proposals are not: each rests
    on other events (another task's failure and fix), independent evidence even from one agent."""
    return job == GATE_JOB and agent is not None and lifecycle.among_agents(agent, unit.agents)


def proposal_id(env: dict, proposal: extract.Proposal, n: int = 0) -> str:
    """The unit id of the ``n``-th proposal caused by the record ``env``: the same when the log is folded again."""
    return derived_id("fr", proposal.rule, env["record_id"], *([str(n)] if n else []))


def taught_unit(proposed: list[tuple[str, dict]]) -> str | None:
    """The unit a proposal's records leave standing: the accepted one, or the one it was absorbed into."""
    for rt, r in proposed:
        if rt == "decision" and (left := taught_by(r)) is not None:
            return left
    return None


def taught_by(decision_record: dict) -> str | None:
    """The unit a gate decision on a proposal leaves standing, if it is one that does."""
    if decision_record["kind"] in (DecisionKind.UNIT_ACCEPTED, DecisionKind.UNIT_HELD):
        return decision_record["subject_ids"][0]
    if decision_record["kind"] == DecisionKind.UNIT_ABSORBED:
        return json.loads(decision_record["payload_json"]).get("into")
    return None


def lesson_key(source: str, condition: str, action: str, scope: dict | None = None) -> tuple:
    """What makes two proposals the same lesson: its words, and where it was learned (design.md §issue-29).
    The same fix learned in prod and in test is two units, each scoped where it holds: absorbed into the
    first, the second scope's agents never saw it (the gate cuts a rule whose scope names another value)."""
    where = tuple(sorted((str(k), str(v)) for k, v in (scope or {}).items()))
    return source, " ".join(tokens(condition)), " ".join(tokens(action)), where
