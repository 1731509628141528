"""An agent loop over MCP: the MCP client library spawns ``hindbrain mcp`` (stdio) and calls
its tools as a coding agent's host would: perceive what went wrong, learn the lesson, recall
before the next step, report the outcome.

    python examples/mcp/mcp_agent.py ./brain

A host such as Claude Code or Cursor does the same from ``examples/mcp/mcp_servers.json``.
"""

from __future__ import annotations

import sys

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

SITUATION = {"system": "IAM", "action": "submit change", "actual": "no response"}


async def main(home: str) -> None:
    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "hindbrain.cli", "--home", home, "mcp", "--tenant", "acme"])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        print("tools:", ", ".join(sorted(tool.name for tool in (await session.list_tools()).tools)))

        async def call(tool: str, **arguments):
            result = await session.call_tool(tool, arguments)
            if result.is_error:
                raise RuntimeError(f"{tool}: {result.content}")
            return result.structured_content

        await call("perceive", agent="coder-1", task="t-1", kind="anomaly", text="clicked submit, nothing happened",
                   **SITUATION)
        lesson = (await call("learn", agent="coder-1", task="t-1", condition="submit does nothing in IAM",
                             action="switch to the admin account", reason="permission operations need admin"))["result"]
        recalled = await call("recall", agent="coder-1", task="t-2", situation=SITUATION, trigger="anomaly")
        print(recalled["prompt"])
        applied = [item["id"] for item in recalled["items"] if item["id"] == lesson]
        await call("outcome", agent="coder-1", task="t-2", recall_id=recalled["recall_id"], applied=applied,
                   success=True)
        print(f"outcome reported: applied {applied or 'nothing'}, success")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1] if len(sys.argv) > 1 else "./brain")
