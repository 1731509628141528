"""The options of ``hindbrain mcp``, apart from the server so that building the CLI's parser
does not import the MCP SDK (~0.9 s on every ``hindbrain`` command)."""

from __future__ import annotations

import argparse

KEY_ENV = "HINDBRAIN_API_KEY"


def add_options(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``hindbrain mcp`` (shared by ``python -m hindbrain.service.mcp``)."""
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                        help="stdio (default: a client spawns the server) or http (streamable HTTP at /mcp)")
    parser.add_argument("--host", default="127.0.0.1", help="http: the address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="http: the port (default: 8765)")
    parser.add_argument("--tenant", help="stdio: the tenant the tools act for (or give an API key)")
    parser.add_argument("--api-key-env", default=KEY_ENV, metavar="VAR",
                        help=f"stdio: the environment variable holding an API key that names the tenant "
                             f"(default: {KEY_ENV}). Over http every request sends its own key: "
                             f"Authorization: Bearer <key>")
    return parser


def add_parser(sub) -> argparse.ArgumentParser:
    """Add the ``mcp`` subcommand to an argparse subparsers object; returns its parser."""
    return add_options(sub.add_parser("mcp", help="MCP server: recall, perceive, learn and outcome as tools for "
                                                  "coding agents (stdio, or streamable HTTP with API keys)"))


