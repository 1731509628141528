"""What e5 scores for a dialogue (issue 30, round twenty-one): arms that change e5's cosine between a
dialogue's cue and its memories, read through ``Brain.recall`` (the default's whole path: USE's views, e5's
cue at 1 : 3, the shipped dialogue trees) on the dialogue tuning data (MADial's tuning halves and
``dial-*``), every learned arm **out of fold by dialogue**; MADial's held-out halves are read with the arm
fitted on all the tuning rows (reported, labelled, never used to choose).

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        .venv/bin/python bench/e5_score_arms.py --arms shipped,diag:0.03,cq0.5,hub10:0.25 --out /tmp/arms.pkl

Arms (``--arms``, comma-separated):

* ``shipped``: the default.
* ``diag:LAM`` / ``lowR:LAM`` / ``full:LAM``: a learned adapter on e5's cue vector, ``q' = (I + A) q``
  renormalised, ``A`` diagonal, ``U Vᵀ`` of rank R, or full, fitted with an in-tenant softmax loss
  (temperature ``TAU``) on (cue, gold memories), ridge ``LAM`` toward the identity. Any bilinear adapter
  ``qᵀ W m`` is one on the query side alone (``(Wᵀq)·m``): the memory vectors, their cache and a replay
  are unchanged.
* ``cqA``: the cue less ``A`` × the tuning tenants' mean memory vector (hubness: a memory near the mean is
  near every cue).
* ``hubK:G``: each candidate's e5 cosine less ``G`` × the mean of its ``K`` highest e5 cosines to the other
  candidates of the same pool (CSLS-style hubness reduction, unfitted but for K and G).

Folds: 5 by dialogue (MADial's two languages share a dialogue id; a ``dial-<lang>-<id>`` is its own),
``--draws`` draws; ``--across`` instead fits each learned arm on the other group (MADial ↔ ``dial-*``,
no tenant shared). The adapters' vectors are the product's (``e5_dialogue.query_vector`` on the cue,
``e5_dialogue.memory_pass`` on the memories' texts). Per-question R@k are pickled (``--out``) and the
paired summary (mean ± SE of the difference with ``shipped`` over questions) printed.
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from hindbrain.recall import dialogue, e5_dialogue, engine  # noqa: E402
from hindbrain.recall.semantic import capped, window_of  # noqa: E402

SETS = ("madial-zh", "madial-en", "dial-zh", "dial-en")
TAU = 0.05  # the softmax's temperature over e5 cosines (which run 0.7-0.9 for every memory)
FOLDS = 5


def dialogue_key(qid: str) -> str:
    """The fold unit: MADial's zh and en share a dialogue by id; a ``dial-*`` question is its own."""
    return qid if qid.startswith("dial-") else qid.rsplit("-", 1)[1]


def rows_of(data: quality.DataSet) -> list[dict]:
    """Each dialogue question's cue vector, its tenant's memory vectors and which of them are gold."""
    by_tenant: dict[str, list] = {}
    for e in data.events:
        by_tenant.setdefault(e["tenant"], []).append(e)
    window = window_of(None)
    memories = {t: ([e["event_id"] for e in es], e5_dialogue.memory_pass([capped(e["text"], window) for e in es]))
                for t, es in by_tenant.items()}
    out = []
    for q in data.questions:
        seen = dialogue.views(q.query)
        ids, vectors = memories[q.tenant]
        out.append(dict(qid=q.qid, key=dialogue_key(q.qid), tuning=q.tuning, tenant=(data.name, q.tenant),
                        q=np.asarray(e5_dialogue.query_vector(seen.cue), np.float64),
                        M=np.asarray(vectors, np.float64), y=np.array([i in q.gold for i in ids], np.float64)))
    return out


