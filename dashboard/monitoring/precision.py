"""The precision side of the monitor: are the memories the floor lets in right? Pure
(no streamlit).

Counting turns left with no memory watches one side of the floor. A store can go on
returning memories with the same scores while they stop being the right ones (a new
embedding model, a re-index): only a judged sample sees that. So, per window:

- **The sample.** Of the turns that keep at least one memory, N are drawn, stratified
  by the top-1 score's band above the floor (``BANDS``: just over
  the floor, where wrong memories get in, to far above), each band's share of the
  sample its share of the window's turns. Within a band, turns are taken in the order
  of a seeded hash of their message id: the same sample on every run, and a window's
  sample does not change when later days are added, so grades cached from an earlier
  run are reused. What a turn keeps is what the windows count (windows.py):
  memories at or above the floor, the agent's logged decisions
  (``LOGGED_DECISIONS``; a turn that carries none at its floor), or a floor file's
  turn rule computed from the turn's rows (``RULE_DECISIONS``, rule_sql.py), so
  the judge grades the memories the agent put in the prompt.
- **The figure.** The top ``TOP`` kept memories of each sampled turn are graded by the
  judge (relevant at grade 2 or more); the window's kept precision is the relevant
  share of the graded pairs, with a Wilson interval.
- **The alert.** A window alerts when its precision is under the baseline's by more
  than ``margin`` AND a one-sided two-proportion test (the share of pairs not
  relevant, above the baseline's) is significant after a Holm correction over the
  windows tested, as the no-memory share does (alerts.py); or, with a target, when
  the window's Wilson interval lies wholly under it (a one-sided bound at
  ``alpha`` / the number of windows tested, the Bonferroni correction).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import duckdb

from dashboard.monitoring import rule_sql
from dashboard.monitoring.alerts import holm, one_sided_two_proportion_p
from dashboard.monitoring.relation import RELATION, TURNS
from dashboard.monitoring.windows import (
    AT_FLOOR,
    LOGGED_DECISIONS,
    RULE_DECISIONS,
    no_memory_sql,
    turn_floor_sql,
    window_start_sql,
)

if TYPE_CHECKING:
    from dashboard.turn_rule import TurnRule

TOP = 3  # kept memories graded per sampled turn (precision of the top 3 kept)
BANDS = (0.05, 0.10, 0.20)  # top-1 score above the floor: [0, .05), [.05, .10), [.10, .20), [.20, ...)
DEFAULT_PRECISION_MARGIN = 0.10
DEFAULT_SEED = 0
WILSON_Z = 1.959963984540054  # 95%
PRECISION = "kept_precision"
PRECISION_TARGET = "kept_precision_target"
NOT_WATCHED = (
    "relevance is not being watched: these figures count turns left with no memory, not wrong memories let in. "
    "To watch it, add --judge JUDGE.toml --send-text --sample N (a judge grades the top 3 kept memories of N "
    "sampled turns per window; docs/monitoring.md)"
)


@dataclass
class SampledTurn:
    message_id: str
    start: datetime  # its window's start
    band: int
    user_id: str | None = None
    kept: list[tuple[str, int, float]] = field(default_factory=list)  # (memory_id, rank, score), top TOP kept
    at: datetime | None = None  # the turn's time
    # a shadow config's top TOP kept, where the turn is drawn to compare it (shadow_precision.py)
    candidate: list[tuple[str, int, float]] = field(default_factory=list)

    def pairs(self) -> list[tuple[str, int, float]]:
        """The memories to grade: those either side kept, each once."""
        seen = {memory_id for memory_id, _, _ in self.kept}
        return self.kept + [item for item in self.candidate if item[0] not in seen]


@dataclass
class WindowPrecision:
    start: datetime
    label: str
    eligible: int  # turns keeping a memory (at or above the floor, or by the decisions: sample_turns)
    sampled: int
    pairs: int = 0  # graded pairs
    relevant: int = 0
    ungraded: int = 0  # pairs of the sample with no grade (budget, failure, no query text)
    stale: int | None = None  # relevant pairs whose memory was older than the stale age at the turn (None: not asked)
    in_baseline: bool = False
    tested: bool = False
    p_value: float | None = None

    @property
    def precision(self) -> float | None:
        return self.relevant / self.pairs if self.pairs else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.relevant, self.pairs) if self.pairs else None

    def as_dict(self) -> dict[str, Any]:
        interval = self.interval
        return {
            "window": self.label,
            "start": self.start.isoformat(),
            "eligible_turns": self.eligible,
            "sampled_turns": self.sampled,
            "pairs": self.pairs,
            "relevant": self.relevant,
            "ungraded": self.ungraded,
            "stale": self.stale,
            "precision": self.precision,
            "interval": list(interval) if interval else None,
            "in_baseline": self.in_baseline,
            "tested": self.tested,
            "p_value": self.p_value,
        }


@dataclass
class PrecisionAlert:
    window: str
    start: datetime
    figure: str  # PRECISION or PRECISION_TARGET
    value: float
    interval: tuple[float, float]
    baseline: float  # the baseline's precision, or the target
    margin: float
    p_value: float | None
    tested: int

    def line(self) -> str:
        low, high = self.interval
        head = f"alert: {self.window}: kept precision {self.value:.1%} (95% interval {low:.1%}-{high:.1%})"
        if self.figure == PRECISION_TARGET:
            return f"{head} under the target {self.baseline:.1%} (one-sided Wilson bound, Bonferroni over {self.tested} windows)"
        return (
            f"{head} vs baseline {self.baseline:.1%}, margin {self.margin * 100:.1f} points, p = {self.p_value:.2g} "
            f"(one-sided two-proportion test, Holm over {self.tested} windows)"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "start": self.start.isoformat(),
            "figure": self.figure,
            "value": self.value,
            "interval": list(self.interval),
            "baseline": self.baseline,
            "margin": self.margin,
            "p_value": self.p_value,
            "windows_tested": self.tested,
        }


def wilson(successes: int, n: int, z: float = WILSON_Z) -> tuple[float, float]:
    """The Wilson score interval of a proportion."""
    if n == 0:
        return (0.0, 1.0)
    share = successes / n
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def band_of(top1: float, floor: float) -> int:
    above = round(top1 - floor, 9)  # 0.45 - 0.35 is 0.0999...: a score on an edge belongs above it
    return sum(above >= edge for edge in BANDS)


def _order(seed: int, message_id: str) -> bytes:
    return hashlib.blake2b(f"{seed}\x1f{message_id}".encode(), digest_size=8).digest()


def _allocate(sizes: list[int], n: int) -> list[int]:
    """`n` split over bands in proportion to their sizes (largest remainder), none over its size."""
    total = sum(sizes)
    if total <= n:
        return list(sizes)
    exact = [n * size / total for size in sizes]
    counts = [int(x) for x in exact]
    for i in sorted(range(len(sizes)), key=lambda i: exact[i] - counts[i], reverse=True)[: n - sum(counts)]:
        counts[i] += 1
    return counts


def eligible_words(counting: str = AT_FLOOR) -> str:
    """Which turns a window's sample is drawn from, in words, as `counting` keeps memories."""
    if counting == LOGGED_DECISIONS:
        return "turns where the agent's logged decisions kept a memory, or, carrying none, with one at or above the floor"
    if counting == RULE_DECISIONS:
        return "turns where the floor file's rule keeps a memory"
    return "turns with a memory at or above the floor"


