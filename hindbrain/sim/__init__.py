"""The fleet simulator (issue 7, first slice): worlds with hidden rules and preferences,
three arms (no memory, naive RAG, hindbrain) and what they did, per round.

    from hindbrain.sim import compare
    runs = compare(seed=7)   # {arm name: ArmRun}
"""

from __future__ import annotations

import tempfile

from hindbrain.sim.arms import Hindbrain, NaiveRag, NoMemory
from hindbrain.sim.run import ArmRun, Counts, simulate
from hindbrain.sim.world import World, default_world

__all__ = ["ArmRun", "Counts", "World", "compare", "default_world", "simulate"]


def compare(world: World | None = None, brain=None, progress=None) -> dict[str, ArmRun]:
    """Run the same world through the three arms; hindbrain in ``brain`` (a fresh
    lexical-only embedded brain when None)."""
    from hindbrain.brain import Brain

    world = world or default_world()
    runs = {"no memory": simulate(world, NoMemory(), progress), "naive RAG": simulate(world, NaiveRag(), progress)}
    if brain is not None:
        runs["hindbrain"] = simulate(world, Hindbrain(brain, f"sim-{world.seed}"), progress)
        return runs
    with tempfile.TemporaryDirectory(prefix="hindbrain-sim-") as home, Brain.open(home, embedder="none") as b:
        runs["hindbrain"] = simulate(world, Hindbrain(b, f"sim-{world.seed}"), progress)
    return runs
