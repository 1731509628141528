"""The fast tier of semantic memory: static token vectors distilled from the neural model.

Every event gets a vector before ``perceive`` returns, without the neural model (USE: ~350-700
texts/s on two cores, far below a fleet's 5k events/s). The recipe is model2vec's: the neural
model embedded a vocabulary once, offline (``recall/distill.py``); a text's vector is the
weighted sum of its tokens' vectors. A batch costs one C pass for its tokens' ids and one for the
pooled sums (``recall/_scan.c``): ~100-170k texts/s of a core (``bench/static_tier.py``).

**The same space as the neural model.** The token vectors are the neural model's own vectors
of those tokens, reduced by a truncated SVD (no centring, so the map back is linear) and
mapped back to the model's 512 dimensions here. A static vector is therefore searched with the
same neural *query* vector as a neural one, in the same per-tenant index: when the neural
vector of a document arrives it simply replaces the static one (``recall/semantic.py``), and a
recall never needs two query embeddings or two searches. USE is itself a deep averaging network
over word and n-gram embeddings, which is why pooled word vectors land near its sentence vectors.

**Tokens** mirror the lexical channel's (``recall.tokenize``): lowercased words, and for CJK
runs every character and every character bigram the vocabulary holds. A word the vocabulary
lacks tries its stem without a common English suffix, then is left to the lexical channel.

**Weights** (SIF, Arora et al. 2017): a token's vector is scaled by ``a / (a + p)``, with
``p`` the teacher tokenizer's unigram probability, so "the" and "的" count ~30x less than a
rare word. They are folded into the shipped vectors.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import numpy as np
from scipy.sparse import csr_matrix

from hindbrain.recall import _scan
from hindbrain.recall.embed import one_per_process
from hindbrain.recall.vectors import quantize

TABLE = Path(__file__).with_name("static_use.npz")  # written by ``python -m hindbrain.recall.distill``

_CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK_RANGES}]+|[^\W\d_{_CJK_RANGES}]+")
_ASCII_WORD = re.compile(r"[a-z]+")
_CJK_START = "\u3040"
_SUFFIXES = ("ing", "ed", "es", "s", "ly", "er")
_RARE_MEMO = 100_000
_CHUNK = 4096  # texts per C call: bounds the ids held at once


def cjk(ch: str) -> bool:
    """A kana or CJK ideograph: such runs are split into characters and bigrams."""
    o = ord(ch)
    return 0x3040 <= o <= 0x30FF or 0x3400 <= o <= 0x4DBF or 0x4E00 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF


def static_tokens(text: str) -> list[str]:
    """The candidate tokens of ``text`` (lowercased words; CJK characters and bigrams)."""
    text = text.lower()
    if text.isascii():
        return _ASCII_WORD.findall(text)
    out: list[str] = []
    for run in _TOKEN.findall(text):
        if run[0] >= _CJK_START and cjk(run[0]):
            out.extend(run)
            out.extend(map(str.__add__, run, run[1:]))
        else:
            out.append(run)
    return out


def py_static_ids(vocab: dict[str, int], text: str) -> list[int]:
    """A text's bag of ids in pure Python (``StaticTable.batch_ids`` of one text, as a multiset):
    each token's id, else a word's ``rare_ids`` (CJK characters and pairs have no stem: they are
    never ASCII). The oracle the C loop is held to."""
    return [i for tok in static_tokens(text) for i in
            ((vocab[tok],) if tok in vocab else rare_ids(vocab, tok) if tok.isascii() else ())]


def rare_ids(vocab: dict[str, int], word: str) -> tuple[int, ...]:
    """The ids standing for a word the vocabulary lacks: ``word`` less one common English
    suffix ("printers" → "printer"), else a split into two or three known words of 3+ letters
    ("timeout" → "time" "out"); else none (the word then stays lexical)."""
    stems = [word] + [word[: -len(x)] for x in _SUFFIXES if len(word) > len(x) + 2 and word.endswith(x)]
    for stem in stems:
        found = vocab.get(stem)
        if found is not None:
            return (found,)
    for stem in stems:
        found = compound_ids(vocab, stem, parts=3)
        if found:
            return found
    return ()


def compound_ids(vocab: dict[str, int], word: str, parts: int) -> tuple[int, ...]:
    """``word`` as at most ``parts`` known words of 3+ letters, longest first part first; ()
    when it cannot be covered."""
    if parts == 0 or len(word) < 3:
        return ()
    whole = vocab.get(word)
    if whole is not None:
        return (whole,)
    for cut in range(len(word) - 3, 2, -1):
        head = vocab.get(word[:cut])
        if head is not None:
            rest = compound_ids(vocab, word[cut:], parts - 1)
            if rest:
                return (head, *rest)
    return ()


class StaticTable:
    """A distilled table: vocabulary, weighted reduced vectors and the basis back to the
    teacher's space. ``embed`` returns unit float32 rows of the teacher's width."""

    def __init__(self, tokens: list[str], vectors: np.ndarray, basis: np.ndarray, teacher: str, version: int = 1):
        if len(tokens) != len(vectors) or vectors.shape[1] != basis.shape[0]:
            raise ValueError("a static table needs one vector per token and a basis of the vectors' width")
        self.tokens = tokens
        self.vocab = {t: i for i, t in enumerate(tokens)}
        # the same look-ups packed for C: a candidate token is found where it lies in the text, no
        # substring or dict probe made (``_scan.static_vocab``; ~36 candidates a bench event)
        self._packed = _scan.static_vocab(tokens)
        self._rare_memo: dict[str, tuple[int, ...]] = {}  # a word the vocabulary lacks → its rare_ids
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.basis = np.asarray(basis, dtype=np.float32)
        self.teacher = teacher
        self.dim = self.basis.shape[1]
        # the rows mapped back once (82 MB at 40k x 512): a text then costs a sparse sum of its
        # tokens' rows instead of a dense 256 x 512 product (the product capped it at ~60k/s)
        self.full = np.ascontiguousarray(self.vectors @ self.basis, dtype=np.float32)
        self.name = f"static-{teacher}-{len(tokens) // 1000}k-v{version}"

    def ids(self, text: str) -> list[int]:
        """The vocabulary ids of ``text``'s tokens, unknown ones left out."""
        flat, counts = self.batch_ids([text])
        return flat.tolist()

    def batch_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(every text's known token ids, grouped by text; tokens per text), int64. One C call
        over the batch (``recall/_scan.c``: ~1.5 µs a text, the batched regular expressions and
        ``map`` look-ups it replaces ~11); ``py_static_ids`` is its oracle. A word the vocabulary
        lacks is resolved once by ``rare_ids`` (remembered), then the batch is read again. A text
        is a bag, so the order of its ids is free."""
        flat, counts, rare = _scan.static_ids(texts, self._packed, self._rare_memo)
        if rare:
            self._remember(rare)
            flat, counts, rare = _scan.static_ids(texts, self._packed, self._rare_memo)
            assert not rare, "every rare word was just remembered"
        return np.frombuffer(flat, dtype=np.int64), np.frombuffer(counts, dtype=np.int64)

    def _remember(self, words: list[str]) -> None:
        """``rare_ids`` of words the vocabulary lacks, kept in the memo (ids, host names and typos
        recur); the memo is emptied first when these would take it past ``_RARE_MEMO`` words."""
        words = set(words)
        if len(self._rare_memo) + len(words) > _RARE_MEMO:
            self._rare_memo = {}
        memo = self._rare_memo
        for word in words:
            memo[word] = rare_ids(self.vocab, word) if word.isascii() else ()

    def embed(self, texts: list[str]) -> np.ndarray:
        """``(len(texts), dim)`` unit float32 rows; a text with no known token is a zero row.
        Each text's rows of ``full`` are summed and scaled in one C loop (``_scan.pool``: the
        sparse product, the norms and the division were three passes, ~5 µs a text; this ~1.7)."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), _CHUNK):
            flat, counts = self.batch_ids(texts[start : start + _CHUNK])
            _scan.pool(flat, counts, self.full, out[start : start + _CHUNK])
        return out

    def codes(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(``(len(texts), dim)`` int8 codes, which texts have a vector): ``recall.vectors.quantize``
        of ``embed``'s rows, bit for bit, without the float rows (``_scan.static_codes``: the sums in
        registers, quantised at once; a text whose ids repeat an earlier one's of the chunk copies its
        codes). What the vector index stores in graph mode (``VectorIndex.add_codes``); a text with no
        known token is a zero row, not known."""
        codes = np.empty((len(texts), self.dim), dtype=np.int8)
        known = np.empty(len(texts), dtype=bool)
        for start in range(0, len(texts), _CHUNK):
            chunk = slice(start, start + _CHUNK)
            flat, counts = self.batch_ids(texts[chunk])
            if not _scan.static_codes(flat, counts, self.full, codes[chunk], known[chunk]):
                # a non-finite sum (a damaged table): numpy's codes of the float rows, as ``add`` makes them
                rows = self.embed(texts[chunk])
                codes[chunk], known[chunk] = quantize(rows), np.any(rows != 0, axis=1)
        return codes, known

    def pooled(self, texts: list[str]) -> np.ndarray:
        """Every text's summed (weighted) reduced token vectors, before the map back."""
        flat, counts = self.batch_ids(texts)
        indptr = np.concatenate(([0], np.cumsum(counts)))
        bags = csr_matrix((np.ones(len(flat), dtype=np.float32), flat, indptr), shape=(len(texts), len(self.tokens)))
        return np.asarray(bags @ self.vectors)

    # -- the file -----------------------------------------------------------------------
    def save(self, path: Path) -> None:
        """int8 vectors with a float16 scale per row, the basis in float16, compressed."""
        v = self.vectors.astype(np.float32)
        scale = np.abs(v).max(axis=1) / 127.0
        codes = np.rint(v / np.where(scale > 0, scale, 1.0)[:, None]).astype(np.int8)
        np.savez_compressed(path, tokens=np.array("\n".join(self.tokens).encode("utf-8")), codes=codes,
                            scales=scale.astype(np.float16), basis=self.basis.astype(np.float16),
                            teacher=np.array(self.teacher), version=np.array(1))

    @classmethod
    def load(cls, path: Path) -> StaticTable:
        with np.load(path, allow_pickle=False) as z:
            tokens = bytes(z["tokens"]).decode("utf-8").split("\n")
            vectors = z["codes"].astype(np.float32) * z["scales"].astype(np.float32)[:, None]
            return cls(tokens, vectors, z["basis"], str(z["teacher"]), int(z["version"]))


class StaticEmbedder:
    """The fast tier as an ``Embedder``: ``embed_passages`` of a distilled table. Queries are
    embedded the same way (used only when no neural model is configured at all)."""

    unit_rows = True  # embed_passages' rows are unit length (or zero): ``_scan.pool`` scales them

    def __init__(self, path: Path = TABLE):
        self.path = Path(path)
        self._table: StaticTable | None = None
        self._lock = threading.Lock()

    @property
    def table(self) -> StaticTable:
        table = self._table
        if table is None:
            with self._lock:
                if self._table is None:
                    if not self.path.exists():
                        raise FileNotFoundError(
                            f"no static table at {self.path}: run python -m hindbrain.recall.distill")
                    self._table = StaticTable.load(self.path)
                table = self._table
        return table

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def dim(self) -> int:
        return self.table.dim

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self.table.embed(list(texts))

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.table.embed(list(texts))

    def embed_codes(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``embed_passages``' rows as the vector index's int8 codes, and which texts have one
        (``StaticTable.codes``)."""
        return self.table.codes(list(texts))


default_static = one_per_process(StaticEmbedder)
default_static.__doc__ = "One static table per process, shared by every brain."
