"""The third world's mechanics (design.md §issue-29 point 6): the world, the agents' reading of a pack and the
counters — not hindbrain's scores. A tiny schedule runs in well under a second without a brain;
one short run goes through the real SDK to show the hindbrain arm plugs in."""

from __future__ import annotations

from hindbrain.sim.third import (
    AGENTS,
    Hindbrain,
    NaiveRag,
    NoMemory,
    Oracle,
    count_tokens,
    read_for_system,
    read_for_user,
    run,
    third_world,
)


def test_world_shape():
    w = third_world(seed=3, rounds=20)
    assert sum(s.zh for s in w.systems) >= 2
    lookalikes = {s.name for s in w.systems if s.lookalike_of}
    assert lookalikes and all(w.system(w.system(n).lookalike_of).family == w.system(n).family for n in lookalikes)
    assert all(t.round >= 10 for t in w.tasks if t.system in lookalikes)
    assert any(t.system in lookalikes for t in w.tasks)
    assert {t.agent for t in w.tasks} == set(AGENTS)
    assert w.change_round == 12                                  # 60 % of the run
    changing = next(s for s in w.systems if s.changes_to)
    assert changing.works(changing.working, "prod", changed=False)
    assert not changing.works(changing.working, "prod", changed=True)
    env_rule = next(s for s in w.systems if s.working_test)
    assert env_rule.works(env_rule.working, "prod", False) and not env_rule.works(env_rule.working, "test", False)
    assert w.wants("Oliver", 0) != w.wants("Oliver", w.preference_round)
    assert w.wants("Lin", 0) != w.wants("Oliver", 0)
    assert third_world(seed=3, rounds=20) == w and third_world(seed=4, rounds=20) != w


def test_reading_follows_when_do_avoids_failures_and_respects_env():
    w = third_world(1, 4)
    deploy, payroll, invoice = w.system("Deploy"), w.system("Payroll"), w.system("Invoice Hub")
    known = [s.name for s in w.systems]
    r = read_for_system(["when Deploy in test, do use direct push"], deploy, "test", known)
    assert r.choice == "direct push" and r.followed == (0,)
    r = read_for_system(["Payroll: not: personal account", "Payroll (prod): pay run using service token failed"],
                        payroll, "prod", known)
    assert r.choice is None and r.avoid == {"personal account", "service token"}
    # this environment's line beats the other's; the other's failure is not avoided here
    r = read_for_system(["Deploy (test): ship using blue-green rollout failed - no standby slot",
                         "Deploy (test): ship using direct push worked.",
                         "Deploy (prod): ship using blue-green rollout worked."], deploy, "prod", known)
    assert r.choice == "blue-green rollout" and not r.avoid
    # an unseen look-alike: a seen system's lesson is followed by analogy, its own lines first
    r = read_for_system(["when Payroll returns 403, switch to finance-admin account"], invoice, "prod", known)
    assert r.choice == "finance-admin account"
    r = read_for_system(["库存系统（生产）：用接口同步更新库存数量，成功了。"], w.system("库存系统"), "prod", known)
    assert r.choice == "接口同步"


def test_reading_preferences_per_user():
    lines = ["Lin: 以后请用中文回复我，简短一点就好。",
             "Oliver: Please give me detailed answers with the full reasoning, in English.",
             "Oliver: From now on keep your answers short, just the gist."]
    assert read_for_user(lines, "Lin", ["Lin", "Oliver"])[:2] == ("short", "zh")
    assert read_for_user(lines, "Oliver", ["Lin", "Oliver"])[:2] == ("short", "en")
    assert read_for_user(lines[:2], "Oliver", ["Lin", "Oliver"])[:2] == ("detailed", "en")
    assert read_for_user(lines[1:], "Lin", ["Lin", "Oliver"])[:2] == (None, None)


