"""Deterministic ids in place of ``records._random_hex`` (``CountedIds``): two paths or two brains given one
each mint the same ids, so their records compare equal; ``typed`` compares them type for type."""

import itertools


class CountedIds:
    """``records._random_hex``'s methods over a counter: 32 hex digits, 0, 1, 2, ..."""

    def __init__(self):
        self.n = itertools.count()

    def next(self) -> str:
        return f"{next(self.n):032x}"

    def many(self, n: int) -> list[str]:
        return [self.next() for _ in range(n)]

    def prefixed(self, prefix: str, n: int) -> list[str]:
        return [prefix + h for h in self.many(n)]


def typed(value):
    """``value`` with the type of every part and each dict's key order (``True`` is not ``1`` here)."""
    if isinstance(value, dict):
        return type(value), {k: typed(v) for k, v in value.items()}, list(value)
    if isinstance(value, list):
        return type(value), [typed(v) for v in value]
    return type(value), value
