"""Snapshot generations on disk: the atomic, checked file sets recall's snapshots live in.

A generation is a ``gen-<ns>`` folder holding its files and a ``manifest.json`` naming each
file's size and CRC-32, the format version and the log offset it covers. It is written under a
temp name and renamed into place; ``CURRENT`` (a temp file renamed over it) then names it, so a
reader sees a whole generation or the previous one, never a half-written one. The previous
generation is kept (a reader may be opening it); older ones are deleted (a process that mapped
one keeps its pages: unlinking does not unmap).

Used by ``recall.vector_snapshot`` (the semantic vectors) and ``recall.index_snapshot`` (the
lexical index and the document table), which write their files into one generation.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CURRENT = "CURRENT"
MANIFEST = "manifest.json"
_CRC_CHUNK = 1 << 24
CRC_THREADS = 2


class SnapshotRefused(Exception):
    """The snapshot cannot be used (missing, stale, truncated, corrupt); the message says why."""


def crc(path: Path) -> int:
    """The CRC-32 of a file, over its pages mapped (no copy: reading it into buffers first took
    1.5x as long at 100k events, bench/distributed.py) in chunks (zlib releases the interpreter lock for each)."""
    with path.open("rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return 0
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as pages:
            view = memoryview(pages)
            try:
                value = 0
                for start in range(0, len(view), _CRC_CHUNK):
                    value = zlib.crc32(view[start : start + _CRC_CHUNK], value)
                return value
            finally:
                view.release()


def new_generation(directory: Path) -> Path:
    """A fresh temp folder under ``directory`` for a generation's files (``seal`` publishes it)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".gen-{time.time_ns()}.tmp"
    tmp.mkdir()
    return tmp


def seal(tmp: Path, manifest: dict) -> Path:
    """Adds every file's size and CRC-32 to ``manifest``, writes it, renames ``tmp`` into place
    and makes it current; returns the generation's folder."""
    manifest["files"] = {p.name: {"bytes": p.stat().st_size, "crc32": crc(p)} for p in sorted(tmp.iterdir())}
    (tmp / MANIFEST).write_text(json.dumps(manifest))
    directory = tmp.parent
    final = directory / tmp.name[1:].removesuffix(".tmp")
    os.replace(tmp, final)
    pointer = directory / f".{CURRENT}.{os.getpid()}.tmp"
    pointer.write_text(final.name)
    os.replace(pointer, directory / CURRENT)
    prune(directory, keep=2)
    return final


def prune(directory: Path, keep: int) -> None:
    """Deletes all but the newest ``keep`` generations (and temp folders left by a crash)."""
    gens = sorted((p for p in directory.iterdir() if p.name.startswith("gen-") and p.is_dir()),
                  key=lambda p: int(p.name[4:]))
    for old in gens[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    for stale in directory.glob(".gen-*.tmp"):
        if time.time() - stale.stat().st_mtime > 3600:
            shutil.rmtree(stale, ignore_errors=True)


def current_manifest(directory: Path) -> dict | None:
    """The manifest of the current generation under ``directory`` (None: none, or unreadable)."""
    try:
        name = (Path(directory) / CURRENT).read_text().strip()
        return json.loads((Path(directory) / name / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def open_generation(directory: Path, log_end: int, what: str = "vector snapshot") -> tuple[Path, dict]:
    """The current generation's folder and manifest, once its offset is within the log and every
    file has its size and CRC-32; raises ``SnapshotRefused`` naming what is wrong (``what``
    names the snapshot in the message)."""
    directory = Path(directory)
    try:
        name = (directory / CURRENT).read_text().strip()
    except FileNotFoundError:
        raise SnapshotRefused(f"no {what} in {directory}") from None
    folder = directory / name
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise SnapshotRefused(f"{folder / MANIFEST} is unreadable: {exc}") from None
    if manifest.get("offset", 0) > log_end:
        raise SnapshotRefused(f"stale {what} {folder.name}: it covers the log to offset "
                              f"{manifest['offset']:,}, beyond the log's end {log_end:,} (another log?)")
    files = manifest.get("files", {})
    for file, expected in files.items():
        path = folder / file
        size = path.stat().st_size if path.exists() else None
        if size != expected["bytes"]:
            raise SnapshotRefused(f"truncated {what}: {path} has {size} bytes, the manifest {expected['bytes']}")
    # the largest files first, on two threads (zlib releases the interpreter lock): the check is
    # most of a start at 1M events (~1.4 GB)
    names = sorted(files, key=lambda f: -files[f]["bytes"])
    with ThreadPoolExecutor(max_workers=CRC_THREADS) as pool:
        sums = dict(zip(names, pool.map(lambda f: crc(folder / f), names), strict=True))
    for file in names:
        if sums[file] != files[file]["crc32"]:
            raise SnapshotRefused(f"corrupt {what}: {folder / file} fails its CRC-32")
    return folder, manifest
