"""The edge limits of ``hindbrain serve``: per-key rate (429 + Retry-After), body size, UTF-8."""

from __future__ import annotations

import http.client

from http_helpers import call, serving

from hindbrain.service import limits
from hindbrain.service.keys import KeyStore
from hindbrain.service.limits import MAX_BODY, TokenBuckets


def test_a_bucket_refills_at_its_rate_and_says_how_long_to_wait():
    now = [0.0]
    buckets = TokenBuckets(rate=10, burst=3, clock=lambda: now[0])
    assert [buckets.take("k") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert abs(buckets.take("k") - 0.1) < 1e-9  # empty: one token comes in 0.1 s
    assert buckets.take("other") == 0.0  # another key has its own bucket
    now[0] += 0.1
    assert buckets.take("k") == 0.0
    now[0] += 10
    assert [buckets.take("k") for _ in range(4)][-1] > 0  # refilled only up to the burst


def test_over_the_rate_a_key_gets_429_with_retry_after_and_nothing_is_written(tmp_path):
    key, other = KeyStore(tmp_path).create("acme", "a"), KeyStore(tmp_path).create("acme", "b")
    with serving(tmp_path, rate_limit=0.5, rate_burst=2) as (base, brain, _):
        statuses = [call(base, "POST", "/v1/perceive", {"text": f"event {n}"}, key)[0] for n in range(3)]
        assert statuses == [200, 200, 429]
        status, body, headers = call(base, "POST", "/v1/perceive", {"text": "one more"}, key)
        assert status == 429 and int(headers["Retry-After"]) >= 1 and "per API key" in body["detail"]
        assert call(base, "POST", "/v1/perceive", {"text": "the other key"}, other)[0] == 200
        assert call(base, "GET", "/healthz")[0] == 200  # operations routes are not limited
        texts = {r["text"] for r in brain.sql("SELECT text FROM events FINAL")}
        assert texts == {"event 0", "event 1", "the other key"}


def test_a_body_that_is_not_utf8_is_a_422_naming_the_byte_on_every_route(tmp_path):
    key = KeyStore(tmp_path).create("acme", "a")
    with serving(tmp_path) as (base, _, _):
        for path in ("/v1/perceive", "/v1/perceive/batch", "/v1/learn", "/v1/outcome", "/v1/sql", "/v1/invalidate"):
            status, body, _ = call(base, "POST", path, b'{"text": "caf\xe9"}', key)
            assert status == 422, (path, body)
            assert body["detail"][0]["msg"] == "the body is not UTF-8: byte 0xe9 at position 13"


def test_a_body_over_the_limit_is_a_413_before_it_is_read(tmp_path):
    key = KeyStore(tmp_path).create("acme", "a")
    with serving(tmp_path) as (base, _, _):
        host, port = base.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        conn.putrequest("POST", "/v1/perceive/batch")
        conn.putheader("Authorization", f"Bearer {key}")
        conn.putheader("Content-Length", str(MAX_BODY + 1))
        conn.endheaders()  # the answer comes before any byte of the body is sent
        answer = conn.getresponse()
        assert answer.status == 413 and b"at most" in answer.read()
        conn.close()


def test_idle_keys_are_forgotten_and_a_key_still_limited_is_kept(monkeypatch):
    monkeypatch.setattr(limits, "KEYS", 5)
    now = [0.0]
    buckets = TokenBuckets(rate=1, burst=1, clock=lambda: now[0])
    assert buckets.take("busy") == 0.0  # its bucket is empty now
    for n in range(20):  # guessed keys, one request each, far apart
        now[0] += 10
        buckets.take(f"guess-{n}")
        assert len(buckets._buckets) <= 6
    now[0] = 10_000.0
    buckets.take("busy")
    assert buckets.take("busy") > 0  # the key that used its token is still limited
