"""Who may take what at the edge (design.md §issue-27, point 6): the rate per parsed key and per tenant, on
HTTP and MCP over HTTP (with request ids); ``/metrics`` and the API docs behind a key unless a
setting opens them; the docs load nothing from another host."""

from __future__ import annotations

import re
import urllib.request

from http_helpers import call, serving

from hindbrain.service.mcp import MCP_PATH, http_app


def test_the_rate_is_per_parsed_key_and_per_tenant(tmp_path):
    with serving(tmp_path, rate_limit=0.01, rate_burst=2, tenant_rate_limit=0.01, tenant_rate_burst=5) as \
            (base, _, keys):
        key, other = keys.create("acme", "one"), keys.create("acme", "two")
        # "Bearer" + n spaces + key, any case of the scheme: one key, one bucket
        statuses = [call(base, "POST", "/v1/recall", {"query": "q"},
                         headers={"Authorization": ("bearer" if n % 2 else "Bearer") + " " * n + key})[0]
                    for n in range(1, 21)]
        assert statuses == [200, 200] + [429] * 18
        status, body, headers = call(base, "POST", "/v1/recall", {"query": "q"}, other)
        assert status == 200  # another key has its own bucket ...
        assert [call(base, "POST", "/v1/recall", {"query": "q"}, keys.create("acme", f"minted {n}"))[0]
                for n in range(4)] == [200, 200, 429, 429]  # ... but the tenant's is shared by all its keys
        status, body, headers = call(base, "POST", "/v1/recall", {"query": "q"}, keys.create("acme", "late"))
        assert status == 429 and "per tenant" in body["detail"] and int(headers["Retry-After"]) >= 1
        elsewhere = keys.create("globex", "elsewhere")
        assert call(base, "POST", "/v1/recall", {"query": "q"}, elsewhere)[0] == 200
        # no live key: the peer's bucket (guessing keys, or sending another's key id with a wrong secret)
        guesses = [call(base, "POST", "/v1/recall", {"query": "q"}, f"{key[:16]}_guess-{n}")[0] for n in range(4)]
        assert guesses == [401, 401, 429, 429]
        assert call(base, "POST", "/v1/recall", {"query": "q"}, elsewhere)[0] == 200  # the guesses cost it nothing


def test_mcp_over_http_has_the_same_limits_and_request_ids(tmp_path):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "limits", "version": "1"}}}
    accept = {"Accept": "application/json, text/event-stream"}
    with serving(tmp_path, app_of=http_app, rate_limit=0.01, rate_burst=2) as (base, _, keys):
        key = keys.create("acme", "mcp")
        answers = [call(base, "POST", MCP_PATH, initialize, headers={
            **accept, "Authorization": "Bearer" + " " * n + key, "X-Request-ID": f"mcp-{n}"}) for n in (1, 2, 3)]
        assert [a[0] for a in answers] == [200, 200, 429]
        assert [a[2]["X-Request-ID"] for a in answers] == ["mcp-1", "mcp-2", "mcp-3"]
        assert "per API key" in answers[2][1]["detail"]
        assert call(base, "POST", MCP_PATH, b"x" * 100, headers={**accept, "Authorization": f"Bearer {key}",
                                                                 "Content-Length": str(17 << 20)})[0] in (413, 429)


def test_metrics_and_the_api_docs_need_a_key_unless_opened(tmp_path):
    with serving(tmp_path) as (base, _, keys):
        agent, admin = keys.create("acme", "a", "agent"), keys.create("acme", "b", "admin")
        for path in ("/metrics", "/docs", "/openapi.json"):
            assert call(base, "GET", path)[0] == 401, path
        assert call(base, "GET", "/metrics", key=agent)[0] == 403  # every tenant's counts: an admin's
        assert call(base, "GET", "/metrics", key=admin)[0] == 200
        assert call(base, "GET", "/openapi.json", key=agent)[0] == 200  # the API's description: any key
    with serving(tmp_path, public_metrics=True, public_docs=True) as (base, _, _):
        for path in ("/metrics", "/docs", "/openapi.json"):
            assert call(base, "GET", path)[0] == 200, path


def test_the_api_docs_load_nothing_from_another_host(tmp_path):
    with serving(tmp_path, public_docs=True) as (base, _, _):
        status, page, headers = call(base, "GET", "/docs")
        assert status == 200 and "SwaggerUIBundle" in page
        assert not re.search(r"https?://", page), "the page names another host: blank offline"
        assets = re.findall(r'(?:src|href)="([^"]+)"', page)
        assert {a.rsplit("/", 1)[1] for a in assets} == {"swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png"}
        for asset in assets:
            with urllib.request.urlopen(base + asset, timeout=30) as served:
                assert served.status == 200 and len(served.read()) > 300, asset
        assert "url: '/openapi.json'" in page and call(base, "GET", "/openapi.json")[0] == 200
