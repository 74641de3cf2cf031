"""What a floor can and cannot do with these labels. Pure functions over the sweep.

Why it matters: with rare relevant hits the least-cost floor can switch memory off,
and when the ranking itself mixes the classes no floor helps (docs/domain.md, "Floors
come from labels").

* How separable the scores are: the ROC AUC and the average precision of the score
  as a classifier of relevance, with scikit-learn's definitions (the AUC is the
  trapezoid area under the ROC curve, ties counting half; the average precision is
  the sum over distinct scores of the recall gained times the precision there),
  read off the sweep instead of sorting again.
* Answerable and unanswerable turns apart: a turn with at least one relevant
  labelled hit can be answered from memory, so a floor leaving it with no memory is
  a loss; a turn whose hits were all labelled not relevant has nothing to give, so
  no memory there is the right outcome. This holds when every hit a turn returned
  was labelled (as in a judged set or a labelling session). When a judged set says
  which questions can be answered (labels from a saved run), a turn the set calls
  answerable whose hits hold no relevant memory is neither: it is a retrieval miss
  (the memory exists but was not fetched), which no floor can fix, and it is counted
  apart.
* Plain-sentence warnings: when no floor can give both recall and precision (the
  ranking itself is the problem), and when a chosen floor drops more than half of the
  relevant memories or leaves more than half of the answerable turns with no memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dashboard.calibration.scores import LabelledScores
from dashboard.calibration.sweep import Sweep, format_floor

DIAGNOSTIC_RECALL = 0.9  # "a floor that keeps 90% of relevant memories"
POOR_PRECISION = 0.5  # below this at that recall, most of what is kept is irrelevant
MOST = 0.5  # "more than half" of the relevant memories / answerable turns
RARE = 0.1  # relevant hits under this share of the labels are "rare"


def _score_columns(result: Sweep) -> tuple[np.ndarray, np.ndarray]:
    """True and false positive counts at every distinct score, ascending, then the
    floor above every score (nothing kept)."""
    kept_relevant = np.append(result.kept_relevant[result.is_score], 0).astype(np.float64)
    kept_irrelevant = np.append(result.kept_irrelevant[result.is_score], 0).astype(np.float64)
    return kept_relevant, kept_irrelevant


def roc_auc(result: Sweep) -> float:
    """Area under the ROC curve of the score, as ``sklearn.metrics.roc_auc_score``."""
    kept_relevant, kept_irrelevant = _score_columns(result)
    tpr = kept_relevant / result.relevant_total
    fpr = kept_irrelevant / result.irrelevant_total
    # Ascending floors walk the curve from (1, 1) down to (0, 0).
    return float(np.sum((fpr[:-1] - fpr[1:]) * (tpr[:-1] + tpr[1:]) / 2))


def average_precision(result: Sweep) -> float:
    """Average precision of the score, as ``sklearn.metrics.average_precision_score``:
    the sum over distinct scores of (recall there - recall at the next score up)
    times the precision there."""
    kept_relevant, kept_irrelevant = _score_columns(result)
    recall = kept_relevant / result.relevant_total
    kept = kept_relevant[:-1] + kept_irrelevant[:-1]  # every distinct-score floor keeps something
    precision = kept_relevant[:-1] / kept
    return float(np.sum((recall[:-1] - recall[1:]) * precision))


# ----------------------------------------------------------------- answerable turns


@dataclass
class TurnSplit:
    """Turns with no memory per floor, answerable and unanswerable ones apart."""

    floor: np.ndarray
    answerable: int  # turns with at least one relevant labelled hit
    unanswerable: int  # turns whose labelled hits are all not relevant
    no_memory_answerable: np.ndarray  # answerable turns with nothing kept, per floor
    no_memory_unanswerable: np.ndarray
    best_answerable: np.ndarray  # each answerable turn's best score, sorted
    best_unanswerable: np.ndarray
    missed: int = 0  # answerable turns (by the judged set) whose hits hold no relevant memory
    # Whether the source says the "unanswerable" turns had no answer (a judged set).
    # From labels alone a turn with no relevant labelled hit may still have had its
    # answer in memory: its empty result is not known to be right.
    known: bool = True

    @property
    def answerable_share(self) -> np.ndarray:
        """Answerable turns left with no memory (a loss); NaN when there are none."""
        return self.no_memory_answerable / self.answerable if self.answerable else np.full(len(self.floor), np.nan)

    @property
    def unanswerable_share(self) -> np.ndarray:
        """Unanswerable turns left with no memory (the right outcome); NaN when none."""
        if not self.unanswerable:
            return np.full(len(self.floor), np.nan)
        return self.no_memory_unanswerable / self.unanswerable

    def at(self, floors: np.ndarray) -> TurnSplit:
        """The same turns counted at other floors (sorted ascending)."""
        floors = np.asarray(floors, dtype=np.float64)
        return TurnSplit(
            floor=floors,
            answerable=self.answerable,
            unanswerable=self.unanswerable,
            no_memory_answerable=_under(self.best_answerable, floors),
            no_memory_unanswerable=_under(self.best_unanswerable, floors),
            best_answerable=self.best_answerable,
            best_unanswerable=self.best_unanswerable,
            missed=self.missed,
            known=self.known,
        )

    def other_turns_text(self, share: float) -> str:
        """The no-memory share of the turns with no relevant memory, and what it means."""
        if self.known:
            return f"{share:.0%} of {self.unanswerable:,} turns with no relevant memory (right)"
        return (
            f"{share:.0%} of {self.unanswerable:,} turns with no relevant memory labelled (unknown whether right: "
            "the labels do not say whether their question had an answer)"
        )


def _under(values: np.ndarray, floors: np.ndarray) -> np.ndarray:
    """How many of the sorted ``values`` are under each of the sorted ``floors``.

    With more floors than values (the full sweep: a floor per score, a value per
    turn), place the values among the floors and count up, as ``sweep`` does: the
    cost follows the values, not the floors."""
    if len(floors) <= len(values):
        return np.searchsorted(values, floors, side="left")
    # A value is under every floor after the ones at or below it.
    position = np.searchsorted(floors, values, side="right")
    return np.cumsum(np.bincount(position, minlength=len(floors) + 1))[: len(floors)]


def turn_split(data: LabelledScores, floors: np.ndarray) -> TurnSplit | None:
    """The split at each of ``floors`` (sorted ascending); None without message ids.

    A turn has no memory when even its best hit is under the floor, so counting the
    best scores of each kind of turn under each floor (searchsorted on the sorted
    bests) gives every floor at once.
    """
    if data.turn is None or not data.turn_figures:
        return None
    best = np.full(data.turns, -np.inf)
    np.maximum.at(best, data.turn, data.scores)
    answerable = np.zeros(data.turns, dtype=bool)
    answerable[data.turn[data.relevant]] = True
    # The judged set's word, when there is one: a turn it calls answerable without a
    # relevant labelled hit is a retrieval miss, not a turn with nothing to give.
    unanswerable = ~data.answerable if data.answerable is not None else ~answerable
    missed = ~answerable & ~unanswerable
    empty = np.array([], dtype=np.float64)
    whole = TurnSplit(
        floor=empty,
        answerable=int(answerable.sum()),
        unanswerable=int(unanswerable.sum()),
        no_memory_answerable=empty,
        no_memory_unanswerable=empty,
        best_answerable=np.sort(best[answerable]),
        best_unanswerable=np.sort(best[unanswerable]),
        missed=int(missed.sum()),
        known=data.answerable is not None,
    )
    return whole.at(floors)


def missed_text(missed: int) -> str:
    """The sentence for retrieval misses, shared by the CLI line and the page."""
    return (
        f"{missed:,} answerable turn(s) whose hits hold no relevant memory (retrieval misses: "
        "the judged set has a relevant memory the store did not return; no floor helps)"
    )


# ----------------------------------------------------------------- the diagnosis


@dataclass
class FloorOutcome:
    """What one chosen floor does, for the warnings: ``name`` says how it was chosen
    ("cost ratio 1", "target recall 0.90")."""

    name: str
    floor: float
    dropped_relevant: int
    relevant_total: int
    no_memory_answerable: float | None = None  # share of answerable turns left with no memory


@dataclass
class Diagnosis:
    separates: bool
    roc_auc: float
    average_precision: float
    relevant_share: float  # of the labelled hits
    best_precision_at_recall: float  # the best precision of floors keeping DIAGNOSTIC_RECALL
    answerable_turns: int | None = None
    unanswerable_turns: int | None = None
    warnings: list[str] = field(default_factory=list)
    missed_turns: int | None = None  # retrieval misses (answerable by the judged set, nothing relevant fetched)

    def line(self) -> str:
        """The CLI's summary of separability."""
        return (
            f"diagnosis: ROC AUC {self.roc_auc:.2f}, average precision {self.average_precision:.2f} "
            f"(relevant share {self.relevant_share:.1%})"
        )

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def best_precision_at_recall(result: Sweep, recall: float = DIAGNOSTIC_RECALL) -> float:
    """The highest precision of any floor keeping at least ``recall`` of the relevant hits."""
    reaches = result.is_score & (result.recall >= recall)
    return float(np.nanmax(result.precision[reaches]))


