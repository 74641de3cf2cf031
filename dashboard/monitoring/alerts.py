"""Baseline and alerts over the windows. Pure (no streamlit).

A window is compared with the baseline (by default the floor config's label dates
when the log covers them, else the first windows), two ways:

- **No memory.** The window alerts when its share of turns with no memory is above
  the baseline's by more than ``margin`` (default 5 points) AND a one-sided
  two-proportion z-test says the difference is significant after a Holm
  correction over the windows tested (family-wise level ``alpha``). The margin keeps
  a big log from alerting on a fraction of a point; the test keeps a small window
  from alerting on noise.
- **Top-1 drift.** The drift of a window is the Kolmogorov-Smirnov statistic D of
  its top-1 scores against the baseline's. The threshold comes from the baseline
  itself: each baseline window against the rest of the baseline (leave one out)
  gives the drift the log shows between ordinary windows; the threshold is the
  ``drift_quantile`` (99th percentile) of those, raised for a window with fewer
  turns (sampling noise grows as 1/sqrt(turns): the baseline drifts are rescaled to
  the window's size). The window alerts when D is above the threshold AND the
  KS test's p-value (asymptotic Kolmogorov distribution), Holm-corrected, is under
  ``alpha``. So a quiet baseline with small windows does not alert every day, and
  a baseline that moves from day to day sets its own, wider, threshold.

A window with fewer than ``min_turns`` turns is not tested, and said so (in one note
for all of them past ``FOLD_NOTES`` windows).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np

from connectors.common.errors import MemlensError
from dashboard.monitoring.relation import TURNS
from dashboard.monitoring.windows import AT_FLOOR, Window, top1_histograms, window_figures

if TYPE_CHECKING:
    from dashboard.turn_rule import TurnRule

DEFAULT_MARGIN = 0.05
DEFAULT_ALPHA = 0.05
DEFAULT_MIN_TURNS = 100
DEFAULT_BASELINE_WINDOWS = 7
DRIFT_QUANTILE = 0.99
FOLD_NOTES = 3  # more windows too small to test than this are said in one note
NO_MEMORY = "no_memory_share"
DRIFT = "top1_drift"


@dataclass
class Settings:
    floor: float | None  # None: each turn at its own floor (the turns table's: dashboard/monitoring/turn_floor.py)
    window: str = "1d"
    margin: float = DEFAULT_MARGIN
    alpha: float = DEFAULT_ALPHA
    min_turns: int = DEFAULT_MIN_TURNS
    baseline_windows: int = DEFAULT_BASELINE_WINDOWS
    baseline_range: tuple[datetime, datetime] | None = None  # explicit --baseline FROM..TO
    config_range: tuple[datetime, datetime] | None = None  # the floor config's label dates
    drift_quantile: float = DRIFT_QUANTILE
    floor_words: str | None = None  # how the floor was chosen, in words, when not one floor
    turns: str = TURNS  # the turns table the figures are read from (a floor config's own: relation.count_at_config)
    counting: str = AT_FLOOR  # what keeps a memory: the floor, the logged decisions, a rule file (windows.py)
    rule: TurnRule | None = None  # the floor file's turn rule, when `counting` is RULE_DECISIONS

    def describe_floor(self) -> str:
        """``floor 0.35``, or how each turn's floor was chosen."""
        if self.counting != AT_FLOOR:  # the decisions, not a floor, say which turns have memory
            return self.floor_words or "each turn by its logged decisions"
        return f"floor {self.floor:g}" if self.floor is not None else (self.floor_words or "each turn at its own floor")


@dataclass
class Alert:
    window: str  # the window's label
    start: datetime
    figure: str  # NO_MEMORY or DRIFT
    value: float
    baseline: float
    margin: float
    p_value: float
    tested: int  # windows in the Holm correction

    def line(self) -> str:
        if self.figure == NO_MEMORY:
            return (
                f"alert: {self.window}: no-memory share {self.value:.1%} vs baseline {self.baseline:.1%}, "
                f"margin {self.margin * 100:.1f} points, p = {self.p_value:.2g} "
                f"(one-sided two-proportion test, Holm over {self.tested} windows)"
            )
        return (
            f"alert: {self.window}: top-1 drift (KS) {self.value:.3f} vs baseline {self.baseline:.3f} "
            f"(the median drift of a baseline window), margin {self.margin:.3f} (the 99th percentile, "
            "at this window's size), "
            f"p = {self.p_value:.2g} (KS test, Holm over {self.tested} windows)"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "start": self.start.isoformat(),
            "figure": self.figure,
            "value": self.value,
            "baseline": self.baseline,
            "margin": self.margin,
            "p_value": self.p_value,
            "windows_tested": self.tested,
        }


@dataclass
class Baseline:
    how: str  # what chose it, in words
    windows: list[Window]
    turns: int
    no_memory_share: float
    drift_spread: list[float] = field(default_factory=list)  # leave-one-out drift of each baseline window

    @property
    def label(self) -> str:
        if not self.windows:
            return "none"
        first, last = f"{self.windows[0].start:%Y-%m-%d}", f"{self.windows[-1].start:%Y-%m-%d}"
        return first if first == last else f"{first}..{last}"


