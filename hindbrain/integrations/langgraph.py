"""LangGraph's long-term memory on a brain: ``HindbrainStore``, a ``langgraph.store.base.BaseStore``.

    from hindbrain import Brain
    from hindbrain.integrations.langgraph import HindbrainStore

    brain = Brain.open("path/to/brain")           # or hindbrain.Client(url, api_key): the same methods
    graph = builder.compile(store=HindbrainStore(brain))

**Namespaces.** A LangGraph namespace is a tuple of labels. ``layout`` says which label is the
tenant, which the agent and which the user (the default ``("tenant", "agent", "user")`` reads
``("acme", "support-bot", "bob")``); ``None`` in the layout is a plain label, and labels beyond
the layout are plain too (``("acme", "support-bot", "bob", "profile")``). A namespace shorter
than the layout has no agent (the item is the tenant's, shared by its agents) or no user. When
no label is the tenant, ``tenant=`` gives it: ``HindbrainStore(brain, layout=(None, "user"),
tenant="acme")`` for LangGraph's usual ``("memories", user_id)``. The agent and user are
hindbrain's own walls: an item put under an agent is that agent's private memory, and one put
under a user is personal to that user (``recall.gate``): only that user's recalls see it.

**put is a perception, and the log is immutable.** ``put(namespace, key, value)`` appends an
``observation`` event whose text is the value — ``{"text": "..."}`` as that text, any other
JSON value as its JSON (scope ``store_value: json``) — and whose scope names the item
(``store_namespace``: the labels joined by ``.``, which LangGraph forbids inside a label;
``store_key``; ``user``). A second put of the same key appends a new version: nothing is
overwritten. The newest version is the live one; the older ones are *replaced*: kept in the
log and the views, never recalled again (``hindbrain.recall.keyed``). ``delete`` appends a
tombstone (an ``action`` event, scope ``store_deleted``): the item is gone from get and search,
every version stays in the log, and ``explain`` still shows it. A later put brings the key back.

**get** reads the live version; an overwrite is a new item (``created_at`` = ``updated_at``, as
``InMemoryStore`` answers). **batch** answers every read from the state before the batch, then
appends its puts and deletes (the last op of a key winning), as ``InMemoryStore.batch``.
**search** without a query lists the live items under the prefix in ``InMemoryStore``'s order
(``hindbrain.recall.stored``); with a ``query`` it ranks them by BM25 with a floor (an item
sharing no content word of the query is no answer; ``index=False`` items never are) and makes a
*recall* for the prefix's agent and user beside it (a record in the log): ``MemoryItem.why`` is
its explanation for an item it also selected, ``memory_id`` the event to credit, ``recall_id``
the recall; the list carries ``recall_id`` and the ``pack``, so ``outcome(namespace, results,
success=...)`` closes the loop as ``Brain.outcome`` does. ``filter`` (exact values, ``$eq $ne
$gt $gte $lt $lte``), ``limit`` and ``offset`` apply to the stored items. A search or listing
whose prefix stops above the tenant label reads every tenant: an embedded ``Brain`` only.

**Not supported**: ``ttl`` (hindbrain forgets by invalidation and volatility, never by a timer:
``put(..., ttl=...)`` raises ``NotImplementedError``, as ``BaseStore`` does for such stores).
What still differs from ``InMemoryStore``, and why: docs/langgraph.md.

The store calls only ``perceive_many``, ``recall``, ``outcome`` and ``stored`` on what it is
given, so an embedded ``Brain`` and the HTTP ``hindbrain.Client`` (an agent key is enough:
``POST /v1/store/items``) serve alike. The async methods run the sync ones in a worker thread.
Bad input raises ``InvalidInput`` naming the store's field (``namespace``, ``key``, ``value``,
``filter``) before anything is written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # the extra is not installed
    raise ImportError("hindbrain.integrations.langgraph needs LangGraph: pip install 'hindbrain[langgraph]'") from exc

from hindbrain.recall.keyed import STORE_DELETED, STORE_KEY, STORE_NAMESPACE
from hindbrain.recall.quoting import named, quoted
from hindbrain.recall.stored import SEPARATOR, STORE_INDEX, dotted, prompt_value, ranked, value_text
from hindbrain.schemas.api import InvalidInput
from hindbrain.schemas.records import new_id

ROLES = ("tenant", "agent", "user")
MAX_BUDGET = 100_000  # recall's largest budget: by default a search's ``limit`` decides, not tokens
RECALL_K = 50  # the recall made beside a query search: the items it explains (``why``)


class Memory(Protocol):
    """What the store needs of a brain: ``hindbrain.Brain`` and ``hindbrain.Client`` both are one
    (over HTTP, an agent key is enough: ``stored`` is ``POST /v1/store/items``)."""

    def perceive_many(self, events: Iterable[dict]) -> list[str]: ...

    def recall(self, **fields) -> Any: ...

    def outcome(self, **fields) -> str: ...

    def stored(self, *, tenant: str | None, prefix: tuple[str, ...] = (), key: str | None = None) -> list[dict]: ...


@dataclass(frozen=True)
class Coordinates:
    """Where a namespace (or a prefix of one) lives in hindbrain; None: not named by it."""

    tenant: str | None
    agent: str | None
    user: str | None


@dataclass(frozen=True)
class NamespaceMap:
    """Which label of a namespace is the tenant, the agent and the user (module docstring)."""

    layout: tuple[str | None, ...] = ROLES
    tenant: str | None = None  # the tenant when no label is

    def __post_init__(self):
        unknown = sorted({str(r) for r in self.layout if r is not None and r not in ROLES})
        if unknown:
            raise InvalidInput("HindbrainStore", "layout", f"unknown role(s) {unknown}: each label is one of "
                                                            f"{list(ROLES)} or None (a plain label)")
        named = [r for r in self.layout if r is not None]
        if len(named) != len(set(named)):
            raise InvalidInput("HindbrainStore", "layout", f"each role names one label at most: {self.layout}")
        if ("tenant" in self.layout) == (self.tenant is not None):
            raise InvalidInput("HindbrainStore", "tenant", "name the tenant once: a 'tenant' label in layout, or "
                                                            "tenant= when no label is the tenant")

    def coordinates(self, labels: tuple[str, ...]) -> Coordinates:
        """The roles the labels name; a wildcard (``*``, in namespace listings) names nothing."""
        found = {role: label for role, label in zip(self.layout, labels, strict=False)
                 if role is not None and label != "*"}
        return Coordinates(found.get("tenant", self.tenant), found.get("agent"), found.get("user"))

    def tenant_of(self, operation: str, labels: tuple[str, ...]) -> str:
        tenant = self.coordinates(labels).tenant
        if tenant is None:
            at = self.layout.index("tenant")
            raise InvalidInput(operation, "namespace", f"{labels} names no tenant: label {at} of the namespace is "
                                                       f"the tenant (layout {self.layout})")
        return tenant


class MemoryItem(SearchItem):
    """A stored item a search returned, with what hindbrain knows of it: ``memory_id`` (the live
    version's event id: what an outcome credits), ``recall_id`` and ``why`` (the recall's
    explanation of its score and gate decision; both None in a listing without a query)."""

    __slots__ = ("memory_id", "recall_id", "why")

    def __init__(self, *, namespace: tuple[str, ...], key: str, value: dict, created_at: datetime,
                 updated_at: datetime, memory_id: str, score: float | None = None, recall_id: str | None = None,
                 why: dict | None = None):
        super().__init__(namespace, key, value, created_at, updated_at, score)
        self.memory_id, self.recall_id, self.why = memory_id, recall_id, why

    def dict(self) -> dict:
        return {**super().dict(), "memory_id": self.memory_id, "recall_id": self.recall_id, "why": self.why}

    @property
    def prompt(self) -> str:
        """The item as one line for a prompt, ``key: “text”``, through the one escape for what
        reaches a prompt (``recall.quoting``; design.md §issue-27); the key is a caller's name, quoted
        ``‘ ’`` unless one plain token (round twenty-six). ``value`` stays as stored: a store
        round-trips what it was given; it is this text that goes into a prompt."""
        return f"{named(self.key)}: {quoted(prompt_value(self.value))}"


class SearchResults(list):
    """A search's items (a plain list to LangGraph) with the recall behind them: ``recall_id``
    and ``pack`` (the ``RecallPack``; both None for a search without a query)."""

    def __init__(self, items: Iterable[MemoryItem] = (), recall_id: str | None = None, pack: Any = None):
        super().__init__(items)
        self.recall_id, self.pack = recall_id, pack

    @property
    def prompt(self) -> str:
        """The items as a block for a prompt, one escaped line each (``MemoryItem.prompt``)."""
        return "\n".join(item.prompt for item in self)


# -- events (pure) --------------------------------------------------------------------------------------
def put_event(coords: Coordinates, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
              index: bool | list[str] | None = None) -> dict:
    """The perception that is a new version of the item (``perceive`` fields); ``index=False``
    marks it as never an answer to a query search."""
    text, how = value_text("put", value)
    unindexed = {STORE_INDEX: "false"} if index is False else {}
    return {"tenant": coords.tenant, "agent": coords.agent, "kind": "observation", "text": text,
            "event_id": new_id("perception"), "scope": {**_item_scope(coords, namespace, key), **how, **unindexed}}


def tombstone_event(coords: Coordinates, namespace: tuple[str, ...], key: str) -> dict:
    """The perception that deletes the item: what the agent did, kept in the log like the rest."""
    return {"tenant": coords.tenant, "agent": coords.agent, "kind": "action",
            "action": f"deleted the stored item {key!r} of {dotted(namespace)}", "event_id": new_id("perception"),
            "scope": {**_item_scope(coords, namespace, key), STORE_DELETED: "true"}}


def _item_scope(coords: Coordinates, namespace: tuple[str, ...], key: str) -> dict[str, str]:
    scope = {STORE_NAMESPACE: dotted(namespace), STORE_KEY: key}
    if coords.user is not None:
        scope["user"] = coords.user  # personal: recall's gate keeps it from every other user's recall
    return scope


_OPERATORS = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b, "$gt": lambda a, b: a > b,
              "$gte": lambda a, b: a >= b, "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


def matches(value: Any, wanted: Any) -> bool:
    """LangGraph's filter on one value: equal (nested mappings field by field), or operators."""
    if isinstance(wanted, Mapping) and any(str(k).startswith("$") for k in wanted):
        return all(_compare(value, op, operand) for op, operand in wanted.items())
    if isinstance(wanted, Mapping):
        return isinstance(value, Mapping) and all(matches(value.get(k), v) for k, v in wanted.items())
    return value == wanted


