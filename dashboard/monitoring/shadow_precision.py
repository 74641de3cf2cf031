"""With a judge, the kept precision of the shipped config and of a candidate logged in
shadow, per window, on the same sampled turns. Pure (no streamlit).

decisions.shadow_windows puts the two side by side on the turns each left with no
memory; a judge tells which kept the right memories. Per window:

- **The sample.** N of the window's turns whose rows carry the candidate's
  decisions and where either side kept a memory, drawn as the monitor's own sample
  is (precision.draw_turns: stratified by the top-1 band above the turn's floor, in
  the order of a seeded hash of the message id), so on most logs they are the same
  turns and their pairs are graded once for both.
- **The grades.** The top ``TOP`` memories each side kept (the agent's logged
  ``kept`` and ``shadow_kept``) of each sampled turn; the judge grades their union,
  each (message, memory) pair once (SampledTurn.pairs, sample_grades.grade_sample),
  and a pair already graded, by this sample or an earlier run, is not sent again.
- **The test.** Each side's kept precision is its relevant pairs over its graded
  pairs, and the difference (candidate minus shipped) is paired over turns: both
  sides' pairs of a turn are resampled together, with the bootstrap of turns the
  floor's intervals use (calibration.bootstrap.resampled_totals). The 95% interval
  is the resampled differences' percentiles; the two-sided p is twice the share of
  resamples on the far side of zero, Holm-corrected over the windows
  (alerts.holm), as the McNemar p beside it is. The total pools every window's
  sampled turns, its p uncorrected.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb
import numpy as np

from dashboard.calibration.bootstrap import DEFAULT_RESAMPLES, resampled_totals
from dashboard.calibration.scores import LabelledScores
from dashboard.monitoring.alerts import holm
from dashboard.monitoring.decisions import ShadowReport
from dashboard.monitoring.precision import DEFAULT_SEED, TOP, SampledTurn, draw_turns
from dashboard.monitoring.relation import RELATION, TURNS

CONFIDENCE = 0.95
# the turns a shadow comparison may draw: the candidate's decisions logged, and a memory kept by either side
SHADOWED = "shadow_decided > 0 AND (logged_kept > 0 OR shadow_kept > 0) AND top1 IS NOT NULL"


@dataclass
class SidePrecision:
    """One window's (or every window's) judged pairs of each side and the difference."""

    turns: int = 0  # sampled turns
    shipped_pairs: int = 0  # graded
    shipped_relevant: int = 0
    candidate_pairs: int = 0
    candidate_relevant: int = 0
    ungraded: int = 0  # pairs of the sample with no grade (budget, failure, no query text)
    interval: tuple[float, float] | None = None  # of the difference
    p_value: float | None = None

    @property
    def shipped(self) -> float | None:
        return self.shipped_relevant / self.shipped_pairs if self.shipped_pairs else None

    @property
    def candidate(self) -> float | None:
        return self.candidate_relevant / self.candidate_pairs if self.candidate_pairs else None

    @property
    def difference(self) -> float | None:
        if self.shipped is None or self.candidate is None:
            return None
        return self.candidate - self.shipped

    def as_dict(self, trusted: bool = True) -> dict[str, Any]:
        """The keys a shadow window gains in the JSON (docs/monitoring.md); with an
        untrusted judge the counts stay and no share of them reads as a measurement."""
        shown = trusted and self.difference is not None
        return {
            "judged_turns": self.turns,
            "shipped_pairs": self.shipped_pairs,
            "shipped_relevant": self.shipped_relevant,
            "candidate_pairs": self.candidate_pairs,
            "candidate_relevant": self.candidate_relevant,
            "ungraded_pairs": self.ungraded,
            "shipped_kept_precision": self.shipped if trusted else None,
            "candidate_kept_precision": self.candidate if trusted else None,
            "kept_precision_difference": self.difference if shown else None,
            "difference_interval": list(self.interval) if shown and self.interval else None,
            "precision_p": self.p_value if shown else None,
        }


def shadow_sample(
    con: duckdb.DuckDBPyConnection, floor: float | None, window: str, n: int, seed: int = DEFAULT_SEED, *, turns: str = TURNS
) -> list[SampledTurn]:
    """The sampled turns of every window, each with the top TOP memories the shipped
    config kept (``kept``) and the candidate kept (``candidate``), as the agent logged them."""
    sampled, _ = draw_turns(con, floor, window, n, seed, turns=turns, where=SHADOWED)
    if not sampled:
        return sampled
    found = con.execute(
        f"""SELECT message_id, memory_id, min(rank) AS rank, max(score) AS score, any_value(user_id) AS user_id,
                   coalesce(bool_or(kept), false) AS shipped, coalesce(bool_or(shadow_kept), false) AS candidate
            FROM {RELATION}
            WHERE NOT bad AND memory_id IS NOT NULL AND (kept OR shadow_kept) AND message_id IN (SELECT unnest(?::VARCHAR[]))
            GROUP BY message_id, memory_id ORDER BY message_id, rank, memory_id""",
        [[t.message_id for t in sampled]],
    ).fetchall()
    by_id = {t.message_id: t for t in sampled}
    for message_id, memory_id, rank, score, user_id, shipped, candidate in found:
        turn = by_id[message_id]
        turn.user_id = turn.user_id or user_id
        item = (str(memory_id), int(rank), float(score))
        if shipped and len(turn.kept) < TOP:
            turn.kept.append(item)
        if candidate and len(turn.candidate) < TOP:
            turn.candidate.append(item)
    return sampled


def judge_sides(
    report: ShadowReport,
    sampled: list[SampledTurn],
    grades: dict[tuple[str, str], bool],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    trusted: bool = True,
) -> dict[datetime, SidePrecision]:
    """Each window's (and, under ``datetime.min``, the total's) judged sides, also
    written into the report's windows (their JSON keys) for the command and the page."""
    by_window: dict[datetime, list[SampledTurn]] = {}
    for turn in sampled:
        by_window.setdefault(turn.start, []).append(turn)
    found = {w.start: _sides(by_window.get(w.start, []), grades, resamples, seed) for w in report.windows}
    tested = [start for start, sides in found.items() if sides.p_value is not None]
    for start, p in zip(tested, holm([found[start].p_value or 1.0 for start in tested]), strict=True):
        found[start].p_value = p
    total = _sides(sampled, grades, resamples, seed)
    for w in report.windows:
        w.extra.update(found[w.start].as_dict(trusted))
    report.total.extra.update(total.as_dict(trusted))
    return found | {datetime.min: total}


