"""The recall read model: per-tenant documents (events and fragments) with a BM25 index.

Built from the ``events`` and ``fragments`` views when a Brain opens, then kept current
from the records the Brain appends (read-your-writes). Tenants never share an index, which
is the hard tenant wall: a recall cannot even see another tenant's documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hindbrain.projections import events, fragments
from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.tokenize import estimate_tokens, tokens
from hindbrain.streams.processing import Decoded

LAYERS = ("episodic", "experience", "knowledge")
_LAYER_CODE = {name: i for i, name in enumerate(LAYERS)}
_SITUATION_FIELDS = ("system", "identity", "action", "expected", "actual")


@dataclass
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
    extra: dict = field(default_factory=dict)


def situation_text(fields: dict) -> str:
    """``system: IAM / identity: normal account / ... / actual: no response``."""
    return " / ".join(f"{k}: {fields[k]}" for k in _SITUATION_FIELDS if fields.get(k))


def _ts_us(ts) -> int:
    return ts if isinstance(ts, int) else int(ts.timestamp() * 1_000_000)


def doc_from_event_row(row: dict) -> Doc:
    situation = situation_text(row)
    text = " — ".join(t for t in (row["text"], situation) if t)
    return Doc(row["event_id"], "event", "episodic", text, [row["event_id"]], "perceived", 1.0,
               dict(row["scope"]), _ts_us(row["ts"]), extra={"kind": row["kind"], "session": row["session"],
                                                              "speaker": row["speaker"]})


def doc_from_fragment_row(row: dict) -> Doc:
    return Doc(row["fragment_id"], "fragment", row["layer"], row["text"], list(row["event_ids"]), row["source"],
               float(row["confidence"]), dict(row["scope"]), _ts_us(row["ts"]))


class TenantIndex:
    def __init__(self):
        self.bm25 = BM25Index()
        self.docs: list[Doc] = []
        self.by_id: dict[str, int] = {}
        self._layers = np.empty(1024, dtype=np.uint8)

    def add(self, doc: Doc, extra_terms: list[str] = ()) -> bool:
        if doc.id in self.by_id:  # a redelivered record: the index already has it
            return False
        doc.tokens = estimate_tokens(doc.text)
        n = self.bm25.add(tokens(doc.text) + list(extra_terms))
        if n == len(self._layers):
            self._layers = np.resize(self._layers, n * 2)
        self._layers[n] = _LAYER_CODE[doc.layer]
        self.docs.append(doc)
        self.by_id[doc.id] = n
        return True

    def layer_mask(self, layers: list[str] | None) -> np.ndarray | None:
        if not layers:
            return None
        codes = [_LAYER_CODE[name] for name in layers]
        return np.isin(self._layers[: len(self.docs)], codes)


class RecallIndex:
    def __init__(self):
        self.tenants: dict[str, TenantIndex] = {}

    def tenant(self, tenant: str) -> TenantIndex:
        index = self.tenants.get(tenant)
        if index is None:
            index = self.tenants[tenant] = TenantIndex()
        return index

    def add_event_row(self, row: dict) -> None:
        self.tenant(row["tenant"]).add(doc_from_event_row(row), row["entities"])

    def add_fragment_row(self, row: dict) -> None:
        self.tenant(row["tenant"]).add(doc_from_fragment_row(row), row["entities"])

    def observe(self, decoded: Decoded) -> None:
        """Runner listener: index a record the moment it is appended."""
        if decoded.record_type == "perception":
            for row in events.project(decoded.record_type, decoded.record, decoded.position):
                self.add_event_row(row)
        elif decoded.record_type == "cognition":
            for row in fragments.project(decoded.record_type, decoded.record, decoded.position):
                self.add_fragment_row(row)

    def load(self, warehouse) -> int:
        """(Re)build from the views. Returns the number of documents indexed."""
        self.tenants.clear()
        for table, add in ((events.TABLE, self.add_event_row), (fragments.TABLE, self.add_fragment_row)):
            names, rows = warehouse.query_columns(f"SELECT * FROM `{table.name}` FINAL ORDER BY _offset")
            for values in rows:
                add(dict(zip(names, values, strict=True)))
        return sum(len(t.docs) for t in self.tenants.values())

    def validate_layers(self, layers: list[str] | None) -> None:
        unknown = sorted(set(layers or ()) - set(LAYERS))
        if unknown:
            raise ValueError(f"recall: field 'layers': unknown layer(s) {unknown}; known: {list(LAYERS)}")
