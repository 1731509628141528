"""The fleet simulator: deterministic worlds, the three arms on the same schedule, and the
learning thresholds hindbrain must keep (a regression gate: these fail if learning regresses)."""

import tempfile

import pytest

from hindbrain.sim import compare, default_world
from hindbrain.sim.arms import Injected, NaiveRag
from hindbrain.sim.run import choose
from hindbrain.sim.world import TRAPS


@pytest.fixture(scope="module")
def runs():
    return compare(default_world(seed=7, rounds=6))


def test_a_world_is_deterministic_for_its_seed():
    a, b = default_world(seed=3), default_world(seed=3)
    assert [[(t.task_id, t.trap, t.user) for t in r] for r in a.schedule] == \
           [[(t.task_id, t.trap, t.user) for t in r] for r in b.schedule]
    assert a.schedule != default_world(seed=4).schedule


def test_the_agent_acts_only_on_what_was_injected():
    iam = TRAPS[0]
    assert choose([], iam) == (iam.naive, None)
    lesson = Injected("fr_1", "when submit gives no response, switch to the admin account", 12)
    assert choose([Injected("ev_1", "unrelated", 1), lesson], iam) == (iam.fix, lesson)


def test_naive_rag_injects_the_most_similar_events_ungated():
    rag = NaiveRag(k=2)
    for text in ("the IAM submit does nothing", "lunch menu for Friday", "IAM admin account fixed the submit"):
        rag.perceive(None, text=text)
    assert [i.text for i in rag.recall(None, query="IAM submit")] == ["the IAM submit does nothing",
                                                                     "IAM admin account fixed the submit"]


def test_hindbrain_keeps_its_learning_thresholds(runs):
    hb, rag, none = (runs[n].total for n in ("hindbrain", "naive RAG", "no memory"))
    assert hb.metrics()["repeated-mistake rate"] <= 0.05
    assert hb.metrics()["preference consistency"] >= 0.95
    assert hb.metrics()["success rate"] > rag.metrics()["success rate"] > none.metrics()["success rate"]
    assert hb.metrics()["tokens per success"] <= 0.30 * rag.metrics()["tokens per success"]  # design.md §issue-7 target
    assert none.metrics()["repeated-mistake rate"] == 1.0  # the baseline repeats every known mistake
    # design.md §issue-29 round two: a fix that worked in its own task reaches the fleet at once (marked with its
    # provenance), so the other agents no longer repeat the mistake while waiting for it (was 14 %).
    assert hb.metrics()["fleet repeated mistakes"] <= 0.03 < rag.metrics()["fleet repeated mistakes"]
    assert hb.metrics()["wrong-environment rule"] == 0  # prod's rule never applied in test, nor the reverse
    assert hb.metrics()["transfer (first contact)"] >= 0.6


def hindbrain_arm(world):
    """The hindbrain arm alone on ``world`` (what ``compare`` runs for it, in a fresh lexical brain):
    for assertions about hindbrain only, the two baselines' runs would be work nobody reads."""
    from hindbrain import Brain
    from hindbrain.sim import tenant_of
    from hindbrain.sim.arms import Hindbrain
    from hindbrain.sim.run import simulate

    with tempfile.TemporaryDirectory(prefix="hindbrain-sim-") as home, Brain.open(home, embedder="none") as brain:
        return simulate(world, Hindbrain(brain, tenant_of(world, "hindbrain")))


def test_the_hindbrain_arm_alone_runs_as_in_the_comparison(runs):
    """``hindbrain_arm`` is the comparison's hindbrain run (the seeds below rely on it)."""
    alone = hindbrain_arm(default_world(seed=7, rounds=6))
    assert alone.total.metrics() == runs["hindbrain"].total.metrics()
    assert alone.stale_until_dropped == runs["hindbrain"].stale_until_dropped


def test_over_five_seeds_a_falsified_rule_stops_being_injected_within_three_failures(runs):
    """Whether a seed's schedule meets the changed rule with the old lesson in hand is luck:
    over five seeds it must happen, and each time the old rule goes within 3 failures."""
    exercised = 0
    for seed in (7, 8, 9, 10, 11):  # seed 7 is the module's comparison
        hb = runs["hindbrain"] if seed == 7 else hindbrain_arm(default_world(seed=seed, rounds=6))
        assert hb.total.metrics()["repeated-mistake rate"] <= 0.05, seed
        if hb.total.stale_failures:
            exercised += 1
            assert hb.stale_until_dropped is not None and hb.stale_until_dropped <= 3, seed
    assert exercised >= 1


def test_the_same_schedule_runs_through_every_arm(runs):
    assert {n: r.total.tasks for n, r in runs.items()} == dict.fromkeys(runs, sum(len(r) for r in
                                                                               default_world(seed=7).schedule))


def test_with_default_layers_the_learned_rule_is_the_first_item_at_task_start(runs):
    """design.md §issue-16: an agent that recalls with the default layers (events and rules alike) gets the
    rule it learned as the first item, before the routine events about the same system."""
    assert runs["hindbrain"].total.metrics()["rule first at task start"] >= 0.95
    plain = runs["hindbrain"].total  # the module's run is compare's default: rule_layers_at_start=False
    assert plain.known_tasks >= 5 and plain.metrics()["rule first at task start"] >= 0.95
    assert plain.metrics()["repeated-mistake rate"] <= 0.05
