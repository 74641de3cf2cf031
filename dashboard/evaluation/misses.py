"""Where each relevant memory of a run was lost: the miss anatomy of a run.

Every (question, relevant memory) pair of the run's judged set gets exactly one
cause:

    not_stored   the store has no memory with that id for the question's user (or,
                 for a run ranked at a clock, only one created after it)
    past_k       stored, but ranked below the run's k; its rank when a deeper
                 query (capped at ``depth`` and the store's own limit) reaches it
    under_floor  in the run's top k with a score under the floor (or no score)
    kept         in the run's top k at or above the floor: it reached the prompt

Under a floor file's rule that reads the whole turn (``rule``: dashboard/turn_rule.py,
decided by ``kept_mask`` on the question's hits in the run, as the agent side decides
a turn), ``under_floor`` is a pair in the top k the rule dropped and ``kept`` one it
kept; the floor is the one the rule is applied with (a label-free cut's).

Each needs a different fix (the write path, the weights or k, the floor), which is
why a run's "retrieval misses" must not lump them together.

Two steps, so a page can move the floor without asking the store again:

- ``locate`` (asks the store) finds, for each pair the run did not return, whether
  it is stored (the store's look-up by id: exact for the embedded store, which
  reads its own SQLite file) and where a deeper query ranks it. The deeper query
  is asked only for questions with such a pair, with the run's own settings and
  clock (the caller opens the store from them). When a store's look-up fails the
  pair's storage is unknown: it is counted as ``unknown``, never guessed.
- ``MissAnatomy.causes(floor, rule)`` (pure) gives each pair its cause, and
  ``counts`` / ``by_tag`` count them.

A question whose query failed in the run, or that the run has not asked yet, has
no ranking to judge: its pairs are left out and counted in ``skipped_questions``.
Only ids, ranks and scores are kept: no query or memory text.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from connectors.base import ConnectorError, MemoryStore, NotFound, QueriesBumpUsage, QueryResult, parse_as_of
from dashboard.database.runs import QueryOutcome, RunInfo
from dashboard.evaluation.runs import SupportsQueryMany, error_text, store_limit
from dashboard.judged import JudgedQuestion
from dashboard.labels.export import neutralise_cell
from dashboard.turn_rule import FLOOR, TurnRule, kept_mask

CAUSES = ("not_stored", "past_k", "under_floor", "kept")
UNKNOWN = "unknown"  # the store's look-up failed: not guessed as either stored or not
DEFAULT_DEPTH = 100
DEEP_BATCH = 64  # questions per query_many call of a deeper query
PAIR_FIELDS = (
    "run_id", "message_id", "user_id", "memory_id", "grade", "cause", "rank", "score", "floor", "k",
    "stored", "ranked_by", "tags",
)  # fmt: skip

Progress = Callable[[int, int], None]


@dataclass(frozen=True, eq=False)
class RunTurn:
    """One question's hits in the run, in the store's order, as a rule reads a turn:
    their scores and the breakdowns a rule's store parts come from."""

    scores: tuple[float | None, ...]
    breakdowns: tuple[dict[str, float], ...]

    def kept(self, rule: TurnRule, floor: float) -> list[bool]:
        """The rule's decision per hit (ranks are the positions, as the agent side takes them)."""
        parts = any(name.startswith("part.") for name in rule.features)
        return kept_mask(list(self.scores), rule, floor, None, list(self.breakdowns) if parts else None)


