"""One ``event_id``, one event: a perception sent again with its id is the same event only if it
says the same thing.

A caller's ``event_id`` makes a retry idempotent (``hindbrain.Client`` sends one with every
perception, so a request whose answer was lost can be sent again). The same id with other
content is not a retry: it is a second, different event claiming the first one's identity, and
it would leave three answers (the log keeping both, the ``events`` view the second, recall the
first). So it is refused, naming the id, and nothing is written. What "the same" compares:
what the event says and where it belongs (text, action, kind, agent, scope, session, origin,
speaker), not its timestamp, which a retry may set anew.

A caller's ``fragment_id`` is the same promise for a unit (round twenty-five, docs/security.md): an agent
key that sent a seed's id with its own rule left the log with both, the ``fragments`` view (SQL, explain,
and the index once rebuilt from it) with the agent's words under the seed's id and its trust, and recall
with the seed until the next rebuild. ``unit_conflict`` refuses it, naming ``fragment_id``.
"""

from __future__ import annotations

from hindbrain.projections.fragments import private_to
from hindbrain.recall.documents import Doc
from hindbrain.recall.event_documents import event_doc
from hindbrain.recall.index import RecallIndex
from hindbrain.schemas.api import InvalidInput


def signature(doc: Doc) -> tuple:
    """What makes two versions of an event the same event."""
    return (doc.text, doc.action, doc.event_kind, doc.owner, tuple(sorted(doc.scope.items())), doc.session,
            doc.origin, doc.speaker)


def record_signature(record: dict) -> tuple:
    """``signature`` of a perception record not yet indexed."""
    env = record["envelope"]
    return signature(event_doc(env["record_id"], record, 0, env.get("agent"))[0])


def conflict(index: RecallIndex, record: dict, earlier: dict[tuple[str, str], dict]) -> InvalidInput | None:
    """The refusal when ``record``'s id is already an event of its tenant (indexed, or earlier in
    this batch: ``earlier``, updated here) with other content; None when it is new or the same.
    A dict lookup for a new id: the signatures are computed only for an id seen before."""
    env = record["envelope"]
    where = (env["tenant"], env["record_id"])
    if where in earlier:
        known = record_signature(earlier[where])
    else:
        earlier[where] = record
        tenant = index.tenants.get(env["tenant"])
        at = None if tenant is None else tenant.by_id.get(env["record_id"])
        held = None if at is None else tenant.docs.peek(at)  # read only: no object kept (recall.doc_table)
        if held is None or held.kind != "event":
            return None
        known = signature(held)
    if known == record_signature(record):
        return None
    return InvalidInput("perceive", "event_id", f"{env['record_id']!r} is already an event of tenant {env['tenant']!r} "
                        "with other content: an event id names one event (send the same content to retry, or a "
                        "new id for a new event)")


def unit_signature(doc: Doc) -> tuple:
    """What makes two proposals of a unit the same unit: its words, where it holds, its source and whose
    it is (a seed is nobody's: shared); not its confidence, which outcomes move."""
    return (doc.condition, doc.action, doc.reason, doc.evidence, tuple(sorted(doc.scope.items())), doc.source,
            doc.owner)


def record_unit_signature(record: dict) -> tuple:
    """``unit_signature`` of a cognition record not yet indexed (``projections.fragments.project``'s fields)."""
    return (record["condition"], record["action"], record["reason"], record["evidence"],
            tuple(sorted(record["scope"].items())), record["source"],
            private_to(record["envelope"]["agent"], record["seed"]))


def unit_conflict(index: RecallIndex, record: dict) -> InvalidInput | None:
    """The refusal when ``record``'s ``fragment_id`` is already a unit of its tenant with other content
    (see the module); None when it is new or the same proposal again (a retry)."""
    tenant = index.tenants.get(record["envelope"]["tenant"])
    at = None if tenant is None else tenant.by_id.get(record["fragment_id"])
    held = None if at is None else tenant.docs.peek(at)
    if held is None or held.kind != "fragment" or unit_signature(held) == record_unit_signature(record):
        return None
    return InvalidInput("learn", "fragment_id", f"{record['fragment_id']!r} is already a unit of tenant "
                        f"{record['envelope']['tenant']!r} with other content: a fragment id names one unit (send "
                        "the same proposal to retry, or a new id for a new unit)")
