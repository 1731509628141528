"""The warehouse client: ClickHouse SQL through clickhouse-connect, one code path.

``chdb:///path`` runs ClickHouse embedded (chDB, on disk); ``http(s)://host:port`` talks to
a ClickHouse server. chDB allows one process per folder: the embedded brain owns it.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlparse

import clickhouse_connect

from hindbrain.native_calls import Guarded
from hindbrain.projections.migrations import MIGRATIONS, MIGRATIONS_TABLE
from hindbrain.projections.table import Table
from hindbrain.projections.tenant_worker import TenantWorker, WorkerTable, sweep_orphans, worker_homes
from hindbrain.projections.views import VIEWS

try:
    from hindbrain.projections.described_session import DescribedSession
except ImportError:  # a clickhouse-connect whose private start moved: every session reads the engine itself
    DescribedSession = None

if TYPE_CHECKING:
    from clickhouse_connect.driver._backend.orchestration import InitializationResult

DATABASE = "hindbrain"


class PartsNotWritten(OSError):
    """Parts the warehouse acknowledged fail their own checksums on disk (``Warehouse.check_written``):
    their rows are not in the views. The parts are detached (the table's ``detached/`` folder); insert
    the rows again (the runners re-project from their committed offset). ``errno`` is EIO. ``earlier``:
    a part holding blocks checked before failed (a merge the full disk broke; chDB removes the merged
    parts at once): rows of rounds committed long ago are gone, from offsets nothing records."""

    def __init__(self, message: str, earlier: bool):
        super().__init__(errno.EIO, message)
        self.earlier = earlier


class Warehouse:
    def __init__(self, url: str, database: str = DATABASE):
        self.url, self.database = url, database
        self._lock = threading.RLock()  # clickhouse-connect's chDB client is not thread-safe
        # The session that creates the database stays open as ``_killer`` (its KILL QUERY needs
        # no current database): each client's start reads the engine's ~1,300 settings (~40 ms
        # of CPU), and a brain opens four sessions, not five (docs/speed.md, "Opening a brain").
        boot = _client(url, database="default") if url.startswith("chdb://") else _client(url)
        boot.command(f"CREATE DATABASE IF NOT EXISTS `{database}`")
        # the engine as the first session read it, for the others' start (``DescribedSession``)
        self._described = getattr(boot, "described", None)
        self._client = _client(url, self._described, database=database)
        # Analysts' SQL runs on its own session: chDB keeps a query's settings for the rest
        # of the session, so ``readonly=1`` on the writer's session would stop the runner.
        self._reader = _client(url, self._described, database=database, settings={"readonly": 1})
        # Tenants' SQL: a session of its own, its own lock (chDB runs it beside the writer's
        # inserts, on another thread, with the GIL released), the limits set before readonly=1
        # freezes them. ``_killer`` cancels it from outside, as the tenant session is busy then.
        self._tenant_lock, self._killer_lock = threading.Lock(), threading.Lock()
        self._tenant = limited_client(url, database, described=self._described)
        self._tenant_limits = dict(TENANT_LIMITS)
        self._isolated, self._worker = False, None  # tenants' SQL in a process of its own (``isolate_tenants``)
        self._killer = boot
        self._checked = self._active_parts()  # parts checked, by table (``check_written``)

    # -- schema --------------------------------------------------------------------------
    def reset(self) -> None:
        """Drop every view and table, the migration record too: an empty warehouse (for replay).
        What is there is dropped, views first (they read the tables), whichever migrations made
        it: a migration's ``down`` may alter a table that a half-built warehouse lacks."""
        with self._lock:
            rows = self._client.query("SELECT name, engine = 'View' FROM system.tables WHERE database = {db:String}",
                                      parameters={"db": self.database}).result_rows
            for name, _ in sorted(rows, key=lambda row: not row[1]):
                self._client.command(f"DROP TABLE IF EXISTS `{self.database}`.`{name}`")
            self._checked = {}  # a table made again names its parts from all_1_1 again
        self._drop_worker()  # its tables are gone

    def migrate(self, target: int | None = None) -> list[int]:
        """Apply (or, with a lower ``target``, revert) migrations; returns the numbers run."""
        with self._lock:
            self._client.command(
                f"CREATE TABLE IF NOT EXISTS `{self.database}`.`{MIGRATIONS_TABLE}` "
                "(number UInt32, name String) ENGINE = ReplacingMergeTree ORDER BY number"
            )
            applied = set(self.applied_migrations())
            target = max(m.number for m in MIGRATIONS) if target is None else target
            ran = []
            for m in MIGRATIONS:
                if m.number <= target and m.number not in applied:
                    for sql in m.up(self.database):
                        self._client.command(sql)
                    self._client.insert(MIGRATIONS_TABLE, [[m.number, m.name]], column_names=["number", "name"])
                    ran.append(m.number)
            for m in reversed(MIGRATIONS):
                if m.number > target and m.number in applied:
                    for sql in m.down(self.database):
                        self._client.command(sql)
                    self._client.command(
                        f"DELETE FROM `{self.database}`.`{MIGRATIONS_TABLE}` WHERE number = {m.number}"
                    )
                    ran.append(-m.number)
            if ran:  # a migration may make a table again (its parts named from all_1_1 again) or copy rows into one
                self._checked = self._active_parts()
        if ran:
            self._drop_worker()  # a table made again has another UUID
        return ran

    def applied_migrations(self) -> list[int]:
        rows = self.query(f"SELECT number FROM `{self.database}`.`{MIGRATIONS_TABLE}` FINAL ORDER BY number")
        return [r[0] for r in rows]

    def may_hold_rows(self) -> set[str]:
        """The names of this database's tables and views that may hold rows, in one query: a table whose
        row count the engine keeps (``system.tables.total_rows``, a MergeTree's active parts) is left out
        when it holds none, one whose count it does not keep (a server's Distributed table: NULL) is kept;
        a view is kept unless every table is empty (the views read only this database's tables). Why: a
        new brain's index load read nine empty results (~50 ms of CPU an open, docs/speed.md, "A brain's
        open, round thirty-one"). The migration record is not a view's source and is not counted."""
        rows = self.query("SELECT name, engine = 'View', total_rows FROM system.tables WHERE database = {db:String}",
                          {"db": self.database})
        tables = {name for name, view, count in rows if not view and name != MIGRATIONS_TABLE and count != 0}
        views = {name for name, view, _ in rows if view} if tables else set()
        return tables | views

    def live_columns(self, table: str) -> list[tuple[str, str]]:
        return [
            (n, t)
            for n, t in self.query(
                "SELECT name, type FROM system.columns WHERE database = {db:String} AND table = {t:String} "
                "ORDER BY position",
                {"db": self.database, "t": table},
            )
        ]

    # -- data ----------------------------------------------------------------------------
    def insert(self, table: Table, rows: list[dict]) -> None:
        if not rows:
            return
        self.insert_arrow(table, table.to_arrow(rows))

    def insert_arrow(self, table: Table, data) -> None:
        """Insert an Arrow table whose schema is ``table.arrow_schema()``."""
        with self._lock:
            self._client.insert_arrow(table.name, data)

    def check_written(self) -> None:
        """Checks every part written to this database since the last check and detaches those whose
        files are not what the engine wrote, raising ``PartsNotWritten`` naming them.

        Why: ClickHouse acknowledges an INSERT whose files the disk refused. chDB 26.9, a ``write`` of a
        part's ``data.bin`` failing with ENOSPC (strace fault injection, docs/faults.md): the INSERT
        returns, the part is active with an empty ``data.bin``, every read of it fails (``Cannot read
        all data``), and a reopened engine detaches it as broken — its rows gone from the views while
        the runner's offset had passed them (test_disk's flake: the disk filled during a round's insert).
        A returned insert is no proof; a part whose files hold what the engine wrote is.

        chDB's parts are files of this process: each file group's size on disk against the engine's
        own account of it (``unwritten_files``), one listing and a ``stat`` a file (~2 ms a round; a
        ``CHECK TABLE`` a part was ~3.4 ms more each). A server's parts are not: ``CHECK TABLE … PART``.
        A part is checked once, by name: new ones from inserts and from merges (a merge writes its part as
        an insert does, and chDB removes the merged parts at once: ``old_parts_lifetime`` 0)."""
        with self._lock:
            rows = self._client.query(
                "SELECT table, name, min_block_number, path, data_compressed_bytes, marks_bytes, primary_key_size, rows"
                " FROM system.parts WHERE database = {db:String} AND active ORDER BY table, min_block_number",
                parameters={"db": self.database}).result_rows
            local = self.url.startswith("chdb://")
            broken, earlier, checked = [], False, {}
            for table, part, first, path, *written in rows:
                known = self._checked.get(table, {})
                if part not in known:
                    reason = unwritten_files(_file_sizes(path), *written) if local else self._check_part(table, part)
                    if reason is not None:
                        broken.append(f"{table}/{part}: {reason}")
                        earlier |= any(first <= block for block in known.values())  # rows of earlier rounds
                        self._client.command(f"ALTER TABLE `{self.database}`.`{table}` DETACH PART '{part}'")
                        continue
                checked.setdefault(table, {})[part] = _last_block(part)
            self._checked = checked
        if broken:
            raise PartsNotWritten("the warehouse acknowledged parts its disk did not keep (detached; their rows "
                                  f"are to be inserted again): {'; '.join(broken)}", earlier)

    def broken_parts(self) -> list[tuple[str, str]]:
        """``(table, folder)`` of each part the engine set aside as broken (``detached/broken-on-start_…``
        and the like): a part whose files failed their checksums when the engine loaded it, its rows gone
        from the views. ``check_written`` finds the parts a running process wrote; these are the ones it
        could not see (a merge broken after a brain's last round, a disk that lost files while closed)."""
        return self.query("SELECT table, name FROM system.detached_parts WHERE database = {db:String} "
                          "AND startsWith(reason, 'broken') ORDER BY table, name", {"db": self.database})

    def drop_detached(self, parts: Sequence[tuple[str, str]]) -> None:
        """Removes detached ``(table, folder)`` parts whose rows the log gives back (``broken_parts``), so
        that a later open does not find them and project the log again for nothing."""
        with self._lock:
            for table, folder in parts:
                self._client.command(f"ALTER TABLE `{self.database}`.`{table}` DROP DETACHED PART '{folder}'",
                                     settings={"allow_drop_detached": 1})

    def _check_part(self, table: str, part: str) -> str | None:
        """(Lock held.) Why ``part`` fails ``CHECK TABLE`` (its files against its checksums), or None if
        it passes (or was merged away meanwhile: the merged part is listed by the next check)."""
        try:
            result = self._client.query(f"CHECK TABLE `{self.database}`.`{table}` PART '{part}'",
                                        settings={"check_query_single_value_result": 0}).result_rows
        except Exception as exc:  # noqa: BLE001 - NO_SUCH_DATA_PART: merged into a part listed next time
            if "NO_SUCH_DATA_PART" in str(exc):
                return None
            raise
        failed = [message or "failed its check" for _, passed, message in result if not int(passed)]
        return "; ".join(failed) or None

    def _active_parts(self) -> dict[str, dict[str, int]]:
        """Each table's active parts (name: last block): the parts a reopened engine loaded (it checks their
        files against their checksums then: ``broken-on-start``)."""
        with self._lock:
            rows = self._client.query("SELECT table, name FROM system.parts WHERE database = {db:String} AND active",
                                      parameters={"db": self.database}).result_rows
        parts: dict[str, dict[str, int]] = {}
        for table, part in rows:
            parts.setdefault(table, {})[part] = _last_block(part)
        return parts

    def query_arrow(self, sql: str):
        """The result of ``sql`` as an Arrow table, on the writer's session (in a process that
        holds a chDB warehouse, the only chDB engine it may use: ``streams.columnar``)."""
        with self._lock:
            try:
                return self._client.query_arrow(sql)
            except Exception:
                self._clear_failed_stream()
                raise

    def _clear_failed_stream(self) -> None:
        """(Lock held.) After an Arrow query chDB refused (an Avro block it cannot read, streams.columnar),
        clickhouse_connect's chDB backend leaves the rest of that Arrow stream to the session's next
        query, which then fails to parse it (``UnicodeDecodeError`` on ``ARROW1``'s bytes): the parts
        check after the round's inserts met it. A throwaway query takes it, so the next real one is clean."""
        if not self.url.startswith("chdb://"):
            return
        for _ in range(3):
            try:
                if self._client.query("SELECT 1").result_rows == [(1,)]:
                    return
            except Exception:  # noqa: BLE001, S112 - the stale stream's bytes, read and dropped
                continue

    def command(self, sql: str) -> None:
        """Run one statement that returns no rows (e.g. ``INSERT … SELECT``) on the writer's session."""
        with self._lock:
            self._client.command(sql)

    def session(self) -> Session:
        """Another writing session on this warehouse, for statements that run beside the
        writer's: chDB runs each session's query on a thread of its own, so two ``INSERT …
        SELECT`` on two sessions use two cores (on the writer's session they queue on its lock)."""
        return Session(self.url, self.database, self._described)

    def query(self, sql: str, parameters: dict | None = None, readonly: bool = False) -> list[tuple]:
        return self.query_columns(sql, parameters, readonly)[1]

    def query_columns(self, sql: str, parameters: dict | None = None, readonly: bool = False,
                      database: str | None = None):
        """``(column_names, rows)``. ``readonly=True`` runs on a session where ClickHouse
        refuses any statement that writes (``readonly=1``). ``database`` (read-only only)
        is the current database for unqualified names during this query, e.g. a tenant's views."""
        with self._lock:
            client = self._reader if readonly else self._client
            if database is None:
                result = client.query(sql, parameters=parameters, settings={"readonly": 1} if readonly else None)
                return list(result.column_names), result.result_rows
            if not readonly:
                raise ValueError("query_columns: field 'database': only for read-only queries")
            client.database = database
            try:
                result = client.query(sql, parameters=parameters, settings={"readonly": 1})
            finally:
                client.database = self.database
            return list(result.column_names), result.result_rows

    def isolate_tenants(self) -> None:
        """Run tenants' queries in a worker process a watchdog kills at the limits (``projections.tenant_worker``)
        from now on, started on the next tenant query. Embedded chDB only: a ClickHouse server runs queries in a
        process of its own already."""
        if not self.url.startswith("chdb://"):
            raise ValueError("isolate_tenants: field 'url': only an embedded warehouse (chdb://) runs tenants' SQL "
                             "in the brain's process")
        self._isolated = True
        [(path,)] = self.query("SELECT data_paths[1] FROM system.tables WHERE database = {d:String} AND engine "
                               "LIKE '%MergeTree' LIMIT 1", {"d": self.database})
        sweep_orphans(worker_homes(chdb_folder(path)))

    def _tenant_worker(self) -> TenantWorker:
        """The worker for tenants' SQL, made for the tables as they are now (their UUIDs: a reset or a migration
        that makes a table again drops the worker, ``_drop_worker``)."""
        if self._worker is None:
            rows = self.query("SELECT name, toString(uuid), create_table_query, data_paths[1], engine LIKE "
                              "'%MergeTree' FROM system.tables WHERE database = {d:String} ORDER BY name",
                              {"d": self.database})
            tables = [WorkerTable(name, uuid, create, path) for name, uuid, create, path, merge_tree in rows
                      if merge_tree]
            views = [create.replace("CREATE VIEW ", "CREATE VIEW IF NOT EXISTS ", 1)
                     for _, _, create, _, merge_tree in rows if not merge_tree]
            self._worker = TenantWorker(chdb_folder(tables[0].path), self.database, tables, views,
                                        self._tenant_limits)
        return self._worker

    def _drop_worker(self) -> None:
        with self._tenant_lock:
            if self._worker is not None:
                self._worker.close()
                self._worker = None

    def tenant_query(self, sql: str, parameters: dict | None, database: str,
                     views: Sequence[str] = (), marker: str | None = None) -> tuple[list, list]:
        """``(column_names, rows)`` of a tenant's (already checked) query on the limited session,
        with ``database`` current. Safe beside the writer: another session, another lock. In a worker process
        once ``isolate_tenants`` was called (``views``: the statements that create ``database``'s views there;
        ``marker``: the id ``cancel`` stops it by)."""
        if self._isolated:
            with self._tenant_lock:
                worker = self._tenant_worker()
            return worker.run(sql, parameters, list(views), database, marker)
        with self._tenant_lock:
            self._tenant.database = database
            try:
                result = self._tenant.query(sql, parameters=parameters)
            finally:
                self._tenant.database = self.database
            return list(result.column_names), result.result_rows

    def limit_tenants(self, **limits) -> None:
        """Change the limits of tenants' SQL (``TENANT_LIMITS`` names them) for this warehouse,
        e.g. ``limit_tenants(max_execution_time=30)``: a new session replaces the tenant one."""
        unknown = sorted(set(limits) - set(TENANT_LIMITS))
        if unknown:
            raise ValueError(f"limit_tenants: field {unknown[0]!r}: not one of {', '.join(TENANT_LIMITS)}")
        with self._tenant_lock:
            self._tenant.close()
            self._tenant_limits = {**TENANT_LIMITS, **limits}
            self._tenant = limited_client(self.url, self.database, self._tenant_limits, self._described)
            if self._worker is not None:  # the next query starts a worker with these limits
                self._worker.close()
                self._worker = None

    def tenant_apply(self, function, *arguments, marker: str | None = None):
        """``function(*arguments)`` where tenants' queries run: in the worker process once ``isolate_tenants`` was
        called (a pure module-level function, e.g. the sandbox's parse; ``TenantQueryFailed`` if it raised),
        else here. A tenant's 100 kB query took sqlglot ~5 s to parse, holding the brain's interpreter lock."""
        if not self._isolated:
            return function(*arguments)
        with self._tenant_lock:
            worker = self._tenant_worker()
        return worker.apply(function, arguments, marker)

    def tenant_check(self, sql: str, parameters: dict | None = None) -> list[tuple]:
        """A query of the sandbox's own (format, explain) on the limited session."""
        with self._tenant_lock:
            return self._tenant.query(sql, parameters=parameters).result_rows

    def cancel(self, marker: str) -> None:
        """Cancel the running queries whose text holds ``marker`` (a tenant query's random id)."""
        if self._worker is not None and self._worker.cancel(marker):
            return
        with self._killer_lock:
            self._killer.command("KILL QUERY WHERE position(query, {m:String}) > 0 AND NOT startsWith(query, 'KILL') "
                                 "ASYNC", parameters={"m": marker})

    def tenant_queries_running(self, marker: str = "hindbrain-sql-") -> int:
        """How many tenant queries whose marker holds ``marker`` run now: the worker's one, or the engine's list."""
        if self._isolated:
            running = self._worker.running if self._worker is not None else None
            return int(running is not None and marker in running)
        ((n,),) = self.query("SELECT count() FROM system.processes WHERE position(query, {m:String}) > 0 "
                             "AND NOT startsWith(query, 'SELECT count() FROM system.processes')", {"m": marker})
        return n

    def release_memory(self) -> None:
        """Embedded chDB: its allocator (jemalloc, inside the owner's process) gives back the free
        pages its inserts and merges left; they would decay by themselves in ~5-10 s
        (``dirty_decay_ms`` 5000). Runs on the canceller's session, beside the writer's. A
        ClickHouse server's memory is not this process's: nothing to do."""
        if self.url.startswith("chdb://"):
            with self._killer_lock:
                self._killer.command("SYSTEM JEMALLOC PURGE")

    def digest(self, tables: Sequence[Table] = tuple(v.table for v in VIEWS)) -> dict[str, tuple[int, int]]:
        """Per table ``(row count, order-independent hash of every deduplicated row)``.

        Covers each table's content columns (not its log coordinates), so two logs with the
        same records, e.g. the embedded log and Kafka, give equal digests."""
        out = {}
        for table in tables:
            cols = ", ".join(f"`{n}`" for n in table.content_columns)
            ((count, digest),) = self.query(
                f"SELECT count(), sum(cityHash64(tuple({cols}))) FROM `{self.database}`.`{table.name}` FINAL"
            )
            out[table.name] = (int(count), int(digest))
        return out

    def close(self) -> None:
        with self._lock, self._tenant_lock, self._killer_lock:
            if self._worker is not None:
                self._worker.close()
            self._tenant.close()
            self._killer.close()
            self._reader.close()
            self._client.close()


class Session:
    """A writer session of its own (``Warehouse.session``): ``command`` like the warehouse's,
    its own lock. Close it when done."""

    def __init__(self, url: str, database: str, described: InitializationResult | None = None):
        self.url, self.database = url, database
        self._lock = threading.Lock()
        self._client = _client(url, described, database=database)

    def command(self, sql: str) -> None:
        with self._lock:
            self._client.command(sql)

    def close(self) -> None:
        with self._lock:
            self._client.close()


class ThreadSessions:
    """One ``Warehouse.session`` per thread that asks (``mine``), all closed on exit: inserts
    from a pool of threads run side by side in chDB, each on its own session."""

    def __init__(self, warehouse: Warehouse):
        self.warehouse, self._local, self._opened = warehouse, threading.local(), []
        self._lock = threading.Lock()

    def mine(self) -> Session:
        if (session := getattr(self._local, "session", None)) is None:
            session = self._local.session = self.warehouse.session()
            with self._lock:
                self._opened.append(session)
        return session

    def close(self) -> None:
        with self._lock:
            opened, self._opened = self._opened, []
        for session in opened:
            session.close()

    def __enter__(self) -> ThreadSessions:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# What one tenant query may use (docs/service.md, "SQL"): the heaviest allowed query is one core
# (max_threads) at the lowest CPU priority for at most 10 s, 1 GiB, 100 M rows read, and its
# answer at most 100 000 rows and 64 MiB. Each overflow throws (the query fails, naming the limit).
TENANT_LIMITS = {
    "max_execution_time": 10, "timeout_overflow_mode": "throw",
    "max_memory_usage": 1 << 30,
    "max_rows_to_read": 100_000_000, "read_overflow_mode": "throw",
    "max_result_rows": 100_000, "max_result_bytes": 64 << 20, "result_overflow_mode": "throw",
    "max_threads": 1, "os_thread_priority": 19,
    # The limits are checked between blocks: a block read from a view is at most this many rows (at least one
    # granule, 8,192, whatever is set), so a row-costly query overshoots by an eighth of what the default 65,409
    # allowed. Paired, on 100,000 events, the smaller block was no slower (docs/security.md, round twenty-six).
    # An arrayJoin's output is not split by it: the memory limit bounds that block.
    "max_block_size": 8192,
    # vectorscan (multiMatch*, multiFuzzyMatch*) scans linearly but compiles its patterns inside one call:
    # 1,000 patterns of ~13 bytes took 7 s (docs/security.md, round twenty-five). Expensive ones (counted
    # repetitions it cannot scan fast) are refused by the engine, said here so a default cannot change it.
    "max_hyperscan_regexp_length": 200, "max_hyperscan_regexp_total_length": 2000,
    "reject_expensive_hyperscan_regexps": 1,
}


def _last_block(part: str) -> int:
    """A MergeTree part's last block number, from its name (``partition_min_max_level[_mutation]``)."""
    return int(part.split("_")[2])


_MARKS = (".mrk", ".mrk2", ".mrk3", ".cmrk", ".cmrk2", ".cmrk3", ".cmrk4")


def _file_sizes(path: str) -> dict[str, int] | None:
    """The sizes of a part's files, by name; None if the part is gone (merged and removed meanwhile)."""
    try:
        return {entry.name: entry.stat().st_size for entry in os.scandir(path)}
    except FileNotFoundError:
        return None


def unwritten_files(sizes: dict[str, int] | None, data_bytes: int, marks_bytes: int, primary_bytes: int,
                    rows: int) -> str | None:
    """Why a part's files (``sizes``, by name) are not what the engine says it wrote (``system.parts``:
    its columns' compressed data, their marks, the primary index), or None if they are. A write the
    disk refused leaves a file short (chDB: empty); the engine's account is kept in memory from the
    writing. ``checksums.txt`` and ``count.txt`` are never empty in a part of ``rows`` > 0. A part gone
    from disk (``sizes`` None) was merged meanwhile: its merged part is listed by the next check."""
    if sizes is None:
        return None
    columns = {n: s for n, s in sizes.items() if not n.startswith("skp_idx_")}
    found = {"data": sum(s for n, s in columns.items() if n.endswith(".bin")),
             "marks": sum(s for n, s in columns.items() if n.endswith(_MARKS)),
             "primary index": sizes.get("primary.cidx", sizes.get("primary.idx", 0))}
    short = [f"{what} {found[what]} of {wrote} bytes" for what, wrote in
             (("data", data_bytes), ("marks", marks_bytes), ("primary index", primary_bytes)) if found[what] != wrote]
    short += [f"{name} empty" for name in ("checksums.txt", "count.txt") if rows and not sizes.get(name)]
    return "; ".join(short) or None


def engine_folder(url: str) -> str | None:
    """The folder of a ``chdb:///folder`` URL (the form ``Settings.warehouse_url`` makes), as clickhouse-connect's
    ``get_client`` reads it; None for a URL of any other form (a server's, ``chdb://memory``)."""
    parsed = urlparse(url)
    plain = parsed.scheme == "chdb" and not parsed.netloc and not parsed.query and parsed.path
    return parsed.path if plain else None


def _client(url: str, described: InitializationResult | None = None, **options):
    """A clickhouse-connect session; an embedded one (``chdb://``) with each call ``Guarded``: chDB runs
    it in C++ with the GIL released, and a daemon thread still inside at the interpreter's exit
    crashed it (``hindbrain.native_calls``). One of an engine's folder is a ``DescribedSession``."""
    folder = engine_folder(url)
    client = (clickhouse_connect.get_client(dsn=url, **options) if folder is None or DescribedSession is None
              else DescribedSession(folder, described, **options))
    return Guarded(client) if url.startswith("chdb://") else client


def limited_client(url: str, database: str, limits: dict = TENANT_LIMITS,
                   described: InitializationResult | None = None):
    """A session for tenants' SQL: ``TENANT_LIMITS``, then ``readonly=1``, after which no query
    can change a setting (a ``SETTINGS`` clause is refused by the engine too)."""
    client = _client(url, described, database=database)
    for name, value in {**limits, "readonly": 1}.items():
        client.command(f"SET {name} = {value!r}")
    return client


def chdb_folder(data_path: str) -> str:
    """The embedded engine's folder (ending in "/") that a table's data path (``<folder>/store/<abc>/<uuid>/``)
    lies in: where the tenant SQL worker's snapshots and their sweep live (``tenant_worker.worker_homes``)."""
    return data_path.split("/store/")[0] + "/"
