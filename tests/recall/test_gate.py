"""The cognitive gate, stage by stage, on hand-made candidates."""

from hindbrain.recall.gate import GateItem, gate, injection_value
from hindbrain.recall.index import Doc


def doc(id, text="a rule", *, kind="fragment", layer="experience", confidence=0.8, scope=None, tokens=10,
        status="verified", conflicts=(), event_kind=None):
    return Doc(id, kind, layer, text, [], "lived", confidence, scope or {}, 0, tokens, status=status,
               conflicts=frozenset(conflicts), event_kind=event_kind)


def item(d, relevance=0.5, match=1.0):
    return GateItem(d, relevance, match, {})


def stages(cut):
    return {c["id"]: c["stage"] for c in cut}


def test_prod_forbids_admin_and_test_uses_admin_are_kept_apart_by_scope():
    """Seed 000 exp. 7: both are relevant; without scopes better retrieval is more dangerous."""
    prod = doc("fr_prod", "in production never use the admin account; request a change ticket", scope={"env": "prod"})
    test = doc("fr_test", "in the test environment use the admin account to change roles", scope={"env": "test"})
    selected, cut = gate([item(test, 0.9), item(prod, 0.8)], {"env": "prod"}, 400, None)
    assert [i.id for i in selected] == ["fr_prod"]
    assert stages(cut) == {"fr_test": "scope"} and "env=test does not match env=prod" in cut[0]["reason"]
    selected, _ = gate([item(test, 0.9), item(prod, 0.8)], {"env": "test"}, 400, None)
    assert [i.id for i in selected] == ["fr_test"]
    # With no scope given both come back, each carrying its scope for the agent to see.
    selected, _ = gate([item(test, 0.9), item(prod, 0.8)], {}, 400, None)
    assert {i.id for i in selected} == {"fr_prod", "fr_test"}


def test_invalidated_conflicting_and_incredible_items_are_cut_with_their_stage():
    good = doc("fr_good", "switch to the admin account when submit does nothing")
    rival = doc("fr_rival", "keep clicking submit until it works", conflicts={"fr_good"})
    gone = doc("fr_gone", "the old IAM console needs a VPN", status="invalid")
    weak = doc("fr_weak", "maybe restart the browser", confidence=0.2)
    selected, cut = gate([item(good, 0.9), item(rival, 0.8), item(gone, 0.7), item(weak, 0.6)], {}, 400, None)
    assert [i.id for i in selected] == ["fr_good"]
    assert stages(cut) == {"fr_rival": "conflict", "fr_gone": "invalidation", "fr_weak": "credibility"}


def test_near_duplicates_keep_the_better_ranked():
    a = doc("fr_a", "when submit does nothing in IAM switch to the admin account")
    b = doc("fr_b", "when submit does nothing in IAM, switch to the admin account!")
    selected, cut = gate([item(a, 0.9), item(b, 0.8)], {}, 400, None)
    assert [i.id for i in selected] == ["fr_a"] and cut[0]["reason"] == "near-duplicate of fr_a"


def test_the_budget_is_filled_by_worth_skipping_what_does_not_fit_and_k_keeps_the_worthiest():
    long_rule = doc("fr_long", "a long rule " * 10, tokens=80)
    short_rule = doc("fr_short", "check permissions first", tokens=10)
    chat = doc("ev_chat", "we talked about lunch", kind="event", layer="episodic", tokens=10, event_kind="message")
    items = [item(long_rule, 0.9), item(short_rule, 0.7), item(chat, 0.7)]
    assert injection_value(items[1]) > injection_value(items[2])  # actionability: a rule beats a chat line
    selected, cut = gate(items, {}, 50, None)
    assert [i.id for i in selected] == ["fr_short", "ev_chat"]
    assert stages(cut) == {"fr_long": "budget"} and "80 tokens do not fit" in cut[0]["reason"]
    # the most relevant rule first when it fits, not the cheapest items (value per token would
    # have taken the two short ones and left no room for it)
    selected, cut = gate(items, {}, 90, None)
    assert [i.id for i in selected] == ["fr_long", "fr_short"] and stages(cut) == {"ev_chat": "budget"}
    # k is "the k best": the most relevant rule, which the budget can afford, not the cheapest
    selected, cut = gate(items, {}, 500, 1)
    assert [i.id for i in selected] == ["fr_long"] and {c["reason"] for c in cut} == {"beyond k=1"}
    selected, cut = gate(items, {}, 500, 2)
    assert [i.id for i in selected] == ["fr_long", "fr_short"] and stages(cut) == {"ev_chat": "budget"}
    assert gate(items, {}, 500, None, reserved_tokens=495)[0] == []


