"""The checks of a judge's run (dashboard/judging/run_check.py): what is a warning,
what makes the whole run degenerate, and where the small-run guard stands."""

from __future__ import annotations

import pytest

from dashboard.judging.run_check import MIN_PAIRS, ONE_GRADE, PLACEHOLDER, SAME_REASON, UNPARSEABLE, check_run, is_placeholder


@pytest.mark.parametrize("reason, slot", [
    ("<one short sentence>", True), ("  <one long sentence> ", True), ("...", True), ("…", True),
    ("<reason>", True), ("It says <b>Lisbon</b>.", False), ("Lives in Lisbon.", False), ("", False),
])
def test_a_placeholder_is_a_whole_template_slot(reason, slot):
    assert is_placeholder(reason) is slot


def test_a_healthy_run_has_no_problem():
    check = check_run("judge:j@m", [(n % 4, f"reason {n}") for n in range(20)])
    assert check.problems == [] and not check.degenerate


def test_one_grade_is_flagged_from_min_pairs_on_and_not_below():
    few = check_run("judge:j@m", [(0, f"reason {n}") for n in range(MIN_PAIRS - 1)])
    assert few.problems == []  # a handful of pairs can all be unrelated for real
    many = check_run("judge:j@m", [(0, f"reason {n}") for n in range(MIN_PAIRS)])
    assert many.counts() == {ONE_GRADE: MIN_PAIRS} and many.degenerate


def test_some_placeholder_reasons_warn_and_all_of_them_make_the_run_degenerate():
    some = check_run("judge:j@m", [(n % 4, "<one short sentence>" if n < 3 else f"r{n}") for n in range(12)])
    assert some.counts() == {PLACEHOLDER: 3} and not some.degenerate
    assert "3 of 12 reason(s) repeat the prompt's placeholder '<one short sentence>'" in some.warnings()[0]
    every = check_run("judge:j@m", [(n % 4, "<one short sentence>") for n in range(3)])
    assert every.degenerate and SAME_REASON not in every.counts()  # said once, as the placeholder


def test_unparseable_answers_are_counted_and_none_usable_is_degenerate():
    part = check_run("judge:j@m", [(n % 4, f"r{n}") for n in range(10)], unparseable=2, answered=12)
    assert part.counts() == {UNPARSEABLE: 2} and not part.degenerate
    assert "2 of 12 pair(s) got an answer that does not parse" in part.warnings()[0]
    nothing = check_run("judge:j@m", [], unparseable=5, answered=5)
    assert nothing.degenerate and "no usable answer at all" in nothing.warnings()[0]
