"""Embedder workers: the neural tier's model runs in worker processes, never on a request thread.

The neural model's tokenizer is pure Python (USE's sentencepiece port): in the brain's process
it held the interpreter lock for ~2.7 s on a 64 kB text, and every other tenant's recall
waited behind it (design.md §issue-27, point 6). A worker process has its own interpreter, so the brain's
threads only wait for the vectors, never for the lock.

``EmbedderPool(name, workers)`` runs ``workers`` processes (``python -m
hindbrain.recall.workers NAME``), each building the embedder ``name`` names (``recall.embed``)
once, with one BLAS thread, and embedding the batches it is sent over its stdin (pickled
lists of texts; vectors or an error back on stdout). They are plain subprocesses rather than
``multiprocessing`` ones: ``spawn`` re-imports the user's main module in every child, so a
script that opens a brain outside ``if __name__ == "__main__"`` would run again in each worker.
Workers start on first use, so a brain that never perceives starts none.

The semantic index's background thread hands one batch to each worker at a time
(``embed_many``): N workers embed ~N times as fast on N free cores, while the scheduling (fair
per tenant, deduped by text hash, capped at the model's window) stays in one place. One batch
in flight per worker also keeps both pipes from filling up at once (a deadlock otherwise).
A worker that dies is restarted on the next batch; its error reaches the index, which keeps it
in ``last_error`` and requeues the items. Measured per worker in ``bench/api.py``.

**Below the brain's threads** (``WORKER_NICE``). On two cores the worker and the caller of a bulk
``perceive_many`` each want a whole core (the worker always has a backlog during an import: it
used ~85 us of CPU an event against the caller's ~80), so the brain's other threads (the views'
projector, chDB's insert threads, the vector graph) took their share from the caller as often as
from the worker, and the caller waited on the run queue. A worker lowers its own scheduling
priority (``os.nice``) when it starts: the scheduler then gives the caller and the brain's threads
a core first and the worker every cycle they leave; the neural tier is the lagging one by design
and catches up once the import pauses. Only the worker's process is lowered, never a thread of the
brain: a thread holding the interpreter lock while starved would stall the others (the worker has
an interpreter of its own). 0 keeps the worker level with the brain (``HINDBRAIN_EMBED_WORKER_NICE``).

**Idle, not only nice** (``idle``, ``HINDBRAIN_EMBED_WORKER_IDLE``, Linux). On top of its nice the worker
puts itself under ``SCHED_IDLE``. Nice 10 still takes ~1/10 of a core it shares with the caller (weights
110 against 1024), and a core running it counts as busy: the threads the caller wakes (the projector,
chDB's insert pool) are then placed beside the caller as often as on the worker's core. Under
``SCHED_IDLE`` the worker weighs 3, and the kernel counts a core that runs only idle tasks as free when it
places a woken thread (``sched_idle_cpu``), so the brain's threads go to the worker's core and the caller
keeps its own. The kernel's autogroups (one per session) keep the worker's share against *other*
processes: alone in its group after an import, the group weighs as any other and the tier catches up.
Where the policy is missing (not Linux) the nice alone applies.

A GPU: the USE model is numpy-only and runs on the CPU; a model with a device (a torch or ONNX
embedder) would pick it where the worker builds it (``serve``), with the same batching.
"""

from __future__ import annotations

import atexit
import os
import pickle
import subprocess
import sys
import threading

import numpy as np

# one BLAS thread per worker (set before numpy loads): N workers use N cores, and threads of
# one worker do not stall each other on a busy machine (see recall.embed.UseEmbedder)
_ONE_THREAD = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
# how far a worker lowers its priority below the brain's (module docstring): 10 gives it ~1/10 of a
# contended core against a thread at the brain's level (the kernel's weights: 110 against 1024)
WORKER_NICE = 10
# and under SCHED_IDLE (module docstring): the caller's core stays the caller's
WORKER_IDLE = True


