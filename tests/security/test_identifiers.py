"""Two agents can never be one agent under two spellings (docs/security.md, round twenty-eight).

Fleet verification counts agents and a unit keeps who stands behind it; round twenty-seven found ``bot-1``,
``bot-1 ``, ``bot\u200b-1``, ``BOT-1`` and a Cyrillic ``bоt-1`` were five agents, which the one escape prints
alike. Now an identifier a caller sets (tenant, agent, task, session, user …) that would print like another is
refused at the edge, naming the field — in the model and in the C fast path of perceive — and the case of an
agent's name does not make another agent. Texts and speaker names keep every character (ZWNJ joins Persian
letters)."""

import json

import pytest

from hindbrain import Brain
from hindbrain.schemas.api import InvalidInput, common_perceive_many, identifier_problem
from hindbrain.service.keys import KeyStore

LESSON = {"condition": "the nightly export stalls at 02:00", "action": "restart the export worker, then re-run it"}

# spellings of "bot-1" that print like it, and the part of the error that says why
SPELLINGS = {
    "bot\u200b-1": "show every character",  # zero-width space
    "bot\u2060-1": "show every character",  # word joiner
    "\u202ebot-1": "show every character",  # right-to-left override
    "bot-1\u00ad": "show every character",  # soft hyphen
    "bot-1 ": "space",
    " bot-1": "space",
    "bot  1": "space",
    "bot\u00a01": "show every character",  # no-break space
    "bot-1\t": "show every character",
    "b\u043et-1": "one script",  # Cyrillic o
    "\u0432ot-1": "one script",  # Cyrillic ve beside Latin
    "\uff42\uff4f\uff54-1": "NFKC",  # fullwidth
    "bot-\u00b9": "NFKC",  # superscript one
    # round thirty-one: default ignorable characters that are not format ones, and code points no font draws
    "bot\u034f-1": "show every character",  # combining grapheme joiner
    "bot\u1160-1": "show every character",  # Hangul jungseong filler: a letter, allowed beside Latin
    "bot\u115f-1": "show every character",  # Hangul choseong filler
    "bot\u17b4-1": "show every character",  # Khmer inherent vowel
    "bot\u180b-1": "show every character",  # Mongolian free variation selector
    "bot-1\ufe0f": "show every character",  # variation selector 16
    "bot-1\U000e0100": "show every character",  # variation selector 17
    "bot-1\u0378": "show every character",  # unassigned
    "bot-1\ue000": "show every character",  # private use
}


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("field", ["tenant", "agent", "task", "session"])
def test_a_perceived_identifier_that_prints_like_another_is_refused_naming_its_field(tmp_path_factory, field,
                                                                                     spelling):
    event = {"tenant": "acme", "text": "the export stalled", field: spelling}
    assert common_perceive_many([event]) == [None]  # the C fast path leaves it to the model
    with pytest.raises(InvalidInput) as caught:
        _BRAIN.perceive(**event)
    assert caught.value.field == field and SPELLINGS[spelling] in str(caught.value)


@pytest.mark.parametrize("call, field", [
    (lambda b: b.learn(tenant="acme", agent="bot\u200b-1", **LESSON), "agent"),
    (lambda b: b.learn(tenant="acme", task="t\u202e1", **LESSON), "task"),
    (lambda b: b.recall(tenant="acme", query="export", user="b\u043eb"), "user"),
    (lambda b: b.recall(tenant="acme ", query="export"), "tenant"),
    (lambda b: b.outcome(tenant="acme", agent="bot-1\u200c", success=True), "agent"),
])
def test_other_operations_refuse_them_too(call, field):
    with pytest.raises(InvalidInput) as caught:
        call(_BRAIN)
    assert caught.value.field == field


def test_texts_speakers_and_plain_identifiers_of_any_script_pass():
    persian = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"  # ZWNJ inside a Persian word
    for name in ("bot-1", "BOT-1", "acme x", "acme'", "\u5c71\u7530\u592a\u90ce", "Tanaka \u592a\u90ce",
                 "\u0418\u0432\u0430\u043d", "\u03b1\u03b2\u03b3-2", "\u0639\u0644\u064a"):
        assert identifier_problem(name) is None, name
    _BRAIN.perceive(tenant="acme", agent="bot-1", speaker="\u0639\u0644\u200c\u064a", text=persian)
    [row] = _BRAIN.sql("SELECT text, speaker FROM events WHERE text = {t:String}", {"t": persian})
    assert row["speaker"] == "\u0639\u0644\u200c\u064a"  # a speaker's name is text: kept as said


