"""Time travel: an event dated ahead of the server's clock (docs/security.md, round twenty-nine).

The newest report on a system decides how the option fares (``recall.gate.newest_reports``) and freshness does not
decay before an event's time, so a report dated 2099 won over every honest later report until 2099. A ``ts`` later
than the clock by more than the skew allowed (``CLOCK_SKEW``) is refused, naming the field; past times are history
and stay allowed."""

from datetime import UTC, datetime, timedelta, timezone

import pytest

from hindbrain import Brain
from hindbrain.schemas import api
from hindbrain.schemas.api import InvalidInput

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
