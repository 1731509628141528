"""``RecentSet`` (the learner's recent event ids) answers membership exactly as the ``Recent``
ordered dict it replaces, on random sequences with repeats and evictions, and after a pickle
round trip (the learner's snapshot)."""

import pickle
import random

import pytest

from hindbrain.learning import learner
from hindbrain.learning.learner import Recent, RecentSet


@pytest.mark.parametrize("seed", range(4))
def test_membership_matches_the_ordered_dict_it_replaces(seed, monkeypatch):
    monkeypatch.setattr(learner, "RECENT", 37)
    rng = random.Random(seed)
    ours, reference = RecentSet(), Recent()
    pool = [f"ev_{rng.getrandbits(40):010x}" for _ in range(120)]
    for step in range(4000):
        key = rng.choice(pool)
        assert (key in ours) == (key in reference), step
        if key not in reference:  # what Learner._repeated does: remember an id not held
            reference[key] = None
        ours.add(key)
        assert len(ours) == len(reference) <= 37
        if step % 997 == 0:
            ours = pickle.loads(pickle.dumps(ours))
    assert all((k in ours) == (k in reference) for k in pool)
