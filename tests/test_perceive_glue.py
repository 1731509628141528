"""Round nineteen (issue 28): ``Brain._perceive_many``'s own passes over a checked batch (a refusal looked for, one
tenant, the pairs submitted, the ids answered) in C-level passes, the batch looked at event by event only when one
of them is refused or names another tenant. The former body is kept here as the oracle: the same records submitted
and ids answered, or the same refusal (its field and its words)."""

from __future__ import annotations

from contextlib import nullcontext
from types import SimpleNamespace

from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.brain import Brain, one_tenant
from hindbrain.schemas.api import InvalidInput


def _former(self, events, producer):
    checked = self._checked_perceptions(events, producer)
    for n, result in enumerate(checked):
        if isinstance(result, InvalidInput):
            message = str(result).removeprefix(f"{result.operation}: field {result.field!r}: ")
            raise InvalidInput(result.operation, result.field, f"event #{n}: {message}")
    one_tenant(checked)
    self.runner.submit([("perception", r) for r in checked])
    return [r["envelope"]["record_id"] for r in checked]


records = st.builds(lambda tenant, n: {"envelope": {"tenant": tenant, "record_id": f"ev_{n}"}, "kind": "action"},
                    st.sampled_from(["acme", "acme", "acme", "globex", "工单"]), st.integers(0, 99))
refusals = st.builds(InvalidInput, st.just("perceive"), st.sampled_from(["text", "kind", "event_id"]),
                     st.sampled_from(["a bad value", "an id already used for other content"]))


def _outcome(body, checked: list) -> tuple:
    submitted = []
    fake = SimpleNamespace(_checked_perceptions=lambda events, producer: list(checked),
                           _importing=lambda events: nullcontext(),
                           runner=SimpleNamespace(submit=submitted.append))
    try:
        answer = body(fake, ["the events"], "sdk/hindbrain")
    except InvalidInput as exc:
        return "refused", exc.operation, exc.field, str(exc), submitted
    return "answered", answer, submitted


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.one_of(records, records, records, refusals), max_size=12))
def test_a_checked_batch_is_submitted_or_refused_as_the_former_loops(checked):
    assert _outcome(Brain._perceive_many, checked) == _outcome(_former, checked)


def test_the_first_refused_event_and_the_first_other_tenant_are_named():
    acme, globex = ({"envelope": {"tenant": t, "record_id": f"ev_{t}"}} for t in ("acme", "globex"))
    refused = _outcome(Brain._perceive_many, [acme, InvalidInput("perceive", "text", "too long"), globex])
    assert refused[:3] == ("refused", "perceive", "text") and "event #1: too long" in refused[3] and not refused[4]
    other = _outcome(Brain._perceive_many, [acme, acme, globex])
    assert other[:3] == ("refused", "perceive", "tenant") and "event #2" in other[3] and not other[4]
    assert _outcome(Brain._perceive_many, [acme, acme]) == ("answered", ["ev_acme"] * 2,
                                                            [[("perception", acme), ("perception", acme)]])
