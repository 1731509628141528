"""``TenantIndex.last_said`` forgets its least recently said thread past ``RECENT_THREADS`` (the split-directive
cue's memory): the read-ahead of ``_forget_oldest_thread`` (issue 28) forgets exactly the thread
``next(iter(last_said))`` named, whatever is said again meanwhile, and after a restored dict too."""

from __future__ import annotations

import random

import pytest

from hindbrain.recall import split_directives
from hindbrain.recall.tenant_index import TenantIndex


def _said(index: TenantIndex, thread: tuple, no: int, reference: dict) -> None:
    """What ``_judge_with_previous`` does to ``last_said``, to the index and to a plain-dict reference."""
    index.last_said.pop(thread, None)
    index.last_said[thread] = no
    if len(index.last_said) > split_directives.RECENT_THREADS:
        index._forget_oldest_thread()
    reference.pop(thread, None)
    reference[thread] = no
    if len(reference) > split_directives.RECENT_THREADS:
        del reference[next(iter(reference))]


@pytest.mark.parametrize("seed", range(4))
def test_the_read_ahead_forgets_the_thread_the_walk_would(seed, monkeypatch):
    monkeypatch.setattr(split_directives, "RECENT_THREADS", 50)
    monkeypatch.setattr(split_directives, "FORGET_AHEAD", 7)
    rng = random.Random(seed)
    index, reference = TenantIndex(), {}
    threads = [("a1", f"s{n}", rng.choice([None, "bob"])) for n in range(120)]
    for no in range(3000):
        # mostly recent threads said again (they move to the end, some inside the read-ahead), some new ones
        thread = rng.choice(threads[:60]) if rng.random() < 0.7 else rng.choice(threads)
        _said(index, thread, no, reference)
        if no == 1500:  # a snapshot's restore puts a new dict in place (recall.index_snapshot)
            index.last_said = dict(index.last_said)
        assert list(index.last_said.items()) == list(reference.items())


def test_a_thread_said_again_inside_the_read_ahead_is_kept(monkeypatch):
    monkeypatch.setattr(split_directives, "RECENT_THREADS", 3)
    index, reference = TenantIndex(), {}
    for no, name in enumerate(["a", "b", "c", "d"]):  # "a" forgotten; the read-ahead now holds b, c, d
        _said(index, (None, name, None), no, reference)
    _said(index, (None, "b", None), 4, reference)  # "b" said again: "c" is the oldest now
    _said(index, (None, "e", None), 5, reference)
    assert list(index.last_said) == list(reference) == [(None, n, None) for n in ("d", "b", "e")]
