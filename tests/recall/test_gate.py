"""The cognitive gate, stage by stage, on hand-made candidates."""

import pytest
from budget import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall.documents import Doc
from hindbrain.recall.gate import (
    NEAR_DUPLICATE,
    GateItem,
    first_near_duplicate,
    gate,
    injection_value,
    near_duplicate,
)


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
    assert [i.placement for i in selected] == [0, 1, 2]


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


def test_a_task_start_draws_on_lessons_not_on_other_conversations_or_its_own_turns():
    """design.md §issue-17: a ticket's recall brought back its own text and seven other customers' tickets."""
    own = doc("ev_own", "user: the API times out", kind="event", layer="episodic", event_kind="message")
    own.task = "t1"
    other = doc("ev_other", "user: the API times out again", kind="event", layer="episodic", event_kind="message")
    hers = doc("ev_hers", "Priya: I asked for bullet points", kind="event", layer="episodic", event_kind="feedback")
    hers.speaker = "Priya"
    done = doc("ev_done", "moved the key to eu-1: worked", kind="event", layer="episodic", event_kind="action")
    candidates = [item(own, 1.0), item(other, 0.9), item(hers, 0.8), item(done, 0.7)]
    selected, cut = gate(candidates, {}, 400, None, task="t1", trigger="task_start", user="Priya")
    assert [i.id for i in selected] == ["ev_hers", "ev_done"]
    assert stages(cut) == {"ev_own": "context", "ev_other": "covered"}
    # A conversational lookup (no trigger) keeps other conversations' turns; k asks for them too.
    assert "ev_other" in [i.id for i in gate(candidates, {}, 400, None, task="t1")[0]]
    assert "ev_other" in [i.id for i in gate(candidates, {}, 400, 3, task="t1", trigger="task_start")[0]]


def test_a_decisions_weak_events_and_a_retold_lesson_are_cut_but_evidence_against_it_stays():
    rule = doc("fr_vpn", "when connecting in VPN fails, switch to the backup endpoint")
    rule.links = ("@entity:vpn", "@action:switch to the backup endpoint")
    retold = doc("ev_ok", "switch to the backup endpoint worked", kind="event", layer="episodic", event_kind="action")
    retold.links = rule.links
    against = doc("ev_bad", "switch to the backup endpoint: refused", kind="event", layer="episodic",
                  event_kind="anomaly")
    against.links = rule.links
    far = doc("ev_far", "the invoice export in billing worked", kind="event", layer="episodic", event_kind="action")
    candidates = [item(rule, 0.9), item(retold, 0.8), item(against, 0.7), item(far, 0.3)]
    selected, cut = gate(candidates, {}, 400, None, trigger="task_start")
    assert [i.id for i in selected] == ["fr_vpn", "ev_bad"]
    assert stages(cut) == {"ev_ok": "covered", "ev_far": "covered"}
    assert "under 50% of the best candidate's" in next(c["reason"] for c in cut if c["id"] == "ev_far")
    # A plain lookup ranks its events instead of judging them against a decision.
    assert "ev_far" in [i.id for i in gate(candidates, {}, 400, None)[0]]


def test_a_chain_from_a_seed_that_only_matched_field_labels_is_no_chain():
    best = doc("fr_best", "when opening a ticket in 权限平台 fails, fill in the project code")
    other = doc("fr_crm", "when syncing in CRM fails, reauthorize the connector")
    # entity and action shared with a weak seed, then with a strong one
    _, cut = gate([item(best, 0.8), GateItem(other, 0.05, 1.0, chain=0.04)], {}, 400, None)
    assert stages(cut) == {"fr_crm": "covered"}
    selected, _ = gate([item(best, 0.8), GateItem(other, 0.05, 1.0, chain=0.6)], {}, 400, None)
    assert "fr_crm" in [i.id for i in selected]  # the next step of a chain the search found well


