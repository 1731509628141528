"""Vector search for the semantic channel: exact numpy vs usearch HNSW variants, and cache reload.

    .venv/bin/python bench/vectors.py                        # 100k, every variant: ~2.5 min here
    .venv/bin/python bench/vectors.py --sizes 100000,1000000 # + 1M (numpy, hindbrain): ~9.5 min here
    .venv/bin/python bench/vectors.py --full                 # plain usearch variants at every size too
    OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/vectors.py # what the USE rows look like without BLAS threads

The 1M graph alone takes ~7 minutes to build on this shared 2-core machine (single-threaded
HNSW inserts cost ~0.4 ms each here), so the default stays at 100k to finish under 5 minutes.

Data: unit 512-d vectors around 2,000 gaussian centres (cosine to the centre ~0.7; the ten
nearest neighbours of a query sit within ~0.05 of each other, like embeddings of related texts),
not uniform noise, where every neighbour is equally far and HNSW looks either perfect or hopeless.
Queries are 200 fresh draws from the same mixture. recall@10 is against exact float32 top-10.
Latency is one query at a time, single-threaded, k=10: p50 / p99 over the queries (the machine
is shared and noisy, so trust medians). Memory is bytes per vector as the structure reports it.

Rows:
* ``numpy f32``: brute force ``X @ q`` + argpartition (what ``VectorIndex`` does below its
  exact limit).
* ``usearch f16`` / ``usearch i8 (cast)``: a plain usearch index given the float32 vectors
  (usearch casts i8 as ``x * 127``).
* ``hindbrain``: ``hindbrain.recall.vectors.VectorIndex`` (int8 codes with per-vector absmax
  scaling, graph pointing into them); ``efN`` rows re-run its searches with another
  ``expansion_search``; ``allowed x%`` rows pass a random mask (x% of keys allowed).
* ``USE query``/``USE query + hindbrain``: the query embedding the whole recall also pays.
* ``cache reload``: 100k float16 vectors in the SQLite embedding cache, read back by a fresh
  ``SemanticIndex`` until every document is searchable.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from usearch.index import Index, MetricKind

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from hindbrain.recall import vectors as hv  # noqa: E402
from hindbrain.recall.semantic import EmbeddingCache, SemanticIndex, content_key  # noqa: E402
from hindbrain.recall.vectors import VectorIndex  # noqa: E402

DIM, CENTRES, K = 512, 2000, 10


def clustered(n: int, seed: int) -> np.ndarray:
    """``n`` unit vectors around the shared ``CENTRES`` centres (noise norm ~1, so cos ~0.7)."""
    centres = np.random.default_rng(12345).standard_normal((CENTRES, DIM), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 65536):
        end = min(n, start + 65536)
        x = centres[rng.integers(0, CENTRES, end - start)]
        x += rng.standard_normal((end - start, DIM), dtype=np.float32) * np.float32(1 / np.sqrt(DIM))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        out[start:end] = x
    return out


def exact_top(data: np.ndarray, queries: np.ndarray, k: int, allowed: np.ndarray | None = None) -> list[set[int]]:
    """The exact float32 top-k of each query, as sets of keys (the recall reference); one
    matrix product per block of data, so 1M vectors take seconds, not minutes."""
    best_keys = np.zeros((len(queries), 0), dtype=np.int64)
    best_sims = np.zeros((len(queries), 0), dtype=np.float32)
    for start in range(0, len(data), 65536):
        sims = queries @ data[start : start + 65536].T
        if allowed is not None:
            sims[:, ~allowed[start : start + 65536]] = -np.inf
        keys = np.broadcast_to(np.arange(start, start + sims.shape[1]), sims.shape)
        sims, keys = np.concatenate([best_sims, sims], axis=1), np.concatenate([best_keys, keys], axis=1)
        part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        best_sims, best_keys = np.take_along_axis(sims, part, 1), np.take_along_axis(keys, part, 1)
    return [set(row.tolist()) for row in best_keys]


def measure(search, queries: np.ndarray, truth: list[set[int]] | None) -> tuple[float | None, float, float]:
    """(recall@K or None, p50 ms, p99 ms) of ``search(q) -> keys`` over the queries."""
    for q in queries[:5]:  # warm caches and lazy state
        search(q)
    lat, hits = [], 0
    for i, q in enumerate(queries):
        t0 = time.perf_counter()
        keys = search(q)
        lat.append(time.perf_counter() - t0)
        if truth is not None:
            hits += len(truth[i] & set(np.asarray(keys).tolist()))
    recall = hits / (K * len(queries)) if truth is not None else None
    return recall, float(np.median(lat) * 1e3), float(np.percentile(lat, 99) * 1e3)


class Table:
    def __init__(self):
        print(f"| {'n':>9} | {'variant':<38} | {'build s':>8} | {'B/vec':>6} | {'recall@10':>9} | "
              f"{'p50 ms':>7} | {'p99 ms':>7} |")
        print(f"|{'-' * 11}|{'-' * 40}|{'-' * 10}|{'-' * 8}|{'-' * 11}|{'-' * 9}|{'-' * 9}|")

    @staticmethod
    def row(n, variant, build=None, bpv=None, result=(None, None, None)):
        recall, p50, p99 = result

        def f(v, fmt):
            return "–" if v is None else format(v, fmt)

        print(f"| {n:>9,} | {variant:<38} | {f(build, '8.1f')} | {f(bpv, '6.0f')} | {f(recall, '9.3f')} | "
              f"{f(p50, '7.2f')} | {f(p99, '7.2f')} |", flush=True)


def bench_size(table: Table, n: int, n_queries: int, full: bool, embed_queries) -> None:
    t0 = time.perf_counter()
    data = clustered(n, seed=n)
    queries = clustered(n_queries, seed=7)
    truth = exact_top(data, queries, K)
    print(f"# n={n:,}: data + exact truth in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)

    few = queries[: max(20, n_queries // 10)] if n >= 500_000 else queries  # 1M brute force: ~0.1-0.3 s each
    table.row(n, f"numpy f32 brute force, BLAS ({len(few)} q)", 0.0, DIM * 4,
              measure(lambda q: np.argpartition(-(data @ q), K - 1)[:K], few, truth[: len(few)]))
    table.row(n, f"numpy f32 brute force, einsum ({len(few)} q)", 0.0, DIM * 4,
              measure(lambda q: np.argpartition(-np.einsum("ij,j->i", data, q), K - 1)[:K], few, truth[: len(few)]))

    if n <= 100_000 or full:
        for dtype in ("f16", "i8"):
            plain = Index(ndim=DIM, metric=MetricKind.Cos, dtype=dtype, connectivity=hv.CONNECTIVITY,
                          expansion_add=hv.EXPANSION_ADD, expansion_search=hv.EXPANSION_SEARCH)
            t0 = time.perf_counter()
            plain.add(np.arange(n), data, threads=2)
            build = time.perf_counter() - t0
            cast = " (cast x*127)" if dtype == "i8" else ""
            label = f"usearch {dtype}{cast} M{hv.CONNECTIVITY} ea{hv.EXPANSION_ADD} ef{hv.EXPANSION_SEARCH}"
            table.row(n, label, build, plain.memory_usage / n,
                      measure(lambda q, ix=plain: ix.search(q, K, threads=1).keys, queries, truth))
            plain = None  # free it before the next build

    index = VectorIndex(DIM, exact_limit=0)
    t0 = time.perf_counter()
    index.add(np.arange(n), data)
    build = time.perf_counter() - t0
    label = f"hindbrain i8-absmax M{hv.CONNECTIVITY} ea{hv.EXPANSION_ADD}"
    table.row(n, f"{label} ef{hv.EXPANSION_SEARCH}", build, index.memory_bytes() / n,
              measure(lambda q: index.search(q, K)[0], queries, truth))
    for ef in (64, 128):
        index.expansion_search = ef
        table.row(n, f"  same, ef{ef}", result=measure(lambda q: index.search(q, K)[0], queries, truth))
    index.expansion_search = hv.EXPANSION_SEARCH
    rng = np.random.default_rng(3)
    for fraction in (0.1, 0.01):  # at 100k: over-fetch + filter; the exact scan of the allowed keys
        allowed = rng.random(n) < fraction
        masked_truth = exact_top(data, queries, K, allowed)
        table.row(n, f"  same, allowed {fraction:.0%} ({allowed.sum():,} keys)",
                  result=measure(lambda q, a=allowed: index.search(q, K, a)[0], queries, masked_truth))
    if embed_queries is not None:
        texts = [f"the page keeps spinning after submit, ticket {i}" for i in range(n_queries)]
        table.row(n, "USE query embedding (short text)",
                  result=measure(lambda t: embed_queries([t])[0][:0], texts, None))

        def embed_and_search(t):
            return index.search(embed_queries([t])[0], K)[0]

        table.row(n, "USE query + hindbrain search", result=measure(embed_and_search, texts, None))


class _NoModel:
    """Reloading from the cache must not embed anything."""

    name, dim = "bench-model", DIM

    def embed_queries(self, texts):
        raise AssertionError("the cache reload embedded a text")

    embed_passages = embed_queries


def bench_cache_reload(n: int) -> None:
    data = clustered(n, seed=99)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cache.sqlite"
        cache = EmbeddingCache(path, _NoModel.name, DIM)
        items = [(i, f"doc-{i}", f"text {i}") for i in range(n)]
        t0 = time.perf_counter()
        for start in range(0, n, 512):  # as the background thread writes it
            cache.put([(content_key("acme", t), data[i]) for i, _, t in items[start : start + 512]])
        write = time.perf_counter() - t0
        cache.close()
        size = path.stat().st_size + sum(p.stat().st_size for p in path.parent.glob("cache.sqlite-*"))

        semantic = SemanticIndex(_NoModel(), path)
        t0 = time.perf_counter()
        semantic.add("acme", items)
        assert semantic.wait(600) and semantic.coverage("acme") == (n, n), semantic.last_error
        searchable = time.perf_counter() - t0
        queries = clustered(50, seed=5)
        _, p50, p99 = measure(lambda q: semantic.search("acme", q, K), queries, None)
        unbuilt = semantic._tenants["acme"].index.unbuilt
        semantic.close()
    print(f"\ncache reload, {n:,} vectors: written in {write:.1f} s (file {size / n:.0f} B/vector); a fresh "
          f"SemanticIndex made all of them searchable in {searchable:.2f} s ({n / searchable:,.0f} vectors/s), "
          f"with {unbuilt:,} still waiting for the graph; searches then: p50 {p50:.2f} ms, p99 {p99:.2f} ms "
          f"(exact scan of the waiting part).")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--full", action="store_true", help="plain usearch variants at every size")
    ap.add_argument("--no-embed", action="store_true", help="skip the USE query-embedding rows")
    ap.add_argument("--cache-reload", type=int, default=100_000, help="vectors for the reload row (0: skip)")
    args = ap.parse_args(argv)

    embed_queries = None
    if not args.no_embed:
        try:
            from hindbrain.recall.embed import default_embedder

            model = default_embedder()
            model.embed_queries(["warm up"])
            embed_queries = model.embed_queries
        except ImportError as exc:
            print(f"# no USE rows: {exc}", file=sys.stderr)

    started = time.perf_counter()
    table = Table()
    for n in (int(s) for s in args.sizes.split(",")):
        bench_size(table, n, args.queries, args.full, embed_queries)
    if args.cache_reload:
        bench_cache_reload(args.cache_reload)
    print(f"\ntotal {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
