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


def test_compact_ids_are_exact():
    """An ``ev_`` id of 32 lowercase hex digits is kept as its bits; any other id as given,
    and no two ids share a key."""
    rng = random.Random(7)
    ids = [f"ev_{rng.getrandbits(128):032x}" for _ in range(200)]
    ids += [i.upper() for i in ids[:20]] + [i[:-1] for i in ids[:20]] + ["ev_" + "0" * 32, "caller-42", "", "ev_"]
    keys = [learner.compact_id(i) for i in ids]
    assert [f"ev_{k:032x}" if isinstance(k, int) else k for k in keys] == ids  # the bits are the hex digits
    assert len(set(keys)) == len(set(ids))
    assert isinstance(learner.compact_id(ids[0]), int) and learner.compact_id("caller-42") == "caller-42"