def sample_turns(
    con: duckdb.DuckDBPyConnection, floor: float | None, window: str, n: int, seed: int = DEFAULT_SEED, *, turns: str = TURNS,
    counting: str = AT_FLOOR, rule: TurnRule | None = None,
) -> tuple[list[SampledTurn], dict[datetime, int]]:
    """The sampled turns of every window, with their top kept memories, and the
    number of eligible turns (keeping a memory) per window start. `floor` None: each
    turn at its own floor (the ``floor`` column of `turns`). `counting` says what a
    turn keeps, as the windows count it (the monitor's Settings.counting): at the
    floor, by the logged decisions, or by `rule`, the floor file's turn rule whose
    ``rule_kept`` `turns` counts (relation.build_turns(decide=rule))."""
    if counting == RULE_DECISIONS and rule is None:
        raise ValueError("counting by a floor file's rule needs the rule")
    # a turn is eligible when the windows count it as one with memory
    where = None if counting == AT_FLOOR else f"NOT ({no_memory_sql(turn_floor_sql(floor), counting)})"
    sampled, eligible = draw_turns(con, floor, window, n, seed, turns=turns, where=where)
    if counting == LOGGED_DECISIONS:
        _attach_logged(con, sampled, floor, turns)
    elif counting == RULE_DECISIONS:
        assert rule is not None
        _attach_ruled(con, sampled, floor, turns, rule)
    else:
        _attach_kept(con, sampled, floor, turns)
    return sampled, eligible


