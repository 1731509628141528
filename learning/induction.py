"""Induction: the rules that learn units from events (a recovery in a task or across tasks, a routine, repeated
negative feedback, a correction, a stated preference and what it supersedes)."""

from __future__ import annotations

from dataclasses import replace

from hindbrain.learning import attribution, extract, lifecycle
from hindbrain.learning.acceptance import EXTRACT_JOB, proposal_id, taught_unit
from hindbrain.learning.learner_state import TenantState, failure_record, option_key, report_key
from hindbrain.learning.records import decision
from hindbrain.schemas.decision_kinds import DecisionKind


class Induction:
    """``Learner``'s rules that propose units from what the agents perceived; they read the learner's
    ``counts`` and ``extractor`` and propose through ``Acceptance._propose``."""

    def _supersede(self, t: TenantState, env: dict, proposal: extract.Proposal,
                   proposed: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
        """A newer explicit preference of the same user on the same subject supersedes the older
        one (design.md §issue-17: "no more bullet points" after "always bullet points"): the old unit is kept,
        marked ``superseded`` by a decision naming the newer one, and no longer injected."""
        accepted = [r for rt, r in proposed if rt == "decision" and r["kind"] == DecisionKind.UNIT_ACCEPTED]
        if not accepted:
            return []
        newer = accepted[0]["subject_ids"][0]
        said = extract.preference_subject(proposal.action)
        out = []
        for unit in list(t.units.values()):
            if unit.fragment_id == newer or unit.status not in lifecycle.LIVE or unit.condition != proposal.condition:
                continue
            shared = said & extract.preference_subject(unit.action)
            if not shared:
                continue  # another subject of the same user: both preferences stand
            state = lifecycle.state_of(replace(unit, status="superseded"))
            out.append(decision(DecisionKind.UNIT_SUPERSEDED, env["tenant"], [unit.fragment_id], [newer],
                                f"superseded by the newer statement {newer} on {', '.join(sorted(shared)[:4])}: "
                                "kept, no longer injected", {"unit": state, "by": newer}, env["ts_us"], EXTRACT_JOB,
                                {"rule": "supersede/1"}, newer))
        return out

    def _recover(self, t: TenantState, success: dict, restoring: bool) -> list[tuple[str, dict]]:
        env = success["envelope"]
        failures = t.failures.pop(env["task"])
        goal = t.goals.get(env["task"])
        failed = tuple(f.get("action") for f in failures if f.get("action"))
        for failure in reversed(failures):
            proposal = extract.recovery(failure, success, goal, failed)
            if proposal and restoring:
                self._restore_taught(t, env, proposal, "recovered", env["task"])
                return self._outdate(t, failures, success, proposal_id(env, proposal), restoring)
            if proposal:
                proposed = self._propose(env, proposal)
                if taught := taught_unit(proposed):
                    t.recovered[env["task"]] = taught
                return proposed + self._outdate(t, failures, success, taught)
        if self.extractor is None or restoring:
            return []
        self.counts["extractor_calls"] += 1
        out = []
        for n, proposal in enumerate(self.extractor.extract([*map(failure_record, failures), success])):
            out += self._propose(env, proposal, n)
        return out

    def _recover_across(self, t: TenantState, success: dict, key: tuple) -> list[tuple[str, dict]]:
        """``recovery/1`` across tasks (design.md §issue-29): the first success of an option in a system and scope
        where other options failed before, in any task of the tenant, teaches the same lesson as a failure then
        a success in one task would. With failure reports shared (``recall.event_documents.system_report``) most agents
        succeed at the first try and no single task holds the trajectory, so without it the fleet's knowledge
        stayed a handful of raw events in every prompt and never became a rule that answers."""
        tried = (key[1], key[3])
        failures = [f for f in t.reports.get(report_key(key), []) if (o := option_key(f)) and (o[1], o[3]) != tried]
        if not failures:
            return []
        env = success["envelope"]
        failed = tuple(f.get("action") for f in failures if f.get("action"))
        proposal = extract.recovery(failures[-1], success, t.goals.get(env["task"] or ""), failed)
        return self._propose(env, proposal) if proposal else []

    def _routine(self, t: TenantState, success: dict, key: tuple, restoring: bool = False) -> list[tuple[str, dict]]:
        """``routine/1``: the option's successes by independent agents since it last failed here, once they are
        ``extract.ROUTINE_AGENTS`` and no live rule of the system already names it in this scope, become a rule
        (proposed once per option; a failure starts the count again). A shared fact about the system, like
        its reports: it reaches the fleet at once, as a recovery does."""
        seen = t.routine.setdefault(key, {})
        if seen is None:
            return []  # taught already
        env = success["envelope"]
        # by sender (``sender_identity``): an API key bound to no agent naming a1 and a2 is one, not two agents
        seen[lifecycle.sender_identity(env.get("agent"), env.get("producer"))] = success
        if len(seen) < extract.ROUTINE_AGENTS:
            return []  # the units are scanned only once the count is reached, not on every success
        t.routine[key] = None
        where = dict(key[2])
        if any(key[0].lower() in u.condition.lower() and key[1] | key[3] <= attribution.words(u.action)
               and {k: str(v) for k, v in (t.scopes.get(u.fragment_id) or {}).items()} == where
               for u in t.units.values() if u.status in lifecycle.LIVE):
            return []  # a rule says it already
        proposal = extract.routine(list(seen.values()), t.goals.get(success["envelope"]["task"] or ""))
        if proposal is None:
            return []
        if restoring:
            return self._restore_taught(t, success["envelope"], proposal, "routines", key)
        proposed = self._propose(success["envelope"], proposal)
        if taught := taught_unit(proposed):
            t.routines[key] = taught
        return proposed

    def _feedback(self, t: TenantState, record: dict, restoring: bool) -> list[tuple[str, dict]]:
        env = record["envelope"]
        applied = t.applied.get(env["task"] or "", [])
        topic = extract.topic_of(record)
        if record["polarity"] > 0:
            for fid in applied:
                if fid in t.units:
                    t.set_unit(lifecycle.on_positive_feedback(t.units[fid]))
            proposal = extract.correction(topic, t.negatives.get(topic, []), record) if topic else None
            if proposal:  # an explicit confirmation of the change: the criticism taught a rule
                t.negatives[topic] = []
                return [] if restoring else self._propose(env, proposal)
            return []
        out = []
        if not restoring:
            for fid in applied:
                if fid in t.units:
                    # a user correcting what it said, in the words of whoever sent the feedback: nothing proves a
                    # person said it, so one sender may doubt the unit, not end it (``on_perceived_contradiction``:
                    # three of one user's complaints made an operator's rule invalid for every agent, round
                    # thirty-three, docs/security.md "A recall's outcome is its agent's")
                    sender = lifecycle.sender_of(env["agent"], env["producer"])
                    out += self._changes(env, fid, lifecycle.on_perceived_contradiction(
                        t.units[fid], env["record_id"], "contradicted", sender),
                        contradiction=True)
        if topic:
            negatives = t.negatives.setdefault(topic, [])
            negatives.append(record)
            proposal = extract.feedback_rule(topic, negatives)
            if proposal:  # cleared while restoring too, so a reopened learner counts from the same point
                t.negatives[topic] = []
            if restoring:
                return out
            if proposal:
                out += self._propose(env, proposal)
            else:
                evidence = [e["envelope"]["record_id"] for e in negatives]
                reason = (f"{len(negatives)} of {extract.NEGATIVES_FOR_A_RULE} negative feedback events on "
                          f"{topic}: one negative never creates a rule")
                out.append(decision(DecisionKind.FEEDBACK_DEFERRED, env["tenant"], [env["record_id"]], evidence, reason,
                                    {"topic": topic, "negatives": len(negatives)}, env["ts_us"], EXTRACT_JOB,
                                    {"negatives_for_a_rule": extract.NEGATIVES_FOR_A_RULE}, env["record_id"]))
        return out
