"""What e5 reads of a dialogue (issue 30, round nineteen): ``bench/quality.py`` or ``madial-sdk`` run
through the default (``recall.e5_dialogue``, ``engine._DialogueMix``) with the query side of its e5
cosine swapped for an arm, the memories' e5 vectors and the fusion trees unchanged (unless
``--passage-prefix`` or ``--trees``).

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 .venv/bin/python bench/e5_query_arms.py \
        --arm user2-max -- bench/quality.py --quick --half tuning --sets madial-zh,madial-en

Arms (``ARMS``): which texts of the dialogue e5 reads and how their cosines to a memory are combined:
``mean`` of the turns' unit vectors weighted ``decay ** age`` (one query vector), or ``max`` over the
turns' cosines (as USE's late interaction takes the best turn). "user" turns are the query's
``turns`` view (the user's lines only); "both" reads the raw dialogue's lines, assistant's included.
Each text is its own ORT run here; ``--cost ARMS`` reads each arm's e5 tokens and thread CPU a dialogue.
On the branch that ships the cue (round nineteen) ``--arm last`` is the old default and ``joined-ua`` the new.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e5_cheap_sdk import run_wrapped, use_trees, wrapped_script  # noqa: E402

from hindbrain.recall import e5_dialogue, embed, engine, query, semantic  # noqa: E402

_LINE = re.compile(r'^<([^>]+)>:\s*"?(.*?)"?\s*$')


def raw_turns(text: str) -> list[tuple[str, str]]:
    """(speaker, words) of each ``<Speaker>: "…"`` line of a MADial-form dialogue, in order."""
    out = []
    for line in text.split("\n"):
        m = _LINE.match(line.strip())
        if m and m.group(1) != "BOD" and m.group(2).strip():
            out.append((m.group(1), m.group(2).strip()))
    return out


# arm: (which texts, how many, combine, decay)
ARMS = {
    "last": ("user", 1, "mean", 1.0),  # the default (round eighteen)
    "user2-mean": ("user", 2, "mean", 0.5),
    "user3-mean": ("user", 3, "mean", 0.5),
    "user2-mean4": ("user", 2, "mean", 0.25),
    "user2-max": ("user", 2, "max", 1.0),
    "user3-max": ("user", 3, "max", 1.0),
    "both2-mean": ("both", 2, "mean", 0.5),  # last user turn + the assistant's turn before it, two vectors
    "both3-mean": ("both", 3, "mean", 0.5),
    "both2-max": ("both", 2, "max", 1.0),
    "joined-ua": ("joined-ua", 1, "mean", 1.0),  # the assistant's previous turn and the last user turn as ONE text
    "joined-user": ("joined-user", 1, "mean", 1.0),  # every user turn as one text (round sixteen's quality mode)
    "user2-one": ("joined-user2", 1, "mean", 1.0),  # the last two user turns as one text
    "named-last": ("named", 1, "mean", 1.0),  # the last user turn after its speaker's name ("Bart: …")
    "named-ua": ("named-ua", 1, "mean", 1.0),  # joined-ua with the user's turn named ("… Bart: …")
    "ua2": ("joined-ua2", 1, "mean", 1.0),  # the last two assistant turns and user turns, one text
}

_raw: dict[str, tuple[str, str]] = {}  # a dialogue's cue → (its joined user view, the dialogue as given)


def texts_of(arm: str, joined: str, raw: str | None) -> list[str]:
    """The texts e5 reads for ``arm``, the last turn first."""
    which, count, _, _ = ARMS[arm]
    users = [line for line in joined.split("\n") if line.strip()] or [joined]
    turns = raw_turns(raw) if raw else []
    if which == "user":
        return users[::-1][:count]
    if which == "joined-user":
        return ["\n".join(users)]
    if which == "joined-user2":
        return [" ".join(users[-2:])]
    if which == "named":
        who = [w for w, _ in turns if w != "Assistant"][-1:]
        return [f"{who[0]}: {users[-1]}" if who else users[-1]]
    if not turns:  # not MADial's form: the user's lines
        return users[::-1][:count]
    if which == "both":
        return [words for _, words in turns[::-1][:count]]
    if which == "named-ua":
        who = [w for w, _ in turns if w != "Assistant"][-1:]
        asked = texts_of("joined-ua", joined, raw)[0][: -len(users[-1])].strip()
        return [" ".join(x for x in (asked, f"{who[0]}: {users[-1]}" if who else users[-1]) if x)]
    if which == "joined-ua2":
        return [" ".join(words for _, words in turns[-4:])]
    if which == "joined-ua":
        last_user = max(i for i, (who, _) in enumerate(turns) if who != "Assistant") if any(
            who != "Assistant" for who, _ in turns) else len(turns) - 1
        before = [w for who, w in turns[:last_user] if who == "Assistant"][-1:]
        return [" ".join([*before, turns[last_user][1]])]
    raise ValueError(arm)


def install(arm: str, weight: float | None) -> None:
    _, _, combine, decay = ARMS[arm]
    if weight is not None:
        e5_dialogue.E5_WEIGHT = weight

    def query_matrix(joined: str, raw: str | None) -> np.ndarray:
        texts = texts_of(arm, joined, raw)
        rows = np.stack([e5_dialogue._model().embed([t])[0] for t in texts])
        if combine == "mean":
            w = decay ** np.arange(len(rows), dtype=np.float32)
            return embed.normalize_rows((w @ rows)[None, :])
        return rows

    def dialogue_query_async(self, cue: str):
        joined, raw = _raw.get(cue, (cue, None))
        return self._e5_pool.submit(query_matrix, joined, raw)

    semantic.SemanticIndex.dialogue_query_async = dialogue_query_async

    def mixed(self, nos, late):
        docs = self.tenant.docs.take(nos)
        at = [i for i, d in enumerate(docs) if d.event_kind in e5_dialogue.DIALOGUE_KINDS]
        if not at:
            return late
        mine = [nos[i] for i in at]
        rows, have = self.semantic.dialogue.vectors(
            self.tenant_name, mine, lambda nos: [self.semantic.text_of(self.tenant_name, no) for no in nos])
        if not have:
            return late
        at = [at[j] for j in have]
        late = np.array(late, dtype=np.float32, copy=True)
        late[at] = e5_dialogue.mix(late[at], (rows @ self._query.result().T).max(axis=1))
        self.scored.update(nos[i] for i in at)
        return late

    engine._DialogueMix.mixed = mixed
    views = query.views

    def keeping_raw(text, *a, **kw):  # the views drop the assistant's turns: keep the text they came from
        v = views(text, *a, **kw)
        if v is not None and v.form == "dialogue":
            _raw[v.cue] = (v.joined, text)
        return v

    query.views = keeping_raw


def passage_prefix(prefix: str) -> None:
    """The memories' e5 text read as ``prefix`` + text instead of ``query: `` + text (``E5Passages``
    only: the query pass keeps its prefix). The homes are temporary, so no cache mixes the two."""
    from hindbrain.recall import e5_onnx, e5_query

    def content(self, text):
        return self._spm.encode(e5_query._SPACES.sub(" ", (prefix + text).translate(self._norm)), out_type=int)

    e5_onnx.E5Passages._content = content


def cost(arms: list[str], root: Path, rounds: int = 3) -> None:
    """Each arm's e5 query pass over MADial's dialogues (both languages): tokens a query (all its
    texts) and the thread CPU of its ORT runs, p50 / p99 (the median of ``rounds`` rounds, arms
    rotated within a round so the machine's load falls on all alike)."""
    import json
    import time

    model = e5_dialogue._model()
    dialogues = [json.loads(line)["query"] for lang in ("zh", "en")
                 for line in (root / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines()]
    seen = [query.views(d) for d in dialogues]
    cases = [(v.joined, d) for v, d in zip(seen, dialogues, strict=True) if v is not None and v.form == "dialogue"]
    took: dict[str, list[list[float]]] = {arm: [] for arm in arms}
    tokens = {arm: [sum(len(model.ids(t)) for t in texts_of(arm, j, d)) for j, d in cases] for arm in arms}
    for _ in range(rounds):
        for arm in arms:
            ms = []
            for joined, raw in cases:
                texts = texts_of(arm, joined, raw)
                started = time.thread_time()
                for t in texts:
                    model.embed([t])
                ms.append((time.thread_time() - started) * 1e3)
            took[arm].append(ms)
    for arm in arms:
        p50 = np.median([np.percentile(r, 50) for r in took[arm]])
        p99 = np.median([np.percentile(r, 99) for r in took[arm]])
        t50, t99 = np.percentile(tokens[arm], [50, 99])
        print(f"| {arm} | {t50:.0f} / {t99:.0f} | {p50:.2f} / {p99:.2f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arm", choices=ARMS, default="last")
    ap.add_argument("--e5-weight", type=float, help="e5's weight against USE's 1 (default: the shipped 2)")
    ap.add_argument("--passage-prefix", help='the memories read with this prefix (e.g. "passage: ")')
    ap.add_argument("--trees", type=Path, help="order dialogue queries with these trees (fitted on this arm)")
    ap.add_argument("script", nargs=argparse.REMAINDER)
    ap.add_argument("--cost", help="instead: these arms' (comma-separated) e5 query cost over MADial's dialogues")
    args = ap.parse_args()
    if args.cost:
        import os

        root = Path(os.environ.get("HINDBRAIN_EVAL_DATA", "../shared/eval-data")) / "madial-bench" / "derived"
        print(f"| arm | tokens p50 / p99 | e5 thread CPU ms p50 / p99 | (load {os.getloadavg()[0]:.1f})")
        cost(args.cost.split(","), root)
        return
    script = wrapped_script(ap, args.script)
    install(args.arm, args.e5_weight)
    if args.passage_prefix:
        passage_prefix(args.passage_prefix)
    if args.trees:
        use_trees(e5_dialogue.MIXED_NAME, args.trees)
    print(f"e5 query arm {args.arm} {ARMS[args.arm]}, weight {e5_dialogue.E5_WEIGHT}, trees "
          f"{args.trees or 'shipped'}", flush=True)
    run_wrapped(script)


if __name__ == "__main__":
    main()
