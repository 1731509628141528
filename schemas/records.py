"""Builders for log records: the envelope every record carries, and record ids.

Records are plain dicts shaped like their Avro schema (fastavro's native form, no copies).
Ids carry a type prefix so a human (and ``Brain.explain``) can tell what an id names.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta

from hindbrain.recall import _scan
from hindbrain.schemas.codec import registry

PRODUCER_SDK = "sdk/hindbrain"
# A record the service's edge wrote for an API key (round thirty-two, docs/security.md "The sender is the key"):
# "key/<key id>" for a key not bound to an agent — it may name any agent, so the key itself is who sent it —
# and "agent-key/<key id>" for a key bound to the record's agent (the edge sets the agent to the key's own).
PRODUCER_KEY, PRODUCER_AGENT_KEY = "key/", "agent-key/"


def key_producer(key_id: str, bound: bool) -> str:
    """The ``producer`` of a record the edge writes for key ``key_id`` (``bound``: to an agent)."""
    return f"{PRODUCER_AGENT_KEY if bound else PRODUCER_KEY}{key_id}"

ID_PREFIX = {
    "perception": "ev",
    "cognition": "fr",
    "recall": "rc",
    "injection": "in",
    "outcome": "oc",
    "decision": "dc",
    "dead_letter": "dl",
}


class _RandomHex:
    """Random 128-bit ids in hex, read from ``os.urandom`` 256 at a time: one system call per id
    released the interpreter lock 5,000 times a ``perceive_many`` batch, and a busy background
    thread (the vector graph) took it each time (cProfile: 61 µs an id in a loaded ingest run,
    1.3 µs alone; issue 28). Thread-safe; a forked child draws fresh bytes, never its parent's."""

    IDS = 256

    def __init__(self):
        self._lock = threading.Lock()
        self._hex, self._at = "", 0
        os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._hex, self._at = "", 0

    def many(self, n: int) -> list[str]:
        """``n`` ids, as ``n`` calls of ``next`` would give them, read from one ``os.urandom`` call
        for the rest of a batch (``perceive_many`` mints 5,000)."""
        return self.prefixed("", n)

    def prefixed(self, prefix: str, n: int) -> list[str]:
        """``[prefix + h for h in self.many(n)]``, each one string made in C (``_scan.prefixed_slices``: a slice
        and an f-string an id were ~0.1 µs, issue 28 round twenty). ``prefix``: ASCII."""
        out: list[str] = []
        with self._lock:
            while len(out) < n:
                if self._at >= len(self._hex):
                    self._hex, self._at = os.urandom(16 * max(self.IDS, n - len(out))).hex(), 0
                hex_, at = self._hex, self._at
                end = min(len(hex_), at + 32 * (n - len(out)))
                out += _scan.prefixed_slices(prefix, hex_, at, end, 32)
                self._at = end
        return out

    def next(self) -> str:
        with self._lock:
            if self._at >= len(self._hex):
                self._hex, self._at = os.urandom(16 * self.IDS).hex(), 0
            at = self._at
            self._at = at + 32
            return self._hex[at : at + 32]


_random_hex = _RandomHex()


def new_id(record_type: str) -> str:
    """A random 128-bit id with the record type's prefix, e.g. ``ev_9f0c...``."""
    return f"{ID_PREFIX[record_type]}_{_random_hex.next()}"


def new_ids(record_type: str, n: int) -> list[str]:
    """``n`` of ``new_id(record_type)``, drawn at once."""
    return _random_hex.prefixed(f"{ID_PREFIX[record_type]}_", n)


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


_last_us = 0
_clock = threading.Lock()


def now_us() -> int:
    """The wall clock in microseconds, strictly increasing within the process: a batch built in C
    stamps its events faster than a microsecond apart, and what sorts by time (a task's actions, the
    newest verdict) would otherwise meet ties the log's order had settled."""
    global _last_us
    t = time.time_ns() // 1000
    with _clock:
        if t <= _last_us:
            t = _last_us + 1
        _last_us = t
    return t


def now_us_many(n: int) -> Callable[[], int]:
    """A clock for a batch of at most ``n`` records: ``now_us``'s next ``n`` stamps reserved under one lock
    (the wall clock at the reservation, then a microsecond a record), handed out in turn by the returned
    callable, a C one. A batch built in C asked ``now_us`` once a record: ~0.3 µs of its lock and Python
    call an event (issue 28, round sixteen). Stamps past ``n`` would meet the ones ``now_us`` gives next."""
    global _last_us
    t = time.time_ns() // 1000
    with _clock:
        start = max(t, _last_us + 1)
        _last_us = start + n - 1
    return itertools.count(start).__next__


def to_us(ts: datetime) -> int:
    """Microseconds since the epoch, exactly; a naive datetime is taken as UTC. (Not through
    ``timestamp()``: its float was a microsecond off for ~3% of times, and rounded
    9999-12-31T23:59:59.999999 into the year 10000, which nothing can read back.)"""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return (ts - EPOCH) // timedelta(microseconds=1)


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
