"""``IdNumbers`` answers exactly like the dict of id strings it replaces (``TenantIndex.by_id``)."""

import random

import pytest

from hindbrain.recall import id_numbers
from hindbrain.recall.id_numbers import IdNumbers


def _ids(rng: random.Random, n: int) -> list[str]:
    """Hex ids of two prefixes, near misses of that form (upper case, short, another prefix
    shape) and free-form ids, with repeats."""
    out = []
    for _ in range(n):
        bits = rng.getrandbits(128)
        out.append(rng.choice((
            f"ev_{bits:032x}", f"fr_{bits:032x}", f"ev_{bits:032X}", f"ev_{bits:031x}", f"e1_{bits:032x}",
            f"ev_{bits & 0xFFFF:032x}",  # leading zeros: the high column is 0 for many
            f"caller-{rng.randrange(50)}", "", f"ev_{bits:032x}x")))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_random_sequences_answer_like_a_dict(seed, monkeypatch):
    monkeypatch.setattr(id_numbers, "_MERGE_MIN", 16)  # many merges in a short sequence
    monkeypatch.setattr(id_numbers, "_BITS_MIN", 64)  # and the negative filter rebuilt as it fills
    rng = random.Random(seed)
    pool = _ids(rng, 600)
    ours, reference = IdNumbers(), {}
    for step in range(3000):
        doc_id = rng.choice(pool)
        if rng.random() < 0.5:
            ours[doc_id] = reference[doc_id] = step
        probe = rng.choice(pool)
        assert (probe in ours) == (probe in reference)
        assert ours.get(probe) == reference.get(probe)
        assert ours.get(probe, -1) == reference.get(probe, -1)
        assert len(ours) == len(reference)
    assert ours == reference and dict(ours.items()) == reference
    numbered = IdNumbers.numbered(list(reference))
    assert numbered == {k: n for n, k in enumerate(reference)}
    assert [numbered[k] for k in reference] == list(range(len(reference)))  # each answers, not only the walk
    with pytest.raises(KeyError):
        ours["never-added"]


def test_hex_ids_take_twenty_bytes_in_the_columns():
    ids = [f"ev_{random.Random(n).getrandbits(128):032x}" for n in range(5000)]
    table = IdNumbers.numbered(ids)
    assert table.nbytes() == 20 * len(ids)
    assert [table[i] for i in ids] == list(range(len(ids)))
    assert "ev_" + "0" * 32 not in table and table.get(None) is None


@pytest.mark.parametrize("seed", range(2))
def test_the_parsed_key_answers_like_the_id(seed, monkeypatch):
    """``get_key`` / ``set_key`` with ``key(id)`` (an id parsed once: ``TenantIndex.add_many``) are
    ``get`` / ``[id] =``, for every form of id."""
    monkeypatch.setattr(id_numbers, "_MERGE_MIN", 16)
    monkeypatch.setattr(id_numbers, "_BITS_MIN", 64)
    rng = random.Random(seed)
    pool = _ids(rng, 400)
    keyed, reference = IdNumbers(), {}
    for step in range(2000):
        doc_id = rng.choice(pool)
        key = IdNumbers.key(doc_id)
        assert keyed.get_key(doc_id, key) == reference.get(doc_id)
        assert keyed.get_key(doc_id, key, -1) == reference.get(doc_id, -1)
        if rng.random() < 0.5:
            keyed.set_key(doc_id, key, step)
            reference[doc_id] = step
    assert keyed == reference
    assert IdNumbers.key("ev_" + "ab" * 16) == ("ev_", int("ab" * 16, 16)) and IdNumbers.key("caller-1") is None
