"""``_scan.RecentIds`` (the learner's recent event ids, ``Learner._repeated``; round sixteen: the ``RecentSet``
of compact ids in C) answers as the ``Recent`` ordered dict of ids it replaces: on random sequences with repeats
and evictions, ids of the SDK's form and any other, through pickle round trips (the learner's snapshot); and
no two ids are one (case, a digit short, a str id beside an ``ev_`` id)."""

import pickle
import random
from collections import OrderedDict

import pytest

from hindbrain.recall._scan import RecentIds


@pytest.mark.parametrize("seed", range(4))
def test_added_answers_as_the_ordered_dict_it_replaces(seed):
    size, rng = 37, random.Random(seed)
    ours, reference = RecentIds(size), OrderedDict()
    pool = [f"ev_{rng.getrandbits(128):032x}" for _ in range(90)] + [f"caller-{n}" for n in range(30)]
    pool += [pool[0].upper(), pool[1][:-1], "", "ev_", "事件-1"]
    for step in range(4000):
        key = rng.choice(pool)
        new = key not in reference
        if new:  # what Learner._repeated did: remember an id not held, the oldest out beyond the size
            reference[key] = None
            if len(reference) > size:
                reference.popitem(last=False)
        assert ours.added(key) == new, step
        assert len(ours) == len(reference) <= size
        if step % 997 == 0:
            ours = pickle.loads(pickle.dumps(ours))
    assert all((k in ours) == (k in reference) for k in pool)
    again = RecentIds(size)
    for key in reference:
        again.added(key)
    assert [k in again for k in pool] == [k in ours for k in pool]


def test_no_two_ids_are_one():
    rng = random.Random(7)
    ids = [f"ev_{rng.getrandbits(128):032x}" for _ in range(200)]
    ids += [i.upper() for i in ids[:20]] + [i[:-1] for i in ids[:20]] + ["ev_" + "0" * 32, "caller-42", "", "ev_"]
    ids += ["ev_" + "0" * 31 + "1", "ev_" + "1" + "0" * 31]  # the high and the low half apart
    recent = RecentIds(len(ids))
    assert all(recent.added(i) for i in ids) and len(recent) == len(ids)
    assert not any(recent.added(i) for i in ids)


def test_a_state_that_is_not_a_ring_is_refused():
    recent = RecentIds(3)
    recent.added("ev_" + "a" * 32)
    cls, args, (count, nxt, keys) = recent.__reduce__()
    assert pickle.loads(pickle.dumps(recent)) == recent != RecentIds(3)
    for bad in ((2, nxt, keys), (count, 3, keys), (count, nxt, keys + b"\0"), (2, 2, keys + keys)):
        other = cls(*args)
        with pytest.raises(ValueError):
            other.__setstate__(bad)
        assert len(other) == 0
    with pytest.raises(TypeError):
        recent.added(5)
