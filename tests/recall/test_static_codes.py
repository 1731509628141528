"""The static tier's int8 codes in one C pass (``_scan.static_codes``, ``StaticTable.codes``,
``VectorIndex.add_codes``): the codes the two-step path makes (``_scan.pool``'s unit rows, then
``quantize``) bit for bit, the texts without a vector the same, texts of one id sequence pooled once,
and a brain in graph mode storing and answering exactly as with the float rows (issue 28)."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain import Brain
from hindbrain.recall import _scan, semantic
from hindbrain.recall.static import StaticEmbedder, StaticTable, default_static, py_static_ids, rare_ids
from hindbrain.recall.vectors import VectorIndex, py_quantize, quantize

# Mixed scripts, emoji, NUL, unknown words, CJK of both tiers' classes, letters whose lowercase
# changes length, digits; texts repeat (whole, and as the same words around other numbers).
_PIECES = ["ticket 7: refund the laptop", "printers timeout", "用户说页面一直转圈", "提交后没有响应", "报销",
           "🙂🔥", "\x00", "İstanbul", "ΟΔΟΣ", "Straße", "한국어", "カタカナ", "zzqxv", "qwertyuiopasdf",
           "the", "IAM", " ", "—", "42", "e\u0301", "timeoutprinter"]
_WORDS = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=5)), max_size=10).map(" ".join)
_BATCHES = st.lists(st.one_of(_WORDS, _WORDS.map(lambda t: t * 40)), min_size=1, max_size=12).flatmap(
    lambda base: st.lists(st.sampled_from(base), min_size=1, max_size=24))


@pytest.fixture(scope="module")
def table() -> StaticTable:
    return default_static().table


def _two_step(table: StaticTable, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """The path before: float unit rows (``embed``), their codes (``quantize``), a vector where a row is nonzero."""
    rows = table.embed(texts)
    return quantize(rows), np.any(rows != 0, axis=1)


@settings(max_examples=150, deadline=None)
@given(_BATCHES)
def test_codes_are_the_pooled_rows_codes_bit_for_bit(table, texts):
    codes, known = table.codes(texts)
    want_codes, want_known = _two_step(table, texts)
    assert np.array_equal(known, want_known)
    assert np.array_equal(codes, want_codes)
    assert not codes[~known].any()  # no vector: a zero row


@settings(max_examples=60, deadline=None)
@given(_BATCHES)
def test_codes_are_the_python_oracles_within_a_rounding(table, texts):
    # the oracle: py_static_ids' bag, numpy's sum and norm, numpy's quantize; the C sums in another
    # order (as scipy's product did), so a code may sit one step away at a rounding tie, never more
    codes, known = table.codes(texts)
    for text, got, has in zip(texts, codes, known, strict=True):
        ids = py_static_ids(table.vocab, text)
        pooled = table.full[ids].sum(axis=0) if ids else np.zeros(table.dim, dtype=np.float32)
        norm = np.linalg.norm(pooled)
        assert has == (norm > 0)
        want = py_quantize((pooled / norm)[None])[0] if norm > 0 else np.zeros(table.dim, dtype=np.int8)
        assert np.abs(got.astype(np.int16) - want).max() <= 1


def test_texts_of_one_id_sequence_are_pooled_once_and_others_apart(table):
    same = ["ticket 1: refund the laptop (case 88)", "ticket 2: refund the laptop (case 99)"]
    swapped = ["laptop refund the", "the laptop refund"]  # one bag, other orders: each pooled itself
    codes, known = table.codes(same + swapped + ["zzqxv", ""])
    assert known.tolist() == [True, True, True, True, False, False]
    assert np.array_equal(codes[0], codes[1])
    for i, text in enumerate(same + swapped):
        assert np.array_equal(codes[i], _two_step(table, [text])[0][0])


@settings(max_examples=60, deadline=None)
@given(_BATCHES)
def test_pooled_rows_of_a_batch_are_each_texts_own_bit_for_bit(table, texts):
    # a text repeating an earlier one's id sequence gets that row copied: the rows one text at a time
    alone = np.concatenate([table.embed([text]) for text in texts])
    assert np.array_equal(table.embed(texts).view(np.uint32), alone.view(np.uint32))


def test_static_codes_refuses_what_would_read_or_write_out_of_bounds(table):
    codes, known = np.empty((1, table.dim), dtype=np.int8), np.empty(1, dtype=bool)
    with pytest.raises(IndexError, match="not a row"):
        _scan.static_codes(np.array([len(table.tokens)], dtype=np.int64), np.array([1], dtype=np.int64),
                           table.full, codes, known)
    with pytest.raises(ValueError, match="more ids"):
        _scan.static_codes(np.array([0], dtype=np.int64), np.array([2], dtype=np.int64), table.full, codes, known)
    with pytest.raises(ValueError, match="one byte per text"):
        _scan.static_codes(np.array([0], dtype=np.int64), np.array([1], dtype=np.int64), table.full, codes,
                           np.empty(2, dtype=bool))
    with pytest.raises(ValueError, match="as wide"):
        _scan.static_codes(np.array([0], dtype=np.int64), np.array([1], dtype=np.int64), table.full,
                           np.empty((1, table.dim - 1), dtype=np.int8), known)


def test_a_non_finite_sum_takes_numpys_codes():
    # a damaged table whose rows overflow when summed: the C declines, the codes are numpy's of the rows
    tokens = ["alpha", "beta", "gamma"]
    table = StaticTable(tokens, np.array([[3e38, 1.0], [3e38, -1.0], [1.0, 2.0]]), np.eye(2), "toy")
    texts = ["alpha beta", "gamma", "nothing known"]
    flat, counts = table.batch_ids(texts)
    assert not _scan.static_codes(flat, counts, table.full, np.empty((3, 2), np.int8), np.empty(3, bool))
    with np.errstate(all="ignore"):
        codes, known = table.codes(texts)
        want_codes, want_known = _two_step(table, texts)
    assert np.array_equal(codes, want_codes) and np.array_equal(known, want_known)


def test_add_codes_stores_what_add_makes_of_unit_rows_in_graph_mode_only(table):
    texts = [f"{w} {n} 报销 timeout-{n % 7}" for n, w in enumerate(["printer", "refund", "IAM role", "中文"] * 30)]
    rows = table.embed(texts)
    codes, known = table.codes(texts)
    assert known.all()
    keys = np.arange(len(texts), dtype=np.int64)
    exact = VectorIndex(table.dim, exact_limit=10_000)
    assert not exact.takes_codes()
    with pytest.raises(RuntimeError, match="graph mode"):
        exact.add_codes(keys, codes)
    by_rows, by_codes = VectorIndex(table.dim, exact_limit=8), VectorIndex(table.dim, exact_limit=8)
    for index in (by_rows, by_codes):
        index.add(keys[:16], rows[:16], defer_graph=True, unit=True)  # past the limit: graph mode
        assert index.takes_codes()
    by_rows.add(keys[16:], rows[16:], defer_graph=True, unit=True)
    by_codes.add_codes(np.concatenate([keys[16:], [3]]), np.concatenate([codes[16:], codes[5:6]]), defer_graph=True)
    by_rows.add(np.array([3]), rows[5:6], defer_graph=True, unit=True)  # a replaced key: the last code wins
    assert np.array_equal(by_codes._codes(keys), by_rows._codes(keys))
    assert len(by_codes) == len(by_rows) == len(texts)
    probe = table.embed(["refund printer", "中文 报销"])
    assert np.array_equal(by_codes.cosines(keys, probe), by_rows.cosines(keys, probe))
    for index in (by_rows, by_codes):
        index.build_graph()
    assert np.array_equal(by_codes.search(probe[0], 10)[0], by_rows.search(probe[0], 10)[0])
    with pytest.raises(ValueError, match="non-negative"):
        by_codes.add_codes(np.array([-1]), codes[:1])


_EVENTS = [f"ticket {n}: {verb} in {system} (case {n * 7919 % 1000})" for n, (verb, system) in enumerate(
    [(v, s) for v in ("refund the laptop", "reset the password", "开通数据库权限", "renew the certificate")
     for s in ("IAM", "工单系统", "data warehouse", "the printer queue")] * 12)]
_QUERIES = ["client wants money back on a damaged computer", "cannot log in, need new credentials",
            "数据库 权限 申请", "certificate expired on the warehouse"]


def _static_brain(path, monkeypatch, *, codes: bool) -> tuple[list, list, int]:
    """perceive_many of _EVENTS into a brain whose vector index turns to graph mode at 64 documents,
    neural tier held back; returns (each query's semantic hits as texts, recall texts, add_codes calls)."""
    monkeypatch.setattr(semantic, "VectorIndex", functools.partial(VectorIndex, exact_limit=64))
    calls = []
    add_codes = VectorIndex.add_codes
    monkeypatch.setattr(VectorIndex, "add_codes", lambda self, *a, **k: calls.append(1) or add_codes(self, *a, **k))
    if not codes:
        monkeypatch.delattr(StaticEmbedder, "embed_codes")
    brain = Brain.open(path, embed_workers=0)
    try:
        sem = brain.index.semantic
        sem.neural, sem.upgrade_limit = False, 0  # the static tier alone answers
        for start in range(0, len(_EVENTS), 40):
            # given ids and times: the two brains' answers may then be compared item for item
            brain.perceive_many([{"tenant": "acme", "agent": "a1", "text": t, "event_id": f"ev-{n}",
                                  "ts": datetime(2026, 1, 2, tzinfo=UTC) + timedelta(seconds=n)}
                                 for n, t in enumerate(_EVENTS[start:start + 40], start)])
        tenant = brain.index.tenants["acme"]
        text_of = {no: tenant.docs[no].text for no in range(len(tenant.docs))}
        hits = []
        for query in _QUERIES:
            hits.append([(text_of[no], cos) for no, cos in sem.search("acme", sem.embed_query(query), 12)])
        recalls = [[i.text for i in brain.recall(tenant="acme", agent="a1", query=q).items if i.kind == "event"]
                   for q in _QUERIES]
        assert sem.tiers("acme", list(range(len(_EVENTS)))) == ["static"] * len(_EVENTS)
    finally:
        brain.close()
        monkeypatch.undo()
    return hits, recalls, len(calls)


def test_a_brain_in_graph_mode_answers_the_same_with_codes_as_with_float_rows(tmp_path, monkeypatch):
    with_codes = _static_brain(tmp_path / "codes", monkeypatch, codes=True)
    with_rows = _static_brain(tmp_path / "rows", monkeypatch, codes=False)
    assert with_codes[2] > 0 and with_rows[2] == 0  # the codes path ran in one brain only
    assert with_codes[0] == with_rows[0]  # the same semantic hits, the same cosines
    assert all(hits for hits in with_codes[0])
    assert with_codes[1] == with_rows[1]  # and the same recall answers


@settings(max_examples=150, deadline=None)
@given(_BATCHES)
def test_packed_vocabulary_finds_the_dicts_ids(table, texts):
    # the same ids in the same order (the pooled sums depend on it) and the same rare words
    memo = dict(table._rare_memo)
    assert _scan.static_ids(texts, table._packed, memo) == _scan.static_ids(texts, table.vocab, memo)


def test_packed_vocabulary_keeps_the_last_index_of_a_repeated_token_and_refuses_other_inputs():
    tokens = ["ab", "中文", "", "ab", "é", "中"]
    vocab = {t: i for i, t in enumerate(tokens)}
    packed = _scan.static_vocab(tokens)
    texts = ["AB 中文 É", "ab", "xyz 中", ""]
    assert _scan.static_ids(texts, packed, {"xyz": (4,)}) == _scan.static_ids(texts, vocab, {"xyz": (4,)})
    assert np.frombuffer(_scan.static_ids(["ab"], packed, {})[0], dtype=np.int64).tolist() == [3]
    with pytest.raises(TypeError, match="must be str"):
        _scan.static_vocab(["ok", 3])
    with pytest.raises(ValueError, match="packed static vocabulary"):
        _scan.static_ids(["ab"], packed[:-4], {})
    with pytest.raises(TypeError, match="dict or a packed"):
        _scan.static_ids(["ab"], ["ab"], {})


@pytest.mark.parametrize(("texts", "widest"), [
    (["printers timeout at the desk", "IAM zzqxv TIMEOUTPRINTER", ""], (0, 0xFF)),  # 1-byte strings
    (["用户说页面一直转圈 printers — zzqxv", "İstanbul カタカナ timeoutprinter", "—"], (0xFF, 0xFFFF)),  # 2-byte
    (["🙂 用户说 printers zzqxv 🔥", "𠀋𠀋 報銷 timeoutprinter", "🙂"], (0xFFFF, 0x10FFFF)),  # 4-byte
])
def test_packed_walk_of_each_string_kind_is_the_dict_walks(table, texts, widest):
    # the packed walk is compiled once a string kind (static_walk_kind): each kind against the dict's walk,
    # known words, rare words listed and then resolved through the memo, CJK characters and pairs, in order
    assert widest[0] < max(map(ord, "".join(texts))) <= widest[1]  # the kind the batch is made of
    memo: dict = {}
    first = _scan.static_ids(texts, table._packed, memo)
    assert first == _scan.static_ids(texts, table.vocab, memo) and "zzqxv" in first[2]
    memo.update((w, rare_ids(table.vocab, w)) for w in first[2])
    memo["zzqxv"] = (1, 2)
    ids, counts, rare = _scan.static_ids(texts, table._packed, memo)
    assert (ids, counts, rare) == _scan.static_ids(texts, table.vocab, memo) and not rare
    assert np.frombuffer(counts, dtype=np.int64).tolist()[2] == 0 and len(ids) > 0
