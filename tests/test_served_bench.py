"""``bench/served.py``'s request bodies: distinct queries (the default) never repeat, so no server
process answers one from its query cache, and each is a valid recall; cycled ones are rounds five to nine's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from by_path import module_at

from hindbrain.schemas.api import RecallInput, validated

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def served():
    return module_at(BENCH / "served.py", "bench_served")


def test_distinct_bodies_never_repeat_and_are_valid_recalls(served):
    bodies = served.recall_bodies("distinct", seconds=2)
    assert len(bodies) == 20 + 500 * 2  # enough for 500 recalls/s after the warm-up ones
    assert len({json.dumps(b, sort_keys=True, ensure_ascii=False) for b in bodies}) == len(bodies)
    texts = [b.get("query") or b["situation"]["actual"] for b in bodies]
    assert len(set(texts)) == len(texts)  # the query vector's text differs too, not only the body
    assert {"query" in b for b in bodies} == {True, False}  # api.py's questions and situations both
    for body in bodies[:50]:
        validated(RecallInput, "recall", tenant="bench", **body)


def test_cycled_bodies_are_the_old_300(served):
    bodies = served.recall_bodies("cycled", seconds=8)
    assert len(bodies) == 300
    assert len({json.dumps(b, sort_keys=True, ensure_ascii=False) for b in bodies}) < 300  # they repeat
