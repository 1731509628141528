"""Readable rules (design.md §issue-29 point 3): every unit the recovery rule extracts from the simulators'
worlds, the scenarios and the SDK example reads as one clean when / do / because / evidence —
no clause says a phrase twice, the action is not restated in the reason, each failing option is
named once in "not:" and never the option that worked. The trajectories are built the way the
simulators perceive them (``hindbrain.sim.run._trap_task``, ``hindbrain.sim.second._trap``)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
import yaml

from hindbrain.learning import extract
from hindbrain.recall.pack import Recalled, _rule
from hindbrain.recall.tokenize import tokens
from hindbrain.sim.second import SYSTEMS
from hindbrain.sim.world import default_world, ticket_world

SCENARIOS = Path(__file__).parents[1] / "scenarios"
PHRASE = 3  # words: a phrase this long said twice in one clause is a garble, not style


def event(kind: str, n: int, **fields) -> dict:
    return {"kind": kind, "envelope": {"record_id": f"ev-{n}", "agent": "a-1"}, **fields}


def first_world_units() -> list[extract.Proposal]:
    """Naive action fails, the right fix (before and after each change) succeeds; with and without a known goal."""
    out = []
    for world in (default_world(7), ticket_world(7)):
        for trap, fix in ((t, f) for t in world.traps for f in filter(None, (t.fix, t.new_fix))):
            failure = event("anomaly", 1, text=f"{trap.actual} while trying to {trap.task}", system=trap.system,
                            identity=trap.identity, action=trap.naive, expected=trap.expected, actual=trap.actual,
                            scope=trap.scope)
            success = event("action", 2, action=fix, system=trap.system, identity=trap.identity, success=True,
                            text=f"{trap.task}: done by a human", scope=trap.scope)
            out += [extract.recovery(failure, success, goal) for goal in (None, trap.naive)]
    return out


def second_world_units() -> list[extract.Proposal]:
    """Every order in which the agents can try the failing options before the one that works."""
    out = []
    for system in SYSTEMS.values():
        good = system.working(1)
        bad = [o for o in system.options if o != good]
        for tried in itertools.chain.from_iterable(itertools.permutations(bad, k) for k in (1, 2)):
            failures = [event("anomaly", n, system=system.name, action=o, text=system.symptom(o, 1),
                              actual=system.symptom(o, 1)) for n, o in enumerate(tried)]
            success = event("action", 9, system=system.name, action=good, success=True,
                            text=f"{good} worked on {system.name}: {system.task} done")
            out.append(extract.recovery(failures[-1], success, system.task, tuple(tried)))
    return out


def scenario_units() -> list[extract.Proposal]:
    """A task's failure followed by its success, in every scenario file."""
    out = []
    for path in sorted(SCENARIOS.glob("*.yaml")):
        perceived = [s["perceive"] for session in yaml.safe_load(path.read_text())["sessions"] for s in session
                     if "perceive" in s]
        for n, (failure, success) in enumerate(itertools.pairwise(perceived)):
            if extract.is_failure(failure) and extract.is_success(success) and failure.get("task") == success.get(
                    "task"):
                out.append(extract.recovery(event(n=n, **failure), event(n=n + 1, **success)))
    return out


def example_units() -> list[extract.Proposal]:
    """examples/agent_loop.py: the identity change the issue quoted garbled."""
    situation = {"system": "IAM", "identity": "normal account", "action": "submit the change as the normal account",
                 "expected": "success message", "actual": "no response after clicking submit"}
    failure = event("anomaly", 1, text="clicked submit, nothing happened", **situation)
    success = event("action", 2, action="switch to the admin account, then submit once", system="IAM",
                    identity="admin account", success=True, text="permissions changed as admin")
    plain = event("action", 3, action="submit the change", system="IAM", identity="admin account", success=True)
    return [extract.recovery(failure, success, goal) for goal in (None, situation["action"], "change permissions")] + [
        extract.recovery(failure, plain)]


def third_world_events(system, option: str, ok: bool, n: int, agent: str = "a-1") -> dict:
    """An attempt as the third world's agents perceive it (``hindbrain.sim.third._work``)."""
    fields = {system.field: option, **({"action": system.goal} if system.field == "identity" else {})}
    e = event("action" if ok else "anomaly", n, system=system.name, success=ok, expected=system.expected,
              actual=system.expected if ok else system.failure(option), scope={"env": "prod"}, **fields)
    e["envelope"]["agent"] = agent
    return e


