"""``TenantIndex.visible_mask`` keeps each (layers, agent)'s mask, read-only, until the columns it is
made of change: a new document, a known one's retirement (a stored item's newer version), its share
(private → every agent's) or its move to the identity layer (an approved trait), a new agent. After
every such change the kept mask equals one made from scratch, for every agent and layer set asked."""

from __future__ import annotations

import numpy as np
import pytest

from hindbrain import Brain

ASKED = [(None, None), (None, "a1"), (None, "a2"), (None, "a3"), (["episodic"], "a1"), (["identity"], "a2"),
         (["episodic", "identity"], None)]
STORED = {"store_namespace": "ns"}


def made_anew(tenant, layers, agent):
    return tenant._live(tenant._visible(layers, agent))


def assert_kept_masks_are_current(tenant) -> None:
    for layers, agent in ASKED:
        kept, fresh = tenant.visible_mask(layers, agent), made_anew(tenant, layers, agent)
        if fresh is None:
            assert kept is None, (layers, agent)
            continue
        assert kept is not None and not kept.flags.writeable, (layers, agent)
        assert np.array_equal(kept, fresh), (layers, agent)
        assert tenant.visible_mask(layers, agent) is kept  # unchanged columns: the same mask, not made again


@pytest.fixture
def brain(tmp_path):
    with Brain.open(tmp_path, embedder="none") as brain:
        yield brain


def test_each_change_of_the_columns_makes_the_kept_masks_anew(brain):
    ids = brain.perceive_many([
        {"tenant": "t", "agent": "a1", "text": "IAM submit gives 403 forbidden"},
        {"tenant": "t", "agent": "a2", "text": "the VPN gateway drops the session"},
        {"tenant": "t", "agent": "a1", "text": "prefers bullet points", "scope": {**STORED, "store_key": "k"}},
    ])
    tenant = brain.index.tenants["t"]
    assert_kept_masks_are_current(tenant)
    brain.perceive(tenant="t", agent="a2", text="billing export timed out")  # a new document
    assert_kept_masks_are_current(tenant)
    brain.perceive(tenant="t", agent="a1", text="prefers numbered lists", scope={**STORED, "store_key": "k"})
    assert tenant.retired == 1  # the older version retired
    assert_kept_masks_are_current(tenant)
    private = ids[0]
    before = tenant.visible_mask(None, "a2")
    tenant.share(private)  # a1's event becomes every agent's
    assert_kept_masks_are_current(tenant)
    assert tenant.visible_mask(None, "a2")[tenant.by_id.get(private)] and not before[tenant.by_id.get(private)]
    tenant.set_state(ids[1], "active", None, rung="trait")  # to the identity layer
    assert_kept_masks_are_current(tenant)
    assert tenant.visible_mask(["identity"], "a2")[tenant.by_id.get(ids[1])]
    brain.perceive(tenant="t", agent="a3", text="a third agent's first event")  # a new agent's code
    assert_kept_masks_are_current(tenant)


def test_a_recall_does_not_change_the_kept_mask(brain):
    brain.perceive_many([{"tenant": "t", "agent": f"a{n % 2 + 1}", "text": f"IAM submit gives 403, case {n}"}
                         for n in range(30)])
    tenant = brain.index.tenants["t"]
    first = brain.recall(tenant="t", agent="a1", query="IAM 403")
    kept = tenant.visible_mask(None, "a1")
    again = brain.recall(tenant="t", agent="a1", query="IAM 403")
    assert [i.id for i in again.items] == [i.id for i in first.items]
    assert tenant.visible_mask(None, "a1") is kept and np.array_equal(kept, made_anew(tenant, None, "a1"))