class Adapter:
    """``q' = q + A q``: ``A`` diagonal (``diag``), ``U Vᵀ`` (``low``, rank ``rank``) or full (``full``)."""

    def __init__(self, form: str, lam: float, rank: int = 0):
        self.form, self.lam, self.rank = form, lam, rank
        self.p = None

    def size(self) -> int:
        return {"diag": 384, "low": 2 * 384 * self.rank, "full": 384 * 384}[self.form]

    def moved(self, p: np.ndarray, q: np.ndarray) -> np.ndarray:
        if self.form == "diag":
            return q + p * q
        if self.form == "low":
            u, v = p[: 384 * self.rank].reshape(384, -1), p[384 * self.rank:].reshape(384, -1)
            return q + u @ (v.T @ q)
        return q + p.reshape(384, 384) @ q

    def grad_of(self, p: np.ndarray, q: np.ndarray, g: np.ndarray) -> np.ndarray:
        """d loss / d p from d loss / d q' (``g``)."""
        if self.form == "diag":
            return g * q
        if self.form == "low":
            u, v = p[: 384 * self.rank].reshape(384, -1), p[384 * self.rank:].reshape(384, -1)
            return np.concatenate([np.outer(g, v.T @ q).ravel(), np.outer(q, u.T @ g).ravel()])
        return np.outer(g, q).ravel()

    def loss(self, p: np.ndarray, rows: list[dict]) -> tuple[float, np.ndarray]:
        """The mean in-tenant softmax cross-entropy of the gold memories (spread evenly over a question's
        golds), plus the ridge toward the identity, and its gradient."""
        total, grad = 0.0, np.zeros_like(p)
        for r in rows:
            s = r["M"] @ self.moved(p, r["q"]) / TAU
            s -= s.max()
            prob = np.exp(s) / np.exp(s).sum()
            want = r["y"] / r["y"].sum()
            total -= float(want @ np.log(prob + 1e-12))
            grad += self.grad_of(p, r["q"], r["M"].T @ (prob - want) / TAU)
        return total / len(rows) + self.lam * float(p @ p) / 2, grad / len(rows) + self.lam * p

    def fit(self, rows: list[dict]) -> Adapter:
        start = np.random.default_rng(0).normal(0, 1e-3, self.size()) if self.form == "low" else np.zeros(self.size())
        self.p = minimize(self.loss, start, args=(rows,), jac=True, method="L-BFGS-B", options={"maxiter": 200}).x
        return self

    def __call__(self, q: np.ndarray) -> np.ndarray:
        return self.moved(self.p, q)


def query_arm(arm: str):
    """``arm`` → (tuning rows → the cue's transform), or None for an arm that is not on the cue."""
    if arm == "shipped":
        return lambda rows: (lambda q: q)
    if arm.startswith("cq"):
        a = float(arm[2:])

        def centred(rows):
            mu = np.concatenate([r["M"] for r in {r["tenant"]: r for r in rows}.values()]).mean(0)
            return lambda q: q - a * mu
        return centred
    if arm.startswith("hub"):
        return None
    form, lam = arm.split(":")
    rank = int(form[3:]) if form.startswith("low") else 0
    return lambda rows: Adapter(form[:3] if rank else form, float(lam), rank).fit(rows)


def folds(rows: list[dict], draw: int) -> list[int]:
    keys = sorted({r["key"] for r in rows})
    np.random.default_rng(draw).shuffle(keys)
    fold_of = {key: n % FOLDS for n, key in enumerate(keys)}
    return [fold_of[r["key"]] for r in rows]


def plans(arm: str, rows: list[dict], draws: int) -> list[dict]:
    """Per draw, each question's cue transform: its fold's (tuning) or all the tuning rows' (held-out)."""
    make = query_arm(arm)
    tuning = [r for r in rows if r["tuning"]]
    full = make(tuning)
    out = []
    for draw in range(draws):
        fold_of = folds(tuning, draw)
        plan = {r["qid"]: full for r in rows if not r["tuning"]}
        for fold in range(FOLDS):
            fitted = make([r for r, f in zip(tuning, fold_of, strict=True) if f != fold])
            plan.update({r["qid"]: fitted for r, f in zip(tuning, fold_of, strict=True) if f == fold})
        out.append(plan)
    return out


def across(arm: str, rows: list[dict]) -> list[dict]:
    """Each question's cue transform fitted on the other group's tuning rows: ``dial-*`` read with the arm
    fitted on MADial's tuning halves, MADial (both halves) with it fitted on ``dial-*``. The groups share no
    tenant, so this reads whether an arm transfers to memories it never saw (folds by dialogue cannot: a
    set is two tenants, each memory gold for several dialogues)."""
    make = query_arm(arm)
    tuning = [r for r in rows if r["tuning"]]
    on_madial = make([r for r in tuning if not r["qid"].startswith("dial-")])
    on_dial = make([r for r in tuning if r["qid"].startswith("dial-")])
    return [{r["qid"]: on_madial if r["qid"].startswith("dial-") else on_dial for r in rows}]


