"""The demo's simulated fleet: recall must stop agents repeating a known mistake."""

from hindbrain import Brain
from hindbrain.demo import NO_MEMORY, WITH_RECALL, simulate


def test_recall_stops_repeated_mistakes_that_no_memory_repeats(tmp_path):
    with Brain.open(tmp_path / "brain") as brain:
        per_round, totals = simulate(brain, rounds=3, seed=11, agents=3, tasks_per_agent=3)
        # Lessons the agents proposed (the learner also extracts its own from the trajectories).
        fragments = brain.sql("SELECT tenant, count() AS n FROM decisions FINAL WHERE job = 'learner.write_gate' "
                              "GROUP BY tenant ORDER BY tenant")
    with_recall, no_memory = totals[WITH_RECALL], totals[NO_MEMORY]
    assert no_memory.known_tasks > 0 and no_memory.repeated_rate() == 1.0
    assert with_recall.repeated_rate() is not None and with_recall.repeated_rate() <= 0.05
    assert with_recall.first_try > no_memory.first_try
    # With recall, each system's lesson is learned about once; without memory, over and over.
    learned = {row["tenant"]: row["n"] for row in fragments}
    assert learned[WITH_RECALL] <= 5 < learned[NO_MEMORY]
    assert len(per_round) == 3