def _sides(turns: list[SampledTurn], grades: dict[tuple[str, str], bool], resamples: int, seed: int) -> SidePrecision:
    sides = SidePrecision(turns=len(turns))
    # the graded pairs as rows, the shipped side's first: both sides' rows of a turn
    # share its code, so a resample draws them together (a paired bootstrap)
    shipped: list[tuple[int, bool]] = []
    candidate: list[tuple[int, bool]] = []
    for code, turn in enumerate(turns):
        for memory_id, _, _ in turn.pairs():
            verdict = grades.get((turn.message_id, memory_id))
            if verdict is None:
                sides.ungraded += 1
        for side, kept in ((shipped, turn.kept), (candidate, turn.candidate)):
            side += [(code, bool(grades[(turn.message_id, m)])) for m, _, _ in kept if (turn.message_id, m) in grades]
    sides.shipped_pairs, sides.shipped_relevant = len(shipped), sum(r for _, r in shipped)
    sides.candidate_pairs, sides.candidate_relevant = len(candidate), sum(r for _, r in candidate)
    if sides.difference is None or resamples <= 0:
        return sides
    rows = shipped + candidate
    data = LabelledScores(
        np.zeros(len(rows)), np.array([r for _, r in rows], dtype=bool), np.array([c for c, _ in rows], dtype=np.int64), len(turns)
    )
    split = len(shipped)
    differences = []
    # running totals over the rows in order: up to `split` the shipped side's, the rest the candidate's
    for relevant, irrelevant in resampled_totals(data, np.arange(len(rows)), resamples, seed):
        shipped_relevant, shipped_all = relevant[:, split], relevant[:, split] + irrelevant[:, split]
        candidate_relevant = relevant[:, -1] - shipped_relevant
        candidate_all = relevant[:, -1] + irrelevant[:, -1] - shipped_all
        with np.errstate(invalid="ignore", divide="ignore"):
            differences.append(candidate_relevant / candidate_all - shipped_relevant / shipped_all)
    drawn = np.concatenate(differences)
    drawn = drawn[np.isfinite(drawn)]  # a resample that drew no pair of one side has no difference
    if not len(drawn):
        return sides
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(drawn, [tail, 100 - tail])
    sides.interval = (float(low), float(high))
    # +1 on both sides: the observed sample is one of the possible ones
    below, above = int((drawn <= 0).sum()), int((drawn >= 0).sum())
    sides.p_value = min(1.0, 2 * (min(below, above) + 1) / (len(drawn) + 1))
    return sides