def draw_turns(
    con: duckdb.DuckDBPyConnection, floor: float | None, window: str, n: int, seed: int = DEFAULT_SEED, *,
    turns: str = TURNS, where: str | None = None,
) -> tuple[list[SampledTurn], dict[datetime, int]]:
    """The sample's turns of every window, without their memories, and the eligible
    turns per window start. `where`: SQL over `turns` for the turns a sample may
    hold (default: a memory at or above the floor); a turn is banded by its top-1
    above its floor (above itself, band 0, for a turn with none)."""
    at = turn_floor_sql(floor)
    rows = con.execute(
        f"""SELECT message_id, {window_start_sql(window)} AS start, top1, ts, coalesce({at}, top1) AS floor FROM {turns}
            WHERE ts IS NOT NULL AND message_id IS NOT NULL AND {where or f"top1 >= {at}"}"""
    ).fetchall()
    by_window: dict[datetime, list[list[tuple[bytes, str]]]] = {}
    times = {}
    for message_id, start, top1, ts, turn_floor in rows:
        bands = by_window.setdefault(start, [[] for _ in range(len(BANDS) + 1)])
        bands[band_of(float(top1), float(turn_floor))].append((_order(seed, message_id), message_id))
        times[message_id] = ts
    sampled: list[SampledTurn] = []
    eligible: dict[datetime, int] = {}
    for start in sorted(by_window):
        bands = by_window[start]
        eligible[start] = sum(len(b) for b in bands)
        for band, (members, take) in enumerate(zip(bands, _allocate([len(b) for b in bands], n), strict=True)):
            sampled += [SampledTurn(message_id, start, band, at=times[message_id]) for _, message_id in sorted(members)[:take]]
    return sampled, eligible


def _attach_kept(con: duckdb.DuckDBPyConnection, sampled: list[SampledTurn], floor: float | None, turns: str = TURNS) -> None:
    """The memories at or above the floor (each turn's own, without one floor)."""
    if not sampled:
        return
    # each turn's own floor from the turns table, when there is no one floor
    at = f"(SELECT t.floor FROM {turns} AS t WHERE t.message_id = r.message_id)" if floor is None else repr(float(floor))
    _attach(con, sampled, f"""SELECT message_id, memory_id, min(rank) AS rank, max(score) AS score, any_value(user_id) AS user_id
            FROM {RELATION} AS r
            WHERE NOT bad AND memory_id IS NOT NULL AND score >= {at} AND message_id IN (SELECT unnest(?::VARCHAR[]))
            GROUP BY message_id, memory_id""")


def _attach_logged(con: duckdb.DuckDBPyConnection, sampled: list[SampledTurn], floor: float | None, turns: str) -> None:
    """The memories the agent kept, as it logged them (a repeat kept in any of its rows
    is kept, as build_turns counts ``logged_kept``); a turn carrying no decision keeps
    what scored at or above its floor, as windows.kept_sql counts it."""
    if not sampled:
        return
    at = "any_value(t.floor)" if floor is None else repr(float(floor))
    keep = f"CASE WHEN any_value(t.logged_decided) > 0 THEN coalesce(bool_or(r.kept), false) ELSE max(r.score) >= {at} END"
    _attach(con, sampled, f"""SELECT r.message_id, r.memory_id, min(r.rank) AS rank, max(r.score) AS score, any_value(r.user_id) AS user_id
            FROM {RELATION} AS r JOIN {turns} AS t ON t.message_id = r.message_id
            WHERE NOT r.bad AND r.memory_id IS NOT NULL AND r.message_id IN (SELECT unnest(?::VARCHAR[]))
            GROUP BY r.message_id, r.memory_id
            HAVING coalesce({keep}, false)""")


def _attach_ruled(con: duckdb.DuckDBPyConnection, sampled: list[SampledTurn], floor: float | None, turns: str, rule: TurnRule) -> None:
    """The memories the floor file's rule keeps: its decision per row from the one
    builder of the rule's SQL (rule_sql.decided_rows), over the sampled turns' pairs
    merged as relation.build_turns merges them (each repeated pair once, with the
    score and rank of its earliest file) at the turn's floor, so a sampled turn keeps
    exactly the memories its ``rule_kept`` counts."""
    if not sampled:
        return
    pairs = f"""SELECT message_id, memory_id, arg_min(score, source) AS score, arg_min(rank, source) AS rank,
                       any_value(user_id) AS user_id
                FROM {RELATION} WHERE NOT bad AND message_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY message_id, memory_id"""
    if floor is None:  # each turn at its own floor, from the turns table the windows read
        pairs = f"SELECT p.*, t.floor FROM ({pairs}) AS p JOIN {turns} AS t ON t.message_id = p.message_id"
        at = "floor"
    else:
        at = rule_sql.number(floor)  # as build_turns applies one floor: exactly, not a DECIMAL
    decided = rule_sql.decided_rows(pairs, rule, at)
    _attach(con, sampled, f"SELECT message_id, memory_id, rank, score, user_id FROM ({decided}) WHERE {rule_sql.KEPT} AND memory_id IS NOT NULL")


