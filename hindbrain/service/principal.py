"""One edge (design.md §issue-27, point 7): who a request speaks for, and what it may do, decided once.

Every entry point — the FastAPI routes, the hot routes (``FastRoutes``), the recall replicas
(which run ``FastRoutes``), MCP over HTTP (``TenantRouter``) and MCP over stdio — calls
``Edge.admit`` with the request's ``Authorization`` value, the route and the tenant the caller
claims, and ``acting`` with the fields the request carries. The decision is a ``Principal``
or a ``Refused`` of one of four kinds, in this order:

1. ``unauthorized`` (401): no key, a malformed header, an unknown or revoked key;
2. ``tenant`` (422): the caller names another tenant than its key's (``X-Hindbrain-Tenant``,
   ``--tenant``): the key decides the tenant;
3. ``role`` (403): the key's role does not allow the route (``roles.py``);
4. ``agent`` (403): a key bound to one agent names another (``roles.acting_agent``).

Before this module the four copies disagreed: ``"Bearer "`` was matched case-sensitively over
HTTP and not over MCP, and only one of them checked the claimed tenant. The header is now
read one way (``bearer_key``): the scheme in any case, any run of spaces or tabs around it.
Each entry point only shapes the answer for its protocol (FastAPI's ``detail``, RFC 6750's
``error`` for MCP over HTTP, a ``ToolError`` or a startup error for MCP over stdio).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from hindbrain.schemas.records import key_producer
from hindbrain.service.keys import KeyStore
from hindbrain.service.roles import WrongAgent, acting_agent, allows, refusal

RefusalKind = Literal["unauthorized", "tenant", "role", "agent"]
STATUS: dict[str, int] = {"unauthorized": 401, "tenant": 422, "role": 403, "agent": 403}
UNAUTHORIZED = "a valid API key is required: Authorization: Bearer <key>"


@dataclass(frozen=True)
class Principal:
    """Who a request speaks for: its key's id, tenant and role, and the one agent the key is
    bound to (None: any agent of its tenant)."""

    key_id: str
    tenant: str
    role: str
    agent: str | None = None

    @property
    def producer(self) -> str:
        """The ``producer`` of the records this key sends (``schemas.records.key_producer``): the key is the sender
        (round thirty-two, docs/security.md "The sender is the key" and "A perception's sender is its key")."""
        return key_producer(self.key_id, self.agent is not None)


class Refused(Exception):
    """A request the edge refuses: ``kind`` (see the module docstring), its HTTP ``status``,
    and a message for the caller."""

    def __init__(self, kind: RefusalKind, message: str):
        self.kind, self.status = kind, STATUS[kind]
        super().__init__(message)


def bearer_key(authorization: str | bytes | None) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` value, else None. The scheme is matched in
    any case (RFC 9110: schemes are case-insensitive) and any run of whitespace around it or the
    key is ignored, so ``"bearer  <key> "`` and ``"Bearer <key>"`` are one key (and one rate bucket)."""
    if isinstance(authorization, bytes):
        authorization = authorization.decode("latin-1")
    parts = (authorization or "").split()
    return parts[1] if len(parts) == 2 and parts[0].lower() == "bearer" else None


def wrong_tenant_message(claimed: str, tenant: str) -> str:
    return (f"this API key's tenant is {tenant!r}, not {claimed!r}: the key decides the tenant "
            "(use a key of the tenant meant)")