def last_unit(b, fid: str) -> dict:
    rows = b.sql("SELECT payload_json FROM decisions FINAL WHERE has(subject_ids, {f:String}) ORDER BY _offset",
                 {"f": fid})
    return json.loads(rows[-1]["payload_json"])["unit"]


def test_an_agent_s_name_in_another_case_is_the_same_agent():
    b = _BRAIN  # one chDB engine a process: the module's brain, a tenant of this test's own
    fid = b.learn(tenant="case", agent="bot-1", **LESSON)
    b.learn(tenant="case", agent="BOT-1", **LESSON)
    b.learn(tenant="case", agent="Bot-1", **LESSON)
    unit = last_unit(b, fid)
    assert unit["agents"] == ["bot-1"] and round(unit["confidence"], 2) == 0.60
    b.learn(tenant="case", agent="bot-2", **LESSON)  # another agent still adds up
    assert last_unit(b, fid)["agents"] == ["bot-1", "bot-2"]


_BRAIN = None


@pytest.fixture(scope="module", autouse=True)
def _brain(tmp_path_factory):
    global _BRAIN
    with Brain.open(tmp_path_factory.mktemp("ids") / "b", embedder="none") as _BRAIN:
        yield
    _BRAIN = None


@pytest.mark.parametrize("field, fields", [("tenant", {"tenant": "acme\u200b"}),
                                           ("agent", {"tenant": "acme", "agent": "b\u043et-1"}),
                                           ("agent", {"tenant": "acme", "agent": "bot-1 "})])
def test_a_key_is_not_minted_for_an_identifier_that_prints_like_another(tmp_path, field, fields):
    keys = KeyStore(tmp_path)
    with pytest.raises(InvalidInput) as caught:
        keys.create(label="k", role="agent", **fields)
    assert caught.value.field == field and keys.list() == []


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
@pytest.mark.parametrize("key", ["user", "session"])
def test_a_scope_user_or_session_that_prints_like_another_is_refused_naming_scope(key, spelling):
    # round twenty-nine: a preference binds to scope["user"] (or ["session"]), the gate gives a user's own words
    # back to that user and the summaries count each scope["user"] as a reporter: "bob" and "bob\u200b" were two
    event = {"tenant": "acme", "text": "I prefer e-mail", "scope": {key: spelling.replace("bot-1", "bob")}}
    assert common_perceive_many([event]) == [None]  # the C fast path leaves it to the model
    for call in (lambda: _BRAIN.perceive(**event), lambda: _BRAIN.learn(tenant="acme", scope=event["scope"], **LESSON),
                 lambda: _BRAIN.recall(tenant="acme", query="export", scope=event["scope"])):
        with pytest.raises(InvalidInput) as caught:
            call()
        assert caught.value.field == "scope" and f"scope[{key!r}]" in str(caught.value), caught.value


def test_other_scope_values_keep_their_characters():
    scope = {"user": "bob", "session": "s-1", "region": " eu\u200b-west ", "note": "b\u043eb"}
    assert common_perceive_many([{"tenant": "acme", "text": "x", "scope": {"user": "bob", "session": "s-1"}}]) != [None]
    event_id = _BRAIN.perceive(tenant="acme", text="scoped as said", scope=scope)
    [row] = _BRAIN.sql("SELECT scope FROM events WHERE event_id = {e:String}", {"e": event_id})
    assert row["scope"] == scope


# Every field of every operation's input that names who or what (a tenant, an agent, a task, a session, a user, an
# approver, who invalidated): the wall is the class, not the fields an example happened to name.
IDENTITY_FIELDS = {"tenant", "agent", "task", "session", "user", "approver", "by"}


def _inputs():
    from hindbrain.schemas import api
    return [m for m in vars(api).values() if isinstance(m, type) and issubclass(m, api._Input) and m is not api._Input]


@pytest.mark.parametrize("model", _inputs(), ids=lambda m: m.__name__)
def test_every_identity_field_of_every_input_refuses_a_spelling_that_prints_like_another(model):
    from pydantic import ValidationError
    named = IDENTITY_FIELDS & set(model.model_fields)
    assert "tenant" in named  # every operation names its tenant
    for field in named:
        with pytest.raises(ValidationError) as caught:
            model.model_validate({field: "bot\u200b-1"})
        assert any(e["loc"] == (field,) and "show every character" in e["msg"] for e in caught.value.errors()), field
