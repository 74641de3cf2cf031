"""Grading the monitor's sample (precision.py) with a judge, the grades cached in the
app database. No streamlit.

Each (message, memory) pair of the sample is looked up among the judge's labels in
the app database first (``judge_labels``, keyed by message, memory and the judge's
source): a pair graded by an earlier run, or by ``memlens judge``, is not sent again,
so a daily run grades only the new day and a second run on the same logs sends
nothing. The rest go to the judge, at most ``max_pairs`` a run, with the query text
from the log's ``query`` column as the monitor's one read of the logs carries it
(relation.turn_queries) and the memory's text read from the store by id;
the grades that arrive are saved every quarter of a second (one transaction each),
so a killed run keeps what was graded but the last moments.

The grades of the sample, cached and new, go through the checks `memlens judge`
runs (dashboard/judging/run_check.py) before they count: a judge that gives every
pair one grade or the prompt's placeholder as its reason measures nothing, and its
precision would read as a real drop (or a real 0.0% baseline).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dashboard.judging.run_check import RunCheck, check_run
from dashboard.monitoring.precision import SampledTurn

SAVE_EVERY = 0.25  # seconds between two saves of the grades that arrived


@dataclass
class GradingRun:
    grades: dict[tuple[str, str], bool] = field(default_factory=dict)  # (message_id, memory_id) -> relevant
    answers: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)  # the same -> (grade, reason), for the checks
    created: dict[str, Any] = field(default_factory=dict)  # memory_id -> its created_at, for the memories read
    cached: int = 0
    graded: int = 0
    failed: int = 0
    over_budget: int = 0
    no_query: int = 0
    unparseable: int = 0  # answers of this run that did not parse (retried, or failed on the retry)
    first_error: str | None = None

    def check(self, source: str) -> RunCheck:
        """The judge's checks on every grade of the sample, cached and new."""
        return check_run(source, self.answers.values(), unparseable=self.unparseable, answered=self.graded + self.failed)

    def line(self, source: str) -> str:
        parts = [f"{self.graded} pair(s) graded now", f"{self.cached} from the app database"]
        if self.failed:
            parts.append(f"{self.failed} failed (run again to retry them; first: {self.first_error})")
        if self.over_budget:
            parts.append(f"{self.over_budget} left for the next run (--max-pairs)")
        if self.no_query:
            parts.append(f"{self.no_query} without query text in the log (left out)")
        return f"{source}: " + ", ".join(parts)


def cached_judgments(sampled: list[SampledTurn], db: Any, source: str) -> dict[tuple[str, str], Any]:
    """The judge labels the judge `source` already gave the sample's pairs, from the app database."""
    wanted = {(t.message_id, memory_id) for t in sampled for memory_id, _, _ in t.pairs()}
    found = db.judge_labels.find(source=source, message_ids={t.message_id for t in sampled})
    return {(j.message_id, j.memory_id): j for j in found if (j.message_id, j.memory_id) in wanted}


def cached_grades(sampled: list[SampledTurn], db: Any, source: str) -> dict[tuple[str, str], bool]:
    """The same as relevant or not."""
    return {pair: j.relevant for pair, j in cached_judgments(sampled, db, source).items()}


def sample_check(sampled: list[SampledTurn], db: Any, source: str) -> RunCheck:
    """The judge's checks on the grades it gave the sample's pairs, as the app database holds them."""
    return check_run(source, [(j.grade, j.reason) for j in cached_judgments(sampled, db, source).values()])