class _Worker:
    """One worker process and its two pipes; started on first use, restarted after a death."""

    def __init__(self, name: str, nice: int = WORKER_NICE, idle: bool = WORKER_IDLE):
        self.name, self.nice, self.idle = name, nice, idle
        self.proc: subprocess.Popen | None = None

    def send(self, texts: list[str], model: str) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, "-m", "hindbrain.recall.workers", self.name, str(self.nice),
                                          "idle" if self.idle else "normal"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_ONE_THREAD)
        pickle.dump((model, list(texts)), self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()

    def receive(self) -> np.ndarray:
        try:
            kind, value = pickle.load(self.proc.stdout)
        except (EOFError, pickle.UnpicklingError, OSError) as exc:
            self.stop()
            raise RuntimeError(f"embedder worker ({self.name}) died") from exc
        if kind == "error":
            raise RuntimeError(f"embedder worker ({self.name}): {value}")
        return value

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()  # EOF: the worker leaves its loop
            proc.wait(timeout=10)
        except Exception:
            proc.kill()
            proc.wait()


class EmbedderPool:
    """``workers`` processes embedding passages with the model ``name`` names, each ``nice``
    steps below this process's priority and, with ``idle``, under ``SCHED_IDLE`` (module
    docstring). Thread-safe: concurrent ``embed_many`` calls (several brains sharing the pool)
    take turns."""

    owned = True  # closed with the semantic index that uses it (a shared pool is not)

    def __init__(self, name: str, workers: int = 1, nice: int = WORKER_NICE, idle: bool = WORKER_IDLE):
        if workers < 1:
            raise ValueError(f"embed workers must be at least 1, got {workers}")
        if type(nice) is not int or not 0 <= nice <= 19:
            raise ValueError(f"embed worker nice must be an int from 0 to 19, got {nice!r}")
        self.name, self.workers, self.nice, self.idle = name, workers, nice, bool(idle)
        self._workers = [_Worker(name, nice, self.idle) for _ in range(workers)]
        self._lock = threading.Lock()

    def embed_many(self, batches: list[list[str]], model: str | None = None) -> list[np.ndarray]:
        """Every batch's unit vectors, in order; one batch per worker at a time. ``model``: the pass
        that embeds them, the pool's own model by default, or another a worker loads when first sent
        one (``passage_pass``: the e5 dialogue tier's)."""
        out: list[np.ndarray] = []
        with self._lock:
            for start in range(0, len(batches), self.workers):
                round_ = list(zip(self._workers, batches[start : start + self.workers], strict=False))
                for worker, batch in round_:
                    worker.send(batch, model or self.name)
                errors = []
                for worker, _ in round_:  # read every answer, so no worker is left mid-reply
                    try:
                        out.append(worker.receive())
                    except RuntimeError as exc:
                        errors.append(exc)
                if errors:
                    raise errors[0]
        return out

    def close(self) -> None:
        with self._lock:
            for worker in self._workers:
                worker.stop()


_shared: dict[tuple[str, int, int, bool], EmbedderPool] = {}
_shared_lock = threading.Lock()


def shared_pool(name: str, workers: int, nice: int = WORKER_NICE, idle: bool = WORKER_IDLE) -> EmbedderPool:
    """One pool per (model, worker count, nice, idle) per process, shared by every brain it opens
    (a test suite or a server reopening brains starts the workers once); stopped at exit."""
    with _shared_lock:
        key = (name, workers, nice, bool(idle))
        pool = _shared.get(key)
        if pool is None:
            pool = _shared[key] = EmbedderPool(name, workers, nice, idle)
            pool.owned = False
            if len(_shared) == 1:
                atexit.register(_close_shared)
        return pool


def _close_shared() -> None:
    with _shared_lock:
        pools = list(_shared.values())
        _shared.clear()
    for pool in pools:
        pool.close()


def passage_pass(name: str, pool_model: str):
    """The function a worker embeds passages with for ``name``: the pool's model (an embedder
    ``recall.embed`` names) or the e5 dialogue tier's memory pass (``recall.e5_dialogue.MEMORY_MODEL``),
    which only a brain whose dialogues asked for e5 sends: a worker of a text-only brain never loads it."""
    if name == pool_model:
        from hindbrain.recall.embed import embedder_from_name

        return embedder_from_name(name).embed_passages
    from hindbrain.recall import e5_dialogue

    if name != e5_dialogue.MEMORY_MODEL:
        raise ValueError(f"this worker embeds with {pool_model!r} or {e5_dialogue.MEMORY_MODEL!r}, not {name!r}")
    return e5_dialogue.memory_pass


def lower_priority(nice: int, idle: bool) -> None:
    """This process lowered by ``nice`` and, with ``idle``, put under ``SCHED_IDLE`` (module
    docstring); before any thread starts, so the model's threads inherit both."""
    if nice:
        os.nice(nice)
    if idle and hasattr(os, "SCHED_IDLE"):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


def serve(name: str, nice: int = 0, idle: bool = False) -> None:
    """The worker's loop: ``(model, texts)`` batches in on stdin, ``("ok", vectors)`` or ``("error",
    message)`` out; first the worker lowers its priority (``lower_priority``). Each pass is loaded
    when its first batch arrives (``passage_pass``) and kept."""
    lower_priority(nice, idle)
    requests = sys.stdin.buffer
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # a stray print must not corrupt the replies
    passes = {}
    while True:
        try:
            model, texts = pickle.load(requests)
        except EOFError:
            return
        try:
            if model not in passes:
                passes[model] = passage_pass(model, name)
            reply = ("ok", np.asarray(passes[model](texts), dtype=np.float32))
        except Exception as exc:  # the index keeps it and retries; the worker lives on
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
            replies.flush()
        except BrokenPipeError:  # the brain's process ended (or closed us) while this batch ran: nobody to tell
            return


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0, sys.argv[3:4] == ["idle"])
