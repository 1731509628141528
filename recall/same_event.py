"""One ``event_id``, one event: a perception sent again with its id is the same event only if it
says the same thing.

A caller's ``event_id`` makes a retry idempotent (``hindbrain.Client`` sends one with every
perception, so a request whose answer was lost can be sent again). The same id with other
content is not a retry: it is a second, different event claiming the first one's identity, and
it would leave three answers (the log keeping both, the ``events`` view the second, recall the
first). So it is refused, naming the id, and nothing is written. What "the same" compares:
what the event says and where it belongs (text, action, kind, agent, scope, session, origin,
speaker), not its timestamp, which a retry may set anew.
"""

from __future__ import annotations

from hindbrain.recall.index import Doc, RecallIndex, event_doc
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