def hub(vectors: np.ndarray, k: int) -> np.ndarray:
    """Each row's mean cosine to its ``k`` nearest other rows (0 under three rows)."""
    if k <= 0 or len(vectors) < 3:
        return np.zeros(len(vectors), np.float32)
    c = vectors @ vectors.T
    np.fill_diagonal(c, -np.inf)
    return np.sort(c, 1)[:, -min(k, len(vectors) - 1):].mean(1)


_now = {"transform": None, "k": 0, "g": 0.0}
_query_vector = e5_dialogue.query_vector
_cosines = engine._DialogueMix.e5_cosines


def _patched_query(cue: str) -> np.ndarray:
    v = _query_vector(cue)
    if _now["transform"] is None:
        return v
    w = np.asarray(_now["transform"](np.asarray(v, np.float64)), np.float32)
    return w / np.linalg.norm(w)


def _hub_cosines(self, rows):
    """The default's ``_DialogueMix.e5_cosines`` less ``g`` × the hub term of the call's rows (the
    default's own for every other arm)."""
    return _cosines(self, rows) - _now["g"] * hub(rows, _now["k"]) if _now["g"] else _cosines(self, rows)


def run(arms: list[str], draws: int, sets: list[str], crossed: bool = False) -> dict:
    e5_dialogue.query_vector = _patched_query
    engine._DialogueMix.e5_cosines = _hub_cosines
    # every arm is fitted on all the dialogue tuning rows (MADial's two halves' tuning questions and dial-*),
    # whichever sets are read, so reading one set gives the numbers a run over all of them gives it
    rows = [r for name in SETS for r in rows_of(quality.load(name))]
    planned = {arm: across(arm, rows) if crossed else plans(arm, rows, draws)
               for arm in arms if not arm.startswith("hub")}
    results: dict = {}
    for name in sets:
        data = quality.load(name)
        with tempfile.TemporaryDirectory() as home:
            brain = quality.build(data, Path(home))
            try:
                for arm in arms:
                    k, g = (int(arm[3:].split(":")[0]), float(arm.split(":")[1])) if arm.startswith("hub") else (0, 0.0)
                    for draw, plan in enumerate(planned.get(arm, [None])):
                        _now.update(k=k, g=g)
                        got = {}
                        for q in data.questions:
                            _now["transform"] = plan[q.qid] if plan else None
                            got[q.qid] = (q.tuning, quality.through_recall(brain, data, [q])[0][0])
                        _now.update(transform=None, k=0, g=0.0)
                        results.setdefault(arm, {}).setdefault(draw, {}).update(got)
                        print(f"{name} {arm} draw {draw}: tuning R@5 "
                              f"{100 * np.mean([r[5] for t, r in got.values() if t]):.1f}", flush=True)
            finally:
                brain.close()
    return results


def summary(results: dict) -> None:
    """Per arm, R@5 mean over its draws and the paired difference with ``shipped`` (SE over questions)."""
    def per(arm):
        draws = list(results[arm].values())
        return {q: (draws[0][q][0], np.mean([d[q][1][5] for d in draws])) for q in draws[0]}

    base = per("shipped")
    groups = (("MADial tuning (out of fold)", lambda q, t: t and not q.startswith("dial-")),
              ("dial-* (out of fold)", lambda q, t: q.startswith("dial-")),
              ("MADial held-out (not used to choose)", lambda q, t: not t))
    for arm in results:
        mine, cells = per(arm), [arm]
        for label, chosen in groups:
            qs = [q for q, (t, _) in base.items() if chosen(q, t) and q in mine]
            if qs:
                d = np.array([mine[q][1] - base[q][1] for q in qs])
                cells.append(f"{label} {100 * np.mean([mine[q][1] for q in qs]):.2f} "
                             f"({100 * d.mean():+.2f} ± {100 * d.std(ddof=1) / np.sqrt(len(d)):.2f})")
        print(" | ".join(cells), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arms", default="shipped,diag:0.03")
    ap.add_argument("--draws", type=int, default=1, help="fold draws (the learned arms; 1 for the others)")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--across", action="store_true",
                    help="fit each learned arm on the other group's tuning rows (MADial <-> dial-*) instead of folds")
    ap.add_argument("--out", type=Path, help="pickle the per-question R@k here")
    args = ap.parse_args()
    arms = args.arms.split(",")
    if "shipped" not in arms:
        arms.insert(0, "shipped")
    results = run(arms, args.draws, args.sets.split(","), args.across)
    if args.out:
        args.out.write_bytes(pickle.dumps(results))
    summary(results)


if __name__ == "__main__":
    main()