def test_no_memory_repeats_mistakes_and_the_oracle_never_does():
    w = third_world(seed=2, rounds=16)
    blind, oracle = run(w, NoMemory()).metrics(), run(w, Oracle(w)).metrics()
    assert blind["fleet repeats a solved mistake"] > 0.3
    assert blind["preference obeyed"] == 0 and blind["tokens per success"] == 0
    assert oracle["success rate"] == oracle["first try right"] == 1
    assert oracle["fleet repeats a solved mistake"] in (0, None)
    assert oracle["preference obeyed"] == oracle["pref. obeyed after change"] == 1
    assert oracle["cross-user leakage"] == 0
    assert oracle["old answer first after change"] == 0 and oracle["tasks until new answer first"] == 0
    assert oracle["env rule respected"] == 1 and oracle["transfer first try"] == 1
    # with no memory the first try is a guess: wrong about two times in three, the old answer now and then
    blinds = [run(third_world(seed, 16), NoMemory()).metrics() for seed in (1, 2, 3, 4)]
    assert max(b["first try right"] for b in blinds) < 0.5
    assert sum(b["old answer first after change"] for b in blinds) > 0
    assert min(b["transfer first try"] for b in blinds if b["transfer first try"] is not None) < 1


def test_naive_rag_remembers_what_failed():
    w = third_world(seed=2, rounds=16)
    rag = run(w, NaiveRag()).metrics()
    assert rag["fleet repeats a solved mistake"] < run(w, NoMemory()).metrics()["fleet repeats a solved mistake"]
    assert rag["tokens per success"] > 0


def test_tokens_counted_alike_for_both_languages():
    assert count_tokens("use the admin account.") == 5
    assert count_tokens("用中文回复") == 5


def test_hindbrain_arm_runs_through_the_sdk(tmp_path):
    from hindbrain import Brain

    class Counting(Hindbrain):
        recall_ids: list[str] = []

        def outcome(self, recall_id, task, applied, success):
            self.recall_ids.append(recall_id)
            super().outcome(recall_id, task, applied, success)

    w = third_world(seed=1, rounds=2)
    with Brain.open(tmp_path, embedder="none") as brain:
        arm = Counting(brain)
        score = run(w, arm)
    assert score.tasks == 12 and score.answers == 2
    assert len(arm.recall_ids) >= 14 and all(arm.recall_ids)


def test_reading_is_top_down_like_a_ranked_prompt():
    """The pack is best first: a higher line's warning beats a lower recommendation, and a higher
    recommendation is followed although a lower line names it failing (the world changed)."""
    w = third_world(1, 4)
    mailer, known = w.system("Mailer"), [s.name for s in w.systems]
    new = "WHEN Mailer fails → DO api gateway | BECAUSE the other options fail here (not: smtp relay)"
    old = "WHEN Mailer fails → DO smtp relay | BECAUSE the other options fail here (not: api gateway)"
    assert read_for_system([new, old], mailer, "prod", known).choice == "api gateway"
    assert read_for_system([old, new], mailer, "prod", known).choice == "smtp relay"
    r = read_for_system(["Mailer (prod): send using smtp relay failed - connection refused",
                         "Mailer (prod): send using smtp relay worked."], mailer, "prod", known)
    assert r.choice is None and r.avoid == {"smtp relay"}


def test_the_changing_user_speaks_in_the_round_her_wish_changes():
    for seed in range(1, 6):
        w = third_world(seed, 20)
        said = [t.user for t in w.tasks if t.system is None and t.round == w.preference_round]
        assert said == ["Oliver"]


def test_a_followed_line_is_credited_to_the_item_it_shows():
    from hindbrain.sim.third import _line_ids

    items = [("fr_1", "WHEN Mailer fails DO api gateway"), ("ev_2", "Mailer (prod): smtp relay worked.")]
    text = "Rules:\n1. WHEN Mailer fails → DO api gateway  [verified; fr_1]\n- “Mailer (prod): smtp relay worked.”"
    assert _line_ids(text, items) == ["", "fr_1", "ev_2"]
