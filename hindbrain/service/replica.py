"""Recall replicas: processes that answer ``POST /v1/recall`` beside the brain's owner (design.md §issue-18).

One process owns an embedded brain (its log, its chDB views, its learner), and its Python
runs one recall at a time. ``hindbrain serve --replicas N`` starts N more processes. The owner
accepts every connection and hands them out in turn, itself included (``Balancer``): a
replica's share arrives as a file descriptor over its channel and is served there from then
on. (Letting the kernel choose was measured first: one socket shared by every process let the
idle owner win 4 of 4 ``accept`` calls; ``SO_REUSEPORT`` hashed 4 connections 3:1 or 4:0.)
Each replica:

* holds its own recall read model (``Follower``): it folds the SQLite log into a
  ``RecallIndex`` on start, then tails it (SQLite's WAL admits readers in other processes),
  before every recall and every ``TAIL_S`` in between. What the owner acknowledged is in the
  log, so an agent reads its own writes whichever process its next request lands on;
* answers recalls from it, and hands the recall's own records (recall, injection), encoded
  for the log, to the owner over a private Unix socket (``service.handover``: frames, with a
  token only the owner and its replicas know), *before* it answers the agent: the owner
  group-commits them like its own, so an outcome naming that recall is never in the log before it;
* forwards every other request to the owner, unchanged (one writer: the owner);
* maps the owner's vector snapshot read-only (``recall.vector_snapshot``: the codes, the graph,
  a key map), so it neither embeds nor rebuilds what the owner had; the vectors of documents after
  the snapshot come from the owner's embedding cache (``SemanticIndex(follow=True)``) instead of
  being embedded again. A missing or damaged snapshot is named on stderr and the vectors rebuilt.

A replica that dies is restarted by the owner (``Replicas``); a replica whose owner died exits.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson

from hindbrain.brain import (
    fold_log,
    recall_with_records,
    semantic_index,
    snapshot_offset,
    vector_snapshots,
)
from hindbrain.projections.table import warm_arrow
from hindbrain.recall.engine import RecallEngine
from hindbrain.recall.index import RecallIndex
from hindbrain.recall.index_snapshot import restore
from hindbrain.recall.pack import RecallPack
from hindbrain.recall.vector_snapshot import Checkpoints
from hindbrain.service.asgi import read_body, send_json
from hindbrain.service.handover import RecordsLink, frame, serve_records
from hindbrain.service.http import VERSION, FastRoutes, RequestIds, Unavailable
from hindbrain.service.keys import KeyStore
from hindbrain.service.limits import Limits
from hindbrain.service.metrics import Metrics
from hindbrain.service.principal import Principal
from hindbrain.service.wire import uvicorn_options
from hindbrain.settings import Settings
from hindbrain.streams.gc_pause import Refreezer, freeze_long_lived
from hindbrain.streams.sqlite_log import ALL_TOPICS, SqliteLog
from hindbrain.switching import shorten_switch_interval

SERVING = f"/{VERSION}/internal/serving"  # a replica tells the owner it accepts connections
TOKEN_HEADER = b"x-hindbrain-replica"
TOKEN_ENV = "HINDBRAIN_REPLICA_TOKEN"
SERVED_BY = b"x-hindbrain-served-by"  # "replica-<n>" on a replica's answers: which process answered
TAIL_S = 0.05  # a replica's tail of the log between recalls
RESTART_S = 1.0  # the owner's wait before restarting a replica that exited
AUTO_MAX = 3  # replicas of --replicas auto


class Follower:
    """The recall read model of an embedded brain's home, in a process that does not own it:
    the log folded into a ``RecallIndex`` and tailed (``catch_up``)."""

    def __init__(self, cfg: Settings):
        self.settings = cfg
        shorten_switch_interval(cfg.switch_interval_ms)  # its recalls beside the tail's fold (hindbrain/switching.py)
        self.log = SqliteLog(cfg.log_path(), synchronous=cfg.log_sync)
        self.index = RecallIndex(semantic_index(cfg, follow=True))
        # the owner's snapshot (recall.index_snapshot): the read model and the vectors it held are
        # mapped, not folded, embedded or rebuilt; the log is folded from where it ends
        self.vectors, self.next_offset = restore(self.index, vector_snapshots(cfg), self.log.end_offset(ALL_TOPICS, 0))
        self.engine = RecallEngine(self.index, cfg.recall_fusion(), quarantine=cfg.quarantine)
        self._lock = threading.Lock()  # the tail and the recalls take turns
        self._refreeze = Refreezer()  # what it indexed leaves the full collections (streams/gc_pause.py)
        self.read_at = 0.0  # monotonic time the last catch-up read the log's end (``fresh_within``)

    def catch_up(self, chunk: int = 20_000) -> int:
        """Index what the log holds beyond ``next_offset`` (of ``INDEXED_TOPICS``); returns the
        records read."""
        with self._lock:
            read_at = time.monotonic()
            end = self.log.end_offset(ALL_TOPICS, 0)  # read up to here, then skip the rest of it
            done = fold_log(self.index, self.log, self.next_offset, end, chunk, self._refreeze)
            self.next_offset = max(self.next_offset, end)
            self.read_at = read_at
        return done

    def fresh_within(self, seconds: float) -> bool:
        """Whether a catch-up read the log's end within the last ``seconds``."""
        return time.monotonic() - self.read_at < seconds

    def recall(self, fields: dict) -> tuple[RecallPack, list]:
        """``Brain.recall`` over this read model, after catching up with the log: the pack and
        the records the owner must append."""
        self.catch_up()
        with self._lock:
            return recall_with_records(self.index, self.engine, fields)

    def answer(self, fields: dict) -> tuple[dict, bytes]:
        """``recall``'s pack as the answer's data and its records as the owner's frame
        (``handover.frame``: encoded here, on the replica's core, not the owner's)."""
        pack, records = self.recall(fields)
        return pack.as_dict(), frame(records)

    def warming(self) -> bool:
        """Whether the semantic index is still taking the vectors from the cache or building
        its graph (the owner's ``/readyz`` "warming"): until then a search scans, slower."""
        return self.index.semantic is not None and not self.index.semantic.settled()

    def close(self) -> None:
        if self.index.semantic is not None:
            self.index.semantic.close()
        self.log.close()


