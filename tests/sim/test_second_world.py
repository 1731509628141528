"""The second fleet world (hindbrain.sim.second): a fast smoke test of its shape, not of hindbrain's scores."""

import pytest

from hindbrain.sim.second import SYSTEMS, NaiveRag, World, asked_style, recommended, run_arm, run_second

KEYS = {"repeated mistakes (per agent)", "repeated mistakes (fleet)", "old rule first after change",
        "tokens per success", "preference obeyed", "changed preference obeyed next task", "transfer",
        "angry tickets satisfied", "tickets briefed a belief"}


def _shape(world: World):
    return [[(s.kind, s.sid, s.agent, s.system, s.user, s.text, s.angry, s.u) for s in steps]
            for steps in world.schedule]


@pytest.fixture(scope="module")
def runs():
    return run_second(seed=1, rounds=3)


def test_the_world_is_deterministic_per_seed():
    assert _shape(World(1, 3)) == _shape(World(1, 3))
    assert _shape(World(1, 3)) != _shape(World(2, 3))
    assert run_arm(World(1, 3), NaiveRag()) == run_arm(World(1, 3), NaiveRag())


def test_the_schedule_has_the_promised_parts():
    world = World(1, 10)
    steps = [s for r in world.schedule for s in r]
    assert sum(s.kind == "trap" for s in steps) == 240
    assert sum(s.kind == "ticket" for s in steps) == 600
    late = {s.system for s in steps if s.kind == "trap" and SYSTEMS[s.system].like}
    assert late == {"Invoicing portal", "售后工单系统"}
    assert min(s.round for s in steps if s.system in late) == world.late_round


def test_the_agent_reads_what_an_item_recommends():
    vpn = SYSTEMS["VPN gateway"].options
    assert recommended("when restart the client fails with a timeout, renew the certificate", vpn) == \
        "renew the certificate"
    assert recommended("Connection failed [VPN gateway: restart the client failed]", vpn) is None
    assert asked_style("Actually, no more bullet points for me: write short plain paragraphs from now on.") == \
        "plain paragraphs"
    assert asked_style("This is unacceptable") is None


def test_every_arm_reports_every_metric(runs):
    assert set(runs) == {"no memory", "naive RAG", "hindbrain"}
    for name, metrics in runs.items():
        assert set(metrics) == KEYS | ({"tokens vs naive"} if name == "hindbrain" else set())


def test_the_no_memory_arm_repeats_every_known_mistake(runs):
    none = runs["no memory"]
    assert none["repeated mistakes (per agent)"] == 1.0
    assert none["repeated mistakes (fleet)"] == 1.0
    assert none["preference obeyed"] == 0.0
    assert none["transfer"] == 0.0
