"""A floor file's turn rule as SQL: each row's kept or dropped, computed in the
engine's own query from the turn's rows. Pure (no streamlit).

The agent applies the rule with the standard library (dashboard/turn_rule.py,
``kept_mask``) on the hits of one turn. A log written without the decisions (no
``kept`` column) can still be counted under a rule file: the turn's figures the rule
reads (its top score, mean, standard deviation, each row's standing among its
scores, the largest drop between consecutive scores) are SQL window functions over
the turn (``PARTITION BY message_id``), and the learned rule's logistic or the
label-free cut is one more expression over them. This is the one builder of that
SQL; ``tests/dashboard/monitoring/test_rule_sql.py`` holds it to ``kept_mask`` on
1,000 seeded turns for each kind of rule.

The formulas are turn_rule's, in its order of operations, so the two agree to the
last bit on the same scores: the mean is the exact sum (``fsum``) over the count, the
deviation the population one, a rank's standing the share of the turn's other
scores strictly under it; the learned rule's sum is taken feature by feature, as
``_learned_mask`` adds them, and compared with the cut as a log-odds. Constants go in
as text cast to DOUBLE (a decimal literal would be a DECIMAL, rounded otherwise).

Written for DuckDB, where the monitor reads log files (dashboard/monitoring/relation.py).
The store's score parts (``part.NAME`` features) are not in a log, so a rule that
reads them cannot be recomputed from one (``RuleNotInLog``).
"""

from __future__ import annotations

import math

from connectors.common.errors import MemlensError
from dashboard.turn_rule import LARGEST_GAP, LEARNED, PART_PREFIX, TOP_RATIO, TurnRule

KEPT = "rule_kept"  # the column the decided rows carry


class RuleNotInLog(MemlensError, ValueError):
    """A rule that reads what a log does not hold (the store's score parts)."""


def number(value: float) -> str:
    """A float as a DOUBLE constant, exactly: DuckDB reads ``0.35`` as a DECIMAL."""
    return f"CAST('{float(value)!r}' AS DOUBLE)"


def check_loggable(rule: TurnRule) -> None:
    """RuleNotInLog for a rule that reads the store's score parts: a log has none."""
    parts = [name for name in rule.features if name.startswith(PART_PREFIX)]
    if parts:
        raise RuleNotInLog(
            f"the floor file's learned rule reads the store's score parts ({', '.join(parts[:3])}), which a retrieval "
            "log does not carry: it cannot be recomputed from the log; count the decisions the agent logged (no "
            "--floor-config) instead"
        )


def decided_rows(source: str, rule: TurnRule, floor: str) -> str:
    """A SELECT of every column of `source` (rows with ``message_id``, ``score`` and,
    for a learned rule reading it, ``rank``) plus ``rule_kept``: the rule's decision
    for the row, false for a row with no score. `floor` is SQL for the turn's floor
    (a column of `source`, or a constant from ``number``); the learned rule does not
    read it, the label-free cuts are applied with it (kept = at or above both)."""
    check_loggable(rule)
    turn = "PARTITION BY message_id"
    if rule.kind == LEARNED:
        return _learned(source, rule, turn)
    if rule.kind == LARGEST_GAP:
        # each scored row's drop to the next score down; the largest drop of the turn
        # and, for equal drops, the highest score above one (turn_rule.largest_gap_cut)
        drops = f"SELECT *, score - lead(score) OVER (w ORDER BY score DESC NULLS LAST) AS rule_drop FROM ({source}) WINDOW w AS ({turn})"
        best = f"SELECT *, max(rule_drop) OVER ({turn}) AS rule_best, min(score) OVER ({turn}) AS rule_lowest FROM ({drops})"
        cut = f"SELECT *, max(CASE WHEN rule_drop = rule_best THEN score END) OVER ({turn}) AS rule_at FROM ({best})"
        # no drop above 0 (one scored row, or all equal): every scored row is above the cut
        edge = "CASE WHEN rule_best > 0 THEN rule_at ELSE rule_lowest END"
        inner = f"SELECT *, greatest({floor}, {edge}) AS rule_edge FROM ({cut})"
    elif rule.kind == TOP_RATIO:
        off = 1.0 - (rule.cut or 1.0)  # turn_rule.top_ratio_cut: top - (1 - ratio) * |top|
        top = f"SELECT *, max(score) OVER ({turn}) AS rule_top FROM ({source})"
        inner = f"SELECT *, greatest({floor}, rule_top - {number(off)} * abs(rule_top)) AS rule_edge FROM ({top})"
    else:  # pragma: no cover - TurnRule refuses any other kind
        raise ValueError(rule.kind)
    helpers = ("rule_drop", "rule_best", "rule_lowest", "rule_at") if rule.kind == LARGEST_GAP else ("rule_top",)
    return _keep(inner, "score >= rule_edge", (*helpers, "rule_edge"))


def _learned(source: str, rule: TurnRule, turn: str) -> str:
    stats = (
        f"SELECT *, max(score) OVER t AS rule_top, count(score) OVER t AS rule_count, "
        f"fsum(score) OVER t / count(score) OVER t AS rule_mean, "
        # how many of the turn's scores lie strictly under this one (ties share a rank)
        f"rank() OVER (t ORDER BY score ASC NULLS LAST) - 1 AS rule_lower FROM ({source}) WINDOW t AS ({turn})"
    )
    spread = f"SELECT *, sqrt(fsum((score - rule_mean) * (score - rule_mean)) OVER ({turn}) / rule_count) AS rule_deviation FROM ({stats})"
    columns = {
        "score": "score",
        "rank": "CAST(rank AS DOUBLE)",
        "gap_to_top": "(rule_top - score)",
        "z_score": "(CASE WHEN rule_deviation > 0 THEN (score - rule_mean) / rule_deviation ELSE CAST(0 AS DOUBLE) END)",
        "percentile": "(CASE WHEN rule_count > 1 THEN CAST(rule_lower AS DOUBLE) / (rule_count - 1) ELSE CAST(1 AS DOUBLE) END)",
    }
    z = number(rule.intercept)
    for name, coefficient in zip(rule.features, rule.coefficients, strict=True):
        z = f"({z} + {number(coefficient)} * {columns[name]})"
    cut = rule.cut or 0.5
    edge = math.log(cut / (1.0 - cut))  # relevance >= cut, as a log-odds (turn_rule._learned_mask)
    return _keep(spread, f"{z} >= {number(edge)}", ("rule_top", "rule_count", "rule_mean", "rule_lower", "rule_deviation"))


def _keep(inner: str, test: str, helpers: tuple[str, ...]) -> str:
    """`inner`'s rows with ``rule_kept`` (a row with no score is dropped), its helper
    columns left out."""
    return f"SELECT * EXCLUDE ({', '.join(helpers)}), coalesce(score IS NOT NULL AND {test}, false) AS {KEPT} FROM ({inner})"
