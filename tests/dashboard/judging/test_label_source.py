"""The label-source rule for Calibrate and Quality: people, one judge, or people where
a person labelled the pair and the judge elsewhere."""

from __future__ import annotations

import pytest

from dashboard.database.judge_labels import JudgeLabel
from dashboard.database.model import Label
from dashboard.judging.label_source import JUDGE, PEOPLE, PEOPLE_ELSE_JUDGE, merge_labels

UMBRELA = "judge:umbrela@m"
OTHER = "judge:other@x"


def person(message, memory, value, score=0.5, store="s1", when="2026-01-02T10:00:00"):
    return Label(message, memory, 1, score, value, "ana", store, when, when)


def judged(message, memory, grade, source=UMBRELA, score=0.4, when="2026-01-02T11:00:00"):
    return JudgeLabel(message, memory, source, grade, "a reason", None, 2, score, when)


PEOPLE_LABELS = [person("q1", "a", "relevant"), person("q1", "b", "not_relevant")]
JUDGE_LABELS = [
    judged("q1", "a", 0),  # people said relevant: people win under people-else-judge
    judged("q1", "c", 2),  # only the judge: relevant at grade 2
    judged("q2", "d", 1),  # only the judge, a message people never labelled: not relevant, no store
    judged("q1", "e", 3, source=OTHER),  # another judge: never used
]


def pairs(merged):
    return {(lab.message_id, lab.memory_id): (lab.label, lab.reviewer, lab.store, lab.score) for lab in merged.labels}


def test_people_only_leaves_people_labels_alone():
    merged = merge_labels(PEOPLE_LABELS, JUDGE_LABELS, PEOPLE)
    assert merged.labels == PEOPLE_LABELS
    assert (merged.from_people, merged.from_judge, merged.uses_judge) == (2, 0, False)


def test_the_judge_alone_reads_grade_two_or_more_as_relevant_with_its_source_as_reviewer():
    merged = merge_labels(PEOPLE_LABELS, JUDGE_LABELS, JUDGE, UMBRELA, stores={"q1": "s1"})
    assert pairs(merged) == {
        ("q1", "a"): ("not_relevant", UMBRELA, "s1", 0.4),
        ("q1", "c"): ("relevant", UMBRELA, "s1", 0.4),
        ("q2", "d"): ("not_relevant", UMBRELA, "", 0.4),
    }
    assert (merged.from_people, merged.from_judge) == (0, 3)


def test_people_where_present_else_the_judge():
    merged = merge_labels(PEOPLE_LABELS, JUDGE_LABELS, PEOPLE_ELSE_JUDGE, UMBRELA, stores={"q1": "s1"})
    assert pairs(merged) == {
        ("q1", "a"): ("relevant", "ana", "s1", 0.5),  # the person's label, not the judge's 0
        ("q1", "b"): ("not_relevant", "ana", "s1", 0.5),
        ("q1", "c"): ("relevant", UMBRELA, "s1", 0.4),
        ("q2", "d"): ("not_relevant", UMBRELA, "", 0.4),
    }
    assert (merged.from_people, merged.from_judge, merged.uses_judge) == (2, 2, True)


def test_judge_labels_follow_the_store_and_date_filters():
    stores = {"q1": "s1"}
    merged = merge_labels([], JUDGE_LABELS, JUDGE, UMBRELA, stores=stores, store="s1")
    assert set(pairs(merged)) == {("q1", "a"), ("q1", "c")}  # q2's store is unknown: left out
    late = [judged("q1", "a", 3, when="2026-01-05T09:00:00"), judged("q1", "c", 3, when="2026-01-01T09:00:00")]
    merged = merge_labels([], late, JUDGE, UMBRELA, since="2026-01-02", until="2026-01-06")
    assert set(pairs(merged)) == {("q1", "a")}
    merged = merge_labels([], late, JUDGE, UMBRELA, until="2026-01-05")
    assert set(pairs(merged)) == {("q1", "c")}  # until is exclusive


def test_a_judge_label_that_recorded_its_store_survives_the_store_filter_without_people():
    # q3 was graded by the judge only; `memlens judge` recorded the store it read it from.
    mine = JudgeLabel("q3", "f", UMBRELA, 3, "a reason", None, 1, 0.7, "2026-01-02T11:00:00", store="s1")
    elsewhere = JudgeLabel("q4", "g", UMBRELA, 3, "a reason", None, 1, 0.7, "2026-01-02T11:00:00", store="s2")
    merged = merge_labels([], [*JUDGE_LABELS, mine, elsewhere], JUDGE, UMBRELA, stores={"q1": "s1"}, store="s1")
    assert set(pairs(merged)) == {("q1", "a"), ("q1", "c"), ("q3", "f")}  # q4 is another store's
    assert pairs(merged)[("q3", "f")] == ("relevant", UMBRELA, "s1", 0.7)
    # The recorded store wins over the one people's labels of the message name.
    merged = merge_labels([], [mine], JUDGE, UMBRELA, stores={"q3": "s2"}, store="s1")
    assert set(pairs(merged)) == {("q3", "f")}
    # People where present, else the judge: the judge-only message is filled in.
    merged = merge_labels(PEOPLE_LABELS, [mine], PEOPLE_ELSE_JUDGE, UMBRELA, stores={"q1": "s1"}, store="s1")
    assert (merged.from_people, merged.from_judge) == (2, 1)


def test_a_bad_rule_or_a_missing_judge_is_refused():
    with pytest.raises(ValueError, match="one of people, judge, people_else_judge"):
        merge_labels([], [], "mixed")
    with pytest.raises(ValueError, match="needs a judge"):
        merge_labels([], [], JUDGE)
