"""The fleet simulator's report and its ticket desk, apart from tests/sim/test_sim.py: each runs worlds of its
own (no use of that module's comparison), and ``--dist loadscope`` keeps a module on one worker, so the two
modules' ~4 minutes of work (under load) can go to two workers (docs/speed.md, "make test's margin, round
twenty-six")."""

import pytest

from hindbrain.sim import compare, default_world
from hindbrain.sim.report import rounds, totals, unit_metrics


def test_the_report_is_sql_over_the_views_and_matches_the_run(tmp_path, capsys):
    from hindbrain import Brain
    from hindbrain.cli import main

    home = tmp_path / "brain"
    with Brain.open(home, embedder="none") as brain:
        runs = compare(default_world(seed=5, rounds=3), brain)
        rows, learning = rounds(brain), unit_metrics(brain)
    assert {r.arm for r in rows} == set(runs) and {r.round for r in rows} == {1, 2, 3}
    by_sql = totals(rows)
    for name, run in runs.items():  # the views tell the same story as the simulator's own counts
        for metric, value in run.total.metrics().items():
            assert by_sql[name][metric] == (None if value is None else pytest.approx(value)), (name, metric)
    assert learning["units learned"] > 0 and 0 < learning["verified or stable"] <= 1
    assert 0 < learning["injected cognitions applied"] <= 1  # the context layer: what was injected got used
    assert learning["applications per applied cognition (reuse)"] >= 1
    assert main(["--home", str(home), "report"]) == 0
    page = (home / "report.html").read_text(encoding="utf-8")
    # four learning curves (matplotlib SVG, tests/sim/test_report_charts.py), recall quality and latency
    assert page.count("<svg") == 4 + 2 and "FROM outcomes FINAL" in page and "naive RAG" in page
    assert "injected cognitions applied" in page and "FROM unit_states FINAL" in page
    capsys.readouterr()
    assert main(["--home", str(tmp_path / "empty"), "--create", "report"]) == 1  # a new, empty brain
    assert "no simulated fleet ran" in capsys.readouterr().err


def test_on_the_ticket_desk_hindsight_beliefs_change_the_replies():
    from hindbrain.sim import ticket_world

    runs = compare(ticket_world(seed=7, rounds=10))
    hb, none = runs["hindbrain"], runs["no memory"]
    assert none.total.belief_guided == 0 and runs["naive RAG"].total.belief_guided == 0
    late = slice(7, 10)  # once induction has the volume for an active belief
    assert sum(c.belief_guided for c in hb.rounds[late]) > 0
    upset = sum(c.upset_solved for c in hb.rounds[late]) / sum(c.upset_tickets for c in hb.rounds[late])
    baseline = sum(c.upset_solved for c in none.rounds[late]) / sum(c.upset_tickets for c in none.rounds[late])
    assert upset > baseline + 0.2


def test_what_was_applied_is_read_from_the_recall_s_own_tenant(lexical_brain):
    """An outcome of another tenant naming a simulated arm's recall id (a caller chooses the recall id it sends)
    is not that arm's application (round thirty-three; the windows' twin, ``jobs.ARM_REPORTS_SQL``, round
    thirty-two)."""
    b, tenant = lexical_brain, "sim-hindbrain-first-1"
    fid = b.learn(tenant=tenant, seed=True, condition="a refund is asked for an order over 500 dollars",
                  action="run the fraud check before refunding")
    pack = b.recall(tenant=tenant, agent="bot-1", query="a customer asks a refund for an order over 500 dollars")
    assert fid in [i.id for i in pack.items]
    b.outcome(tenant="evil", agent="bot-1", task="t", recall_id=pack.recall_id, applied=[fid], success=True)
    b.runner.flush()
    assert unit_metrics(b)["injected cognitions applied"] == 0  # the base: 1.0, evil's outcome joined
