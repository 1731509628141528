"""A re-entrant lock handed over in the order its waiters came (the log's lock, ``SqliteLog.lock``).

Why: ``threading.RLock`` lets the thread that releases it take it straight back — it still holds the
GIL, while a waiter woken by the release has to get the GIL first — so four threads appending in a loop
kept a flushing ``sql`` / ``explain`` out for more than a minute (docs/faults.md, round twenty-five).
Here a release with waiters makes the first of them the owner before it wakes, and a thread coming
back queues behind the others: a waiter gets the lock after at most one turn of each thread ahead of it
(docs/faults.md, round twenty-six). Uncontended, it costs a ``threading.Lock`` round and a few
attribute writes (~1.5 µs an acquire and release, against 0.2 µs for an RLock).
"""

from __future__ import annotations

import threading
from collections import deque
from threading import get_ident


class FairRLock:
    """A re-entrant lock whose waiters take it first come, first served (module docstring)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()  # guards the fields below, held for a few statements only
        self._owner: int | None = None
        self._depth = 0
        # (thread id, a lock held until the thread is made the owner), in arrival order
        self._waiters: deque[tuple[int, threading.Lock]] = deque()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        me = get_ident()
        with self._mutex:
            if self._owner == me:
                self._depth += 1
                return True
            if self._owner is None and not self._waiters:
                self._owner, self._depth = me, 1
                return True
            if not blocking:
                return False
            turn = (me, threading.Lock())
            turn[1].acquire()
            self._waiters.append(turn)
        try:
            if turn[1].acquire(timeout=timeout):
                return True  # ``_hand_on`` made this thread the owner before it released the turn
        except BaseException:  # e.g. KeyboardInterrupt while waiting: leave the queue, or pass the lock on
            if not self._left_queue(turn):
                self.release()
            raise
        return not self._left_queue(turn)  # timed out, unless it was handed over meanwhile

    def _left_queue(self, turn: tuple[int, threading.Lock]) -> bool:
        """Removes a waiter that gave up; False when it cannot, as it was made the owner already."""
        with self._mutex:
            if self._owner == turn[0]:
                return False
            self._waiters.remove(turn)
            return True

    def release(self) -> None:
        with self._mutex:
            if self._owner != get_ident():
                raise RuntimeError("cannot release a lock this thread does not hold")
            self._depth -= 1
            if self._depth:
                return
            self._owner = None
            if self._waiters:
                self._hand_on()

    def _hand_on(self) -> None:
        """(``_mutex`` held, the lock free.) The first waiter becomes the owner, then wakes: a thread
        taking the lock again before it ran queues behind it."""
        me, turn = self._waiters.popleft()
        self._owner, self._depth = me, 1
        turn.release()

    def owned(self) -> bool:
        """Whether the calling thread holds the lock."""
        return self._owner == get_ident()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
