"""Keyed events: the versions of an item a key-value store keeps on the log.

A perception whose ``scope`` names ``store_key`` is a version of a stored item; the item is
identified within its tenant by ``(scope["store_namespace"], scope["store_key"])`` (the
namespace may be absent: ``""``). ``hindbrain.integrations.langgraph`` writes them, and any
caller of ``perceive`` may.

The log is immutable, so a new version never overwrites the old one. In log order, the newest
version of an item is *live*; each older one is ``replaced`` — kept in the log and the views,
never a recall candidate again. A version whose scope also names ``store_deleted`` is a
tombstone: the item is ``deleted`` from then on (the version before it and the tombstone itself
are never recall candidates), until a later version puts it back. One item's versions come
from one tenant and agent, so they share a Kafka partition and its order (``streams.topics``).
Pure functions: the recall index folds them (``TenantIndex``), the store reads the same rule
back from the ``events`` view.
"""

from __future__ import annotations

STORE_NAMESPACE = "store_namespace"  # the item's namespace, e.g. "acme.support-bot.bob"
STORE_KEY = "store_key"  # the item's key within its namespace
STORE_DELETED = "store_deleted"  # present on a tombstone: the item is deleted from here on
REPLACED, DELETED = "replaced", "deleted"  # the statuses of a version that is no longer live


def item_of(scope: dict) -> tuple[str, str] | None:
    """The stored item an event is a version of, or None for an ordinary event."""
    key = scope.get(STORE_KEY)
    return None if key is None else (scope.get(STORE_NAMESPACE, ""), key)


def is_tombstone(scope: dict) -> bool:
    return STORE_DELETED in scope


def retired_status(newer_scope: dict) -> str:
    """The status a version takes when ``newer_scope``'s version follows it."""
    return DELETED if is_tombstone(newer_scope) else REPLACED
