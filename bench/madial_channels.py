"""MADial-Bench through the recall ENGINE: each channel alone, the seed weights, RRF and a few
fixed "dialogue" weightings, next to BM25 and the published baselines.

    .venv/bin/python bench/madial_channels.py [--embedders use use+e5] [--data DIR] [--cache-dir /tmp]

Same task, queries and metric as ``bench/madial.py`` (whose loader, BM25 and baseline scorer are
imported, not copied): 160 zh + 160 en queries, R@k = |top-k ∩ gold| / |gold| averaged over the
queries, in %. What differs is that the ranking comes from ``RecallEngine.recall``:

* one ``RecallIndex`` per language (and embedder); each MADial user is a **tenant**, so the
  candidates are that user's memories by construction (the engine's hard tenant wall). Every
  ranked id is checked to belong to the query's user;
* each memory is an event, ``event_doc(id, {"text": event sentence, "scope": {}, "kind":
  "message", "emotion": ..., everything else None/[]}, ts_us)``, ``ts_us`` = the memory's
  ``time`` date (MADial dates every memory) at 00:00 UTC; ``now_us`` = the day after the
  language's latest memory (queries carry no date);
* the semantic channel is ``SemanticIndex(embedder_from_name(name), /tmp cache)``; the cache
  makes reruns skip the memory embeddings;
* query = the user's turns of the dialogue so far (madial.py's ``user`` variant), through
  ``build_query(RecallInput(tenant, query, budget_tokens=100000))``;
* ranking = ``RecallEngine(index, weights, pool=40).recall(q).ranked`` (pool 40 > max k 10).

Weight settings: each channel alone (that channel 1, every other 0, belief_bias 0); the seed
default ``Weights()``; ``Weights(method="rrf")``; and three "dialogue" settings fixed before
looking at any result (no tuning on these queries; there is no dev split):
D1 lexical .05 / semantic .90 / graph .05 (lexical as a cue boost, the brief's example);
D2 lexical .10 / semantic .90 (the BM25 weight bench/madial.py found neutral for fusion);
D3 = D1 plus the seed's scenario .10 / utility .10 / freshness .05 (does the rest of the seed hurt?).

Latency: ``build_query`` + ``recall`` wall time per query, on the ``Weights()`` pass, where
every query is embedded afresh; the other passes reuse the query vector of that pass
(a memo in front of the embedder), which changes no score and keeps the run short.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np

from hindbrain.recall.embed import Embedder, embedder_from_name
from hindbrain.recall.engine import RecallEngine
from hindbrain.recall.event_documents import event_doc
from hindbrain.recall.index import RecallIndex
from hindbrain.recall.query import build_query
from hindbrain.recall.scoring import CHANNELS, Weights
from hindbrain.recall.semantic import SemanticIndex
from hindbrain.schemas.api import RecallInput

sys.path.insert(0, str(Path(__file__).resolve().parent))
from madial import (  # noqa: E402
    DEFAULT_DATA,
    KS,
    Lang,
    baseline_recalls,
    bm25_scores,
    fmt_row,
    load_lang,
    ranking,
    recalls,
)

POOL = 40
VARIANT = "user"  # the user's turns of the dialogue so far
US_PER_DAY = 86_400 * 1_000_000
_NONE_FIELDS = ("system", "identity", "action", "expected", "actual", "reason", "signal", "condition")


def _alone(channel: str) -> Weights:
    return Weights(**{ch: float(ch == channel) for ch in CHANNELS}, belief_bias=0.0)


_ZERO = dict.fromkeys(CHANNELS, 0.0)
SETTINGS: list[tuple[str, Weights]] = [
    *((f"{ch} only", _alone(ch)) for ch in CHANNELS),
    ("seed default Weights()", Weights()),
    ("RRF Weights(method='rrf')", Weights(method="rrf")),
    ("D1 lex .05 sem .90 graph .05", Weights(**{**_ZERO, "lexical": 0.05, "semantic": 0.90, "graph": 0.05})),
    ("D2 lex .10 sem .90", Weights(**{**_ZERO, "lexical": 0.10, "semantic": 0.90})),
    ("D3 = D1 + scen .10 util .10 fresh .05", Weights(lexical=0.05, semantic=0.90, graph=0.05)),
]
TIMED = "seed default Weights()"  # the pass whose queries are embedded afresh (latency)


class QueryMemo:
    """The embedder, with query vectors remembered; ``reuse`` turns reading the memo on."""

    def __init__(self, inner: Embedder):
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.reuse = False
        self._memo: dict[str, np.ndarray] = {}

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        if self.reuse and len(texts) == 1 and texts[0] in self._memo:
            return self._memo[texts[0]][None, :]
        out = self.inner.embed_queries(texts)
        if len(texts) == 1:
            self._memo[texts[0]] = out[0]
        return out

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)


def tenant_of(user: int) -> str:
    return f"user-{user}"


def memory_days(data: Path, lang: str) -> dict[int, int]:
    """Memory id -> its ``time`` as days since the epoch (bench/madial.py's loader drops it)."""
    path = data / "derived" / f"madial_{lang}_memories.jsonl"
    out = {}
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            out[int(r["id"])] = (date.fromisoformat(r["time"]) - date(1970, 1, 1)).days
    return out


def build_index(lang: Lang, days: dict[int, int], embedder: QueryMemo, cache: Path) -> tuple[RecallIndex, float]:
    t0 = time.perf_counter()
    index = RecallIndex(SemanticIndex(embedder, cache))
    items = []
    for m in lang.memories:
        fields = {"text": m.event, "scope": {}, "kind": "message", "emotion": m.emotion, "entities": [],
                  **dict.fromkeys(_NONE_FIELDS)}
        doc, cues = event_doc(str(m.id), fields, days[m.id] * US_PER_DAY)
        items.append((tenant_of(m.user), doc, cues))
    index.add(items)
    if not index.semantic.wait(timeout=900):
        raise SystemExit(f"semantic index did not finish: last_error={index.semantic.last_error!r}")
    for user, mems in lang.by_user.items():
        have, total = index.semantic.coverage(tenant_of(user))
        if (have, total) != (len(mems), len(mems)):
            raise SystemExit(f"{lang.name} user {user}: {have}/{total} vectors for {len(mems)} memories")
    return index, time.perf_counter() - t0


def run(index: RecallIndex, lang: Lang, weights: Weights, now_us: int) -> tuple[list[list[int]], list[float], dict]:
    """Ranked memory ids per query, per-query wall ms, and per-stage ms lists."""
    engine = RecallEngine(index, weights, pool=POOL)
    rankings, took, stages, top_tied = [], [], {}, 0
    for q in lang.queries:
        rin = RecallInput(tenant=tenant_of(q.user), query=q.text(VARIANT), budget_tokens=100_000)
        t0 = time.perf_counter()
        result = engine.recall(build_query(rin, now_us=now_us))
        took.append(1000 * (time.perf_counter() - t0))
        for stage, ms in result.timings_ms.items():
            stages.setdefault(stage, []).append(ms)
        ids = [int(s.doc.id) for s in result.ranked]
        own = {m.id for m in lang.by_user[q.user]}
        if not set(ids) <= own:
            raise AssertionError(f"{lang.name} query {q.id}: ranked ids {sorted(set(ids) - own)} are not user "
                                 f"{q.user}'s memories (tenant wall breached)")
        if len(ids) < min(max(KS), len(own)) or len(ids) != len(set(ids)):
            raise AssertionError(f"{lang.name} query {q.id}: {len(ids)} ranked ids ({len(set(ids))} distinct)")
        scores = [s.score for s in result.ranked[: max(KS)]]
        top_tied += scores[0] == scores[-1]
        rankings.append(ids)
    stages["top-10 all tied"] = [top_tied / len(lang.queries)]
    return rankings, took, stages


def random_expectation(lang: Lang) -> dict[int, float]:
    """E[R@k] of a uniformly random order over the user's memories: min(k, n) / n."""
    return {k: 100 * statistics.fmean(min(k, len(lang.by_user[q.user])) / len(lang.by_user[q.user])
                                      for q in lang.queries) for k in KS}


def pct(xs: Sequence[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--embedders", nargs="+", default=["use", "use+e5"], choices=["use", "e5", "use+e5"])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--langs", nargs="+", default=["zh", "en"])
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp"), help="where the embedding caches live")
    args = ap.parse_args()
    assert max(KS) < POOL, "the pool must exceed the largest k"
    started = time.perf_counter()
    langs = {name: load_lang(args.data, name) for name in args.langs}
    days = {name: memory_days(args.data, name) for name in args.langs}
    for lang in langs.values():
        sizes = {u: len(ms) for u, ms in lang.by_user.items()}
        print(f"{lang.name}: {len(lang.queries)} queries, memories per user {sizes}", flush=True)

    results: dict[str, dict[str, dict[int, float]]] = {}
    golds = {name: [q.gold for q in lang.queries] for name, lang in langs.items()}
    for name, lang in langs.items():
        scores = bm25_scores(lang, "event", VARIANT)
        ranks = [ranking(np.array([m.id for m in lang.by_user[q.user]]), s)
                 for q, s in zip(lang.queries, scores, strict=True)]
        results.setdefault(f"BM25 per-user [{VARIANT}] (bench/madial.py)", {})[name] = recalls(golds[name], ranks)
        results.setdefault("random order (expected)", {})[name] = random_expectation(lang)

    latency: list[str] = []
    tied: dict[str, dict[str, float]] = {}
    for emb_name in args.embedders:
        embedder = QueryMemo(embedder_from_name(emb_name))
        for name, lang in langs.items():
            cache = args.cache_dir / f"hindbrain-madial-channels-{name}.sqlite"
            index, built_s = build_index(lang, days[name], embedder, cache)
            now_us = (max(days[name].values()) + 1) * US_PER_DAY
            # warm-up: loads the model if every memory vector came from the cache
            embedder.reuse = False
            RecallEngine(index, Weights(), pool=POOL).recall(build_query(
                RecallInput(tenant=tenant_of(lang.queries[0].user), query="warm up", budget_tokens=100_000), now_us))
            order = sorted(SETTINGS, key=lambda s: s[0] != TIMED)  # the timed pass first: fresh query vectors
            for label, weights in order:
                embedder.reuse = label != TIMED
                ranks, took, stages = run(index, lang, weights, now_us)
                results.setdefault(f"engine[{emb_name}] {label}", {})[name] = recalls(golds[name], ranks)
                tied.setdefault(label, {})[f"{emb_name} {name}"] = stages.pop("top-10 all tied")[0]
                if label == TIMED:
                    parts = ", ".join(f"{s} {statistics.median(v):.2f}" for s, v in stages.items())
                    latency.append(f"| {emb_name} | {name} | {pct(took, 50):.1f} | {pct(took, 90):.1f} | "
                                   f"{max(took):.1f} | {parts} | {built_s:.1f} |")
            index.semantic.close()
            print(f"{emb_name} {name}: done at {time.perf_counter() - started:.0f} s", flush=True)

    baselines = baseline_recalls(args.data, langs)
    names = list(langs)
    print(f"\nMADial-Bench recall through RecallEngine, R@k in % (|top-k ∩ gold| / |gold|, mean of 160 queries); "
          f"query = user turns; candidates = the user's memories (one tenant per user); pool = {POOL}")
    print("| method | " + " | ".join(f"{n} R@{k}" for n in names for k in KS) + " |")
    print("|---|" + "---:|" * (len(names) * len(KS)))
    for label, by_lang in baselines.items():
        print(fmt_row(f"published: {label}", by_lang, names))
    for label, by_lang in results.items():
        print(fmt_row(label, by_lang, names))

    print("\nshare of queries whose top-10 engine scores are all equal (order = tie-break on doc id, not evidence)")
    cols = list(next(iter(tied.values())))
    print("| setting | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for label, by_col in tied.items():
        print(f"| {label} | " + " | ".join(f"{100 * by_col[c]:.0f}%" for c in cols) + " |")

    print("\nengine latency per query, ms (build_query + recall, query embedded afresh; Weights() pass; "
          "stage medians from RecallResult.timings_ms; setup = index + memory embeddings, cached after the 1st run)")
    print("| embedder | lang | p50 | p90 | max | stage medians | setup s |")
    print("|---|---|---:|---:|---:|---|---:|")
    print("\n".join(latency))
    print(f"\ntotal {time.perf_counter() - started:.0f} s ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)")


if __name__ == "__main__":
    main()
