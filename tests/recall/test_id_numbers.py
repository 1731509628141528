"""``IdNumbers`` answers exactly like the dict of id strings it replaces (``TenantIndex.by_id``)."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@pytest.mark.parametrize("seed", range(4))
def test_batches_answer_like_a_dict(seed, monkeypatch):
    """``get_many`` / ``put_many`` (``TenantIndex.add_many``'s batch) are ``get`` / ``[id] =`` of each id in
    order: batches of one prefix's hex ids (the columns' path: new ids, ids held in the recent dict or the
    merged columns, repeats within a batch, filter collisions) and batches mixing every form; the batch parsed
    by the caller (``hex_batch``, as ``TenantIndex.add_events`` passes it to both) or by each call."""
    monkeypatch.setattr(id_numbers, "_MERGE_MIN", 16)
    monkeypatch.setattr(id_numbers, "_BITS_MIN", 64)  # a small filter: many collisions, and rebuilt as it fills
    rng = random.Random(seed)
    hexed = [f"ev_{rng.getrandbits(128):032x}" for _ in range(300)] + [f"ev_{n:032x}" for n in range(20)]
    mixed = _ids(rng, 200)
    ours, reference, step = IdNumbers(), {}, 0
    for _ in range(120):
        pool = hexed if rng.random() < 0.7 else mixed
        batch = [rng.choice(pool) for _ in range(rng.randrange(1, 40))]
        parsed = id_numbers.hex_batch(batch) if rng.random() < 0.5 else None  # parsed once by the caller
        assert ours.get_many(batch, parsed) == [reference.get(i) for i in batch]
        ours.put_many(batch, step, parsed)
        for no, doc_id in enumerate(batch, step):
            reference[doc_id] = no
        step += len(batch)
        assert ours.get_many(batch) == [reference[i] for i in batch]
    assert ours == reference
    assert ours.get_many([]) == [] and ours.get_many(["fr_" + "0" * 32, None]) == [None, None]


def test_a_batch_is_the_columns_only_when_every_id_has_the_form():
    one = f"ev_{7:032x}"
    assert id_numbers.hex_batch([one, f"ev_{8:032x}"])[0] == "ev_"
    for batch in ([one, f"fr_{8:032x}"], [one, one.upper()], [one, one + "0"], [one, "caller-1"],
                  [one, type("Id", (str,), {})(one)], [one, f"ev_{8:031x}g"]):
        assert id_numbers.hex_batch(batch) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(("batch", "batch", "batch", "one", "parsed")),
                          st.lists(st.integers(0, 59), min_size=1, max_size=12)), min_size=1, max_size=25),
       st.integers(0, 2**32))
def test_a_merge_reads_the_batches_columns_as_the_dicts(steps, seed):
    """The recent ids' columns taken from ``put_many``'s batches (issue 28: no 128-bit int split again a merge)
    are the dict's, entry for entry and in its order, after any sequence of batches (repeats within one and
    across, ids renumbered in the merged columns), single puts and merges; the table answers like a dict."""
    rng = random.Random(seed)
    pool = [f"ev_{rng.getrandbits(128):032x}" for _ in range(60)]
    ours, reference, step = IdNumbers(), {}, 0
    for kind, picks in steps:
        batch = [pool[k] for k in picks]
        if kind == "one":
            ours[batch[0]] = reference[batch[0]] = step
            step += 1
        else:
            ours.put_many(batch, step, id_numbers.hex_batch(batch) if kind == "parsed" else None)
            reference.update((doc_id, no) for no, doc_id in enumerate(batch, step))
            step += len(batch)
        part = ours._by_prefix["ev_"]
        for got, want in zip(part._recent_columns(), part.dict_columns(), strict=True):
            assert got.dtype == want.dtype and got.tolist() == want.tolist()
        if rng.random() < 0.3:
            part.merge()
            assert not part.chunks and not part.loose
        assert dict(ours.items()) == reference


def test_a_few_numbered_ids_have_their_bits():
    """``numbered`` puts ids straight into the recent dict, bits unset: its merge (no filter rebuilt under
    ``_BITS_MIN``'s bits) sets them, or every id reads as never added."""
    ids = [f"ev_{random.Random(n).getrandbits(128):032x}" for n in range(10)]
    table = IdNumbers.numbered(ids)
    assert [table.get(i) for i in ids] == list(range(10))
    assert table.get_many(ids) == list(range(10))