def third_world_units() -> list[extract.Proposal]:
    """Each system's failing options before the one that works, with the goal the agents' recall names."""
    from hindbrain.sim.third import _systems

    out = []
    for system in _systems():
        for bad in (o for o in system.options if o != system.working):
            failure = third_world_events(system, bad, False, 1)
            out.append(extract.recovery(failure, third_world_events(system, system.working, True, 2), system.goal,
                                        (failure.get("action"),)))
    return out


def routines() -> list[extract.Proposal]:
    """``routine/1`` over every world's systems: the working option, done by two agents, with and without a goal."""
    from hindbrain.sim.third import _systems

    out = [extract.routine([third_world_events(s, s.working, True, 1, "a-1"),
                            third_world_events(s, s.working, True, 2, "a-2")], goal)
           for s in _systems() for goal in (s.goal, None)]
    for system in SYSTEMS.values():
        done = [event("action", n, system=system.name, action=system.working(1), success=True) for n in (1, 2)]
        done[1]["envelope"]["agent"] = "a-2"
        out.append(extract.routine(done, system.task))
    return [u for u in out if u]


UNITS = [u for u in (*first_world_units(), *second_world_units(), *scenario_units(), *example_units(),
                     *third_world_units()) if u]


def repeated_phrase(text: str) -> str | None:
    """A phrase of ``PHRASE`` words said twice in ``text`` (without overlapping itself), or None."""
    words = tokens(text)
    seen: dict[tuple, int] = {}
    for i in range(len(words) - PHRASE + 1):
        gram = tuple(words[i:i + PHRASE])
        if gram in seen and i - seen[gram] >= PHRASE:
            return " ".join(gram)
        seen.setdefault(gram, i)
    return None


def not_named(reason: str) -> list[str]:
    return [m.strip() for m in re.findall(r"not: ([^;)]+)", reason)]


def test_every_world_contributes_units():
    assert len(first_world_units()) >= 10 and len(second_world_units()) >= 50
    assert scenario_units() and all(example_units())


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: f"{u.condition[:40]}→{u.action[:30]}")
def test_each_unit_reads_once(unit: extract.Proposal):
    for clause in (unit.condition, unit.action, unit.reason, unit.evidence):
        assert repeated_phrase(clause) is None, clause
    assert unit.action not in unit.reason  # the reason says why, not what to do again
    failing = not_named(unit.reason)
    assert failing and len(failing) == len(set(failing))  # every failing option once
    assert all(f not in unit.action and unit.action not in f for f in failing)
    line = _rule(1, Recalled("fr", "fragment", "", [], 1.0, {}, "lived", "experience", 0.6, 1,
                             condition=unit.condition, action=unit.action, reason=unit.reason))
    assert line.count(" | BECAUSE ") == 1 and line.count("not:") == len(failing)


def test_the_issue_example_is_clean():
    """The issue's garbled rule, from examples/agent_loop.py, as it must read now."""
    unit = example_units()[0]
    assert unit.action == "switch to the admin account, then submit once"
    assert unit.reason == "it needs the admin account (not: submit the change as the normal account)"
    plain = example_units()[-1]
    assert plain.action == "switch to the admin account and submit the change"


def test_the_checker_catches_the_garble():
    """The property would fail on the text the issue quoted: it is not vacuous."""
    assert repeated_phrase("switch to the admin account and switch to the admin account, then submit once")
    assert repeated_phrase("submit the change as the normal account as normal account") is None  # 2 words ...
    assert extract.mentions("submit the change as the normal account", "normal account")  # ... caught here instead


def test_every_system_of_the_third_world_teaches_a_routine():
    assert len(third_world_units()) >= 20 and len(routines()) >= 10 + len(SYSTEMS)


@pytest.mark.parametrize("unit", routines(), ids=lambda u: f"{u.condition[:40]}→{u.action[:30]}")
def test_each_routine_reads_once(unit: extract.Proposal):
    """A routine has no "because" (nothing failed): when / do, each once, and the evidence says who it worked for."""
    for clause in (unit.condition, unit.action, unit.evidence):
        assert repeated_phrase(clause) is None, clause
    assert unit.reason == "" and unit.evidence.startswith("worked for a-1, a-2")
    assert not extract.mentions(unit.condition, unit.action) and not extract.mentions(unit.action, unit.condition)
    item = Recalled("fr", "fragment", "", [], 1.0, {}, "lived", "experience", 0.6, 1, condition=unit.condition,
                    action=unit.action, reason=unit.reason)
    assert _rule(1, item, detail=False) == f"WHEN {unit.condition} → DO {unit.action}"
