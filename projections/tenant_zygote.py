"""The tenant SQL workers' processes: forked by a zygote, held by the brain through a pidfd (docs/speed.md, round
thirty; split from ``tenant_worker`` in round thirty-one).

A worker used to be a fresh interpreter that imported pyarrow, numpy, clickhouse-connect and chDB (~0.65 s of CPU a
start) before it opened its engine. ``Zygote`` is one process per brain process that has loaded those (``preload``:
chDB's library mapped and relocated, not the ``chdb`` package, whose import opens an engine) and forks a worker per
start, which then runs ``tenant_worker.serve``: a start costs a fork and the worker's own engine and attaches.

The brain is not the worker's parent, so it holds the worker as a ``ForkedProcess``: a pidfd the worker opened on
itself and sent first, answering ``pid``, ``poll``, ``kill`` and ``wait`` as ``subprocess.Popen`` does for the
watchdog in ``tenant_worker``. The zygote reaps its workers, and the brain process waits for the zygote at its exit,
so the workers' CPU reaches the brain's ``RUSAGE_CHILDREN``.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.util
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import traceback
import weakref
from multiprocessing.connection import Connection


def preload() -> None:
    """Load what every worker loads before its engine, once, in the zygote: pyarrow, numpy, clickhouse-connect and
    the sandbox's checks with sqlglot (~0.7 s of imports) and chDB's library, mapped and relocated. Not the ``chdb``
    package: its import opens an engine to read its version, which starts the engine's thread pools, and a fork copies
    no thread — a forked worker's engine would wait on pools that are not there."""
    import clickhouse_connect.driver  # noqa: F401
    import pyarrow  # noqa: F401 - chdb's Python side imports it

    # the sandbox's parse and check runs in the worker (``tenant_sql.refusal_of``, round thirty-two): sqlglot and
    # its dialects are ~0.5 s of imports a worker would pay at its first query
    importlib.import_module("hindbrain.service.tenant_sql")

    package = importlib.util.find_spec("chdb").submodule_search_locations[0]
    # as chdb's __init__ loads it (RTLD_DEEPBIND: its own jemalloc's operator new); its import then finds it loaded
    ctypes.CDLL(os.path.join(package, "_chdb.abi3.so"), mode=sys.getdlopenflags() | os.RTLD_DEEPBIND)


def _zygote(control: socket.socket) -> None:
    """The zygote's loop: for each worker socket the brain sends, fork a worker that serves it. It exits when the
    brain's end closes. It reaps each worker as it ends (the brain watches them through the pidfd each sends it,
    not as their parent): waited for, not ignored, so their CPU adds to the zygote's, and so to the brain's once
    it waits for the zygote (``Zygote.close``)."""
    preload()
    from hindbrain.projections.tenant_worker import serve  # imported once here: every fork has it

    signal.signal(signal.SIGCHLD, _reap)
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(control, 1, 1)
        except OSError:
            return
        if not fds:  # the brain's end closed
            return
        if os.fork() == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _worker(fds[0], serve)
        os.close(fds[0])


def _reap(*_) -> None:
    """Wait for every worker that has ended (the zygote's SIGCHLD handler)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def _worker(fd: int, serve) -> None:
    """A forked worker's life: ``serve`` its socket, then exit without the zygote's clean-ups (its atexit, its
    buffers)."""
    status = 0
    try:
        serve(Connection(fd))
    except BaseException:  # noqa: BLE001 - shown on stderr as an unforked process's end would be
        traceback.print_exc()
        status = 1
    finally:
        os._exit(status)


class Zygote:
    """A process that has loaded what a worker loads but opened no engine, forking a worker per start: a start
    costs a fork and the worker's own engine (its chDB connection, the attaches) instead of a new interpreter
    and its imports. One per brain process, for all its warehouses; started on the first worker's start, again
    if it died."""

    def __init__(self):
        self._lock = threading.Lock()
        self._process = self._control = None

    def forget(self) -> None:
        """In a fork of the brain's process: the zygote and its socket are the parent's, this one starts its own."""
        self._lock = threading.Lock()
        self._process = self._control = None

    def fork(self, theirs: socket.socket) -> None:
        """A new worker serving ``theirs`` (the worker's end of its socket pair)."""
        with self._lock:
            for attempt in (1, 2):
                if self._process is None or self._process.poll() is not None:
                    self._begin()
                try:
                    socket.send_fds(self._control, [b"w"], [theirs.fileno()])
                    return
                except OSError:  # it died since: a new one takes the request
                    if attempt == 2:
                        raise
                    self._process.kill()
                    self._process.wait(5)
                    self._process = None

    def close(self) -> None:
        """End the zygote (its socket closed, it exits) and wait for it: at the brain process's exit."""
        with self._lock:
            if self._control is not None:
                self._control.close()
            if self._process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(5)
            self._process = self._control = None

    def _begin(self) -> None:
        if self._control is not None:
            self._control.close()
        ours, theirs = socket.socketpair()
        # a fresh interpreter (not a fork of the brain: no copy of its threads and engine; not multiprocessing's
        # spawn, which imports the caller's __main__ again)
        self._process = subprocess.Popen([sys.executable, "-m", __name__, str(theirs.fileno())],
                                         pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        theirs.close()
        self._control = ours


ZYGOTE = Zygote()
os.register_at_fork(after_in_child=ZYGOTE.forget)
atexit.register(ZYGOTE.close)


def pidfd_pid(pidfd: int) -> int:
    """The process id a pidfd names (its ``/proc/self/fdinfo`` entry's ``Pid``)."""
    with open(f"/proc/self/fdinfo/{pidfd}") as f:
        return int(dict(line.split(":\t", 1) for line in f)["Pid"])


def ended(pidfd: int, timeout: float | None) -> bool:
    """Whether the process of ``pidfd`` ended within ``timeout`` seconds (None: however long). ``poll``, not
    ``select``: a brain serving many connections holds descriptors past ``select``'s 1024."""
    waiting = select.poll()
    waiting.register(pidfd, select.POLLIN)
    return bool(waiting.poll(None if timeout is None else timeout * 1000))


class ForkedProcess:
    """A worker as the brain holds it: the zygote's child, not the brain's, watched and killed through a pidfd.
    Answers ``pid``, ``poll``, ``kill`` and ``wait`` as ``subprocess.Popen`` does (``poll`` gives -9 once it has
    ended: its exit status is the zygote's to read, and nothing here needs it)."""

    def __init__(self, pidfd: int):
        self.pidfd = pidfd
        self.pid = pidfd_pid(pidfd)
        # closed with the last reference, not by ``_stop``: a ``cancel`` that took this process before a ``_stop``
        # would otherwise signal whatever the fd's number names next (another worker's pidfd)
        weakref.finalize(self, os.close, pidfd)

    def poll(self) -> int | None:
        return -signal.SIGKILL if ended(self.pidfd, 0) else None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):  # already ended
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        if not ended(self.pidfd, timeout):
            raise subprocess.TimeoutExpired("tenant SQL worker", timeout)
        return -signal.SIGKILL


if __name__ == "__main__":  # the zygote: python -m hindbrain.projections.tenant_zygote <socket fd>
    _zygote(socket.socket(fileno=int(sys.argv[1])))
