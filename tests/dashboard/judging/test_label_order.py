"""The Label page's turn order by a judge's uncertainty, or by two judges' disagreement."""

from __future__ import annotations

import pytest

from dashboard.database.judge_labels import JudgeLabel
from dashboard.database.sessions import SessionItem
from dashboard.judging.label_order import DISAGREEMENT, SESSION, UNCERTAINTY, order_items, uncertainty

A, B = "judge:a@m", "judge:b@m"


def items(layout):
    """layout: message -> memory ids, in session order."""
    rows, position = [], 0
    for message, memories in layout.items():
        for rank, memory in enumerate(memories, start=1):
            rows.append(SessionItem(position, message, memory, rank, 0.5))
            position += 1
    return rows


def grade(message, memory, value, source=A):
    return JudgeLabel(message, memory, source, value, "r", None, 1, 0.5, "t")


def turn_order(rows):
    return list(dict.fromkeys(row.message_id for row in rows))


def test_grades_beside_the_boundary_are_the_most_uncertain():
    assert uncertainty(1) == uncertainty(2) == 1.0
    assert uncertainty(0) == uncertainty(3) == 0.0


def test_session_order_is_kept_when_asked():
    rows = items({"t1": ["x"], "t2": ["y"]})
    assert order_items(rows, [grade("t2", "y", 2)], (SESSION,)) == rows


def test_turns_come_by_their_most_uncertain_remaining_row_and_stay_whole():
    rows = items({"sure": ["x", "y"], "unjudged": ["z"], "unsure": ["u", "v"], "mixed": ["w", "q"]})
    judged = [
        grade("sure", "x", 0), grade("sure", "y", 3),
        grade("unsure", "u", 3), grade("unsure", "v", 1),
        grade("mixed", "w", 2), grade("mixed", "q", 0),
        grade("sure", "x", 1, source=B),  # another judge's grade does not count
    ]
    ordered = order_items(rows, judged, (UNCERTAINTY, A))
    # the two uncertain turns in session order, then the sure one, then the one nobody graded
    assert turn_order(ordered) == ["unsure", "mixed", "sure", "unjudged"]
    assert [r.memory_id for r in ordered if r.message_id == "unsure"] == ["u", "v"]  # rows keep their order
    assert sorted(ordered, key=lambda r: r.position) == rows  # nothing lost, nothing added


def test_the_order_reads_only_the_judge_so_a_turn_begun_keeps_its_place():
    """Labelling a turn's uncertain row does not send the rest of that turn to the back."""
    rows = items({"t1": ["x"], "t2": ["y", "z"]})
    judged = [grade("t1", "x", 0), grade("t2", "y", 2), grade("t2", "z", 3)]
    assert turn_order(order_items(rows, judged, (UNCERTAINTY, A))) == ["t2", "t1"]


def test_two_judges_disagreeing_come_first_then_the_widest_gap():
    rows = items({"agree": ["x"], "gap": ["y"], "split": ["z"], "one_judge": ["w"]})
    judged = [
        grade("agree", "x", 3), grade("agree", "x", 3, source=B),
        grade("gap", "y", 0), grade("gap", "y", 1, source=B),  # both not relevant, a grade apart
        grade("split", "z", 2), grade("split", "z", 1, source=B),  # relevant against not relevant
        grade("one_judge", "w", 1),  # only judge A: no disagreement to measure
    ]
    ordered = order_items(rows, judged, (DISAGREEMENT, A, B))
    assert turn_order(ordered) == ["split", "gap", "agree", "one_judge"]


def test_an_unknown_order_is_refused():
    with pytest.raises(ValueError, match="unknown turn order"):
        order_items(items({"t": ["x"]}), [], ("loudest",))
