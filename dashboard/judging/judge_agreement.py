"""How far a judge agrees with people, on the pairs both labelled. Pure.

Each person's label of a (message, memory) pair that the judge also graded is one
comparison: the person's ``relevant`` / ``not_relevant`` against the judge's grade
read as relevant at 2 or more (``RELEVANT_GRADE``). Over the comparisons:

    count           how many there are
    raw agreement   the share where both say the same
    Cohen's kappa   agreement corrected for chance (dashboard/labels/reviewer_agreement.py), with a
                    bootstrap percentile interval (comparisons resampled with replacement)
    TPR             of the pairs people call relevant, the share the judge calls relevant
    TNR             of the pairs people call not relevant, the share the judge agrees on
    confusion       people's label x the judge's verdict, counts

and the same per reviewer. A figure computed from judge labels is shown beside this,
so nobody trusts a judge before it has been checked against people.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from dashboard.database.judge_labels import JudgeLabel
from dashboard.database.model import NOT_RELEVANT, RELEVANT, Label
from dashboard.labels.reviewer_agreement import cohen_kappa

DEFAULT_RESAMPLES = 1_000
DEFAULT_SEED = 0
CONFIDENCE = 0.95


@dataclass
class JudgeAgreement:
    source: str
    count: int
    raw_agreement: float | None
    kappa: float | None  # None with no comparison; NaN when chance agreement is 1
    kappa_interval: tuple[float, float] | None
    tpr: float | None
    tnr: float | None
    confusion: dict[str, dict[str, int]]  # people's label -> the judge's verdict -> count
    per_reviewer: dict[str, JudgeAgreement] = field(default_factory=dict)
    ties: int = 0  # pairs the judge graded that are unresolved ties between people: left out overall

    def headline(self) -> str:
        if not self.count and self.ties:
            return (
                f"{self.source} vs people: every pair both graded ({self.ties}) is an unresolved tie between "
                "reviewers, so no overall figure (adjudicate them); each reviewer's is below."
            )
        if not self.count:
            return f"{self.source}: no pair is labelled by both a person and the judge yet, so no agreement figure."

        def share(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.1%}"

        if self.kappa is None or np.isnan(self.kappa):
            kappa = "undefined (every label the same)"
        else:
            kappa = f"{self.kappa:.3f}"
            if self.kappa_interval:
                kappa += f" (95% interval {self.kappa_interval[0]:.3f} to {self.kappa_interval[1]:.3f})"
        return (
            f"{self.source} vs people: Cohen's kappa {kappa} over {self.count} pair(s); "
            f"raw agreement {share(self.raw_agreement)}, TPR {share(self.tpr)}, TNR {share(self.tnr)}"
            + (f"; {self.ties} tied pair(s) left out" if self.ties else "")
        )

    def per_label(self) -> dict[str, tuple[float | None, float | None]]:
        """label -> (precision, recall) of the judge for it: of the pairs the judge
        gives that label, the share people gave it too; of those people gave it, the
        share the judge found (None where nothing is counted)."""
        c = self.confusion
        figures: dict[str, tuple[float | None, float | None]] = {}
        for label, other in ((RELEVANT, NOT_RELEVANT), (NOT_RELEVANT, RELEVANT)):
            hit, said, truth = c[label][label], c[label][label] + c[other][label], c[label][label] + c[label][other]
            figures[label] = (hit / said if said else None, hit / truth if truth else None)
        return figures

    def bias(self) -> tuple[float, float] | None:
        """(the judge's share of relevant, people's share of relevant) on the pairs both
        labelled: a judge far above or below people says relevant too often or too rarely."""
        if not self.count:
            return None
        c = self.confusion
        judge = (c[RELEVANT][RELEVANT] + c[NOT_RELEVANT][RELEVANT]) / self.count
        people = (c[RELEVANT][RELEVANT] + c[RELEVANT][NOT_RELEVANT]) / self.count
        return judge, people

    def label_lines(self) -> list[str]:
        """Per-label precision and recall, then the bias, as the reports print them."""
        if not self.count:
            return []

        def share(value: float | None) -> str:
            return "n/a" if value is None else f"{value:.1%}"

        lines = [f"{label}: precision {share(p)}, recall {share(r)}" for label, (p, r) in self.per_label().items()]
        judge, people = self.bias() or (0.0, 0.0)
        lines.append(f"says relevant: judge {judge:.1%} vs people {people:.1%}")
        return lines

    def confusion_lines(self) -> list[str]:
        c = self.confusion
        return [
            "                      judge relevant  judge not_relevant",
            f"people relevant       {c[RELEVANT][RELEVANT]:>14}  {c[RELEVANT][NOT_RELEVANT]:>18}",
            f"people not_relevant   {c[NOT_RELEVANT][RELEVANT]:>14}  {c[NOT_RELEVANT][NOT_RELEVANT]:>18}",
        ]


def bootstrap_kappa(
    people: np.ndarray, judge: np.ndarray, resamples: int, seed: int, confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """The percentile interval of Cohen's kappa over comparisons resampled with
    replacement (boolean arrays, True = relevant); None when no resample defines it."""
    n = len(people)
    if n == 0 or resamples <= 0:
        return None
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(resamples, n))
    a, b = people[picks], judge[picks]
    observed = np.mean(a == b, axis=1)
    pa, pb = a.mean(axis=1), b.mean(axis=1)
    chance = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappas = np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)
    kappas = kappas[~np.isnan(kappas)]
    if not len(kappas):
        return None
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(kappas, [tail, 100 - tail])
    return float(low), float(high)


def _figures(source: str, people: list[bool], judge: list[bool], resamples: int, seed: int) -> JudgeAgreement:
    a, b = np.array(people, dtype=bool), np.array(judge, dtype=bool)
    count = len(a)
    confusion = {
        RELEVANT: {RELEVANT: int(np.sum(a & b)), NOT_RELEVANT: int(np.sum(a & ~b))},
        NOT_RELEVANT: {RELEVANT: int(np.sum(~a & b)), NOT_RELEVANT: int(np.sum(~a & ~b))},
    }
    if not count:
        return JudgeAgreement(source, 0, None, None, None, None, None, confusion)
    positives, negatives = int(a.sum()), int((~a).sum())
    return JudgeAgreement(
        source=source,
        count=count,
        raw_agreement=float(np.mean(a == b)),
        kappa=cohen_kappa(list(a), list(b)),
        kappa_interval=bootstrap_kappa(a, b, resamples, seed),
        tpr=confusion[RELEVANT][RELEVANT] / positives if positives else None,
        tnr=confusion[NOT_RELEVANT][NOT_RELEVANT] / negatives if negatives else None,
        confusion=confusion,
    )


def compare(
    source: str, people: list[bool], judge: list[bool], *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> JudgeAgreement:
    """The figures of one list of comparisons (True = relevant), paired by position."""
    return _figures(source, people, judge, resamples, seed)


def judge_agreement(
    labels: Iterable[Label],
    judgments: Iterable[JudgeLabel],
    source: str,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    resolved: Iterable[Label] | None = None,
) -> JudgeAgreement:
    """Agreement of the judge `source` with people, and per reviewer. Overall, the
    people's label of a pair is the one rule's (dashboard/labels/resolution.py:
    `resolved`, one label per pair with adjudications applied; else the majority of
    `labels`, ties left out); per reviewer, that reviewer's own labels."""
    from dashboard.database.model import reviewer_key
    from dashboard.labels.resolution import resolve

    labels = list(labels)
    verdicts = {(j.message_id, j.memory_id): j.relevant for j in judgments if j.source == source}
    by_reviewer: dict[str, tuple[list[bool], list[bool]]] = {}
    spelling: dict[str, str] = {}
    people: list[bool] = []
    judge: list[bool] = []
    for label in labels:
        verdict = verdicts.get((label.message_id, label.memory_id))
        if verdict is None or label.label not in (RELEVANT, NOT_RELEVANT):
            continue
        # one reviewer however their name was typed (reviewer_key), shown by its first spelling
        mine = by_reviewer.setdefault(spelling.setdefault(reviewer_key(label.reviewer), label.reviewer), ([], []))
        mine[0].append(label.label == RELEVANT)
        mine[1].append(verdict)
    counted = set()
    for label in resolve(labels).labels if resolved is None else resolved:
        verdict = verdicts.get((label.message_id, label.memory_id))
        if verdict is None or label.label not in (RELEVANT, NOT_RELEVANT):
            continue
        counted.add((label.message_id, label.memory_id))
        people.append(label.label == RELEVANT)
        judge.append(verdict)
    overall = _figures(source, people, judge, resamples, seed)
    overall.ties = len({(lab.message_id, lab.memory_id) for lab in labels if (lab.message_id, lab.memory_id) in verdicts} - counted)
    overall.per_reviewer = {
        reviewer: _figures(source, p, j, resamples, seed) for reviewer, (p, j) in sorted(by_reviewer.items())
    }
    return overall


