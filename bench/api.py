"""Speed at the public API (design.md §issue-18): what a user's calls cost through ``Brain`` and over HTTP
(``hindbrain serve``), with default arguments, on texts that are all distinct, beside ``bm25s``
in the same process as the reference ratio (the machines are shared and noisy: ratios, not
absolutes).

    .venv/bin/python bench/api.py                        # 10k and 100k events, SDK and HTTP
    .venv/bin/python bench/api.py --sizes 10000 --no-http # quicker

Rows per size, each with its design.md §issue-18 target:
* ``perceive_many`` throughput (batches of 5,000) and the embedding that follows it off the
  caller's path: texts embedded per second, and recall latency *during* that backlog;
* the owner's resident memory per event (RSS growth over the import, and once settled);
  ``bench/ingest_profile.py`` says where a batch's time goes;
* once every vector is in (and in the vector graph): ``perceive`` p50 (one event), ``recall``
  p50/p90/p99 (free text, situations, Chinese; default budget and layers), ``outcome`` p50;
* the vector lag at a sustained ingest rate (``--lag-rate`` events/s for ``--lag-seconds``,
  paced in tenths of a second): how long an event waits until its vector is searchable;
* over HTTP on the same brain: recall p50/p99 (one connection), served recall capacity
  (closed loop, 4 connections) and batched perceive throughput;
* ``bm25s`` indexing throughput and query p50 over the same texts.

Semantic memory in two tiers (design.md §issue-28), per size: the fast tier's freshness (events with a
vector the moment ``perceive_many`` returns, and paraphrases sharing no word found by a recall
right after their ``perceive``), the static tier's rate beside the neural model's on the same
texts, the neural tier's lag at a sustained rate, and another tenant's recall p99 while batches
of 20 texts of 64 kB are perceived, against its quiet p99 (design.md §issue-27, point 6). Once per run:
the embedder workers' rate with 1 and 2 worker processes (``--workers``).
The engine-only benches (``bench/recall.py``, ``bench/foundation.py``) stay diagnostics; these
are the numbers of record.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from hindbrain import Brain

SYSTEMS = ("IAM", "billing portal", "VPN gateway", "data warehouse", "CRM sync", "工单系统", "报销系统", "权限平台")
VERBS = ("submit the change", "issue a refund", "renew the certificate", "export the report", "sync contacts",
         "关闭工单", "提交报销单", "开通数据库权限")
SYMPTOMS = ("nothing happened", "403 forbidden", "timed out after 30 s", "blank page", "权限不足", "校验未通过")
TARGETS = {"perceive_many": "≥ 30,000 ev/s", "recall p50": "≤ 10 ms", "recall p99": "≤ 25 ms (≤ 40 ms at 1M)",
           "lag": "p99 ≤ 2 s at 5,000 ev/s", "served": "≥ 200 /s on 2 cores", "http perceive": "≥ 5,000 ev/s",
           "p99 at 100/s": "< 100 ms", "resident": "≤ 3,000 B/event"}
TENANT = "bench"
# (event, paraphrase sharing no word with it): the fast tier's freshness check
PARAPHRASES = [("Customer demands a refund for the broken laptop", "client wants money back on damaged computer"),
               ("The nightly export job crashed after running too long", "report generation died because of slowness"),
               ("用户说页面一直转圈，提交后没有响应", "网站卡住了 无法加载"),
               ("My kitten loves napping in warm sunshine", "the cat sleeps under the sun"),
               ("Database connection pool exhausted during peak hours", "not enough DB links when traffic is high")]


def event(rng: random.Random, n: int) -> dict:
    """A distinct structured event: a system, an action, a symptom and a number nobody repeats."""
    system, verb, symptom = rng.choice(SYSTEMS), rng.choice(VERBS), rng.choice(SYMPTOMS)
    kind = rng.choice(("anomaly", "action", "observation", "message"))
    return {"tenant": TENANT, "agent": f"agent-{n % 8}", "task": f"t{n // 4}", "kind": kind,
            "text": f"ticket {n}: {verb} in {system} — {symptom} (case {rng.randrange(10**9)})",
            "system": system, "action": verb, **({"success": False} if kind == "anomaly" else {})}


def queries(rng: random.Random, count: int) -> list[dict]:
    out = []
    for _ in range(count):
        system, verb, symptom = rng.choice(SYSTEMS), rng.choice(VERBS), rng.choice(SYMPTOMS)
        out.append(rng.choice((
            {"query": f"how do I {verb} in {system}? it says {symptom}"},
            {"situation": {"system": system, "action": verb, "actual": symptom}, "trigger": "anomaly"},
            {"query": f"{system} {verb} 失败了怎么办"},
        )))
    return out


def resident_bytes() -> int:
    """This process's resident set (Linux ``/proc``): what the owner holds, native allocations
    (the vector graph, numpy, chDB) included, which ``tracemalloc`` does not see. RSS rarely
    shrinks, so a growth is an upper bound on what an import left resident. It counts the
    pages of mapped files too (``rss_split``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def rss_split() -> dict[str, int]:
    """This process's resident bytes by kind (``/proc/self/status``): ``anon`` (private memory:
    heaps, numpy arrays, the vector graph; what each owner costs a fleet), ``file`` (pages of
    mapped files: a snapshot's, the libraries'; page cache, shared with other processes mapping
    the same files and reclaimable by the kernel) and ``shmem``. ``resident_bytes`` is their sum."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("RssAnon:", "RssFile:", "RssShmem:")):
                name, kb = line.split()[:2]
                out[name[3:-1].lower()] = int(kb) * 1024
    return out


def resident_row(label: str, since: tuple[int, dict[str, int]], size: int, note: str) -> tuple[str, str, str]:
    """The RSS growth per event since ``since`` (``resident_bytes``, ``rss_split``), with its
    anonymous (private) and file-backed parts."""
    total, split = resident_bytes() - since[0], rss_split()
    anon, file = ((split[k] - since[1][k]) / size for k in ("anon", "file"))
    return (label, f"{total / size:,.0f} B/event", f"{note}; anonymous {anon:,.0f}, file pages {file:,.0f} B/event")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def ms(seconds: float, digits: int = 1) -> str:
    return f"{1000 * seconds:.{digits}f} ms"


def timed_recalls(brain: Brain, qs: list[dict]) -> list[float]:
    spent = []
    for q in qs:
        t = time.perf_counter()
        brain.recall(tenant=TENANT, agent="agent-1", **q)
        spent.append(time.perf_counter() - t)
    return spent


def warmed_import(brain: Brain, events: list[dict]) -> tuple[tuple[int, dict[str, int]], float]:
    """A warm-up perceive and recall (the static table, the query model and the views' first parts in before the
    clock and the RSS baseline), then ``events`` by ``perceive_many`` in batches of 5,000: the RSS baseline taken
    before them (``resident_row``'s ``since``) and the import's seconds."""
    brain.perceive(tenant=TENANT, agent="agent-0", text="warm-up")
    brain.recall(tenant=TENANT, agent="agent-0", query="warm-up")
    since = resident_bytes(), rss_split()
    t0 = time.perf_counter()
    for start in range(0, len(events), 5_000):
        brain.perceive_many(events[start:start + 5_000])
    return since, time.perf_counter() - t0


def measure(size: int, embedder: str | None, recalls: int, lag_rate: int, lag_seconds: float,
            http: bool, settle: float | None = None) -> list[tuple[str, str, str]]:
    rng = random.Random(size)
    events = [event(rng, n) for n in range(size)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="hindbrain-api-") as home:
        kw = {"embedder": embedder} if embedder else {}
        with Brain.open(home, **kw) as brain:
            resident, ingest = warmed_import(brain, events)
            t0 = time.perf_counter() - ingest  # the import's start: the neural tier's clock starts there too
            rows.append(("perceive_many", f"{size / ingest:,.0f} ev/s", TARGETS["perceive_many"]))
            rows.append(resident_row("owner resident", resident, size,
                                     f"{TARGETS['resident']} (RSS growth over the import, before the neural tier "
                                     "settles; fixed costs such as 16 MB vector blocks weigh on small sizes)"))
            semantic = brain.index.semantic
            if semantic is not None:
                rows += fast_tier(brain, events)
                during = timed_recalls(brain, queries(rng, 100))
                rows.append(("recall p50, backlog", f"{ms(statistics.median(during))} (p99 {ms(pct(during, .99))})",
                             f"while {semantic.pending():,} texts wait for vectors"))
                settled = semantic.wait(settle)
                embedded = time.perf_counter() - t0
                neural = semantic.neural_count(TENANT)
                rows.append(("vectors embedded", f"{neural / embedded:,.0f} texts/s",
                             f"all {size:,} neural {embedded - ingest:.0f} s after the import returned" if settled else
                             f"NOT SETTLED: {neural:,} of {size:,} neural {embedded - ingest:.0f} s after the import "
                             f"returned (--settle {settle}); the rows "
                             "below mix static and neural vectors"))
                while settled and semantic.unbuilt():
                    time.sleep(0.2)
                if settled:
                    rows.append(resident_row("owner resident, settled", resident, size,
                                             "RSS growth once every vector is neural and in the graph"))
                rows += long_texts(brain, rng, recalls) if settled else []
            one = []
            for n in range(200):
                t = time.perf_counter()
                brain.perceive(**event(rng, size + n))
                one.append(time.perf_counter() - t)
            rows.append(("perceive p50", ms(statistics.median(one), 2), ""))
            qs = queries(rng, recalls)
            timed_recalls(brain, qs[:20])  # warm-up
            latencies = timed_recalls(brain, qs)
            rows += [("recall p50", ms(statistics.median(latencies)), TARGETS["recall p50"]),
                     ("recall p90", ms(pct(latencies, 0.9)), ""),
                     ("recall p99", ms(pct(latencies, 0.99)), TARGETS["recall p99"])]
            packs = [brain.recall(tenant=TENANT, agent="agent-1", **q) for q in qs[:200]]
            spent = []
            for n, pack in enumerate(packs):
                t = time.perf_counter()
                brain.outcome(tenant=TENANT, task=f"o{n}", recall_id=pack.recall_id,
                              applied=[i.id for i in pack.items[:1]], success=True)
                spent.append(time.perf_counter() - t)
            rows.append(("outcome p50", ms(statistics.median(spent), 2), ""))
            if semantic is not None and lag_seconds > 0:
                rows += vector_lag(brain, rng, size + 1_000, lag_rate, lag_seconds)
        if http:
            rows += over_http(Path(home), embedder, queries(rng, recalls))
    rows += _bm25s([e["text"] for e in events], rng, recalls)
    return rows


def vector_lag(brain: Brain, rng: random.Random, first: int, rate: int, seconds: float,
               patience: float = 300.0) -> list[tuple[str, str, str]]:
    """Perceive ``rate`` events/s in tenth-of-a-second batches for ``seconds``; a watcher notes
    when each batch's neural vectors are in (the tenant's count of neural vectors reaches it:
    one queue, first in first out; the static tier has no lag, see ``fast_tier``). Lag =
    neural vector searchable - appended."""
    semantic, per_batch = brain.index.semantic, max(1, rate // 10)
    appended: list[tuple[int, float]] = []  # (documents with a vector needed, when appended)
    lags: dict[int, float] = {}
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            have, now = semantic.neural_count(TENANT), time.perf_counter()
            for n, (needed, at) in enumerate(list(appended)):
                if n not in lags and have >= needed:
                    lags[n] = now - at
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    t0, n = time.perf_counter(), first
    for b in range(int(seconds * 10)):
        time.sleep(max(0.0, t0 + b / 10 - time.perf_counter()))
        brain.perceive_many([event(rng, n + i) for i in range(per_batch)])
        n += per_batch
        appended.append((semantic.coverage(TENANT)[1], time.perf_counter()))
    achieved = (n - first) / (time.perf_counter() - t0)
    deadline = time.perf_counter() + patience
    while len(lags) < len(appended) and time.perf_counter() < deadline:
        time.sleep(0.05)
    stop.set()
    watcher.join()
    waited = sorted(lags.values())
    if len(waited) < len(appended):
        p99 = f"> {patience:.0f} s ({len(appended) - len(waited)} batches still waiting)"
    else:
        p99 = f"{pct(waited, 0.99):.2f} s"
    return [("neural lag p99", p99, f"{TARGETS['lag']} (ingest held {achieved:,.0f} ev/s for {seconds:g} s; "
                                    f"p50 {pct(waited, 0.5) if waited else float('nan'):.2f} s)")]


def fast_tier(brain: Brain, events: list[dict]) -> list[tuple[str, str, str]]:
    """The fast tier at the moment ``perceive`` returns: how many just-imported events have a
    vector, whether paraphrases sharing no word are found by a recall right after their
    ``perceive`` (static vectors, neural query), and the static tier's rate beside the neural
    model's on the same texts, in this process (one core)."""
    semantic = brain.index.semantic
    rows = []
    with_vector, documents = semantic.coverage(TENANT)
    rows.append(("fast tier at return", f"{with_vector:,} / {documents:,} events",
                 f"have a vector when perceive_many returns ({semantic.neural_count(TENANT):,} of them neural)"))
    found, tiers = 0, Counter()
    for text, paraphrase in PARAPHRASES:
        event_id = brain.perceive(tenant="fresh", agent="agent-1", text=text)
        item = next((i for i in brain.recall(tenant="fresh", agent="agent-1", query=paraphrase).items
                     if i.id == event_id), None)
        found += item is not None
        tiers[item.why["semantic"].get("tier") if item else "not found"] += 1
    rows.append(("paraphrase at once", f"{found} / {len(PARAPHRASES)} found", "a recall right after perceive, no "
                 "shared word; tiers: " + ", ".join(f"{k} {v}" for k, v in tiers.items())))
    if semantic.static is not None:
        texts = [e["text"] for e in events[:50_000]]
        semantic.static.embed_passages(texts[:1000])
        t = time.perf_counter()
        semantic.static.embed_passages(texts)
        static_rate = len(texts) / (time.perf_counter() - t)
        sample = texts[:300]
        t = time.perf_counter()
        semantic.embedder.embed_passages(sample)
        neural_rate = len(sample) / (time.perf_counter() - t)
        rows.append(("static tier rate", f"{static_rate:,.0f} texts/s",
                     f"≥ 100,000 on a core; {static_rate / neural_rate:,.0f}x the neural model in this process "
                     f"({neural_rate:,.0f} texts/s)"))
    return rows


def long_texts(brain: Brain, rng: random.Random, recalls: int, batches: int = 4) -> list[tuple[str, str, str]]:
    """Another tenant's recall p99 while a tenant perceives batches of 20 texts of 64 kB (issue
    27, point 6), against the same recalls when quiet. Both on a settled brain; the long texts
    are cut to the model's window and embedded by the worker processes."""
    qs = queries(rng, recalls)
    quiet = timed_recalls(brain, qs)
    sent, failed = [0], []

    def noisy() -> None:
        word = "the export job fails with a timeout and the retry loop keeps spinning "
        text = (word * (65_536 // len(word) + 1))[: 65_536 - 16]  # the API's limit is 64 kB a text
        try:
            for b in range(batches):
                brain.perceive_many([{"tenant": "noisy", "agent": "agent-9", "text": f"{b}-{i} {text}"}
                                     for i in range(20)])
                sent[0] += 20
        except Exception as exc:  # reported by the caller: a failed batch must not pass for a quiet run
            failed.append(exc)

    thread = threading.Thread(target=noisy, daemon=True)
    thread.start()
    during = []
    while thread.is_alive() or not during:
        during += timed_recalls(brain, qs[: max(1, recalls // 10)])
    thread.join()
    if failed:
        raise failed[0]
    settle = brain.index.semantic.pending("noisy")
    during += timed_recalls(brain, qs)  # while the workers embed the long texts
    q99, d99 = pct(quiet, 0.99), pct(during, 0.99)
    return [("recall p99, long texts", f"{ms(d99)} vs quiet {ms(q99)}",
             f"≤ 2x: {d99 / q99:.2f}x ({sent[0]} texts of 64 kB by another tenant, {settle} still queued)")]


def embedder_workers(texts: list[str], counts: tuple[int, ...]) -> list[tuple[str, str, str]]:
    """The neural tier's rate with 1, 2... worker processes (``recall.workers``), and how many a
    shard of 5,000 events/s needs at the one-worker rate."""
    from hindbrain.recall.workers import EmbedderPool

    rows, base = [], None
    for workers in counts:
        pool = EmbedderPool("use", workers)
        try:
            pool.embed_many([["warm-up"]] * workers)
            batches = [texts[i : i + 64] for i in range(0, len(texts), 64)]
            t = time.perf_counter()
            for start in range(0, len(batches), 4 * workers):  # as the scheduler hands them: a step at a time
                pool.embed_many(batches[start : start + 4 * workers])
            rate = len(texts) / (time.perf_counter() - t)
        finally:
            pool.close()
        base = base or rate / workers
        rows.append((f"embedder workers {workers}", f"{rate:,.0f} texts/s", f"{rate / workers:,.0f} per worker"))
    rows.append(("workers for 5k ev/s", f"{-(-5000 // int(base))}", f"at {base:,.0f} texts/s per worker "
                 "(a worker per core; more cores, or a GPU worker, beyond this machine)"))
    return rows


def over_http(home: Path, embedder: str | None, qs: list[dict]) -> list[tuple[str, str, str]]:
    """The same brain behind ``hindbrain serve`` (bench/serve.py's server and load generators),
    with its default recall replicas and, as the baseline of the same run, without any."""
    spec = importlib.util.spec_from_file_location("bench_serve", Path(__file__).parent / "serve.py")
    serve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serve)
    from hindbrain.service.keys import KeyStore
    from hindbrain.service.replica import replica_count

    key = KeyStore(home).create(TENANT, "bench")
    bodies = [{"agent": "agent-1", **q} for q in qs]
    rows = []
    for replicas in ("0", "auto"):
        port = 18000 + random.randrange(1000)
        proc = serve.serve(home, port, embedder or "use", replicas)
        label = f"{replica_count(replicas, embedded=True)} replica(s)"
        try:
            for body in bodies[:20]:
                serve.Client(port, key).post("/v1/recall", body)
            _, one = serve.closed_loop_recall(port, key, bodies, 8, 1)
            served = Counter()
            capacity, _ = serve.closed_loop_recall(port, key, bodies, 8, 4, served)
            paced, errors = serve.open_loop_recall(port, key, bodies, 100, 8)
            batched, perceive_errors = serve.closed_loop_perceive(port, key, 8, connections=8, batch=500)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
        share = ", ".join(f"{name} {n * 100 / sum(served.values()):.0f} %" for name, n in sorted(served.items()))
        rows += [(f"HTTP recall p50, {label}", f"{ms(pct(one, 0.5))} (p99 {ms(pct(one, 0.99))})", "one connection"),
                 (f"HTTP recall served, {label}", f"{capacity:,.0f} /s",
                  f"{TARGETS['served']} (4 connections, closed loop; answered by {share})"),
                 (f"HTTP recall p99 at 100/s, {label}", ms(pct(paced, 0.99)),
                  f"{TARGETS['p99 at 100/s']} (open loop, 8 s, errors {errors})"),
                 (f"HTTP perceive, {label}", f"{batched:,.0f} ev/s",
                  f"{TARGETS['http perceive']} (batches of 500, 8 connections, errors {perceive_errors})")]
    return rows


def _bm25s(texts: list[str], rng: random.Random, recalls: int) -> list[tuple[str, str, str]]:
    """The reference: ``bm25s`` indexing the same texts and answering the same kind of query."""
    try:
        import bm25s
    except ImportError:  # a dev dependency: say so instead of failing the whole bench
        return [("bm25s", "not installed (pip install -e '.[dev]')", "")]
    t = time.perf_counter()
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, show_progress=False), show_progress=False)
    indexed = len(texts) / (time.perf_counter() - t)
    spent = []
    for q in queries(rng, recalls):
        text = q.get("query") or " ".join(q["situation"].values())
        t = time.perf_counter()
        retriever.retrieve(bm25s.tokenize([text], show_progress=False), k=10, show_progress=False)
        spent.append(time.perf_counter() - t)
    return [("bm25s index", f"{indexed:,.0f} docs/s", "reference"),
            ("bm25s query p50", f"{1000 * statistics.median(spent):.2f} ms", "reference")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--recalls", type=int, default=300)
    ap.add_argument("--embedder", default=None, help="default: the brain's default (the semantic channel)")
    ap.add_argument("--lag-rate", type=int, default=5_000, help="events/s of the vector-lag run")
    ap.add_argument("--lag-seconds", type=float, default=4.0, help="its length (0: skip it)")
    ap.add_argument("--no-http", action="store_true", help="skip the rows over HTTP")
    ap.add_argument("--settle", type=float, default=None,
                    help="wait at most this many seconds for the neural vectors (default: all of them)")
    ap.add_argument("--workers", default="1,2", help="embedder worker counts to measure ('' to skip)")
    args = ap.parse_args()
    if args.workers:
        rng = random.Random(7)
        rows = embedder_workers([event(rng, n)["text"] for n in range(3_000)],
                                tuple(int(w) for w in args.workers.split(",")))
        print("\nneural tier: embedder worker processes (USE, distinct event texts, batches of 64)")
        for name, value, target in rows:
            print(f"  {name:<20} {value:>24}   {target}")
    for size in (int(s) for s in args.sizes.split(",")):
        t = time.perf_counter()
        rows = measure(size, args.embedder, args.recalls, args.lag_rate, args.lag_seconds, not args.no_http,
                       args.settle)
        print(f"\n{size:,} events through Brain (defaults{', embedder=' + args.embedder if args.embedder else ''})")
        for name, value, target in rows:
            print(f"  {name:<20} {value:>24}   {target}")
        print(f"  ({time.perf_counter() - t:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
