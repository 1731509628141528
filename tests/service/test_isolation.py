"""Randomized tenant isolation over the real HTTP API: three tenants write look-alike memories
(each tagged with its own secret word), then random recalls, explains and SQL queries — many
of them asking for the *other* tenants' words and ids — must return the caller's rows only."""

from __future__ import annotations

import random

import pytest
from http_helpers import call, serving

from hindbrain.projections.views import VIEWS
from hindbrain.service.tenant_sql import DERIVED

TENANTS = ("acme", "globex", "initech")
SYSTEMS = ("IAM", "CRM", "Vault", "Billing")
TABLES = [v.table.name for v in VIEWS if "tenant" in dict(v.table.columns)] + list(DERIVED)
# Views that echo what the caller itself sent (its recall queries name the others' words on purpose).
ECHOES = {"recalls", "dead_letters"}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    rng = random.Random(20261201)
    with serving(tmp_path_factory.mktemp("isolation")) as (base, brain, keys):
        key = {t: keys.create(t, role="admin") for t in TENANTS}  # writes, then reads by SQL and explain
        owner: dict[str, str] = {}  # every id written → its tenant
        for tenant in TENANTS:
            secret = f"secret{tenant}"
            for n in range(12):
                system = rng.choice(SYSTEMS)
                _, body, _ = call(base, "POST", "/v1/perceive", {
                    "agent": f"{tenant}-agent-{n % 3}", "task": f"{tenant}-t{n}", "kind": "anomaly", "system": system,
                    "text": f"{system} submit does nothing {secret} case {n}"}, key[tenant])
                owner[body["event_id"]] = tenant
                _, body, _ = call(base, "POST", "/v1/learn", {
                    "condition": f"{system} submit does nothing {secret} {n}", "action": "switch to the admin account",
                    "event_ids": list(owner)[-1:]}, key[tenant])
                owner[body["fragment_id"]] = tenant
        yield base, brain, key, owner, rng


def test_no_recall_ever_returns_another_tenants_memory(fleet):
    base, _, key, owner, rng = fleet
    for _ in range(60):
        tenant, other = rng.sample(TENANTS, 2)
        query = rng.choice([f"submit does nothing secret{other}", f"{rng.choice(SYSTEMS)} submit secret{other}",
                            "switch to the admin account", f"case {rng.randrange(12)} secret{tenant}"])
        body = {"query": query, "budget_tokens": rng.choice([100, 400, 2000]), "k": rng.choice([None, 3, 20])}
        body["agent"] = rng.choice([None, f"{tenant}-agent-1", f"{other}-agent-1"])
        status, pack, _ = call(base, "POST", "/v1/recall", {k: v for k, v in body.items() if v is not None},
                               key[tenant])
        assert status == 200
        returned = [i["id"] for i in pack["items"]] + [c["id"] for c in pack["cut"]]
        assert all(owner.get(i, tenant) == tenant for i in returned), (tenant, query)
        assert f"secret{other}" not in pack["prompt"]


def test_no_explain_ever_returns_another_tenants_records(fleet):
    base, _, key, owner, rng = fleet
    ids = sorted(owner)
    for item in rng.sample(ids, 30):
        for tenant in TENANTS:
            status, body, _ = call(base, "GET", f"/v1/explain/{item}", key=key[tenant])
            assert status == 200
            tenants = {e["record"]["envelope"]["tenant"] for e in body["chain"]}
            assert tenants <= {tenant}
            assert bool(body["chain"]) == (owner[item] == tenant)  # one's own ids explain; others' say nothing


def test_no_sql_query_ever_returns_another_tenants_rows(fleet):
    base, _, key, _, rng = fleet
    templates = [
        "SELECT * FROM {t}", "SELECT * FROM {t} FINAL", "SELECT tenant, count() AS n FROM {t} GROUP BY tenant",
        "SELECT * FROM (SELECT * FROM {t}) AS x", "SELECT * FROM {t} WHERE tenant != '{me}'",
        "SELECT * FROM {t} AS a LEFT JOIN {u} AS b ON a.tenant = b.tenant LIMIT 50",
        "SELECT tenant FROM {t} UNION ALL SELECT tenant FROM {u}",
        "SELECT * FROM {t} WHERE tenant IN (SELECT tenant FROM {u})",
        "WITH x AS (SELECT * FROM {t}) SELECT * FROM x",
    ]
    for _ in range(60):
        tenant = rng.choice(TENANTS)
        t, u = rng.choice(TABLES), rng.choice(TABLES)
        sql = rng.choice(templates).format(t=t, u=u, me=tenant)
        status, body, _ = call(base, "POST", "/v1/sql", {"query": sql}, key[tenant])
        assert status == 200, (sql, body)
        for row in body["rows"]:
            for column, value in row.items():
                if column.endswith("tenant"):
                    assert value in (tenant, ""), (sql, row)  # "" is a LEFT JOIN's default
            if not {t, u} & ECHOES:
                text = repr(row)
                assert all(f"secret{x}" not in text for x in TENANTS if x != tenant), (sql, row)
    for escape in ("SELECT * FROM hindbrain.events", "SELECT * FROM merge('hindbrain', '.*')",
                   "SELECT * FROM remote('127.0.0.1', 'hindbrain', 'events')", "SELECT * FROM system.tables",
                   "SELECT joinGet('hindbrain.events', 'text', 1)", "SHOW TABLES FROM hindbrain"):
        status, body, _ = call(base, "POST", "/v1/sql", {"query": escape}, key["acme"])
        assert status == 422 and body["detail"][0]["loc"] == ["body", "query"], escape