def grade_sample(
    sampled: list[SampledTurn],
    queries_for: Callable[[set[str]], dict[str, str]],
    *,
    judge: Any,
    db: Any,
    store: Any,
    store_id: str,
    concurrency: int,
    max_pairs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> GradingRun:
    """Grade the sample's pairs the app database has no grade of from `judge`.
    `queries_for` gives the query text of the turns asked (relation.turn_queries over
    the logs already read); a turn without one is left out and counted."""
    from dashboard.judging.client import bounded_map
    from dashboard.judging.judges import JudgeError, UnusableAnswer

    run = GradingRun()
    cached = cached_judgments(sampled, db, judge.source)
    run.grades.update((pair, j.relevant) for pair, j in cached.items())
    run.answers.update((pair, (j.grade, j.reason)) for pair, j in cached.items())
    run.cached = len(cached)
    # each pair once: a turn may be drawn twice (the sample and a shadow config's: shadow_precision.py),
    # and a memory both sides kept is one pair
    missing, seen = [], set(cached)
    for turn in sampled:
        for memory_id, rank, score in turn.pairs():
            if (turn.message_id, memory_id) not in seen:
                seen.add((turn.message_id, memory_id))
                missing.append((turn, memory_id, rank, score))
    # query text is looked up only when something is left to grade: a run on graded logs asks nothing more
    queries = queries_for({turn.message_id for turn, *_ in missing}) if missing else {}
    todo = [item for item in missing if item[0].message_id in queries]
    run.no_query = len(missing) - len(todo)
    if max_pairs is not None and len(todo) > max_pairs:
        run.over_budget = len(todo) - max_pairs
        todo = todo[:max_pairs]

    def grade(item: tuple[SampledTurn, str, int, float]) -> Any:  # on a worker thread
        turn, memory_id, _, _ = item
        memory = store.get(memory_id, user_id=turn.user_id)
        if memory is None:
            raise JudgeError(f"memory {memory_id!r} is not in the store")
        run.created[memory_id] = memory.created_at
        return judge.grade(queries[turn.message_id], memory.text)

    arrived: list[dict[str, Any]] = []
    last_saved = time.monotonic()
    try:
        for item, judgment, error in bounded_map(grade, todo, max(1, concurrency)):
            turn, memory_id, rank, score = item
            if error is None and judgment is not None:
                arrived.append({
                    "message_id": turn.message_id, "memory_id": memory_id, "source": judge.source, "grade": judgment.grade,
                    "reason": judgment.reason, "score": judgment.score, "rank": rank, "store_score": score, "store": store_id,
                })
                run.grades[(turn.message_id, memory_id)] = judgment.relevant
                run.answers[(turn.message_id, memory_id)] = (judgment.grade, judgment.reason)
                run.unparseable += judgment.attempts > 1  # the first answer was unusable, as `memlens judge` counts it
            else:
                run.failed += 1
                run.unparseable += isinstance(error, UnusableAnswer)
                run.first_error = run.first_error or f"{turn.message_id} {memory_id}: {error}"
            # grades that arrived together are saved together: one disk sync each
            # SAVE_EVERY seconds, not one per grade (a killed run loses at most those)
            if arrived and time.monotonic() - last_saved >= SAVE_EVERY:
                run.graded += db.judge_labels.save_many(arrived)
                arrived, last_saved = [], time.monotonic()
            if progress is not None:
                progress(run.graded + len(arrived) + run.failed, len(todo))
    finally:
        run.graded += db.judge_labels.save_many(arrived)
    return run


def creation_times(run: GradingRun, sampled: list[SampledTurn], store: Any, concurrency: int) -> dict[str, Any]:
    """memory_id -> created_at of every memory the judge rated relevant in the sample:
    those read for grading, and the rest (graded by an earlier run) read from the store now."""
    relevant = {(memory_id, t.user_id) for t in sampled for memory_id, _, _ in t.kept if run.grades.get((t.message_id, memory_id))}
    wanted = sorted({pair for pair in relevant if pair[0] not in run.created}, key=str)

    def read(pair: tuple[str, str | None]) -> Any:
        memory = store.get(pair[0], user_id=pair[1])
        return memory.created_at if memory is not None else None

    from dashboard.judging.client import bounded_map

    found = dict(run.created)
    for (memory_id, _), created_at, _ in bounded_map(read, wanted, max(1, concurrency)):
        found[memory_id] = created_at
    return found
