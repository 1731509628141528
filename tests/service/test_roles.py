"""Keys with roles (design.md §issue-19): every ``/v1`` route × every role through a real app on loopback,
revocation on the very next request for each role, key management over HTTP bound to its
tenant, an old key store migrated, the MCP server's refusal of a key without the agent's rights."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from http_helpers import call, serving
from mcp.server.mcpserver.exceptions import ToolError

from hindbrain.cli import main
from hindbrain.service import roles
from hindbrain.service.keys import MIGRATIONS, KeyStore
from hindbrain.service.mcp import StartupError, build_server, stdio_tenant

AGENT, ANALYST, ADMIN = "agent", "analyst", "admin"
# The split, written out here rather than read from roles.ROUTES, so that a change of
# the table has to be a change of this test too: (method, route) → the roles it admits.
ADMITS = {
    ("POST", "/v1/perceive"): {AGENT, ADMIN},
    ("POST", "/v1/perceive/batch"): {AGENT, ADMIN},
    ("POST", "/v1/learn"): {AGENT, ADMIN},
    ("POST", "/v1/recall"): {AGENT, ADMIN},
    ("POST", "/v1/outcome"): {AGENT, ADMIN},
    ("POST", "/v1/store/items"): {AGENT, ADMIN},
    ("POST", "/v1/sql"): {ANALYST, ADMIN},
    ("GET", "/v1/views"): {ANALYST, ADMIN},
    ("GET", "/v1/explain/{item_id}"): {ANALYST, ADMIN},
    ("GET", "/v1/traits"): {ANALYST, ADMIN},
    ("POST", "/v1/approve"): {ADMIN},
    ("POST", "/v1/invalidate"): {ADMIN},
    ("POST", "/v1/hindsight"): {ADMIN},
    ("POST", "/v1/keys"): {ADMIN},
    ("GET", "/v1/keys"): {ADMIN},
    ("DELETE", "/v1/keys/{key_id}"): {ADMIN},
}
NEEDS = {AGENT: "an agent", ANALYST: "an analyst", ADMIN: "an admin"}


def requests(fragment_id: str, victim_id: str) -> dict[tuple[str, str], tuple[str, dict | None, int]]:
    """(method, route) → (path, body, the status once the role admits it). Every body is valid,
    so an admitted request reaches the brain (approve answers 422 there: the unit is no proposed
    trait, which only the brain can tell)."""
    return {
        ("POST", "/v1/perceive"): ("/v1/perceive", {"text": "the matrix perceives"}, 200),
        ("POST", "/v1/perceive/batch"): ("/v1/perceive/batch", {"events": [{"text": "a batch of one"}]}, 200),
        ("POST", "/v1/learn"): ("/v1/learn", {"condition": "the matrix runs", "action": "check each cell"}, 200),
        ("POST", "/v1/recall"): ("/v1/recall", {"query": "the matrix"}, 200),
        ("POST", "/v1/outcome"): ("/v1/outcome", {"success": True}, 200),
        ("POST", "/v1/store/items"): ("/v1/store/items", {"prefix": ["acme"]}, 200),
        ("POST", "/v1/sql"): ("/v1/sql", {"query": "SELECT count() AS n FROM events"}, 200),
        ("GET", "/v1/views"): ("/v1/views", None, 200),
        ("GET", "/v1/explain/{item_id}"): (f"/v1/explain/{fragment_id}", None, 200),
        ("GET", "/v1/traits"): ("/v1/traits", None, 200),
        ("POST", "/v1/approve"): ("/v1/approve", {"fragment_id": fragment_id, "approver": "ops"}, 422),
        ("POST", "/v1/invalidate"): ("/v1/invalidate", {"fragment_id": fragment_id, "reason": "exporter v2"}, 200),
        ("POST", "/v1/hindsight"): ("/v1/hindsight?when_due=true", None, 200),
        ("POST", "/v1/keys"): ("/v1/keys", {"role": "agent", "label": "made by the matrix"}, 201),
        ("GET", "/v1/keys"): ("/v1/keys", None, 200),
        ("DELETE", "/v1/keys/{key_id}"): (f"/v1/keys/{victim_id}", None, 200),
    }


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    home = tmp_path_factory.mktemp("roles")
    with serving(home) as (base, brain, keys):
        key = {role: keys.create("acme", f"the {role}", role) for role in roles.ROLES}
        key["globex"] = keys.create("globex", "another tenant's admin", ADMIN)
        yield base, brain, keys, key, home


def _id(key: str) -> str:
    return key.split("_")[1]


def test_every_route_admits_the_roles_of_the_table_and_refuses_the_others_with_403(api):
    base, brain, keys, key, _ = api
    status, doc, _ = call(base, "GET", "/openapi.json", key=key[AGENT])
    served = {(method.upper(), path) for path, ops in doc["paths"].items() if path.startswith("/v1/") for method in ops}
    assert served == set(ADMITS), "a /v1 route without a row here (or a row without a route)"
    assert {route for _, route in served} <= set(roles.ROUTES), "every route is placed in roles.ROUTES by name"
    fragment = call(base, "POST", "/v1/learn", {"condition": "the nightly export stalls", "action": "restart it"},
                    key[AGENT])[1]["fragment_id"]
    victim = keys.create("acme", "to be revoked by the matrix")
    table = requests(fragment, _id(victim))
    before = brain.stats()["log_records"], keys.list()

    for (method, route), (path, body, _) in table.items():
        assert call(base, method, path, body)[0] == 401, route  # no key: 401, as before roles
        for role in set(roles.ROLES) - ADMITS[method, route]:
            status, answer, _ = call(base, method, path, body, key[role])
            assert status == 403, (route, role, answer)
            need = NEEDS[min(ADMITS[method, route], key=list(roles.ROLES).index)]
            assert f"{route} needs {need} key" in answer["detail"] and f"is {NEEDS[role]} key" in answer["detail"]
    assert (brain.stats()["log_records"], keys.list()) == before, "a refused request wrote something"

    for (method, route), (path, body, ok) in table.items():
        for role in sorted(ADMITS[method, route]):
            status, answer, _ = call(base, method, path, body, key[role])
            assert status == ok, (route, role, answer)
            if ok == 422:
                assert answer["detail"][0]["loc"] == ["body", "fragment_id"]
    assert keys.resolve(victim) is None  # the admin's DELETE revoked it


def test_revocation_takes_effect_on_the_very_next_request_for_each_role(api, capsys):
    base, _, _, _, home = api
    other = KeyStore(home)  # another connection, as `hindbrain keys revoke` in another process
    checks = {AGENT: [("POST", "/v1/recall", {"query": "x"}), ("POST", "/v1/outcome", {"success": False})],
              ANALYST: [("POST", "/v1/sql", {"query": "SELECT 1 AS one"}), ("GET", "/v1/traits", None)],
              ADMIN: [("GET", "/v1/keys", None), ("POST", "/v1/hindsight?when_due=true", None)]}
    for role, routes in checks.items():
        for revoke_by in ("store", "cli"):
            doomed = other.create("acme", f"{role} revoked by {revoke_by}", role)
            assert [call(base, m, p, b, doomed)[0] for m, p, b in routes] == [200, 200], role
            if revoke_by == "store":
                assert other.revoke(_id(doomed))
            else:
                assert main(["--home", str(home), "keys", "revoke", _id(doomed)]) == 0
            assert [call(base, m, p, b, doomed)[0] for m, p, b in routes] == [401, 401], (role, revoke_by)
    capsys.readouterr()


def test_an_admin_makes_lists_and_revokes_keys_of_its_own_tenant_only(api):
    base, _, keys, key, _ = api
    status, made, _ = call(base, "POST", "/v1/keys", {"role": "analyst", "label": "the dashboard"}, key[ADMIN])
    assert status == 201 and made["tenant"] == "acme" and made["role"] == "analyst"
    assert keys.resolve(made["key"]).tenant == "acme" and _id(made["key"]) == made["key_id"]
    assert call(base, "POST", "/v1/sql", {"query": "SELECT 1 AS one"}, made["key"])[0] == 200
    assert call(base, "POST", "/v1/perceive", {"text": "an analyst writes"}, made["key"])[0] == 403

    status, listed, _ = call(base, "GET", "/v1/keys", key=key[ADMIN])
    assert status == 200 and [k["key_id"] for k in listed["keys"]] == [k.key_id for k in keys.list("acme")]
    assert {k["key_id"]: k["role"] for k in listed["keys"]}[made["key_id"]] == "analyst"
    assert made["key"].split("_", 2)[2] not in str(listed) and "key" not in listed["keys"][0]

    globex = _id(key["globex"])
    assert call(base, "DELETE", f"/v1/keys/{globex}", key=key[ADMIN])[0] == 404  # another tenant's: never revoked
    assert call(base, "DELETE", "/v1/keys/000000000000", key=key[ADMIN])[0] == 404
    assert keys.resolve(key["globex"]) is not None and call(base, "GET", "/v1/keys", key=key["globex"])[0] == 200
    assert globex not in str(listed)

    status, body, _ = call(base, "POST", "/v1/keys", {"role": "admin", "tenant": "globex"}, key[ADMIN])
    assert status == 422 and body["detail"][0]["loc"] == ["body", "tenant"]  # the key decides the tenant
    status, body, _ = call(base, "POST", "/v1/keys", {"role": "root"}, key[ADMIN])
    assert status == 422 and body["detail"][0]["loc"] == ["body", "role"]
    assert call(base, "POST", "/v1/keys", {}, key[ADMIN])[1]["role"] == "agent"  # least privilege by default

    status, body, _ = call(base, "DELETE", f"/v1/keys/{made['key']}", key=key[ADMIN])  # the secret in a URL
    assert status == 422 and body["detail"][0]["loc"] == ["path", "key_id"] and keys.resolve(made["key"])
    assert call(base, "DELETE", f"/v1/keys/{made['key_id']}", key=key[ADMIN])[0] == 200
    assert call(base, "POST", "/v1/sql", {"query": "SELECT 1 AS one"}, made["key"])[0] == 401
    assert call(base, "DELETE", f"/v1/keys/{made['key_id']}", key=key[ADMIN])[0] == 404  # no live key any more


OLD_SCHEMA = MIGRATIONS[0]  # keys.sqlite as hindbrain wrote it before roles


def test_an_old_key_store_is_migrated_and_its_keys_keep_every_right_as_admin(tmp_path):
    old, fresh = tmp_path / "old", tmp_path / "fresh"
    old.mkdir()
    made = KeyStore(fresh).create("acme")  # a key of today's store, to copy into the old one
    key_id, secret_sha256 = sqlite3.connect(fresh / "keys.sqlite").execute(
        "SELECT key_id, secret_sha256 FROM keys").fetchone()
    db = sqlite3.connect(old / "keys.sqlite")
    db.execute(OLD_SCHEMA)
    db.execute("INSERT INTO keys VALUES (?, 'acme', ?, 'before roles', 1, NULL)", (key_id, secret_sha256))
    db.commit()
    db.close()

    store = KeyStore(old)
    live = store.resolve(made)
    assert live is not None and (live.tenant, live.role) == ("acme", ADMIN)
    assert [(k.key_id, k.role, k.label) for k in store.list()] == [(key_id, ADMIN, "before roles")]
    assert store.resolve(store.create("acme")).role == AGENT  # new keys: least privilege

    def schema(home):
        db = sqlite3.connect(home / "keys.sqlite")
        return db.execute("SELECT sql FROM sqlite_master WHERE name = 'keys'").fetchone(), \
            db.execute("PRAGMA user_version").fetchone()

    assert schema(old) == schema(fresh) == (schema(fresh)[0], (len(MIGRATIONS),))
    assert KeyStore(old).resolve(made).role == ADMIN  # opening again migrates nothing twice

    db = sqlite3.connect(old / "keys.sqlite")
    db.execute("PRAGMA user_version = 99")
    db.commit()
    with pytest.raises(RuntimeError, match="newer than this hindbrain"):
        KeyStore(old)


def test_the_table_refuses_unknown_roles_and_closes_unplaced_routes(tmp_path):
    assert roles.allows(ADMIN, "/v1/some-new-route") and not roles.allows(AGENT, "/v1/some-new-route")
    assert not roles.allows("root", "/v1/recall") and not roles.allows("", "/v1/recall")
    assert roles.refusal(AGENT, "/v1/sql") == "/v1/sql needs an analyst key (or an admin key); this API key is an " \
                                              "agent key"
    assert roles.refusal(ANALYST, "/v1/approve") == "/v1/approve needs an admin key; this API key is an analyst key"
    with pytest.raises(ValueError, match="field 'role'"):
        KeyStore(tmp_path).create("acme", role="root")


def test_the_mcp_stdio_server_takes_agent_and_admin_keys_only(tmp_path):
    keys = KeyStore(tmp_path)
    assert stdio_tenant(None, keys.create("acme", role=AGENT), keys) == "acme"
    assert stdio_tenant(None, keys.create("acme", role=ADMIN), keys) == "acme"
    with pytest.raises(StartupError, match="/mcp needs an agent key .* this API key is an analyst key"):
        stdio_tenant(None, keys.create("acme", role=ANALYST), keys)


def test_a_key_bound_to_an_agent_acts_as_that_agent_only(api):
    """Fleet verification counts agents by name: a stolen agent key must not claim a second one
    (docs/security.md). A bound key's requests that name no agent act as its agent."""
    base, brain, keys, key, _ = api
    status, made, _ = call(base, "POST", "/v1/keys", {"role": "agent", "agent": "bot-7"}, key[ADMIN])
    assert status == 201 and made["agent"] == "bot-7"
    bot7 = made["key"]
    for path, body in (("/v1/perceive", {"text": "as bot-8", "agent": "bot-8"}),
                       ("/v1/recall", {"query": "anything", "agent": "bot-8"}),
                       ("/v1/learn", {"condition": "c", "action": "a", "agent": "bot-8"}),
                       ("/v1/outcome", {"success": True, "agent": "bot-8"}),
                       ("/v1/perceive/batch", {"events": [{"text": "fine", "agent": "bot-7"},
                                                          {"text": "not fine", "agent": "bot-8"}]})):
        status, answer, _ = call(base, "POST", path, body, bot7)
        assert status == 403 and "acts as agent 'bot-7' only, not as 'bot-8'" in answer["detail"], path
    status, answer, _ = call(base, "POST", "/v1/perceive", {"text": "the bound key's own words"}, bot7)
    [row] = brain.sql("SELECT agent FROM events WHERE event_id = {e:String}", {"e": answer["event_id"]})
    assert status == 200 and row["agent"] == "bot-7"
    assert call(base, "POST", "/v1/outcome", {"success": True, "agent": "bot-7"}, bot7)[0] == 200
    assert [k.agent for k in keys.list("acme") if k.key_id == made["key_id"]] == ["bot-7"]
    assert call(base, "POST", "/v1/perceive", {"text": "unbound", "agent": "bot-8"}, key[AGENT])[0] == 200


def test_the_mcp_tools_of_an_agent_bound_key_act_as_its_agent(api):
    _, brain, *_ = api  # one chDB engine per process: the module's brain (its server is idle here)
    server = build_server(brain, "acme", agent="bot-7")
    with pytest.raises(ToolError, match="acts as agent 'bot-7' only, not as 'bot-8'"):
        asyncio.run(server.call_tool("perceive", {"text": "an MCP perception as another", "agent": "bot-8"}))
    asyncio.run(server.call_tool("perceive", {"text": "an MCP perception as itself"}))
    assert brain.sql("SELECT agent, text FROM events WHERE text LIKE 'an MCP perception%'") == \
        [{"agent": "bot-7", "text": "an MCP perception as itself"}]
