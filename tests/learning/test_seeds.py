"""Cold-start seeds (design.md §seed-001-5.1): ``brain.seed`` and ``hindbrain seed FILE``."""

import json

import pytest

from hindbrain import Brain
from hindbrain.cli import main
from hindbrain.learning.seeds import SeedFileError
from hindbrain.schemas.api import InvalidInput

SEEDS_YAML = """\
tenant: acme
cognitions:
  - condition: submit does nothing in IAM as a normal account
    action: switch to the admin account and submit once
    reason: permission operations need admin
    evidence: runbook IAM-7
    entities: [IAM]
  - action: always double-check your work
  - condition: always
    action: restart the service
  - condition: exporting invoices from billing times out
    action: run the export on the reporting replica
    source: read
  - condition: a CRM bulk update returns HTTP 413
    action: update the rows in batches of 200
    source: read
    citation: CRM API guide, limits section
"""


@pytest.fixture
def seed_file(tmp_path):
    path = tmp_path / "seeds.yaml"
    path.write_text(SEEDS_YAML, encoding="utf-8")
    return path


def units(b):
    return b.sql("SELECT f.fragment_id AS id, f.condition AS condition, f.confidence AS confidence, f.seed AS seed, "
                 "s.status AS status, f.layer AS layer FROM fragments AS f FINAL "
                 "INNER JOIN unit_states AS s FINAL ON s.fragment_id = f.fragment_id ORDER BY f._offset")


def test_seeds_enter_at_a_higher_confidence_and_entries_without_conditions_are_refused(lexical_brain, seed_file):
    b = lexical_brain
    report = b.seed(seed_file)
    assert len(report.imported) == 2
    assert [m.split(":")[0] for m in report.refused] == ["entry 2 ('always double-check your work')",
                                                        "entry 3 ('always')",
                                                        "entry 4 ('exporting invoices from billing times ou')"]
    assert "no 'condition'" in report.refused[0] and "fails 'has_conditions'" in report.refused[1]
    assert "citation" in report.refused[2]
    rows = units(b)
    assert [r["id"] for r in rows] == report.imported
    assert all(r["seed"] and r["confidence"] == 0.9 and r["status"] == "candidate" for r in rows)
    assert [r["layer"] for r in rows] == ["experience", "knowledge"]
    lived = b.learn(tenant="acme", condition="the deploy pipeline is blocked", action="open a change ticket first")
    assert b.sql("SELECT confidence FROM fragments FINAL WHERE fragment_id = {f:String}",
                 {"f": lived})[0]["confidence"] < 0.9  # a seed starts higher than a lived proposal
    pack = b.recall(tenant="acme", situation={"system": "IAM", "actual": "submit does nothing"}, trigger="anomaly")
    assert pack.items[0].id == report.imported[0]


def test_importing_the_same_file_twice_adds_nothing(lexical_brain, seed_file):
    b = lexical_brain
    first = b.seed(seed_file)
    decisions = b.sql("SELECT count() AS n FROM decisions FINAL")[0]["n"]
    again = b.seed(seed_file)
    assert again.imported == first.imported
    assert b.sql("SELECT count() AS n FROM fragments FINAL")[0]["n"] == 2
    assert b.sql("SELECT count() AS n FROM decisions FINAL")[0]["n"] == decisions


def test_a_verified_seed_keeps_its_state_when_the_file_is_imported_again(lexical_brain, seed_file):
    b = lexical_brain
    fid = b.seed(seed_file).imported[0]
    pack = b.recall(tenant="acme", query="IAM submit does nothing")
    b.outcome(tenant="acme", recall_id=pack.recall_id, applied=[fid], success=True)
    b.seed(seed_file)
    assert b.learning.learner.unit("acme", fid).status == "verified"


def test_json_seeds_and_the_tenant_argument(lexical_brain, tmp_path):
    path = tmp_path / "seeds.json"
    entry = {"condition": "工单系统关闭投诉工单时提示需要处理结果", "action": "先填写处理结果，再关闭工单"}
    path.write_text(json.dumps([entry]), encoding="utf-8")
    with pytest.raises(InvalidInput, match="tenant"):
        lexical_brain.seed(path)
    report = lexical_brain.seed(path, tenant="acme")
    assert len(report.imported) == 1 and report.refused == []


def test_a_file_that_is_not_seeds_is_an_error_naming_it(lexical_brain, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("tenant: acme\ncognitions: {condition: x}\n", encoding="utf-8")
    with pytest.raises(SeedFileError, match="expected a list"):
        lexical_brain.seed(path)
    path.write_text("- condition: [unclosed\n", encoding="utf-8")
    with pytest.raises(SeedFileError, match="not valid YAML"):
        lexical_brain.seed(path)


def test_the_cli_prints_a_message_per_refused_entry(tmp_path, seed_file, capsys):
    home = tmp_path / "brain"
    assert main(["--home", str(home), "seed", str(seed_file)]) == 1  # some entries were refused
    captured = capsys.readouterr()
    assert "imported 2 cognitions, refused 3" in captured.out
    assert captured.err.count("refused:") == 3
    # its progress: standard error is no terminal here, so one line for the stage (design.md §issue-20)
    stage = [line for line in captured.err.splitlines() if line.startswith(f"seed {seed_file}: ")]
    assert len(stage) == 1 and stage[0].endswith("; 2 imported, 3 refused") and "\r" not in captured.err
    with Brain.open(home, embedder="none") as b:
        assert b.sql("SELECT count() AS n FROM fragments FINAL WHERE seed")[0]["n"] == 2
    missing = tmp_path / "missing.yaml"
    assert main(["--home", str(home), "seed", str(missing)]) == 2
    assert "missing.yaml" in capsys.readouterr().err
