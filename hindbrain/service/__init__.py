"""The service surface for fleets (design.md §issue-8): API keys bound to tenants and roles, the HTTP API
(``hindbrain serve``) and the MCP server (``hindbrain mcp``), all over one ``Brain``."""
