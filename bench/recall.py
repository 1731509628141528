"""Recall latency at 100k and 1M fragments: per channel and total, against bm25s.

    python bench/recall.py [--sizes 100000 1000000] [--queries 300]
    python bench/recall.py --sizes 100000 --indirect   # + indirect questions, lexical weight 0 against 1.0

``--indirect`` also times questions the fusion treats as indirect (``recall.indirect``: "would …
likely …", "the colleague who …") with the default preset and with ``indirect_lexical`` 1.0 (the
weights of before), interleaved query by query on the same index, and prints both and their ratio.

For each size, one tenant's index is filled with synthetic cognitive units (systems, actions,
error codes, scopes, English and Chinese text), exactly as the Brain builds documents
(``fragment_doc``: word tokens + CJK bigrams + cue terms). The semantic index gets one
vector per unit: real USE embeddings of 2,000 distinct unit texts, each unit taking its
template's vector plus small noise (embedding 1M texts would take ~13 minutes here; the
search cost depends on the vectors' number and spread, which this keeps realistic). Queries
are real: free text with error codes, structured situations, Chinese; each one's embedding
is timed separately (``embed``).

Printed per size: p50/p99 of query embedding, lexical, semantic search, scoring, gate,
scoring + gate, and the whole recall (embedding included), the memory per fragment, and
bm25s (top-10 over the same texts and tokens, same process) with our ratio to it.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import time

import numpy as np

from hindbrain.projections.fragments import render
from hindbrain.recall.documents import fragment_doc
from hindbrain.recall.embed import UseEmbedder
from hindbrain.recall.engine import RecallEngine
from hindbrain.recall.index import RecallIndex
from hindbrain.recall.query import build_query
from hindbrain.recall.semantic import SemanticIndex
from hindbrain.recall.tokenize import tokens
from hindbrain.schemas.api import RecallInput

SEED = 7
TEMPLATES = 2000
TENANT = "acme"
NOW_US = 1_780_000_000_000_000
SYSTEMS = ["IAM", "CRM", "ERP", "SSO", "K8S", "GitLab", "ServiceNow", "Billing", "Payroll", "Vault", "Jira", "HRIS"]
ACTIONS = ["submit change", "request approval", "switch to the admin account", "retry with backoff",
           "rotate the token", "clear the cache", "open a ticket", "roll back the deploy", "check permissions first",
           "escalate to on-call", "re-run the migration", "refresh the SSO session"]
SYMPTOMS = ["returns 403", "shows a blank page", "redirects to the SSO login page", "times out after 30 s",
            "nothing happens after submit", "fails with ORA-00942", "returns HTTP 502", "loops on login",
            "页面一直转圈", "提交后长期没有响应", "返回403", "跳转到SSO登录页"]
OBJECTS = ["role assignment", "purchase order", "customer record", "payroll run", "deploy pipeline", "vault secret",
           "invoice batch", "user group", "权限申请", "报销单"]
ENVS = ["prod", "test", "staging"]


def unit(rng: random.Random, n: int) -> dict:
    system, symptom, obj = rng.choice(SYSTEMS), rng.choice(SYMPTOMS), rng.choice(OBJECTS)
    condition = f"{system} {obj} {symptom}"
    action = rng.choice(ACTIONS)
    reason = rng.choice(["permission operations need admin", "the token expired", "the replica lags",
                         "a lock is held by a report", "审批流程未完成", None])
    return {"fragment_id": f"fr_{n:08d}", "ts": NOW_US - rng.randrange(0, 400) * 86_400_000_000, "condition": condition,
            "action": action, "reason": reason, "evidence": None, "text": render(condition, action, reason),
            "scope": {"env": rng.choice(ENVS)}, "source": "lived", "layer": "experience", "confidence": 0.6,
            "status": "candidate", "event_ids": [], "entities": [system, obj], "agent": None, "seed": False}


def queries(rng: random.Random, count: int) -> list[RecallInput]:
    out = []
    for n in range(count):
        system, symptom, obj = rng.choice(SYSTEMS), rng.choice(SYMPTOMS), rng.choice(OBJECTS)
        if n % 3 == 0:
            q = RecallInput(tenant=TENANT, query=f"{obj} in {system} {symptom}, what now?", scope={"env": "prod"})
        elif n % 3 == 1:
            q = RecallInput(tenant=TENANT, trigger="anomaly", situation={
                "system": system, "identity": "normal account", "action": rng.choice(ACTIONS),
                "expected": "success message", "actual": symptom})
        else:
            q = RecallInput(tenant=TENANT, query=f"{system}{obj}{symptom}怎么办", budget_tokens=300)
        out.append(q)
    return out


def indirect_queries(rng: random.Random, count: int) -> list[RecallInput]:
    """Questions in the indirect forms (an inference; a person only described) about the units' topics."""
    out = []
    for n in range(count):
        system, symptom, obj = rng.choice(SYSTEMS), rng.choice(SYMPTOMS), rng.choice(OBJECTS)
        text = (f"Would the {obj} in {system} likely work again if it {symptom}?" if n % 3 == 0 else
                f"What did the colleague who fixed the {obj} in {system} do when it {symptom}?" if n % 3 == 1 else
                f"{system}的{obj}{symptom}，换个账号会不会好？")
        out.append(RecallInput(tenant=TENANT, query=text))
    return out