@dataclass
class MonitorResult:
    settings: Settings
    windows: list[Window]
    baseline: Baseline
    alerts: list[Alert]
    notes: list[str]


# ------------------------------------------------------------------ statistics


def one_sided_two_proportion_p(hits: int, n: int, base_hits: int, base_n: int) -> float:
    """P(a share at least this far above the baseline's | same share), pooled z-test."""
    if n == 0 or base_n == 0:
        return 1.0
    share, base = hits / n, base_hits / base_n
    pooled = (hits + base_hits) / (n + base_n)
    spread = math.sqrt(pooled * (1 - pooled) * (1 / n + 1 / base_n))
    if spread == 0:
        return 0.0 if share > base else 1.0
    return 0.5 * math.erfc((share - base) / spread / math.sqrt(2))


def kolmogorov_p(statistic: float, n: int, m: int) -> float:
    """Asymptotic two-sample KS p-value: Q(sqrt(nm/(n+m)) D) (Kolmogorov's series)."""
    if n == 0 or m == 0:
        return 1.0
    scale = math.sqrt(n * m / (n + m))
    x = (scale + 0.12 + 0.11 / scale) * statistic  # Stephens' small-sample correction
    if x < 0.2:
        return 1.0
    total = sum((-1) ** (k - 1) * math.exp(-2 * k * k * x * x) for k in range(1, 101))
    return float(min(1.0, max(0.0, 2 * total)))


