"""Running a judged set against a store, saving as it goes, and resuming.

A run asks the store for the top k of every question and keeps, per question, the
ranked memory ids with score, raw score and every breakdown component, the latency
and any error; never the query or memory text unless the reviewer opts in.

How the questions are sent depends on the store:

- a store that can answer many queries at once (``query_many``, the embedded
  store) gets them in batches, so questions are encoded 64 at a time instead of
  one by one (encoding is most of a query's cost), each batch asked while the one
  before it is saved;
- any other store gets a few queries at a time from a small thread pool. When it
  answers 429 with ``retry_after``, every worker waits that long before its next
  request, so memlens backs off as one client, not several.

Results are written batch by batch, each batch one transaction (in batches of
questions of about one length for a ``query_many`` store, not in file order). A run whose
process was killed or whose store went down keeps what it wrote and stays
incomplete; ``resume_run`` asks only the questions still missing. A question the
store failed (a timeout, an unreadable body, an error after retries, a refused
key) is kept with its error, counts as returning nothing in the figures, and
leaves the run incomplete: ``resume_run`` asks it again. Each error is kept as
``Kind: message``, the kind being the connector error's class, so a run can say
how many failed and why (``failure_kinds``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from connectors.base import (
    AuthFailed,
    BadResponse,
    ConnectorError,
    InvalidRequest,
    MemoryStore,
    NotFound,
    QueryResult,
    RateLimited,
    StoreTimeout,
    StoreUnavailable,
)
from connectors.common import store_names
from connectors.common.errors import MemlensError
from dashboard.database import AppDatabase
from dashboard.database.model import utc_now
from dashboard.database.runs import QueryOutcome, RunHit, RunInfo, new_run_id
from dashboard.evaluation.judged_sets import JudgedSet
from dashboard.judged import JudgedQuestion

BATCH_SIZE = 64
CONCURRENCY = 4
MAX_RATE_LIMIT_WAIT = 60.0  # seconds; a store asking for longer stops the run
RATE_LIMIT_ATTEMPTS = 5
# This many questions in a row failing because the store is down or slow stops the
# run (incomplete, resumable) instead of recording every remaining question as an error.
STORE_DOWN_STREAK = 8

Progress = Callable[[int, int], None]
# The kinds a failed question's error is counted by, most specific first.
ERROR_KINDS = (StoreTimeout, StoreUnavailable, AuthFailed, RateLimited, BadResponse, NotFound, InvalidRequest)


def error_text(exc: ConnectorError) -> str:
    """What a failed question keeps: ``Kind: message`` (the kind is the error's class
    in connectors.base, whatever subclass a connector raised)."""
    kind = next((k.__name__ for k in ERROR_KINDS if isinstance(exc, k)), "ConnectorError")
    return f"{kind}: {exc}"


def failure_kinds(errors: Iterable[str | None]) -> dict[str, int]:
    """How many questions failed, by kind, most first, from the questions' errors
    (None: answered). An error kept before kinds were (no ``Kind:`` prefix) counts
    as ConnectorError."""
    counts: dict[str, int] = {}
    known = {k.__name__ for k in ERROR_KINDS} | {"ConnectorError"}
    for error in errors:
        if error is None:
            continue
        prefix = error.split(":", 1)[0]
        kind = prefix if prefix in known else "ConnectorError"
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def failure_summary(info: RunInfo, errors: Iterable[str | None]) -> str:
    """One sentence: how many questions failed and why, e.g. "52 of 300 questions
    failed (StoreTimeout 30, BadResponse 22)"; empty when none did."""
    if not info.failed:
        return ""
    kinds = ", ".join(f"{kind} {count}" for kind, count in failure_kinds(errors).items())
    return f"{info.failed} of {info.total} questions failed ({kinds})"


@runtime_checkable
class SupportsQueryMany(Protocol):
    def query_many(self, texts: list[str], user_ids: list[str | None], k: int = 5) -> list[QueryResult]: ...


class RunStopped(MemlensError):
    """The run stopped before every question was answered (cancelled, store down);
    what was answered is saved and the run can be resumed."""

    def __init__(self, message: str, run_id: str):
        super().__init__(message)
        self.run_id = run_id


@dataclass
class RunRequest:
    judged: JudgedSet
    store_name: str
    fingerprint: str
    settings: dict[str, Any]  # the store's public config: never a secret
    k: int
    name: str = ""
    keep_text: bool = False


def store_limit(store: MemoryStore) -> int | None:
    """The largest k the store accepts, when it says."""
    limit = getattr(store, "max_k", None)
    return limit if isinstance(limit, int) and limit > 0 else None