def test_placement_puts_knowledge_before_rules_before_events():
    event = doc("ev_1", "the page spun forever", kind="event", layer="episodic", event_kind="anomaly")
    rule = doc("fr_1", "check permissions first")
    fact = doc("fr_2", "IAM roles change only through tickets", layer="knowledge")
    selected, _ = gate([item(event, 0.9), item(rule, 0.5), item(fact, 0.4)], {}, 400, 3)  # k: no relevance floor
    assert [i.id for i in selected] == ["fr_2", "fr_1", "ev_1"]
    assert [i.why["gate"]["placement"] for i in selected] == [0, 1, 2]


def test_an_item_that_covers_no_new_query_term_is_cut_once_the_gap_is_filled():
    """Seed 000: fill the gap, not the budget. The Vault rule answers the query; an IAM rule
    that matched only "the" and a second rule on the same terms add tokens, not answers.
    Events are the timeline and are never "covered"."""
    vault = GateItem(doc("fr_vault", "read the secret in Vault: request a break-glass token"), 0.6, 1.0, {},
                     frozenset({"vault", "secret", "read"}))
    same = GateItem(doc("fr_same", "read the secret in Vault: ask on-call"), 0.5, 1.0, {}, frozenset({"vault", "read"}))
    other = GateItem(doc("fr_iam", "submit the change as admin"), 0.3, 1.0, {}, frozenset())
    new = GateItem(doc("fr_user", "answer bob in five bullet points"), 0.3, 1.0, {}, frozenset({"bob"}))
    by_meaning = GateItem(doc("fr_sem", "secrets rotate on Mondays"), 0.3, 1.0, {})  # no lexical terms to compare
    story = GateItem(doc("ev_1", "read the secret in Vault: 403", kind="event", layer="episodic",
                         event_kind="anomaly"), 0.4, 1.0, {}, frozenset({"vault", "read"}))  # the timeline is no answer
    selected, cut = gate([vault, same, other, new, by_meaning, story], {}, 400, None)
    assert {i.id for i in selected} == {"fr_vault", "fr_user", "fr_sem", "ev_1"}
    assert stages(cut) == {"fr_same": "covered", "fr_iam": "covered"}
    assert "function words and field labels only" in next(c["reason"] for c in cut if c["id"] == "fr_iam")
    # Alone, a rule with an informative term is never "covered": the first selection stands.
    assert [i.id for i in gate([same], {}, 400, None)[0]] == ["fr_same"]


def test_an_event_a_selected_unit_rests_on_is_cut_as_compressed_into_it():
    anomaly = doc("ev_403", "403 while reading the secret", kind="event", layer="episodic", event_kind="anomaly")
    rule = Doc("fr_rule", "fragment", "experience", "when reading the secret gives 403, request a break-glass token",
               ["ev_403"], "lived", 0.8, {}, 0, 10, status="verified")
    other = doc("ev_other", "the vault was slow yesterday", kind="event", layer="episodic", event_kind="observation")
    selected, cut = gate([item(anomaly, 0.9), item(rule, 0.8), item(other, 0.5)], {}, 400, None)
    assert [i.id for i in selected] == ["fr_rule", "ev_other"]
    assert cut == [{"id": "ev_403", "stage": "covered", "reason": "compressed into fr_rule, which is selected"}]