def holm(p_values: list[float]) -> list[float]:
    """Holm-adjusted p-values (family-wise error), in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def ks_statistic(counts: np.ndarray, reference: np.ndarray) -> float:
    """D between two binned distributions (counts over the same bins)."""
    if counts.sum() == 0 or reference.sum() == 0:
        return 0.0
    return float(np.abs(np.cumsum(counts) / counts.sum() - np.cumsum(reference) / reference.sum()).max())


# ------------------------------------------------------------------ the baseline


def _overlapping(windows: list[Window], low: datetime, high: datetime) -> list[Window]:
    return [w for w in windows if w.start < high and w.end > low]


def choose_baseline(windows: list[Window], settings: Settings) -> tuple[list[Window], str]:
    if settings.baseline_range is not None:
        low, high = settings.baseline_range
        return _overlapping(windows, low, high), f"--baseline {low:%Y-%m-%d}..{(high - timedelta(seconds=1)):%Y-%m-%d}"
    if settings.config_range is not None:
        low, high = settings.config_range
        chosen = _overlapping(windows, low, high)
        if chosen:
            return chosen, f"the floor config's label dates {low:%Y-%m-%d}..{high:%Y-%m-%d}"
    count = settings.baseline_windows
    how = f"the first {count} window(s)"
    if len(windows) < count:  # "the first 7" of a log with 1 window would claim windows it does not have
        how = f"the log's only {len(windows)} window(s), fewer than the {count} asked for"
    if settings.config_range is not None:
        how += " (the log does not cover the floor config's label dates)"
    return windows[:count], how


class BaselineRangeError(MemlensError, ValueError):
    """A baseline range that is not FROM..TO dates; the message quotes it."""


def parse_range(text: str) -> tuple[datetime, datetime]:
    """FROM..TO as UTC; a date-only TO runs to the end of that day."""
    import pandas as pd  # only for --baseline: the command otherwise starts without pandas

    low_text, sep, high_text = text.partition("..")
    if not sep or not low_text.strip() or not high_text.strip():
        raise BaselineRangeError(f"{text!r}: give the baseline as FROM..TO, e.g. 2026-01-01..2026-01-07")
    try:
        low = pd.Timestamp(low_text.strip())
        high = pd.Timestamp(high_text.strip())
    except ValueError as exc:
        raise BaselineRangeError(f"{text!r}: not a date or date-time range ({exc})") from None
    low = low.tz_localize("UTC") if low.tzinfo is None else low.tz_convert("UTC")
    high = high.tz_localize("UTC") if high.tzinfo is None else high.tz_convert("UTC")
    if len(high_text.strip()) <= 10:
        high = high + pd.Timedelta(days=1)
    if high <= low:
        raise BaselineRangeError(f"{text!r}: the range ends before it starts")
    return low.to_pydatetime(), high.to_pydatetime()


# ------------------------------------------------------------------ the run


def monitor(con: duckdb.DuckDBPyConnection, settings: Settings) -> MonitorResult:
    """Windows, baseline and alerts from the ``turns`` table of `con`."""
    windows = window_figures(con, settings.floor, settings.window, settings.turns, settings.counting)
    return assess(windows, settings, lambda chosen: top1_histograms(con, settings.window, chosen, settings.turns))


def assess(windows: list[Window], settings: Settings, histograms: Callable[[list[Window]], np.ndarray]) -> MonitorResult:
    """Baseline and alerts over windows from any source: `histograms` gives the top-1
    counts of the windows (rows in their order), asked for only when drift is tested."""
    notes: list[str] = []
    chosen, how = choose_baseline(windows, settings)
    for w in chosen:
        w.in_baseline = True
    base_turns = sum(w.turns for w in chosen)
    base_no_memory = sum(w.no_memory for w in chosen)
    baseline = Baseline(how=how, windows=chosen, turns=base_turns, no_memory_share=base_no_memory / base_turns if base_turns else float("nan"))
    alerts: list[Alert] = []
    if not windows:
        notes.append("no turn has a timestamp: there are no windows to watch")
        return MonitorResult(settings, windows, baseline, alerts, notes)
    if not chosen or base_turns == 0:
        notes.append(f"the baseline ({how}) holds no turns: nothing is tested")
        return MonitorResult(settings, windows, baseline, alerts, notes)

    candidates = [w for w in windows if not w.in_baseline]
    tested: list[Window] = []
    for w in candidates:
        if w.turns >= settings.min_turns:
            w.tested = True
            tested.append(w)
    notes += small_window_notes([w for w in candidates if not w.tested], settings)
    if not candidates:
        notes.append("every window is in the baseline: nothing is tested")

    # no memory: margin AND significance
    p_values = [one_sided_two_proportion_p(w.no_memory, w.turns, base_no_memory, base_turns) for w in tested]
    for w, p in zip(tested, holm(p_values), strict=True):
        w.extra["no_memory_p"] = p
        if w.no_memory_share - baseline.no_memory_share > settings.margin and p < settings.alpha:
            alerts.append(
                Alert(w.label(settings.window), w.start, NO_MEMORY, w.no_memory_share, baseline.no_memory_share, settings.margin, p, len(tested))
            )

    # top-1 drift against the baseline's own window-to-window drift
    counts = histograms(windows)
    index = {id(w): i for i, w in enumerate(windows)}
    base_rows = [index[id(w)] for w in chosen]
    base_counts = counts[base_rows].sum(axis=0)
    base_n = int(base_counts.sum())
    raw_spread, scaled_spread = [], []
    for i in base_rows:
        rest = base_counts - counts[i]
        n, m = int(counts[i].sum()), int(rest.sum())
        if n and m:
            d = ks_statistic(counts[i], rest)
            windows[i].drift = d
            raw_spread.append(d)
            scaled_spread.append(d * math.sqrt(n * m / (n + m)))
    baseline.drift_spread = raw_spread
    if len(raw_spread) < 2:
        notes.append("top-1 drift not tested: the baseline needs 2 windows or more with scores")
        for w in tested:
            i = index[id(w)]
            w.drift = ks_statistic(counts[i], base_counts)
        return MonitorResult(settings, windows, baseline, _sorted(alerts), notes)
    raw_cut = float(np.quantile(raw_spread, settings.drift_quantile))
    scaled_cut = float(np.quantile(scaled_spread, settings.drift_quantile))
    drift_p = []
    for w in tested:
        i = index[id(w)]
        n = int(counts[i].sum())
        w.drift = ks_statistic(counts[i], base_counts)
        size = math.sqrt(n * base_n / (n + base_n)) if n else 0.0
        w.drift_threshold = max(raw_cut, scaled_cut / size) if size else None
        drift_p.append(kolmogorov_p(w.drift, n, base_n))
    for w, p in zip(tested, holm(drift_p), strict=True):
        w.extra["drift_p"] = p
        if w.drift is not None and w.drift_threshold is not None and w.drift > w.drift_threshold and p < settings.alpha:
            typical = float(np.median(raw_spread))
            alerts.append(Alert(w.label(settings.window), w.start, DRIFT, w.drift, typical, w.drift_threshold, p, len(tested)))
    return MonitorResult(settings, windows, baseline, _sorted(alerts), notes)


def small_window_notes(small: list[Window], settings: Settings) -> list[str]:
    """A note per window too small to test, or, past ``FOLD_NOTES`` of them, one line
    for all with the way to test them: 23 lines saying the same thing bury the rest."""
    if len(small) <= FOLD_NOTES:
        return [f"{w.label(settings.window)}: {w.turns:,} turn(s), fewer than {settings.min_turns:,}: not tested" for w in small]
    fewest, most = min(w.turns for w in small), max(w.turns for w in small)
    turns = f"{fewest:,}" if fewest == most else f"{fewest:,}-{most:,}"
    return [
        f"{len(small):,} window(s) from {small[0].label(settings.window)} to {small[-1].label(settings.window)} have "
        f"{turns} turn(s) each, fewer than {settings.min_turns:,}: the no-memory share and top-1 drift are not tested "
        "there (a lower --min-turns or a wider window tests them)"
    ]


def _sorted(alerts: list[Alert]) -> list[Alert]:
    return sorted(alerts, key=lambda a: (a.start, a.figure))
