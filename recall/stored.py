"""The stored items of a key-value store on the log, read back as LangGraph's stores answer.

``recall.keyed`` says which events are versions of a stored item. This module folds those
versions, in log order, into the live items the way LangGraph's ``InMemoryStore`` keeps its
dict (so that a ``HindbrainStore`` lists, pages and ranks as that reference does):

* a namespace takes its place when its first item is put, and loses it when its last item is
  deleted (``InMemoryStore`` also keeps a namespace a mere ``get`` touched, or one emptied by
  its deletes; hindbrain keeps no record of a read, and lists, as LangGraph's Postgres store
  does, only the namespaces that hold an item);
* within a namespace, a key keeps the place of its first put; a delete frees it, so a later put
  goes last;
* an overwrite makes a new item: ``created_at`` and ``updated_at`` are both the live version's
  time, as ``InMemoryStore`` answers (every version stays in the log; ``explain`` shows them).

``relevance`` ranks items for a query search: BM25 over the searched items' words, with a
floor — an item shares at least one of the query's content words (not a stopword), or it is not
an answer at all. Pure functions, but ``read_items`` (the SQL over the ``events`` view).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from hindbrain.recall.keyed import STORE_DELETED, STORE_KEY, STORE_NAMESPACE
from hindbrain.recall.lexical import K1, B  # the same BM25 parameters as the lexical channel
from hindbrain.recall.tokenize import tokens
from hindbrain.schemas.api import InvalidInput

STORE_VALUE = "store_value"  # "json": the event's text is the value's JSON; absent: the value is {"text": text}
STORE_INDEX = "store_index"  # "false": put with index=False, never an answer to a query search
SEPARATOR = "."  # joins a namespace's labels; LangGraph refuses it inside a label

# Words too common to make an item an answer by themselves (the floor's; BM25 still counts them).
_STOPWORDS = ("a an and are as at be but by did do does for from had has have he her his i in is it its me my no not "
              "of on or our she so than that the their them then there these they this to too was we were what when "
              "where which who why will with you your")
STOPWORDS = frozenset(_STOPWORDS.split(" "))


# -- values (pure) -------------------------------------------------------------------------------
def value_text(operation: str, value: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """The event text of a value and the scope that says how to read it back: ``{"text": s}``
    is ``s`` itself (recall shows the words as written), any other value its JSON."""
    if not isinstance(value, Mapping):
        raise InvalidInput(operation, "value", f"a value is a mapping (dict), not {type(value).__name__}")
    if set(value) == {"text"} and isinstance(value["text"], str) and value["text"].strip():
        return value["text"], {}
    try:
        return json.dumps(dict(value), ensure_ascii=False), {STORE_VALUE: "json"}
    except (TypeError, ValueError) as exc:
        raise InvalidInput(operation, "value", f"not JSON-serializable: {exc}") from None


def prompt_value(value: Mapping[str, Any]) -> str:
    """A value's words for a prompt: the text of ``{"text": s}``, else its JSON."""
    if set(value) == {"text"} and isinstance(value["text"], str):
        return value["text"]
    return json.dumps(value, ensure_ascii=False, default=str)


def value_of(text: str, fmt: str | None) -> dict:
    """``value_text`` read back."""
    return json.loads(text) if fmt == "json" else {"text": text}


def dotted(namespace: Iterable[str]) -> str:
    return SEPARATOR.join(namespace)


def labels_of(dotted_namespace: str) -> tuple[str, ...]:
    return tuple(dotted_namespace.split(SEPARATOR)) if dotted_namespace else ()


# -- folding the versions (pure) -------------------------------------------------------------------
def fold(versions: Iterable[Mapping[str, Any]]) -> list[dict]:
    """The live items, in ``InMemoryStore``'s order (module docstring), from every version of
    the items concerned, oldest first. A version: ``ns``, ``key``, ``event_id``, ``text``,
    ``fmt``, ``indexed``, ``deleted``, ``ts``."""
    spaces: dict[str, dict[str, dict]] = {}
    for v in versions:
        items = spaces.get(v["ns"])
        if v["deleted"]:
            if items is not None and items.pop(v["key"], None) is not None and not items:
                del spaces[v["ns"]]
            continue
        item = {"namespace": labels_of(v["ns"]), "key": v["key"], "value": value_of(v["text"], v["fmt"]),
                "created_at": _utc(v["ts"]), "updated_at": _utc(v["ts"]), "memory_id": v["event_id"],
                "indexed": bool(v["indexed"])}
        spaces.setdefault(v["ns"], {})[v["key"]] = item  # an overwrite keeps the key's place, as a dict does
    return [item for items in spaces.values() for item in items.values()]


