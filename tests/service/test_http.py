"""``hindbrain serve`` end to end: a real uvicorn server on loopback, real HTTP requests."""

from __future__ import annotations

import threading

import pytest
from http_helpers import call, serving


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("served")) as (base, brain, keys):
        yield base, brain, keys, keys.create("acme", "tests", "admin"), keys.create("globex", "tests", "admin")


def test_the_agent_loop_over_http_learns_recalls_and_credits(api):
    base, brain, _, acme, _ = api
    status, body, headers = call(base, "POST", "/v1/learn", {"condition": "submit does nothing in IAM",
                                                             "action": "switch to the admin account"}, acme,
                                 headers={"X-Request-ID": "req-42"})
    assert status == 200 and headers["X-Request-ID"] == "req-42"
    fid = body["fragment_id"]
    status, pack, _ = call(base, "POST", "/v1/recall", {"query": "IAM submit does nothing", "task": "t1"}, acme)
    assert status == 200 and [i["id"] for i in pack["items"]] == [fid]
    assert "switch to the admin account" in pack["prompt"] and pack["items"][0]["why"]["lexical"]["score"] > 0
    status, body, _ = call(base, "POST", "/v1/outcome", {"recall_id": pack["recall_id"], "task": "t1",
                                                         "applied": [fid], "success": True}, acme)
    assert status == 200 and body["outcome_id"] and pack["recall_id"] in body["credit"]
    status, again, _ = call(base, "POST", "/v1/outcome", {"task": "t1", "applied": [fid], "success": True}, acme)
    assert status == 200 and again["credit"].startswith("no recall_id: evidence only")
    rows = brain.sql("SELECT tenant, applied, success FROM feedback WHERE item_id = {i:String}", {"i": fid})
    assert rows == [{"tenant": "acme", "applied": 2, "success": 2}]
    status, body, _ = call(base, "POST", "/v1/perceive", {"kind": "anomaly", "text": "403 on deploy",
                                                          "system": "Deploy"}, acme)
    assert status == 200 and body["event_id"].startswith("ev_")
    status, body, _ = call(base, "POST", "/v1/perceive/batch", {"events": [{"text": f"e{n}"} for n in range(5)]},
                           acme)
    assert status == 200 and len(body["event_ids"]) == 5


def test_every_v1_route_needs_a_live_key_and_a_revoked_key_stops_at_once(api):
    base, _, keys, _, _ = api
    assert call(base, "POST", "/v1/recall", {"query": "x"})[0] == 401
    assert call(base, "POST", "/v1/recall", {"query": "x"}, "hb_nothere_secret")[0] == 401
    doomed = keys.create("acme", "to revoke")
    assert call(base, "POST", "/v1/recall", {"query": "x"}, doomed)[0] == 200
    assert keys.revoke(doomed.split("_")[1])
    assert call(base, "POST", "/v1/recall", {"query": "x"}, doomed)[0] == 401
    live = keys.create("acme", "tampered")
    assert call(base, "POST", "/v1/recall", {"query": "x"}, live[:-2] + ("AA" if live[-2:] != "AA" else "BB"))[0] == 401


def test_bad_input_is_a_422_naming_the_field_and_nothing_is_written(api):
    base, brain, _, acme, _ = api
    before = brain.stats()["log_records"]
    status, body, _ = call(base, "POST", "/v1/perceive", {"kind": "nonsense", "text": "x"}, acme)
    assert status == 422 and body["detail"][0]["loc"] == ["body", "kind"]
    status, body, _ = call(base, "POST", "/v1/perceive", {"kind": "anomaly"}, acme)  # the SDK's own rule
    assert status == 422 and body["detail"][0]["loc"] == ["body", "text"] and body["request_id"]
    status, body, _ = call(base, "POST", "/v1/perceive", {"tenant": "globex", "text": "x"}, acme)
    assert status == 422 and body["detail"][0]["loc"] == ["body", "tenant"]  # the key decides the tenant
    status, body, _ = call(base, "POST", "/v1/perceive/batch", {"events": [{"text": "ok"}, {"kind": "bad"}]}, acme)
    assert status == 422 and body["detail"][0]["loc"][:3] == ["body", "events", 1]
    assert brain.stats()["log_records"] == before


def test_the_hot_routes_answer_like_the_rest_of_the_api(api):
    base, brain, _, acme, _ = api
    before = brain.stats()["log_records"]
    status, _, headers = call(base, "POST", "/v1/perceive", {"text": "x"})
    assert status == 401 and headers["WWW-Authenticate"] == "Bearer"
    for raw in (b"{not json", b"[1, 2]", b""):
        status, body, _ = call(base, "POST", "/v1/perceive", raw, acme)
        assert status == 422 and body["detail"][0]["loc"] == ["body"] and body["request_id"], raw
    assert call(base, "POST", "/v1/perceive", b'{"text": "' + b"x" * (1 << 20) + b'"}', acme)[0] == 413
    assert brain.stats()["log_records"] == before
    status, body, headers = call(base, "POST", "/v1/perceive", {"text": "fast"}, acme, headers={"X-Request-ID": "r-7"})
    assert status == 200 and headers["X-Request-ID"] == "r-7" and brain.stats()["log_records"] == before + 1
    assert brain.sql("SELECT tenant, text FROM events WHERE event_id = {e:String}",
                     {"e": body["event_id"]}) == [{"tenant": "acme", "text": "fast"}]
    status, body, _ = call(base, "POST", "/v1/recall", {"query": "fast", "layers": ["dreams"]}, acme)
    assert status == 422 and body["detail"][0]["loc"] == ["body", "layers"]
    status, body, _ = call(base, "POST", "/v1/recall", {"query": "fast", "k": "many"}, acme)
    assert status == 422 and body["detail"][0]["loc"] == ["body", "k"]
    assert call(base, "POST", "/v1/recall", b"{", acme)[0] == 422
    _, text, _ = call(base, "GET", "/metrics", key=acme)
    assert 'hindbrain_http_requests_total{route="/v1/perceive",status="200"}' in text
    assert 'hindbrain_http_requests_total{route="/v1/perceive",status="422"}' in text
    assert 'hindbrain_http_requests_total{route="/v1/recall",status="422"}' in text


