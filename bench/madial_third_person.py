"""MADial offline (seventh pass, docs/recall-quality.md): the user's turns read in the third person
(the speaker's name for "I / my / me", "我") as the views USE embeds, alone and mixed into the
default views; R@5 on both halves from ``bench/madial_offline.py``'s cached vectors.

    HINDBRAIN_EVAL_DATA=../shared/eval-data .venv/bin/python bench/madial_third_person.py
"""
import re
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, "bench")
import json
from pathlib import Path

import madial_offline as mo

from hindbrain.recall.channels import late_interaction
from hindbrain.recall.dialogue import views
from hindbrain.recall.embed import UseEmbedder

EN = [(r"\bI'm\b", "{n} is"), (r"\bI am\b", "{n} is"), (r"\bI've\b", "{n} has"), (r"\bI'll\b", "{n} will"),
      (r"\bI'd\b", "{n} would"), (r"\bmyself\b", "{n}"), (r"\bmy\b", "{n}'s"), (r"\bMy\b", "{n}'s"),
      (r"\bmine\b", "{n}'s"), (r"\bme\b", "{n}"), (r"\bI\b", "{n}")]
def third(text, name):
    if not name:
        return text
    if name.isascii() and re.search(r"[a-zA-Z]", text) and not re.search(r"[\u4e00-\u9fff]", text):
        for pat, rep in EN:
            text = re.sub(pat, rep.format(n=name), text)
        return text
    return re.sub(r"我(?!们)", name, text)

use = UseEmbedder()
def evaluate(lang: str) -> None:
    d = mo.build(lang, Path(tempfile.gettempdir()) / "hindbrain-madial-offline")
    rows = [json.loads(line) for line in (mo.MADIAL / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines()]
    rows = [r for r in rows if r.get("gold")]
    texts, spans = [], []
    for r in rows:
        v = views(r["query"])
        name = v.speakers[0] if v.speakers else None
        t = [third(x, name) for x in v.texts]
        spans.append((len(texts), len(t)))
        texts += t
    print(texts[:2])
    t0 = time.time()
    qt = use.embed_queries(texts)
    print("embedded", len(texts), time.time() - t0)
    def ev(score, half):
        got = []
        for q, (s, n) in zip(d.queries, spans, strict=False):
            if half != "all" and (half == "tuning") == bool(q.id % 2):
                continue
            mu = d.vec["mu"][q.cand]
            sc = score(mu, q, list(range(s, s + n)))
            order = np.argsort(-sc, kind="stable")[:5]
            got.append(len(set(d.ids[q.cand][order].tolist()) & set(q.gold)) / len(q.gold))
        return 100 * np.mean(got)
    def base(mu, q, r):
        return late_interaction(mu @ d.vec["qu"][q.views].T)
    def thp(mu, q, r):
        return late_interaction(mu @ qt[r].T)
    arms = {"default views": base, "third person": thp}
    def mix(a):
        return lambda mu, q, r: base(mu, q, r) + a * thp(mu, q, r)

    for a in (0.25, 0.5, 1.0):
        arms[f"default + {a} third"] = mix(a)
    arms["third, joined only"] = lambda mu, q, r: mu @ qt[r[0]]
    for name, f in arms.items():
        def lex(mu, q, r, f=f):
            return mo.minmax(f(mu, q, r)) + 0.1 / 1.2 * mo.relative(q.bm25)
        print(f"{lang} {name:24} tuning {ev(f, 'tuning'):.1f}  +lex0.1 {ev(lex, 'tuning'):.1f}   "
              f"(held {ev(f, 'heldout'):.1f} / {ev(lex, 'heldout'):.1f})", flush=True)


for language in ("zh", "en"):
    evaluate(language)
