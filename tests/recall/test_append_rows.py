"""``_scan.append_rows`` (``DocTable.append_packed``'s loop in C, issue 28 round twenty-two) against the Python
loop it replaced, kept here as the oracle: the same buffer and ends for rows of any bytes (empty, UTF-8 zh and
emoji, long), appended after what the table held, and the same state and error when a row is not bytes or the
rows' iteration raises part-way."""

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindbrain.recall import _scan


def _py_append(buffer: bytearray, ends: array, rows) -> None:
    """The loop as ``append_packed`` ran it (the oracle)."""
    for row in rows:
        buffer += row
        ends.append(len(buffer))


_row = st.one_of(st.binary(max_size=40), st.text(alphabet="a中😀\x00é", max_size=30).map(str.encode),
                 st.integers(0, 5000).map(lambda n: b"x" * n))


class _Broken(Exception):
    pass


def _rows(rows: list, fault: int | None, kind: str):
    """The rows as an iterator that, at ``fault``, yields a str (``kind`` "str") or raises (``kind`` "raise")."""
    for k, row in enumerate(rows):
        if k == fault:
            if kind == "raise":
                raise _Broken(k)
            yield row.decode(errors="replace")
            continue
        yield row


def _outcome(fn, held: bytes, rows: list, fault: int | None, kind: str):
    buffer, ends = bytearray(held), array("q", [len(held)] if held else [])
    try:
        fn(buffer, ends, _rows(rows, fault, kind))
        error = None
    except (TypeError, _Broken) as e:
        error = type(e)
    return bytes(buffer), ends.tolist(), error


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=20), st.lists(_row, max_size=30), st.none() | st.integers(0, 30),
       st.sampled_from(["str", "raise"]))
def test_the_c_loop_leaves_what_the_python_loop_left(held, rows, fault, kind):
    assert _outcome(_scan.append_rows, held, rows, fault, kind) == _outcome(_py_append, held, rows, fault, kind)


def test_a_buffer_that_cannot_grow_keeps_its_rows_and_raises_as_the_loop_did():
    buffer, ends = bytearray(b"ab"), array("q", [2])
    view = memoryview(buffer)  # an export: the bytearray cannot be resized
    with pytest.raises(BufferError):
        _scan.append_rows(buffer, ends, iter([b"cd"]))
    assert bytes(buffer) == b"ab" and ends.tolist() == [2]
    view.release()
    _scan.append_rows(buffer, ends, (row for row in [b"cd", b"", b"e"]))
    assert bytes(buffer) == b"abcde" and ends.tolist() == [2, 4, 4, 5]