def test_the_explanation_never_changes_the_recall():
    """design.md §issue-29: the gate reads typed fields, never ``why``, and writes nothing into it. The same
    candidates with an empty explanation and with one that claims a strong chain and a close meaning
    give the same selection and the same cuts, and the explanations come back untouched."""
    def candidates(why):
        return [GateItem(doc("fr_best", "when opening a ticket in 权限平台 fails, fill in the project code"), 0.8, 1.0,
                         why()),
                GateItem(doc("fr_crm", "when syncing in CRM fails, reauthorize the connector"), 0.05, 1.0, why(),
                         chain=0.04),
                GateItem(doc("ev_far", "the printer on floor 3 jammed", kind="event", layer="episodic",
                             event_kind="observation"), 0.1, 1.0, why(), frozenset()),
                GateItem(doc("fr_test", "use the admin account", scope={"env": "test"}), 0.9, 1.0, why())]

    def lying():
        return {"graph": {"score": 1.0, "chain": 1.0}, "semantic": {"score": 1.0}, "gate": {"stage": "selected"}}

    plain, told = candidates(dict), candidates(lying)
    a, b = (gate(c, {"env": "prod"}, 400, None, trigger="task_start") for c in (plain, told))
    assert [i.id for i in a[0]] == [i.id for i in b[0]] == ["fr_best"] and a[1] == b[1]
    assert [i.why for i in plain] == [{}] * 4 and [i.why for i in told] == [lying()] * 4
    assert {i.id: i.explanation()["stage"] for i in plain} == {"fr_best": "selected", "fr_crm": "covered",
                                                              "ev_far": "covered", "fr_test": "scope"}


def test_a_rule_in_review_gives_way_to_the_sound_rule_it_conflicts_with_even_ranked_below_it():
    old = doc("fr_old", "when connecting fails, renew the certificate", status="reviewing", conflicts={"fr_new"})
    new = doc("fr_new", "when connecting fails, switch to the backup endpoint", status="candidate",
              conflicts={"fr_old"})
    selected, cut = gate([item(old, 0.9), item(new, 0.6)], {}, 400, None)
    assert [i.id for i in selected] == ["fr_new"] and stages(cut) == {"fr_old": "conflict"}


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.frozensets(st.sampled_from("abcdefghijklmnopqrstuvwxyz"), max_size=26), min_size=1, max_size=12))
def test_the_duplicate_check_is_the_jaccard_test(word_sets):
    """The size prefilter never changes a verdict (sets up to 26 words: ratios at and around 0.9)."""
    def jaccard(a, b):
        return len(a & b) / len(a | b) if a or b else 1.0

    assert near_duplicate(frozenset("abcdefghij"), frozenset("abcdefghi"))  # 9 / 10: at the threshold
    assert [[near_duplicate(a, b) for b in word_sets] for a in word_sets] == \
        [[jaccard(a, b) >= NEAR_DUPLICATE for b in word_sets] for a in word_sets]


@settings(max_examples=examples(300), deadline=None)
@given(st.frozensets(st.sampled_from("abcdefghijklmnopqrstuvwxyz"), max_size=26),
       st.lists(st.frozensets(st.sampled_from("abcdefghijklmnopqrstuvwxyz"), max_size=26), max_size=12),
       st.integers(0, 11))
def test_the_first_near_duplicate_among_the_kept_is_the_first_jaccard_match(words, kept, copy_at):
    """The gate's one call per item (``_scan.first_near_duplicate``) names the first kept set at
    Jaccard >= NEAR_DUPLICATE, as the pairwise test in order did; a near copy placed among the kept
    makes sure most draws have one."""
    def jaccard(a, b):
        return len(a & b) / len(a | b) if a or b else 1.0

    if copy_at < len(kept):
        kept[copy_at] = frozenset(sorted(words)[1:]) if len(words) >= 10 else words
    want = next((n for n, other in enumerate(kept) if jaccard(words, other) >= NEAR_DUPLICATE), -1)
    assert first_near_duplicate(words, kept) == want
    assert first_near_duplicate(set(words), [set(k) for k in kept]) == want  # plain sets too


def test_the_first_near_duplicate_refuses_what_is_not_a_set():
    with pytest.raises(TypeError):
        first_near_duplicate(frozenset("ab"), [["a", "b"]])
    with pytest.raises(TypeError):
        first_near_duplicate("ab", [frozenset("ab")])


def linked(d, system, action):
    d.links = (f"@entity:{system.lower()}", f"@action:{action}")
    return d


