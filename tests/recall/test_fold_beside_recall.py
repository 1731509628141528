"""A recall beside a tenant's fold: the fold numbers and posts a batch (``TenantIndex._number``) before
its rows are in the document table, so for a moment the lexical index knows documents the table does
not hold. A recall in that moment found them (by BM25, by a graph or expansion link) and raised
``IndexError`` reading them (bench/log_lock.py: a looping recall beside a looping ``perceive_many``,
2 runs in 6). The test arranges that moment instead of racing for it."""

from __future__ import annotations

import pytest

from hindbrain import Brain
from hindbrain.recall.documents import LAYER_CODE


@pytest.fixture
def brain(tmp_path):
    with Brain.open(tmp_path, embedder="none") as brain:
        yield brain


def posted_not_held(tenant, agent: str, text: str) -> int:
    """The fold's first half for one event: numbered and posted, its row not yet in the table."""
    return tenant._number([text], [[]], [LAYER_CODE["episodic"]], [tenant.agent_code(agent)])


@pytest.mark.parametrize("agents", [["a1"], ["a1", "a2"]], ids=["no mask", "a mask"])
def test_a_recall_does_not_read_documents_the_table_does_not_hold_yet(brain, agents):
    for agent in agents:
        brain.perceive_many([
            {"tenant": "t", "agent": agent, "text": "Parcel to Rotterdam late again, the Rotterdam depot is closed"},
            {"tenant": "t", "agent": agent, "text": "Rotterdam depot says the parcel scanner is broken"},
        ])
    tenant = brain.index.tenants["t"]
    held = len(tenant.docs)
    no = posted_not_held(tenant, "a1", "Rotterdam parcel late: the depot scanner again")
    assert no == held and len(tenant.bm25) == held + 1  # the moment: posted, past the table
    for agent in agents:
        result = brain.recall(tenant="t", agent=agent, query="why is the Rotterdam parcel late?", explain=True)
        assert result.items, agent
        assert all("scanner again" not in item.text for item in result.items)
    found = len(tenant.bm25.docs_with("scanner"))
    tenant.bm25.publish()  # what the fold does once the row is in: here, without one, a search would find it
    assert len(tenant.bm25.docs_with("scanner")) == found + 1
