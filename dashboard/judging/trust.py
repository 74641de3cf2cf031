"""When a judge's suggestion may be accepted with one key. Pure.

A suggestion is offered with its measured trust: the judge's Cohen's kappa against
people, its precision and recall per label and the number of people's labels
behind them. One-key Accept is on only when

- agreement was measured on at least ``min_labels`` people's labels
  (``MEMLENS_JUDGE_MIN_LABELS``, default 50), and
- its kappa is at least ``min_kappa`` (``MEMLENS_JUDGE_MIN_KAPPA``, default 0.6, the
  lower edge of what is usually read as substantial agreement), and
- the judge's grades are not degenerate (dashboard/judging/run_check.py).

Below that, its suggestions are hints only. The agreement is the one measured on
the people's labels in the label database, or, when more labels were behind it, the
one recorded for the judge by `memlens judge align` (its held-out figures).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from dashboard.database.judge_labels import JudgeLabel
from dashboard.database.model import NOT_RELEVANT, RELEVANT, Label
from dashboard.judging.judge_agreement import JudgeAgreement, from_confusion, judge_agreement
from dashboard.judging.run_check import RunCheck, check_counts, check_run, is_placeholder

MIN_LABELS_ENV = "MEMLENS_JUDGE_MIN_LABELS"
MIN_KAPPA_ENV = "MEMLENS_JUDGE_MIN_KAPPA"
DEFAULT_MIN_LABELS = 50
DEFAULT_MIN_KAPPA = 0.6


@dataclass(frozen=True)
class TrustBar:
    min_labels: int = DEFAULT_MIN_LABELS
    min_kappa: float = DEFAULT_MIN_KAPPA

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> TrustBar:
        """The bar from the environment; a value that is not a number says which."""
        labels_text = environ.get(MIN_LABELS_ENV, "").strip()
        kappa_text = environ.get(MIN_KAPPA_ENV, "").strip()
        try:
            min_labels = int(labels_text) if labels_text else DEFAULT_MIN_LABELS
        except ValueError:
            raise ValueError(f"{MIN_LABELS_ENV} must be a whole number, got {labels_text!r}") from None
        try:
            min_kappa = float(kappa_text) if kappa_text else DEFAULT_MIN_KAPPA
        except ValueError:
            raise ValueError(f"{MIN_KAPPA_ENV} must be a number, got {kappa_text!r}") from None
        if min_labels < 1:
            raise ValueError(f"{MIN_LABELS_ENV} must be at least 1, got {min_labels}")
        if not math.isfinite(min_kappa) or not -1 <= min_kappa <= 1:
            raise ValueError(f"{MIN_KAPPA_ENV} must lie in [-1, 1], got {kappa_text!r}")
        return cls(min_labels, min_kappa)


@dataclass
class JudgeTrust:
    source: str
    agreement: JudgeAgreement
    check: RunCheck
    bar: TrustBar
    measured_by: str = "the label database"  # or "memlens judge align (held-out)"

    @property
    def accept_allowed(self) -> bool:
        return not self.why_hints_only()

    def why_hints_only(self) -> str | None:
        """Why Accept is off (None: on)."""
        if self.check.degenerate:
            return "its grades are degenerate: " + "; ".join(p.message.split(": ", 1)[-1] for p in self.check.problems if p.whole_run)
        count = self.agreement.count
        if count < self.bar.min_labels:
            return f"agreement is measured on {count} people's label(s), fewer than the {self.bar.min_labels} required"
        kappa = self.agreement.kappa
        if kappa is None or math.isnan(kappa) or kappa < self.bar.min_kappa:
            shown = "undefined" if kappa is None or math.isnan(kappa) else f"{kappa:.3f}"
            return f"its kappa {shown} is under the bar {self.bar.min_kappa:g}"
        return None

    def figures(self) -> str:
        """Kappa, per-label precision and recall and the count, in one line."""
        a = self.agreement
        if not a.count:
            return f"{self.source}: no people's label to measure it against yet"
        kappa = "undefined" if a.kappa is None or math.isnan(a.kappa) else f"{a.kappa:.3f}"
        parts = [f"{self.source}: kappa {kappa} on {a.count} people's label(s) ({self.measured_by})"]
        for label, (precision, recall) in a.per_label().items():
            p = "n/a" if precision is None else f"{precision:.0%}"
            r = "n/a" if recall is None else f"{recall:.0%}"
            parts.append(f"{label} precision {p} recall {r}")
        return "; ".join(parts)


def judge_trust(
    source: str,
    people: Iterable[Label],
    judgments: Iterable[JudgeLabel],
    bar: TrustBar,
    recorded: JudgeAgreement | None = None,
) -> JudgeTrust:
    """The trust of judge `source`: its agreement with `people` (or the `recorded`
    one when that rests on more labels) and the checks of its grades."""
    mine = [j for j in judgments if j.source == source]
    people = list(people)
    # Every person's label counts here, as trust_from_summary counts them in SQL (so the
    # two agree), not one label per pair by the resolution rule the figures use.
    measured = judge_agreement(people, mine, source, resamples=0, resolved=people)
    check = check_run(source, [(j.grade, j.reason) for j in mine])
    if recorded is not None and recorded.count > measured.count:
        return JudgeTrust(source, recorded, check, bar, "memlens judge align, held-out labels")
    return JudgeTrust(source, measured, check, bar)


def trust_from_summary(source: str, summary: dict, bar: TrustBar, recorded: JudgeAgreement | None = None) -> JudgeTrust:
    """The same from the database's counts (db.judge_labels.summary), so a page that
    reruns on every key press does not read every label."""
    confusion = {RELEVANT: {RELEVANT: 0, NOT_RELEVANT: 0}, NOT_RELEVANT: {RELEVANT: 0, NOT_RELEVANT: 0}}
    for label, judge_relevant, count in summary["confusion"]:
        if label in confusion:
            confusion[label][RELEVANT if judge_relevant else NOT_RELEVANT] += count
    measured = from_confusion(source, confusion)
    placeholders = {reason.strip(): n for reason, n in summary["slot_like"].items() if is_placeholder(reason)}
    check = check_counts(source, summary["grades"], placeholders, summary["distinct_reasons"], summary["a_reason"] or "")
    if recorded is not None and recorded.count > measured.count:
        return JudgeTrust(source, recorded, check, bar, "memlens judge align, held-out labels")
    return JudgeTrust(source, measured, check, bar)