def measure_indirect(index: RecallIndex, qs: list[RecallInput]) -> dict[str, list[float]]:
    """Whole-recall ms of each query with the default preset and with ``indirect_lexical`` 1.0,
    interleaved (which goes first alternates)."""
    from dataclasses import replace

    from hindbrain.recall.scoring import PRESETS

    engines = {"default": RecallEngine(index), "before": RecallEngine(index, replace(PRESETS["fused"],
                                                                                        indirect_lexical=1.0))}
    took: dict[str, list[float]] = {arm: [] for arm in engines}
    for q in qs[:20]:
        for engine in engines.values():
            engine.recall(build_query(q, NOW_US))  # warm up
    for n, q in enumerate(qs):
        for arm in (("default", "before") if n % 2 else ("before", "default")):
            t0 = time.perf_counter()
            engines[arm].recall(build_query(q, NOW_US))
            took[arm].append((time.perf_counter() - t0) * 1000)
    return took


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def build(size: int, embedder: UseEmbedder, template_vectors: np.ndarray, rng: random.Random):
    index = RecallIndex(SemanticIndex(embedder, None))
    gc.collect()
    before = rss_bytes()
    t0 = time.perf_counter()
    template_of = np.empty(size, dtype=np.int32)
    for start in range(0, size, 50_000):
        chunk = []
        for n in range(start, min(size, start + 50_000)):
            template_of[n] = rng.randrange(TEMPLATES)
            row = TEMPLATE_ROWS[template_of[n]]
            chunk.append((TENANT, *fragment_doc({**row, "fragment_id": f"fr_{n:08d}", "tenant": TENANT})))
        _add_lexical_only(index, chunk)
    lexical_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    noise = np.random.default_rng(SEED).standard_normal((size, template_vectors.shape[1]), dtype=np.float32)
    vectors = template_vectors[template_of] + 0.02 * noise
    del noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index.semantic.add_vectors(TENANT, np.arange(size, dtype=np.int64), vectors)
    del vectors
    while index.semantic.unbuilt():  # measure the steady state: every vector in the HNSW graph
        time.sleep(0.5)
    vector_s = time.perf_counter() - t0
    gc.collect()
    return index, template_of, lexical_s, vector_s, (rss_bytes() - before) / size


def _add_lexical_only(index: RecallIndex, items) -> None:
    """Index documents without queueing them for embedding (their vectors come separately)."""
    semantic, index.semantic = index.semantic, None
    try:
        index.add(items)
    finally:
        index.semantic = semantic


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))]


