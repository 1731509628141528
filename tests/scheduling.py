"""The order in which `make test`'s workers take the suite's scopes: the longest first.

pytest-xdist's ``--dist loadscope`` hands out whole scopes (a module, or a class of tests) and by
default orders them by their number of tests, most first. The suite's longest scopes are few
tests each (the simulator's six, the demo's two, packaging's four, the worker proofs' six), so
they went out last and one worker ran them alone while the others idled: replaying the schedule
over the durations of a loaded run gave 1,302 s for that order against 1,175 s heaviest-first
(the work was 4,699 s on four workers). `make test` passes ``--no-loadscope-reorder`` and
tests/conftest.py puts the collected items in this order instead (longest-processing-time first).

``SCOPE_SECONDS`` is measured data, not a promise: the per-scope sum of ``--durations=0`` of a
whole `make test` (setup, call and teardown). A stale or missing entry only costs balance; a
scope not listed keeps xdist's heuristic (more tests first) after the listed ones.
"""

from __future__ import annotations

from collections.abc import Sequence

# Seconds per scope in `make test`, measured 2026-12-04 23:16 on 7a41fa6 (949 s of work, 261 s wall)
# (4 workers on 2 cores: each test shares the machine with three others; only the order matters).
# Refresh: `make test PYTEST_ADDOPTS=--durations=0` and sum each scope's setup + call + teardown.
SCOPE_SECONDS: dict[str, float] = {
    "tests/distributed/test_worker_proofs.py": 40,
    "tests/recall/test_two_tiers.py": 35,
    "tests/test_packaging.py": 33,
    "tests/faults/test_kafka_restart.py": 30,
    "tests/service/test_replicas.py": 27,
    "tests/security/test_sql_sandbox.py": 26,
    "tests/learning/test_learning_loop.py": 24,
    "tests/sim/test_sim.py": 27,  # 45 before its report and ticket desk became test_sim_report.py (round 26)
    "tests/test_brain.py": 23,
    "tests/service/test_isolation.py": 21,
    "tests/streams/test_kafka_batches.py": 19,
    "tests/sim/test_sim_report.py": 18,
    "tests/projections/test_columns_and_migrations.py": 19,
    "tests/service/test_mcp.py": 17,
    "tests/integrations/test_langgraph.py": 17,
    "tests/security/test_fuzz_http.py": 17,
    "tests/service/test_client.py": 14,
    "tests/test_demo.py": 14,
    "tests/service/test_examples.py": 11,
    "tests/integrations/test_langgraph_differential.py": 11,
    "tests/recall/test_tenant_wall.py::TestLexicalRecall": 10,
    "tests/recall/test_literal_prefilter.py": 10,
    "tests/streams/test_batch_durability.py": 10,
    "tests/recall/test_engine.py": 9,
    "tests/recall/test_event_columns.py": 9,
    "tests/service/test_edge.py": 9,
    "tests/streams/test_columnar.py": 9,
    "tests/streams/test_group_commit.py": 8,
    "tests/scenarios/test_scenarios.py": 8,
    "tests/recall/test_event_texts.py": 8,
    "tests/streams/test_learner_over_kafka.py": 8,
    "tests/learning/test_learner_batch.py": 8,
}


def scope_of(nodeid: str) -> str:
    """The scope ``--dist loadscope`` groups a test in: its class, else its module (xdist's own rule)."""
    return nodeid.rsplit("::", 1)[0]


def heaviest_first(nodeids: Sequence[str], seconds: dict[str, float] = SCOPE_SECONDS) -> list[int]:
    """Indexes of ``nodeids`` with whole scopes ordered by ``seconds`` (most first), then the
    unlisted ones by their number of tests (most first), ties in collection order; a scope's
    tests stay together and in their own order (module fixtures and tests that read what an
    earlier test of their module wrote rely on it)."""
    members: dict[str, list[int]] = {}
    for i, nodeid in enumerate(nodeids):
        members.setdefault(scope_of(nodeid), []).append(i)
    first = {scope: n for n, scope in enumerate(members)}
    order = sorted(members, key=lambda s: (-seconds.get(s, 0.0), -len(members[s]), first[s]))
    return [i for scope in order for i in members[scope]]