def _attach(con: duckdb.DuckDBPyConnection, sampled: list[SampledTurn], kept: str) -> None:
    """Each sampled turn's top TOP of `kept` (a SELECT of message_id, memory_id, rank,
    score, user_id taking the sampled ids as its one parameter: one list, as a
    row-by-row insert of them cost more than the scan), by rank."""
    found = con.execute(f"SELECT * FROM ({kept}) ORDER BY message_id, rank, memory_id", [[t.message_id for t in sampled]]).fetchall()
    by_id = {t.message_id: t for t in sampled}
    for message_id, memory_id, rank, score, user_id in found:
        turn = by_id[message_id]
        turn.user_id = turn.user_id or user_id
        if len(turn.kept) < TOP:
            turn.kept.append((str(memory_id), int(rank), float(score)))


def window_precision(
    sampled: list[SampledTurn],
    eligible: dict[datetime, int],
    grades: dict[tuple[str, str], bool],
    label: Any,
    *,
    stale_after: timedelta | None = None,
    created: dict[str, datetime | None] | None = None,
) -> list[WindowPrecision]:
    """Per window: the graded pairs of its sample (`grades`: (message_id, memory_id) -> relevant).
    With `stale_after`, the relevant pairs whose memory (`created`: memory_id -> its
    creation time) was older than that at the turn: an old memory rated relevant may
    no longer be true."""
    windows = {start: WindowPrecision(start, label(start), count, 0) for start, count in sorted(eligible.items())}
    for turn in sampled:
        w = windows[turn.start]
        w.sampled += 1
        for memory_id, _, _ in turn.kept:
            verdict = grades.get((turn.message_id, memory_id))
            if verdict is None:
                w.ungraded += 1
                continue
            w.pairs += 1
            w.relevant += verdict
            if stale_after is not None:
                born = (created or {}).get(memory_id)
                old = verdict and born is not None and turn.at is not None and turn.at - born > stale_after
                w.stale = (w.stale or 0) + bool(old)
    return list(windows.values())


def precision_alerts(
    windows: list[WindowPrecision],
    baseline_starts: Iterable[datetime],
    *,
    margin: float = DEFAULT_PRECISION_MARGIN,
    alpha: float = 0.05,
    target: float | None = None,
) -> tuple[WindowPrecision | None, list[PrecisionAlert]]:
    """The pooled baseline and the alerts (see the module docstring)."""
    starts = set(baseline_starts)
    base_pairs = base_relevant = 0
    for w in windows:
        w.in_baseline = w.start in starts
        if w.in_baseline:
            base_pairs += w.pairs
            base_relevant += w.relevant
    baseline = WindowPrecision(datetime.min, "baseline", 0, 0, base_pairs, base_relevant) if base_pairs else None
    tested = [w for w in windows if not w.in_baseline and w.pairs]
    for w in tested:
        w.tested = True
    alerts: list[PrecisionAlert] = []
    if baseline is not None and baseline.precision is not None:
        base_precision = baseline.precision
        p_values = [one_sided_two_proportion_p(w.pairs - w.relevant, w.pairs, base_pairs - base_relevant, base_pairs) for w in tested]
        for w, p in zip(tested, holm(p_values), strict=True):
            w.p_value = p
            value = w.precision
            assert value is not None and w.interval is not None  # tested windows have pairs
            if base_precision - value > margin and p < alpha:
                alerts.append(PrecisionAlert(w.label, w.start, PRECISION, value, w.interval, base_precision, margin, p, len(tested)))
    if target is not None and tested:
        z = NormalDist().inv_cdf(1 - alpha / len(tested))
        for w in tested:
            value = w.precision
            assert value is not None and w.interval is not None
            if wilson(w.relevant, w.pairs, z)[1] < target:
                alerts.append(PrecisionAlert(w.label, w.start, PRECISION_TARGET, value, w.interval, target, 0.0, None, len(tested)))
    return baseline, sorted(alerts, key=lambda a: (a.start, a.figure))
