"""Builders for log records: the envelope every record carries, and record ids.

Records are plain dicts shaped like their Avro schema (fastavro's native form, no copies).
Ids carry a type prefix so a human (and ``Brain.explain``) can tell what an id names.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from datetime import UTC, datetime

from hindbrain.schemas.codec import registry

PRODUCER_SDK = "sdk/hindbrain"

ID_PREFIX = {
    "perception": "ev",
    "cognition": "fr",
    "recall": "rc",
    "injection": "in",
    "outcome": "oc",
    "decision": "dc",
    "dead_letter": "dl",
}


def new_id(record_type: str) -> str:
    """A random 128-bit id with the record type's prefix, e.g. ``ev_9f0c...``."""
    return f"{ID_PREFIX[record_type]}_{os.urandom(16).hex()}"


def now_us() -> int:
    return time.time_ns() // 1000


def to_us(ts: datetime) -> int:
    """Microseconds since the epoch; a naive datetime is taken as UTC."""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return int(ts.timestamp() * 1_000_000)


def envelope(
    record_type: str,
    tenant: str,
    *,
    agent: str | None = None,
    task: str | None = None,
    causation_ids: Iterable[str] = (),
    producer: str = PRODUCER_SDK,
    record_id: str | None = None,
    ts_us: int | None = None,
) -> dict:
    return {
        "record_id": record_id or new_id(record_type),
        "ts_us": now_us() if ts_us is None else ts_us,
        "tenant": tenant,
        "agent": agent,
        "task": task,
        "schema_version": registry.current(record_type).version,
        "causation_ids": list(causation_ids),
        "producer": producer,
    }
