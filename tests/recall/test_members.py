"""An ensemble's members get an equal say per recall (``recall.members``), in the engine too."""

import numpy as np
import pytest

from hindbrain import Brain
from hindbrain.recall import embed
from hindbrain.recall.embed import EnsembleEmbedder, normalize_rows
from hindbrain.recall.members import MemberScale, member_views


class Keyed:
    """Rows from a fixed table of keywords: a text's row is the sum of its keywords' rows, so a
    test can arrange each member's cosines exactly."""

    def __init__(self, name: str, table: dict[str, list[float]]):
        self.name, self.table = name, table
        self.dim = len(next(iter(table.values())))

    def _rows(self, texts):
        rows = [np.sum([self.table[w] for w in t.split() if w in self.table] or [np.zeros(self.dim)], axis=0)
                for t in texts]
        return normalize_rows(np.array(rows, dtype=np.float32).reshape(len(texts), self.dim))

    embed_queries = embed_passages = _rows


def test_a_masked_query_scores_one_members_cosine_scaled():
    a = Keyed("a", {"x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]})
    b = Keyed("b", {"x": [1, 0], "y": [1, 1], "z": [0, 1]})
    ens = EnsembleEmbedder(a, b, weights=(1.0, 3.0))
    assert ens.slices == [slice(0, 3), slice(3, 5)]
    q, p = ens.embed_queries(["x y"]), ens.embed_passages(["x", "y", "z"])
    for member, part, share in zip((a, b), member_views(q, ens.slices), (0.25, 0.75), strict=True):
        cos = member.embed_queries(["x y"]) @ member.embed_passages(["x", "y", "z"]).T
        assert np.allclose(p @ part[0], share * cos[0], atol=1e-6)


def test_a_member_whose_cosines_spread_little_still_gets_an_equal_say():
    wide = np.array([0.9, 0.1, 0.5], dtype=np.float32)  # decides a fixed mix alone
    narrow = np.array([0.50, 0.52, 0.56], dtype=np.float32)  # prefers document 2, by a small margin
    mixed = (wide + narrow) / 2
    assert int(np.argmax(mixed)) == 0
    scale = MemberScale.fit([wide, narrow], mixed)
    combined = scale.combine([wide, narrow], mixed)
    assert int(np.argmax(combined)) == 2 and int(np.argmin(combined)) == 1
    # back on the plain mix's scale: its mean, in units of its spread
    assert combined.mean() == pytest.approx(mixed.mean(), abs=1e-6)
    # members that agree give the plain mix back
    same = MemberScale.fit([wide, 2 * wide], 1.5 * wide).combine([wide, 2 * wide], 1.5 * wide)
    assert np.allclose(same, 1.5 * wide, atol=1e-6)


def test_a_member_without_spread_is_left_out_and_nan_stays_nan():
    wide = np.array([0.9, 0.1, 0.5, np.nan], dtype=np.float32)
    flat = np.array([0.4, 0.4, 0.4, np.nan], dtype=np.float32)
    mixed = (wide + flat) / 2
    combined = MemberScale.fit([wide, flat], mixed).combine([wide, flat], mixed)
    assert list(np.argsort(-combined[:3])) == [0, 2, 1] and np.isnan(combined[3])
    nothing = MemberScale.fit([flat[:3], flat[:3]], flat[:3])
    assert np.array_equal(nothing.combine([flat[:3], flat[:3]], flat[:3]), flat[:3])


def test_later_candidates_go_on_the_first_candidates_scale():
    a = np.array([0.9, 0.1, 0.5, 0.3], dtype=np.float32)
    b = np.array([0.50, 0.52, 0.56, 0.51], dtype=np.float32)
    scale = MemberScale.fit([a[:3], b[:3]], ((a + b) / 2)[:3])
    whole = scale.combine([a, b], (a + b) / 2)
    later = scale.combine([a[3:], b[3:]], ((a + b) / 2)[3:])
    assert later[0] == pytest.approx(whole[3])


@pytest.fixture
def ensemble_brain(tmp_path, monkeypatch):
    """A brain whose semantic model is a two-member ensemble with arranged cosines: member
    ``wide`` prefers the kite memory by far, member ``narrow`` prefers the cake memory by a
    margin that is large for its own spread; the fixed 1:1 mix follows ``wide``."""
    wide = Keyed("wide", {"kite": [1.0, 0.0, 0.0], "cake": [0.0, 1.0, 0.0], "rain": [0.0, 0.0, 1.0],
                          "party": [0.9, 0.3, 0.3]})
    # cosines to "party": kite 0.990, cake 0.998, rain 0.994
    narrow = Keyed("narrow", {"kite": [1.0, 0.1425], "cake": [1.0, 0.0633], "rain": [1.0, 0.1097],
                              "party": [1.0, 0.0]})
    monkeypatch.setitem(embed._FACTORIES, "keyed-pair", lambda: EnsembleEmbedder(wide, narrow))
    monkeypatch.setenv("HINDBRAIN_EMBEDDER", "keyed-pair")
    monkeypatch.setenv("HINDBRAIN_EMBED_WORKERS", "0")
    with Brain.open(tmp_path / "brain") as brain:
        ids = {w: brain.perceive(tenant="t", kind="observation", text=w) for w in ("kite", "cake", "rain")}
        brain.index.semantic.wait()
        yield brain, ids


def test_the_engine_gives_each_member_an_equal_say(ensemble_brain):
    brain, ids = ensemble_brain
    dialogue = '<Ann>: "party"\n<Assistant>: "oh?"\n<Ann>: "party"'
    fixed = dict(layers=["episodic"], k=3, budget_tokens=100000)
    on = [i.id for i in brain.recall(tenant="t", query=dialogue, **fixed).items]
    brain.engine.equal_members = False
    off = [i.id for i in brain.recall(tenant="t", query=dialogue, **fixed).items]
    assert off[0] == ids["kite"]  # the fixed mix: the wide member decides
    assert on[0] == ids["cake"]  # each member standardised: the narrow one's clear preference counts
