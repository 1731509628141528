"""An A/B arm's evidence counts reporters (round thirty-one): one reporter counts no more outcomes than the arm's
other reporters together, look-alike names are one reporter, outcomes with no agent are one reporter."""

from hypothesis import given
from hypothesis import strategies as st

from hindbrain.jobs.windows import arm_evidence, arms_of, first_reports, fleet_of


def test_an_honest_fleet_counts_every_outcome():
    assert arm_evidence({"a1": (30, 50), "a2": (20, 45), "a3": (40, 60)}) == (90, 155, 0)
    assert arm_evidence({"a1": (30, 50), "a2": (25, 50)}) == (55, 100, 0)  # exactly half: kept


def test_one_reporter_alone_counts_nothing():
    assert arm_evidence({"mallory": (54, 54)}) == (0, 0, 54)
    assert arm_evidence({}) == (0, 0, 0)


def test_the_largest_reporter_keeps_the_others_total_at_its_own_rate():
    # mallory's 60 successes of 60 count as 20 of 20 beside the honest agent's 10/20
    assert arm_evidence({"mallory": (60, 60), "a1": (10, 20)}) == (30, 40, 40)


def test_look_alike_names_are_one_reporter_and_no_agent_is_one_reporter():
    rows = [("A", "a1", "", 10, 20), ("A", "a2", "", 10, 20),
            ("B", "bot-1", "", 30, 30), ("B", "BOT-1", "", 30, 30), ("B", "a1", "", 5, 10), ("B", "a2", "", 5, 10)]
    arms = arms_of(rows)
    assert (arms.a_successes, arms.a_total) == (20, 40)
    assert (arms.b_successes, arms.b_total) == (30, 40)  # BOT-1/bot-1's 60/60 count as 20/20
    [note] = arms.not_counted
    assert note.startswith("arm B: 40 of the 60 outcomes of BOT-1/bot-1 not counted") and "2 other reporters" in note

    many = arms_of([("A", "a1", "", 1, 1),
                    *[("A", name, "", 1, 1) for name in ("MALLORY", "Mallory", "mallory", "mAllory")]])
    assert many.not_counted[0].startswith(
        "arm A: 3 of the 4 outcomes of MALLORY/Mallory/mAllory and 1 more spellings not counted")

    anonymous = arms_of([("A", "", "", 8, 10), ("A", None, "", 8, 10), ("B", "", "", 1, 10), ("B", "a1", "", 2, 10)])
    assert (anonymous.a_successes, anonymous.a_total) == (0, 0)  # two anonymous senders are one reporter
    assert (anonymous.b_successes, anonymous.b_total) == (3, 20)
    assert anonymous.not_counted == ("arm A: the 20 outcomes of (no agent), its only reporter, not counted (one "
                                     "reporter counts no more outcomes than the arm's other reporters together)",)


def test_a_tenant_whose_fleet_is_one_agent_counts_its_outcomes_whole():
    """A single-agent deployment: no other agent's belief is at stake, so its one reporter settles as before."""
    rows = [("A", "bot-1", "", 10, 40), ("B", "BOT-1", "", 30, 40), ("B", None, "", 5, 10)]
    assert fleet_of([("bot-1", ""), ("BOT-1", ""), (None, ""), ("", "")]) == {"bot-1"}
    sole = arms_of(rows, fleet_of([("bot-1", ""), ("BOT-1", "")]))
    assert (sole.a_successes, sole.a_total, sole.b_successes, sole.b_total, sole.not_counted) == (10, 40, 35, 50, ())
    assert arms_of(rows, set()).b_total == 50  # no agent named at all: the deployment is one
    fleet = arms_of(rows, fleet_of([("bot-1", ""), ("helper-2", "")]))  # a second agent in the tenant: the cap holds
    assert (fleet.a_total, fleet.b_total) == (0, 20) and len(fleet.not_counted) == 2


reports = st.dictionaries(st.sampled_from(["a1", "a2", "a3", "a4", "a5"]),
                          st.integers(0, 80).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
                          max_size=5)


@given(reports)
def test_no_reporter_is_more_than_half_of_what_counts(by_reporter):
    successes, total, left_out = arm_evidence(by_reporter)
    raw = sum(n for _, n in by_reporter.values())
    assert total + left_out == raw and 0 <= successes <= total
    top = max((n for _, n in by_reporter.values()), default=0)
    assert (left_out == 0) == (top <= raw - top)  # only a reporter beyond all the others is cut
    if left_out:
        assert total == 2 * (raw - top)  # it keeps exactly the others' total: half of what counts


def test_a_recall_s_outcome_is_the_first_its_own_agent_may_send():
    """Round thirty-three: ``first_reports`` keeps a recall's first outcome that speaks for the agent the recall was
    made for (``lifecycle.speaks_for``: the name folded; a name left out on either side is not compared)."""
    outcomes = [("r1", "B", "bot-1", False, "mallory", "agent-key/m"),  # first, but another agent's: refused
                ("r1", "B", "bot-1", True, "BOT-1", ""),  # the recall's own agent, spelled otherwise: counts
                ("r1", "B", "bot-1", False, "bot-1", ""),  # a second report of its own: the first one decided
                ("r2", "A", "", True, "mallory", ""),  # a recall made for no named agent: not compared
                ("r3", "A", "bot-2", False, "", "")]  # an outcome naming no agent: not compared
    rows, foreign = first_reports(outcomes)
    assert sorted(rows) == [("A", "", "", 0, 1), ("A", "mallory", "", 1, 1), ("B", "BOT-1", "", 1, 1)]
    assert foreign == {("B", "mallory"): 1}
    assert arms_of(rows, foreign=foreign).not_counted[0] == (
        "arm B: 1 outcomes of mallory on recalls made for other agents not counted (a recall's outcome is its agent's)")
