"""The decisions read from the log that change a tenant's index after its documents were added
(``INDEX_DECISIONS``): a merge, an A/B window, a pending conflict, cold storage, a share, a superseded statement,
outdated events, and a unit's new state (``set_state``)."""

from __future__ import annotations

import json

from hindbrain.projections import unit_states
from hindbrain.recall.arms import WINDOW_OPENED, WINDOW_SETTLED
from hindbrain.recall.documents import LAYER_CODE, SHARED, TRAIT_RUNG, cold_summary
from hindbrain.recall.tokenize import estimate_tokens
from hindbrain.schemas.decision_kinds import DecisionKind

EVENTS_MERGED = DecisionKind.EVENTS_MERGED  # write hygiene: the subjects were merged into a newer event
WINDOW_KINDS = (WINDOW_OPENED, WINDOW_SETTLED)  # a conflict's A/B window (jobs.windows)
CONFLICT_PENDING = DecisionKind.CONFLICT_PENDING  # two units, the same condition, different actions (jobs.forgetting)
EVENTS_COLD = DecisionKind.EVENTS_COLD  # cold storage: summary and vector kept in memory (jobs.archive)
UNIT_SUPERSEDED = DecisionKind.UNIT_SUPERSEDED  # a user's newer statement: the old one's own words go with it
EVENTS_OUTDATED = DecisionKind.EVENTS_OUTDATED  # change detection (learning.change_detection): an option that now fails
INDEX_DECISIONS = (EVENTS_MERGED, *WINDOW_KINDS, CONFLICT_PENDING, EVENTS_COLD, unit_states.UNIT_SHARED,
                   UNIT_SUPERSEDED, EVENTS_OUTDATED)


class IndexDecisions:
    """``TenantIndex``'s changes by decision (a base class of methods, no state of its own: they read the
    index's ``by_id``, ``docs``, ``windows`` and its layer and owner columns, and count a column's change in
    ``_changed``, which ``visible_mask`` reads). The same whether a decision was just appended or is read back
    on load."""

    def set_state(self, doc_id: str, status: str, confidence: float | None, rung: str | None = None) -> None:
        no = self.by_id.get(doc_id)
        if no is not None:
            self.docs[no].status = status
            if confidence is not None:
                self.docs[no].confidence = confidence
            if rung == TRAIT_RUNG:  # an approved trait moves to the identity layer
                self.docs[no].layer = "identity"
                self._layers[no] = LAYER_CODE["identity"]
                self._changed += 1

    def apply_decision(self, kind: str, subject_ids: list[str], payload_json: str | None = None) -> None:
        """What a decision of ``INDEX_DECISIONS`` changes here; the same whether it was just
        appended or is read back on load (only a share reads the payload)."""
        if kind == EVENTS_MERGED:
            for event_id in subject_ids:
                self.set_state(event_id, "merged", None)
        elif kind in WINDOW_KINDS:
            self.apply_window(kind, subject_ids)
        elif kind == CONFLICT_PENDING:
            self.add_conflict(*subject_ids[:2])
        elif kind == EVENTS_COLD:
            self.cool(subject_ids)
        elif kind == unit_states.UNIT_SHARED:
            self.share(subject_ids[0], json.loads(payload_json).get("unit") if payload_json else None)
        elif kind == UNIT_SUPERSEDED:
            self.supersede_statements(subject_ids)
        elif kind == EVENTS_OUTDATED:
            for event_id in subject_ids:
                self.set_state(event_id, "outdated", None)

    def supersede_statements(self, fragment_ids: list[str]) -> None:
        """The statements a superseded unit was extracted from are superseded with it: the
        user's own old words ("always bullet points") must not come back beside the new rule."""
        for fragment_id in fragment_ids:
            no = self.by_id.get(fragment_id)
            for event_id in self.docs.peek(no).event_ids if no is not None else ():
                self.set_state(event_id, "superseded", None)

    def cool(self, event_ids: list[str]) -> None:
        """Cold storage: these events keep a summary (and their vector); the full text is
        dropped from memory (the log keeps it)."""
        for event_id in event_ids:
            no = self.by_id.get(event_id)
            if no is not None:
                doc = self.docs[no]
                doc.text = cold_summary(doc.text)
                doc.tokens = estimate_tokens(doc.text)

    def add_conflict(self, a: str, b: str) -> None:
        """A conflict pending between two units: the gate keeps whichever ranks higher."""
        for one, other in ((a, b), (b, a)):
            no = self.by_id.get(one)
            if no is not None:
                self.docs[no].conflicts = self.docs[no].conflicts | {other}

    def apply_window(self, kind: str, subject_ids: list[str]) -> None:
        """``ab_window_opened`` / ``ab_window_settled`` (subjects: window, belief A, belief B)."""
        window_id, a, b = subject_ids[:3]
        if kind == WINDOW_KINDS[0]:
            self.windows[window_id] = (a, b)
        else:
            self.windows.pop(window_id, None)

    def share(self, doc_id: str, unit: dict | None = None) -> None:
        """A private unit was verified: every agent may recall it now. ``unit`` (the decision's
        state of it) says who stands behind it; verified by one agent only, it keeps its
        provenance."""
        no = self.by_id.get(doc_id)
        if no is not None:
            doc = self.docs[no]
            agents = list((unit or {}).get("agents") or ([doc.owner] if doc.owner else []))
            # ``fleet`` (lifecycle.Unit): shared because the fleet verified it; a payload from
            # before design.md §issue-17 has no flag, and then only the fleet's verification shared a unit
            if unit is not None and not unit.get("fleet", True):
                doc.provenance = {"learned_by": agents[0] if agents else None, "agents": len(agents),
                                  # deliveries (``lifecycle.deliveries``): successes no injection proved left out
                                  "verified": int(unit.get("successes") or 0) - int(unit.get("unproven") or 0)}
            else:
                doc.provenance, doc.fleet = None, True
            doc.owner = None
            self._owners[no] = SHARED
            self._changed += 1
