"""Which process serves a brain's folder: ``serve.json``, written by ``hindbrain serve``.

An embedded brain is one process's (chDB opens a folder in one process at a time). While
``hindbrain serve`` runs on a folder, it writes ``<home>/serve.json`` (its pid and URL) and
removes it when it stops. Every other process that would open the folder reads it first:
``Brain.open`` raises ``BrainServed`` naming the pid and the URL (one line, not chDB's
"Unable to open the chdb engine" traceback), and the command line's read commands go to the
server over HTTP instead (``hindbrain sql``, ``explain``, ``views`` with an API key in
``HINDBRAIN_API_KEY``) or say in one line what to use. A file left by a process that died is
ignored (its pid is gone).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

FILE = "serve.json"


class BrainServed(RuntimeError):
    """The brain's folder is open in a ``hindbrain serve`` process: use it over HTTP."""

    def __init__(self, home: Path, server: Server):
        self.home, self.server = home, server
        super().__init__(f"the brain at {home} is served by process {server.pid} at {server.url}: use it over HTTP "
                         f"(hindbrain.Client, or HINDBRAIN_API_KEY=<key> hindbrain sql/explain/views), or stop that "
                         f"process first")


@dataclass(frozen=True)
class Server:
    pid: int
    url: str


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True


def server_of(home: Path) -> Server | None:
    """The live process serving ``home``, or None (no file, an unreadable one, a dead pid, or us)."""
    try:
        found = json.loads((Path(home) / FILE).read_text())
        server = Server(int(found["pid"]), str(found["url"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return server if server.pid != os.getpid() and alive(server.pid) else None


def check_not_served(home: Path) -> None:
    """``BrainServed`` when another live process serves ``home``."""
    if (server := server_of(home)) is not None:
        raise BrainServed(Path(home), server)


@contextmanager
def announced(home: Path, url: str) -> Iterator[None]:
    """``serve.json`` in ``home`` while the block runs (this process serves it at ``url``)."""
    path = Path(home) / FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"pid": os.getpid(), "url": url}))
    tmp.replace(path)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
