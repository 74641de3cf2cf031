"""Is this memlens's score (higher is better, 0 to 1), or a raw distance?

memlens's floor applies to a score where higher is better, in [0, 1]. A log or label
file that carries a store's raw distance instead (lower is better, above 1 for an l2
distance, rising with rank) is read without complaint, and every figure from it is
upside down: calibration recommends a floor above every relevant score, the monitor
finds no turn without memory. This check looks at scores where they enter (a log, a
label file, the monitor's logs) and says what it sees:

- within a turn, the rank-1 hit should score highest. When more turns' scores rise
  from the first rank to the last than fall, lower looks better;
- scores outside [0, 1] are not memlens's score (an l2 distance, an unnormalised
  dot product).

``memlens calibrate`` refuses such scores unless told their direction
(``--score-direction``). Pure numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

EPSILON = 1e-9
CONVERSION = "docs/stores.md gives each store's conversion from its raw distance to memlens's score"


@dataclass(frozen=True)
class DirectionCheck:
    ranked_turns: int  # turns with scored hits at two ranks or more
    rising: int  # of them, turns whose last rank scores above the first
    falling: int  # ... below the first
    outside: int  # scores outside [0, 1]
    scores: int

    @property
    def rises_with_rank(self) -> bool:
        return self.rising > self.falling

    @property
    def suspicious(self) -> bool:
        return self.rises_with_rank or self.outside > 0

    def warning(self) -> str | None:
        """What the scores look like, in one sentence naming the likely cause; None when they look right."""
        if not self.suspicious:
            return None
        seen = []
        if self.rises_with_rank:
            seen.append(
                f"scores rise with rank in {self.rising:,} of {self.ranked_turns:,} turns (fall in {self.falling:,}): "
                "rank 1 has the lowest score, so lower looks better"
            )
        if self.outside:
            seen.append(f"{self.outside:,} of {self.scores:,} scores lie outside [0, 1], memlens's score range")
        return (
            "; ".join(seen)
            + ". These look like a store's raw distance, not memlens's score (higher is better, 0 to 1): a floor on "
            f"them is upside down. Log memlens's score instead; {CONVERSION}."
        )


def check_direction(
    scores: Sequence[float] | np.ndarray,
    turns: Sequence[object] | np.ndarray | None = None,
    ranks: Sequence[float | None] | np.ndarray | None = None,
) -> DirectionCheck:
    """The check over `scores`, with each score's turn and rank when known (the rank
    test needs both; without them only the range is checked)."""
    values = np.asarray(scores, dtype=float)
    finite = np.isfinite(values)
    outside = int(((values < -EPSILON) | (values > 1 + EPSILON))[finite].sum())
    if turns is None or ranks is None or len(values) == 0:
        return DirectionCheck(0, 0, 0, outside, int(finite.sum()))
    rank_values = np.array([np.nan if r is None else float(r) for r in ranks], dtype=float)
    keep = finite & np.isfinite(rank_values)
    _, codes = np.unique(np.asarray([str(t) for t in turns], dtype=object)[keep].astype(str), return_inverse=True)
    rank_values, kept_scores = rank_values[keep], values[keep]
    if len(kept_scores) == 0:
        return DirectionCheck(0, 0, 0, outside, int(finite.sum()))
    order = np.lexsort((rank_values, codes))
    codes, kept_scores, rank_values = codes[order], kept_scores[order], rank_values[order]
    starts = np.r_[0, np.flatnonzero(np.diff(codes)) + 1]
    ends = np.r_[starts[1:], len(codes)] - 1
    # Only turns with two ranks or more: rows of one rank (several labels of a hit,
    # a file that gives every row rank 1) say nothing about the direction.
    several = rank_values[ends] > rank_values[starts]
    first, last = kept_scores[starts[several]], kept_scores[ends[several]]
    return DirectionCheck(
        ranked_turns=int(several.sum()),
        rising=int((last > first + EPSILON).sum()),
        falling=int((last < first - EPSILON).sum()),
        outside=outside,
        scores=int(finite.sum()),
    )
