"""Tenants' SQL in a process of its own, which a watchdog kills at the limit (docs/security.md, round twenty-eight).

chDB runs a query inside the process that called it and checks its limits only between blocks, so one function
call that outlasts them (a regular expression whose cost is the haystack times the pattern, round twenty-four)
cannot be stopped: the brain's process had no way to end it. Here the query runs in a worker process that reads
the brain's tables, and the brain's thread waits for its answer no longer than the time limit and a grace; past
it, or when the worker's memory passes the limit and a margin, the worker is killed (SIGKILL), the caller gets
``TenantQueryKilled`` naming the limit, and the next query starts a new worker.

**How the worker reads the tables.** chDB allows one engine per folder (the brain's holds a lock), so the worker
opens an engine of its own in an empty temporary folder and *attaches* each of the brain's tables by its UUID from
a copy of the table's folder whose parts' files are hard links to the brain's (``link_parts``): no byte is copied,
and whatever the worker's engine does to its copy changes its links, never the brain's folder. (Attached on the
brain's own folder through a ``readonly = 1`` local disk, the worker's engine still merged there: two engines'
merges left intersecting parts and the brain's table no longer opened; docs/security.md, round twenty-eight.) Its
merges are stopped. A MergeTree table lists its parts when attached; before a query that reads a table whose folder
lists other parts than the worker linked (a listing is microseconds), the worker catches up (``refreshed``): an
insert's new parts attached one by one (~1 ms each), else, after a merge or a mutation, the table linked again and
re-attached whole (~5-30 ms; round thirty). An insert becomes a part by renaming a finished ``tmp_insert_*``
folder, so a query never reads half a part; a merged part's sources may be removed at once, which ``link_parts``
allows for by listing again.

The worker's folder is beside the brain's chDB folder (``worker_homes``: hard links stay on one file system), and
a brain opening that folder sweeps the folders a killed brain's workers left (``sweep_orphans``).

One worker per warehouse (a pool of one, serialised by the caller's lane); its engine sets the tenant limits and
``readonly=1`` on the session that runs tenants' queries, as the in-process session did. A worker is forked by the
process's zygote (``tenant_zygote.Zygote``, round thirty), which has loaded chDB's library and the Python around it but
opened no engine: a start costs the worker's own engine and attaches, not a new interpreter and its imports.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle, send_handle

from hindbrain.projections.tenant_zygote import ZYGOTE, ForkedProcess

# How long past ``max_execution_time`` the watchdog waits before it kills: the engine's own limit stops a query
# between blocks, and its error is clearer than a kill (it names the limit as ClickHouse counted it).
GRACE_SECONDS = 2.0
# How far past ``max_memory_usage`` the worker's resident memory may go before a kill: the engine, its caches
# and the Python around it take ~200-300 MiB before any query.
MEMORY_MARGIN = 512 << 20
POLL_SECONDS = 0.02
_PAGE = os.sysconf("SC_PAGE_SIZE")


class TenantQueryKilled(RuntimeError):
    """The watchdog killed the worker running a tenant's query; ``limit`` names the limit it outran."""

    def __init__(self, limit: str, message: str):
        self.limit = limit
        super().__init__(message)


class TenantQueryFailed(RuntimeError):
    """The engine in the worker refused or stopped the query; the message is ClickHouse's."""


@dataclass(frozen=True)
class WorkerTable:
    """One of the brain's tables as the worker attaches it: name, UUID, ``CREATE TABLE`` text, data folder."""
    name: str
    uuid: str
    create: str
    path: str


def attach_statement(table: WorkerTable, database: str, root: str) -> str:
    """``ATTACH TABLE`` of ``table`` by its UUID on a local disk rooted at ``root`` (the worker's copy of the
    brain's folder, ``link_parts``): the engine finds its parts at ``root/store/…/<uuid>/``."""
    engine_at = table.create.index(" ENGINE = ")
    columns = table.create[:engine_at].split(" ", 3)[3]  # "CREATE TABLE db.name (…)" -> "(…)"
    settings = f"disk = disk(type = 'local', path = '{root}', readonly = 1)"
    tail = table.create[engine_at:]
    tail = f"{tail}, {settings}" if " SETTINGS " in tail else f"{tail} SETTINGS {settings}"
    return f"ATTACH TABLE `{database}`.`{table.name}` UUID '{table.uuid}' {columns}{tail}"


