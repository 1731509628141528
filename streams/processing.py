"""The pure half of every stream processor: decode → validate → project, batched.

Used by the embedded runner, by replay, and (in a fleet) by the Faust worker, so every
runner makes exactly the same rows from the same records. No IO, no clock, no settings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import groupby, repeat
from operator import itemgetter
from typing import NamedTuple

from hindbrain.projections import events
from hindbrain.projections.views import VIEWS_BY_RECORD_TYPE, project_record
from hindbrain.recall import _scan
from hindbrain.schemas.codec import CodecError, registry
from hindbrain.schemas.records import envelope
from hindbrain.streams.log import LogEntry, Message, Position
from hindbrain.streams.principals import NO_PRINCIPALS, Principals, binding_reason, principal_of
from hindbrain.streams.topics import TOPIC_OF

PRODUCER_RUNNER = "runner/hindbrain"
_new_tuple = tuple.__new__
# The times a record may carry, in microseconds: 0001-01-01 to 9999-12-31T23:59:59.999999 UTC,
# what Python's datetime (and so every reader of the views) can represent.
TS_US_RANGE = (-62_135_596_800_000_000, 253_402_300_799_999_999)
# A dead letter keeps at most this much of its original: the whole value stays at its position
# in the log (kept forever), and a dead letter holding a ~1 MB original whole would itself be
# over Kafka's message limit, which stopped the projector.
MAX_ORIGINAL = 64 * 1024
# A decision id is at most this long: every writer's is ``derived_id``'s or ``new_id``'s (35 characters).
# Every fold keeps each id it saw (the learner's ``folded``, the recall index's ``_unit_decisions_seen``,
# ~125 bytes one of 35 characters), so a writer's id of a megabyte would cost that in each, for good.
MAX_DECISION_ID = 64


class Decoded(NamedTuple):
    """A record the log holds, decoded, at its position. A named tuple, not a frozen dataclass:
    one is made per record on the caller's path (``EmbeddedRunner._append``) and in every fold
    of the log, and a frozen dataclass's ``__init__`` (``object.__setattr__`` per field) cost
    ~1.3 us against ~0.2 here (issue 28, docs/speed.md round thirteen). ``value``: the record's encoded
    log value, where the code that made it had it (the embedded runner's projection hands a round's
    perceptions to chDB as these bytes, ``EmbeddedRunner._insert_perceptions``); None where it did not."""

    position: Position
    record_type: str
    record: dict
    value: bytes | None = None

    @property
    def topic(self) -> str:
        """The log topic, as a ``LogEntry``'s (``columnar.split_hot`` reads either)."""
        return self.position.topic


@dataclass
class ProjectedBatch:
    rows: dict[str, list[dict]] = field(default_factory=dict)
    dead_letters: list[dict] = field(default_factory=list)  # DeadLetter records, not yet in the log
    count: int = 0
    # Rows already in columns (``streams.columnar``), by table: inserted beside ``rows``.
    tables: dict[str, list] = field(default_factory=dict)

    def add_rows(self, rows_by_table: dict[str, list[dict]]) -> None:
        for table, rows in rows_by_table.items():
            self.rows.setdefault(table, []).extend(rows)


def to_messages(records: Iterable[tuple[str, dict]]) -> list[Message]:
    """Encode ``(record_type, record)`` pairs as log messages on their topics, keyed tenant/agent. Each run of
    one record type (a ``perceive_many`` batch is one) is encoded in one call (``Registry.encode_many``: issue 28,
    round eighteen), and its keys in another (``_scan.message_keys``: ``key_of`` a record was ~0.2 µs, round
    twenty-two); the same messages as each record's ``registry.encode`` (tests/streams/test_to_messages.py) and
    ``key_of`` (tests/streams/test_message_keys.py)."""
    out: list[Message] = []
    for record_type, run in groupby(records, key=itemgetter(0)):
        values = [r for _, r in run]
        encoded = registry.encode_many(record_type, values)  # first: a record that fails both fails as it did
        if record_type == "decision":  # after: a value of the wrong type is the codec's to name
            refuse_unreadable_decisions(values)
        # ``tuple.__new__`` makes the named tuple without its generated ``__new__``'s Python frame
        out += map(_new_tuple, repeat(Message), zip(repeat(TOPIC_OF[record_type]), _scan.message_keys(values),
                                                    encoded))
    return out


def refuse_unreadable_decisions(records: list[dict]) -> None:
    """Raise ``ValueError`` naming the field for a decision every reader would dead-letter
    (``decision_id_reason``): an embedded writer's record reaches the learner and the recall index
    before the projector sees it (``EmbeddedRunner._append``'s listeners), so it must not enter the log."""
    for record in records:
        reason = decision_id_reason(record)
        if reason:
            raise ValueError(f"a decision record's {reason}")


def dead_letter(position: Position, stage: str, reason: str, original: bytes, ts_us: int, tenant: str = "") -> dict:
    """A DeadLetter record for the record at ``position``; its id is derived from the
    position, so dead-lettering the same record again yields the same record id. An original
    over ``MAX_ORIGINAL`` bytes is kept cut, and the reason says so."""
    env = envelope(
        "dead_letter", tenant, producer=PRODUCER_RUNNER, ts_us=ts_us,
        record_id=f"dl_{position.topic}_{position.partition}_{position.offset}",
    )
    original, reason = bytes(original), reason[:4000]
    if len(original) > MAX_ORIGINAL:
        reason += (f" (original: its first {MAX_ORIGINAL} of {len(original)} bytes; the whole value is at "
                   f"{position.topic}[{position.partition}]@{position.offset})")
        original = original[:MAX_ORIGINAL]
    return {"envelope": env, "topic": position.topic, "position": position.offset,
            "stage": stage, "reason": reason, "original": original}


