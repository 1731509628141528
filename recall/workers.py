"""Embedder workers: the neural tier's model runs in worker processes, never on a request thread.

The neural model's tokenizer is pure Python (USE's sentencepiece port): in the brain's process
it holds the interpreter lock for ~2.7 s on a 64 kB text, and every other tenant's recall
waited behind it (issue 27, point 6). A worker process has its own interpreter, so the brain's
threads only wait for the vectors, never for the lock.

``EmbedderPool(name, workers)`` starts ``workers`` processes (``spawn``: forking a process that
runs threads is unsafe), each building the embedder ``name`` names (``recall.embed``) once and
embedding the batches it is handed, one BLAS thread each. The semantic index's background
thread hands batches to every worker at once (``embed_many``), so N workers embed ~N times as
fast while the scheduling (fair per tenant, deduped by text hash, capped at the model's window)
stays in one place. Measured per worker in ``bench/api.py`` ("embedder workers").

A GPU: the USE model is numpy-only and runs on the CPU; a model with a device (a torch or
ONNX embedder) would pick it in ``_init`` of its worker, with the same batching.
"""

from __future__ import annotations

import atexit
import multiprocessing
import threading
from concurrent.futures import Future, ProcessPoolExecutor

import numpy as np

_embedder = None  # the worker process's model (set by _init)


def _init(name: str) -> None:
    global _embedder
    from hindbrain.recall.embed import embedder_from_name

    _embedder = embedder_from_name(name)
    _embedder.embed_passages(["warm-up"])  # load the weights before the first batch is timed


def _embed(texts: list[str]) -> np.ndarray:
    return _embedder.embed_passages(texts).astype(np.float32, copy=False)


class EmbedderPool:
    """``workers`` processes embedding passages with the model ``name`` names."""

    def __init__(self, name: str, workers: int = 1):
        if workers < 1:
            raise ValueError(f"embed workers must be at least 1, got {workers}")
        self.name, self.workers = name, workers
        self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_init, initargs=(name,))

    def submit(self, texts: list[str]) -> Future:
        """The passages' unit vectors, as a future."""
        return self._pool.submit(_embed, list(texts))

    def embed_many(self, batches: list[list[str]]) -> list[np.ndarray]:
        """Every batch embedded, spread over the workers; in order."""
        futures = [self.submit(b) for b in batches]
        return [f.result() for f in futures]

    owned = True  # closed with the semantic index that uses it (a shared pool is not)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


_shared: dict[tuple[str, int], EmbedderPool] = {}
_shared_lock = threading.Lock()


def shared_pool(name: str, workers: int) -> EmbedderPool:
    """One pool per (model, worker count) per process, shared by every brain it opens (a test
    suite or a server reopening brains starts the workers once); shut down at exit."""
    with _shared_lock:
        pool = _shared.get((name, workers))
        if pool is None:
            pool = _shared[(name, workers)] = EmbedderPool(name, workers)
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
