"""A batch's cue terms found with its keys hashed once (``cues.indexed_terms_many``: the distinct keys numbered,
``_terms_of`` looked up per batch by key number, day and cues) equal the per-event cached form it replaced
(issue 28, round nineteen): the same tuples, event by event, over repeated and distinct structured fields,
unicode and zh values, empty and None fields, texts with and without cues, missing and repeated days."""

from __future__ import annotations

from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import cues, event_documents

_US_PER_DAY = 86_400_000_000


def former_indexed_terms_many(records: list[dict], ts_us: list, keys: list[tuple]) -> list[tuple[str, ...]]:
    """The form before round nineteen: every cache asked with the whole key, event by event (the oracle)."""
    texts = [fields.get("text") for fields in records]
    found = cues.exact_cues_many([str(text) if text else "" for text in texts],
                                 [cues._structured(key)[2] for key in keys])
    return [cues._terms_of(key, None if ts is None else int(ts) // _US_PER_DAY,
                           frozenset(found_here) if text else frozenset())
            for key, ts, text, found_here in zip(keys, ts_us, texts, found, strict=True)]


values = st.one_of(st.none(), st.just(""), st.sampled_from(["vpn", "VPN", "工单系统", "crm sync", "İstanbul", "ΟΔΟΣ",
                                                            "reset", "权限不足", "403", "e\u0301"]))
said = st.one_of(st.none(), st.just(""), st.lists(st.sampled_from(
    ["the vpn says 403", "工单系统 报销系统权限不足", "ORA-00942 at CRM", "İ ΟΔΟΣ", "—", "refund now", " ", "E404",
     "MyHTTPServer2 down", "svc-backup failed", "x"]), max_size=4).map(" ".join))
record = st.fixed_dictionaries(
    {"kind": st.sampled_from(["observation", "anomaly", "message"]), "text": said,
     "scope": st.one_of(st.none(), st.just({}), st.dictionaries(st.sampled_from(["task_type", "scene", "区域"]),
                                                                 values, max_size=2)),
     "entities": st.one_of(st.none(), st.lists(st.sampled_from(["alice", "工单", "Bob"]), max_size=2))},
    optional={"system": values, "action": values, "actual": values, "expected": values, "reason": values})
days = st.one_of(st.none(), st.sampled_from([0, 1, 19_000, 19_001]).map(lambda d: d * _US_PER_DAY + 7))


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.tuples(record, days), max_size=12), st.randoms(use_true_random=False))
def test_the_terms_of_a_batch_are_the_former_ones(pairs, rng):
    # repeats of the same fields, as a fleet's batch has them, beside the distinct ones
    pairs += [rng.choice(pairs) for _ in range(len(pairs))] if pairs else []
    records, ts_us = [fields for fields, _ in pairs], [ts for _, ts in pairs]
    keys, _ = event_documents.event_keys(records, [None] * len(records))
    assert cues.indexed_terms_many(records, ts_us, keys) == former_indexed_terms_many(records, ts_us, keys)
    assert cues.indexed_terms_many(records, ts_us) == [cues.indexed_terms(f, t) for f, t in pairs]


def test_keys_are_numbered_in_order_of_first_sight():
    a, b = ("a", (), ()), ("b", (), ())
    assert cues._numbered([a, b, a, ("a", (), ()), b]) == ([a, b], [0, 1, 0, 0, 1])


http_pieces = st.sampled_from(["403", "404", "500", "(", ")", "（", "）", "【", "】",
                               "[", "]", " ", "  ", "\n", ":", "：", ".", "。",
                               ",", "!", "forbidden", " Not Found", "bad gateway", "页面", "了", "错误", "status code",
                               "HTTP/1.1", "返回", "got", "x", "ticket 12: ", "—", "工单系统", "4031", "a403",
                               "1.403"])


@settings(max_examples=examples(600), deadline=None)
@given(st.lists(st.lists(http_pieces, max_size=8).map("".join), min_size=1, max_size=6))
def test_a_batchs_status_codes_are_each_texts_own(texts):
    # the status codes' context judged in place (the rest matched from the code's end, aloneness tested after)
    # gives exact_cues' own sets, which judge the same three tests on copies in another order
    assert cues.exact_cues_many(texts, [()] * len(texts)) == [cues.exact_cues(text, ()) for text in texts]


_KEYS = [cues.event_key({"kind": "anomaly", "text": "x", "system": "vpn", "action": "reset"}),
         cues.event_key({"kind": "observation", "text": "工单", "system": "工单系统", "scope": {"区域": "北"}}),
         cues.event_key({"kind": "message", "text": None})]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(
    st.integers(0, len(_KEYS) - 1),
    st.one_of(st.none(), st.sampled_from([0, 7, _US_PER_DAY, 19_000 * _US_PER_DAY + 5, -1, True]),
              st.floats(0, 3 * _US_PER_DAY, allow_nan=False)),
    st.one_of(st.none(), st.just(""), st.sampled_from(["said", "工单", " ", 0, 1])),
    st.sets(st.sampled_from(["VPN", "code:e404", "工单系统", "İ"]), max_size=3)), max_size=20))
def test_the_terms_by_number_in_c_are_the_python_loops(events):
    # the C loop (its memo, int(ts) // day, frozenset only of a said text) against the Python one, event by event
    nos, ts_us, texts, found = ([list(column) for column in zip(*events, strict=True)] if events
                                else [[], [], [], []])
    expected = cues.py_terms_by_number(_KEYS, nos, ts_us, texts, [set(f) for f in found])
    assert cues._terms_by_number(_KEYS, nos, ts_us, texts, [set(f) for f in found]) == expected


def test_the_terms_by_number_refuse_columns_of_other_lengths():
    import pytest

    with pytest.raises(ValueError):
        cues._terms_by_number(_KEYS, [0, 1], [None], [None, None], [set(), set()])
