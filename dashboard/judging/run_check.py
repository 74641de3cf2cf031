"""Is a judge's run any use? The checks a run's grades go through. Pure.

A judge can answer every pair and still say nothing: a small model that gives
every pair the same grade, copies the prompt's placeholder (``<one short
sentence>``) as its reason, or writes one reason for everything. Counting
"graded N, 0 failed" would pass it. Each check below names the problem and counts
it:

    one_grade          every graded pair got the same grade (from MIN_PAIRS pairs on:
                       a handful of pairs can all be unrelated for real)
    placeholder        a reason that is the prompt's placeholder (``<...>``), not a reason
    same_reason        every pair got the same reason (from MIN_PAIRS pairs on)
    unparseable        answers that did not parse or broke the answer's rules
                       (a first answer that needed the retry, or a pair that failed on it)

A run is *degenerate* when the whole of it is: one grade for every pair, every
reason a placeholder or the same, or no usable answer at all. `memlens judge` then
exits with ``EXIT_DEGENERATE`` and the Label page turns off one-key Accept for that
judge; a problem in part of a run is a warning only.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from dashboard.database.judge_labels import GRADES

MIN_PAIRS = 8
ONE_GRADE, PLACEHOLDER, SAME_REASON, UNPARSEABLE = "one_grade", "placeholder", "same_reason", "unparseable"
# A reason that is a template slot: the whole text inside angle brackets, as prompts
# write them ("<one short sentence>", "<reason>"), or the prompt's own "...".
_SLOT = re.compile(r"^\s*(<[^<>]{1,80}>|\.\.\.|…)\s*$")


def is_placeholder(reason: str) -> bool:
    return bool(_SLOT.match(reason or ""))


@dataclass(frozen=True)
class RunProblem:
    code: str
    count: int  # the pairs (or answers) it concerns
    total: int  # out of
    whole_run: bool  # the problem covers the whole run
    message: str


@dataclass
class RunCheck:
    source: str
    graded: int
    unparseable: int = 0
    problems: list[RunProblem] = field(default_factory=list)

    @property
    def degenerate(self) -> bool:
        return any(p.whole_run for p in self.problems)

    def warnings(self) -> list[str]:
        return [p.message for p in self.problems]

    def counts(self) -> dict[str, int]:
        return {p.code: p.count for p in self.problems}


def check_run(
    source: str, grades: Iterable[tuple[int, str]], *, unparseable: int = 0, answered: int | None = None
) -> RunCheck:
    """The problems of one run of judge `source`: `grades` are its (grade, reason)
    per graded pair; `unparseable` the answers that did not parse (out of `answered`
    pairs asked, the graded ones when not given)."""
    pairs = list(grades)
    reasons = Counter(" ".join(reason.split()).lower() for _, reason in pairs)
    return check_counts(
        source,
        Counter(grade for grade, _ in pairs),
        Counter(reason.strip() for _, reason in pairs if is_placeholder(reason)),
        len(reasons),
        next(iter(reasons), ""),
        unparseable=unparseable,
        answered=answered,
    )


def check_counts(
    source: str,
    by_grade: Mapping[int, int],
    placeholders: Mapping[str, int],
    distinct_reasons: int,
    a_reason: str,
    *,
    unparseable: int = 0,
    answered: int | None = None,
) -> RunCheck:
    """The same checks from counts (a database can count a judge's whole history):
    pairs per grade, placeholder reasons with their counts, the number of distinct
    reasons and one of them."""
    n = sum(by_grade.values())
    check = RunCheck(source, n, unparseable)
    if n >= MIN_PAIRS and len(by_grade) == 1:
        [grade] = by_grade
        check.problems.append(RunProblem(
            ONE_GRADE, n, n, True,
            f"{source}: one grade for every pair: all {n} graded pair(s) got grade {grade} "
            f"({GRADES.get(grade, '?')}); a judge that cannot tell pairs apart suggests nothing",
        ))
    held = sum(placeholders.values())
    if held:
        example = max(placeholders, key=lambda reason: placeholders[reason])
        check.problems.append(RunProblem(
            PLACEHOLDER, held, n, held == n,
            f"{source}: {held} of {n} reason(s) repeat the prompt's placeholder {example!r} instead of a reason",
        ))
    if n >= MIN_PAIRS and distinct_reasons == 1 and not held:
        check.problems.append(RunProblem(
            SAME_REASON, n, n, True, f"{source}: the same reason for all {n} pair(s): {a_reason[:80]!r}",
        ))
    if unparseable:
        asked = answered if answered is not None else n
        check.problems.append(RunProblem(
            UNPARSEABLE, unparseable, asked, n == 0,
            f"{source}: {unparseable} of {asked} pair(s) got an answer that does not parse or breaks the "
            "answer's rules" + (" (no usable answer at all)" if n == 0 else ""),
        ))
    return check
