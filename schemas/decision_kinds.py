"""Every kind of ``decision`` record, in one typed registry.

A decision is the learner's, a job's or a person's verdict, appended to the log like everything
else (docs/design.md §decisions). Its ``kind`` is stored as the string value below: the log is
immutable, so a value never changes once written; a new kind is a new member. ``DecisionKind``
is a ``StrEnum``: a member equals its string, so rows read back from the views compare equal.

Two kinds that look alike are different verdicts on purpose:

* ``UNIT_DISPROVEN`` (``"unit_invalid"``): the learner's — the unit was applied and the tasks
  failed often enough (``lifecycle.INVALID_AFTER``) that the evidence proves it wrong;
* ``UNIT_INVALIDATED`` (``"unit_invalidated"``): a person's (``Brain.invalidate``) — the
  environment changed, so a unit that was right is no longer true. No evidence is needed, and
  the audit shows who decided.
"""

from __future__ import annotations

from enum import StrEnum


class DecisionKind(StrEnum):
    # a proposed unit at the write gate (learning.learner, learning.write_gate)
    UNIT_ACCEPTED = "unit_accepted"  # passes the four checks: a candidate in observation
    UNIT_HELD = "unit_held"  # passes, but its confidence is low: waits in the holding area
    UNIT_REJECTED = "unit_rejected"  # fails a check of the write gate
    UNIT_ABSORBED = "unit_absorbed"  # the same lesson as a known unit: absorbed into it
    UNIT_RELEASED = "unit_released"  # a held unit gathered the evidence to become a candidate
    UNIT_ASSIMILATED = "unit_assimilated"  # the same lesson again: the known unit's confidence rises
    # a unit's life by its outcomes (learning.lifecycle)
    UNIT_VERIFIED = "unit_verified"
    UNIT_STABLE = "unit_stable"
    UNIT_EVIDENCE = "unit_evidence"  # one more outcome, no change of status
    UNIT_REVIEWING = "unit_reviewing"
    UNIT_DISPROVEN = "unit_invalid"  # the learner's: failures proved it wrong (module docstring)
    UNIT_SKILL = "unit_skill"  # verified in enough tasks: a skill
    UNIT_SHARED = "unit_shared"  # a private unit cleared the bar of shared memory
    UNIT_SUPERSEDED = "unit_superseded"  # a newer statement of the same fact replaces it
    UNIT_ARCHIVED = "unit_archived"  # over capacity: archived by a job's proposal
    # a unit decision came again later on the log (a producer's retry, a replay): it counts once, at its first
    # place, so the learner restates the unit's state of now after it (learning.learner, ``_again``)
    UNIT_RESTATED = "unit_restated"
    UNIT_ATTRIBUTED = "unit_attributed"  # the learner's verdict on an applied unit, when no state changes with it
    EVENTS_OUTDATED = "events_outdated"  # older successes of an option that now fails: the world changed
    # a person's (Brain.approve, Brain.invalidate)
    TRAIT_PROPOSED = "trait_proposed"  # a skill in enough domains: proposed as a character trait
    TRAIT_APPROVED = "trait_approved"
    TRAIT_DECLINED = "trait_declined"
    UNIT_INVALIDATED = "unit_invalidated"  # a person's: the environment changed (module docstring)
    # the jobs' (jobs/)
    UNITS_MERGED = "units_merged"
    UNITS_EVICTED = "units_evicted"
    UNIT_DECAYED = "unit_decayed"
    CONFLICT_PENDING = "conflict_pending"
    EVENTS_COLD = "events_cold"
    EVENTS_MERGED = "events_merged"
    FEEDBACK_DEFERRED = "feedback_deferred"
    BELIEF_INDUCED = "belief_induced"
    AB_WINDOW_OPENED = "ab_window_opened"
    AB_WINDOW_SETTLED = "ab_window_settled"
    HINDSIGHT_RUN = "hindsight_run"
