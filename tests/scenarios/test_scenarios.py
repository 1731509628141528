"""Regression scenarios (design.md §seed-001-6.1): multi-session scripts with expectations.

Each ``*.yaml`` here is a list of sessions; each session reopens the brain from its folder
(a new process would see the same), then runs its steps against the public SDK:

* ``perceive`` / ``learn``: the SDK call (``tenant`` defaults to ``acme``);
* ``recall``: the SDK call, then ``expect`` on the pack — ``first`` (the first item's text
  contains it), ``includes`` / ``excludes`` (some / no item's text contains it), ``cut``
  (text → a word of the gate's reason for leaving it out), ``only_sources``; ``apply``
  picks the injected item whose text contains it as applied by the next ``outcome``;
* ``outcome``: reports the last recall, crediting what ``apply`` picked;
* ``expect_unit`` / ``expect_no_unit``: a unit whose text contains ``text`` (and has the
  given ``status``, ``layer``, ``source``) exists / does not.

The agent is simulated by the script: it does what was injected, so "obeyed" and "not
repeated" are properties of what recall injects, given what was learned.
"""

from pathlib import Path

import pytest
import yaml

from hindbrain import Brain

SCENARIOS = sorted(Path(__file__).parent.glob("*.yaml"))
UNIT_FIELDS = ("status", "layer", "source", "rung")


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path, tmp_path):
    script = yaml.safe_load(path.read_text(encoding="utf-8"))
    run = Run(tmp_path / "brain", script.get("embedder", "none"))
    for number, session in enumerate(script["sessions"], 1):
        with Brain.open(run.home, embedder=run.embedder) as brain:
            for step_no, step in enumerate(session, 1):
                run.where = f"{path.name}, session {number}, step {step_no}"
                run.step(brain, dict(step))


class Run:
    def __init__(self, home: Path, embedder: str):
        self.home, self.embedder, self.where = home, embedder, ""
        self.pack, self.applied = None, []

    def step(self, brain: Brain, step: dict) -> None:
        expect, apply = step.pop("expect", {}), step.pop("apply", None)
        [(verb, args)] = step.items()
        args = {"tenant": "acme", **(args or {})}
        if verb == "perceive":
            brain.perceive(**args)
        elif verb == "learn":
            brain.learn(**args)
        elif verb == "recall":
            self.pack = brain.recall(**args)
            self.check_pack(brain, expect)
            self.applied = [self.item(apply).id] if apply else []
        elif verb == "outcome":
            brain.outcome(**args, recall_id=self.pack.recall_id, applied=self.applied)
        elif verb in ("expect_unit", "expect_no_unit"):
            self.check_units(brain, args, present=verb == "expect_unit")
        else:
            raise AssertionError(f"{self.where}: unknown step {verb!r}")

    def item(self, text: str):
        found = [i for i in self.pack.items if text in i.text]
        assert found, f"{self.where}: nothing injected contains {text!r}: {[i.text for i in self.pack.items]}"
        return found[0]

    def check_pack(self, brain: Brain, expect: dict) -> None:
        texts = [i.text for i in self.pack.items]
        if "first" in expect:
            assert texts and expect["first"] in texts[0], f"{self.where}: first is not {expect['first']!r}: {texts}"
        for text in expect.get("includes", []):
            self.item(text)
        for text in expect.get("excludes", []):
            assert not any(text in t for t in texts), f"{self.where}: {text!r} was injected: {texts}"
        for text, reason in expect.get("cut", {}).items():
            ids = {r["fragment_id"] for r in brain.sql("SELECT fragment_id FROM fragments FINAL "
                                                       "WHERE position(text, {x:String}) > 0", {"x": text})}
            reasons = [c["reason"] for c in self.pack.cut if c["id"] in ids]
            assert any(reason in r for r in reasons), f"{self.where}: {text!r} not cut for {reason!r}: {self.pack.cut}"
        if "only_sources" in expect:
            assert {i.source for i in self.pack.items} <= set(expect["only_sources"]), f"{self.where}: {texts}"

    def check_units(self, brain: Brain, args: dict, present: bool) -> None:
        rows = brain.sql(
            "SELECT f.text AS text, f.source AS source, s.status AS status, s.rung AS rung, f.layer AS layer "
            "FROM fragments AS f FINAL LEFT JOIN (SELECT * FROM unit_states FINAL) AS s "
            "ON s.fragment_id = f.fragment_id AND s.tenant = f.tenant "
            "WHERE f.tenant = {t:String} AND position(f.text, {x:String}) > 0",
            {"t": args["tenant"], "x": args["text"]})
        rows = [r for r in rows if all(r[k] == args[k] for k in UNIT_FIELDS if k in args)]
        wanted = {k: args[k] for k in UNIT_FIELDS if k in args}
        if present:
            assert rows, f"{self.where}: no unit with {args['text']!r} and {wanted}: {self.all_units(brain)}"
        else:
            assert not rows, f"{self.where}: a unit with {args['text']!r} exists: {rows}"

    @staticmethod
    def all_units(brain: Brain) -> list[dict]:
        return brain.sql("SELECT f.text AS text, s.status AS status, f.layer AS layer FROM fragments AS f FINAL "
                         "LEFT JOIN (SELECT * FROM unit_states FINAL) AS s ON s.fragment_id = f.fragment_id")
