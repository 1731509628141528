"""Fuzzing every HTTP route of ``hindbrain serve`` (design.md §issue-19 point 3).

Hypothesis sends requests to the in-process ASGI app (``create_app`` over an embedded, lexical-only
brain): every route of the app's route table (a new route is fuzzed without touching this file),
with bodies that are malformed JSON, JSON of the wrong shape, a valid body with one field made
nasty (wrong type, NaN/Infinity, huge ints, lone surrogates, NUL, RTL marks, 70k-character
strings, deep nesting, another tenant's ids), bytes that are not UTF-8, wrong or missing content
types, missing, malformed, foreign (the other tenant's) and revoked keys, odd unicode in path
params and query params of the wrong type. Properties:

* never a 5xx, and a 4xx is JSON with a ``detail``;
* no 2xx on a ``/v1`` route without a live key;
* every id a 2xx acknowledged is in the views afterwards, under the key's tenant; and no event or
  outcome is there that no 2xx acknowledged (a refused request wrote nothing).

What the fuzzer found stays below as plain regressions (``FOUND``). A last test sends raw bytes
to a real ``hindbrain serve`` process, for uvicorn's HTTP parser (the in-process transport never
runs it): truncated bodies, lying Content-Lengths, garbage chunks.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import types
import typing
from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import quote

import pytest
from fastapi.routing import APIRoute
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from starlette.routing import Route
from starlette.testclient import TestClient

from hindbrain import Brain
from hindbrain.recall.documents import LAYERS
from hindbrain.schemas.records import to_us
from hindbrain.service.http import create_app
from hindbrain.service.keys import KeyStore

# Requests per route: a route with a body has more to fuzz than a GET without parameters.
EXAMPLES = {"body": 40, "bare": 10}
# Fixed seed (derandomize) and no example database: CI runs exactly these examples.
FUZZ = settings(deadline=None, derandomize=True, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])

# Which table holds what a 2xx answer acknowledges, by the answer's key. A route that answers a
# new kind of id fails the test until its table is named here (nothing acknowledged goes unchecked).
ACKNOWLEDGED = {"event_id": ("events", "event_id"), "event_ids": ("events", "event_id"),
                "fragment_id": ("fragments", "fragment_id"), "outcome_id": ("outcomes", "outcome_id"),
                "decision_id": ("decisions", "decision_id"), "recall_id": ("recalls", "recall_id"),
                "key_id": ("keys", "key_id")}  # keys: the key store (keys.sqlite), not a view
# Only requests write these tables (the learner and the jobs write fragments and decisions too).
ONLY_REQUESTS_WRITE = ("events", "outcomes")
# A valid body needs state these bodies do not make: a proposed trait, a unit the learner knows.
REFUSED_UNLESS_STATE = {"/v1/approve", "/v1/invalidate"}
# Routes the app is known to have: the route table must hold at least these (a rename shows here).
KNOWN = {("POST", "/v1/perceive"), ("POST", "/v1/perceive/batch"), ("POST", "/v1/learn"), ("POST", "/v1/recall"),
         ("POST", "/v1/outcome"), ("GET", "/v1/traits"), ("POST", "/v1/approve"), ("POST", "/v1/invalidate"),
         ("GET", "/v1/explain/{item_id}"), ("POST", "/v1/sql"), ("POST", "/v1/hindsight"), ("GET", "/healthz"),
         ("GET", "/readyz"), ("GET", "/metrics"), ("GET", "/openapi.json"), ("GET", "/docs")}


# -- the app under fuzz ------------------------------------------------------------------------
class Target(types.SimpleNamespace):
    """The app, its brain, its keys by name, and ids that exist (for foreign-key bodies)."""


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    home = tmp_path_factory.mktemp("fuzzed")
    keys = KeyStore(home)
    live = {"acme": keys.create("acme", "fuzz", "admin"),
            "globex": keys.create("globex", "fuzz", "admin")}  # admin: every route is fuzzed
    revoked = keys.create("acme", "revoked")
    keys.revoke(revoked)
    # No rate limit here: the fuzzer's few hundred requests should reach the routes (429 has its own tests).
    with Brain.open(home, embedder="none", rate_limit=1e9, rate_burst=10**9) as brain:
        events = {(t, brain.perceive(tenant=t, text=f"{t} saw a 403")) for t in live}
        ids = [brain.learn(tenant=t, condition=f"{t} export stalls", action="restart it") for t in live]
        ids += [i for _, i in sorted(events)]
        with TestClient(create_app(brain, keys), raise_server_exceptions=False) as client:
            yield Target(client=client, brain=brain, keys=keys, live=live, revoked=revoked, ids=ids, seeded=events)


# -- routes, from the app's own table ------------------------------------------------------------
class RouteSpec(typing.NamedTuple):
    method: str
    path: str
    body: type[BaseModel] | None
    query: tuple[str, ...]


def routes_of(app) -> list[RouteSpec]:
    """Every (method, path) the app serves, with its body model and query parameters."""
    out = []
    for route in app.routes:
        if isinstance(route, APIRoute):
            body = route.body_field.field_info.annotation if route.body_field else None
            query = tuple(q.alias for q in route.dependant.query_params)
        elif isinstance(route, Route):
            body, query = None, ()
        else:
            continue
        out += [RouteSpec(m, route.path, body, query) for m in sorted(route.methods or ()) if m != "HEAD"]
    return out


# -- values ----------------------------------------------------------------------------------
ODD_TEXT = ["", " ", "\x00", "a\x00b", "\u202eevil\u202c", "\u200f\u200e", "\ufeff", "\ud800", "\udfff", "x\ud83d",
            "🧠" * 8, "提交没有反应", "'; DROP TABLE events; --", "{x:String}", "\\", "\n\r\t", "..", "/", "%00",
            "\U0010ffff", "ﬀ" * 3, "e\u0301" * 5]
HUGE = [2**31, 2**31 - 1, -(2**31) - 1, 2**63, 2**63 - 1, -(2**63) - 1, 2**64 + 1, 10**30, -(10**30), 10**400]
FLOATS = [float("nan"), float("inf"), float("-inf"), 1e308, -1e-308, 0.5, -0.0]
odd_text = st.sampled_from(ODD_TEXT) | st.text(max_size=40)


def long_text() -> st.SearchStrategy[str]:
    return st.sampled_from(["x", "é", "🧠", "\u202e"]).map(lambda c: c * 70_000)


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | odd_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_text, inner, max_size=4), max_leaves=12)


def nasty(ids: list[str]) -> st.SearchStrategy:
    """A value no field should take: of the wrong type, out of range, or odd."""
    return st.one_of(st.sampled_from([None, True, False, 0, -1, [], {}, [[]], {"": ""}, *HUGE, *FLOATS]),
                     odd_text, long_text(), st.integers(1, 300).map(nested), json_values,
                     st.sampled_from(ids), st.lists(st.sampled_from(ids), min_size=1, max_size=3))


def datetimes() -> st.SearchStrategy[str]:
    """ISO datetimes anywhere in datetime's range, with any UTC offset (the edges overflow UTC)."""
    offsets = st.integers(-23 * 60 - 59, 23 * 60 + 59).map(lambda m: timezone(timedelta(minutes=m)))
    edges = st.sampled_from([datetime.min, datetime.max, datetime(1970, 1, 1), datetime(2299, 12, 31, 23, 59)])
    naive = edges | st.datetimes(datetime(1900, 1, 1), datetime(2299, 1, 1)) | st.datetimes()
    return st.one_of(naive.map(datetime.isoformat),
                     st.tuples(naive, offsets).map(lambda p: p[0].replace(tzinfo=p[1]).isoformat()),
                     st.integers(-(10**12), 10**12))


