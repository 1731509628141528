"""MCP tool arguments the tool does not take (round thirty, the eighth sweep, docs/security.md).

The MCP SDK builds each tool's argument model from the function's parameters and, by default, drops
a name it does not know: ``learn(seed=true)`` made an ordinary proposal and answered its id, and
``perceive(tenant="globex")`` wrote into the key's tenant, each as if the field had been heard. Over
HTTP the same bodies are a 422 naming the field; the tools now refuse them the same way, before the
brain is called, so nothing is written."""

from __future__ import annotations

import asyncio

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from hindbrain import Brain
from hindbrain.service.mcp import TOOLS, build_server

KNOWN = {  # the least each tool needs to be called
    "recall": {"query": "submit does nothing"},
    "perceive": {"text": "submit does nothing"},
    "learn": {"condition": "submit does nothing in IAM", "action": "switch to the admin account"},
    "outcome": {"success": True},
}
EXTRA = (  # what a caller might hope a tool hears: another tenant, an operator's grant, a verdict, a typo
    ("tenant", "globex"), ("seed", True), ("granted_by", "operator"), ("producer", "operator:embedded"),
    ("decision", "unit_verified"), ("Agent", "bot-2"), ("budget", 10),
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with Brain.open(tmp_path_factory.mktemp("brain"), embedder="none") as brain:
        yield brain, build_server(brain, "acme", agent="bot-1")


def _written(brain) -> tuple[int, int]:
    brain.runner.flush()
    return (brain.sql("SELECT count() AS n FROM events")[0]["n"],
            brain.sql("SELECT count() AS n FROM fragments")[0]["n"])


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize(("name", "value"), EXTRA)
def test_a_tool_refuses_an_argument_it_does_not_take_naming_it(server, tool, name, value):
    brain, mcp = server
    before = _written(brain)
    with pytest.raises(ToolError, match=rf"(?s){name}.*Extra inputs are not permitted"):
        asyncio.run(mcp.call_tool(tool, {**KNOWN[tool], name: value}))
    assert _written(brain) == before


@pytest.mark.parametrize("tool", TOOLS)
def test_a_tool_s_listed_schema_says_it_takes_no_other_argument_and_its_own_still_work(server, tool):
    brain, mcp = server
    [listed] = [t for t in asyncio.run(mcp.list_tools()) if t.name == tool]
    assert listed.input_schema.get("additionalProperties") is False
    result = asyncio.run(mcp.call_tool(tool, dict(KNOWN[tool])))
    assert not result.is_error