def shadow_precision_lines(
    report: ShadowReport, sides: dict[datetime, SidePrecision], source: str, sample: int, seed: int, untrusted: str | None = None,
) -> list[str]:
    """The judged sides as the command's text, under the shadow table."""
    lines = [
        "",
        f"shadow kept precision, judged by {source}: the top {TOP} memories each side kept of {sample} sampled turn(s) per "
        f"window with the candidate's decisions (stratified by top-1 band, seed {seed}), each pair graded once; the "
        "difference (candidate - shipped) with a 95% bootstrap interval over the sampled turns and its p (Holm over the windows)",
    ]
    if untrusted is not None:
        lines.append(f"UNTRUSTED (not measurements: nothing is compared): {untrusted}")
    lines.append(
        f"{'window':<17}{'sampled':>9}{'shipped pairs':>15}{'shipped precision':>19}{'candidate pairs':>17}"
        f"{'candidate precision':>21}{'difference':>12}{'95% interval':>18}{'p':>9}"
    )
    for start, name in [*((w.start, w.label) for w in report.windows), (datetime.min, report.total.label)]:
        s = sides[start]
        shipped, candidate = _share(s.shipped), _share(s.candidate)
        difference = f"{s.difference * 100:+.1f} pts" if s.difference is not None else "-"
        interval = f"{s.interval[0] * 100:+.1f}..{s.interval[1] * 100:+.1f}" if s.interval else "-"
        p = f"{s.p_value:.2g}" if s.p_value is not None else "-"
        if untrusted is not None:
            shipped = candidate = "untrusted"
            difference = interval = p = "-"
        lines.append(
            f"{name:<17}{s.turns:>9,}{s.shipped_pairs:>15,}{shipped:>19}{s.candidate_pairs:>17,}{candidate:>21}{difference:>12}{interval:>18}{p:>9}"
        )
    return lines


def shadow_precision_table(report: ShadowReport) -> list[dict[str, Any]]:
    """The judged sides as rows for a page's table (the Monitor page), read from the
    report's windows as judge_sides wrote them: the command's figures."""
    return [
        {
            "window": w.label,
            "sampled turns": w.extra.get("judged_turns"),
            "shipped pairs": w.extra.get("shipped_pairs"),
            "shipped kept precision": w.extra.get("shipped_kept_precision"),
            "candidate pairs": w.extra.get("candidate_pairs"),
            "candidate kept precision": w.extra.get("candidate_kept_precision"),
            "difference": w.extra.get("kept_precision_difference"),
            "p": w.extra.get("precision_p"),
        }
        for w in [*report.windows, report.total]
    ]


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"
