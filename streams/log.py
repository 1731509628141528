"""The log interface every backend implements (embedded SQLite now, Kafka in a fleet).

The contract, tested for every backend by ``tests/streams/log_contract.py``:

1. ``append`` writes messages durably and returns one ``Position`` each, in order. A batch
   that fails validation (a value that is not ``bytes``, a key that is not ``str``/``None`` or
   not encodable as UTF-8, ...) raises ``TypeError``/``ValueError`` and leaves nothing of itself
   in the log, in every backend. Beyond validation, atomicity is the backend's: the embedded
   log writes a batch in one transaction (all-or-nothing); Kafka cannot make a
   multi-partition append atomic, so a broker failure mid-batch raises with part of the batch
   written (``streams/kafka_log.py``). Appending the same records again is safe: records
   carry their ids and the views deduplicate.
2. Within one (topic, partition), offsets only grow, and ``read`` returns messages in
   offset order, starting at the first offset >= the one asked for.
3. A consumer's committed offset is the *next* offset it will read (0 if it never
   committed); committing is idempotent and survives reopening the log.
4. Storage that refuses a write (no space left, a read-only file system, an I/O error)
   raises ``LogWriteError`` (an ``OSError``: ``errno`` ENOSPC, EROFS or EIO, ``filename`` the
   log) from the embedded log, and the refused append left nothing of itself. Kafka's
   failures are its own (``KafkaUnavailable``, ``TimeoutError``, ``KafkaError``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol


class LogWriteError(OSError):
    """The log's storage refused a write: nothing of the append (or of the group) is in the
    log. ``errno`` says why (``errno.ENOSPC`` no space left, ``errno.EROFS`` a read-only file
    system, ``errno.EIO`` any other I/O failure); ``filename`` is the log's path. Free space
    (or make the folder writable) and write again: the log is intact."""


class Message(NamedTuple):
    topic: str
    key: str | None
    value: bytes


class Position(NamedTuple):
    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class LogEntry:
    topic: str
    partition: int
    offset: int
    key: str | None
    value: bytes

    @property
    def position(self) -> Position:
        return Position(self.topic, self.partition, self.offset)


class Log(Protocol):
    def append(self, messages: Sequence[Message]) -> list[Position]: ...

    def partitions(self, topic: str) -> list[int]: ...

    def read(self, topic: str, partition: int, offset: int, limit: int = 1000) -> list[LogEntry]: ...

    def end_offset(self, topic: str, partition: int) -> int:
        """The offset the next appended message of this partition will have at least."""
        ...

    def commit(self, consumer: str, topic: str, partition: int, offset: int) -> None: ...

    def committed(self, consumer: str, topic: str, partition: int) -> int: ...

    def close(self) -> None: ...
