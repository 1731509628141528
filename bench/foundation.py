"""Foundation benchmarks: write latency, bulk ingest, replay, lexical recall (vs bm25s).

    python bench/foundation.py [--quick] [--repeats N]

Every number is the median of N runs (default 3), printed with its target and PASS/MISS.
Each run works in a fresh temporary folder that is removed afterwards. chDB serves one
folder per process at a time, so a Brain is closed before the next one opens; replay goes
into another *database* of the same chDB folder.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from hindbrain.brain import Brain
from hindbrain.projections.warehouse import Warehouse
from hindbrain.recall.lexical import K1
from hindbrain.recall.tokenize import tokens
from hindbrain.streams.replay import replay
from hindbrain.streams.sqlite_log import SqliteLog

SEED = 20240601
SIZES = {  # full run / --quick
    "perceive_calls": (2000, 500), "ingest_events": (60_000, 10_000), "replay_records": (100_000, 20_000),
    "corpus_docs": (100_000, 20_000), "queries": (300, 100),
}


# -- helpers ---------------------------------------------------------------------------
@contextmanager
def fresh_folder():
    folder = Path(tempfile.mkdtemp(prefix="hb-bench-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def pct_ms(samples_ns: list[int], q: float) -> float:
    s = sorted(samples_ns)
    return s[min(len(s) - 1, int(q * len(s)))] / 1e6


def timed_ns(fn, *args, **kw) -> int:
    t0 = time.perf_counter_ns()
    fn(*args, **kw)
    return time.perf_counter_ns() - t0


# -- a synthetic, seeded, mixed English + Chinese corpus --------------------------------
def _words(text: str) -> list[str]:
    return text.split()


_COMMON = _words("the a to of and in is for on with that this it was not be are at from by as have an or "
                 "user login password reset account timeout error server request response database query cache "
                 "deploy rollback build test failed passed retry network latency disk memory cpu queue worker "
                 "agent task step plan tool call result file config token session ticket customer order refund "
                 "payment invoice shipping address email phone support escalate manager policy permission role "
                 "admin access denied granted expired renew certificate dns proxy gateway upstream downstream "
                 "kubernetes pod node cluster restart crash log alert metric dashboard incident outage slow fast "
                 "sync async batch stream index search recall memory learn feedback success failure check verify")
_ONSETS = _words("b c d f g h j k l m n p r s t v w z bl br ch cl cr dr fl gr pl pr sh sl st str th tr")
_VOWELS = _words("a e i o u ai ea ee oo ou io")
_CODAS = ["", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "ck", "rt", "sh", "m"]
_HANZI = ("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后"
          "多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还"
          "因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结"
          "解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级"
          "少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领"
          "七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每"
          "目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影"
          "算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准"
          "精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听"
          "该铁价严龙飞登录密码错误服务器请求超时数据库缓存部署回滚失败重试网络延迟内存队列任务工具用户订单退款支付发票地址")


def make_vocab(rng: random.Random, english: int = 3000, chinese: int = 1500):
    words = list(_COMMON)
    seen = set(words)
    while len(words) < english:
        w = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(rng.choice((1, 2, 2, 3)))) + \
            rng.choice(_CODAS)
        if w not in seen:
            seen.add(w)
            words.append(w)
    phrases, seen = [], set()
    while len(phrases) < chinese:
        p = "".join(rng.choice(_HANZI) for _ in range(rng.choice((2, 2, 3, 4))))
        if p not in seen:
            seen.add(p)
            phrases.append(p)
    return words, phrases


def zipf_weights(n: int, s: float = 1.05) -> list[float]:
    acc, out = 0.0, []
    for rank in range(1, n + 1):
        acc += 1.0 / rank**s
        out.append(acc)
    return out


class Corpus:
    """Seeded message texts: ~70% English, ~15% Chinese, ~15% mixed, Zipf word frequencies."""

    def __init__(self, seed: int = SEED):
        self.rng = random.Random(seed)
        self.words, self.phrases = make_vocab(self.rng)
        self._ew, self._cw = zipf_weights(len(self.words)), zipf_weights(len(self.phrases))

    def english(self, n: int) -> str:
        ws = self.rng.choices(self.words, cum_weights=self._ew, k=n)
        if self.rng.random() < 0.2:
            ws.append(f"{self.rng.choice(('error', 'node', 'db', 'ticket'))}-{self.rng.randrange(1000)}")
        return " ".join(ws)

    def chinese(self, n: int) -> str:
        ps = self.rng.choices(self.phrases, cum_weights=self._cw, k=n)
        return "，".join("".join(ps[i : i + 3]) for i in range(0, len(ps), 3)) + "。"

    def text(self) -> str:
        r = self.rng.random()
        if r < 0.70:
            return self.english(self.rng.randint(6, 30)).capitalize() + "."
        if r < 0.85:
            return self.chinese(self.rng.randint(3, 12))
        return f"{self.english(self.rng.randint(3, 12))} {self.chinese(self.rng.randint(2, 6))}"

    def texts(self, n: int) -> list[str]:
        return [self.text() for _ in range(n)]

    def queries(self, docs: list[str], n: int) -> list[str]:
        """2-4 cues taken from a random document, sometimes plus a random word."""
        out = []
        for _ in range(n):
            cues = [t for t in tokens(self.rng.choice(docs)) if len(t) > 1]
            q = self.rng.sample(cues, min(len(cues), self.rng.randint(2, 4)))
            if self.rng.random() < 0.3:
                q.append(self.rng.choice(self.words))
            out.append(" ".join(q))
        return out


# -- 1. perceive latency ---------------------------------------------------------------
def bench_perceive(calls: int, log_sync: str) -> tuple[float, float]:
    texts = Corpus(SEED + 1).texts(calls)
    with fresh_folder() as folder:
        brain = Brain.open(folder, log_sync=log_sync)
        try:
            for t in texts[:200]:  # warm-up
                brain.perceive(tenant="acme", agent="bench", text=t)
            brain.runner.flush()
            samples = [timed_ns(brain.perceive, tenant="acme", agent="bench", text=t) for t in texts]
        finally:
            brain.close()
    return pct_ms(samples, 0.50), pct_ms(samples, 0.99)


# -- 2. bulk ingest --------------------------------------------------------------------
def bench_ingest(total: int, batch: int = 5000) -> float:
    texts = Corpus(SEED + 2).texts(total)
    # eight tenants' events; a batch is one tenant's (Brain.perceive_many), so each is sent in its own batches
    by_tenant = [[{"tenant": f"t{k}", "agent": "bench", "text": t} for t in texts[k::8]] for k in range(8)]
    with fresh_folder() as folder:
        brain = Brain.open(folder)
        try:
            for events in by_tenant:
                brain.perceive_many(events[:63])  # warm-up (also creates the tenants' indexes)
            brain.runner.flush()
            t0 = time.perf_counter()
            for events in by_tenant:
                for i in range(63, len(events), batch):
                    brain.perceive_many(events[i : i + batch])
            brain.runner.flush()
            seconds = time.perf_counter() - t0
            count = brain.sql("SELECT count() FROM events")[0]["count()"]
        finally:
            brain.close()
    assert count == total, f"{count} rows in events, expected {total}"
    return sum(len(events) - 63 for events in by_tenant) / seconds


# -- 3. replay -------------------------------------------------------------------------
def build_mixed_log(folder: Path, target: int) -> int:
    """~80% perceptions, then cognition, recall (+injection) and outcome records."""
    corpus, tenants = Corpus(SEED + 3), [f"t{i}" for i in range(10)]
    n_events, n_other = int(target * 0.8), target - int(target * 0.8)
    with Brain.open(folder, log_sync="NORMAL") as brain:
        texts = corpus.texts(n_events)
        for i in range(0, n_events, 5000):
            for t, tenant in enumerate(tenants):  # a batch is one tenant's
                brain.perceive_many([{"tenant": tenant, "agent": f"a{j % 7}", "text": texts[j],
                                      "scope": {"env": "prod"}} for j in range(i + t, min(i + 5000, n_events), 10)])
        for j in range(n_other // 5):  # 5 records per round: learn, recall+injection, outcome ×2
            tenant = tenants[j % 10]
            brain.learn(tenant=tenant, condition=corpus.english(8), action=corpus.english(6),
                        reason=corpus.chinese(3), evidence="seen twice", scope={"env": "prod"})
            pack = brain.recall(tenant=tenant, query=corpus.english(4), k=5)
            for ok in (True, False):
                brain.outcome(tenant=tenant, recall_id=pack.recall_id, applied=[i.id for i in pack][:2], success=ok)
        return brain.log.end_offset("*", 0)


def bench_replay(folder: Path, run: int, workers: int) -> float:
    log = SqliteLog(folder / "log.sqlite")
    warehouse = Warehouse(f"chdb://{(folder / 'views').resolve()}", database=f"bench_replay_{run}_{workers}")
    try:
        report = replay(log, warehouse, workers=workers)
    finally:
        warehouse.close()
        log.close()
    return report.records_per_second


# -- 4. lexical recall, ours vs bm25s ---------------------------------------------------
def bench_recall(n_docs: int, n_queries: int) -> dict[str, float]:
    import bm25s

    corpus = Corpus(SEED + 4)
    docs = corpus.texts(n_docs)
    queries = corpus.queries(docs, n_queries)
    warm = queries[: max(20, n_queries // 10)]
    out = {}
    with fresh_folder() as folder:
        brain = Brain.open(folder)
        try:
            for i in range(0, n_docs, 5000):
                brain.perceive_many([{"tenant": "acme", "kind": "message", "text": t} for t in docs[i : i + 5000]])
            brain.runner.flush()
            tenant = brain.index.tenants["acme"]
            assert len(tenant.docs) == n_docs
            q_terms = [tokens(q) for q in queries]
            for terms in q_terms[: len(warm)]:
                tenant.bm25.top(terms, 10)
            ours = [tenant.bm25.top(terms, 10) for terms in q_terms]
            out["index_p50"] = pct_ms([timed_ns(tenant.bm25.top, terms, 10) for terms in q_terms], 0.5)
            for q in warm:
                brain.recall(tenant="acme", query=q)
            samples = [timed_ns(brain.recall, tenant="acme", query=q) for q in queries]
            out["recall_p50"], out["recall_p99"] = pct_ms(samples, 0.5), pct_ms(samples, 0.99)
        finally:
            brain.close()

    # Same tokens, same k1/b, and bm25s's "lucene" idf is ours: ranks should agree.
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index([tokens(t) for t in docs], show_progress=False)
    for terms in q_terms[: len(warm)]:
        retriever.retrieve([terms], k=10, show_progress=False)
    samples, overlaps, same_scores = [], [], []
    for terms, mine in zip(q_terms, ours, strict=True):  # our doc numbers are corpus positions
        t0 = time.perf_counter_ns()
        theirs, scores = retriever.retrieve([terms], k=10, show_progress=False)
        samples.append(time.perf_counter_ns() - t0)
        overlaps.append(len(set(theirs[0].tolist()) & {d for d, _ in mine}) / max(1, min(10, len(mine))))
        # Equal top-10 scores mean any difference in ids is a tie broken another way (bm25s's
        # lucene score leaves out the constant factor k1 + 1 of the numerator).
        same_scores.append(all(abs(a * (K1 + 1) - b) <= 1e-4 * b for a, (_, b) in zip(scores[0], mine, strict=False)))
    out["bm25s_p50"] = pct_ms(samples, 0.5)
    out["overlap"], out["same_scores"] = statistics.mean(overlaps), statistics.mean(same_scores)
    return out


# -- the run ---------------------------------------------------------------------------
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    ap.add_argument("--repeats", type=int, default=3, help="runs per benchmark; the median is reported")
    args = ap.parse_args()
    size = {k: v[1] if args.quick else v[0] for k, v in SIZES.items()}
    runs: dict[str, list[float]] = {}

    def record(name: str, value: float) -> None:
        runs.setdefault(name, []).append(value)
        print(f"  {name:<26} {value:>12,.3f}", flush=True)

    started = time.perf_counter()
    for n in range(args.repeats):
        print(f"run {n + 1}/{args.repeats}", flush=True)
        for sync in ("FULL", "NORMAL"):
            p50, p99 = bench_perceive(size["perceive_calls"], sync)
            record(f"perceive {sync} p50", p50)
            record(f"perceive {sync} p99", p99)
        record("ingest events/s", bench_ingest(size["ingest_events"]))
        r = bench_recall(size["corpus_docs"], size["queries"])
        for key, name in (("index_p50", "recall index p50"), ("recall_p50", "brain.recall p50"),
                          ("recall_p99", "brain.recall p99"), ("bm25s_p50", "bm25s p50"),
                          ("overlap", "top10 overlap"), ("same_scores", "top10 same scores")):
            record(name, r[key])
        record("bm25s/ours (index)", r["bm25s_p50"] / r["index_p50"])
        record("bm25s/ours (recall)", r["bm25s_p50"] / r["recall_p50"])
    with fresh_folder() as folder:
        t0 = time.perf_counter()
        records = build_mixed_log(folder, size["replay_records"])
        print(f"replay log: {records:,} mixed records built in {time.perf_counter() - t0:.1f} s", flush=True)
        for n in range(args.repeats):
            record("replay records/s", bench_replay(folder, n, workers=0))
            record("replay 2 workers rec/s", bench_replay(folder, n, workers=2))

    targets = {  # name: (unit, target text, check)
        "perceive FULL p50": ("ms", "<= 1", lambda v: v <= 1), "perceive FULL p99": ("ms", "<= 5", lambda v: v <= 5),
        "perceive NORMAL p50": ("ms", "(compare)", None), "perceive NORMAL p99": ("ms", "(compare)", None),
        "ingest events/s": ("ev/s", ">= 30,000", lambda v: v >= 30_000),
        "replay records/s": ("rec/s", ">= 50,000", lambda v: v >= 50_000),
        "replay 2 workers rec/s": ("rec/s", ">= 50,000", lambda v: v >= 50_000),
        "recall index p50": ("ms", "<= 5", lambda v: v <= 5), "brain.recall p50": ("ms", "<= 5", lambda v: v <= 5),
        "brain.recall p99": ("ms", "(info)", None), "bm25s p50": ("ms", "(info)", None),
        "bm25s/ours (index)": ("x", "(info)", None), "bm25s/ours (recall)": ("x", "(info)", None),
        "top10 overlap": ("frac", "(mostly agree)", None), "top10 same scores": ("frac", "(1 = ties only)", None),
    }
    print(f"\nhindbrain foundation bench ({'quick' if args.quick else 'full'}, median of {args.repeats}, "
          f"{time.perf_counter() - started:.0f} s) sizes: {size}")
    print(f"{'metric':<22}{'median':>12} {'unit':<6}{'target':<16}{'':<6}runs")
    for name, (unit, target, check) in targets.items():
        med = statistics.median(runs[name])
        verdict = "" if check is None else ("PASS" if check(med) else "MISS")
        each = " ".join(f"{v:,.3f}" if v < 100 else f"{v:,.0f}" for v in runs[name])
        print(f"{name:<22}{med:>12,.3f} {unit:<6}{target:<16}{verdict:<6}{each}")


if __name__ == "__main__":
    main()
