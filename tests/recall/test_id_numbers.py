"""``IdNumbers`` answers exactly like the dict of id strings it replaces (``TenantIndex.by_id``)."""

import random
import re

import pytest
from budget import examples
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


@settings(max_examples=examples(200), deadline=None)
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


def _regex_hex_batch(ids: list[str]) -> tuple | None:
    """``hex_batch`` as it was, by a regular expression over the joined ids: the oracle of its byte check."""
    if not ids or set(map(type, ids)) != {str} or (hexed := id_numbers._match(ids[0])) is None:
        return None
    prefix = hexed[1]
    if set(map(len, ids)) != {len(prefix) + 32}:
        return None
    if re.fullmatch(f"(?:{re.escape(prefix)}[0-9a-f]{{32}})*", "".join(ids), re.ASCII) is None:
        return None
    return prefix, [int(i[len(prefix):], 16) for i in ids]


@settings(max_examples=examples(400), deadline=None)
@given(st.sampled_from(("ev_", "fr_", "abcdefgh_")), st.lists(st.integers(0, 2**128 - 1), min_size=2, max_size=6),
       st.lists(st.tuples(st.integers(0, 5), st.integers(0, 40), st.sampled_from(
           ("A", "F", "G", "g", "f", "0", "9", "/", ":", "`", "@", "_", "é", "٣", "\x00", "ａ", "v", "E"))),
           max_size=2))
def test_a_batch_parsed_on_its_bytes_is_the_regular_expressions(prefix, ids, changes):
    """The byte check (prefix, 32 lowercase hex digits, ASCII) refuses and accepts what the regular expression did:
    a character or two changed anywhere (its case, the hex digits' neighbours in ASCII, a non-ASCII digit or
    letter, the prefix's letters), and the halves parsed are the ids' 128 bits."""
    batch = [f"{prefix}{bits:032x}" for bits in ids]
    for k, at, char in changes:  # the first id is checked alone (its prefix is read from it): mostly the others
        k = 1 + k % (len(batch) - 1) if k else 0
        at = min(at, len(batch[k]) - 1)
        batch[k] = batch[k][:at] + char + batch[k][at + 1:]
    want, got = _regex_hex_batch(batch), id_numbers.hex_batch(batch)
    if want is None:
        assert got is None
    else:
        prefix, high, low = got
        assert prefix == want[0] and [int(h) << 64 | int(lo) for h, lo in zip(high, low, strict=True)] == want[1]


def test_every_character_in_every_place_is_judged_as_the_regular_expression_judges_it():
    """Each of the 128 ASCII characters and a few others put in each place of the second id of a batch: the byte
    check and the regular expression refuse and accept the same batches."""
    first, second = f"ev_{0x0123456789abcdef0123456789abcdef:032x}", f"ev_{2**128 - 1:032x}"
    for char in [*map(chr, range(128)), "é", "٣", "ａ", "İ", "\u0660"]:
        for at in range(len(second)):
            batch = [first, second[:at] + char + second[at + 1:]]
            want, got = _regex_hex_batch(batch), id_numbers.hex_batch(batch)
            assert (got is None) == (want is None), (char, at)
