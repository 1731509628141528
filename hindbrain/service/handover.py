"""A recall replica's records to its owner: length-prefixed frames on a private Unix socket.

Every recall a replica answers hands its recall and injection records to the owner, which
group-commits them like its own, before the agent gets the pack (``service.replica``). Over
HTTP (httpx to the owner's uvicorn) that hand-over cost about a third of the owner's CPU per
replica recall and a sixth of the replica's (py-spy, served recalls at 20k events: the owner's
HTTP parsing, JSON and the records' Avro encoding; httpx's client stack in the replica). Here:

* the replica encodes the records (``to_messages``: the Avro bytes the log holds) on its own
  core, and sends them with the records themselves (the owner projects those into its views
  and must not decode Avro to get them back) in one frame;
* a frame is ``u32 length`` + body; the body is ``u32 n`` + the records as one orjson array
  + n times ``u32 length`` + an encoded value; the owner answers each frame with one byte,
  ``ACK`` once the records are queued for its group commit, ``NAK`` when its ``append`` failed
  (the replica answers the agent 503, as before);
* a connection's first frame is the token (the owner's and its replicas' secret): anything
  else closes the connection unanswered. The socket lives in the owner's private temporary
  folder already; the token is the second lock.

The owner trusts the bytes a replica sends to match the records: both come from the same
function, in its own child process holding the token.
"""

from __future__ import annotations

import asyncio
import hmac
import struct
from collections.abc import Awaitable, Callable, Sequence

import orjson

from hindbrain.streams.log import Message
from hindbrain.streams.processing import to_messages
from hindbrain.streams.topics import TOPIC_OF, key_of

ACK, NAK = b"\x01", b"\x00"
_U32 = struct.Struct("<I")
MAX_FRAME = 64 << 20  # a recall's records are tens of kB; a larger length is a broken peer

Records = Sequence[tuple[str, dict]]
Append = Callable[[list, list[Message]], Awaitable[None]]  # (records, their messages) → queued


def frame(records: Records) -> bytes:
    """The frame that carries ``records`` and their encoded log values (``to_messages``, which
    refuses a record that does not fit its schema, before anything is sent)."""
    values = [m.value for m in to_messages(records)]
    head = orjson.dumps([[rt, r] for rt, r in records], option=orjson.OPT_SERIALIZE_NUMPY)
    parts = [_U32.pack(len(values)), _U32.pack(len(head)), head]
    for value in values:
        parts += [_U32.pack(len(value)), value]
    body = b"".join(parts)
    return _U32.pack(len(body)) + body


def unframe(body: bytes) -> tuple[list, list[Message]]:
    """(records, their log messages) of a frame's body; ``ValueError`` when it does not parse."""
    view = memoryview(body)
    try:
        (n,), (head,) = _U32.unpack_from(view, 0), _U32.unpack_from(view, 4)
        records = [(rt, r) for rt, r in orjson.loads(view[8:8 + head])]
        at, values = 8 + head, []
        for _ in range(n):
            (size,) = _U32.unpack_from(view, at)
            values.append(bytes(view[at + 4:at + 4 + size]))
            at += 4 + size
    except (struct.error, orjson.JSONDecodeError, TypeError, ValueError) as exc:
        raise ValueError(f"a records frame that does not parse: {exc}") from None
    if len(values) != len(records) or at != len(body) or any(len(v) == 0 for v in values):
        raise ValueError(f"a records frame of {len(records)} records, {len(values)} values and "
                         f"{len(body) - at} bytes left over")
    try:
        return records, [Message(TOPIC_OF[rt], key_of(r), v) for (rt, r), v in zip(records, values, strict=True)]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"a records frame with a record of no known topic or envelope: {exc!r}") from None


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    (size,) = _U32.unpack(await reader.readexactly(4))
    if size > MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes (at most {MAX_FRAME})")
    return await reader.readexactly(size)


async def serve_records(path: str, token: str, append: Append) -> asyncio.AbstractServer:
    """The owner's end: a Unix server at ``path`` that queues each frame's records with ``append``."""
    secret = token.encode()

    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if not hmac.compare_digest(await _read_frame(reader), secret):
                return
            while True:
                records, messages = unframe(await _read_frame(reader))
                try:
                    await append(records, messages)
                except Exception:  # noqa: BLE001 - this frame's refusal, told to its replica
                    writer.write(NAK)
                else:
                    writer.write(ACK)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass  # the replica went away, or sent what no replica sends: its connection ends
        except asyncio.CancelledError:
            # the owner's loop is stopping (SIGTERM) while this connection waits for a frame: the
            # handler ends as finished, not cancelled, because Python 3.11's stream protocol calls
            # ``exception()`` on its task, which raises for a cancelled one and is logged with a
            # traceback ("Exception in callback"; 3.12 checks ``cancelled()`` first). Nothing is
            # lost: a frame not ACKed yet is the replica's 503, as with any closed connection.
            pass
        finally:
            writer.close()

    return await asyncio.start_unix_server(connected, path)


class RecordsLink:
    """The replica's end: one connection, opened on first use (again after a failure), one
    frame at a time (the owner queues a frame in microseconds; concurrent recalls wait their turn)."""

    def __init__(self, path: str, token: str):
        self.path, self.token = path, token.encode()
        self._conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._lock: asyncio.Lock | None = None

    async def send(self, data: bytes) -> bool:
        """Sends one ``frame``; True once the owner queued its records, False if it refused them.
        Raises ``OSError`` (or ``asyncio.IncompleteReadError``) when the owner cannot be reached."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            try:
                if self._conn is None:
                    reader, writer = await asyncio.open_unix_connection(self.path)
                    writer.write(_U32.pack(len(self.token)) + self.token)
                    self._conn = reader, writer
                reader, writer = self._conn
                writer.write(data)
                return await reader.readexactly(1) == ACK
            except BaseException:
                self.close()
                raise

    def close(self) -> None:
        if self._conn is not None:
            self._conn[1].close()
            self._conn = None
