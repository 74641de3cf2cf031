"""The order the Label page offers a session's turns in, so people label where a
judge is least sure, or where two judges disagree. Pure.

A turn stays whole (its rows in session order); turns are sorted by their graded
rows:

- by one judge's uncertainty: a grade 0-3 is read as relevant at ``RELEVANT_GRADE``
  or more, so grades 1 and 2 sit next to the boundary and 0 and 3 far from it; a
  turn comes as early as its most uncertain remaining row;
- by disagreement between two judges: turns where they disagree on a remaining
  row (one relevant, the other not) first, then by the widest gap in grade, then
  by the first judge's uncertainty.

Turns with no row graded (or graded by only one of the two judges) keep session
order after the graded ones: the judge says nothing about them. The order reads
the judge labels only, not what has been labelled, so it stays put while a
reviewer works: a turn begun is finished before the next (no jump mid-turn, no
second lookup of its memories), and the next turn is the most uncertain one left.
The order only changes which turn comes next; progress still counts people's labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from dashboard.database.judge_labels import RELEVANT_GRADE, JudgeLabel
from dashboard.database.sessions import SessionItem

SESSION = "session"
UNCERTAINTY = "uncertainty"
DISAGREEMENT = "disagreement"
BOUNDARY = RELEVANT_GRADE - 0.5  # between the last "not relevant" grade and the first "relevant" one

Item = TypeVar("Item", bound=SessionItem)


def uncertainty(grade: int) -> float:
    """How close a grade is to the relevant / not relevant boundary: 1 at the two
    grades beside it, falling to 0 at the far ends (0 and 3)."""
    farthest = max(BOUNDARY, 3 - BOUNDARY)  # grade 0 or 3
    return 1.0 - (abs(grade - BOUNDARY) - 0.5) / (farthest - 0.5)


def _grades(judgments: Iterable[JudgeLabel], source: str) -> dict[tuple[str, str], int]:
    return {(j.message_id, j.memory_id): j.grade for j in judgments if j.source == source}


def order_items(
    items: Sequence[Item],
    judgments: Iterable[JudgeLabel],
    order: tuple[str, ...],
) -> list[Item]:
    """`items` (a reviewer's rows, session order) with whole turns reordered.

    `order` is ``(SESSION,)``, ``(UNCERTAINTY, source)`` or ``(DISAGREEMENT, source_a,
    source_b)``."""
    kind = order[0] if order else SESSION
    if kind == SESSION:
        return list(items)
    judgments = list(judgments)
    if kind == UNCERTAINTY and len(order) == 2:
        first = _grades(judgments, order[1])
        second: dict[tuple[str, str], int] | None = None
    elif kind == DISAGREEMENT and len(order) == 3:
        first, second = _grades(judgments, order[1]), _grades(judgments, order[2])
    else:
        raise ValueError(f"unknown turn order {order!r}")

    turns: dict[str, list[Item]] = {}
    for item in items:
        turns.setdefault(item.message_id, []).append(item)

    def rank(position_and_rows: tuple[int, list[Item]]) -> tuple:
        position, rows = position_and_rows
        keys: list[tuple[float, ...]] = []
        for row in rows:
            key = (row.message_id, row.memory_id)
            if key not in first or (second is not None and key not in second):
                continue
            a = first[key]
            if second is None:
                keys.append((-uncertainty(a),))
            else:
                b = second[key]
                split = (a >= RELEVANT_GRADE) != (b >= RELEVANT_GRADE)
                keys.append((-float(split), -float(abs(a - b)), -uncertainty(a)))
        if not keys:
            return (1, (), position)  # nothing graded: after the graded turns, in session order
        return (0, min(keys), position)

    ordered = sorted(enumerate(turns.values()), key=rank)
    return [row for _, rows in ordered for row in rows]