# Analysts' queries: some fine, some ClickHouse refuses, some that reach past the tenant's views.
SQL = ["SELECT count() AS n FROM events", "SELECT event_id, text, ts FROM events FINAL ORDER BY ts",
       "SELECT * FROM fragments", "SELECT {x:String} AS x", "SELECT avg(polarity) AS p FROM events WHERE 0",
       "SELECT arrayJoin(range(10)) AS n", "SELECT tenant, count() FROM outcomes GROUP BY tenant",
       "SELECT * FROM recalls WHERE recall_id = {x:String}", "SELECT 1/0, [nan, -inf], 'é', '\u202e'",
       "SELECT toDateTime64(-1e13, 6) AS t", "SELECT uniqState(1) AS s"]
BAD_SQL = ["SELECT throwIf(1)", "SELEC nothing", "SELECT 1; SELECT 2", "SHOW TABLES", "SELECT * FROM hindbrain.events",
           "SELECT * FROM url('http://127.0.0.1:1/')", "SELECT * FROM no_such_table", "SELECT {y:UInt8}",
           "INSERT INTO events SELECT * FROM events", "SELECT * FROM system.tables", "SELECT * FROM numbers(3)",
           "SELECT 1 INTO OUTFILE '/dev/null'", "SELECT 1 FORMAT JSON"]


