"""Long texts beside another tenant's recalls (design.md §issue-28, isolation; hindbrain/switching.py): a 64 kB
text is whole in the index the moment ``perceive`` returns (its last words found, a static vector at once),
its fold in parts folds to the same index as the batch whole, and each part waits for the recalls in
flight, never for ever."""

from __future__ import annotations

import threading
import time

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from test_one_fold import _differences  # tests/recall is on the path (rootdir-relative test modules)

from hindbrain import Brain
from hindbrain.brain import _perception, perceived
from hindbrain.learning import write_gate
from hindbrain.recall.index import RecallIndex
from hindbrain.recall.indexables import fold_parts
from hindbrain.streams.log import Position
from hindbrain.streams.processing import Decoded
from hindbrain.switching import GIVE_WAY_S, LONG_TEXT_CHARS, RECALLS, RecallPrecedence

FILLER = "the export job fails with a timeout and the retry loop keeps spinning "
LAST_WORDS = "zanzibar quokka frobnicator"


def long_text(tail: str = LAST_WORDS, size: int = 65_536 - 16) -> str:
    """A text of ``size`` characters (the API's limit is 64 kB) whose last words are ``tail``."""
    return (FILLER * (size // len(FILLER) + 1))[: size - len(tail) - 1] + " " + tail


def test_a_long_texts_last_words_are_found_the_moment_perceive_returns(tmp_path):
    with Brain.open(tmp_path / "brain") as brain:
        ids = brain.perceive_many([{"tenant": "acme", "agent": "a1", "text": long_text()},
                                   {"tenant": "acme", "agent": "a1", "text": "the sales meeting moved to thursday"},
                                   {"tenant": "acme", "agent": "a1", "text": long_text("ostrich velociraptor")}])
        assert len(long_text()) == 65_520
        # a budget the whole text fits (~16k tokens): the default one cuts it, naming it (pack.cut)
        pack = brain.recall(tenant="acme", agent="a1", query="frobnicator quokka", budget_tokens=40_000)
        assert [i.id for i in pack.items][:1] == [ids[0]]
        assert ids[2] in [i.id for i in brain.recall(tenant="acme", agent="a1", query="velociraptor",
                                                     budget_tokens=40_000).items]
        assert [c["id"] for c in brain.recall(tenant="acme", agent="a1", query="quokka").cut][:1] == [ids[0]]
        index = brain.index.tenants["acme"]
        assert None not in brain.index.semantic.tiers("acme", [index.by_id[i] for i in ids])  # a vector at once


def _batch(texts: list[str]) -> list[Decoded]:
    return [Decoded(Position("perceptions", 0, n), "perception",
                    _perception(perceived({"tenant": "t", "agent": f"a{n % 2}", "text": text, "kind": kind,
                                           "speaker": "bob" if n % 3 == 0 else None, "session": "s1"})))
            for n, (text, kind) in enumerate(texts)]


WORDS = st.sampled_from(["IAM 403 forbidden", "svc-backup", "from now on always", "refund to account 999-000-1234",
                         "ORA-00942", "thanks", "ok", "工单系统 权限不足", "VPN", "admin", " ", "."])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.lists(WORDS, min_size=1, max_size=4).map(" ".join).filter(str.strip), st.integers(0, 3),
                          st.sampled_from(["message", "observation"])), min_size=1, max_size=6))