def start_run(
    store: MemoryStore,
    db: AppDatabase,
    request: RunRequest,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> RunInfo:
    """Save the judged set, create the run, answer every question; returns the run.
    Raises RunStopped (the run kept, incomplete) when cancelled or the store is down."""
    limit = store_limit(store)
    if request.k < 1 or (limit is not None and request.k > limit):
        raise InvalidRequest(f"k must be from 1 to {limit or 'any'} for this store, got {request.k}")
    set_hash = db.judged_sets.save(request.judged)
    info = RunInfo(
        run_id=new_run_id(),
        name=request.name or f"{request.judged.name} on {store_names.store_name(request.store_name, request.settings)} k={request.k}",
        set_name=request.judged.name,
        set_hash=set_hash,
        store=request.store_name,
        fingerprint=request.fingerprint,
        settings=request.settings,
        k=request.k,
        started_at=utc_now(),
        finished_at=None,
        total=len(request.judged.questions),
        keep_text=request.keep_text,
    )
    db.runs.start(info)
    return _answer(store, db, info, request.judged, progress=progress, cancelled=cancelled)


def resume_run(
    store: MemoryStore,
    db: AppDatabase,
    run_id: str,
    *,
    progress: Progress | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> RunInfo:
    """Answer the questions an incomplete run is missing, against the set version
    it was started on."""
    info = db.runs.get(run_id)
    if info is None:
        raise KeyError(f"no run {run_id!r}")
    judged = db.judged_sets.load(info.set_name, info.set_hash)
    if judged is None:
        raise KeyError(f"run {run_id!r}: its judged set {info.set_name!r} ({info.set_hash}) is gone")
    return _answer(store, db, info, judged, progress=progress, cancelled=cancelled)


def _answer(
    store: MemoryStore,
    db: AppDatabase,
    info: RunInfo,
    judged: JudgedSet,
    *,
    progress: Progress | None,
    cancelled: Callable[[], bool] | None,
) -> RunInfo:
    # A failed question is asked again: only answers count as done.
    answered = {o.message_id for o in db.runs.outcomes(info.run_id) if o.error is None}
    positions = {q.message_id: i for i, q in enumerate(judged.questions)}
    todo = [q for q in judged.questions if q.message_id not in answered]
    done = len(answered)
    if progress:
        progress(done, info.total)
    asker: _BatchAsker | _PoolAsker
    if isinstance(store, SupportsQueryMany):
        asker = _BatchAsker(store, info.k)
        # A batch is encoded padded to its longest question, so batches of questions
        # of about one length, longest first (as sentence-transformers orders one
        # encode call): in file order one long question in a batch made the whole
        # batch cost as much as 64 long ones. Each answer keeps its position.
        todo.sort(key=lambda q: -len(q.query))
    else:
        asker = _PoolAsker(store, info.k)
    try:
        return _answer_all(db, info, todo, positions, done, asker, progress, cancelled)
    finally:
        asker.close()


def _answer_all(
    db: AppDatabase,
    info: RunInfo,
    todo: list[JudgedQuestion],
    positions: dict[str, int],
    done: int,
    asker: _BatchAsker | _PoolAsker,
    progress: Progress | None,
    cancelled: Callable[[], bool] | None,
) -> RunInfo:
    down_streak = 0
    batches = [todo[start : start + BATCH_SIZE] for start in range(0, len(todo), BATCH_SIZE)]
    # A query_many store is asked one batch ahead, on a thread: its encoding (most of
    # a batch, and it lets go of the GIL) runs while this thread builds and saves the
    # answers before it. Any other store is asked batch by batch, so a store that
    # went down gets no batch of requests more than the ones that found it down.
    ahead = isinstance(asker, _BatchAsker)
    # Leaving the block (done, cancelled, or the page rerun) waits for a batch in
    # flight; a batch asked ahead and not saved is asked again on resume.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memlens-ahead") as worker:
        pending: Future | None = None
        for number, batch in enumerate(batches):
            if cancelled and cancelled():
                raise RunStopped(f"run {info.run_id} cancelled after {done} of {info.total} questions", info.run_id)
            outcomes = pending.result() if pending is not None else asker.ask(batch, positions, info.keep_text)
            pending = None
            if ahead and number + 1 < len(batches):
                pending = worker.submit(asker.ask, batches[number + 1], positions, info.keep_text)
            # A store that went down: keep the answers before the outage, drop the
            # failures (resuming asks them again) and stop.
            kept = []
            for outcome, failure in outcomes:
                down_streak = down_streak + 1 if failure else 0
                if down_streak >= STORE_DOWN_STREAK:
                    kept = [o for o, f in outcomes if not f]
                    db.runs.save_outcomes(info.run_id, kept)
                    raise RunStopped(
                        f"run {info.run_id} stopped after {done + len(kept)} of {info.total} questions: "
                        f"the store failed {down_streak} times in a row ({outcome.error})",
                        info.run_id,
                    )
                kept.append(outcome)
            db.runs.save_outcomes(info.run_id, kept)
            done += len(kept)
            if progress:
                progress(done, info.total)
    db.runs.finish(info.run_id, notes=asker.notes())
    finished = db.runs.get(info.run_id)
    assert finished is not None
    return finished


def _store_down(exc: ConnectorError) -> bool:
    """Unreachable, timing out or answering 5xx: the store, not the question, failed."""
    return isinstance(exc, (StoreUnavailable, StoreTimeout)) or (exc.status or 0) >= 500


def _hits(result: QueryResult) -> list[RunHit]:
    return [
        RunHit(
            memory_id=h.memory_id,
            rank=h.rank,
            score=h.score,
            raw_score=h.raw_score,
            breakdown={k: float(v) for k, v in h.breakdown.items() if isinstance(v, (int, float))},
            weights={k: float(v) for k, v in h.weights.items() if isinstance(v, (int, float))},
        )
        for h in result.hits
    ]


def _outcome(q: JudgedQuestion, position: int, keep_text: bool, result: QueryResult | None, error: str | None, latency: float | None) -> QueryOutcome:
    return QueryOutcome(
        message_id=q.message_id,
        position=position,
        user_id=q.user_id,
        hits=_hits(result) if result else [],
        latency_ms=result.latency_ms if result and result.latency_ms is not None else latency,
        error=error,
        query_text=q.query if keep_text else None,
    )


class _BatchAsker:
    """Stores with query_many: one call per batch."""

    def __init__(self, store: Any, k: int):
        self.store, self.k = store, k
        self.seen_notes: list[str] = []

    def ask(self, batch: Sequence[JudgedQuestion], positions: dict[str, int], keep_text: bool) -> list[tuple[QueryOutcome, bool]]:
        try:
            results = self.store.query_many([q.query for q in batch], [q.user_id for q in batch], self.k)
        except ConnectorError as exc:
            failure = _store_down(exc)
            return [(_outcome(q, positions[q.message_id], keep_text, None, error_text(exc), None), failure) for q in batch]
        for result in results:
            for note in result.notes:
                if note not in self.seen_notes:
                    self.seen_notes.append(note)
        return [
            (_outcome(q, positions[q.message_id], keep_text, r, None, None), False)
            for q, r in zip(batch, results, strict=True)
        ]

    def notes(self) -> list[str]:
        return self.seen_notes

    def close(self) -> None:
        pass


class _PoolAsker:
    """Any other store: a few queries at a time; a 429's retry_after pauses them all."""

    def __init__(self, store: MemoryStore, k: int, concurrency: int = CONCURRENCY):
        self.store, self.k = store, k
        self.pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="memlens-eval")
        self.pause_until = 0.0
        self.lock = threading.Lock()
        self.seen_notes: list[str] = []
        self.rate_limited = 0

    def _one(self, q: JudgedQuestion) -> tuple[QueryResult | None, str | None, bool, float]:
        for _attempt in range(RATE_LIMIT_ATTEMPTS):
            with self.lock:
                wait = self.pause_until - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            started = time.perf_counter()
            try:
                result = self.store.query(q.query, user_id=q.user_id, k=self.k)
                return result, None, False, (time.perf_counter() - started) * 1000
            except RateLimited as exc:
                delay = exc.retry_after if exc.retry_after is not None else 1.0
                with self.lock:
                    self.rate_limited += 1
                    if delay > MAX_RATE_LIMIT_WAIT:
                        return None, error_text(exc), True, 0.0
                    self.pause_until = max(self.pause_until, time.monotonic() + delay)
                last = error_text(exc)
            except ConnectorError as exc:
                return None, error_text(exc), _store_down(exc), (time.perf_counter() - started) * 1000
        return None, last, True, 0.0

    def ask(self, batch: Sequence[JudgedQuestion], positions: dict[str, int], keep_text: bool) -> list[tuple[QueryOutcome, bool]]:
        answers = list(self.pool.map(self._one, batch))
        outcomes = []
        for q, (result, error, failure, latency) in zip(batch, answers, strict=True):
            if result:
                for note in result.notes:
                    if note not in self.seen_notes:
                        self.seen_notes.append(note)
            outcomes.append((_outcome(q, positions[q.message_id], keep_text, result, error, latency), failure))
        return outcomes

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    def notes(self) -> list[str]:
        notes = list(self.seen_notes)
        if self.rate_limited:
            notes.append(f"the store asked memlens to slow down {self.rate_limited} time(s) (429); the run waited as asked")
        return notes
