"""The records the learner appends: decisions (every learning step) and extracted units.

Ids are derived from what caused them, never random, and times are the causing record's:
processing the same input again (after a crash, before the learner's offset was committed)
appends records with the same ids, which the views deduplicate.
"""

from __future__ import annotations

import hashlib
import json

from hindbrain.schemas.records import envelope

PRODUCER = "learner/hindbrain"
JOB_VERSION = "1"


def derived_id(prefix: str, *parts: str) -> str:
    return f"{prefix}_{hashlib.blake2b('|'.join(parts).encode(), digest_size=16).hexdigest()}"


def decision(kind: str, tenant: str, subject_ids: list[str], evidence_ids: list[str], reason: str, payload: dict,
             ts_us: int, job: str, parameters: dict, cause: str, inputs: dict | None = None,
             producer: str = PRODUCER) -> tuple[str, dict]:
    """A decision record; ``cause`` is the id of the record that triggered it; ``kind`` is a
    ``DecisionKind`` (``hindbrain.schemas.decision_kinds``), stored as its string value."""
    kind = str(kind)  # a StrEnum member is its value: the codec and the views see a plain string
    decision_id = derived_id("dc", kind, cause, *subject_ids)
    env = envelope("decision", tenant, causation_ids=[cause], producer=producer, record_id=decision_id, ts_us=ts_us)
    return "decision", {
        "envelope": env, "decision_id": decision_id, "kind": kind, "subject_ids": subject_ids,
        "evidence_ids": evidence_ids, "inputs_json": json.dumps(inputs or {}, ensure_ascii=False), "reason": reason,
        "decided_by": {"job": job, "version": JOB_VERSION, "parameters_json": json.dumps(parameters, sort_keys=True)},
        "payload_json": json.dumps(payload, ensure_ascii=False, sort_keys=True),
    }


def cognition(tenant: str, fragment_id: str, proposal, confidence: float, ts_us: int, cause: str, agent: str | None,
              task: str | None) -> tuple[str, dict]:
    """An extracted unit as a cognition record (the same record ``brain.learn`` appends),
    at the confidence of its evidence's signal."""
    env = envelope("cognition", tenant, agent=agent, task=task, causation_ids=proposal.event_ids, producer=PRODUCER,
                   record_id=fragment_id, ts_us=ts_us)
    return "cognition", {
        "envelope": env, "fragment_id": fragment_id, "condition": proposal.condition, "action": proposal.action,
        "reason": proposal.reason, "evidence": proposal.evidence,
        "scope": {k: str(v) for k, v in proposal.scope.items()},
        "source": "lived", "citation": None, "confidence": confidence, "seed": False,
        "event_ids": list(proposal.event_ids), "entities": list(proposal.entities),
    }


def is_own(record: dict) -> bool:
    return record["envelope"]["producer"] == PRODUCER
