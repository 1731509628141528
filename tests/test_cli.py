"""The command line: stats, explain, replay --check and hindsight on an embedded brain."""

import json
import shutil

import pytest

from hindbrain import Brain
from hindbrain.cli import main


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """One brain written once per module (opening and writing it was most of each test's time);
    each test gets a copy of its closed folder, so what one test writes no other test sees."""
    home = tmp_path_factory.mktemp("cli") / "brain"
    with Brain.open(home) as brain:
        ev = brain.perceive(tenant="acme", kind="anomaly", text="submit does nothing", system="IAM")
        fr = brain.learn(tenant="acme", condition="IAM submit does nothing", action="use the admin account",
                         event_ids=[ev])
        pack = brain.recall(tenant="acme", query="IAM submit")
        brain.outcome(tenant="acme", recall_id=pack.recall_id, applied=[fr], success=True)
    return home, ev, fr


@pytest.fixture
def home(written, tmp_path):
    original, ev, fr = written
    home = tmp_path / "brain"
    shutil.copytree(original, home, symlinks=True)  # the engine links its tables relatively: the copy is whole
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
    report = json.loads(out)  # progress goes to standard error: a line per phase in a pipe (design.md §issue-20)
    lines = err.splitlines()
    phases = [line.split()[1] for line in lines if line.startswith("hindsight: ") and "phases in" not in line]
    assert phases == list(report["phases_s"]) and len(phases) == 9, err  # units, read, induce ... append
    assert "\r" not in err and sum(line.startswith("hindsight: 9 phases in ") for line in lines) == 1
    assert report["ran"] == ["induction", "ab_windows", "summaries", "consolidation", "forgetting", "archive"]
    assert report["decisions"][-1]["kind"] == "hindsight_run"
    assert main(["--home", str(home[0]), "hindsight", "--when-due"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ran"] == [] and "new events" in report["skipped"]["induction"]


# -- design.md §issue-31: sql, views, --home anywhere, no silent new brain, a served home ------------------
def test_sql_answers_over_the_views_with_home_after_the_subcommand(home, capsys):
    assert main(["sql", "SELECT kind, text FROM events", "--tenant", "acme", "--home", str(home[0])]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == \
        [{"kind": "anomaly", "text": "submit does nothing"}]
    assert main(["sql", "SELECT count() AS n FROM fragments", "--table", "--home", str(home[0])]) == 0
    assert capsys.readouterr().out.split() == ["n", "-", "1"]
    assert main(["--home", str(home[0]), "sql", "DROP TABLE events"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hindbrain sql: ") and len(err.strip().splitlines()) == 1


def test_views_lists_every_view_and_its_columns(home, capsys):
    assert main(["views", "--home", str(home[0])]) == 0
    lines = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines())
    assert {"events", "fragments", "recalls", "outcomes", "decisions"} <= set(lines)
    assert "event_id String" in lines["events"] and "text " in lines["events"]


def test_a_home_that_does_not_exist_is_an_error_unless_creating_is_asked(tmp_path, capsys):
    missing = tmp_path / "brian"  # a typo of ./brain
    assert main(["stats", "--home", str(missing)]) == 2
    assert f"no brain at {missing}" in capsys.readouterr().err and not missing.exists()
    assert main(["stats", "--home", str(missing), "--create"]) == 0 and missing.is_dir()


def test_a_served_home_says_in_one_line_who_serves_it(home, capsys):
    import subprocess
    import sys

    from hindbrain.served import FILE, BrainServed

    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (home[0] / FILE).write_text(json.dumps({"pid": server.pid, "url": "http://127.0.0.1:1"}))
        for command in (["stats"], ["sql", "SELECT 1"]):
            assert main(["--home", str(home[0]), *command]) == 2
            err = capsys.readouterr().err
            assert len(err.strip().splitlines()) == 1 and f"served by process {server.pid}" in err
        with pytest.raises(BrainServed, match=f"process {server.pid} at http://127.0.0.1:1"):
            Brain.open(home[0])
    finally:
        server.kill()
        server.wait()
    assert main(["--home", str(home[0]), "stats"]) == 0  # the file of a process that died is ignored


def test_an_empty_pack_renders_a_sentence(home):
    with Brain.open(home[0]) as brain:
        pack = brain.recall(tenant="nobody-here", query="anything at all")
    assert not pack.items and pack.render() == "No memory relevant to this situation yet."


def test_sql_output_escapes_what_a_stored_text_would_make_the_terminal_do():
    # round thirty: an event's text reached the operator's terminal raw through `hindbrain sql` (--table: ANSI
    # escapes that clear the screen or colour a fake prompt; JSON lines: a bidi override, a line separator)
    import json

    from hindbrain.cli import _json_line, _table

    row = {"text": "ok\x1b[2J\x1b[31mroot# \u202eevil\u2028next", "n": 1}
    for out in (_table([row]), _json_line(row)):
        assert all(ch.isprintable() or ch in " \n" for ch in out), ascii(out)
    assert json.loads(_json_line(row)) == row
    assert "\\x1b[2J" in _table([row]) and "\\u202e" in _table([row])


# what a terminal would act on: escape sequences, a C1 control (U+009B starts one), a bidi override, a line separator
TERMINAL_TRICKS = "\x1b[2K\r\x1b[32mharmless\x9b2J\u202eevil\u2028next"


def _prints_as_itself(out: str) -> bool:
    return all(ch.isprintable() or ch in " \n" for ch in out)


def test_explain_json_escapes_what_a_stored_text_would_make_the_terminal_do(home, capsys):
    # round thirty-one: `explain --json` (ensure_ascii=False) printed a bidi override, a line separator and a C1
    # control of an event's text raw, as `sql` did before round thirty
    with Brain.open(home[0]) as brain:
        ev = brain.perceive(tenant="acme", kind="anomaly", text=f"export {TERMINAL_TRICKS}", system="IAM")
    assert main(["--home", str(home[0]), "explain", ev, "--json"]) == 0
    out = capsys.readouterr().out
    assert _prints_as_itself(out), ascii(out)
    assert f"export {TERMINAL_TRICKS}" in _strings(json.loads(out))  # the record's text, as stored


def _strings(value) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [value] if isinstance(value, str) else []


def test_traits_escape_what_an_agent_s_rule_would_make_the_operator_s_terminal_do(tmp_path, capsys):
    # round thirty-one: the operator approves a trait by what `hindbrain traits` shows; its text (an agent's rule)
    # and domains (its tasks' scenes) were printed raw — an escape sequence could erase or recolour the line
    home = tmp_path / "brain"
    with Brain.open(home, embedder="none") as b:
        fid = b.learn(tenant="acme", condition="a change request touches production",
                      action=f"ask for a second reviewer {TERMINAL_TRICKS}")
        for n in range(6):  # six successes in three scenes, two with praise: a proposed trait (tests/learning)
            pack = b.recall(tenant="acme", task=f"t{n}", query="a change request touches production",
                            scope={"scene": ("iam", "billing", f"deploy{TERMINAL_TRICKS}")[n % 3]})
            b.outcome(tenant="acme", recall_id=pack.recall_id, task=f"t{n}", applied=[fid], success=True)
            if n < 2:
                b.perceive(tenant="acme", task=f"t{n}", kind="feedback", text="exactly right", polarity=1.0,
                           signal="explicit")
        assert [t["fragment_id"] for t in b.pending_traits("acme")] == [fid]
    assert main(["--home", str(home), "traits", "--tenant", "acme"]) == 0
    out = capsys.readouterr().out
    assert fid in out and "second reviewer" in out and _prints_as_itself(out), ascii(out)


def test_keys_list_escapes_a_label_s_terminal_tricks(tmp_path, capsys):
    # round thirty-one: a key's label is free text, printed raw by `keys list` beside the key's tenant and role
    from hindbrain.service.keys import KeyStore

    KeyStore(tmp_path).create("acme", label=f"ci {TERMINAL_TRICKS}", role="agent")
    assert main(["--home", str(tmp_path), "keys", "list"]) == 0
    out = capsys.readouterr().out
    assert "acme  agent" in out and "ci " in out and _prints_as_itself(out), ascii(out)
