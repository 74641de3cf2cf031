"""The decisions the agent logged per row, as the monitor counts them, and a shadow
config's beside the shipped one. Pure (no streamlit).

The agent side logs what decided each row (``rule``) and its decision (``kept``),
and with ``shadow=`` a candidate config's (``shadow_rule``, ``shadow_kept``):
dashboard/logs/writer.py. Without ``--floor`` or ``--floor-config``, the monitor
counts a turn as one with memory when the agent kept any of its memories
(``windows.LOGGED_DECISIONS``); this module says so in the header's words.

Where rows carry a shadow config's decisions, ``shadow_windows`` puts the shipped
config and the candidate side by side per window over the same turns: the share of
turns each left with no memory, and an exact McNemar test between them. The test
is paired over turns: only the turns where the two disagree (one left the turn with
no memory, the other kept something) say anything about which leaves more, and
under "no difference" each such turn goes either way with probability one half. The
p-values are Holm-corrected over the windows (alerts.holm), as the monitor's other
tests are. The command (text and JSON) and the Monitor page show the same rows,
and so does the command on an engine's table (``--connect``: warehouse.py counts
the windows in the engine, ``shadow_report`` makes the rest here); with a judge,
shadow_precision.py adds each side's kept precision to them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from dashboard.monitoring.alerts import holm
from dashboard.monitoring.relation import RELATION
from dashboard.monitoring.windows import WINDOWS, window_label, window_start_sql

RULES_SHOWN = 5


@dataclass
class LoggedDecisions:
    """How many turns carry logged decisions, by the rule that made them."""

    rules: list[tuple[str, int]]  # (rule, turns), most turns first
    without: int  # turns with a memory and no logged decision: counted at their logged floor

    def words(self) -> str:
        """``each turn by its logged decisions (largest-gap: 60 turns; floor: 40 turns)``."""
        shown = "; ".join(f"{rule}: {count:,} turns" for rule, count in self.rules[:RULES_SHOWN])
        more = f"; and {len(self.rules) - RULES_SHOWN:,} more" if len(self.rules) > RULES_SHOWN else ""
        rest = f"; {self.without:,} turns without them at their logged floor" if self.without else ""
        return f"each turn by its logged decisions, kept or dropped per row ({shown}{more}{rest})"


def logged_decisions(con: duckdb.DuckDBPyConnection, turns: str) -> LoggedDecisions | None:
    """The log's decisions (None when no turn carries one: the log is counted at its
    logged floors, as before memlens logged decisions)."""
    found = con.execute(f"SELECT count(*) FILTER (WHERE logged_decided > 0), count(*) FILTER (WHERE logged_decided = 0 AND rows > 0) FROM {turns}").fetchone()
    if not found or not found[0]:
        return None
    # the rule of each decided turn: a second, small query, only for a log with decisions
    rows = con.execute(
        f"""SELECT coalesce(rule, '?') AS rule, count(DISTINCT message_id) AS turns FROM {RELATION}
            WHERE NOT bad AND kept IS NOT NULL GROUP BY 1 ORDER BY 2 DESC, 1"""
    ).fetchall()
    return LoggedDecisions([(str(rule), int(count)) for rule, count in rows], int(found[1]))


def has_shadow(con: duckdb.DuckDBPyConnection, turns: str) -> bool:
    found = con.execute(f"SELECT count(*) FILTER (WHERE shadow_decided > 0) FROM {turns}").fetchone()
    return bool(found and found[0])


def mcnemar_p(only_shipped: int, only_candidate: int) -> float:
    """Two-sided exact McNemar p: of the n turns where the two sides disagree, the
    chance of a split at least this uneven when each goes either way with p = 1/2."""
    n = only_shipped + only_candidate
    if n == 0:
        return 1.0
    low = min(only_shipped, only_candidate)
    log_half = n * math.log(0.5)
    tail = math.fsum(math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + log_half) for k in range(low + 1))
    return min(1.0, 2.0 * tail)


@dataclass
class ShadowWindow:
    """One window's turns under the shipped config and the candidate (shadow) one."""

    start: datetime
    label: str
    turns: int  # turns carrying the candidate's decisions
    shipped_no_memory: int  # of those, left with no memory by the shipped config
    candidate_no_memory: int  # ... by the candidate
    only_shipped: int  # no memory shipped, memory with the candidate
    only_candidate: int  # memory shipped, no memory with the candidate
    p_value: float = 1.0  # McNemar, Holm-corrected over the windows
    extra: dict[str, Any] = field(default_factory=dict)  # the judged side, when a judge watched it

    @property
    def shipped_no_memory_share(self) -> float | None:
        return self.shipped_no_memory / self.turns if self.turns else None

    @property
    def candidate_no_memory_share(self) -> float | None:
        return self.candidate_no_memory / self.turns if self.turns else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "window": self.label,
            "start": self.start.isoformat(),
            "turns": self.turns,
            "shipped_no_memory_turns": self.shipped_no_memory,
            "candidate_no_memory_turns": self.candidate_no_memory,
            "shipped_no_memory_share": self.shipped_no_memory_share,
            "candidate_no_memory_share": self.candidate_no_memory_share,
            "only_shipped_no_memory": self.only_shipped,
            "only_candidate_no_memory": self.only_candidate,
            "mcnemar_p": self.p_value,
            **self.extra,
        }