def test_tenants_see_only_their_own_rows_in_recall_explain_and_sql(api):
    base, _, _, acme, globex = api
    call(base, "POST", "/v1/learn", {"condition": "acme's nightly build is red", "action": "rerun it"}, acme)
    _, body, _ = call(base, "POST", "/v1/learn", {"condition": "globex payroll export times out",
                                                  "action": "use the replica"}, globex)
    secret = body["fragment_id"]
    _, pack, _ = call(base, "POST", "/v1/recall", {"query": "payroll export times out"}, acme)
    assert secret not in [i["id"] for i in pack["items"]]
    assert call(base, "GET", f"/v1/explain/{secret}", key=acme)[1]["chain"] == []
    assert call(base, "GET", f"/v1/explain/{secret}", key=globex)[1]["chain"]
    _, body, _ = call(base, "POST", "/v1/sql", {"query": "SELECT DISTINCT tenant FROM fragments FINAL"}, acme)
    assert body["rows"] == [{"tenant": "acme"}]
    for escape in ("SELECT * FROM hindbrain.fragments", "SELECT * FROM file('/etc/passwd')",
                   "SELECT name FROM system.tables", "INSERT INTO fragments SELECT * FROM fragments"):
        status, body, _ = call(base, "POST", "/v1/sql", {"query": escape}, acme)
        assert status == 422 and body["detail"][0]["loc"] == ["body", "query"], escape


def test_health_readiness_metrics_and_the_openapi_document(api):
    base, _, _, acme, _ = api
    assert call(base, "GET", "/healthz")[:2] == (200, {"status": "ok"})
    assert call(base, "GET", "/readyz")[:2] == (200, {"status": "ready"})
    call(base, "POST", "/v1/recall", {"query": "anything"}, acme)
    status, text, _ = call(base, "GET", "/metrics", key=acme)
    assert status == 200 and 'hindbrain_http_requests_total{route="/v1/recall",status="200"}' in text
    assert "hindbrain_recall_seconds_bucket" in text and "hindbrain_dead_letters 0" in text
    assert "hindbrain_consumer_lag_records" in text and "hindbrain_ingested_events_total" in text
    status, doc, _ = call(base, "GET", "/openapi.json", key=acme)
    assert status == 200 and {"/v1/perceive", "/v1/recall", "/v1/outcome", "/v1/learn", "/v1/sql",
                              "/v1/explain/{item_id}", "/v1/hindsight"} <= set(doc["paths"])
    assert "tenant" not in doc["components"]["schemas"]["PerceiveBody"]["properties"]
    assert call(base, "GET", "/docs", key=acme)[0] == 200


def test_many_concurrent_clients_do_not_corrupt_the_embedded_store(api):
    base, brain, _, acme, _ = api
    errors: list = []

    def client(n: int) -> None:
        for i in range(25):
            status, _, _ = call(base, "POST", "/v1/perceive", {"text": f"client {n} event {i}", "task": f"c{n}"},
                                acme)
            if status != 200:
                errors.append(status)
            if i % 5 == 0:
                call(base, "POST", "/v1/recall", {"query": f"client {n} event"}, acme)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rows = brain.sql("SELECT count() AS n, uniqExact(text) AS texts FROM events FINAL WHERE text LIKE 'client %'")
    assert rows == [{"n": 200, "texts": 200}]


def test_humans_approve_and_invalidate_over_http_and_bad_ids_are_422s(api):
    base, brain, _, acme, globex = api
    _, body, _ = call(base, "POST", "/v1/learn", {"condition": "the nightly export stalls",
                                                  "action": "restart the exporter"}, acme)
    fid = body["fragment_id"]
    assert call(base, "GET", "/v1/traits", key=acme)[:2] == (200, {"traits": []})
    status, body, _ = call(base, "POST", "/v1/approve", {"fragment_id": fid, "approver": "ops"}, acme)
    assert status == 422 and body["detail"][0]["loc"] == ["body", "fragment_id"]  # not a proposed trait
    status, body, _ = call(base, "POST", "/v1/invalidate", {"fragment_id": fid, "reason": "exporter v2"}, globex)
    assert status == 422 and body["detail"][0]["loc"] == ["body", "fragment_id"]  # another tenant's unit
    status, body, _ = call(base, "POST", "/v1/invalidate", {"fragment_id": fid, "reason": "exporter v2"}, acme)
    assert status == 200 and body["decision_id"]
    [state] = brain.sql("SELECT status FROM unit_states FINAL WHERE fragment_id = {f:String}", {"f": fid})
    assert state["status"] == "invalid"
    _, pack, _ = call(base, "POST", "/v1/recall", {"query": "nightly export stalls"}, acme)
    assert fid not in [i["id"] for i in pack["items"]]