@dataclass
class Pair:
    """One (question, relevant memory) pair and what is known about it."""

    message_id: str
    user_id: str | None
    memory_id: str
    grade: int
    tags: tuple[str, ...]
    run_rank: int | None = None  # its rank in the run's top k, when it is there
    run_score: float | None = None
    stored: bool | None = None  # None: not looked up (in the top k), or the look-up failed
    deep_rank: int | None = None  # its rank in the deeper query, when it reached it
    deep_score: float | None = None
    lookup_error: str | None = None
    turn: RunTurn | None = None  # the question's hits in the run (a rule reads the whole turn)
    turn_index: int | None = None  # this pair's place among them, when it is there

    def cause(self, floor: float, kept: bool | None = None) -> str:
        """The pair's cause at ``floor``; ``kept``: a rule's decision for it, when one decides."""
        if self.run_rank is not None:
            if kept is not None:
                return "kept" if kept else "under_floor"
            score = self.run_score
            return "kept" if score is not None and not math.isnan(score) and score >= floor else "under_floor"
        if self.deep_rank is not None or self.stored is True:
            return "past_k"
        if self.stored is False:
            return "not_stored"
        return UNKNOWN

    def row(self, run_id: str, floor: float, k: int, cause: str | None = None) -> dict[str, Any]:
        """The pair as an export row: ids, rank and score only (``cause``: as a rule gave it)."""
        cause = cause if cause is not None else self.cause(floor)
        in_run = self.run_rank is not None
        return {
            "run_id": run_id,
            "message_id": self.message_id,
            "user_id": self.user_id,
            "memory_id": self.memory_id,
            "grade": self.grade,
            "cause": cause,
            "rank": self.run_rank if in_run else self.deep_rank,
            "score": self.run_score if in_run else self.deep_score,
            "floor": floor,
            "k": k,
            "stored": True if in_run or self.deep_rank is not None else self.stored,
            "ranked_by": "run" if in_run else ("deeper query" if self.deep_rank is not None else None),
            "tags": list(self.tags),
        }


@dataclass
class MissAnatomy:
    info: RunInfo
    pairs: list[Pair]
    depth: int  # how deep the deeper query asked (0: not asked)
    skipped_questions: int  # failed or not yet asked in the run: no ranking to judge
    deep_queries: int = 0
    notes: list[str] = field(default_factory=list)

    def causes(self, floor: float, rule: TurnRule | None = None) -> list[str]:
        """Each pair's cause at ``floor``, or under ``rule`` (with ``floor`` beside a
        label-free cut), decided once per question on its hits in the run."""
        if rule is None:
            return [p.cause(floor) for p in self.pairs]
        decided: dict[int, list[bool]] = {}
        causes = []
        for pair in self.pairs:
            kept = None
            if pair.turn is not None and pair.turn_index is not None:
                if id(pair.turn) not in decided:
                    decided[id(pair.turn)] = pair.turn.kept(rule, floor)
                kept = decided[id(pair.turn)][pair.turn_index]
            causes.append(pair.cause(floor, kept))
        return causes

    def counts(self, floor: float, rule: TurnRule | None = None) -> dict[str, int]:
        """Pairs per cause, the four causes always present; ``unknown`` only when some
        pair's storage could not be told."""
        return _count(self.causes(floor, rule))

    def by_tag(self, floor: float, rule: TurnRule | None = None) -> dict[str, dict[str, int]]:
        tags = sorted({t for p in self.pairs for t in p.tags})
        causes = self.causes(floor, rule)
        return {t: _count(c for p, c in zip(self.pairs, causes, strict=True) if t in p.tags) for t in tags}

    def rows(self, floor: float, rule: TurnRule | None = None) -> Iterator[dict[str, Any]]:
        for pair, cause in zip(self.pairs, self.causes(floor, rule), strict=True):
            yield pair.row(self.info.run_id, floor, self.info.k, cause)

    def summary(self, floor: float, rule: TurnRule | None = None) -> dict[str, Any]:
        """Counts overall and per tag, with what they were computed at (the JSON form)."""
        counts = self.counts(floor, rule)
        return {
            "run_id": self.info.run_id,
            "store": self.info.store,
            "fingerprint": self.info.fingerprint,
            "k": self.info.k,
            "floor": floor,
            "rule": rule.kind if rule is not None else FLOOR,
            "as_of": self.info.as_of,
            "depth": self.depth,
            "complete": self.info.complete,
            "pairs": len(self.pairs),
            "counts": {c: counts[c] for c in CAUSES},
            "unknown": counts.get(UNKNOWN, 0),
            "by_tag": self.by_tag(floor, rule),
            "skipped_questions": self.skipped_questions,
            "deep_queries": self.deep_queries,
            "notes": self.notes,
        }


def _count(causes: Iterable[str]) -> dict[str, int]:
    counts = dict.fromkeys(CAUSES, 0)
    for cause in causes:
        counts[cause] = counts.get(cause, 0) + 1
    return counts


