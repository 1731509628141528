"""Cues: exact cues are found (and non-cues are not), coordinates are the design.md §B3 ones, and a
query's cue terms meet the terms its memory was indexed under."""

import pytest

from hindbrain.recall.cues import coordinates, cue_terms, exact_cues, expected_vs_actual, query_cues
from hindbrain.recall.lexical import BM25Index
from hindbrain.recall.tokenize import tokens

SITUATION = {"system": "IAM", "identity": "normal account", "action": "submit change",
             "expected": "success message", "actual": "no response"}


@pytest.mark.parametrize(("text", "cue"), [
    ("403", "code:403"),
    ("HTTP 500 on save", "code:500"),
    ("error 502 from the gateway", "code:502"),
    ("error-503", "code:503"),
    ("got 401 Unauthorized", "code:401"),
    ("the page says 404 Not Found", "code:404"),
    ("提交后返回403，跳转到SSO登录页", "code:403"),
    ("状态码：429", "code:429"),
    ("页面显示500", "code:500"),
    ("the upload fails with 413", "code:413"),
    ("ORA-00942: table or view does not exist", "code:ora-00942"),
    ("net::ERR_CONNECTION_REFUSED", "code:err_connection_refused"),
    ("failed with 0x80070005", "code:0x80070005"),
    ("compiler says E1234", "code:e1234"),
    ("open failed: ENOENT", "code:enoent"),
    ("see https://IAM.example.com/roles/.", "url:https://iam.example.com/roles"),
    ("see https://iam.example.com/roles", "host:iam.example.com"),
    ("login at iam.corp.example.com then retry", "host:iam.corp.example.com"),
    ("POST /api/v1/roles returned nothing", "path:/api/v1/roles"),
    ("ask admin@corp.com", "account:admin@corp.com"),
    ("ping @ops-bot, please", "account:@ops-bot"),
    ("deploy as svc-deploy", "account:svc-deploy"),
    ("sudo as root", "account:root"),
    ("log in as Administrator", "account:admin"),
    ("the admin account works", "account:admin"),
    ("用管理员账号登录", "account:admin"),
    ("with a normal account it fails", "account:normal"),
    ("普通账号提交没反应", "account:normal"),
    ("IAM rejects it", "system:iam"),
    ("跳转到SSO登录页", "system:sso"),
    ("the K8S cluster", "system:k8s"),
    ("push to GitLab", "system:gitlab"),
    ("open a ServiceNow ticket", "system:servicenow"),
])
def test_exact_cues_are_found(text, cue):
    assert cue in exact_cues(text)


@pytest.mark.parametrize("text", [
    "wait 3 days", "released in 2024", "500 users signed up", "took 404 seconds", "timeout after 500ms",
    "version 1.2.403", "共500个", "HTTP/1.1", "the root cause was a timeout", "Kubernetes restarted the pod",
    "OK, please Submit the form", "see main.py and hindbrain.recall.cues", "and/or 1/2", "non-admin",
])
def test_non_cues_are_not_codes_systems_or_accounts(text):
    found = exact_cues(text)
    assert not {c for c in found if c.split(":")[0] in ("code", "system", "account", "host")}, found


def test_only_the_code_in_a_mixed_sentence_and_no_duplicates_from_parts():
    found = exact_cues("After 3 days in 2024 the SSO page returned 403 for admin@corp.com at https://sso.corp.com/x")
    assert {c for c in found if c.startswith("code:")} == {"code:403"}
    assert "account:admin" not in found  # the email's local part is not an account word
    assert "system:enoent" not in exact_cues("ENOENT") and "system:ora" not in exact_cues("ORA-00942")


def test_known_systems_match_any_case_and_cjk():
    assert "system:gitlab" in exact_cues("gitlab is down", known_systems=["GitLab"])
    assert "system:审批系统" in exact_cues("审批系统打不开", known_systems=["审批系统"])
    assert "system:gitlab" not in exact_cues("gitlabber is down", known_systems=["gitlab"])
    assert "system:gitlab" not in exact_cues("gitlab is down")  # lowercase product names are not guessed


