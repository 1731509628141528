"""The demo's simulated fleet: once a lesson is verified, recall stops agents repeating the
mistake on that system; with recall off (same slots, same world) they keep repeating it."""

from hindbrain import Brain
from hindbrain.demo import NO_MEMORY, WITH_RECALL, simulate


def test_after_one_verified_lesson_repeated_mistakes_drop_below_ten_percent(tmp_path):
    with Brain.open(tmp_path / "brain") as brain:
        per_round, totals = simulate(brain, rounds=3, seed=11, agents=3, tasks_per_agent=3)
        accepted = brain.sql("SELECT tenant, job, count() AS n FROM decisions FINAL WHERE kind = 'unit_accepted' "
                             "GROUP BY tenant, job ORDER BY tenant")
        verified = brain.sql("SELECT count() AS n FROM unit_states FINAL WHERE tenant = {t:String} "
                             "AND status IN ('verified', 'stable')", {"t": WITH_RECALL})[0]["n"]
    with_recall, recall_off = totals[WITH_RECALL], totals[NO_MEMORY]
    assert with_recall.verified_tasks == recall_off.verified_tasks > 0  # the same task slots in both arms
    assert with_recall.repeated_rate() < 0.10
    assert recall_off.repeated_rate() == 1.0 and recall_off.repeated_known_rate() == 1.0
    assert with_recall.first_try > recall_off.first_try
    # Every lesson came from the learner's extraction (nobody called learn), once per system and arm.
    assert {row["job"] for row in accepted} == {"learner.extract"}
    systems = {row["tenant"]: row["n"] for row in accepted}
    assert 0 < systems[WITH_RECALL] <= 5 and 0 < systems[NO_MEMORY] <= 5
    assert 0 < verified <= systems[WITH_RECALL]  # recall verified them (a lesson learned last may not be used yet)
    assert len(per_round) == 3