def part_names(path: str) -> frozenset[str]:
    """The parts in a table's folder: its entries but the ones being written or removed, and ``detached``."""
    try:
        names = os.listdir(path)
    except FileNotFoundError:
        return frozenset()
    return frozenset(n for n in names if not n.startswith(("tmp", "delete_tmp")) and n != "detached"
                     and not n.endswith(".txt"))


def snapshot_path(table: WorkerTable, root: str, snapshot: str) -> str:
    """Where the worker's copy of ``table`` lives: its path under the brain's folder, under ``snapshot``."""
    return os.path.join(snapshot, os.path.relpath(table.path, root))


def link_parts(source: str, target: str) -> frozenset[str]:
    """Make ``target`` hold the parts ``source`` holds now, each file a hard link (no byte copied), and none it
    no longer holds; the parts linked. The worker's engine never touches the brain's folder: whatever it does
    to its copy (clean-ups, a rename) changes its links, never the brain's files (a part's files are written
    once, then only read). A part the brain removes while it is linked was merged into one its folder holds by
    then, though perhaps not when it was listed: the folder is listed again until every part listed was linked
    (left out, a merged part's rows were missing from the worker's copy until the next write; round thirty)."""
    os.makedirs(target, exist_ok=True)
    while True:
        parts = part_names(source)
        for gone in part_names(target) - parts:
            shutil.rmtree(os.path.join(target, gone), ignore_errors=True)
        if all(link_part(source, target, part) for part in sorted(parts)):
            break
    for name in os.listdir(source):  # format_version.txt and the like
        if name.endswith(".txt") and not os.path.exists(os.path.join(target, name)):
            shutil.copy(os.path.join(source, name), os.path.join(target, name))
    return parts


def link_part(source: str, target: str, part: str, into: str = "") -> bool:
    """Hard-link ``part`` of ``source`` into ``target`` (under its folder ``into``, e.g. ``detached``); False
    when the brain removed it meanwhile (nothing of it is left in ``target`` then)."""
    there = os.path.join(target, into, part)
    if os.path.exists(there):
        return True
    try:
        shutil.copytree(os.path.join(source, part), there, copy_function=os.link)
        return True
    except (FileNotFoundError, shutil.Error):
        shutil.rmtree(there, ignore_errors=True)
        return False


def part_blocks(name: str) -> tuple[str, int, int, int, int]:
    """``(partition, first block, last block, level, mutation)`` of a part's name (``all_1_5_2``,
    ``all_1_1_0_7``): a partition's id holds no ``_`` (ClickHouse's ``MergeTreePartInfo``)."""
    partition, *numbers = name.split("_")
    first, last, level, mutation = ([*map(int, numbers), 0] if len(numbers) == 3 else list(map(int, numbers)))
    return partition, first, last, level, mutation


def covers(part: str, other: str) -> bool:
    """Whether ``part`` holds ``other``'s rows (a merge of it, or a mutation of it): ``other`` is outdated."""
    p, first, last, level, mutation = part_blocks(part)
    q, first2, last2, level2, mutation2 = part_blocks(other)
    return part != other and p == q and first <= first2 and last2 <= last and level >= level2 \
        and mutation >= mutation2


def only_added(loaded: frozenset[str], now: frozenset[str]) -> list[str] | None:
    """The parts to attach one by one when the folder only gained parts that cover nothing (an insert's), in
    block order; None when a part went or a new one covers another (a merge, a mutation): the table is
    re-attached whole then, and the engine outdates what is covered."""
    added = now - loaded
    if not loaded <= now or any(covers(new, part) for new in added for part in now):
        return None
    return sorted(added, key=part_blocks)


