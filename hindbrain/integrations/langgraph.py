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

**get** reads the live version from the ``events`` view (``created_at``: the first version
since the last delete; ``updated_at``: the live one's). **search** without a query lists the
live items under the prefix, newest first; with a ``query`` it is a *recall* (a recall record
in the log, like any agent's) over the episodic layer, for the prefix's agent and user, and its
items are the stored items under the prefix, best first, each a ``MemoryItem``: ``score`` is the
recall's relevance, ``why`` its explanation (every channel, penalty and gate decision),
``memory_id`` the event to credit, ``recall_id`` the recall. The list itself carries
``recall_id`` and the whole ``pack``, so ``outcome(namespace, results, success=...)`` closes
the loop as ``Brain.outcome`` does. ``filter`` (exact values, ``$eq $ne $gt $gte $lt $lte``),
``limit`` and ``offset`` apply to the stored items; a query search asks recall for four times
``offset + limit`` candidates (at most 1,000) and returns fewer when the recall, its budget or the
filter found fewer. A search or listing whose prefix stops above the tenant label reads every
tenant: an embedded ``Brain`` only (over HTTP the API key is one tenant).

**Not supported**: ``ttl`` (hindbrain forgets by invalidation and volatility, never by a timer:
``put(..., ttl=...)`` raises ``NotImplementedError``, as ``BaseStore`` does for such stores);
``index`` has no effect (recall indexes every stored item by its words, cues and meaning).

The store calls only ``perceive_many``, ``recall``, ``outcome`` and ``sql`` on what it is given,
so an embedded ``Brain`` and the HTTP ``hindbrain.Client`` serve alike. The async methods run the
sync ones in a worker thread. Bad input raises ``InvalidInput`` naming the store's field
(``namespace``, ``key``, ``value``, ``filter``) before anything is written.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
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
from hindbrain.recall.quoting import prompt_text, quoted
from hindbrain.schemas.api import InvalidInput
from hindbrain.schemas.records import new_id

ROLES = ("tenant", "agent", "user")
STORE_VALUE = "store_value"  # "json": the event's text is the value's JSON; absent: the value is {"text": text}
SEPARATOR = "."  # joins a namespace's labels; LangGraph refuses it inside a label
MAX_BUDGET = 100_000  # recall's largest budget: by default a search's ``limit`` decides, not tokens
OVERFETCH = 4  # recall candidates asked per stored item wanted: the pool also holds the agent's other events
MAX_K = 1000  # recall's largest k


class Memory(Protocol):
    """What the store needs of a brain: ``hindbrain.Brain`` and ``hindbrain.Client`` both are one."""

    def perceive_many(self, events: Iterable[dict]) -> list[str]: ...

    def recall(self, **fields) -> Any: ...

    def outcome(self, **fields) -> str: ...

    def sql(self, query: str, parameters: dict | None = None, *, tenant: str | None = None) -> list[dict]: ...


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
        reaches a prompt (``recall.quoting``; issue 27). ``value`` stays as stored: a store
        round-trips what it was given; it is this text that goes into a prompt."""
        return f"{prompt_text(self.key)}: {quoted(prompt_value(self.value))}"


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


# -- values and events (pure) ----------------------------------------------------------------------------


def dotted(namespace: tuple[str, ...]) -> str:
    return SEPARATOR.join(namespace)


def labels_of(dotted_namespace: str) -> tuple[str, ...]:
    return tuple(dotted_namespace.split(SEPARATOR)) if dotted_namespace else ()


def value_text(value: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """The event text of a value and the scope that says how to read it back: ``{"text": s}``
    is ``s`` itself (recall shows the words as written), any other value its JSON."""
    if not isinstance(value, Mapping):
        raise InvalidInput("put", "value", f"a value is a mapping (dict), not {type(value).__name__}")
    if set(value) == {"text"} and isinstance(value["text"], str) and value["text"].strip():
        return value["text"], {}
    try:
        return json.dumps(dict(value), ensure_ascii=False), {STORE_VALUE: "json"}
    except (TypeError, ValueError) as exc:
        raise InvalidInput("put", "value", f"not JSON-serializable: {exc}") from None


def prompt_value(value: Mapping[str, Any]) -> str:
    """A value's words for a prompt: the text of ``{"text": s}``, else its JSON."""
    if set(value) == {"text"} and isinstance(value["text"], str):
        return value["text"]
    return json.dumps(value, ensure_ascii=False, default=str)


def value_of(text: str, fmt: str | None) -> dict:
    """``value_text`` read back."""
    return json.loads(text) if fmt == "json" else {"text": text}


def put_event(coords: Coordinates, namespace: tuple[str, ...], key: str, value: Mapping[str, Any]) -> dict:
    """The perception that is a new version of the item (``perceive`` fields)."""
    text, how = value_text(value)
    return {"tenant": coords.tenant, "agent": coords.agent, "kind": "observation", "text": text,
            "event_id": new_id("perception"), "scope": {**_item_scope(coords, namespace, key), **how}}


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


def in_prefix(namespace: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return namespace[: len(prefix)] == prefix


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


# -- the store's reads over the events view --------------------------------------------------------------

# Every version of the items the condition selects, folded to the live one per item (the rule of
# ``recall.keyed``): versions of one item share a partition, so ``_offset`` orders them.
_LIVE_SQL = f"""
SELECT ns, key, argMax(event_id, _offset) AS memory_id, argMax(text, _offset) AS text,
       argMax(fmt, _offset) AS fmt, argMax(deleted, _offset) AS deleted,
       argMax(ts, _offset) AS updated_at, minIf(ts, toInt64(_offset) > last_delete) AS created_at
FROM (
    SELECT scope['{STORE_NAMESPACE}'] AS ns, scope['{STORE_KEY}'] AS key, event_id, text, ts, _offset,
           scope['{STORE_VALUE}'] AS fmt, mapContains(scope, '{STORE_DELETED}') AS deleted,
           max(if(deleted, toInt64(_offset), -1)) OVER (PARTITION BY ns, key) AS last_delete
    FROM {{source}} WHERE mapContains(scope, '{STORE_KEY}') AND ({{where}})
)
GROUP BY ns, key HAVING NOT deleted
ORDER BY updated_at DESC, ns, key
"""
_UNDER = "(ns = {ns:String} OR startsWith(ns, {under:String}))"
# Two arrays of strings, not an array of tuples: parameters that survive JSON (``Client.sql``).
_ITEMS = "has(arrayZip({namespaces:Array(String)}, {keys:Array(String)}), (ns, key))"


def _under(prefix: tuple[str, ...]) -> tuple[str, dict]:
    """The SQL condition and parameters for the items under a namespace prefix."""
    if not prefix:
        return "ns != ''", {}
    return _UNDER, {"ns": dotted(prefix), "under": dotted(prefix) + SEPARATOR}


def _utc(ts: datetime | str) -> datetime:
    """A view's timestamp as an aware datetime: ``Brain.sql`` gives a datetime, ``Client.sql``
    its ISO text (JSON has no datetime)."""
    ts = datetime.fromisoformat(ts) if isinstance(ts, str) else ts
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


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
        """Run ``ops`` in order. Consecutive puts and deletes are appended in one ``perceive_many``
        (all validated first: a bad one writes none of them), before any read that follows."""
        results: list[Result] = []
        pending: list[dict] = []
        for op in ops:
            if isinstance(op, PutOp):
                pending.append(self._version(op))
                results.append(None)
                continue
            self._append(pending)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._namespaces(op))
            else:
                raise InvalidInput("batch", "ops", f"unknown operation {type(op).__name__}")
        self._append(pending)
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
        return put_event(coords, namespace, op.key, op.value)

    def _append(self, pending: list[dict]) -> None:
        if not pending:
            return
        try:
            self.memory.perceive_many(pending)
        except InvalidInput as exc:
            raise _as_store_error(exc) from None
        finally:
            pending.clear()

    def _get(self, op: GetOp) -> Item | None:
        namespace = tuple(op.namespace)
        _check_labels("get", namespace)
        tenant = self.namespaces.tenant_of("get", namespace)
        rows = self._live(tenant, "ns = {ns:String} AND key = {key:String}", {"ns": dotted(namespace), "key": op.key})
        if not rows:
            return None
        row = rows[0]
        return Item(value=value_of(row["text"], row["fmt"]), key=row["key"], namespace=namespace,
                    created_at=_utc(row["created_at"]), updated_at=_utc(row["updated_at"]))

    def _search(self, op: SearchOp) -> SearchResults:
        prefix = tuple(op.namespace_prefix)
        _check_labels("search", prefix)
        if op.query:
            return self._recall(op, prefix)
        where, params = _under(prefix)
        rows = self._live(self.namespaces.coordinates(prefix).tenant, where, params)
        items = [_item(row) for row in rows]
        kept = [i for i in items if passes(i.value, op.filter)]
        return SearchResults(kept[op.offset: op.offset + op.limit])

    def _recall(self, op: SearchOp, prefix: tuple[str, ...]) -> SearchResults:
        """A query search: a recall for the prefix's agent and user, its stored items under the
        prefix, best first, with the recall's explanation."""
        coords = self.namespaces.coordinates(prefix)
        tenant = self.namespaces.tenant_of("search", prefix)
        wanted = op.offset + op.limit
        pack = self.memory.recall(tenant=tenant, agent=coords.agent, user=coords.user, query=op.query,
                                  layers=["episodic"], k=max(1, min(MAX_K, OVERFETCH * wanted)),
                                  budget_tokens=self.budget_tokens)
        recalled = {}
        for item in sorted(pack.items, key=lambda i: i.score, reverse=True):
            if STORE_KEY in item.scope and in_prefix(labels_of(item.scope.get(STORE_NAMESPACE, "")), prefix):
                recalled.setdefault(item.id, item)
        which = {"namespaces": [i.scope.get(STORE_NAMESPACE, "") for i in recalled.values()],
                 "keys": [i.scope[STORE_KEY] for i in recalled.values()]}
        rows = self._live(tenant, _ITEMS, which) if recalled else []
        live = {row["memory_id"]: row for row in rows}
        items = [_item(live[i], item.score, pack.recall_id, item.why) for i, item in recalled.items() if i in live]
        kept = [i for i in items if passes(i.value, op.filter)]
        return SearchResults(kept[op.offset: op.offset + op.limit], pack.recall_id, pack)

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        for condition in conditions:
            _check_labels("list_namespaces", (label for label in condition.path if label != "*"))
        prefixes = [tuple(c.path) for c in conditions if c.match_type == "prefix"]
        known = _wildcard_free(prefixes[0]) if prefixes else ()
        where, params = _under(known)
        rows = self._live(self.namespaces.coordinates(known).tenant, where, params)
        return listed({labels_of(row["ns"]) for row in rows}, op)

    def _live(self, tenant: str | None, where: str, params: dict) -> list[dict]:
        """The live items the condition selects. With a tenant, over that tenant's views (the
        HTTP API's wall); without, over every tenant's rows (an embedded Brain only)."""
        sql = _LIVE_SQL.replace("{where}", where).replace("{source}", "events" if tenant else "events FINAL")
        return self.memory.sql(sql, params, tenant=tenant) if tenant else self.memory.sql(sql, params)


def _item(row: dict, score: float | None = None, recall_id: str | None = None, why: dict | None = None) -> MemoryItem:
    return MemoryItem(namespace=labels_of(row["ns"]), key=row["key"], value=value_of(row["text"], row["fmt"]),
                      created_at=_utc(row["created_at"]), updated_at=_utc(row["updated_at"]),
                      memory_id=row["memory_id"], score=score, recall_id=recall_id, why=why)


# The perceive fields a put fills, as the store's caller named them.
_FIELDS = {"text": "value", "tenant": "namespace", "agent": "namespace",
           f"scope.{STORE_NAMESPACE}": "namespace", f"scope.{STORE_KEY}": "key", "scope.user": "namespace"}


def _as_store_error(exc: InvalidInput) -> InvalidInput:
    """``perceive``'s refusal, naming the store's field (a too long key is ``key``, not ``scope``)."""
    message = str(exc).removeprefix(f"{exc.operation}: field {exc.field!r}: ")
    return InvalidInput("put", _FIELDS.get(exc.field, exc.field), message)