def _utc(ts: datetime | str) -> datetime:
    """A view's timestamp as an aware datetime (over HTTP it is ISO text: JSON has no datetime)."""
    ts = datetime.fromisoformat(ts) if isinstance(ts, str) else ts
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=UTC)


# -- relevance (pure) ------------------------------------------------------------------------------
def searchable_text(value: Mapping[str, Any]) -> str:
    """The words of a value a query search reads: every string in it, keys excluded."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return " ".join(searchable_text(v) for v in value.values())
    if isinstance(value, list | tuple):
        return " ".join(searchable_text(v) for v in value)
    return ""


def stem(word: str) -> str:
    """A light English suffix strip, so that "answers" finds "answer" and "wanted" "wants"."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    return [stem(t) for t in tokens(text)]


def relevance(query: str, texts: list[str]) -> list[float]:
    """Each text's BM25 score for ``query`` among ``texts``, 0.0 below the floor (no content
    word of the query in it)."""
    wanted = terms(query)
    content = {t for t, word in zip(wanted, tokens(query), strict=True) if word not in STOPWORDS}
    docs = [terms(t) for t in texts]
    if not docs or not wanted:
        return [0.0] * len(docs)
    mean = sum(map(len, docs)) / len(docs) or 1.0
    df = {t: sum(t in set(d) for d in docs) for t in set(wanted)}
    idf = {t: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for t, n in df.items()}
    scores = []
    for doc in docs:
        if not content & set(doc):
            scores.append(0.0)
            continue
        score = 0.0
        for t in set(wanted):
            tf = doc.count(t)
            score += idf[t] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(doc) / mean)) if tf else 0.0
        scores.append(score)
    return scores


def ranked(query: str, items: list[dict]) -> list[tuple[float, dict]]:
    """The items a query search answers, best first: indexed items above the floor; ties keep
    the items' order."""
    candidates = [i for i in items if i["indexed"]]
    scores = relevance(query, [searchable_text(i["value"]) for i in candidates])
    order = sorted(range(len(candidates)), key=lambda n: -scores[n])
    return [(scores[n], candidates[n]) for n in order if scores[n] > 0]


# -- reading the versions (IO) ---------------------------------------------------------------------
_VERSIONS_SQL = f"""
SELECT scope['{STORE_NAMESPACE}'] AS ns, scope['{STORE_KEY}'] AS key, event_id, text, ts,
       scope['{STORE_VALUE}'] AS fmt, scope['{STORE_INDEX}'] != 'false' AS indexed,
       mapContains(scope, '{STORE_DELETED}') AS deleted
FROM {{source}}
WHERE mapContains(scope, '{STORE_KEY}') AND ({{where}})
ORDER BY ts, _offset
"""


def selection(prefix: tuple[str, ...], key: str | None = None, agent: str | None = None) -> tuple[str, dict]:
    """The SQL condition and parameters for the versions under a namespace prefix (one
    namespace's one key when ``key`` is given); ``agent``: only that agent's and the tenant's
    shared items (an API key bound to one agent)."""
    clauses, params = [], {}
    if key is not None:
        clauses.append("scope['store_namespace'] = {ns:String} AND scope['store_key'] = {key:String}")
        params.update(ns=dotted(prefix), key=key)
    elif prefix:
        clauses.append("(scope['store_namespace'] = {ns:String} OR "
                       "startsWith(scope['store_namespace'], {under:String}))")
        params.update(ns=dotted(prefix), under=dotted(prefix) + SEPARATOR)
    if agent is not None:
        clauses.append("(agent IS NULL OR agent = {agent:String})")
        params["agent"] = agent
    return " AND ".join(clauses) or "1", params


def read_items(sql: Callable[..., list[dict]], tenant: str | None, prefix: tuple[str, ...], key: str | None = None,
               agent: str | None = None) -> list[dict]:
    """The live items under ``prefix`` (or the one item ``key``), folded from the ``events``
    view; ``sql`` is ``Brain.sql``. Without a tenant, every tenant's (an embedded brain only)."""
    where, params = selection(prefix, key, agent)
    query = _VERSIONS_SQL.replace("{where}", where).replace("{source}", "events" if tenant else "events FINAL")
    return fold(sql(query, params, tenant=tenant) if tenant else sql(query, params))