def to_record(figures: JudgeAgreement, **meta: object) -> dict[str, object]:
    """A judge's agreement as a JSON-ready record (figures and counts, no ids), with
    `meta` (the prompt variant, the split) beside it."""
    return {
        "count": figures.count,
        "raw_agreement": figures.raw_agreement,
        "kappa": None if figures.kappa is None or np.isnan(figures.kappa) else figures.kappa,
        "kappa_interval": list(figures.kappa_interval) if figures.kappa_interval else None,
        "tpr": figures.tpr,
        "tnr": figures.tnr,
        "confusion": figures.confusion,
        **meta,
    }


def from_record(source: str, record: dict | None) -> JudgeAgreement | None:
    """The agreement a record holds (None for no record, or one this version cannot read)."""
    if not record:
        return None
    try:
        interval = record.get("kappa_interval")
        confusion = {
            person: {judge: int(record["confusion"][person][judge]) for judge in (RELEVANT, NOT_RELEVANT)}
            for person in (RELEVANT, NOT_RELEVANT)
        }
        return JudgeAgreement(
            source=source,
            count=int(record["count"]),
            raw_agreement=record.get("raw_agreement"),
            kappa=record.get("kappa"),
            kappa_interval=(float(interval[0]), float(interval[1])) if interval else None,
            tpr=record.get("tpr"),
            tnr=record.get("tnr"),
            confusion=confusion,
        )
    except (KeyError, TypeError, ValueError, IndexError):
        return None


def from_confusion(source: str, confusion: dict[str, dict[str, int]]) -> JudgeAgreement:
    """The figures from the confusion counts alone (people's label -> the judge's
    verdict -> count), as a database counts them; no interval (that needs the rows)."""
    tp, fn = confusion[RELEVANT][RELEVANT], confusion[RELEVANT][NOT_RELEVANT]
    fp, tn = confusion[NOT_RELEVANT][RELEVANT], confusion[NOT_RELEVANT][NOT_RELEVANT]
    count = tp + fn + fp + tn
    if not count:
        return JudgeAgreement(source, 0, None, None, None, None, None, confusion)
    observed = (tp + tn) / count
    people, judge = (tp + fn) / count, (tp + fp) / count
    chance = people * judge + (1 - people) * (1 - judge)
    kappa = (observed - chance) / (1 - chance) if chance < 1 else float("nan")
    return JudgeAgreement(
        source=source, count=count, raw_agreement=observed, kappa=kappa, kappa_interval=None,
        tpr=tp / (tp + fn) if tp + fn else None, tnr=tn / (tn + fp) if tn + fp else None, confusion=confusion,
    )
