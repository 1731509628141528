"""Roles of API keys (design.md §issue-19): which routes a key may call, in one table.

Every key has one role:

* ``agent``: an agent's loop: perceive (one, or a batch), learn (agents propose units),
  recall, outcome; and the MCP server's tools, which are the same four.
* ``analyst``: reading the tenant's memory as a whole: SQL over its views, explain, the
  traits waiting for a verdict.
* ``admin``: the human decisions and the operations: approve, invalidate, hindsight, the
  tenant's keys; and every route of the other two.

``agent`` and ``analyst`` are disjoint on purpose. An agent key lives in agents' processes,
environments and sometimes their prompts, so it is the likeliest to leak: it reaches what
recall shows, never the whole memory by SQL. An analyst reads, and writes nothing: not a
perception, not a recall (a recall is a record in the log and counts in the learning).
``admin`` holds everything. A ``/v1`` route missing from ``ROUTES`` needs ``admin``: a new
route stays closed until someone places it here.
"""

from __future__ import annotations

from typing import Literal

Role = Literal["agent", "analyst", "admin"]
ROLES: tuple[str, ...] = ("agent", "analyst", "admin")
ANY = "any"  # a route any live key may call, whatever its role
DEFAULT_ROLE = "agent"  # least privilege: most keys are made for agents (docs/service.md)

# what each role may do: the roles whose routes it may call
GRANTS: dict[str, frozenset[str]] = {
    "agent": frozenset({"agent"}),
    "analyst": frozenset({"analyst"}),
    "admin": frozenset(ROLES),
}

# route (FastAPI's path template) → the role it needs
ROUTES: dict[str, str] = {
    "/v1/perceive": "agent",
    "/v1/perceive/batch": "agent",
    "/v1/learn": "agent",
    "/v1/recall": "agent",
    "/v1/outcome": "agent",
    "/v1/store/items": "agent",  # a LangGraph store's get, list and search (what recall shows, by key)
    "/mcp": "agent",  # hindbrain mcp over HTTP: recall, perceive, learn, outcome as tools
    "/v1/sql": "analyst",
    "/v1/views": "analyst",
    "/v1/explain/{item_id}": "analyst",
    "/v1/traits": "analyst",
    "/v1/approve": "admin",
    "/v1/invalidate": "admin",
    "/v1/hindsight": "admin",
    "/v1/keys": "admin",
    "/v1/keys/{key_id}": "admin",
    # outside /v1 (design.md §issue-27): the whole brain's counts are an operator's; the API's description
    # is for anyone holding a key. Either can be opened without a key by a setting (docs/service.md).
    "/metrics": "admin",
    "/docs": ANY,
    "/openapi.json": ANY,
}


def needed(route: str) -> str:
    """The role ``route`` needs (``admin`` for a route not in ``ROUTES``)."""
    return ROUTES.get(route, "admin")


def allows(role: str, route: str) -> bool:
    """Whether a key of ``role`` may call ``route``."""
    need = needed(route)
    return role in GRANTS if need == ANY else need in GRANTS.get(role, ())


def refusal(role: str, route: str) -> str:
    """The 403's detail: the role the route needs, and the key's."""
    need = needed(route)
    also = " (or an admin key)" if need != "admin" else ""
    return f"{route} needs {_a(need)} key{also}; this API key is {_a(role)} key"


def _a(role: str) -> str:
    return f"{'an' if role[:1] in 'aeiou' else 'a'} {role}"


class WrongAgent(ValueError):
    """A request of a key bound to one agent names another (403)."""


def acting_agent(bound: str | None, named: str | None) -> str | None:
    """The agent a request acts as: a key bound to one agent acts as it (a request naming none
    gets it; naming another is refused, ``WrongAgent``), any other key as the request names.
    Fleet learning counts agents by name (a unit verified by two independent agents lifts its
    quarantine, ``recall.provenance``): an unbound key can claim any name, a bound one cannot."""
    if bound is None or named in (None, bound):
        return bound or named
    raise WrongAgent(f"this API key acts as agent {bound!r} only, not as {named!r}")
