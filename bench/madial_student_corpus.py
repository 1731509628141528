"""Teacher vectors for a query student distilled from e5 (issue 30, round thirteen): dialogue-like
texts in zh and en, each embedded by e5's query pass (``recall.e5_query``, the quality mode's own),
by USE's query pass and by the static tier, cached in one ``.npz`` per language.

No held-out question is read. The texts:
- MADial's tuning halves (even ids): each dialogue's views (``recall.dialogue.views``: the user's
  turns joined, then single turns), and re-cut dialogues (a random subset of a dialogue's user
  turns, in order, joined; and user turns of two tuning dialogues of the same language spliced);
- MADial's memories (documents: the neural tier embeds them with e5 anyway);
- ``bench/convmem.py`` conversations with another seed than the eval's (seed 0): windows of one
  speaker's 1-4 consecutive turns, joined as ``views`` joins a dialogue's.

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 .venv/bin/python bench/madial_student_corpus.py \
        --out /tmp/student [--augment 2000] [--conv 1500] [--conversations 4]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

from hindbrain.recall.dialogue import is_assistant, parse_turns, views

EVAL_DATA = Path(os.environ.get("HINDBRAIN_EVAL_DATA")
                 or Path(__file__).resolve().parents[2] / "shared" / "eval-data")
MADIAL = EVAL_DATA / "madial-bench" / "derived"


def tuning_queries(lang: str) -> list[str]:
    """The tuning half of MADial's queries (even ids)."""
    rows = [json.loads(line) for line in (MADIAL / f"madial_{lang}_queries.jsonl").read_text("utf-8").splitlines()]
    return [r["query"] for r in rows if r.get("gold") and r["id"] % 2 == 0]


def user_turns(query: str) -> list[str]:
    return [t.text for t in parse_turns(query) if not is_assistant(t.speaker)]


def recut(dialogues: list[list[str]], n: int, rng: random.Random) -> list[str]:
    """Joined user-turn sequences that MADial's tuning dialogues could have been: a subset of one
    dialogue's turns in order, or the tail of one spliced onto the head of another."""
    out = []
    while len(out) < n:
        a = rng.choice(dialogues)
        if rng.random() < 0.5 and len(a) > 1:
            keep = sorted(rng.sample(range(len(a)), rng.randint(1, len(a))))
            out.append("\n".join(a[i] for i in keep))
        else:
            b = rng.choice(dialogues)
            out.append("\n".join(a[: rng.randint(1, len(a))] + b[rng.randint(0, len(b) - 1):]))
    return out


def conv_windows(lang: str, n: int, rng: random.Random, conversations: int = 4) -> list[str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import convmem

    runs = []
    for conv in convmem.generate(lang=lang, conversations=conversations, seed=7):  # the eval's conversations are seed 0
        for session in conv["sessions"]:
            turns = session["turns"]
            for speaker in conv["speakers"]:
                mine = [t["text"] for t in turns if t["speaker"] == speaker]
                for i in range(len(mine)):
                    runs.append(mine[i: i + rng.randint(1, 4)])
    return ["\n".join(r) for r in rng.sample(runs, min(n, len(runs)))]


def corpus(lang: str, augment: int, conv: int, seed: int = 0, conversations: int = 4) -> list[str]:
    rng = random.Random(seed)
    queries = tuning_queries(lang)
    dialogues = [user_turns(q) for q in queries]
    texts = [t for q in queries for t in views(q).texts] + [t for d in dialogues for t in d]
    lines = (MADIAL / f"madial_{lang}_memories.jsonl").read_text("utf-8").splitlines()
    mems = [json.loads(line)["event"] for line in lines]
    texts += recut(dialogues, augment, rng) + mems + conv_windows(lang, conv, rng, conversations)
    return list(dict.fromkeys(t for t in texts if t.strip()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--augment", type=int, default=2000)
    ap.add_argument("--conv", type=int, default=1500)
    ap.add_argument("--langs", default="zh,en")
    ap.add_argument("--conversations", type=int, default=4,
                    help="convmem conversations (seed 7) the windows are cut from (~520 turns each)")
    args = ap.parse_args()
    from hindbrain.recall.e5_query import E5Int8
    from hindbrain.recall.embed import UseEmbedder
    from hindbrain.recall.static import default_static

    e5, use, static = E5Int8(), UseEmbedder(), default_static()
    args.out.mkdir(parents=True, exist_ok=True)
    for lang in args.langs.split(","):
        texts = corpus(lang, args.augment, args.conv, conversations=args.conversations)
        t0 = time.process_time()
        e = np.concatenate([e5.embed(texts[i: i + 256]) for i in range(0, len(texts), 256)])
        print(f"{lang}: {len(texts)} texts, e5 {time.process_time() - t0:.0f} s CPU", flush=True)
        np.savez(args.out / f"student_{lang}.npz", texts=np.array(texts, dtype=object), e5=e,
                 use=use.embed_queries(texts), static=static.embed_passages(texts))


if __name__ == "__main__":
    main()
