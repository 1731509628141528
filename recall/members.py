"""An ensemble's members, each given an equal say in one recall's semantic score.

``EnsembleEmbedder`` concatenates its members' unit rows, each scaled by a fixed weight, so a
dot product is a fixed weighted mean of the members' cosines. That fixed mix is fair only on
average: how much a model's cosines spread across one query's candidates changes from query to
query (on MADial, e5's spread is ~4x smaller than USE's on average, but ranges over 2x either
way), so on a given query the wider model decides alone. Here each member's late-interaction
cosines are standardised over this recall's candidates (mean 0, spread 1) and averaged, then
put back on the plain mix's scale (its mean, in units of its spread: members that agree give the
plain mix back, and explanations and non-normalised presets still read a cosine-like number).
Measured on MADial (docs/recall-quality.md).

The members' cosines come from the same stored vectors: a query row with every other member's
slice zeroed scores ``scale_i² × cosine_i`` against a concatenated document row, an affine
change the standardisation removes. Pure numpy, no IO.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_TINY = 1e-6  # a spread below this is "no order" (one candidate, or identical cosines)


def member_views(views: np.ndarray, slices: list[slice]) -> list[np.ndarray]:
    """One copy of the query views per member, zero outside that member's columns."""
    out = []
    for part in slices:
        masked = np.zeros_like(views)
        masked[:, part] = views[:, part]
        out.append(masked)
    return out


@dataclass(frozen=True)
class MemberScale:
    """Per member (mean, spread) of its cosines over the recall's first candidate set, and the
    plain mix's (mean, spread): later candidates of the same recall (graph, expansion) are put
    on the same scale rather than re-standardised."""

    members: tuple[tuple[float, float], ...]
    mixed: tuple[float, float]

    @classmethod
    def fit(cls, per_member: list[np.ndarray], mixed: np.ndarray) -> MemberScale:
        def stats(x: np.ndarray) -> tuple[float, float]:
            x = x[np.isfinite(x)]
            return (float(x.mean()), float(x.std())) if len(x) else (0.0, 0.0)

        return cls(tuple(stats(x) for x in per_member), stats(mixed))

    def combine(self, per_member: list[np.ndarray], mixed: np.ndarray) -> np.ndarray:
        """The members' standardised cosines averaged, on the plain mix's scale. A member
        with no spread on this recall is left out (it carries no order); with none left, the
        plain mix. NaN (no vector yet) stays NaN."""
        standard = [(x - mean) / spread for x, (mean, spread) in zip(per_member, self.members, strict=True)
                    if spread > _TINY]
        mean, spread = self.mixed
        if not standard or spread <= _TINY:
            return mixed
        return mean + spread * np.mean(standard, axis=0)