def test_a_batch_folded_in_parts_is_the_batch_folded_whole(rows):
    # n > 0: a long text, of 8k-20k characters (under the API's 64 kB of UTF-8 in CJK too)
    texts = [(text if not n else ((text + " ") * (LONG_TEXT_CHARS // len(text) * n + 1))[:20_000], kind)
             for text, n, kind in rows]
    batch = _batch(texts)
    parts = fold_parts(batch)
    whole, in_parts = RecallIndex(), RecallIndex()
    whole._observe(batch)
    in_parts.observe(batch)
    if any(len(t) >= LONG_TEXT_CHARS for t, _ in texts):
        assert parts is not None and [d for p in parts for d in p] == batch
        assert all(len(p) == 1 or all(len(d.record["text"]) < LONG_TEXT_CHARS for d in p) for p in parts)
        # short records are cut apart only by a long one between them
        assert all(max(len(before[-1].record["text"]), len(after[0].record["text"])) >= LONG_TEXT_CHARS
                   for before, after in zip(parts, parts[1:], strict=False))
    else:
        assert parts is None
    assert set(whole.tenants) == set(in_parts.tenants)
    for tenant in whole.tenants:
        assert _differences(whole.tenants[tenant], in_parts.tenants[tenant]) == []
        terms = ["svc-backup", "403", "refund", "spinning", "权限"]
        assert whole.tenants[tenant].bm25.top(terms, 5) == in_parts.tenants[tenant].bm25.top(terms, 5)


def test_a_batch_of_short_texts_is_folded_whole():
    assert fold_parts(_batch([("IAM 403", "message")] * 50)) is None


def _hold_a_recall(precedence: RecallPrecedence, seconds: float) -> threading.Event:
    """A recall in flight on another thread for ``seconds`` or until the returned event is set."""
    started, end = threading.Event(), threading.Event()

    def recall() -> None:
        with precedence.recalling():
            started.set()
            end.wait(seconds)

    threading.Thread(target=recall, daemon=True).start()
    assert started.wait(5)
    return end


def test_a_fold_gives_way_until_the_recalls_in_flight_ended():
    precedence = RecallPrecedence()
    assert precedence.give_way(1.0) == 0.0  # no recall: no wait
    _hold_a_recall(precedence, 0.2)
    t = time.perf_counter()
    waited = precedence.give_way(5.0)
    assert 0.1 < waited <= time.perf_counter() - t < 2.0  # until it ended, not the patience
    assert precedence.in_flight() == 0 and precedence.waited_s == pytest.approx(waited)


def test_a_fold_waits_at_most_its_patience_and_not_for_later_recalls():
    precedence = RecallPrecedence()
    _hold_a_recall(precedence, 1.0)
    assert 0.04 <= precedence.give_way(0.05) < 0.5  # a recall that lasts: the fold goes on
    with precedence.recalling():
        waiter = threading.Thread(target=precedence.give_way, args=(5.0,))
        waiter.start()
        time.sleep(0.05)
        with precedence.recalling():  # started after the fold began to wait: not waited for
            pass
    waiter.join(0.5)
    assert not waiter.is_alive()


def test_a_brains_long_text_waits_for_another_tenants_recall_in_flight(tmp_path):
    with Brain.open(tmp_path / "brain", embedder="none") as brain:
        brain.perceive(tenant="quiet", agent="a1", text="IAM submit gives 403")
        before = RECALLS.waited_s
        end = _hold_a_recall(RECALLS, 10.0)  # outlasts the fold: each of its parts waits its patience
        try:
            t = time.perf_counter()
            brain.perceive_many([{"tenant": "noisy", "agent": "a9", "text": long_text()} for _ in range(2)])
            spent = time.perf_counter() - t
            # two parts in the index and two texts in the learner, each waiting GIVE_WAY_S at least once
            assert RECALLS.waited_s - before >= 4 * GIVE_WAY_S * 0.8
            assert spent < 5.0
            waited = RECALLS.waited_s
            brain.perceive_many([{"tenant": "noisy", "agent": "a9", "text": "a short text does not wait"}] * 50)
            assert RECALLS.waited_s == waited
        finally:
            end.set()  # the process's other tests must not meet it


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(st.text(max_size=40), st.lists(st.sampled_from(["ok", "Thanks", "thank you", "收到", "!", " ", "。",
                                                                   "\n", "İ", "ΟΚ", "好的", "x"]),
                                                  max_size=12).map("".join)))
def test_phatic_reads_a_prefix_and_decides_as_the_whole_text_did(text):
    normalised = write_gate._PUNCT.sub(" ", text.lower()).strip()
    assert write_gate._phatic(text) == (not normalised or normalised in write_gate._PHATIC)
    assert write_gate._phatic("ok " + long_text()) is False
    assert write_gate._phatic("!" * 70_000 + " thanks " + "。" * 5) is True


def test_a_pause_gives_way_only_inside_a_long_texts_fold():
    precedence = RecallPrecedence()
    _hold_a_recall(precedence, 1.0)
    t = time.perf_counter()
    precedence.pause()  # the common event's fold: no wait
    assert time.perf_counter() - t < 0.03 and precedence.waited_s == 0.0
    with precedence.long_fold():
        precedence.pause()
    assert precedence.waited_s >= GIVE_WAY_S * 0.8
