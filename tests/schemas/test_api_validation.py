"""Edge validation: ``validated`` turns bad input into one ``InvalidInput`` naming the field.

The same models are exercised through ``Brain`` elsewhere; here they are called directly so a
failure points at the model, not at the facade.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hindbrain.schemas.api import (
    MAX_TEXT_BYTES,
    BelieveInput,
    InvalidInput,
    LearnInput,
    OutcomeInput,
    PerceiveInput,
    RecallInput,
    validated,
)

OK_PERCEIVE = {"tenant": "acme", "kind": "anomaly", "text": "clicked submit, nothing happened"}
OK_LEARN = {"tenant": "acme", "condition": "submit does nothing in IAM", "action": "switch to the admin account"}


def rejected(model, operation: str, **fields) -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        validated(model, operation, **fields)
    return info.value


def assert_names(err: InvalidInput, operation: str, field: str) -> None:
    assert isinstance(err, ValueError)
    assert err.operation == operation
    assert err.field == field
    assert str(err).startswith(f"{operation}: field {field!r}: ")


# -- accepted input ----------------------------------------------------------------------------------


def test_valid_input_builds_the_model():
    ts = datetime(2024, 6, 1, tzinfo=UTC)
    got = validated(PerceiveInput, "perceive", **OK_PERCEIVE, polarity=-1.0, success=True, ts=ts,
                    scope={"env": "prod"}, entities=["IAM"], emotion="calm")
    assert isinstance(got, PerceiveInput)
    assert (got.tenant, got.kind, got.polarity, got.success, got.ts) == ("acme", "anomaly", -1.0, True, ts)


def test_kind_defaults_to_message_and_action_alone_is_enough():
    assert validated(PerceiveInput, "perceive", tenant="acme", text="hi").kind == "message"
    assert validated(PerceiveInput, "perceive", tenant="acme", kind="action", action="submit").text is None


def test_text_of_exactly_64_kib_is_accepted():
    got = validated(PerceiveInput, "perceive", tenant="acme", text="a" * MAX_TEXT_BYTES)
    assert len(got.text) == 64 * 1024


@pytest.mark.parametrize("polarity", [-1.0, 0.0, 1.0, 1, -1])
def test_polarity_bounds_are_inclusive(polarity):
    assert validated(PerceiveInput, "perceive", **OK_PERCEIVE, polarity=polarity).polarity == polarity


# -- rejected input: perceive -----------------------------------------------------------------------


def test_missing_tenant():
    err = rejected(PerceiveInput, "perceive", text="hello")
    assert_names(err, "perceive", "tenant")
    assert "required" in str(err).lower()


@pytest.mark.parametrize("tenant", ["", None, 7])
def test_empty_or_wrong_tenant(tenant):
    assert_names(rejected(PerceiveInput, "perceive", tenant=tenant, text="hello"), "perceive", "tenant")


@pytest.mark.parametrize("kind", ["anomally", "Message", "", "decision"])
def test_unknown_kind(kind):
    err = rejected(PerceiveInput, "perceive", tenant="acme", kind=kind, text="hello")
    assert_names(err, "perceive", "kind")
    assert "'anomaly'" in str(err)  # the message lists what is allowed


@pytest.mark.parametrize(
    "fields",
    [{}, {"text": ""}, {"text": "   \n\t"}, {"action": ""}, {"text": "", "action": " "},
     {"text": None, "action": None}],
    ids=["neither", "empty-text", "blank-text", "empty-action", "both-blank", "both-none"],
)
def test_needs_text_or_action(fields):
    err = rejected(PerceiveInput, "perceive", tenant="acme", kind="observation", **fields)
    assert_names(err, "perceive", "text")
    assert "'text'" in str(err) and "'action'" in str(err)


def test_text_over_64_kib():
    err = rejected(PerceiveInput, "perceive", tenant="acme", text="a" * (MAX_TEXT_BYTES + 1))
    assert_names(err, "perceive", "text")
    assert str(MAX_TEXT_BYTES) in str(err)


def test_text_limit_counts_utf8_bytes_not_characters():
    text = "é" * (MAX_TEXT_BYTES // 2 + 1)  # fewer characters than the limit, more bytes
    assert len(text) < MAX_TEXT_BYTES
    assert_names(rejected(PerceiveInput, "perceive", tenant="acme", text=text), "perceive", "text")


@pytest.mark.parametrize("field", ["system", "identity", "action", "expected", "actual"])
def test_every_text_field_has_the_limit(field):
    fields = {**OK_PERCEIVE, field: "x" * (MAX_TEXT_BYTES + 1)}
    assert_names(rejected(PerceiveInput, "perceive", **fields), "perceive", field)


@pytest.mark.parametrize("value", [b"\xff\xfe not utf-8", b"plain ascii bytes", bytearray(b"hello")])
def test_bytes_instead_of_str(value):
    assert_names(rejected(PerceiveInput, "perceive", tenant="acme", text=value), "perceive", "text")


@pytest.mark.parametrize("value", ["\ud800", "ok \udfff ok", "\udcff"])
def test_lone_surrogate(value):
    err = rejected(PerceiveInput, "perceive", tenant="acme", text=value)
    assert_names(err, "perceive", "text")
    assert "UTF-8" in str(err)


def test_lone_surrogate_in_a_name_field():
    assert_names(rejected(PerceiveInput, "perceive", **OK_PERCEIVE, agent="agent-\ud800"), "perceive", "agent")


@pytest.mark.parametrize("value", [42, 4.2, ["clicked"], {"t": "x"}])
def test_wrong_type_for_text(value):
    assert_names(rejected(PerceiveInput, "perceive", tenant="acme", text=value), "perceive", "text")


@pytest.mark.parametrize("value", ["yes", "true", 1, 0, 1.0])
def test_wrong_type_for_success(value):
    assert_names(rejected(PerceiveInput, "perceive", **OK_PERCEIVE, success=value), "perceive", "success")


@pytest.mark.parametrize("value", [1.0001, -1.5, 2, float("inf"), float("-inf"), float("nan")])
def test_polarity_out_of_range(value):
    assert_names(rejected(PerceiveInput, "perceive", **OK_PERCEIVE, polarity=value), "perceive", "polarity")


@pytest.mark.parametrize("value", ["0.5", True, "positive"])
def test_polarity_of_the_wrong_type(value):
    assert_names(rejected(PerceiveInput, "perceive", **OK_PERCEIVE, polarity=value), "perceive", "polarity")


def test_unknown_signal():
    assert_names(rejected(PerceiveInput, "perceive", **OK_PERCEIVE, signal="loud"), "perceive", "signal")


def test_unknown_field_is_rejected_not_dropped():
    assert_names(rejected(PerceiveInput, "perceive", **OK_PERCEIVE, txet="typo"), "perceive", "txet")


def test_nested_fields_are_named_by_path():
    assert_names(rejected(PerceiveInput, "perceive", **OK_PERCEIVE, scope={"env": 5}), "perceive", "scope.env")
    assert_names(rejected(PerceiveInput, "perceive", **OK_PERCEIVE, entities=["IAM", ""]), "perceive", "entities.1")


def test_only_the_first_bad_field_is_reported():
    err = rejected(PerceiveInput, "perceive", tenant="acme", kind="nope", text="hi", success="yes")
    assert err.field == "kind"


# -- rejected input: learn, recall, outcome --------------------------------------------------------------


def test_read_knowledge_without_citation():
    for citation in (None, "", "  "):
        err = rejected(LearnInput, "learn", **OK_LEARN, source="read", citation=citation)
        assert_names(err, "learn", "citation")
        assert "citation" in str(err).split(": ", 2)[2]
    ok = validated(LearnInput, "learn", **OK_LEARN, source="read", citation="IAM handbook §4.2")
    assert ok.citation == "IAM handbook §4.2"


def test_lived_experience_needs_no_citation():
    assert validated(LearnInput, "learn", **OK_LEARN).source == "lived"


@pytest.mark.parametrize("field", ["condition", "action"])
def test_learn_needs_condition_and_action(field):
    assert_names(rejected(LearnInput, "learn", **{**OK_LEARN, field: " "}), "learn", field)
    missing = {k: v for k, v in OK_LEARN.items() if k != field}
    assert_names(rejected(LearnInput, "learn", **missing), "learn", field)


@pytest.mark.parametrize("value", [1.5, -0.1, "0.9", True])
def test_confidence_is_a_probability(value):
    assert_names(rejected(LearnInput, "learn", **OK_LEARN, confidence=value), "learn", "confidence")


def test_unknown_source():
    assert_names(rejected(LearnInput, "learn", **OK_LEARN, source="rumour"), "learn", "source")


def test_recall_needs_a_cue():
    err = rejected(RecallInput, "recall", tenant="acme", situation={"system": " "})
    assert_names(err, "recall", "query")
    assert validated(RecallInput, "recall", tenant="acme", situation={"system": "IAM"}).query is None


def test_recall_rejects_unknown_trigger_and_situation_keys():
    assert_names(rejected(RecallInput, "recall", tenant="acme", query="q", trigger="panic"), "recall", "trigger")
    err = rejected(RecallInput, "recall", tenant="acme", situation={"mood": "bad"})
    assert err.field.startswith("situation")


@pytest.mark.parametrize("value", [0, -1, 100_001, "400", 4.0])
def test_recall_budget(value):
    assert_names(rejected(RecallInput, "recall", tenant="acme", query="q", budget_tokens=value), "recall",
                 "budget_tokens")


def test_outcome_needs_a_real_boolean():
    assert_names(rejected(OutcomeInput, "outcome", tenant="acme"), "outcome", "success")
    assert_names(rejected(OutcomeInput, "outcome", tenant="acme", success="yes"), "outcome", "success")
    assert_names(rejected(OutcomeInput, "outcome", tenant="acme", success=True, steps=-1), "outcome", "steps")
    assert validated(OutcomeInput, "outcome", tenant="acme", success=False).success is False


def test_models_are_frozen():
    got = validated(PerceiveInput, "perceive", **OK_PERCEIVE)
    with pytest.raises(ValueError):
        got.tenant = "other"


def test_blank_tenant_is_refused():
    with pytest.raises(InvalidInput) as err:
        validated(PerceiveInput, "perceive", tenant="   ", text="x")
    assert err.value.field == "tenant" and "blank" in str(err.value)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("model, operation, fields, field", [
    (LearnInput, "learn", OK_LEARN, "confidence"),
    (BelieveInput, "believe", {"tenant": "acme", "text": "IAM submits are slow"}, "confidence"),
    (PerceiveInput, "perceive", OK_PERCEIVE, "polarity"),
])
def test_a_number_that_is_not_finite_is_refused_as_such(model, operation, fields, field, value):
    # round thirty: NaN was refused as "should be less than or equal to 1", which it is not greater than either
    error = rejected(model, operation, **fields, **{field: value})
    assert error.field == field and "finite number" in str(error)