def value_of(annotation, name: str, ids: list[str]) -> st.SearchStrategy:
    """Plausible values of a field's type (valid bodies come mostly from here)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return value_of(args[0], name, ids)
    if origin in (typing.Union, types.UnionType):
        values = st.one_of(*(value_of(a, name, ids) for a in args if a is not type(None)))
        return weighted(value=4, none=1).flatmap(lambda w: values if w == "value" else st.none())
    if origin is typing.Literal:
        return st.sampled_from(args)
    if annotation is type(None):
        return st.none()
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return body_of(annotation, ids)
    if origin is list:
        return st.lists(value_of(args[0], name, ids), min_size=1, max_size=3)
    if name == "parameters":
        return st.fixed_dictionaries({"x": words}) | st.dictionaries(words, json_values, max_size=3)
    if origin is dict:
        return st.dictionaries(value_of(args[0], name, ids), value_of(args[1], name, ids), max_size=3)
    if annotation is bool:
        return st.booleans()
    if annotation is int:
        return st.integers(1, 50)
    if annotation is float:
        return st.floats(0, 1)
    if annotation is datetime:
        return datetimes()
    if annotation is str:
        if name == "layers":
            return st.sampled_from(LAYERS) | words
        if name == "query":
            return st.one_of(st.sampled_from(SQL), st.sampled_from(SQL), st.sampled_from(BAD_SQL), words)
        if name.endswith(("_id", "_ids")) or name in ("applied", "evidence"):
            return st.sampled_from(ids) | words
        if name in IDENTIFIERS:  # a valid body's identifiers print as one spelling (schemas.api.Ident)
            return identifiers
        return words
    return json_values  # typing.Any and what this function does not know


words = st.text(st.characters(codec="utf-8", categories=["L", "N", "Zs", "P"]), min_size=1, max_size=30).filter(
    str.strip)


# identifiers a caller sets (tenant, agent, …): letters, digits and punctuation of one script, one space between
# words at most (schemas.api.identifier_problem); the nasty values (``nasty``) still try every other spelling
IDENTIFIERS = ("agent", "task", "session", "user", "approver", "by")
identifiers = st.sampled_from(["bot-1", "山田太郎", "Tanaka 太郎", "Иван", "support bot"]) | st.from_regex(
    r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,20}( [A-Za-z0-9_.:-]{1,10})?", fullmatch=True)


@st.composite
def body_of(draw, model: type[BaseModel], ids: list[str]) -> dict:
    """A body of ``model``: its required fields and most of its optional ones."""
    return {name: draw(value_of(field.annotation, name, ids)) for name, field in model.model_fields.items()
            if field.is_required() or draw(weighted(present=3, absent=1)) == "present"}


@st.composite
def mutated(draw, model: type[BaseModel], ids: list[str]) -> dict:
    """A valid-looking body with one field (or one new key) made nasty."""
    body = draw(body_of(model, ids))
    field = draw(st.sampled_from([*model.model_fields, "tenant", "unknown", ""]))
    body[field] = draw(nasty(ids))
    return body


def encode(value, ensure_ascii: bool) -> bytes:
    """JSON as a careless client sends it: NaN/Infinity literals, lone surrogates raw (invalid
    UTF-8) or escaped (``\\ud800``)."""
    return json.dumps(value, ensure_ascii=ensure_ascii, allow_nan=True).encode("utf-8", "surrogatepass")


def weighted(**weights: int) -> st.SearchStrategy[str]:
    """One of the names, each as often as its weight."""
    return st.sampled_from([name for name, weight in weights.items() for _ in range(weight)])


@st.composite
def bodies(draw, model: type[BaseModel] | None, ids: list[str]) -> bytes | None:
    kind = draw(weighted(valid=3, mutated=6, shape=2, malformed=2, bytes=1, deep=1, huge=1, none=1) if model else
                weighted(shape=2, malformed=2, bytes=1, none=3))
    if kind in ("valid", "mutated"):
        body = draw(body_of(model, ids) if kind == "valid" else mutated(model, ids))
        return encode(body, draw(st.booleans()))
    if kind == "shape":
        return encode(draw(json_values), draw(st.booleans()))
    if kind == "malformed":
        valid = encode(draw(body_of(model, ids) if model else json_values), True)
        cut = draw(st.integers(0, max(len(valid) - 1, 0)))
        return draw(st.sampled_from([valid[:cut], valid[:cut] + b"}", b"{" + valid, valid + b",", b"{'a': 1}",
                                     b'{"text": NaN}', b'{"text": "\\ud800"}', b"\xef\xbb\xbf{}"]))
    if kind == "bytes":
        return draw(st.binary(max_size=64))
    if kind == "deep":
        depth = draw(st.sampled_from([100, 1_000, 100_000]))
        return b'{"text": ' + b"[" * depth + b"]" * depth + b"}"
    if kind == "huge":  # past the hot routes' 1 MB
        return b'{"text": "' + b"x" * ((1 << 20) + 16) + b'"}'
    return None


CONTENT_TYPES = [None, "application/json", "application/json; charset=utf-8", "application/json; charset=latin-1",
                 "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                 "multipart/form-data", "application/xml", "*/*", "application/json\x00"]


@st.composite
def requests(draw, target: Target, spec: RouteSpec) -> dict:
    """A request to ``spec``'s route: well-formed (a live key, JSON, a body of the route's model),
    so that writes do happen, or fuzzed in every part."""
    if draw(weighted(wellformed=2, fuzzed=3)) == "fuzzed":
        return draw(fuzzed(target, spec))
    tenant = draw(st.sampled_from(list(target.live)))
    body = encode(draw(body_of(spec.body, target.ids)), draw(st.booleans())) if spec.body else None
    path = spec.path.replace("{item_id}", quote(draw(st.sampled_from(target.ids) | words), safe=""))
    params = {name: draw(st.sampled_from(["true", "false"])) for name in spec.query}
    headers = {"authorization": f"Bearer {target.live[tenant]}".encode(), "content-type": b"application/json"}
    return {"spec": spec, "method": spec.method, "path": path, "params": params, "headers": headers, "body": body,
            "tenant": tenant}


@st.composite
def fuzzed(draw, target: Target, spec: RouteSpec) -> dict:
    method = spec.method
    if draw(st.integers(0, 9)) == 0:  # the wrong method now and then
        method = draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]))
    path = spec.path
    if "{item_id}" in path:
        item = draw(st.sampled_from(target.ids) | odd_text | long_text().map(lambda s: s[:4000]))
        path = path.replace("{item_id}", quote(item.encode("utf-8", "surrogatepass"),
                                               safe=draw(st.sampled_from(["", "/"]))) or "%20")
    params = {}
    for name in spec.query:
        if draw(st.booleans()):
            params[name] = draw(st.sampled_from(["true", "false", "1", "maybe", "", "\x00", "2" * 50]) | odd_text)
    if draw(st.integers(0, 9)) == 0:
        params[draw(odd_text)] = draw(odd_text)
    tenant = draw(st.sampled_from([*target.live, None]))
    key = target.live[tenant] if tenant else draw(st.sampled_from([
        None, "", target.revoked, target.live["acme"][:-3] + "abc", "hb_", "hb_x_y", "not a key", "Basic Zm9vOmJhcg==",
        target.live["acme"] + " " + target.live["globex"], "\x7f" * 3, "é" * 20]))
    headers: dict[str, bytes] = {}
    if key is not None:
        scheme = draw(st.sampled_from(["Bearer "] * 8 + ["bearer ", "", "Bearer  "]))
        headers["authorization"] = (scheme + key).encode("latin-1", "replace")
    content_type = draw(st.sampled_from(CONTENT_TYPES))
    if content_type:
        headers["content-type"] = content_type.encode()
    if draw(st.integers(0, 4)) == 0:
        headers["x-request-id"] = draw(st.binary(max_size=20).filter(lambda b: b"\r" not in b and b"\n" not in b))
    body = draw(bodies(spec.body, target.ids)) if method in ("POST", "PUT", "PATCH") else None
    return {"spec": spec, "method": method, "path": path, "params": params, "headers": headers, "body": body,
            "tenant": tenant}


def query_string(params: dict[str, str]) -> str:
    """``?k=v&...`` percent-encoded from UTF-8, lone surrogates included (as invalid UTF-8)."""
    pairs = [f"{_escaped(k)}={_escaped(v)}" for k, v in params.items()]
    return "?" + "&".join(pairs) if pairs else ""


def _escaped(text: str) -> str:
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


# -- the properties ----------------------------------------------------------------------------
def check_answer(request: dict, response) -> None:
    """No 5xx; a 4xx says why in JSON; only a live key gets a 2xx under /v1."""
    status, shown = response.status_code, f"{request['method']} {request['path']} -> {response.status_code}"
    assert status < 500, f"{shown}: {response.text[:500]}"
    if 400 <= status < 500:
        assert "detail" in response.json(), f"{shown}: {response.text[:500]}"
    if request["path"].startswith("/v1/") and request["tenant"] is None:
        assert status >= 400, f"{shown} without a live key"


def acknowledged_ids(request: dict, response) -> list[tuple[str, str, str]]:
    """``(table, tenant, id)`` for every id a 2xx answer names."""
    if not (200 <= response.status_code < 300 and request["path"].startswith("/v1/")):
        return []
    answer = response.json()
    out = []
    for name, value in answer.items() if isinstance(answer, dict) else ():
        if not name.endswith(("_id", "_ids")) or name == "item_id":
            continue
        assert name in ACKNOWLEDGED, f"{request['path']} answers {name!r}: name the table that holds it"
        table, _ = ACKNOWLEDGED[name]
        out += [(table, request["tenant"], v) for v in (value if isinstance(value, list) else [value])]
    return out


def stored(target, table: str) -> set[tuple[str, str]]:
    if table == "keys":
        return {(k.tenant, k.key_id) for k in target.keys.list()}
    column = next(c for t, c in ACKNOWLEDGED.values() if t == table)
    return {(r["tenant"], r["id"]) for r in target.brain.sql(f"SELECT tenant, {column} AS id FROM {table} FINAL")}


def test_the_route_table_is_enumerated_whole(target):
    found = {(s.method, s.path) for s in routes_of(target.client.app)}
    assert found >= KNOWN, KNOWN - found
    document = target.client.get("/openapi.json", headers={"authorization": f"Bearer {target.live['acme']}"}).json()
    documented = {(m.upper(), p) for p, ops in document["paths"].items() for m in ops}
    assert documented <= found, documented - found


def test_no_request_gets_a_5xx_and_nothing_acknowledged_is_lost(target):
    specs = routes_of(target.client.app)
    acknowledged: list[tuple[str, str, str]] = []
    statuses: dict[tuple[str, str], dict[int, int]] = {}

    def fuzz(spec: RouteSpec) -> None:
        """``EXAMPLES`` requests to one route: each route gets its share, however many there are."""

        @settings(FUZZ, max_examples=EXAMPLES["body" if spec.body else "bare"])
        @given(request=requests(target, spec))
        def one_request(request):
            sent = dict(method=request["method"], url=request["path"] + query_string(request["params"]),
                        headers=request["headers"], content=request["body"])
            response = target.client.request(**sent)
            if response.status_code >= 500:  # say why: the same request once more, the server's exception raised
                TestClient(target.client.app, raise_server_exceptions=True).request(**sent)
            check_answer(request, response)
            acknowledged.extend(acknowledged_ids(request, response))
            counts = statuses.setdefault((spec.method, spec.path), {})
            counts[response.status_code] = counts.get(response.status_code, 0) + 1

        one_request()

    started = time.perf_counter()
    for spec in specs:
        fuzz(spec)
    took, sent = time.perf_counter() - started, sum(n for c in statuses.values() for n in c.values())
    print(f"\n{sent} requests to {len(specs)} routes in {took:.1f} s ({sent / took:.0f}/s)")
    for (method, path), counts in sorted(statuses.items(), key=lambda kv: kv[0][1]):
        print(f"  {method:4} {path:24} {dict(sorted(counts.items()))}")
    assert set(statuses) == {(s.method, s.path) for s in specs}, "a route was never fuzzed"
    written = [statuses[s.method, s.path] for s in specs if s.body and s.path not in REFUSED_UNLESS_STATE]
    assert all(c.get(200) for c in written), statuses  # valid bodies do get through, on every route
    assert sum(c.get(200, 0) for c in written) >= sum(sum(c.values()) for c in written) // 5, statuses

    by_table: dict[str, set[tuple[str, str]]] = {}
    for table, tenant, id_ in acknowledged:
        by_table.setdefault(table, set()).add((tenant, id_))
    for table, ids in by_table.items():
        missing = ids - stored(target, table)
        assert not missing, f"{table}: acknowledged but missing: {missing}"
    for table in ONLY_REQUESTS_WRITE:
        extra = stored(target, table) - by_table.get(table, set()) - target.seeded
        assert not extra, f"{table}: written by requests that were refused: {extra}"


# -- what the fuzzer found, kept as plain regressions ------------------------------------------------
FOUND = [  # (method, path, body, status, the field a 422 names); each was a 500 before its fix
    ("POST", "/v1/learn", b'{"condition": "c", "action": "a", "confidence": NaN}', 422, None),
    ("POST", "/v1/learn", b'{"condition": "x\\ud800", "action": "a"}', 422, None),
    ("POST", "/v1/sql", b'{"query": "SELEC nonsense"}', 422, "query"),
    ("POST", "/v1/sql", b'{"query": "SELECT count() FROM events", "parameters": {"0": {"\\ud800": null}}}', 422, None),
    ("POST", "/v1/perceive", b'{"text": "a", "ts": "0001-01-01T00:00:00+14:00"}', 422, "ts"),
    ("POST", "/v1/perceive/batch", b'{"events": [{"text": "a", "ts": "9999-12-31T23:59:59-14:00"}]}', 422, "ts"),
    ("POST", "/v1/outcome", b'{"success": true, "steps": 2147483648}', 422, "steps"),
    ("POST", "/v1/sql", b'{"query": "SELECT avg(polarity) AS p FROM events WHERE 0"}', 200, None),  # NaN: null
    ("POST", "/v1/sql", b'{"query": "SELECT toDateTime64(-1e13, 6) AS t"}', 422, "query"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "field"), FOUND)
def test_what_the_fuzzer_found_is_answered_and_the_server_stays_ready(target, method, path, body, status, field):
    answer = target.client.request(method, path, content=body, headers={
        "authorization": f"Bearer {target.live['acme']}", "content-type": "application/json"})
    assert answer.status_code == status, answer.text
    if field:
        assert answer.json()["detail"][0]["loc"][-1] == field, answer.text
    assert target.client.get("/readyz").status_code == 200  # a bad ts once broke the owner thread for good


def test_the_last_microsecond_of_9999_converts_exactly_and_is_refused_as_the_future(target):
    assert to_us(datetime.max.replace(tzinfo=UTC)) == 253_402_300_799_999_999  # through a float: the year 10000
    answer = target.client.post("/v1/perceive", headers={"authorization": f"Bearer {target.live['acme']}"},
                                content=b'{"text": "the end of time", "ts": "9999-12-31T23:59:59.999999"}')
    assert answer.status_code == 422 and answer.json()["detail"][0]["loc"][-1] == "ts", answer.text  # round 29


def test_a_request_id_that_is_not_short_printable_ascii_is_replaced(target):
    assert target.client.get("/healthz", headers={"x-request-id": "req-42"}).headers["x-request-id"] == "req-42"
    for sent in (b"\x80", b"caf\xe9", b"x" * 129, b"a b"):  # \x80 echoed: httpx could not read the answer
        rid = target.client.get("/healthz", headers={"x-request-id": sent}).headers["x-request-id"]
        assert len(rid) == 32 and int(rid, 16) >= 0


def test_a_second_statement_or_an_outfile_never_runs(target, tmp_path):
    target.brain.perceive(tenant="globex", text="globex payroll secret 4411")
    outfile = tmp_path / "written-by-a-tenant.txt"
    for query in ("SELECT 1; SELECT text FROM hindbrain.events", "SELECT 1; SELECT sleep(3)",
                  f"SELECT text FROM events INTO OUTFILE '{outfile}'"):
        answer = target.client.post("/v1/sql", json={"query": query},
                                    headers={"authorization": f"Bearer {target.live['acme']}"})
        assert answer.status_code == 422 and answer.json()["detail"][0]["loc"] == ["body", "query"], answer.text
        assert "4411" not in answer.text
    assert not outfile.exists()  # chDB wrote it before: any path the server may write, a tenant's text in it


# -- uvicorn's parser, on a real `hindbrain serve` -------------------------------------------------
# (what, bytes sent, then): "read" the answer until the server closes, or "cut" the connection at
# once (a client gone mid-request: the app sees a disconnect before the body it announced).
RAW = [
    ("a body shorter than its Content-Length", b"POST /v1/perceive HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}"
     b'\r\nContent-Length: 200\r\n\r\n{"text": "truncated: never acknowledged"}', "cut"),
    ("a chunked body cut short", b"POST /v1/learn HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
     b'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n'
     b'3a\r\n{"condition": "cut short", "action": "never acknowledged"}\r\n', "cut"),
    ("a body longer than its Content-Length", b"POST /v1/perceive HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}"
     b'\r\nContent-Length: 5\r\n\r\n{"text": "spills into a next request"}', "read"),
    ("garbage chunk sizes", b"POST /v1/learn HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
     b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", "read"),
    ("both Content-Length and chunked", b"POST /v1/perceive HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
     b'Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n1c\r\n{"text": "smuggled event"}\r\n0\r\n\r\n', "read"),
    ("a negative Content-Length", b"POST /v1/sql HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n{}", "read"),
    ("a NUL in a header", b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-ID: a\x00b\r\n\r\n", "read"),
    ("a 100 kB header", b"GET /v1/traits HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: " + b"p" * 100_000
     + b"\r\n\r\n", "read"),
    ("not HTTP at all", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)), "read"),
    ("a request line of odd bytes", b"P\xc3\x96ST /v1/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n", "read"),
]


def exchange(port: int, raw: bytes, then: str = "read", timeout_s: float = 10.0) -> bytes:
    """Send ``raw``; then read until the server closes, or close at once (``then="cut"``)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(raw)
        answer = b""
        while then == "read" and (chunk := sock.recv(65536)):
            answer += chunk
        return answer