def judged_pairs(
    questions: Sequence[JudgedQuestion], outcomes: Sequence[QueryOutcome]
) -> tuple[list[Pair], int]:
    """Every (question, relevant memory) pair of the questions the run answered, with
    its place in the run's top k when it is there; and how many questions were left
    out (failed, or not asked yet)."""
    by_id = {o.message_id: o for o in outcomes}
    pairs: list[Pair] = []
    skipped = 0
    for question in questions:
        relevant = question.relevant
        if not relevant:
            continue
        outcome = by_id.get(question.message_id)
        if outcome is None or outcome.error is not None:
            skipped += 1
            continue
        hits = sorted(outcome.hits, key=lambda h: h.rank)  # the store's order, as the agent side reads the turn
        # a NaN score is none, as the agent side takes it
        scores = tuple(None if h.score is None or math.isnan(h.score) else h.score for h in hits)
        turn = RunTurn(scores, tuple(h.breakdown for h in hits))
        returned = {h.memory_id: (index, h) for index, h in enumerate(hits)}
        for memory_id in relevant:
            index, hit = returned.get(memory_id, (None, None))
            pairs.append(
                Pair(
                    message_id=question.message_id,
                    user_id=question.user_id,
                    memory_id=memory_id,
                    grade=question.grades[memory_id],
                    tags=question.tags,
                    run_rank=hit.rank if hit else None,
                    run_score=hit.score if hit else None,
                    stored=True if hit else None,
                    turn=turn if hit else None,
                    turn_index=index,
                )
            )
    return pairs, skipped


def locate(
    store: MemoryStore,
    info: RunInfo,
    questions: Sequence[JudgedQuestion],
    outcomes: Sequence[QueryOutcome],
    *,
    depth: int = DEFAULT_DEPTH,
    progress: Progress | None = None,
) -> MissAnatomy:
    """The run's pairs with, for each one the run did not return, whether the store
    holds it and where a deeper query ranks it. ``store`` must be opened with the
    run's settings and clock. A failed look-up leaves the pair ``unknown``; a failed
    deeper query leaves its ranks unknown (said in the notes)."""
    pairs, skipped = judged_pairs(questions, outcomes)
    missing = [p for p in pairs if p.run_rank is None]
    notes: list[str] = []
    failures: dict[str, int] = {}
    # The clock is the store as it was then: a memory created after it was not stored yet.
    clock = parse_as_of(info.as_of) if info.as_of else None
    later = 0
    for pair in missing:
        try:
            memory = store.get(pair.memory_id, user_id=pair.user_id)
        except NotFound:
            memory = None
        except ConnectorError as exc:
            pair.lookup_error = error_text(exc)
            kind = pair.lookup_error.split(":", 1)[0]
            failures[kind] = failures.get(kind, 0) + 1
            continue
        if memory is not None and clock is not None and memory.created_at is not None and _utc(memory.created_at) > clock:
            later += 1
            memory = None
        pair.stored = memory is not None
    if later:
        notes.append(f"{later} pair(s)' memories were created after the run's clock ({info.as_of}): counted as not_stored")
    if failures:
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(failures.items()))
        notes.append(f"the store's look-up by id failed for {sum(failures.values())} pair(s) ({kinds}): counted as unknown")
    limit = store_limit(store)
    depth = max(0, min(depth, limit) if limit else depth)
    if depth > info.k:
        asked = _deeper(store, info, questions, missing, depth, notes, progress)
    else:
        asked = 0
        if missing:
            notes.append(f"no deeper query (depth {depth} is not beyond the run's k {info.k}): past_k ranks are unknown")
    if asked and isinstance(store, QueriesBumpUsage) and store.queries_bump_usage:
        notes.append(f"the {info.store} store counts usage on every query: the {asked} deeper queries moved it")
    if info.store != "embedded":
        notes.append(
            f"not_stored comes from the {info.store} store's look-up by id for the question's user; "
            "only the embedded store's is exact (it reads its own file)"
        )
    return MissAnatomy(info, pairs, depth if asked else 0, skipped, asked, notes)


