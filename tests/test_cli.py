"""The command line: stats, explain, replay --check and hindsight on an embedded brain."""

import json

import pytest

from hindbrain import Brain
from hindbrain.cli import main


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "brain"
    with Brain.open(home) as brain:
        ev = brain.perceive(tenant="acme", kind="anomaly", text="submit does nothing", system="IAM")
        fr = brain.learn(tenant="acme", condition="IAM submit does nothing", action="use the admin account",
                         event_ids=[ev])
        pack = brain.recall(tenant="acme", query="IAM submit")
        brain.outcome(tenant="acme", recall_id=pack.recall_id, applied=[fr], success=True)
    return home, ev, fr


def test_stats_reports_rows_per_view(home, capsys):
    assert main(["--home", str(home[0]), "stats"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["views"]["events"] == 1 and stats["views"]["fragments"] == 1
    # perception, cognition, its gate decision, recall, injection, outcome, the unit's verification
    assert stats["log_records"] == 7


def test_explain_prints_the_chain_oldest_first(home, capsys):
    _, ev, fr = home
    assert main(["--home", str(home[0]), "explain", fr]) == 0
    out = capsys.readouterr().out  # the timeline (tests/service/test_explain_timeline.py)
    assert out.index(ev) < out.index(f"proposed {fr}") < out.index("outcome oc_")
    assert main(["--home", str(home[0]), "explain", fr, "--json"]) == 0
    types = [step["record_type"] for step in json.loads(capsys.readouterr().out)]
    assert types.index("perception") < types.index("cognition") < types.index("outcome")


def test_explain_of_an_unknown_id_fails(home, capsys):
    assert main(["--home", str(home[0]), "explain", "fr_nope"]) == 1
    assert "nothing in the log concerns" in capsys.readouterr().err


def test_replay_check_rebuilds_identical_views(home, capsys):
    assert main(["--home", str(home[0]), "replay", "--check"]) == 0
    out = capsys.readouterr().out
    assert "every view equals the live one" in out and "DIFF" not in out


def test_hindsight_runs_and_when_due_says_why_it_skips(home, capsys):
    assert main(["--home", str(home[0]), "hindsight"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)  # progress goes to standard error: a line per phase in a pipe (issue 20)
    lines = err.splitlines()
    phases = [line.split()[1] for line in lines if line.startswith("hindsight: ") and "phases in" not in line]
    assert phases == list(report["phases_s"]) and len(phases) == 9, err  # units, read, induce ... append
    assert "\r" not in err and sum(line.startswith("hindsight: 9 phases in ") for line in lines) == 1
    assert report["ran"] == ["induction", "ab_windows", "summaries", "consolidation", "forgetting", "archive"]
    assert report["decisions"][-1]["kind"] == "hindsight_run"
    assert main(["--home", str(home[0]), "hindsight", "--when-due"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ran"] == [] and "new events" in report["skipped"]["induction"]
