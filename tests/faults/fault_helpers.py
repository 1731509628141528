"""Shared by the fault-injection tests: a size-limited file system, and the checks every fault
test ends with: every acknowledged record is in the log, nothing refused is, no record is torn,
and the views, once recovered, equal the log (what ``hindbrain replay --check`` compares).
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest

from hindbrain.projections.warehouse import Warehouse
from hindbrain.schemas.codec import registry
from hindbrain.settings import Settings
from hindbrain.streams.replay import replay
from hindbrain.streams.runner import CONSUMER
from hindbrain.streams.sqlite_log import ALL_TOPICS, SqliteLog

# The service tests' server-in-a-thread and client, shared rather than copied (pytest puts only
# a test's own folder on sys.path).
sys.path.append(str(Path(__file__).resolve().parents[1] / "service"))
from http_helpers import call, free_port, serving  # noqa: E402

__all__ = ["call", "free_port", "serving"]


def skip(reason: str) -> None:
    print(reason)  # -s shows it; -ra lists it
    pytest.skip(reason)


@contextmanager
def tmpfs(where: Path, size: str):
    """A tmpfs of ``size`` (e.g. "24m") mounted at ``where``: a disk that fills up in
    milliseconds. Needs root (CI and the developers' machines run as root); elsewhere the test
    skips saying so. Always unmounted, lazily if a file is still open."""
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        skip("the disk faults mount a small tmpfs, which needs root; not root here")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        skip(f"cannot mount a tmpfs at {where}: {mounted.stderr.strip() or mounted.returncode}")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], capture_output=True)


def remount(where: Path, mode: str) -> None:
    """``mode``: "ro" or "rw"."""
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True, capture_output=True)


def fill(folder: Path) -> Path:
    """Write a file into ``folder`` until the file system has no byte left; returns it."""
    filler = folder / "filler"
    block = b"\0" * (1 << 16)
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(block)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    for size in (4096, 512, 1):  # the last partial blocks too
        try:
            with open(filler, "ab", buffering=0) as f:
                while True:
                    f.write(b"\0" * size)
        except OSError:
            pass
    return filler


def logged(home: Path) -> Counter:
    """How often each record id is in the log at ``home``. Read over a read-only connection
    (the disk may still be full): the file passes SQLite's integrity check and every record
    decodes (no torn or half-written record)."""
    db = sqlite3.connect(f"file:{Settings(home=home).log_path()}?mode=ro", uri=True)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        ids = Counter()
        for (value,) in db.execute('SELECT value FROM records ORDER BY "offset"'):
            _, record = registry.decode(value)  # raises on a torn record
            ids[record["envelope"]["record_id"]] += 1
        return ids
    finally:
        db.close()


def assert_acknowledged_logged(home: Path, acknowledged: set[str], refused: set[str] = frozenset()) -> Counter:
    """Every acknowledged id is in the log, and no id whose write was refused is."""
    ids = logged(home)
    missing = acknowledged - set(ids)
    assert not missing, f"{len(missing)} acknowledged records are not in the log, e.g. {sorted(missing)[:3]}"
    written = refused & set(ids)
    assert not written, f"{len(written)} refused writes left records in the log, e.g. {sorted(written)[:3]}"
    return ids


def assert_views_equal_the_log(home: Path, clickhouse: str | None = None) -> None:
    """The views as they are (nothing is projected here) hold everything the log holds, and
    equal every view rebuilt from the log into a fresh database, digest for digest (what
    ``hindbrain replay --check`` compares). The brain at ``home`` (views at ``clickhouse``,
    default its own folder) must be closed."""
    settings = Settings(home=home, clickhouse=clickhouse)
    log = SqliteLog(settings.log_path())
    try:
        assert log.committed(CONSUMER, ALL_TOPICS, 0) == log.end_offset(ALL_TOPICS, 0), "the views lag the log"
        live = Warehouse(settings.warehouse_url())
        try:
            live_digest = live.digest()
        finally:
            live.close()
        target = Warehouse(settings.warehouse_url(), database="fault_replay")  # chDB: one folder per process
        try:
            target.reset()
            rebuilt = replay(log, target).digest
        finally:
            target.close()
    finally:
        log.close()
    differ = {view: (live_digest.get(view), d) for view, d in rebuilt.items() if live_digest.get(view) != d}
    assert not differ, f"views differ from the log replayed (live, rebuilt): {differ}"


def newest_part(warehouse: Warehouse, table: str) -> tuple[str, Path]:
    """The name and folder of ``table``'s active part holding the newest block."""
    ((name, path),) = warehouse.query(
        "SELECT name, path FROM system.parts WHERE database = {db:String} AND table = {t:String} AND active "
        "ORDER BY max_block_number DESC LIMIT 1", {"db": warehouse.database, "t": table})
    return name, Path(path)


def unwritten(part: Path) -> None:
    """The part as chDB left it when the disk refused its writes: its files there, every one empty."""
    for file in part.iterdir():
        file.write_bytes(b"")


def merged(warehouse: Warehouse, table: str) -> tuple[str, Path, list[Path]]:
    """Merges ``table``'s parts into one (as the engine's background merges do) and returns the merged
    part's name and folder and the folders of the parts it covers: the engine removes those once their
    lifetime passed, and from then on the merged part alone holds their rows."""
    warehouse.command(f"OPTIMIZE TABLE `{table}` FINAL")
    name, path = newest_part(warehouse, table)
    covered = warehouse.query("SELECT path FROM system.parts WHERE database = {db:String} AND table = {t:String} "
                              "AND NOT active", {"db": warehouse.database, "t": table})
    return name, path, [Path(p) for (p,) in covered]
