"""How much reviewers agree, and where they do not. Pure.

Cohen's kappa when exactly two reviewers labelled the same rows; Fleiss' kappa
when more took part (it needs the same number of labels on every row counted, so
rows are counted at the most common number of labels, usually two with an
overlap assignment). Both are (observed agreement - chance agreement) /
(1 - chance agreement); 1 is perfect agreement, 0 what chance alone would give.
When chance agreement is 1 (every label the same value) kappa is undefined: NaN,
as scikit-learn and statsmodels return.

Where a lead sees who needs guidance: Cohen's kappa for every pair of reviewers over
the rows both labelled, and each reviewer's share of relevant labels beside the
others' share on the same rows. Reviewer names are matched case-insensitively
(dashboard/labels/resolution.py), so "Ana" and "ana" are one reviewer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dashboard.database.model import LABEL_VALUES, RELEVANT, Label
from dashboard.labels.resolution import votes_by_pair


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters' labels of the same items, in the same order."""
    if len(first) != len(second):
        raise ValueError(f"both raters need a label for every item ({len(first)} vs {len(second)})")
    if not first:
        return float("nan")
    categories = sorted(set(first) | set(second), key=str)
    index = {c: i for i, c in enumerate(categories)}
    a = np.array([index[v] for v in first])
    b = np.array([index[v] for v in second])
    observed = float(np.mean(a == b))
    k = len(categories)
    chance = float(np.dot(np.bincount(a, minlength=k), np.bincount(b, minlength=k))) / len(a) ** 2
    return (observed - chance) / (1 - chance) if chance < 1 else float("nan")


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' kappa from an items x categories table of how many raters chose
    each category; every row must sum to the same number of raters (>= 2)."""
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[0] == 0:
        return float("nan")
    raters = counts.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise ValueError("Fleiss' kappa needs the same number (2 or more) of labels on every item")
    n = raters[0]
    per_item = (np.sum(counts * counts, axis=1) - n) / (n * (n - 1))
    observed = float(per_item.mean())
    shares = counts.sum(axis=0) / counts.sum()
    chance = float(np.sum(shares * shares))
    return (observed - chance) / (1 - chance) if chance < 1 else float("nan")


@dataclass
class Disagreement:
    message_id: str
    memory_id: str
    rank: int | None
    score: float | None
    labels: dict[str, str]  # reviewer -> label

    def describe(self) -> str:
        score = f"{self.score:.3f}" if self.score is not None else "n/a"
        votes = ", ".join(f"{reviewer} {label}" for reviewer, label in sorted(self.labels.items()))
        return f"{self.message_id} {self.memory_id} rank {self.rank} score {score}: {votes}"


@dataclass
class PairAgreement:
    """Two reviewers over the rows both labelled."""

    first: str
    second: str
    rows: int
    kappa: float
    observed: float

    def line(self) -> str:
        kappa = "undefined" if np.isnan(self.kappa) else f"{self.kappa:.3f}"
        return f"{self.first}-{self.second}: kappa {kappa} over {self.rows} row(s), raw agreement {self.observed:.0%}"


@dataclass
class ReviewerRate:
    """How often one reviewer says relevant, against the others on the same rows."""

    reviewer: str
    labels: int  # every label of theirs counted
    relevant_rate: float  # share of those that are relevant
    shared: int  # of them, rows another reviewer labelled too
    shared_rate: float | None  # their relevant share on those rows
    others_rate: float | None  # the other reviewers' relevant share on the same rows

    def line(self) -> str:
        text = f"{self.reviewer}: {self.relevant_rate:.0%} relevant of {self.labels} label(s)"
        if self.shared and self.shared_rate is not None and self.others_rate is not None:
            text += (
                f"; on {self.shared} row(s) shared with others {self.shared_rate:.0%} relevant "
                f"against the others' {self.others_rate:.0%}"
            )
        return text


@dataclass
class AgreementReport:
    method: str | None  # "cohen" | "fleiss" | None (nothing labelled twice yet)
    kappa: float | None
    rows: int  # rows the kappa is computed over
    reviewers: list[str]  # everyone with a label in the input
    observed: float | None  # share of those rows where every reviewer agreed
    disagreements: list[Disagreement] = field(default_factory=list)
    left_out: int = 0  # rows labelled twice or more but not at the counted number
    pairwise: list[PairAgreement] = field(default_factory=list)
    rates: list[ReviewerRate] = field(default_factory=list)

    @property
    def method_name(self) -> str:
        return {"cohen": "Cohen's kappa", "fleiss": "Fleiss' kappa"}.get(self.method or "", "no kappa")

    def headline(self) -> str:
        if self.method is None:
            return "No row has labels from two reviewers yet: no agreement figure."
        kappa = "undefined (every label the same)" if self.kappa is None or np.isnan(self.kappa) else f"{self.kappa:.3f}"
        text = f"{self.method_name} {kappa} over {self.rows} row(s) labelled by two or more reviewers"
        if self.observed is not None:
            text += f" (raw agreement {self.observed:.1%})"
        if self.left_out:
            text += f"; {self.left_out} row(s) with a different number of labels left out"
        return text


def agreement(labels: Iterable[Label]) -> AgreementReport:
    """Agreement over every row (message, memory) that two or more reviewers
    labelled, and the rows where their labels differ."""
    by_row = votes_by_pair(labels)  # one vote per reviewer, names matched case-insensitively
    pairwise, rates = pairwise_agreement(by_row), reviewer_rates(by_row)
    reviewers = sorted({r for votes in by_row.values() for r in votes})
    shared = {key: votes for key, votes in by_row.items() if len(votes) >= 2}
    disagreements = [
        Disagreement(
            key[0],
            key[1],
            next(iter(votes.values())).rank,
            next(iter(votes.values())).score,
            {reviewer: label.label for reviewer, label in votes.items()},
        )
        for key, votes in sorted(shared.items())
        if len({label.label for label in votes.values()}) > 1
    ]
    if not shared:
        return AgreementReport(None, None, 0, reviewers, None, pairwise=pairwise, rates=rates)
    pair_reviewers = sorted({r for votes in shared.values() for r in votes})
    if len(pair_reviewers) == 2:
        a, b = pair_reviewers
        first = [votes[a].label for votes in shared.values()]
        second = [votes[b].label for votes in shared.values()]
        kappa = cohen_kappa(first, second)
        return AgreementReport(
            "cohen", kappa, len(shared), reviewers, _observed(shared.values()), disagreements, pairwise=pairwise, rates=rates
        )
    size = Counter(len(votes) for votes in shared.values()).most_common(1)[0][0]
    counted = [votes for votes in shared.values() if len(votes) == size]
    categories = list(LABEL_VALUES) + sorted({vote.label for v in counted for vote in v.values()} - set(LABEL_VALUES))
    table = np.array([[sum(vote.label == c for vote in votes.values()) for c in categories] for votes in counted])
    return AgreementReport(
        "fleiss",
        fleiss_kappa(table),
        len(counted),
        reviewers,
        _observed(counted),
        disagreements,
        left_out=len(shared) - len(counted),
        pairwise=pairwise,
        rates=rates,
    )


def pairwise_agreement(by_row: dict[tuple[str, str], dict[str, Label]]) -> list[PairAgreement]:
    """Cohen's kappa of every two reviewers over the rows both labelled."""
    reviewers = sorted({r for votes in by_row.values() for r in votes})
    found = []
    for i, first in enumerate(reviewers):
        for second in reviewers[i + 1 :]:
            both = [(v[first].label, v[second].label) for v in by_row.values() if first in v and second in v]
            if not both:
                continue
            a, b = [x for x, _ in both], [y for _, y in both]
            observed = sum(x == y for x, y in both) / len(both)
            found.append(PairAgreement(first, second, len(both), cohen_kappa(a, b), observed))
    return found


def reviewer_rates(by_row: dict[tuple[str, str], dict[str, Label]]) -> list[ReviewerRate]:
    """Each reviewer's share of relevant labels, overall and against the others on shared rows."""
    rates = []
    for reviewer in sorted({r for votes in by_row.values() for r in votes}):
        mine = [votes for votes in by_row.values() if reviewer in votes]
        relevant = sum(votes[reviewer].label == RELEVANT for votes in mine)
        shared = [votes for votes in mine if len(votes) > 1]
        own = [votes[reviewer].label == RELEVANT for votes in shared]
        others = [vote.label == RELEVANT for votes in shared for name, vote in votes.items() if name != reviewer]
        rates.append(
            ReviewerRate(
                reviewer,
                len(mine),
                relevant / len(mine),
                len(shared),
                sum(own) / len(own) if own else None,
                sum(others) / len(others) if others else None,
            )
        )
    return rates


def _observed(rows: Iterable[dict[str, Label]]) -> float:
    rows = list(rows)
    return sum(len({vote.label for vote in votes.values()}) == 1 for votes in rows) / len(rows)
