"""The recall read model: per-tenant documents (events and fragments) with a BM25 index.

Built from the ``events`` and ``fragments`` views when a Brain opens, then kept current
from the records the Brain appends (read-your-writes). Tenants never share an index, which
is the hard tenant wall: a recall cannot even see another tenant's documents.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from hindbrain.projections import events, fragments
from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.tokenize import estimate_tokens, tokens
from hindbrain.streams.processing import Decoded

LAYERS = ("episodic", "experience", "knowledge")
_LAYER_CODE = {name: i for i, name in enumerate(LAYERS)}
_SITUATION_FIELDS = ("system", "identity", "action", "expected", "actual")


@dataclass(slots=True)
class Doc:
    id: str
    kind: str
    layer: str
    text: str
    event_ids: list[str]
    source: str
    confidence: float
    scope: dict
    ts_us: int
    tokens: int = 0


Indexable = tuple[str, Doc, list[str]]  # (tenant, document, extra cue terms such as entities)


def situation_text(fields: dict) -> str:
    """``system: IAM / identity: normal account / ... / actual: no response``."""
    return " / ".join(f"{k}: {fields[k]}" for k in _SITUATION_FIELDS if fields.get(k))


def _ts_us(ts) -> int:
    return ts if isinstance(ts, int) else int(ts.timestamp() * 1_000_000)


def event_doc(event_id: str, fields: dict, ts_us: int) -> Doc:
    """An event as a document; ``fields`` is a perception record or an ``events`` row."""
    situation = situation_text(fields)
    text = " — ".join(t for t in (fields["text"], situation) if t)
    return Doc(event_id, "event", "episodic", text, [event_id], "perceived", 1.0, dict(fields["scope"]), ts_us)


def fragment_doc(row: dict) -> Doc:
    """A fragment as a document, from a ``fragments`` row."""
    return Doc(row["fragment_id"], "fragment", row["layer"], row["text"], list(row["event_ids"]), row["source"],
               float(row["confidence"]), dict(row["scope"]), _ts_us(row["ts"]))


def indexable(decoded: Decoded) -> list[Indexable]:
    """What a freshly appended record adds to the index (events and fragments)."""
    record = decoded.record
    if decoded.record_type == "perception":
        env = record["envelope"]
        return [(env["tenant"], event_doc(env["record_id"], record, env["ts_us"]), record["entities"])]
    if decoded.record_type == "cognition":
        return [(row["tenant"], fragment_doc(row), row["entities"])
                for row in fragments.project(decoded.record_type, record, decoded.position)]
    return []


class TenantIndex:
    def __init__(self):
        self.bm25 = BM25Index()
        self.docs: list[Doc] = []
        self.by_id: dict[str, int] = {}
        self._layers = np.empty(1024, dtype=np.uint8)

    def add_many(self, docs: list[tuple[Doc, list[str]]]) -> int:
        """Index documents (with extra cue terms); a redelivered id is skipped. Returns
        the number added."""
        fresh, seen = [], set()
        for doc, extra in docs:
            if doc.id in self.by_id or doc.id in seen:
                continue
            seen.add(doc.id)
            doc.tokens = estimate_tokens(doc.text)
            fresh.append((doc, tokens(doc.text) + list(extra)))
        if not fresh:
            return 0
        first = self.bm25.add(fresh[0][1]) if len(fresh) == 1 else self.bm25.add_many([t for _, t in fresh])
        end = first + len(fresh)
        if end > len(self._layers):
            self._layers = np.resize(self._layers, max(2 * len(self._layers), end))
        self._layers[first:end] = [_LAYER_CODE[doc.layer] for doc, _ in fresh]
        for n, (doc, _) in enumerate(fresh, first):
            self.docs.append(doc)
            self.by_id[doc.id] = n
        return len(fresh)

    def layer_mask(self, layers: list[str] | None) -> np.ndarray | None:
        if not layers:
            return None
        codes = [_LAYER_CODE[name] for name in layers]
        return np.isin(self._layers[: len(self.docs)], codes)


class RecallIndex:
    def __init__(self):
        self.tenants: dict[str, TenantIndex] = {}
        self._lock = threading.Lock()  # the Brain's own appends and a log tail both add

    def tenant(self, tenant: str) -> TenantIndex:
        index = self.tenants.get(tenant)
        if index is None:
            index = self.tenants[tenant] = TenantIndex()
        return index

    def add(self, items: list[Indexable]) -> None:
        by_tenant: dict[str, list[tuple[Doc, list[str]]]] = {}
        for tenant, doc, extra in items:
            by_tenant.setdefault(tenant, []).append((doc, extra))
        with self._lock:
            for tenant, docs in by_tenant.items():
                self.tenant(tenant).add_many(docs)

    def observe(self, batch: list[Decoded]) -> None:
        """Runner listener: index appended records the moment they are in the log."""
        self.add([item for decoded in batch for item in indexable(decoded)])

    def load(self, warehouse, chunk: int = 20_000) -> int:
        """(Re)build from the views. Returns the number of documents indexed."""
        self.tenants.clear()
        for table in (events.TABLE, fragments.TABLE):
            names, rows = warehouse.query_columns(f"SELECT * FROM `{table.name}` FINAL ORDER BY _offset")
            for start in range(0, len(rows), chunk):
                items = []
                for values in rows[start : start + chunk]:
                    row = dict(zip(names, values, strict=True))
                    doc = event_doc(row["event_id"], row, _ts_us(row["ts"])) if table is events.TABLE \
                        else fragment_doc(row)
                    items.append((row["tenant"], doc, row["entities"]))
                self.add(items)
        return sum(len(t.docs) for t in self.tenants.values())

    def validate_layers(self, layers: list[str] | None) -> None:
        unknown = sorted(set(layers or ()) - set(LAYERS))
        if unknown:
            raise ValueError(f"recall: field 'layers': unknown layer(s) {unknown}; known: {list(LAYERS)}")
