"""The embedded store's clock (``as_of``): the store as it was at that time.

A memory created after the clock did not exist yet, so a query ranked at the clock
never returns it (before, it came back at recency 1.0, the highest there is, and a
benchmark's questions were answered from memories written after they were asked).
A clock before every memory leaves nothing to return, and the store says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np


def hide_later(score: np.ndarray, created: np.ndarray, clock: float) -> int:
    """Set the score of every memory created after `clock` (epoch seconds) to -inf,
    in place, so no top-k picks it; the number hidden."""
    later = created > clock
    hidden = int(np.count_nonzero(later))
    if hidden:
        score[later] = -np.inf
    return hidden


def existing(best: list[int], score: np.ndarray) -> list[int]:
    """The picked positions without the hidden ones (fewer memories than k existed)."""
    return [i for i in best if np.isfinite(score[i])]


@dataclass(frozen=True)
class ClockCount:
    """How many memories a clock leaves out, of how many."""

    as_of: datetime
    later: int
    total: int

    def note(self, whose: str = "this user's") -> str | None:
        """What a result ranked at the clock says about it (None when it hid nothing)."""
        when = self.as_of.isoformat()
        if self.total and self.later == self.total:
            return (
                f"Ranked as of {when}, which is before every one of {whose} {self.total:,} memories: "
                "none existed yet, so nothing is returned."
            )
        if self.later:
            return (
                f"Ranked as of {when}: {self.later:,} of {whose} {self.total:,} memories were created later "
                "and are left out."
            )
        return None
