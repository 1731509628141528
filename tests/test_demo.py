"""``hindbrain demo`` end to end on the embedded default: the fleet's three arms, the ticket
desk, the report file, and the learning it proves (nobody called ``learn``)."""

from hindbrain import Brain
from hindbrain.cli import main


def test_the_demo_runs_the_fleet_and_the_desk_and_writes_the_report(tmp_path, capsys):
    home = tmp_path / "brain"
    assert main(["--home", str(home), "demo", "--rounds", "3"]) == 0
    out, err = capsys.readouterr()
    # standard error is no terminal here: a line per stage, no carriage-return frames (design.md §issue-20)
    stages = ["open the brain: ", "the fleet, three arms: 108/108 tasks in ",  # 12 tasks a round, 3 arms
              "the ticket desk, three arms: 360/360 tasks in ", "the learning report: "]
    assert "\r" not in err and [sum(line.startswith(s) for line in err.splitlines()) for s in stages] == [1] * 4
    assert "(success / repeated mistakes)" in out and "tokens per success" in out and "upset customers" in out
    assert (home / "report.html").read_text().count("<svg") >= 4  # learning curves per world
    with Brain.open(home, embedder="none") as brain:
        jobs = {r["job"] for r in brain.sql("SELECT DISTINCT job FROM decisions FINAL WHERE kind = 'unit_accepted' "
                                            "AND tenant LIKE 'sim-hindbrain-%'")}
        verified = brain.sql("SELECT count() AS n FROM unit_states FINAL WHERE tenant LIKE 'sim-hindbrain-fleet%' "
                             "AND status IN ('verified', 'stable')")[0]["n"]
    assert "learner.extract" in jobs and "learn" not in jobs  # the lessons came from the agents' trajectories
    assert verified > 0  # outcomes verified what recall injected


def test_a_second_demo_on_a_home_that_holds_a_fleet_starts_a_fresh_one(tmp_path, capsys):
    from hindbrain.demo import fresh_home

    home = tmp_path / "brain"
    assert fresh_home(home) == home  # a new home is used as it is
    with Brain.open(home, embedder="none") as brain:
        brain.outcome(tenant="acme", agent="a", task="t", success=True)  # not a fleet: still reusable
    assert fresh_home(home) == home
    with Brain.open(home, embedder="none") as brain:
        brain.outcome(tenant="sim-hindbrain-fleet-7", agent="a", task="t", success=True)
    (tmp_path / "brain-2").mkdir()  # taken: the next free sibling
    assert fresh_home(home) == tmp_path / "brain-3"
    out = capsys.readouterr().out
    assert f"{home} already holds a simulated fleet" in out and "brain-3" in out