def serve(conn) -> None:
    """The worker's loop: attach, then answer ``("query", sql, parameters, statements, current database)`` and
    ``("apply", function, arguments)`` requests (``applied``).
    ``home`` is the brain's: the brain removes it once this process has ended, however it ended. First it sends
    the brain a pidfd of itself (``ForkedProcess``): opened by the living worker, it names this process and no
    other, however long after its end the brain uses it."""
    pidfd = os.pidfd_open(os.getpid())
    send_handle(conn, pidfd, 0)
    os.close(pidfd)
    home, root, database, tables, views, limits = conn.recv()
    threading.Thread(target=_end_with_brain, args=(conn.fileno(), home), daemon=True).start()
    import chdb
    import clickhouse_connect

    try:
        # the first connection fixes the engine's options; the clients below join the same engine
        snapshot = os.path.join(home, "snapshot") + "/"
        engine = chdb.connect(f"{home}/engine?custom_local_disks_base_directory={snapshot}")
        admin = clickhouse_connect.get_client(dsn=f"chdb://{home}/engine")
        admin.command("SYSTEM STOP MERGES")  # its copy needs none: the brain merges its own
        admin.command(f"CREATE DATABASE IF NOT EXISTS `{database}`")
        loaded: dict[str, frozenset[str]] = {}
        created: set[str] = set()
        for table in tables:
            loaded[table.name] = link_parts(table.path, snapshot_path(table, root, snapshot))
            admin.command(attach_statement(table, database, snapshot))
        for statement in views:
            admin.command(statement)
        session = clickhouse_connect.get_client(dsn=f"chdb://{home}/engine", database=database)
        for name, value in {**limits, "readonly": 1}.items():
            session.command(f"SET {name} = {value!r}")
        conn.send(("ready", os.getpid()))
        while (request := _next(conn)) is not None:
            if request[0] == "apply":
                conn.send(applied(*request[1:]))
                continue
            sql, parameters, statements, current = request[1:]
            try:
                for table in read_by(sql, tables, views):  # what the brain wrote or merged since: read it
                    loaded[table.name] = refreshed(admin, database, table, snapshot_path(table, root, snapshot),
                                                   loaded[table.name])
                for statement in statements:  # a tenant's views: created once a worker
                    if statement not in created:
                        admin.command(statement)
                        created.add(statement)
                session.database = current
                result = session.query(sql, parameters=parameters)
                conn.send(("ok", list(result.column_names), result.result_rows))
            except Exception as exc:  # the engine's refusal, sent back as its text: nothing of it is code
                conn.send(("failed", type(exc).__name__, str(exc)))
                drain(session)
            finally:
                session.database = database
        engine.close()
    finally:
        shutil.rmtree(home, ignore_errors=True)


def applied(function, arguments: tuple) -> tuple:
    """The answer to an ``apply`` request: ``("ok", function(*arguments))``, or ``("failed", kind, message)``. The
    brain sends a pure function of its own by reference (pickle imports its module here), e.g. tenant SQL's parse
    and check (``tenant_sql.refusal_of``): run here, its CPU is this process's, not the brain's, whose
    interpreter lock a 100 kB query's parse held for seconds while other tenants' recalls waited (round thirty-two)."""
    try:
        return ("ok", function(*arguments))
    except Exception as exc:  # noqa: BLE001 - sent back as text, as the engine's refusals are
        return ("failed", type(exc).__name__, str(exc))


def _end_with_brain(fd: int, home: str) -> None:
    """End the worker when the brain's end of its socket closes, even in the middle of a query: a brain killed
    while its worker ran a query (SIGKILL, the OOM killer) left that query running to its end with no watchdog
    over its time or memory, and its folder and the brain's stdout held (measured: 48 s of a cross join after
    the brain was gone; a call the engine cannot interrupt, for good; round thirty). ``POLLRDHUP`` is the peer's
    close only, not a request arriving, so the main thread's reads are not disturbed."""
    hung_up = select.poll()
    hung_up.register(fd, select.POLLRDHUP)
    while not hung_up.poll():
        pass
    shutil.rmtree(home, ignore_errors=True)
    os._exit(0)


def refreshed(admin, database: str, table: WorkerTable, copy: str, loaded: frozenset[str]) -> frozenset[str]:
    """The parts the worker's ``table`` holds after it caught up with the brain's folder: an insert's new parts
    attached one by one (``ALTER TABLE … ATTACH PART`` from the copy's ``detached``), else the table linked
    again and re-attached whole. An attached part is renamed by the worker's engine to its own next block
    number (``all_9_9_0`` may become ``all_4_4_0``): a name no part of the brain's had before, so the whole
    re-attach removes the copy's parts not among the brain's names ``loaded`` before it links the folder again."""
    now = part_names(table.path)
    if now == loaded:
        return loaded
    added = only_added(loaded, now)
    name = f"`{database}`.`{table.name}`"
    if added is not None and all(link_part(table.path, copy, part, "detached") for part in added):
        for part in added:
            admin.command(f"ALTER TABLE {name} ATTACH PART '{part}'")
        return now
    admin.command(f"DETACH TABLE {name}")
    for stray in part_names(copy) - loaded | {"detached"}:  # renamed by ATTACH PART; a part half-linked
        shutil.rmtree(os.path.join(copy, stray), ignore_errors=True)
    linked = link_parts(table.path, copy)
    admin.command(f"ATTACH TABLE {name}")
    return linked


