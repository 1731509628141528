"""The fleet simulator (design.md §issue-7, first slice): worlds with hidden rules and preferences,
three arms (no memory, naive RAG, hindbrain) and what they did, per round.

    from hindbrain.sim import compare
    runs = compare(seed=7)   # {arm name: ArmRun}
"""

from __future__ import annotations

import tempfile

from hindbrain.sim.arms import Hindbrain, Ledger, NaiveRag, NoMemory
from hindbrain.sim.run import ArmRun, Counts, simulate
from hindbrain.sim.world import World, default_world, ticket_world

__all__ = ["ArmRun", "Counts", "World", "compare", "default_world", "simulate", "ticket_world"]


def compare(world: World | None = None, brain=None, progress=None, rule_layers_at_start: bool = False
            ) -> dict[str, ArmRun]:
    """Run the same world through the three arms in ``brain`` (a fresh lexical-only embedded
    brain when None): hindbrain learns under its tenant, and every arm records each task's
    final outcome under its own, for ``hindbrain.sim.report``. hindbrain's agents recall with the
    default layers at task start, as a new user would (design.md §issue-17); ``rule_layers_at_start=True``
    is the earlier policy that asked for the rule layers only."""
    from hindbrain.brain import Brain

    world = world or default_world()
    if brain is None:
        with tempfile.TemporaryDirectory(prefix="hindbrain-sim-") as home, Brain.open(home, embedder="none") as b:
            return compare(world, b, progress, rule_layers_at_start)
    return {arm.name: simulate(world, arm, progress) for arm in (
        NoMemory(Ledger(brain, tenant_of(world, "no-memory"))),
        NaiveRag(ledger=Ledger(brain, tenant_of(world, "naive-rag"))),
        Hindbrain(brain, tenant_of(world, "hindbrain"), rule_layers_at_start=rule_layers_at_start))}


def tenant_of(world: World, arm: str) -> str:
    """Each arm records its tasks' outcomes under its own tenant of the same brain."""
    return f"sim-{arm}-{world.name}-{world.seed}"
