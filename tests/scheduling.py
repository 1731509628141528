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

# Seconds per scope in `make test`: the per-scope sum of each test's wall (setup, call, teardown), measured
# 2026-12-06 on 96fe20d without a broker (4 workers on 2 cores at load 17-20: 4,052 s of work, 1,049 s wall),
# scaled by 0.234 to the units of the run before it (7a41fa6, 949 s of work, quiet); only the order matters.
# Round thirty-one: recall/test_e5_dialogue.py (~40, most of it waiting on its SCHED_IDLE embed workers) and
# a dozen other modules written since that run were missing, so they went out after every listed one.
# Refresh: `PYTHONPATH=bench pytest -p suite_cpu --cpu-log=F ...` and sum each scope's wall (bench/suite_cpu.py).
SCOPE_SECONDS: dict[str, float] = {
    "tests/recall/test_e5_dialogue.py": 40,
    "tests/learning/test_learning_loop.py": 26,
    "tests/security/test_sql_sandbox.py": 24,
    "tests/sim/test_sim.py": 23,
    "tests/test_brain.py": 22,
    "tests/service/test_replicas.py": 16,
    "tests/test_packaging.py": 16,
    "tests/integrations/test_langgraph.py": 15,
    "tests/service/test_isolation.py": 15,
    "tests/security/test_fuzz_http.py": 14,
    "tests/recall/test_learned.py": 13,
    "tests/sim/test_sim_report.py": 13,
    "tests/streams/test_bulk_merges_held.py": 12,
    "tests/recall/test_scan_fused.py": 12,
    "tests/recall/test_two_tiers.py": 11,
    "tests/service/test_mcp.py": 11,
    "tests/recall/test_expand.py": 11,
    "tests/security/test_summary_authority.py": 11,
    "tests/service/test_client.py": 11,
    "tests/integrations/test_langgraph_differential.py": 10,
    "tests/recall/test_static_codes.py": 9,
    "tests/recall/test_vectors.py": 9,
    "tests/test_demo.py": 9,
    "tests/recall/test_tenant_wall.py::TestLexicalRecall": 9,
    "tests/learning/test_where_and_when.py": 9,
    "tests/recall/test_semantic.py": 9,
    "tests/learning/test_ladder.py": 8,
    "tests/scenarios/test_scenarios.py": 8,
    "tests/learning/test_learner_batch.py": 8,
    "tests/recall/test_event_texts.py": 8,
    "tests/security/test_taint.py": 8,
    "tests/recall/test_engine.py": 8,
    "tests/recall/test_e5_passages.py": 7,
    "tests/sim/test_second_world.py": 7,
    "tests/learning/test_forged_outcomes.py": 7,
    "tests/recall/test_said_cues.py": 7,
    "tests/test_cli.py": 7,
    "tests/recall/test_event_columns.py": 7,
    "tests/recall/test_bulk_yield.py": 7,
    "tests/projections/test_columns_and_migrations.py": 7,
    "tests/learning/test_fleet_memory.py": 7,
    # run only with a broker (HINDBRAIN_TEST_KAFKA): kept from the run of 7a41fa6, which had one
    "tests/distributed/test_worker_proofs.py": 40,
    "tests/faults/test_kafka_restart.py": 30,
    "tests/streams/test_kafka_batches.py": 19,
    "tests/streams/test_learner_over_kafka.py": 8,
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