def records_path(owner_path: str) -> str:
    """The owner's records socket (``handover.serve_records``), beside its HTTP socket."""
    return str(Path(owner_path).with_name("records.sock"))


class OwnerLink:
    """The replica's way to the owner: its Unix socket (HTTP, for what the replica forwards),
    its records socket (``handover``), and the token of both."""

    def __init__(self, path: str, token: str, records: str | None = None):
        self.headers = {TOKEN_HEADER.decode(): token}
        self.client = httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(uds=path), base_url="http://owner",
                                        timeout=httpx.Timeout(120.0, connect=5.0))
        self.records = RecordsLink(records or records_path(path), token)

    async def record(self, data: bytes) -> None:
        """Hands a recall's records (a ``handover.frame``) to the owner; returns once it has queued them."""
        try:
            queued = await asyncio.wait_for(self.records.send(data), 120.0)
        except (TimeoutError, OSError, asyncio.IncompleteReadError) as exc:
            raise Unavailable(f"the brain's owner process is unreachable: {exc!r}") from None
        if not queued:
            raise Unavailable("the brain's owner refused the recall's records")

    async def aclose(self) -> None:
        self.records.close()
        await self.client.aclose()

    async def announce(self, name: str) -> None:
        """Tells the owner this replica accepts connections (its ``/readyz`` counts it)."""
        await self.client.post(SERVING, content=orjson.dumps({"name": name}), headers=self.headers)


class ToOwner:
    """Pure ASGI: forwards a request to the owner and its answer back (everything a replica
    does not answer itself). The replica's request id goes with it."""

    HOP = {b"host", b"content-length", b"connection", b"transfer-encoding", b"keep-alive", b"x-request-id",
           SERVED_BY}

    def __init__(self, owner: OwnerLink):
        self.owner = owner

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":
            return await _lifespan(receive, send)
        if scope["type"] != "http":
            return
        body = await read_body(receive)
        headers = [(k, v) for k, v in scope["headers"] if k not in self.HOP]
        headers.append((b"x-request-id", scope["state"]["request_id"].encode("latin-1")))
        target = scope["raw_path"].decode("latin-1") + (f"?{scope['query_string'].decode('latin-1')}"
                                                         if scope["query_string"] else "")
        forward = asyncio.ensure_future(self.owner.client.request(scope["method"], target, headers=headers,
                                                                   content=body))
        if not await answered_before_disconnect(forward, receive):
            return  # the client went away: the forward's connection closed, so the owner stops (a tenant query dies)
        try:
            answer = forward.result()
        except httpx.TransportError as exc:
            status, content = 503, orjson.dumps({"detail": f"the brain's owner process is unreachable: {exc}"})
            out = [(b"content-type", b"application/json"), (b"retry-after", b"1")]
        else:
            status, content = answer.status_code, answer.content
            out = [(k, v) for k, v in answer.headers.raw if k.lower() not in self.HOP]
        await send({"type": "http.response.start", "status": status,
                    "headers": [*out, (b"content-length", str(len(content)).encode())]})
        await send({"type": "http.response.body", "body": content})


