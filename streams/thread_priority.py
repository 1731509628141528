"""chDB's merge threads under ``SCHED_IDLE`` (Linux): the caller's core stays the caller's
(docs/speed.md, "The caller's wall, round twenty-one").

A 100k ``perceive_many`` import on two cores: the caller needs one core for all of its wall, and
the process's other threads share the second — the projector (Python, holds the interpreter lock
at times), chDB's query threads running its inserts, and chDB's background merges of the parts
those inserts leave (``MergeMutate``, ~3 µs of CPU an event). Whenever two of them are runnable
with the caller, one waits on the caller's core, and the caller waits in the run queue for it:
that wait is most of the caller's wall beyond its CPU.

Merges have nobody waiting for them: a part is readable the moment its insert returns, a merge
only makes the parts fewer. So they are the one thing here that can run on time nobody else
wants. Under ``SCHED_IDLE`` a thread weighs 3 (nice 0: 1,024) and is preempted at once by any
other thread waking on its core, and the kernel counts a core running only such threads as free
when it places a woken thread (the embed workers run so too: ``recall.workers``). The merges'
schedule threads (``BgSchPool``: which parts to merge, old parts' removal) are background work
of the same kind. chDB's query threads (``ThreadPool``, ``QueryPipelineEx``) are not lowered:
they run the projector's inserts, which the caller waits for once the backlog passes its bound,
and the recalls' and tenants' queries.

Their priority is the thread's (``sched_setscheduler`` on a thread id sets that thread), and
chDB starts pool threads when work first needs them, so ``lower`` is called again each
projection round (``streams.runner``): only threads it has not seen yet have their name read.
Unprivileged processes may always move a thread to ``SCHED_IDLE``; where the policy is missing
(not Linux) nothing is done.
"""

from __future__ import annotations

import os

# chDB's (ClickHouse's) names (``/proc/.../comm``) for the threads of its MergeTree background executors
# (merges and mutations; old parts' removal: ``Common``; moves, fetches) and of its background schedule
# pools (which parts to merge, cleanups; ``BgStrmSchPool``: streaming tables), as a brain's process shows them
IDLE_NAMES = frozenset({"MergeMutate", "Common", "Move", "Fetch", "BgSchPool", "BgStrmSchPool", "BgMBSchPool",
                        "BgDistSchPool", "BgBufSchPool"})
TASKS = "/proc/self/task"
POLICY = getattr(os, "SCHED_IDLE", None)


def is_background(comm: str) -> bool:
    """Whether a thread named ``comm`` does chDB's background (merge) work."""
    return comm in IDLE_NAMES


def thread_name(tid: int, tasks: str = TASKS) -> str | None:
    """Thread ``tid``'s kernel name; None once it has exited."""
    try:
        with open(f"{tasks}/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


class BackgroundIdler:
    """Puts chDB's merge threads of this process under ``SCHED_IDLE``, each once (module docstring)."""

    def __init__(self, enabled: bool = True, tasks: str = TASKS) -> None:
        self.enabled = enabled and POLICY is not None and os.path.isdir(tasks)
        self.tasks = tasks
        self._seen: set[int] = set()
        self.lowered: set[int] = set()  # the thread ids put under SCHED_IDLE (for tests and benches)

    def lower(self) -> int:
        """Lowers the merge threads started since the last call; returns how many it lowered."""
        if not self.enabled:
            return 0
        tids = set(map(int, os.listdir(self.tasks)))
        new, self._seen = tids - self._seen, tids  # exited threads forgotten: a reused id is read again
        lowered = 0
        for tid in new:
            comm = thread_name(tid, self.tasks)
            if comm is not None and is_background(comm):
                try:
                    os.sched_setscheduler(tid, POLICY, os.sched_param(0))
                except OSError:  # exited meanwhile
                    continue
                self.lowered.add(tid)
                lowered += 1
        self.lowered &= tids
        return lowered
