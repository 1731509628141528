"""How soon a thread waiting for the GIL gets it (design.md §issue-28, isolation).

A recall gives up the GIL many times: numpy over a tenant's arrays, the vector search, a
lock, the query embedding's thread. While another thread is busy in Python (a batch of 64 kB
texts being folded, the recall records' projection), each time it waits until that thread is
made to let go: the interpreter's switch interval, 5 ms by default. A recall with ten such
points waited up to ~50 ms, so another tenant's recall p99 rose 4.65x while 64 kB texts
arrived (docs/speed.md). A shorter interval bounds each wait; the cost is a few more switches
for the busy thread (``bench/isolation.py`` measures both).

The interval is the interpreter's, so this only ever shortens it: a process that chose a
shorter one keeps it.
"""

from __future__ import annotations

import sys


def shorten_switch_interval(ms: float) -> float:
    """Sets the interpreter's switch interval to ``ms`` milliseconds if that is shorter than the
    current one (0: leave it); returns the interval in force, in seconds."""
    if ms > 0 and ms / 1000 < sys.getswitchinterval():
        sys.setswitchinterval(ms / 1000)
    return sys.getswitchinterval()