def _compare(value: Any, op: str, operand: Any) -> bool:
    if op not in _OPERATORS:
        raise InvalidInput("search", "filter", f"unknown operator {op!r}; known: {sorted(_OPERATORS)}")
    if op in ("$eq", "$ne"):
        return _OPERATORS[op](value, operand)
    try:
        return _OPERATORS[op](float(value), float(operand))
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field is not greater or smaller than anything


def passes(value: dict, filter_: dict | None) -> bool:
    return not filter_ or all(matches(value.get(k), v) for k, v in filter_.items())


def condition_holds(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """A prefix or suffix condition, ``*`` matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path):]
    return all(p in ("*", label) for p, label in zip(path, part, strict=True))


def listed(namespaces: Iterable[tuple[str, ...]], op: ListNamespacesOp) -> list[tuple[str, ...]]:
    """``list_namespaces``'s answer from every namespace holding a live item."""
    kept = {ns for ns in namespaces if all(condition_holds(c, ns) for c in op.match_conditions or ())}
    if op.max_depth is not None:
        kept = {ns[: op.max_depth] for ns in kept}
    return sorted(kept)[op.offset: op.offset + op.limit]


def _wildcard_free(path: tuple[str, ...]) -> tuple[str, ...]:
    """The leading labels of a pattern before its first wildcard."""
    head = []
    for label in path:
        if label == "*":
            break
        head.append(label)
    return tuple(head)


def _check_labels(operation: str, labels: Iterable[str]) -> None:
    """LangGraph checks labels in its own methods, not in ``batch``; a label with a ``.`` would
    address another namespace once joined."""
    for label in labels:
        if not isinstance(label, str) or not label or SEPARATOR in label:
            raise InvalidInput(operation, "namespace", f"label {label!r}: a non-empty string without '.'")


class HindbrainStore(BaseStore):
    """LangGraph's ``BaseStore`` over a brain (module docstring: the mapping and what put and
    delete mean on an immutable log). ``memory``: a ``hindbrain.Brain`` or ``hindbrain.Client``;
    ``layout`` / ``tenant``: the ``NamespaceMap``; ``budget_tokens``: a query search's recall
    budget (by default the largest, so ``limit`` decides how many items come back)."""

    supports_ttl = False

    def __init__(self, memory: Memory, *, layout: tuple[str | None, ...] = ROLES, tenant: str | None = None,
                 budget_tokens: int = MAX_BUDGET):
        self.memory = memory
        self.namespaces = NamespaceMap(tuple(layout), tenant)
        self.budget_tokens = budget_tokens

    # -- BaseStore ----------------------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` as ``InMemoryStore`` does: every read answers from the state before the
        batch, then the puts and deletes are appended in one ``perceive_many`` (all validated
        first: a bad one writes none of them), the last op of a key winning."""
        results: list[Result] = []
        puts: dict[tuple[tuple[str, ...], str], tuple[bool, dict]] = {}  # (a delete, its version) per key
        for op in ops:
            if isinstance(op, PutOp):
                version = self._version(op)
                puts[(tuple(op.namespace), op.key)] = (op.value is None, version)  # a dict keeps the key's first place
                results.append(None)
            elif isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(op))
            else:
                raise InvalidInput("batch", "ops", f"unknown operation {type(op).__name__}")
        # The puts before the deletes: each key is there once, so the items and their order come out the
        # same, but a namespace a delete empties and a put of another key refills in this batch keeps its
        # place (``recall.stored.fold`` drops a namespace when its last item goes), as it does in
        # ``InMemoryStore``, which empties it in the batch and refills it.
        self._append([version for _, version in sorted(puts.values(), key=lambda put: put[0])])
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` in a worker thread: the brain's calls block (an embedded Brain's disk, a
        Client's HTTP), and the event loop must not."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- closing the loop ---------------------------------------------------------------------------------
    def outcome(self, namespace: tuple[str, ...], results: Iterable[MemoryItem | str] = (), *, success: bool,
                applied: Iterable[MemoryItem | str] | None = None, recall_id: str | None = None,
                task: str | None = None, steps: int | None = None, notes: str | None = None) -> str:
        """Report how the step that used a search went (``Brain.outcome``) for the namespace's
        agent: the recall is the search's (``results.recall_id``, or ``recall_id``), and success
        or failure is credited to ``applied`` (items or memory ids; by default every item of
        ``results``). Returns the outcome id."""
        namespace = tuple(namespace)
        tenant = self.namespaces.tenant_of("outcome", namespace)
        used = list(results) if applied is None else list(applied)
        return self.memory.outcome(tenant=tenant, agent=self.namespaces.coordinates(namespace).agent, task=task,
                                   recall_id=recall_id or getattr(results, "recall_id", None),
                                   applied=[u.memory_id if isinstance(u, MemoryItem) else u for u in used],
                                   success=success, steps=steps, notes=notes)

    # -- operations ---------------------------------------------------------------------------------------
    def _version(self, op: PutOp) -> dict:
        namespace = tuple(op.namespace)
        _check_labels("put", namespace)
        if not namespace:
            raise InvalidInput("put", "namespace", "a namespace has at least one label")
        self.namespaces.tenant_of("put", namespace)  # raises unless a label (or the store) names the tenant
        coords = self.namespaces.coordinates(namespace)
        if op.value is None:
            return tombstone_event(coords, namespace, op.key)
        return put_event(coords, namespace, op.key, op.value, op.index)

    def _append(self, versions: list[dict]) -> None:
        """One ``perceive_many`` per tenant (a batch is one tenant's), in the batch's order."""
        by_tenant: dict[str, list[dict]] = {}
        for version in versions:
            by_tenant.setdefault(version["tenant"], []).append(version)
        for batch in by_tenant.values():
            try:
                self.memory.perceive_many(batch)
            except InvalidInput as exc:
                raise _as_store_error(exc) from None

    def _get(self, op: GetOp) -> Item | None:
        namespace = tuple(op.namespace)
        _check_labels("get", namespace)
        tenant = self.namespaces.tenant_of("get", namespace)
        found = self._items(tenant, namespace, op.key)
        if not found:
            return None
        item = found[0]
        return Item(value=item["value"], key=item["key"], namespace=namespace, created_at=item["created_at"],
                    updated_at=item["updated_at"])

    def _search(self, op: SearchOp) -> SearchResults:
        prefix = tuple(op.namespace_prefix)
        _check_labels("search", prefix)
        items = self._items(self.namespaces.coordinates(prefix).tenant, prefix)
        if not op.query:
            kept = [_item(i) for i in items if passes(i["value"], op.filter)]
            return SearchResults(kept[op.offset: op.offset + op.limit])
        pack = self._recall(op.query, prefix)
        why = {} if pack is None else {i.id: i.why for i in pack.items}
        recall_id = None if pack is None else pack.recall_id
        kept = [_item(i, score, recall_id, why.get(i["memory_id"])) for score, i in ranked(op.query, items)
                if passes(i["value"], op.filter)]
        return SearchResults(kept[op.offset: op.offset + op.limit], recall_id, pack)

    def _recall(self, query: str, prefix: tuple[str, ...]) -> Any:
        """The recall a query search makes for the prefix's agent and user (a record in the log,
        like any agent's, that ``outcome`` credits); None when the prefix names no tenant."""
        coords = self.namespaces.coordinates(prefix)
        if coords.tenant is None:
            return None
        return self.memory.recall(tenant=coords.tenant, agent=coords.agent, user=coords.user, query=query,
                                  layers=["episodic"], k=RECALL_K, budget_tokens=self.budget_tokens)

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        for condition in conditions:
            _check_labels("list_namespaces", (label for label in condition.path if label != "*"))
        prefixes = [tuple(c.path) for c in conditions if c.match_type == "prefix"]
        known = _wildcard_free(prefixes[0]) if prefixes else ()
        items = self._items(self.namespaces.coordinates(known).tenant, known)
        return listed({i["namespace"] for i in items}, op)

    def _items(self, tenant: str | None, prefix: tuple[str, ...], key: str | None = None) -> list[dict]:
        """The live items under ``prefix`` (or the one ``key`` of it), in ``InMemoryStore``'s
        order (``hindbrain.recall.stored``). With a tenant, over that tenant's views (the HTTP
        API's wall); without, over every tenant's (an embedded Brain only)."""
        return self.memory.stored(tenant=tenant, prefix=prefix, key=key)


def _item(item: dict, score: float | None = None, recall_id: str | None = None, why: dict | None = None
          ) -> MemoryItem:
    return MemoryItem(namespace=tuple(item["namespace"]), key=item["key"], value=item["value"],
                      created_at=item["created_at"], updated_at=item["updated_at"], memory_id=item["memory_id"],
                      score=score, recall_id=recall_id, why=why)


# The perceive fields a put fills, as the store's caller named them.
_FIELDS = {"text": "value", "tenant": "namespace", "agent": "namespace",
           f"scope.{STORE_NAMESPACE}": "namespace", f"scope.{STORE_KEY}": "key", "scope.user": "namespace"}


def _as_store_error(exc: InvalidInput) -> InvalidInput:
    """``perceive``'s refusal, naming the store's field (a too long key is ``key``, not ``scope``)."""
    message = str(exc).removeprefix(f"{exc.operation}: field {exc.field!r}: ")
    return InvalidInput("put", _FIELDS.get(exc.field, exc.field), message)