def _next(conn):
    """The next request, or None when the brain said so or is gone (its end of the socket closed)."""
    try:
        return conn.recv()
    except EOFError:
        return None


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def read_by(sql: str, tables: list[WorkerTable], views: list[str]) -> list[WorkerTable]:
    """The tables ``sql`` may read: those its words name, and those a view it names reads (the derived views,
    ``feedback`` and ``lineage``). Words, not a parse: naming a table more than it reads only costs a re-read.
    A re-attach costs ~50-100 ms on a busy table, so a query pays it only for what it reads."""
    words = set(_WORD.findall(sql))
    for view in views:
        name = view.split("(", 1)[0].split()[-1].rsplit(".", 1)[-1].strip("`")
        if name in words:
            words |= set(_WORD.findall(view))
    return [t for t in tables if t.name in words]


def drain(session) -> None:
    """After a query that failed while its rows streamed, clickhouse-connect's chDB backend leaves the rest of
    that stream to the session's next query, which then reads it as its own error or rows (the warehouse's
    ``_clear_failed_stream`` met it first): throwaway queries take it, so the next real one is clean."""
    for _ in range(3):
        try:
            if session.query("SELECT 1").result_rows == [(1,)]:
                return
        except Exception:  # noqa: BLE001, S112 - the stale stream's bytes, read and dropped
            continue


def resident_bytes(pid: int) -> int:
    """A process's resident memory (``/proc/<pid>/statm``), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return 0


def outran(started: float, now: float, rss: int, limits: dict) -> str | None:
    """The limit a running query outran by the watchdog's measure, or None."""
    if now - started > float(limits["max_execution_time"]) + GRACE_SECONDS:
        return "max_execution_time"
    if rss > int(limits["max_memory_usage"]) + MEMORY_MARGIN:
        return "max_memory_usage"
    return None


def worker_homes(root: str) -> str:
    """Where the workers of the brain whose chDB folder is ``root`` keep theirs: beside it, on its file system (a
    hard link cannot cross file systems: in the system's temporary folder on a tmpfs every part failed to link
    and the worker answered from empty tables), and found again by the next brain opened on ``root``."""
    return root.rstrip("/") + ".tenant-sql"


# The worker folders this process made and has not removed yet (``TenantWorker._start``, ``_stop``): what a sweep
# keeps. Not "named for this process's id": in a container the brain has the same small id at every start, so a
# folder a killed one left was taken for this process's own and never swept (round thirty).
_HOMES: set[str] = set()


def sweep_orphans(homes: str) -> list[str]:
    """Remove the worker folders under ``homes`` that no live worker of this process made, and name them. Run
    when a brain opens its folder: chDB lets one process at a time open it, so a folder another process made was
    left by a brain killed with its worker (SIGKILL runs no clean-up), whose snapshot's hard links kept every part
    it had linked on disk after the brain merged it away."""
    try:
        names = os.listdir(homes)
    except FileNotFoundError:
        return []
    orphans = [n for n in names if os.path.join(homes, n) not in _HOMES]
    for name in orphans:
        shutil.rmtree(os.path.join(homes, name), ignore_errors=True)
    return orphans


