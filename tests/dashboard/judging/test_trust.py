"""A judge's trust as the Label page counts it (dashboard/judging/trust.py): the
database's counts (db.judge_labels.summary) give the same figures and checks as
reading every row, on SQLite and on PostgreSQL; and the bar read from the
environment."""

from __future__ import annotations

import pytest

from dashboard.database import AppDatabase
from dashboard.judging.trust import TrustBar, judge_trust, trust_from_summary

SOURCE = "judge:j@m"


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "labels.sqlite")
    return request.getfixturevalue("postgres").new_database()


def test_the_counted_trust_is_the_trust_from_every_row(target):
    db = AppDatabase(target)
    try:
        for i in range(60):
            grade = (i * 7) % 4
            reason = "<one short sentence>" if i % 9 == 0 else f"reason with 100% of {i}"  # a % in the text too
            db.judge_labels.save(message_id=f"q{i // 5}", memory_id=f"m{i}", source=SOURCE, grade=grade, reason=reason)
            db.judge_labels.save(message_id=f"q{i // 5}", memory_id=f"m{i}", source="judge:other@m", grade=0, reason="x")
            if i % 4:  # people labelled three in four, two reviewers on some
                db.labels.save(message_id=f"q{i // 5}", memory_id=f"m{i}", reviewer="ana", store="s",
                             label="relevant" if (grade >= 2) != (i % 10 == 0) else "not_relevant")
            if i % 6 == 0:
                db.labels.save(message_id=f"q{i // 5}", memory_id=f"m{i}", reviewer="ben", store="s", label="relevant")
        rows = judge_trust(SOURCE, db.labels.find(), db.judge_labels.find(), TrustBar(min_labels=40))
        counted = trust_from_summary(SOURCE, db.judge_labels.summary(SOURCE), TrustBar(min_labels=40))
    finally:
        db.close()
    assert counted.agreement.count == rows.agreement.count == 45 + 10  # each person's label is one comparison: ana's 45, ben's 10
    assert counted.agreement.confusion == rows.agreement.confusion
    assert counted.agreement.kappa == pytest.approx(rows.agreement.kappa)
    assert counted.check.warnings() == rows.check.warnings()
    assert "7 of 60 reason(s) repeat the prompt's placeholder '<one short sentence>'" in counted.check.warnings()[0]
    assert counted.accept_allowed == rows.accept_allowed


@pytest.mark.parametrize("environ, bar", [
    ({}, TrustBar(50, 0.6)),
    ({"MEMLENS_JUDGE_MIN_LABELS": "20", "MEMLENS_JUDGE_MIN_KAPPA": "0.75"}, TrustBar(20, 0.75)),
])
def test_the_bar_comes_from_the_environment(environ, bar):
    assert TrustBar.from_environ(environ) == bar


@pytest.mark.parametrize("environ, message", [
    ({"MEMLENS_JUDGE_MIN_LABELS": "many"}, "MEMLENS_JUDGE_MIN_LABELS must be a whole number, got 'many'"),
    ({"MEMLENS_JUDGE_MIN_LABELS": "0"}, "MEMLENS_JUDGE_MIN_LABELS must be at least 1"),
    ({"MEMLENS_JUDGE_MIN_KAPPA": "1.5"}, "MEMLENS_JUDGE_MIN_KAPPA must lie in [-1, 1]"),
])
def test_a_bad_bar_names_its_variable(environ, message):
    with pytest.raises(ValueError) as caught:
        TrustBar.from_environ(environ)
    assert message in str(caught.value)


def test_a_judges_record_is_kept_per_source_and_rewritten_by_the_next_alignment(target):
    from dashboard.judging.judge_agreement import compare, from_record, to_record

    figures = compare(SOURCE, [True, False, True, False], [True, False, False, False], resamples=50)
    db = AppDatabase(target)
    try:
        assert db.judge_labels.record(SOURCE) is None
        db.judge_labels.save_record(SOURCE, to_record(figures, variant="strict", held_out_pairs=4))
        db.judge_labels.save_record(SOURCE, to_record(figures, variant="terse", held_out_pairs=4))  # the next alignment
        record = db.judge_labels.record(SOURCE)
        with pytest.raises(ValueError):
            db.judge_labels.save_record("umbrela", {})  # not a judge's source
    finally:
        db.close()
    assert record["variant"] == "terse" and record["updated_at"]
    again = from_record(SOURCE, record)
    assert again is not None and again.count == 4 and again.kappa == pytest.approx(figures.kappa)
    assert again.confusion == figures.confusion and again.kappa_interval == figures.kappa_interval