def test_a_verified_rule_answers_and_the_gate_stops_there():
    """design.md §issue-29 point 2: at an "approve payslip" task start the verified rule is the answer;
    routine events of other actions, the failures it summarises, its own successes and another
    system's rule are cut with the answer named; a failure of the answer's own action (evidence
    against it) and the user's preference stay."""
    answer = linked(doc("fr_pay", "when approve payslip in Payroll fails, do use the manager role, because the "
                               "other options fail here (not: approve as staff)"), "Payroll", "use the manager role")
    events = [linked(doc(f"ev_{n}", text, kind="event", layer="episodic", event_kind=k), "Payroll", a)
              for n, (text, k, a) in enumerate([
                  ("view payslip succeeded with staff", "action", "view payslip"),
                  ("approve as staff: 403", "anomaly", "approve as staff"),
                  ("use the manager role worked", "action", "use the manager role"),
                  ("use the manager role: refused", "anomaly", "use the manager role")])]
    other = linked(doc("fr_vpn", "when connecting in VPN fails, switch to the backup endpoint"), "VPN", "switch")
    restated = linked(doc("fr_pay2", "approve payslips in Payroll with the manager role", status="candidate"),
                      "Payroll", "use the manager role")
    pref = doc("fr_pref", "follow the stated preference: answer in French", scope={"user": "ann"})
    pool = [item(answer, 0.9), *(item(e, 0.8) for e in events), item(other, 0.8), item(restated, 0.7),
            item(pref, 0.6)]
    selected, cut = gate(pool, {"user": "ann"}, 400, None, trigger="task_start", user="ann", system="Payroll")
    assert [i.id for i in selected] == ["fr_pay", "fr_pref", "ev_3"]
    answered = {c["id"]: c["reason"] for c in cut if c["stage"] == "answered"}
    assert set(answered) == {"ev_0", "ev_1", "ev_2", "fr_vpn", "fr_pay2"}
    assert all(r.endswith("fr_pay answers Payroll") for r in answered.values())
    assert "another action" in answered["ev_0"] and "summarises" in answered["ev_1"]
    assert "another system" in answered["fr_vpn"] and "restates" in answered["fr_pay2"]
    # No verified rule (a candidate only): only the failure it names as "not: …" is cut; no situation: nothing.
    unsure = replace_status(answer, "candidate")
    _, cut = gate([item(unsure, 0.9), *(item(e, 0.8) for e in events)], {}, 400, None, trigger="task_start",
                  system="Payroll")
    assert {c["id"]: c["reason"] for c in cut if c["stage"] == "answered"} == {
        "ev_1": "a failure fr_pay names already (not: …)"}
    _, cut = gate(pool, {"user": "ann"}, 400, None, trigger="task_start", user="ann")
    assert not [c for c in cut if c["stage"] == "answered"]


def replace_status(d, status):
    from dataclasses import replace

    return replace(d, status=status)


def test_with_no_answer_the_situations_own_system_comes_before_other_systems():
    """design.md §issue-29 round two: no verified rule yet, but the situation's system has memory of its own (a failure
    here, a candidate rule): another system's events, and its rules once this system has one, are cut as
    ``answered``; what someone said stays. With nothing of this system, the rest stays (an analogy)."""
    mine = linked(doc("ev_mine", "send the newsletter with smtp relay: refused", kind="event", layer="episodic",
                      event_kind="anomaly"), "Mailer", "smtp relay")
    theirs = [linked(doc(f"ev_{n}", text, kind="event", layer="episodic", event_kind=k), "Deploy", a)
              for n, (text, k, a) in enumerate([("ship with blue-green worked", "action", "blue-green"),
                                                ("ship with canary: metrics missing", "anomaly", "canary")])]
    their_rule = linked(doc("fr_deploy", "when ship the release in Deploy fails, do blue-green", status="candidate"),
                        "Deploy", "blue-green")
    said = doc("ev_said", "Lin: keep it short", kind="event", layer="episodic", event_kind="message")
    pool = [item(mine, 0.7), *(item(e, 0.8) for e in theirs), item(their_rule, 0.8), item(said, 0.7)]
    selected, cut = gate(pool, {}, 400, None, trigger="anomaly", system="Mailer")
    answered = {c["id"]: c["reason"] for c in cut if c["stage"] == "answered"}
    assert set(answered) == {"ev_0", "ev_1"} and all("another system" in r for r in answered.values())
    assert {i.id for i in selected} == {"ev_mine", "fr_deploy", "ev_said"}  # no Mailer rule: Deploy's stays
    own_rule = linked(doc("fr_mail", "when send the newsletter in Mailer fails, do api gateway", status="candidate"),
                      "Mailer", "api gateway")
    selected, cut = gate([*pool, item(own_rule, 0.9)], {}, 400, None, trigger="anomaly", system="Mailer")
    assert "fr_deploy" in {c["id"] for c in cut if c["stage"] == "answered"}
    assert {i.id for i in selected} == {"ev_mine", "fr_mail", "ev_said"}
    # nothing of Mailer at all: another system's lesson is the analogy, in one line, without the events
    selected, cut = gate(pool[1:], {}, 400, None, trigger="anomaly", system="Mailer")
    assert {c["id"] for c in cut if c["stage"] == "answered"} == {"ev_0", "ev_1"}
    assert {i.id for i in selected} == {"fr_deploy", "ev_said"}
    # ... and with no lesson anywhere, the other systems' events are all there is: they stay
    selected, cut = gate([*pool[1:3], pool[4]], {}, 400, None, trigger="anomaly", system="Mailer")
    assert not [c for c in cut if c["stage"] == "answered"]
    assert {"ev_0", "ev_1", "ev_said"} <= {i.id for i in selected}