def invalid_reason(record_type: str, record: dict, topic: str, principals: Principals = NO_PRINCIPALS) -> str | None:
    """Why a decoded record cannot be accepted, or None. The checks the codec cannot make. A perception on a
    principal's topic (``streams.principals``) must name what ``principals`` binds that principal to."""
    env = record["envelope"]
    principal = principal_of(topic)
    if principal is not None and record_type == "perception":
        return binding_reason(principals, principal, env["tenant"], env["agent"]) or _envelope_reason(record_type, env)
    if TOPIC_OF.get(record_type) != topic:
        return f"a {record_type} record on topic {topic!r}"
    reason = _envelope_reason(record_type, env)
    if reason or record_type != "decision":
        return reason
    return decision_id_reason(record)


def _envelope_reason(record_type: str, env: dict) -> str | None:
    """Why a record's envelope cannot be taken (an empty tenant or id, a time no reader can hold), or None."""
    if not env["tenant"] and record_type != "dead_letter":  # an undecodable record has no tenant
        return "envelope.tenant is empty"
    if not env["record_id"]:
        return "envelope.record_id is empty"
    if not TS_US_RANGE[0] <= env["ts_us"] <= TS_US_RANGE[1]:  # it would make rows nothing can read back
        return f"envelope.ts_us {env['ts_us']} is outside the years 1 to 9999"
    return None


def decision_id_reason(record: dict) -> str | None:
    """Why a decision record's ``decision_id`` cannot be taken (empty, or over ``MAX_DECISION_ID``
    characters), or None."""
    decision_id = record["decision_id"]
    if not decision_id:
        return "decision_id is empty"
    if len(decision_id) > MAX_DECISION_ID:
        return f"decision_id is {len(decision_id)} characters, over {MAX_DECISION_ID}"
    return None


def decoded_entries(entries: list[LogEntry], principals: Principals = NO_PRINCIPALS) -> list[Decoded]:
    """The entries that decode and validate (a log reader's fold: the projector dead-letters
    the others, so they are in no view either)."""
    return [d for d in (decode_entry(e, 0, principals) for e in entries) if isinstance(d, Decoded)]


def decode_entry(entry: LogEntry, ts_us: int, principals: Principals = NO_PRINCIPALS) -> Decoded | dict:
    """Decode and validate one log entry: a ``Decoded``, or a DeadLetter record saying why not."""
    try:
        record_type, record = registry.decode(entry.value)
    except CodecError as exc:
        return dead_letter(entry.position, "decode", str(exc), entry.value, ts_us)
    reason = invalid_reason(record_type, record, entry.topic, principals)
    if reason:
        return dead_letter(entry.position, "validate", reason, entry.value, ts_us, record["envelope"]["tenant"])
    return Decoded(entry.position, record_type, record, entry.value)


def project_batch(
    items: Iterable[Decoded | LogEntry], ts_us: int, batch: ProjectedBatch | None = None,
    principals: Principals = NO_PRINCIPALS,
) -> ProjectedBatch:
    """Project decoded records (or raw entries, decoded here, a principal's topic checked against
    ``principals``) into rows per table.

    A record that fails to decode, validate or project becomes a DeadLetter record in
    ``batch.dead_letters`` and processing continues; nothing is dropped silently.
    """
    batch = batch or ProjectedBatch()
    for item in items:
        batch.count += 1
        if isinstance(item, LogEntry):
            item = decode_entry(item, ts_us, principals)
            if isinstance(item, dict):
                batch.dead_letters.append(item)
                continue
        try:
            rows = project_record(item.record_type, item.record, item.position)
        except Exception as exc:  # a projector bug must not stop the stream
            original = registry.encode(item.record_type, item.record)
            batch.dead_letters.append(
                dead_letter(item.position, "project", f"{type(exc).__name__}: {exc}", original, ts_us,
                            item.record["envelope"]["tenant"])
            )
            continue
        batch.add_rows(rows)
    return batch


# the column path below writes only ``events``, the one view of perceptions (as ``streams.columnar``'s)
assert [v.table.name for v in VIEWS_BY_RECORD_TYPE["perception"]] == ["events"], "perception views changed"


def project_perceptions(items: list[Decoded], batch: ProjectedBatch) -> list[Decoded]:
    """The perceptions among ``items`` projected into ``batch.tables`` as one ``events`` Arrow table
    (``events.project_columns``: no row dict a record, ~5 -> ~2 us an event on the embedded
    projector's thread, docs/speed.md round fifteen); returns the other items, for ``project_batch``.
    Where the column path raises (a record ``project`` would dead-letter), it takes nothing: every
    item is returned, and the per-record path says which record failed and why."""
    hot = [d for d in items if d.record_type == "perception"]
    if not hot:
        return items
    try:
        table = events.project_columns([d.record for d in hot], [d.position for d in hot])
    except Exception:  # noqa: BLE001 - the per-record path dead-letters the record with its reason
        return items
    batch.tables.setdefault("events", []).append(table)
    batch.count += len(hot)
    return [d for d in items if d.record_type != "perception"] if len(hot) < len(items) else []