def test_coordinates_of_an_anomalous_perception():
    coords = coordinates({**SITUATION, "action": "  Submit   Change ", "entities": ["Change Request"],
                          "scope": {"env": "prod", "task_type": "access-request", "team": None},
                          "reason": "Approver role missing", "ts_us": 1_700_000_000_000_000,
                          "text": "提交后返回403"})
    assert coords == {
        "entity": ["change request", "iam"],
        "scene": ["iam", "access-request"],
        "action": ["submit change"],
        "anomaly": ["expected success message / actual no response"],
        "cause": ["approver role missing"],
        "time": ["2023-11-14", "2023-W46", "2023-11", "2023", "month-11"],
        "scope": ["env=prod", "task_type=access-request"],
        "exact": ["account:normal", "code:403", "system:iam"],
    }


def test_empty_coordinates_are_omitted_and_equal_outcomes_are_not_anomalies():
    assert coordinates({}) == {}
    assert "anomaly" not in coordinates({"expected": "Saved", "actual": " saved "})
    assert coordinates({"kind": "anomaly", "actual": "blank page"})["anomaly"] == ["expected ? / actual blank page"]
    assert coordinates({"condition": "when IAM shows 403", "action": "switch account"})["exact"] == [
        "code:403", "system:iam"]
    assert coordinates({"ts_us": 0})["time"] == ["1970-01-01", "1970-W01", "1970-01", "1970", "month-01"]


def test_cue_terms_are_prefixed_lowercase_and_deterministic():
    coords = coordinates({**SITUATION, "scope": {"Env": "PROD"}, "ts_us": 1_700_000_000_000_000})
    terms = cue_terms(coords)
    assert terms == cue_terms(coordinates({**SITUATION, "scope": {"Env": "PROD"}, "ts_us": 1_700_000_000_000_000}))
    assert all(t.startswith("@") and t == t.lower() for t in terms)
    assert terms[:3] == ["@entity:iam", "@scene:iam", "@action:submit change"]
    assert {"@scope:env=prod", "@time:2023-w46", "@account:normal", "@system:iam"} <= set(terms)
    assert len(terms) == len(set(terms))
    assert not set(terms) & set(tokens("IAM normal account submit change prod 403"))  # never collide with words


def test_query_cues_meet_the_memory_they_should_recall():
    memory = cue_terms(coordinates({**SITUATION, "scope": {"env": "prod"}}))
    query = query_cues(None, SITUATION, {"env": "prod"})
    shared = set(memory) & set(query)
    assert {"@entity:iam", "@action:submit change", "@account:normal", "@scope:env=prod",
            "@anomaly:expected success message / actual no response"} <= shared
    assert query == query_cues(None, dict(reversed(SITUATION.items())), {"env": "prod"})


def test_an_exact_code_in_the_query_finds_the_memory_that_mentions_it():
    memories = [
        {"system": "CRM", "action": "export report", "text": "export fails with ORA-00942"},
        {"system": "IAM", "action": "submit change", "text": "returned 403 for a normal account"},
        {"system": "IAM", "action": "submit change", "text": "returned 502 after a timeout"},
    ]
    index = BM25Index()
    index.add_many([tokens(m["text"]) + cue_terms(coordinates(m)) for m in memories])
    for text, situation, want in [("页面返回403", {"system": "IAM"}, 1), ("ORA-00942 again", {}, 0),
                                  ("error 502", {"action": "Submit change"}, 2)]:
        ranked = [d for d, _ in index.top(query_cues(text, situation, {}), k=3)]
        assert ranked[0] == want, (text, ranked)


def test_expected_vs_actual_reads_as_the_seed_query():
    assert expected_vs_actual(SITUATION) == (
        "system: IAM / identity: normal account / action: submit change / expected: success message / "
        "actual: no response — expected success message but got no response")
    assert expected_vs_actual({"actual": "白屏"}) == "actual: 白屏 — got 白屏"
    assert expected_vs_actual({}) == ""