class Edge:
    """The one decision (see the module docstring) over a ``KeyStore``."""

    def __init__(self, keys: KeyStore):
        self.keys = keys

    def principal(self, authorization: str | bytes | None) -> Principal:
        """The principal of a live key, else ``Refused("unauthorized")``."""
        live = self.keys.resolve(bearer_key(authorization))
        if live is None:
            raise Refused("unauthorized", UNAUTHORIZED)
        return Principal(live.key_id, live.tenant, live.role, live.agent)

    def principal_of(self, scope: dict) -> Principal:
        """``principal`` of an ASGI request's ``Authorization`` header, resolved once per request:
        the layers it passes (the rate limits, the route) ask again (a lookup costs ~30 µs)."""
        found = scope.get(SCOPE_KEY)
        if found is None:
            authorization = next((v for k, v in scope["headers"] if k == b"authorization"), None)
            try:
                found = self.principal(authorization)
            except Refused as exc:
                found = exc
            scope[SCOPE_KEY] = found
        if isinstance(found, Refused):
            raise found
        return found

    def admit(self, authorization: str | bytes | None, route: str, claimed_tenant: str | None = None) -> Principal:
        """The principal of a request to ``route`` (a route template, as ``roles.ROUTES`` names
        it), once its key is live, the tenant it claims (if any) is its key's, and its role
        allows the route; else ``Refused`` of the first check that failed."""
        return admitted(self.principal(authorization), route, claimed_tenant)

    def admit_scope(self, scope: dict, route: str, claimed_tenant: str | None = None) -> Principal:
        """``admit`` for an ASGI request (its key resolved once: ``principal_of``)."""
        return admitted(self.principal_of(scope), route, claimed_tenant)


SCOPE_KEY = "hindbrain.principal"  # an ASGI scope's resolved principal (or refusal)


def admitted(principal: Principal, route: str, claimed_tenant: str | None) -> Principal:
    """``principal`` once the tenant it claims and its role pass (``Refused`` otherwise)."""
    check_tenant(principal, claimed_tenant)
    check_role(principal, route)
    return principal


def check_tenant(principal: Principal, claimed: str | None) -> None:
    """``Refused("tenant")`` when the caller claims another tenant than its key's."""
    if claimed is not None and claimed != principal.tenant:
        raise Refused("tenant", wrong_tenant_message(claimed, principal.tenant))


def check_role(principal: Principal, route: str) -> None:
    """``Refused("role")`` when the key's role does not allow ``route``."""
    if not allows(principal.role, route):
        raise Refused("role", refusal(principal.role, route))


def acting(principal: Principal, fields: dict) -> dict:
    """``fields`` acting as the agent the key allows: a bound key's agent is filled in when the
    request names none; naming another is ``Refused("agent")``."""
    try:
        agent = acting_agent(principal.agent, fields.get("agent"))
    except WrongAgent as exc:
        raise Refused("agent", str(exc)) from None
    return {**fields, "agent": agent} if agent is not None else fields


def minted_agent(principal: Principal, agent: str | None) -> str | None:
    """The agent a key that ``principal`` makes is bound to: a key grants no more than it holds, so a key
    bound to one agent makes keys bound to that agent (naming none: its own; naming another:
    ``Refused("agent")``). Round twenty-five (docs/security.md): a bound admin key, which may not seed,
    minted an unbound admin key and seeded with it."""
    try:
        return acting_agent(principal.agent, agent)
    except WrongAgent as exc:
        raise Refused("agent", f"{exc}: it makes keys bound to {principal.agent!r} only") from None


def check_human(principal: Principal, decision: str) -> None:
    """``Refused("agent")`` when a key bound to an agent would make a human decision (approving a trait,
    invalidating a unit): a bound key is an agent process's identity, and those decisions — like a seed —
    are an operator's (round twenty-five, docs/security.md)."""
    if principal.agent is not None:
        raise Refused("agent", f"{decision} is a human decision: this API key is bound to agent "
                               f"{principal.agent!r}; use an admin key not bound to an agent")


def check_revocable(principal: Principal, target_agent: str | None) -> None:
    """``Refused("agent")`` when a key bound to one agent would revoke a key not bound to the same agent
    (an operator's key, another agent's): a key takes away no more than it could have given."""
    if principal.agent is not None and target_agent != principal.agent:
        raise Refused("agent", f"this API key acts as agent {principal.agent!r} only: it revokes keys bound to "
                               f"{principal.agent!r} only")
