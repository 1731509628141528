"""Recall quality at the public API: R@1/5/10 through ``Brain.recall`` with default arguments,
next to each channel alone, the seed and RRF presets, plain ``bm25s`` and the semantic model
alone, on every data set the harness holds, in one run.

    .venv/bin/python bench/quality.py                      # held-out halves, every set (~3 min)
    .venv/bin/python bench/quality.py --sets madial-en --half all
    .venv/bin/python bench/quality.py --fit                # fit the fused weights on the tuning halves
    .venv/bin/python bench/quality.py --quick --json hindbrain/sim/recall_bench.json   # the report's chart
    .venv/bin/python bench/quality.py --quick --fast-tier   # the static fast tier alone (no neural vectors)

Data sets (docs/recall-quality.md says where each comes from):

* ``madial-zh`` / ``madial-en`` — MADial-Bench (He et al., NAACL 2025, MIT), from
  ``shared/eval-data/madial-bench``: each user a tenant, each memory perceived as an
  observation, the query the dialogue so far *as given* (speaker tags, markup and all);
  R@k = |top-k ∩ gold| / |gold| (the benchmark's own metric).
* ``hard-en`` / ``hard-zh`` — harder held-out conversations (``bench/hardconv.py``, written blind
  for design.md §issue-30): multi-hop questions (2–3 evidence turns in different sessions, linked by a person
  the question never names) sharing no content word with their evidence, and inference questions
  whose evidence only implies the answer; decoy turns carry the question's words. Printed by
  question type, plain BM25 beside each; the file marks the tuning half (even conversations).
* ``conv-en`` / ``conv-zh`` — conversational evidence (``bench/convmem.py``, synthetic, built
  for this harness without looking at the product): long two-person chats over many dated
  sessions, each conversation a tenant, each turn perceived as a ``message`` with
  ``session``, ``speaker`` and ``ts`` (the session's date), as the API invites; questions about
  earlier sessions whose evidence is turns.

* ``dial-zh`` / ``dial-en`` — tuning only (not in the default ``--sets``): MADial-format dialogues
  written for tuning by other sessions from a brief, in ``bench/data/dialogue-tuning/`` (its README);
  every question is a tuning one, so ``--half heldout`` skips them: never a held-out number.
* ``hard2-en`` / ``hard2-zh`` — tuning only (not in the default ``--sets``): a second, independent
  generator of hard conversations (``bench/hard2conv.py``, written from the brief alone, apart from
  ``hardconv.py``): multi-hop (2 and 3 hops), inference and temporal-change questions; every
  conversation is marked tuning, so a choice made on ``hard-*`` can be checked on questions nobody tuned on.
* ``hard3-en`` / ``hard3-zh`` — a third generator written from a brief alone (``bench/hard3conv.py``):
  after / change / described / trait / chain3 / single questions whose evidence shares no content unit
  with the question, near misses and decoys around each evidence turn; the file marks each
  conversation's half (even ones tuning), so its held-out half is read like hard-*'s.

Halves: MADial by query id parity (even = tuning, odd = held-out; zh and en share ids, so one
dialogue is in the same half in both languages); conversations by conversation (even index =
tuning). Numbers of record are the held-out halves.

Each set's default row is also printed per question type, with the share of questions whose
gold items are **all** in the top 5 (what a multi-hop answer needs).

Every recall here is ``recall(tenant=…, query=…, k=10, budget_tokens=100000,
layers=["episodic"])`` — the arguments of ``shared/tools/madial-sdk`` — except one row that
leaves ``k`` and the budget at their defaults (no k, 400 tokens: the gate decides how many);
the rows other than "recall() default" reuse the same brain with another fusion
(``brain.engine``), which is the only thing that differs.

``--json PATH`` also writes what was measured — per set R@k of the default, plain BM25 and the
model alone, and each one's per-query latency — with the date, the command, the commit and
the machine: the learning report (``hindbrain report``) charts that file, it never runs the bench.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

import numpy as np

from hindbrain import Brain
from hindbrain.brain import tenant_batches
from hindbrain.recall.engine import RecallEngine
from hindbrain.recall.query import build_query
from hindbrain.recall.scoring import CHANNELS, PRESETS, Fusion, Weights
from hindbrain.recall.tokenize import tokens
from hindbrain.schemas.api import RecallInput
from hindbrain.schemas.records import now_us

sys.path.insert(0, str(Path(__file__).resolve().parent))

KS = (1, 5, 10)
# HINDBRAIN_EVAL_DATA names the eval-data folder when the checkout is not beside ../shared (a worktree).
EVAL_DATA = Path(os.environ.get("HINDBRAIN_EVAL_DATA")
                 or Path(__file__).resolve().parents[2] / "shared" / "eval-data")
MADIAL = EVAL_DATA / "madial-bench" / "derived"
HARD = Path(__file__).resolve().parent / "data"
# MADial-format dialogues written for tuning (its README says how): every question a tuning one
DIALOGUE_TUNING = HARD / "dialogue-tuning"


@dataclass
class Question:
    qid: str
    tenant: str
    query: str
    gold: set[str]
    tuning: bool
    category: str = ""


@dataclass
class DataSet:
    name: str
    events: list[dict]  # perceive(**event) arguments
    questions: list[Question]
    texts: dict[str, str] = field(default_factory=dict)  # event id → text, for the reference rows
    agent: str = "agent"  # who perceived the events, and who recalls

    def half(self, which: str) -> list[Question]:
        if which == "all":
            return self.questions
        return [q for q in self.questions if q.tuning == (which == "tuning")]


def madial(lang: str, root: Path = MADIAL) -> DataSet:
    mems = [json.loads(line) for line in (root / f"madial_{lang}_memories.jsonl").read_text("utf-8").splitlines()]
    rows = [json.loads(line) for line in (root / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines()]
    events = [{"tenant": f"u{m['user_id']}", "agent": "madial", "kind": "observation", "text": m["event"],
               "event_id": f"m{m['id']}"} for m in mems]
    questions = [Question(f"{lang}-{r['id']}", f"u{r['user_id']}", r["query"], {f"m{g}" for g in r["gold"]},
                          r["id"] % 2 == 0) for r in rows if r.get("gold")]
    return DataSet(f"madial-{lang}", events, questions, {e["event_id"]: e["text"] for e in events}, "madial")


def dialogue_tuning(lang: str, root: Path = DIALOGUE_TUNING) -> DataSet:
    """``dial-zh`` / ``dial-en``: dialogues in MADial's format written for this harness to tune on
    (bench/data/dialogue-tuning/README.md). They have no held-out half: every question is a tuning
    one, so no number read on them is ever a held-out one. Question ids ``dial-<lang>-<id>``: a
    dialogue of its own (``bench/fusion_dialogue.py`` folds by the id after the first dash), never
    MADial's dialogue of the same number, nor the other language's (the two were written apart)."""
    data = madial(lang, root)
    questions = [replace(q, qid=f"dial-{q.qid}", tuning=True) for q in data.questions]
    return DataSet(f"dial-{lang}", data.events, questions, data.texts, data.agent)


TUNING_ONLY = ("dial-zh", "dial-en", "hard2-en", "hard2-zh")


def load(name: str, madial_root: Path = MADIAL, dialogue_root: Path = DIALOGUE_TUNING) -> DataSet:
    """The set called ``name`` (``SETS``' keys), MADial's and the dialogue-tuning sets read from their
    folders."""
    if name.startswith("madial-"):
        return madial(name.split("-")[1], madial_root)
    if name.startswith("dial-"):
        return dialogue_tuning(name.split("-")[1], dialogue_root)
    return SETS[name]()


def conversations(lang: str, count: int = 10, seed: int = 0) -> DataSet:
    import convmem

    events, questions = [], []
    for n, conv in enumerate(convmem.generate(lang=lang, conversations=count, seed=seed)):
        tenant = conv["conv_id"]
        for session in conv["sessions"]:
            ts = datetime.fromisoformat(session["date"])
            for turn in session["turns"]:
                events.append({"tenant": tenant, "agent": "chat", "kind": "message", "session": session["session_id"],
                               "speaker": turn["speaker"], "text": turn["text"], "ts": ts,
                               "event_id": turn["turn_id"]})
        questions += [Question(q["qid"], tenant, q["question"], set(q["evidence"]), n % 2 == 0, q["category"])
                      for q in conv["questions"]]
    return DataSet(f"conv-{lang}", events, questions, {e["event_id"]: e["text"] for e in events}, "chat")


def hard(lang: str, root: Path = HARD, stem: str = "hard") -> DataSet:
    """The blind-written harder sets (``bench/hardconv.py``; ``stem`` "hard2": ``bench/hard2conv.py``, "hard3":
    ``bench/hard3conv.py``):
    multi-hop questions whose evidence turns share no content word with the question, and inference
    questions; the file marks each conversation's half (``tuning``)."""
    convs = json.loads((root / f"{stem}-{lang}.json").read_text("utf-8"))["conversations"]
    events, questions = [], []
    for conv in convs:
        for session in conv["sessions"]:
            ts = datetime.fromisoformat(session["date"])
            events += [{"tenant": conv["conv_id"], "agent": "chat", "kind": "message", "session": session["session_id"],
                        "speaker": turn["speaker"], "text": turn["text"], "ts": ts, "event_id": turn["turn_id"]}
                       for turn in session["turns"]]
        questions += [Question(q["qid"], conv["conv_id"], q["question"], set(q["evidence"]), conv["tuning"],
                               q["category"]) for q in conv["questions"]]
    return DataSet(f"{stem}-{lang}", events, questions, {e["event_id"]: e["text"] for e in events}, "chat")


SETS: dict[str, Callable[[], DataSet]] = {
    "madial-zh": lambda: madial("zh"), "madial-en": lambda: madial("en"),
    "conv-en": lambda: conversations("en"), "conv-zh": lambda: conversations("zh"),
    "hard-en": lambda: hard("en"), "hard-zh": lambda: hard("zh"),
    "dial-zh": lambda: dialogue_tuning("zh"), "dial-en": lambda: dialogue_tuning("en"),
    "hard2-en": lambda: hard("en", stem="hard2"), "hard2-zh": lambda: hard("zh", stem="hard2"),
    "hard3-en": lambda: hard("en", stem="hard3"),
    "hard3-zh": lambda: hard("zh", stem="hard3"),
}
# those with a held-out half
DEFAULT_SETS = ("madial-zh", "madial-en", "conv-en", "conv-zh", "hard-en", "hard-zh", "hard3-en", "hard3-zh")


# -- metrics -----------------------------------------------------------------------------------
def recall_at(gold: set[str], ranked: list[str]) -> dict[int, float]:
    return {k: len(gold & set(ranked[:k])) / len(gold) for k in KS}


def mean_recalls(per_question: list[dict[int, float]]) -> dict[int, float]:
    return {k: 100 * statistics.fmean(r[k] for r in per_question) if per_question else 0.0 for k in KS}


def sign_test_p(won: int, lost: int) -> float:
    """The exact two-sided sign test (McNemar's exact test) of ``won`` against ``lost`` paired questions, ties left
    out: the chance, were either side as likely to win a question, of a split at least this uneven either way."""
    n = won + lost
    tail = sum(math.comb(n, i) for i in range(min(won, lost) + 1))
    return min(1.0, 2 * tail / 2 ** n)


def paired(default: list[dict[int, float]], other: list[dict[int, float]], k: int = 5) -> tuple[int, int, float]:
    """The questions whose R@k ``default`` raises : lowers against ``other`` (the same questions, in order; a question
    with several gold turns counts once, when its share differs) and the sign test's p of that split: how far a
    "below" or "above" is from what chance alone splits."""
    won = sum(d[k] > o[k] for d, o in zip(default, other, strict=True))
    lost = sum(d[k] < o[k] for d, o in zip(default, other, strict=True))
    return won, lost, sign_test_p(won, lost)


def all_gold(per_question: list[dict[int, float]], k: int = 5) -> float:
    """% of questions with every gold item in the top ``k``: what a multi-hop answer needs."""
    return 100 * statistics.fmean(r[k] == 1.0 for r in per_question) if per_question else 0.0


# -- the rows ------------------------------------------------------------------------------------
def through_recall(brain: Brain, data: DataSet, questions: list[Question], cuts: Counter | None = None,
                   every_default: bool = False) -> tuple[list[dict[int, float]], list[float]]:
    """R@k of each question through ``Brain.recall`` and its latency (ms); ``cuts`` counts the
    gate's cuts by stage, and separately those of gold items (what the gate took from recall)."""
    out, took = [], []
    for q in questions:
        start = time.perf_counter()
        sized = {} if every_default else {"k": 10, "budget_tokens": 100000}
        pack = brain.recall(tenant=q.tenant, agent=data.agent, query=q.query, layers=["episodic"], **sized)
        took.append((time.perf_counter() - start) * 1000)
        ranked = list(dict.fromkeys(e for item in pack.items for e in (item.event_ids or [item.id])))
        if cuts is not None:
            for cut in pack.cut:
                if cut["reason"].startswith("beyond k="):
                    continue
                cuts[cut["stage"]] += 1
                cuts[f"{cut['stage']}, of a gold item"] += cut["id"] in q.gold
        out.append(recall_at(q.gold, ranked))
    return out, took


def alone(channel: str) -> Fusion:
    """One channel, per-query normalised like the default (``fused``), nothing else."""
    w = Weights(**{ch: float(ch == channel) for ch in CHANNELS}, belief_bias=0.0, method="fused")
    return Fusion(f"{channel} alone", w, w)


def bm25s_row(data: DataSet, questions: list[Question], speaker_in_text: bool = False,
              took: list[float] | None = None) -> list[dict[int, float]]:
    """Plain ``bm25s`` (Lucene BM25, k1 1.5, b 0.75) per tenant over the perceived texts, with
    hindbrain's tokenizer (word tokens + CJK bigrams: bm25s's own splits on spaces only).
    ``speaker_in_text``: each text as "Speaker: text" (what a user of a plain BM25 would index).
    ``took`` gets each query's latency (ms): tokenizing, scoring and ranking on a built index."""
    import bm25s

    by_tenant: dict[str, list[str]] = {}
    text_of = {}
    for e in data.events:
        by_tenant.setdefault(e["tenant"], []).append(e["event_id"])
        speaker = e.get("speaker") if speaker_in_text else None
        text_of[e["event_id"]] = f"{speaker}: {e['text']}" if speaker else e["text"]
    indexes = {}
    for tenant, ids in by_tenant.items():
        retriever = bm25s.BM25()
        retriever.index([tokens(text_of[i]) or ["∅"] for i in ids], show_progress=False)
        indexes[tenant] = (retriever, ids)
    out = []
    for q in questions:
        start = time.perf_counter()
        retriever, ids = indexes[q.tenant]
        scores = retriever.get_scores(tokens(q.query))
        order = np.argsort(-scores, kind="stable")[:10]
        ranked = [ids[i] for i in order if scores[i] > 0]
        if took is not None:
            took.append((time.perf_counter() - start) * 1000)
        out.append(recall_at(q.gold, ranked))
    return out


def model_row(brain: Brain, data: DataSet, questions: list[Question],
              took: list[float] | None = None) -> list[dict[int, float]]:
    """The semantic model alone: the query as given against every event text, exact cosine.
    ``took`` gets each query's latency (ms): embedding the query and ranking the tenant's vectors."""
    embedder = brain.index.semantic.embedder
    by_tenant: dict[str, list[str]] = {}
    for e in data.events:
        by_tenant.setdefault(e["tenant"], []).append(e["event_id"])
    vectors = {t: embedder.embed_passages([data.texts[i] for i in ids]) for t, ids in by_tenant.items()}
    out = []
    for q in questions:
        start = time.perf_counter()
        query = embedder.embed_queries([q.query])[0]
        sims = vectors[q.tenant] @ query
        ids = by_tenant[q.tenant]
        ranked = [ids[i] for i in np.argsort(-sims, kind="stable")[:10]]
        if took is not None:
            took.append((time.perf_counter() - start) * 1000)
        out.append(recall_at(q.gold, ranked))
    return out


def build(data: DataSet, home: Path, fast_tier: bool = False) -> Brain:
    """The data set perceived into a fresh brain, every neural vector in (``fast_tier``: none:
    the events keep their static vectors, what a recall sees before the embedders catch up)."""
    brain = Brain.open(home)
    brain.index.semantic.neural = not fast_tier
    for start in range(0, len(data.events), 2000):
        for batch in tenant_batches(data.events[start : start + 2000]):  # a batch is one tenant's
            brain.perceive_many(batch)
    brain.index.semantic.wait()
    return brain


# -- fitting (--fit) -------------------------------------------------------------------------------
def candidates(brain: Brain, q: Question, fusion: Fusion) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every scored candidate of one recall (ids, channel scores, penalties), for refitting."""
    engine = RecallEngine(brain.index, fusion, pool=400)
    query = build_query(RecallInput(tenant=q.tenant, query=q.query, k=10, budget_tokens=100000,
                                    layers=["episodic"]), now_us())
    ranked = engine.recall(query).ranked
    return ([s.doc.id for s in ranked], np.array([[s.channel_scores[ch] for ch in CHANNELS] for s in ranked]),
            np.array([s.penalty for s in ranked]))


def fit(pools: list[tuple[Question, list[str], np.ndarray, np.ndarray]], start: Weights) -> Weights:
    """Coordinate ascent on R@5 (mean of R@1, R@5, R@10 to break ties) over a grid per channel."""
    grid = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.2)

    u = CHANNELS.index("utility")
    relevance_channels = [c for c in range(len(CHANNELS)) if c != u]

    def objective(w: np.ndarray) -> float:
        """The fused score (``scoring.fused``, × (1 − penalty)) of every candidate, vectorised."""
        total = 0.0
        for q, ids, x, penalty in pools:
            score = x[:, relevance_channels] @ w[relevance_channels] * (1 + w[u] * (2 * x[:, u] - 1)) \
                * (1 - np.minimum(1.0, penalty))
            order = np.argsort(-score, kind="stable")[:10]
            r = recall_at(q.gold, [ids[i] for i in order])
            total += r[5] + 0.1 * (r[1] + r[10])
        return total

    w = np.array([getattr(start, ch) for ch in CHANNELS])
    best = objective(w)
    for _ in range(3):
        improved = False
        for c in range(len(CHANNELS)):
            for value in grid:
                trial = w.copy()
                trial[c] = value
                score = objective(trial)
                if score > best + 1e-9:
                    best, w, improved = score, trial, True
        if not improved:
            break
    return replace(start, **{ch: float(v) for ch, v in zip(CHANNELS, w, strict=True)})


# -- main ------------------------------------------------------------------------------------------
def fmt(label: str, r: dict[int, float]) -> str:
    return f"| {label} | " + " | ".join(f"{r[k]:.1f}" for k in KS) + " |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(DEFAULT_SETS),
                    help=f"comma-separated, of {list(SETS)} ({', '.join(TUNING_ONLY)}: tuning questions only)")
    ap.add_argument("--half", default="heldout", choices=("heldout", "tuning", "all"))
    ap.add_argument("--fit", action="store_true",
                    help="fit the fused weights at both ends (question, dialogue) on the tuning halves")
    ap.add_argument("--quick", action="store_true", help="the default row and the references only")
    ap.add_argument("--json", type=Path, help="also write the measured numbers here (the report's recall chart)")
    ap.add_argument("--fast-tier", action="store_true",
                    help="the neural tier off: events keep their static vectors (the fast tier alone)")
    ap.add_argument("--madial", type=Path, default=MADIAL, help=f"MADial-Bench's derived files (default: {MADIAL})")
    ap.add_argument("--dialogue-tuning", type=Path, default=DIALOGUE_TUNING,
                    help=f"the dial-* sets' files (default: {DIALOGUE_TUNING})")
    args = ap.parse_args()
    pools: dict[str, list] = {"text": [], "dialogue": []}
    measured: dict[str, dict] = {}
    for name in args.sets.split(","):
        data = load(name, args.madial, args.dialogue_tuning)
        questions = data.half("tuning" if args.fit else args.half)
        if not questions:  # a tuning-only set asked for its held-out half: it has none to report
            print(f"\n### {name}: no {args.half} questions (tuning only: --half tuning)", flush=True)
            continue
        with tempfile.TemporaryDirectory() as home:
            t0 = time.perf_counter()
            brain = build(data, Path(home), args.fast_tier)
            built = time.perf_counter() - t0
            try:
                if args.fit:
                    for q in questions:
                        share = build_query(RecallInput(tenant=q.tenant, query=q.query), 0).associative
                        if share in (0.0, 1.0):  # the two ends are fitted; between them is interpolated
                            pools["dialogue" if share else "text"].append((q, *candidates(brain, q, PRESETS["fused"])))
                    print(f"{name}: {len(questions)} tuning questions collected", flush=True)
                    continue
                measured[name] = report(name, data, questions, brain, built, args.quick)
            finally:
                brain.close()
    if args.json and measured:
        write_measured(args.json, measured, args.half)
    if args.fit:
        for form, pool in pools.items():
            if pool:
                w = fit(pool, PRESETS["fused"].for_share(float(form == "dialogue")))
                print(f"fitted {form} ({len(pool)} questions): " +
                      ", ".join(f"{ch} {getattr(w, ch):.2f}" for ch in CHANNELS), flush=True)


def report(name: str, data: DataSet, questions: list[Question], brain: Brain, built: float, quick: bool) -> dict:
    """Prints the set's table; returns what ``--json`` keeps of it (R@k and latency per ranking)."""
    print(f"\n### {name}: {len(questions)} questions, {len(data.events)} events (brain built in {built:.0f} s)\n")
    print("| ranking | R@1 | R@5 | R@10 |\n|---|---:|---:|---:|")
    cuts: Counter = Counter()
    default, took = through_recall(brain, data, questions, cuts)
    print(fmt("**recall() default**", mean_recalls(default)), flush=True)
    print(fmt("recall(), k and budget left at their defaults (none, 400 tokens)",
              mean_recalls(through_recall(brain, data, questions, every_default=True)[0])), flush=True)
    rows = [] if quick else [("preset seed", PRESETS["seed"]), ("preset rrf", PRESETS["rrf"]),
                             *((f"{ch} alone", alone(ch)) for ch in ("lexical", "semantic"))]
    engine = brain.engine
    for label, fusion in rows:
        brain.engine = RecallEngine(brain.index, fusion)
        each = through_recall(brain, data, questions)[0]
        if label == "semantic alone":  # "never below" read question by question, with its noise
            label += " (the default's R@5 won : lost {} : {}, sign test p {:.2f})".format(*paired(default, each))
        print(fmt(label, mean_recalls(each)), flush=True)
    brain.engine = engine
    bm25_took: list[float] = []
    bm25_each = bm25s_row(data, questions, took=bm25_took)
    bm25 = mean_recalls(bm25_each)
    print(fmt("bm25s (plain BM25)", bm25), flush=True)
    if any(e.get("speaker") for e in data.events):
        print(fmt("bm25s, speaker written into the text", mean_recalls(bm25s_row(data, questions, True))),
              flush=True)
    model_took: list[float] = []
    model_label = f"{brain.index.semantic.embedder.name} alone (query as given)"
    model = mean_recalls(model_row(brain, data, questions, took=model_took))
    print(fmt(model_label, model), flush=True)
    categories = sorted({q.category for q in questions if q.category})
    for category in categories:
        picked = [r for q, r in zip(questions, default, strict=True) if q.category == category]
        print(fmt(f"recall() default, {category} ({len(picked)}; all gold in the top 5: "
                  f"{all_gold(picked):.1f} %)", mean_recalls(picked)))
        print(fmt(f"bm25s, {category}", mean_recalls(
            [r for q, r in zip(questions, bm25_each, strict=True) if q.category == category])))
    print(f"\nrecall() latency: p50 {statistics.median(took):.1f} ms, "
          f"p90 {float(np.percentile(took, 90)):.1f} ms; bm25s {statistics.median(bm25_took):.2f} / "
          f"{float(np.percentile(bm25_took, 90)):.2f} ms; {model_label} {statistics.median(model_took):.1f} / "
          f"{float(np.percentile(model_took, 90)):.1f} ms", flush=True)
    merged = brain.sql("SELECT count() AS n FROM decisions FINAL WHERE kind = 'events_merged'")[0]["n"]
    print(f"gate cuts over {len(questions)} recalls (k aside): " +
          (", ".join(f"{stage} {n}" for stage, n in sorted(cuts.items())) or "none") +
          f"; events merged by the write hygiene: {merged} of {len(data.events)}", flush=True)
    return {"questions": len(questions), "events": len(data.events), "rankings": {
        "hindbrain recall()": _kept(mean_recalls(default), took),
        "plain BM25 (bm25s)": _kept(bm25, bm25_took),
        f"{brain.index.semantic.embedder.name} alone": _kept(model, model_took)}}


def _kept(recalls: dict[int, float], took: list[float]) -> dict:
    return {"recall_at": {str(k): round(v, 1) for k, v in recalls.items()},
            "latency_ms": {"p50": round(statistics.median(took), 2), "p90": round(float(np.percentile(took, 90)), 2)}}


def write_measured(path: Path, measured: dict[str, dict], half: str) -> None:
    """The numbers of this run with where they come from, for ``hindbrain.sim.report``."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    doc = {"measured": datetime.now().astimezone().isoformat(timespec="seconds"),
           "command": "python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
           "commit": commit,
           "machine": f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}",
           "half": half, "embedder": os.environ.get("HINDBRAIN_EMBEDDER", "use"),
           "load_average_1min_at_end": round(os.getloadavg()[0], 1),  # latency is the machine's as loaded then
           "what": "R@k (%) through each ranking on each set's questions; latency per query in ms, measured in "
                   "the same process (hindbrain: a whole Brain.recall; BM25: scoring and ranking on a built index; "
                   "the model: embedding the query and an exact cosine ranking)",
           "sets": measured}
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()