def ranking_warning(best_precision: float, recall: float = DIAGNOSTIC_RECALL) -> str | None:
    """The sentence for labels no floor can serve: keeping most relevant memories
    keeps mostly irrelevant ones."""
    if best_precision >= POOR_PRECISION:
        return None
    # "At least": round the irrelevant share down so the sentence stays true.
    irrelevant = math.floor((1 - best_precision) * 100)
    return (
        f"At every floor that keeps {recall:.0%} of relevant memories, at least {irrelevant}% of what is kept "
        "is irrelevant: a floor cannot fix this ranking; compare the store's order against a re-ranked or "
        "re-weighted one."
    )


def floor_warnings(outcome: FloorOutcome, relevant_share: float) -> list[str]:
    warnings = []
    shown = format_floor(outcome.floor)
    dropped_share = outcome.dropped_relevant / outcome.relevant_total
    if dropped_share > MOST:
        text = (
            f"The floor {shown} ({outcome.name}) drops {outcome.dropped_relevant} of {outcome.relevant_total} "
            f"relevant memories ({dropped_share:.0%}): it turns memory off where it is needed."
        )
        if outcome.name.startswith("cost ratio"):
            # Say why the arithmetic lands there: rare relevant hits, or a dear wrong memory.
            reason = (
                f"Relevant hits are {relevant_share:.1%} of these labels"
                if relevant_share < RARE
                else f"A wrong memory costs {outcome.name.removeprefix('cost ratio ')} missed ones"
            )
            text += f" {reason}, so dropping them costs less than keeping the irrelevant ones; choose a target recall instead."
        warnings.append(text)
    if outcome.no_memory_answerable is not None and outcome.no_memory_answerable > MOST:
        warnings.append(
            f"The floor {shown} ({outcome.name}) leaves {outcome.no_memory_answerable:.0%} of answerable turns "
            "(turns with a relevant memory) with no memory at all."
        )
    return warnings


def diagnose(
    result: Sweep, data: LabelledScores, outcomes: list[FloorOutcome], separates: bool, split: TurnSplit | None = None
) -> Diagnosis:
    """Separability, the turn counts (from ``split``) and every warning, for the
    floors in ``outcomes``."""
    best = best_precision_at_recall(result)
    relevant_share = data.relevant_count / len(data)
    warnings = []
    if not separates:
        sentence = ranking_warning(best)
        if sentence:
            warnings.append(sentence)
    for outcome in outcomes:
        warnings.extend(w for w in floor_warnings(outcome, relevant_share) if w not in warnings)
    return Diagnosis(
        separates=separates,
        roc_auc=roc_auc(result),
        average_precision=average_precision(result),
        relevant_share=relevant_share,
        best_precision_at_recall=best,
        answerable_turns=split.answerable if split else None,
        unanswerable_turns=split.unanswerable if split else None,
        warnings=warnings,
        missed_turns=split.missed if split else None,
    )
