"""Calls into C++ libraries that drop the GIL, made safe for daemon threads at the interpreter's exit.

A daemon thread (e5's loader, a tier step, a server's request thread) that is inside such a call when
the interpreter finalizes is ended by ``pthread_exit`` as it takes the GIL back. The forced unwind
then crosses the library's noexcept GIL guard (pybind11's ``gil_scoped_release`` in ORT, SWIG's
thread-allow block in ``sentencepiece``): ``terminate called without an active exception``, SIGABRT,
exit 134; inside chDB, its unwinder met a frame it could not read: SIGSEGV, exit 139. ORT's runs were
guarded from round twenty; ``sentencepiece`` 0.2.3 drops the GIL in ``encode`` too (a tokenization
between two ORT runs: 30 of 30 exits aborted on a fresh install), and a brain used from a daemon
thread and never closed left chDB's queries open to it (4 of 6 exits).

``native_call()`` goes around every such call. At the exit (``atexit``: after the non-daemon threads
were joined, before the daemon ones are stopped) no new call starts and those in flight end first
(``EXIT_WAIT_S`` at most); a thread other than the main one arriving after that waits for good: it is
a daemon, the process ends around it, blocked in Python's own lock, where ``pthread_exit`` is safe.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from contextlib import contextmanager

EXIT_WAIT_S = 30.0  # the exit's wait for the calls in flight (a passage batch under load)
_calls = threading.Condition()
_in_flight = 0
_exiting = False


@contextmanager
def native_call() -> Iterator[None]:
    """Around one call into a C++ library made with the GIL released (see the module's docstring)."""
    global _in_flight
    with _calls:
        while _exiting and threading.current_thread() is not threading.main_thread():
            _calls.wait()
        _in_flight += 1
    try:
        yield
    finally:
        with _calls:
            _in_flight -= 1
            _calls.notify_all()


class Guarded:
    """``target`` with each of its method calls inside ``native_call`` (a chDB session: every query
    runs in C++ with the GIL released); its attributes read and set as its own."""

    def __init__(self, target):
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str):
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            with native_call():
                return attr(*args, **kwargs)
        return call

    def __setattr__(self, name: str, value) -> None:
        setattr(self._target, name, value)


def in_flight() -> int:
    """The guarded calls running now, on any thread."""
    with _calls:
        return _in_flight


def _drain() -> None:
    """No new guarded call starts; those in flight end first (``EXIT_WAIT_S`` at most)."""
    global _exiting
    with _calls:
        _exiting = True
        _calls.wait_for(lambda: _in_flight == 0, EXIT_WAIT_S)


atexit.register(_drain)  # at import: whoever guards a call imported this module before it