def test_a_reply_to_a_user_stops_at_that_users_stated_preference():
    """design.md §issue-29: "How does Lin like answers?" — Lin's preference answers it; what Oliver said, the
    fleet's work and Lin's own earlier questions are cut as answered; with no preference of hers, or in a
    decision (a trigger), nothing is."""
    pref = doc("fr_lin", "follow the stated preference: short answers in Chinese", scope={"user": "Lin"})
    oliver = doc("ev_o", "Oliver: I want detailed answers", kind="event", layer="episodic", event_kind="message")
    oliver.speaker = "Oliver"
    asked = doc("ev_q", "Lin: when is the next maintenance window?", kind="event", layer="episodic",
                event_kind="message")
    asked.speaker, asked.asks = "Lin", 1.0
    said = doc("ev_s", "Lin: too long, keep it short", kind="event", layer="episodic", event_kind="feedback")
    said.speaker = "Lin"
    work = doc("ev_w", "Mailer: smtp relay worked", kind="event", layer="episodic", event_kind="action")
    pool = [item(pref, 0.9), item(oliver, 0.8), item(asked, 0.8), item(said, 0.7), item(work, 0.6)]
    selected, cut = gate(pool, {"user": "Lin"}, 400, None, user="Lin")
    assert {i.id for i in selected} == {"fr_lin", "ev_s"}
    assert stages(cut) == {"ev_o": "answered", "ev_q": "answered", "ev_w": "answered"}
    assert all("fr_lin" in c["reason"] for c in cut)
    _, cut = gate(pool[1:], {"user": "Lin"}, 400, None, user="Lin")
    assert not [c for c in cut if c["stage"] == "answered"]
    _, cut = gate(pool, {"user": "Lin"}, 400, None, user="Lin", trigger="task_start")
    assert not [c for c in cut if c["stage"] == "answered"]


def test_the_newest_report_on_an_option_is_the_one_that_counts():
    """design.md §issue-29: "smtp relay worked" from before a change and "smtp relay failed" after it: the newer
    one says how the option fares now; another environment's report is another option's."""
    def report(id, text, ts, env="prod", kind="action"):
        d = doc(id, text, kind="event", layer="episodic", event_kind=kind)
        d.ts_us, d.report = ts, ("mailer", "", "smtp relay", (("env", env),))
        return d

    old = report("ev_old", "Mailer (prod): smtp relay worked", 1)
    new = report("ev_new", "Mailer (prod): smtp relay failed", 2, kind="anomaly")
    test = report("ev_test", "Mailer (test): smtp relay worked", 3, env="test")
    selected, cut = gate([item(old, 0.9), item(new, 0.5), item(test, 0.5)], {}, 400, None)
    assert {i.id for i in selected} == {"ev_new", "ev_test"} and stages(cut) == {"ev_old": "conflict"}
    assert "ev_new" in cut[0]["reason"]
    flake_then_fixed = report("ev_again", "Mailer (prod): smtp relay worked", 4)
    selected, _ = gate([item(old, 0.9), item(new, 0.5), item(flake_then_fixed, 0.5)], {}, 400, None)
    assert [i.id for i in selected] == ["ev_again"]


def test_a_plain_lookup_ranks_its_events_on_other_words_and_a_decision_still_judges_them():
    """A turn that tells the answer in other words than the question ("Dmitri climbed the old oak to get the
    little tabby down" for "who rescued the kitten from the tree?") shares only function words with it; a
    plain lookup (no trigger) has no decision to fit, so the fusion's rank stands. A decision's recall still
    cuts such an event, and a rule matched on function words alone is cut in either."""
    def pool():
        deed = GateItem(doc("ev_deed", "Dmitri climbed the old oak to get the little tabby down", kind="event",
                            layer="episodic", event_kind="message"), 0.3, 1.0, {}, frozenset(), semantic=0.45)
        rule = GateItem(doc("fr_iam", "submit the change as admin"), 0.3, 1.0, {}, frozenset(), semantic=0.45)
        return [deed, rule]

    selected, cut = gate(pool(), {}, 400, None)
    assert [i.id for i in selected] == ["ev_deed"] and stages(cut) == {"fr_iam": "covered"}
    selected, cut = gate(pool(), {}, 400, 10)
    assert [i.id for i in selected] == ["ev_deed"]
    selected, cut = gate(pool(), {}, 400, None, trigger="anomaly")
    assert selected == [] and stages(cut) == {"ev_deed": "covered", "fr_iam": "covered"}
    assert "function words" in next(c["reason"] for c in cut if c["id"] == "ev_deed")