class TenantWorker:
    """One worker process for a warehouse's tenants' SQL; started on the first query, again after a kill."""

    def __init__(self, root: str, database: str, tables: list[WorkerTable], views: list[str], limits: dict):
        self.root, self.database, self.tables, self.views = root, database, tables, views
        self.limits = dict(limits)
        self._lock = threading.Lock()
        self._process = self._conn = self._home = None
        self.running: str | None = None  # the marker of the query the worker runs
        self._marker: str | None = None  # the marker of the request in the worker (a query or its check)
        self._cancelled = False
        self.restarts = 0

    def run(self, sql: str, parameters: dict | None, statements: list[str], current: str,
            marker: str | None = None) -> tuple[list, list]:
        """``(column_names, rows)`` of ``sql`` with ``current`` as the current database, ``statements`` (the
        tenant's views, ``IF NOT EXISTS``) run first. Raises ``TenantQueryFailed`` with the engine's reason, or
        ``TenantQueryKilled`` when the watchdog ended it."""
        status, *answer = self._ask(("query", sql, parameters, statements, current), marker)
        if status == "failed":
            raise TenantQueryFailed(answer[1])
        return answer[0], answer[1]

    def apply(self, function, arguments: tuple, marker: str | None = None):
        """``function(*arguments)`` run in the worker process, under the same watchdog as a query (its time and
        memory limits; ``cancel(marker)``). ``function``: a module-level function, sent by reference. Raises
        ``TenantQueryFailed`` with the exception's text if it raised."""
        status, *answer = self._ask(("apply", function, arguments), marker)
        if status == "failed":
            raise TenantQueryFailed(f"{answer[0]}: {answer[1]}")
        return answer[0]

    def _ask(self, request: tuple, marker: str | None) -> tuple:
        """The worker's answer to ``request``, one request at a time, with the watchdog over it; ``running`` names
        ``marker`` while a query runs (not a check: the engine runs nothing of it), ``cancel`` matches either."""
        with self._lock:
            self._start()
            self._marker, self._cancelled = marker, False
            self.running = marker if request[0] == "query" else None
            try:
                self._send(request)
                return self._await()
            finally:
                self.running = self._marker = None

    def _send(self, request: tuple) -> None:
        """Send ``request``; to a new worker if this one was found dead (killed between queries: the query never
        reached it, so it runs once, there)."""
        try:
            self._conn.send(request)
        except OSError:  # BrokenPipeError, ConnectionResetError: the process ended after ``_start`` saw it alive
            self._stop()
            self._start()
            self._conn.send(request)

    def _await(self) -> tuple:
        started, pid = time.monotonic(), self._process.pid
        while not self._conn.poll(POLL_SECONDS):
            if self._process.poll() is not None:
                break
            if limit := outran(started, time.monotonic(), resident_bytes(pid), self.limits):
                self._stop()
                raise TenantQueryKilled(limit, f"its process was killed by the watchdog after "
                                               f"{time.monotonic() - started:.1f} s")
        try:
            return self._conn.recv()
        except (EOFError, OSError):  # the process ended: ``cancel`` killed it, or it died (a socket reset if
            # it died with our request unread: ConnectionResetError, which reached the caller raw before)
            cancelled = self._cancelled
            self._stop()
            if cancelled:
                raise TenantQueryKilled("its lifetime (cancelled: the client went away)",
                                        "its process was killed") from None
            raise TenantQueryFailed("the query's process ended while it ran (the brain serves on; the next query "
                                    "starts a new one)") from None

    def cancel(self, marker: str) -> bool:
        """Kill the worker if it runs the query marked ``marker``, or checks it; whether it did."""
        process = self._process
        if marker and self._marker == marker and process is not None:
            self._cancelled = True
            process.kill()
            return True
        return False

    def _start(self) -> None:
        if self._process is not None and self._process.poll() is None:
            return
        self._stop()
        # forked by the zygote (``tenant_zygote.Zygote``), talking over a socket pair
        ours, theirs = socket.socketpair()
        # The worker's folder is made (and removed, ``_stop``) here, not in the worker: a killed worker runs no
        # clean-up, and its snapshot's hard links would keep every part it linked on disk after the brain
        # merged it away — a folder leaked per kill, which a tenant can cause at will (round twenty-nine).
        os.makedirs(homes := worker_homes(self.root), exist_ok=True)
        self._home = tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=homes)
        _HOMES.add(self._home)
        self._conn = Connection(ours.detach())
        try:
            ZYGOTE.fork(theirs)
        finally:
            theirs.close()
        self._process = ForkedProcess(self._started(recv_handle))
        self._conn.send((self._home, self.root, self.database, self.tables, self.views, self.limits))
        self._started(Connection.recv)
        self.restarts += 1

    def _started(self, receive):
        """The worker's next start-up message (``receive(conn)``), or ``TenantQueryFailed`` when none comes."""
        if not self._conn.poll(60):
            self._stop()
            raise TenantQueryFailed("the tenant SQL process did not start within 60 s")
        try:
            return receive(self._conn)
        except (EOFError, OSError):
            self._stop()
            raise TenantQueryFailed("the tenant SQL process failed to start") from None

    def _stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait(5)
        if self._conn is not None:
            self._conn.close()
        if self._home is not None:  # the process has ended: nothing writes there any more
            shutil.rmtree(self._home, ignore_errors=True)
            _HOMES.discard(self._home)
        self._process = self._conn = self._home = None

    def close(self) -> None:
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                try:
                    self._conn.send(None)
                    self._process.wait(5)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            self._stop()