async def answered_before_disconnect(forward: asyncio.Future, receive) -> bool:
    """Wait for ``forward``; if the client disconnects first, cancel it and say so (False)."""
    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    gone = asyncio.ensure_future(disconnected())
    await asyncio.wait({forward, gone}, return_when=asyncio.FIRST_COMPLETED)
    if forward.done():
        gone.cancel()
        return True
    forward.cancel()
    return False


async def _lifespan(receive, send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


class ServedBy:
    """Pure ASGI: names the process that answered (``x-hindbrain-served-by``)."""

    def __init__(self, app, name: str):
        self.app, self.name = app, name.encode()

    async def __call__(self, scope, receive, send):
        async def named(message):
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (SERVED_BY, self.name)]
            await send(message)

        return await self.app(scope, receive, named if scope["type"] == "http" else send)


def replica_app(follower: Follower, keys: KeyStore, owner: OwnerLink, name: str):
    """The replica's ASGI app: recalls here, everything else forwarded to the owner."""
    worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hindbrain-replica")

    async def recalled(key: Principal, fields: dict) -> dict:
        loop = asyncio.get_running_loop()
        answer, records = await loop.run_in_executor(worker, follower.answer, {**fields, "tenant": key.tenant})
        await owner.record(records)
        return answer

    routes = FastRoutes(ToOwner(owner), {f"/{VERSION}/recall": recalled}, keys)
    return ServedBy(RequestIds(Limits.of(routes, keys, follower.settings), Metrics()), name)


class ReplicaRoutes:
    """Pure ASGI, on the owner: the internal route of replicas holding the token (anyone
    else: 404). ``POST /v1/internal/serving``: the replica is counted as serving. (Their
    recall records come over the records socket, ``service.handover``.)"""

    def __init__(self, app, token: str, serving: set[str]):
        self.app, self.token, self.serving = app, token.encode(), serving

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] != SERVING:
            return await self.app(scope, receive, send)
        given = next((v for k, v in scope["headers"] if k == TOKEN_HEADER), b"")
        if scope["method"] != "POST" or not hmac.compare_digest(given, self.token):
            return await send_json(send, 404, {"detail": "Not Found"})
        body = orjson.loads(await read_body(receive))
        self.serving.add(body["name"])
        return await send_json(send, 200, {"serving": sorted(self.serving)})


class Replicas:
    """The owner's replica processes, each with a datagram channel that carries the connections
    handed to it; restarted when one exits, stopped with the owner."""

    def __init__(self, count: int, home: Path, owner_path: str, token: str, log_level: str):
        self.count, self.home, self.owner_path, self.token, self.log_level = count, home, owner_path, token, log_level
        self.processes: list[subprocess.Popen | None] = [None] * count
        self.channels: list[socket.socket | None] = [None] * count  # the owner's ends
        self.serving: set[str] = set()  # names of the replicas that announced themselves
        self._stopping = threading.Event()
        self._watch = threading.Thread(target=self._keep_alive, name="hindbrain-replicas", daemon=True)

    def start(self) -> None:
        for n in range(self.count):
            self._spawn(n)
        self._watch.start()

    def _spawn(self, n: int) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        ours.setblocking(False)
        self.processes[n] = subprocess.Popen(
            [sys.executable, "-m", "hindbrain.service.replica", "--home", str(self.home), "--channel",
             str(theirs.fileno()), "--owner", self.owner_path, "--name", name_of(n), "--log-level", self.log_level],
            pass_fds=[theirs.fileno()], env={**os.environ, TOKEN_ENV: self.token})
        theirs.close()
        old, self.channels[n] = self.channels[n], ours
        if old is not None:
            old.close()

    def targets(self) -> list[socket.socket]:
        """The channels of the replicas that serve now."""
        return [ch for n, ch in enumerate(self.channels) if ch is not None and name_of(n) in self.serving]

    def _keep_alive(self) -> None:
        while not self._stopping.wait(RESTART_S):
            for n, proc in enumerate(self.processes):
                if proc is not None and proc.poll() is not None and not self._stopping.is_set():
                    print(f"hindbrain serve: {name_of(n)} exited ({proc.returncode}); restarting", file=sys.stderr)
                    self.serving.discard(name_of(n))
                    self._spawn(n)

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        live = [p for p in self.processes if p is not None and p.poll() is None]
        for proc in live:
            proc.terminate()
        deadline = time.monotonic() + timeout
        for proc in live:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def name_of(n: int) -> str:
    return f"replica-{n + 1}"