def measure(index: RecallIndex, qs: list[RecallInput]) -> dict[str, list[float]]:
    engine = RecallEngine(index)
    laps: dict[str, list[float]] = {}
    for q in qs[:20]:
        engine.recall(build_query(q, NOW_US))  # warm up
    for q in qs:
        t0 = time.perf_counter()
        result = engine.recall(build_query(q, NOW_US))
        total = (time.perf_counter() - t0) * 1000
        for name, ms in result.timings_ms.items():
            laps.setdefault(name, []).append(ms)
        laps.setdefault("score+gate", []).append(result.timings_ms["score"] + result.timings_ms["gate"])
        laps.setdefault("total", []).append(total)
    return laps


def bm25s_baseline(qs: list[RecallInput], template_of: np.ndarray) -> tuple[list[float], float]:
    """bm25s over the same units' texts (tokenised once per template, the same tokens)."""
    import bm25s

    template_tokens = [tokens(row["text"]) for row in TEMPLATE_ROWS]
    t0 = time.perf_counter()
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index([template_tokens[t] for t in template_of], show_progress=False)
    index_s = time.perf_counter() - t0
    samples = []
    for q in qs:
        text = build_query(q, NOW_US).text
        t0 = time.perf_counter()
        retriever.retrieve([tokens(text)], k=10, show_progress=False, n_threads=1)
        samples.append((time.perf_counter() - t0) * 1000)
    return samples, index_s


TEMPLATE_ROWS: list[dict] = []


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--indirect", action="store_true", help="also A/B the indirect questions' lexical weight")
    args = ap.parse_args()
    rng = random.Random(SEED)
    TEMPLATE_ROWS.extend(unit(rng, n) for n in range(TEMPLATES))
    embedder = UseEmbedder()
    t0 = time.perf_counter()
    template_vectors = embedder.embed_passages([f"{r['condition']} — {r['action']}" for r in TEMPLATE_ROWS])
    print(f"embedded {TEMPLATES} template texts in {time.perf_counter() - t0:.1f} s "
          f"({TEMPLATES / (time.perf_counter() - t0):.0f}/s)", flush=True)
    qs = queries(random.Random(SEED + 1), args.queries)
    for size in args.sizes:
        built = build(size, embedder, template_vectors, random.Random(SEED + 2))
        index, template_of, lexical_s, vector_s, per_doc = built
        semantic_bytes = index.semantic.memory_bytes() / size
        print(f"\n== {size:,} fragments: lexical index {lexical_s:.1f} s, vectors + HNSW graph {vector_s:.1f} s; "
              f"memory {per_doc:,.0f} B/fragment (RSS), of which vectors {semantic_bytes:,.0f} B", flush=True)
        laps = measure(index, qs)
        bm25s_ms, bm25s_index_s = bm25s_baseline(qs, template_of)
        print(f"{'stage':<12}{'p50 ms':>10}{'p99 ms':>10}   target")
        targets = {"total": "p50 ≤ 10, p99 ≤ 20 @100k; p99 ≤ 30 @1M", "score+gate": "p50 ≤ 3, p99 ≤ 10"}
        for name in ("embed", "lexical", "semantic", "score", "gate", "score+gate", "total"):
            if name in laps:
                print(f"{name:<12}{pct(laps[name], 0.5):>10.2f}{pct(laps[name], 0.99):>10.2f}   "
                      f"{targets.get(name, '')}")
        print(f"{'bm25s top10':<12}{pct(bm25s_ms, 0.5):>10.2f}{pct(bm25s_ms, 0.99):>10.2f}   "
              f"(index {bm25s_index_s:.1f} s)")
        print(f"ratio total/bm25s p50 {statistics.median(laps['total']) / statistics.median(bm25s_ms):.2f}x, "
              f"lexical/bm25s p50 {statistics.median(laps['lexical']) / statistics.median(bm25s_ms):.2f}x")
        if args.indirect:
            took = measure_indirect(index, indirect_queries(random.Random(SEED + 3), args.queries))
            for arm, ms in took.items():
                print(f"indirect questions, {arm:<8} p50 {pct(ms, 0.5):.2f} ms  p99 {pct(ms, 0.99):.2f} ms")
            ratio = statistics.median(took["default"]) / statistics.median(took["before"])
            print(f"indirect p50 ratio default/before {ratio:.2f}x")
        index.semantic.close()
        del index
        gc.collect()


if __name__ == "__main__":
    main()