@dataclass
class ShadowReport:
    """The side by side: the rules compared and each window's figures."""

    shipped_rules: list[str]
    candidate_rules: list[str]
    windows: list[ShadowWindow]
    total: ShadowWindow  # every window together, its p-value uncorrected
    # with a judge (shadow_precision.py): who judged and how, and its lines under the table
    judged: dict[str, Any] | None = None
    judged_lines: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        shown = {
            "shipped_rule": ", ".join(self.shipped_rules),
            "candidate_rule": ", ".join(self.candidate_rules),
            "windows": [w.as_dict() for w in self.windows],
            "total": self.total.as_dict(),
        }
        if self.judged is not None:  # only with --judge: the key a consumer checks for
            shown["judged"] = self.judged
        return shown


def shadow_windows(con: duckdb.DuckDBPyConnection, window: str) -> ShadowReport | None:
    """The shipped config and the candidate per window over the turns whose rows carry
    the candidate's decisions; None when no row does. A turn has memory on a side when
    that side kept any of its memories (a repeat kept in any of its rows is kept); a
    turn the store returned nothing for has none on either."""
    if window not in WINDOWS:
        raise ValueError(f"window must be one of {', '.join(WINDOWS)}, got {window!r}")
    rows = con.execute(
        f"""
        WITH shadowed AS (
            SELECT message_id, min(ts) AS ts, coalesce(bool_or(kept), false) AS shipped,
                   coalesce(bool_or(shadow_kept), false) AS candidate
            FROM {RELATION}
            WHERE NOT bad AND shadow_rule IS NOT NULL
            GROUP BY message_id
        )
        SELECT {window_start_sql(window)} AS start, count(*) AS turns,
               count(*) FILTER (WHERE NOT shipped), count(*) FILTER (WHERE NOT candidate),
               count(*) FILTER (WHERE NOT shipped AND candidate), count(*) FILTER (WHERE shipped AND NOT candidate)
        FROM shadowed WHERE ts IS NOT NULL
        GROUP BY 1 ORDER BY 1
        """
    ).fetchall()
    if not rows:
        return None
    names = con.execute(
        f"""SELECT list(DISTINCT rule ORDER BY rule) FILTER (WHERE rule IS NOT NULL),
                   list(DISTINCT shadow_rule ORDER BY shadow_rule) FROM {RELATION} WHERE NOT bad AND shadow_rule IS NOT NULL"""
    ).fetchone()
    shipped, candidate = (names or ([], []))[:2]
    return shadow_report(rows, window, list(shipped or []), list(candidate or []))


def shadow_report(
    rows: Sequence[Sequence[Any]], window: str, shipped_rules: list[str], candidate_rules: list[str]
) -> ShadowReport:
    """The report from the per-window counts, in window order: (start, turns, shipped
    no memory, candidate no memory, only shipped, only candidate) per window, at least
    one; and the rules each side logged (sorted; the shipped "?" when none is logged).
    The file run's (shadow_windows) and an engine's (warehouse.shadow_summary) alike."""
    windows = [
        ShadowWindow(start, window_label(start, window), int(turns), int(shipped), int(candidate), int(only_shipped), int(only_candidate))
        for start, turns, shipped, candidate, only_shipped, only_candidate in rows
    ]
    for w, p in zip(windows, holm([mcnemar_p(w.only_shipped, w.only_candidate) for w in windows]), strict=True):
        w.p_value = p
    total = ShadowWindow(
        windows[0].start, "all windows", sum(w.turns for w in windows), sum(w.shipped_no_memory for w in windows),
        sum(w.candidate_no_memory for w in windows), sum(w.only_shipped for w in windows), sum(w.only_candidate for w in windows),
    )  # fmt: skip
    total.p_value = mcnemar_p(total.only_shipped, total.only_candidate)
    return ShadowReport(shipped_rules or ["?"], candidate_rules, windows, total)


def shadow_lines(report: ShadowReport) -> list[str]:
    """The side by side as the command's text: a line on what is compared, a table."""
    lines = [
        "",
        f"shadow: the shipped {', '.join(report.shipped_rules)} against the candidate {', '.join(report.candidate_rules)}, "
        "on the same turns (the decisions each logged); turns left with no memory by each, and an exact McNemar test "
        "over the turns where they disagree (Holm over the windows)",
        f"{'window':<17}{'turns':>9}{'shipped no memory':>19}{'candidate no memory':>21}{'none: shipped only':>20}"
        f"{'none: candidate only':>22}{'p':>9}",
    ]
    for w in [*report.windows, report.total]:
        lines.append(
            f"{w.label:<17}{w.turns:>9,}{_share(w.shipped_no_memory_share):>19}{_share(w.candidate_no_memory_share):>21}"
            f"{w.only_shipped:>20,}{w.only_candidate:>22,}{w.p_value:>9.2g}"
        )
    return lines + report.judged_lines


def shadow_table(report: ShadowReport) -> list[dict[str, Any]]:
    """The side by side as rows for a page's table (the Monitor page): the same
    figures as the command's, one row per window and one for all of them."""
    return [
        {
            "window": w.label,
            "turns": w.turns,
            "shipped no memory": w.shipped_no_memory_share,
            "candidate no memory": w.candidate_no_memory_share,
            "none: shipped only": w.only_shipped,
            "none: candidate only": w.only_candidate,
            "McNemar p": w.p_value,
        }
        for w in [*report.windows, report.total]
    ]


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"
