"""What a batch of records adds to the cue index (events as columns, units as documents), and how a batch
holding a long text is folded in parts beside the recalls in flight."""

from __future__ import annotations

from hindbrain.learning.write_gate import perception_class
from hindbrain.projections import fragments
from hindbrain.recall.documents import Indexable, fragment_doc
from hindbrain.recall.event_documents import EventColumns, EventRow, event_columns, event_doc
from hindbrain.streams.processing import Decoded
from hindbrain.switching import LONG_TEXT_CHARS


def indexables(batch: list[Decoded]) -> tuple[dict[str, EventColumns], list[Indexable]]:
    """What ``batch`` adds to the index: its events by tenant as columns, made at once for each tenant
    (``event_columns``), and its units (``indexable`` of each other record), in log order."""
    rows: dict[str, list[EventRow]] = {}
    units: list[Indexable] = []
    for decoded in batch:
        if decoded.record_type == "perception":
            record = decoded.record
            if perception_class(record) == "transactional":
                continue
            env = record["envelope"]
            rows.setdefault(env["tenant"], []).append((env["record_id"], record, env["ts_us"], env["agent"]))
        elif decoded.record_type == "cognition":
            units.extend(indexable(decoded))
    return {tenant: event_columns(part) for tenant, part in rows.items()}, units


_FOLDED_IN_ANY_ORDER = frozenset({"perception", "recall", "injection"})  # nothing of one rests on another


def fold_parts(batch: list[Decoded]) -> list[list[Decoded]] | None:
    """None when ``batch`` holds no text of ``LONG_TEXT_CHARS`` or more (folded whole, as ever).
    Else its parts, each folded after the recalls in flight (``hindbrain.switching.RecallPrecedence``):
    each long text alone and the runs of records between them (a replayed chunk of short events stays
    one batch around its long texts), when the batch holds only records whose fold is the same in
    parts (perceptions, and a recall's records, which the index does not read); else the batch whole."""
    long = [d.record_type == "perception" and len(d.record.get("text") or "") >= LONG_TEXT_CHARS for d in batch]
    if not any(long):
        return None
    if any(d.record_type not in _FOLDED_IN_ANY_ORDER for d in batch):
        return [batch]
    parts: list[list[Decoded]] = []
    for n, (decoded, alone) in enumerate(zip(batch, long, strict=True)):
        if not parts or alone or long[n - 1]:
            parts.append([])
        parts[-1].append(decoded)
    return parts


def indexable(decoded: Decoded) -> list[Indexable]:
    """What a freshly appended record adds to the index (events and fragments)."""
    record = decoded.record
    if decoded.record_type == "perception":
        env = record["envelope"]
        if perception_class(record) == "transactional":
            return []
        return [(env["tenant"], *event_doc(env["record_id"], record, env["ts_us"], env["agent"]))]
    if decoded.record_type == "cognition":
        return [(row["tenant"], *fragment_doc(row))
                for row in fragments.project(decoded.record_type, record, decoded.position)]
    return []