def statuses_in(answer: bytes) -> list[int]:
    return [int(line.split(b" ")[1]) for line in answer.split(b"\r\n") if line.startswith(b"HTTP/1.1 ")]


@pytest.fixture
def served(tmp_path):
    """A real ``hindbrain serve`` (no replicas, lexical recall) on a free port, and an API key."""
    key = KeyStore(tmp_path).create("acme", "fuzz", "admin")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "hindbrain.cli", "--home", str(tmp_path), "serve", "--port",
                             str(port), "--replicas", "0"], env={**os.environ, "HINDBRAIN_EMBEDDER": "none"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while b"200 OK" not in _get(port, "/readyz"):
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "hindbrain serve did not become ready"
            time.sleep(0.1)
        yield port, key, proc
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        proc.stderr.close()


def _get(port: int, path: str) -> bytes:
    try:
        return exchange(port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    except OSError:  # not listening yet
        return b""


def test_uvicorns_parser_meets_broken_http_and_nothing_half_sent_is_written(served):
    port, key, proc = served
    for what, raw, then in RAW:
        answer = exchange(port, raw.replace(b"{key}", key.encode()), then)
        assert all(s < 500 for s in statuses_in(answer)), (what, answer[:300])
        assert proc.poll() is None, what
    assert b"200 OK" in _get(port, "/readyz")
    body = b'{"query": "SELECT text FROM events FINAL UNION ALL SELECT condition FROM fragments FINAL"}'
    head = (f"POST /v1/sql HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nContent-Length: {len(body)}\r\n"
            f"Content-Type: application/json\r\nConnection: close\r\n\r\n")
    answer = exchange(port, head.encode() + body)
    assert statuses_in(answer) == [200], answer
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["rows"] == []  # no request cut short was written