class Balancer:
    """The owner's accept loop: each new connection goes, in turn, to the owner itself or to a
    serving replica, whose process gets the socket over its channel (``SCM_RIGHTS``) and serves
    it from then on. A replica that cannot take it (it just died) leaves it to the owner."""

    def __init__(self, listener: socket.socket, keep, replicas: Replicas):
        self.listener, self.keep, self.replicas = listener, keep, replicas

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.listener.setblocking(False)
        turn = 0
        while True:
            conn, _ = await loop.sock_accept(self.listener)
            targets = [None, *self.replicas.targets()]
            target, turn = targets[turn % len(targets)], turn + 1
            if target is not None:
                try:
                    socket.send_fds(target, [b"c"], [conn.fileno()])
                    conn.close()
                    continue
                except OSError:
                    pass  # its process is gone: the owner serves this one
            await loop.connect_accepted_socket(self.keep, nodelay(conn))


def nodelay(conn: socket.socket) -> socket.socket:
    """No Nagle delay on a connection accepted by hand (a response's head and body are
    separate writes; measured: ~50 ms a request without it)."""
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


async def started(server, sockets: list) -> asyncio.Task:
    """Starts ``server.serve(sockets)`` and returns its task once the server has started (or
    has already stopped)."""
    serving = asyncio.create_task(server.serve(sockets=sockets))
    while not server.started and not serving.done():
        await asyncio.sleep(0.02)
    return serving


def protocol_factory(server):
    """What uvicorn makes for each connection of ``server`` (a started ``uvicorn.Server``), so a
    connection accepted elsewhere is served by it like one it accepted."""
    config = server.config
    return lambda: config.http_protocol_class(config=config, server_state=server.server_state,
                                              app_state=server.lifespan.state)


def replica_count(setting: str, embedded: bool) -> int:
    """``--replicas``: a number, or ``auto`` (one per core beyond the owner's, at most
    ``AUTO_MAX``; none over Kafka, where one runs more servers instead)."""
    if setting != "auto":
        count = int(setting)
        if count < 0:
            raise ValueError(f"--replicas must be auto or a number ≥ 0, not {setting!r}")
        return count
    return min(AUTO_MAX, max(0, (os.cpu_count() or 1) - 1)) if embedded else 0


def listen(host: str, port: int) -> socket.socket:
    """The server's listening socket (``OSError`` when the port is taken): bound before anything
    is announced or loaded, so a busy port fails at once."""
    return socket.create_server((host, port), backlog=2048)


def serve_owner(brain, app, host: str, port: int, replicas: int, log_level: str,
                listener: socket.socket | None = None) -> None:
    """Runs ``app`` (the owner's API over ``brain``) on ``host:port`` (or on ``listener``, bound
    already) with ``replicas`` recall replicas, until interrupted."""
    import uvicorn

    listener = listener or listen(host, port)
    if brain.index.semantic is not None:
        brain.index.semantic.warm()  # the first recall is not the query model's load
    warm_arrow()  # nor the first projection pandas' import (projections.table.warm_arrow)
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, access_log=False,
                                           **uvicorn_options(brain.settings)))
    if not replicas:
        server.run(sockets=[listener])
        return
    spare = tempfile.TemporaryDirectory(prefix="hindbrain-owner-")  # a Unix socket's path is short
    inner_path = str(Path(spare.name) / "owner.sock")
    inner = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    inner.bind(inner_path)
    inner.listen(2048)
    token = secrets.token_hex(16)

    async def append(records: list, messages: list) -> None:
        # not through the owner's thread: queued behind the owner's own recalls, the replica
        # would wait for them (measured: the replica idle a third of the time)
        brain.runner.defer(records, messages)

    # a replica started later (one restarted after a crash) maps vectors this recent
    checkpoints = Checkpoints(brain.index, vector_snapshots(brain.settings),
                              lambda: snapshot_offset(brain.log), writer_lock=brain.log.lock).start()
    pool = Replicas(replicas, brain.settings.home, inner_path, token, log_level)
    app.front = ServedBy(ReplicaRoutes(app.front, token, pool.serving), "owner")
    app.state.replicas = pool

    async def serve() -> None:
        records = await serve_records(records_path(inner_path), token, append)  # before a replica can serve
        serving = await started(server, [inner])  # the replicas' way in
        accepting = asyncio.create_task(Balancer(listener, protocol_factory(server), pool).run())
        try:
            await serving
        finally:
            accepting.cancel()
            records.close()

    pool.start()
    try:
        with asyncio.Runner(loop_factory=server.config.get_loop_factory()) as runner:  # uvloop, as uvicorn's
            runner.run(serve())
    finally:
        checkpoints.stop()
        pool.stop()
        spare.cleanup()


