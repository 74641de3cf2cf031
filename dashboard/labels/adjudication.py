"""The disagreements an adjudicator walks: every pair the counted reviewers labelled
differently, with what the rule makes of it now. Pure over ``CountedLabels``; the
Label page's screen and `memlens labels adjudicate` show the same list."""

from __future__ import annotations

from dataclasses import dataclass

from dashboard.labels.counted import CountedLabels
from dashboard.labels.resolution import ADJUDICATED, counted_labels, votes_by_pair

UNRESOLVED = "unresolved (tie)"


@dataclass
class Disputed:
    message_id: str
    memory_id: str
    rank: int | None
    score: float | None
    votes: dict[str, str]  # reviewer -> label
    now: str  # what the pair counts as now: relevant / not_relevant / "unresolved (tie)"
    adjudicated: bool

    def describe(self) -> str:
        score = f"{self.score:.3f}" if self.score is not None else "n/a"
        votes = ", ".join(f"{reviewer} {label}" for reviewer, label in sorted(self.votes.items()))
        state = f"adjudicated {self.now}" if self.adjudicated else f"now {self.now}"
        return f"{self.message_id} {self.memory_id} rank {self.rank} score {score}: {votes}; {state}"


def disputed_pairs(found: CountedLabels) -> list[Disputed]:
    """Pairs with two or more different labels among the counted reviewers, unresolved ties first."""
    kept, _ = counted_labels(found.raw, found.resolution.listed)
    final = {(label.message_id, label.memory_id): label.label for label in found.labels}
    rows = []
    for pair, votes in votes_by_pair(kept).items():
        if len({vote.label for vote in votes.values()}) < 2:
            continue
        first = next(iter(votes.values()))
        rows.append(
            Disputed(
                *pair,
                first.rank,
                first.score,
                {name: vote.label for name, vote in votes.items()},
                final.get(pair, UNRESOLVED),
                found.resolution.how.get(pair) == ADJUDICATED,
            )
        )
    return sorted(rows, key=lambda d: (d.adjudicated, d.now != UNRESOLVED))