def _utc(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def _deeper(
    store: MemoryStore,
    info: RunInfo,
    questions: Sequence[JudgedQuestion],
    missing: list[Pair],
    depth: int,
    notes: list[str],
    progress: Progress | None,
) -> int:
    """Ask the top `depth` of each question that has a pair the run did not return
    and that may be stored; note each pair's rank there. Returns how many were asked."""
    wanted: dict[str, list[Pair]] = {}
    for pair in missing:
        if pair.stored is not False:
            wanted.setdefault(pair.message_id, []).append(pair)
    todo = [q for q in questions if q.message_id in wanted]
    failed: list[str] = []
    for start in range(0, len(todo), DEEP_BATCH):
        batch = todo[start : start + DEEP_BATCH]
        for question, result in zip(batch, _ask(store, batch, depth, failed), strict=True):
            if result is None:
                continue
            ranked = {h.memory_id: h for h in result.hits}
            for pair in wanted[question.message_id]:
                hit = ranked.get(pair.memory_id)
                if hit is not None:
                    pair.deep_rank, pair.deep_score = hit.rank, hit.score
        if progress:
            progress(min(start + DEEP_BATCH, len(todo)), len(todo))
    if failed:
        notes.append(f"{len(failed)} deeper quer(ies) failed ({failed[0]}): their past_k ranks are unknown")
    unreached = sum(1 for p in missing if p.stored is True and p.deep_rank is None)
    if unreached:
        notes.append(f"{unreached} stored pair(s) ranked below the deeper query's {depth}: past_k with no rank")
    return len(todo)


def _ask(store: MemoryStore, batch: list[JudgedQuestion], depth: int, failed: list[str]) -> list[QueryResult | None]:
    if isinstance(store, SupportsQueryMany):
        try:
            return list(store.query_many([q.query for q in batch], [q.user_id for q in batch], depth))
        except ConnectorError as exc:
            failed.extend([error_text(exc)] * len(batch))
            return [None] * len(batch)
    results: list[QueryResult | None] = []
    for question in batch:
        try:
            results.append(store.query(question.query, user_id=question.user_id, k=depth))
        except ConnectorError as exc:
            failed.append(error_text(exc))
            results.append(None)
    return results


# ------------------------------------------------------------------ output


def table_lines(anatomy: MissAnatomy, floor: float, rule: TurnRule | None = None) -> list[str]:
    """A header line, then one line per scope (all pairs, then each tag): the count
    of each cause and the pairs in it."""
    counts = anatomy.counts(floor, rule)
    extra = (UNKNOWN,) if counts.get(UNKNOWN) else ()
    columns = (*CAUSES, *extra, "pairs")
    scopes = {"(all)": counts, **{f"tag:{_printable(t)}": c for t, c in anatomy.by_tag(floor, rule).items()}}
    width = max(len(s) for s in scopes)
    lines = [" ".join([f"{'scope':<{width}}", *(f"{c:>11}" for c in columns)])]
    for scope, found in scopes.items():
        values = [found.get(c, 0) for c in (*CAUSES, *extra)] + [sum(found.values())]
        lines.append(" ".join([f"{scope:<{width}}", *(f"{v:>11}" for v in values)]))
    return lines


def _printable(text: str) -> str:
    """A tag as the terminal may print it: a control character is escaped, never sent."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def jsonl_lines(anatomy: MissAnatomy, floor: float, rule: TurnRule | None = None) -> Iterator[str]:
    for row in anatomy.rows(floor, rule):
        yield json.dumps(row, ensure_ascii=False)


def csv_text(anatomy: MissAnatomy, floor: float, rule: TurnRule | None = None) -> str:
    """The pairs as CSV (the label export's rules: CRLF rows, and an id a spreadsheet
    would run as a formula quoted); tags joined by "+", an unknown value empty."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=PAIR_FIELDS, lineterminator="\r\n")
    writer.writeheader()
    for row in anatomy.rows(floor, rule):
        row = {**row, "tags": "+".join(row["tags"])}
        writer.writerow({k: "" if v is None else neutralise_cell(v) for k, v in row.items()})
    return out.getvalue()