def _exit_with_owner(owner_pid: int) -> None:
    """A replica outlives no owner (killed with -9, the owner cannot stop it)."""
    while os.getppid() == owner_pid:
        time.sleep(1.0)
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    import uvicorn

    ap = argparse.ArgumentParser(prog="python -m hindbrain.service.replica", description=__doc__.splitlines()[0])
    ap.add_argument("--home", required=True)
    ap.add_argument("--channel", type=int, required=True, help="the datagram socket the owner hands connections on")
    ap.add_argument("--owner", required=True, help="the owner's Unix socket")
    ap.add_argument("--name", default="replica")
    ap.add_argument("--log-level", default="warning")
    args = ap.parse_args(argv)
    threading.Thread(target=_exit_with_owner, args=(os.getppid(),), daemon=True).start()
    cfg = Settings(home=Path(args.home))
    follower = Follower(cfg)
    began = time.perf_counter()
    indexed = follower.catch_up()
    if follower.index.semantic is not None:
        follower.index.semantic.warm()  # before it announces itself: the first recall is not the model's load
    freeze_long_lived()
    print(f"hindbrain serve: {args.name} (pid {os.getpid()}) indexed {indexed:,} of {follower.next_offset:,} log "
          f"records in {time.perf_counter() - began:.1f} s; {follower.vectors}", file=sys.stderr)
    owner = OwnerLink(args.owner, os.environ[TOKEN_ENV])
    app = replica_app(follower, KeyStore(cfg.home), owner, args.name)
    config = uvicorn.Config(app, log_level=args.log_level, access_log=False, lifespan="off", **uvicorn_options(cfg))
    channel = socket.socket(fileno=args.channel)

    async def serve() -> None:
        tail = asyncio.create_task(_tail(follower))
        server = uvicorn.Server(config)
        serving = await started(server, [])  # connections come from the owner
        try:
            if server.started:
                _take_connections(channel, protocol_factory(server), server)
                while follower.warming():  # the owner hands it nothing until then
                    await asyncio.sleep(0.2)
                await owner.announce(args.name)
            await serving
        finally:
            tail.cancel()
            await owner.aclose()

    try:
        with asyncio.Runner(loop_factory=config.get_loop_factory()) as runner:
            runner.run(serve())
    except KeyboardInterrupt:
        pass
    finally:
        follower.close()
    return 0


def _take_connections(channel: socket.socket, protocol, server) -> None:
    """Serves each connection the owner hands over on ``channel``; the owner gone (the
    channel's end closed), the replica stops."""
    loop = asyncio.get_running_loop()
    channel.setblocking(False)

    def take() -> None:
        try:
            message, fds, _, _ = socket.recv_fds(channel, 16, 16)
        except BlockingIOError:
            return
        for fd in fds:
            loop.create_task(loop.connect_accepted_socket(protocol, nodelay(socket.socket(fileno=fd))))
        if not message and not fds:
            loop.remove_reader(channel.fileno())
            server.should_exit = True

    loop.add_reader(channel.fileno(), take)


async def _tail(follower: Follower) -> None:
    """Folds what the log gained every ``TAIL_S`` between recalls, so a recall finds little to fold.
    A recall that caught up within ``TAIL_S`` did the tick's work: a busy replica's tail (its SQL
    statement and two thread hops, 20 a second) is skipped, an idle one's runs as before."""
    loop = asyncio.get_running_loop()
    while True:
        await asyncio.sleep(TAIL_S)
        if not follower.fresh_within(TAIL_S):
            await loop.run_in_executor(None, follower.catch_up)


if __name__ == "__main__":
    sys.exit(main())
