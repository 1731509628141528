"""Time travel: an event dated ahead of the server's clock (docs/security.md, round twenty-nine).

The newest report on a system decides how the option fares (``recall.gate.newest_reports``) and freshness does not
decay before an event's time, so a report dated 2099 won over every honest later report until 2099. A ``ts`` later
than the clock by more than the skew allowed (``CLOCK_SKEW``) is refused, naming the field; past times are history
and stay allowed."""

import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from hindbrain import Brain
from hindbrain.schemas import api
from hindbrain.schemas.api import InvalidInput

sys.path.append(str(Path(__file__).resolve().parents[1] / "service"))
from http_helpers import call, serving  # noqa: E402

REPORT = {"tenant": "acme", "kind": "outcome", "system": "Mailer", "action": "send through smtp relay",
          "origin": "agent"}


@pytest.fixture
def brain(tmp_path):
    with Brain.open(tmp_path / "b", embedder="none") as b:
        yield b


def test_a_report_dated_in_the_future_is_refused_and_the_honest_newer_one_is_recalled(brain):
    with pytest.raises(InvalidInput, match="field 'ts'.*later than this server's clock"):
        brain.perceive(**REPORT, agent="bot-1", task="t1", success=True, text="smtp relay worked",
                       ts=datetime(2099, 1, 1, tzinfo=UTC))
    brain.perceive(**REPORT, agent="bot-1", task="t1", success=True, text="smtp relay worked",
                   ts=datetime.now(UTC) - timedelta(days=1))
    brain.perceive(**REPORT, agent="bot-2", task="t2", success=False, text="smtp relay failed after the change")
    pack = brain.recall(tenant="acme", agent="bot-3", task="t3", query="Mailer smtp relay send mail")
    assert [item.text.split(" — ")[0] for item in pack.items] == ["smtp relay failed after the change"]


@pytest.mark.parametrize("ts, refused", [
    (lambda now: now + api.CLOCK_SKEW + timedelta(seconds=30), True),
    (lambda now: (now + timedelta(days=1)).replace(tzinfo=None), True),  # naive: UTC
    (lambda now: (now + timedelta(hours=2)).astimezone(timezone(timedelta(hours=3))), True),
    (lambda now: now + api.CLOCK_SKEW - timedelta(seconds=30), False),  # clock skew between hosts
    (lambda now: now.astimezone(timezone(timedelta(hours=-10))), False),  # now, in another offset
    (lambda now: datetime(1999, 1, 1), False),  # history
])
def test_the_clock_s_edge(ts, refused):
    fields = {"tenant": "acme", "text": "x", "ts": ts(datetime.now(UTC))}
    if refused:
        with pytest.raises(InvalidInput, match="field 'ts'"):
            api.validated(api.PerceiveInput, "perceive", **fields)
    else:
        assert api.validated(api.PerceiveInput, "perceive", **fields).ts == fields["ts"]


# Round thirty: the skew allowed is a setting (a simulated clock, a replay of logs written where the clock ran ahead).
AHEAD = {"tenant": "acme", "text": "the simulator's clock runs an hour ahead"}


def _an_hour_ahead() -> dict:
    return {**AHEAD, "ts": datetime.now(UTC) + timedelta(hours=1)}


def test_the_refusal_names_the_setting_that_widens_it(brain):
    with pytest.raises(InvalidInput, match="field 'ts'.*HINDBRAIN_CLOCK_SKEW_SECONDS"):
        brain.perceive(**_an_hour_ahead())


@pytest.mark.parametrize("how", ["constructor", "environment"])
def test_a_brain_set_to_a_wider_skew_takes_events_that_far_ahead_by_every_perceive(tmp_path, monkeypatch, how):
    settings = {"clock_skew_seconds": 2 * 3600} if how == "constructor" else {}
    if how == "environment":
        monkeypatch.setenv("HINDBRAIN_CLOCK_SKEW_SECONDS", "7200")
    with Brain.open(tmp_path / "b", embedder="none", **settings) as wide:
        ids = [wide.perceive(**_an_hour_ahead()), *wide.perceive_many([_an_hour_ahead()]),
               *wide.perceive_each([_an_hour_ahead()])]
        assert all(isinstance(i, str) for i in ids)
        refused = wide.perceive_each([{**AHEAD, "ts": datetime.now(UTC) + timedelta(hours=3)}])[0]
        assert isinstance(refused, InvalidInput) and refused.field == "ts" and "7200 s" in str(refused)


@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), "an hour"])
def test_a_bad_skew_setting_is_refused_naming_it(tmp_path, value):
    with pytest.raises(ValueError, match="clock_skew_seconds"):
        Brain.open(tmp_path / "b", embedder="none", clock_skew_seconds=value)


def test_the_client_leaves_the_skew_to_the_server():
    from hindbrain.client import checked

    checked("perceive", _an_hour_ahead(), None)  # the server's own setting decides (it may be wider)
    with pytest.raises(InvalidInput, match="field 'ts'"):
        checked("perceive", {**AHEAD, "ts": datetime(10000 - 1, 12, 31, 23, tzinfo=timezone(-timedelta(hours=5)))},
                None)  # its form it still checks: past the year 9999 in UTC


def test_a_server_set_to_a_wider_clock_skew_takes_events_that_far_ahead(tmp_path):
    def ahead(hours: int) -> dict:
        return {"text": "the simulator's clock runs ahead",
                "ts": (datetime.now(UTC) + timedelta(hours=hours)).isoformat()}

    with serving(tmp_path / "wide", clock_skew_seconds=7200) as (base, _, keys):
        key = keys.create("acme", "tests", "admin")
        assert call(base, "POST", "/v1/perceive", ahead(1), key)[0] == 200
        assert call(base, "POST", "/v1/perceive/batch", {"events": [ahead(1)]}, key)[0] == 200
        status, body, _ = call(base, "POST", "/v1/perceive", ahead(3), key)
        assert status == 422 and "ts" in str(body) and "7200 s" in str(body)
