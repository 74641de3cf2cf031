"""The LLM ranking layer, run for real: the documented recency x relevance prompt
over the candidates a store returned (docs/domain.md, "Ranking by relevance and
recency"), and the harness around it.

    build_messages    the prompt from the query, the clock, the settings and the candidates
    rank_with_model   call the model with the output schema; validate strictly; on
                      failure ask once more with the violations appended; if that
                      fails too (or the model cannot be reached) fall back to the
                      rule-based ranking (dashboard/ranking/rerank.py) and log why
    RankCache         answers kept by (query hash, candidate ids and scores, settings,
                      clock, prompt version, model) in the data directory, so the same
                      question over the same hits is not paid for twice
    every run is logged to ``llm_rank_reads.jsonl``: query hash, candidate count, the
                      top ids with their composites, latency, outcome (ids and numbers only)

The model judges relevance itself (the store's relevance is given as a hint);
everything else follows from the settings and is checked: recency is
exp(-decay × age), the composite is the weighted sum, an entry is excluded exactly
when its relevance is under the threshold and stale exactly when it is older than
the cutoff, both at composite 0, every candidate listed once, counts that add up.
The JSON-shape rules are ``ranking_json.validate_ranking``'s; this module adds the
ones that need the candidates' ages and the settings.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from connectors.base import ConnectorError, Hit, as_number
from connectors.common.paths import data_dir
from dashboard.judging.client import ChatClient, ModelError, TokenUsage, decode_json_content
from dashboard.logs.read_log import text_hash
from dashboard.ranking.ranking_json import ENTRY_FIELDS, METADATA_FIELDS, Violation, validate_ranking
from dashboard.ranking.rerank import RerankSettings, age_hours_of, relevance_of, rerank

log = logging.getLogger(__name__)

PROMPT_VERSION = "rank-v1"
RECENCY_TOLERANCE = 0.01  # the model writes two or three decimals
CACHE_NAME = "llm_rankings.sqlite"
READ_LOG_NAME = "llm_rank_reads.jsonl"
TOP_LOGGED = 10
MAX_CANDIDATE_CHARS = 2_000  # per memory in the prompt: a 10 MB memory must not be sent whole
# The answer's length bound: the metadata, and per candidate its scores, flags and a
# one-sentence justification, with room to spare.
ANSWER_TOKENS = 300
ANSWER_TOKENS_PER_CANDIDATE = 150

VALID, RETRIED, FALLBACK = "valid", "valid after retry", "fallback"


def output_schema() -> dict[str, Any]:
    """The ranking JSON shape as a strict JSON schema (what response_format carries)."""
    score = {"type": "number", "minimum": 0, "maximum": 1}
    entry = {
        "type": "object",
        "properties": {
            "entry_id": {"type": "string"},
            "relevance_score": score,
            "recency_score": score,
            "composite_score": score,
            "justification": {"type": "string"},
            "excluded": {"type": "boolean"},
            "stale": {"type": "boolean"},
        },
        "required": list(ENTRY_FIELDS),
        "additionalProperties": False,
    }
    metadata = {
        "type": "object",
        "properties": {name: {"type": "integer", "minimum": 0} for name in METADATA_FIELDS},
        "required": list(METADATA_FIELDS),
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "ranked_results": {"type": "array", "items": entry},
            "retrieval_metadata": metadata,
        },
        "required": ["query", "ranked_results", "retrieval_metadata"],
        "additionalProperties": False,
    }


SYSTEM_PROMPT = """You re-rank memories an agent's memory store returned for a user's message.
For every candidate, in one JSON object:
- relevance_score: how well the memory answers the message, from 0 (unrelated) to 1 (answers it); the store's own relevance is a hint, not the answer.
- recency_score: exp(-{decay:.6f} × age_hours), using the candidate's age_hours; 0 when age_hours is null.
- excluded: true exactly when relevance_score is under {threshold:g}.
- stale: {stale_rule}
- composite_score: {relevance_weight:g} × relevance_score + {recency_weight:g} × recency_score, but 0 when excluded or stale.
- justification: one short sentence with the numbers.
List every candidate exactly once, by its entry_id, in descending composite_score order.
retrieval_metadata: total_candidates (all candidates), returned_count (neither excluded nor stale), excluded_count, stale_count.
Answer with the JSON object only: {{"query": ..., "ranked_results": [...], "retrieval_metadata": {{...}}}}."""


def build_messages(query: str, hits: Sequence[Hit], settings: RerankSettings, now: datetime) -> list[dict[str, str]]:
    stale_after = settings.staleness_cutoff_hours
    stale_rule = (
        f"true exactly when age_hours is over {stale_after:g}." if stale_after is not None else "always false (no staleness cutoff)."
    )
    system = SYSTEM_PROMPT.format(
        decay=settings.decay_per_hour,
        threshold=settings.relevance_threshold,
        stale_rule=stale_rule,
        relevance_weight=settings.relevance_weight,
        recency_weight=settings.recency_weight,
    )
    candidates = []
    for hit in hits:
        relevance, _ = relevance_of(hit)
        age = age_hours_of(hit, now)
        candidates.append(
            {
                "entry_id": hit.memory_id,
                "text": (hit.text or "")[:MAX_CANDIDATE_CHARS],
                "store_relevance": None if relevance is None else round(relevance, 4),
                "age_hours": None if age is None else round(age, 3),
            }
        )
    user = json.dumps(
        {"query": query, "now": now.astimezone(UTC).isoformat(timespec="seconds"), "candidates": candidates},
        ensure_ascii=False,
        indent=1,
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def retry_message(violations: Sequence[Violation]) -> dict[str, str]:
    listed = "\n".join(f"- {v}" for v in violations)
    return {
        "role": "user",
        "content": f"Your answer breaks these rules:\n{listed}\nAnswer again with the corrected JSON object only.",
    }


# ------------------------------------------------------------------ validation


def check_model_ranking(payload: Any, hits: Sequence[Hit], settings: RerankSettings, now: datetime) -> list[Violation]:
    """Every rule the model's ranking breaks: the shape rules of validate_ranking,
    plus the ones that follow from the candidates' ages and the settings."""
    found = validate_ranking(
        payload,
        [h.memory_id for h in hits],
        relevance_weight=settings.relevance_weight,
        recency_weight=settings.recency_weight,
    )
    if not isinstance(payload, dict) or not isinstance(payload.get("ranked_results"), list):
        return found
    ages = {h.memory_id: age_hours_of(h, now) for h in hits}
    listed: set[str] = set()
    for index, entry in enumerate(payload["ranked_results"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("entry_id"), str):
            continue
        entry_id = entry["entry_id"]
        listed.add(entry_id)
        if entry_id not in ages:
            continue  # validate_ranking names the unknown id
        where = f"ranked_results[{index}]"
        age = ages[entry_id]
        recency = as_number(entry.get("recency_score"))
        expected = 0.0 if age is None else math.exp(-settings.decay_per_hour * age)
        if recency is not None and abs(recency - expected) > RECENCY_TOLERANCE:
            how = "age unknown, so 0" if age is None else f"exp(-{settings.decay_per_hour:.4g} × {age:.1f} h) = {expected:.4f}"
            found.append(Violation(f"{where}.recency_score", "decay", f"{recency:g} is not {how}"))
        relevance = as_number(entry.get("relevance_score"))
        excluded = entry.get("excluded")
        if relevance is not None and isinstance(excluded, bool):
            under = relevance < settings.relevance_threshold
            if under != excluded:
                side = "under" if under else "at or over"
                found.append(
                    Violation(
                        f"{where}.excluded",
                        "threshold",
                        f"{str(excluded).lower()}, but relevance {relevance:g} is {side} the "
                        f"{settings.relevance_threshold:g} threshold",
                    )
                )
        stale = entry.get("stale")
        stale_after = settings.staleness_cutoff_hours
        if isinstance(stale, bool):
            should = age is not None and stale_after is not None and age > stale_after
            if should != stale:
                why = (
                    "there is no staleness cutoff"
                    if stale_after is None
                    else "the age is unknown"
                    if age is None
                    else f"the memory is {age:.1f} h old against a {stale_after:g} h cutoff"
                )
                found.append(Violation(f"{where}.stale", "staleness", f"{str(stale).lower()}, but {why}"))
    for hit in hits:
        if hit.memory_id not in listed:
            found.append(Violation("ranked_results", "missing_id", f"candidate {hit.memory_id!r} is not listed"))
    return found


# ------------------------------------------------------------------ outcome


@dataclass
class RankAttempt:
    content: str | None  # the model's answer as it came back; None when no answer came
    violations: list[Violation] = field(default_factory=list)
    error: str | None = None  # why no answer came (timeout, 5xx, ...)
    latency_ms: float = 0.0
    usage: TokenUsage = field(default_factory=TokenUsage)

    @property
    def valid(self) -> bool:
        return self.content is not None and not self.violations and self.error is None


@dataclass
class RankOutcome:
    status: str  # VALID | RETRIED | FALLBACK
    payload: dict[str, Any]  # the model's ranking, or the formula's on fallback
    formula: dict[str, Any]  # the rule-based ranking of the same candidates
    attempts: list[RankAttempt]
    messages: list[dict[str, str]]  # the prompt as sent (retry message included)
    model: str
    prompt_version: str = PROMPT_VERSION
    cached: bool = False

    @property
    def fell_back(self) -> bool:
        return self.status == FALLBACK

    @property
    def retried(self) -> bool:
        return len(self.attempts) > 1

    @property
    def latency_ms(self) -> float:
        return sum(a.latency_ms for a in self.attempts)

    @property
    def usage(self) -> TokenUsage:
        total = TokenUsage()
        for attempt in self.attempts:
            total = total + attempt.usage
        return total

    def order(self) -> list[str]:
        return [r["entry_id"] for r in self.payload.get("ranked_results", [])]

    def returned_order(self) -> list[str]:
        """The ids the ranking keeps (neither excluded nor stale), in its order."""
        return [
            r["entry_id"] for r in self.payload.get("ranked_results", []) if not r.get("excluded") and not r.get("stale")
        ]

    def raw_exchange(self) -> dict[str, Any]:
        """The prompt and every answer, for the "raw prompt and response" download."""
        return {
            "model": self.model,
            "prompt_version": self.prompt_version,
            "status": self.status,
            "cached": self.cached,
            "messages": self.messages,
            "answers": [
                {
                    "content": a.content,
                    "error": a.error,
                    "violations": [str(v) for v in a.violations],
                    "latency_ms": round(a.latency_ms, 1),
                    "prompt_tokens": a.usage.prompt_tokens,
                    "completion_tokens": a.usage.completion_tokens,
                }
                for a in self.attempts
            ],
        }


def _ask(client: ChatClient, messages: list[dict[str, str]], hits: Sequence[Hit], settings: RerankSettings, now: datetime) -> tuple[RankAttempt, Any]:
    started = time.perf_counter()
    try:
        # Bounded: a model that never closes its JSON would otherwise write until its
        # context is full (minutes on a CPU), and the answer fails the checks anyway.
        reply = client.complete(messages, schema=output_schema(), schema_name="ranking",
                                max_tokens=ANSWER_TOKENS + ANSWER_TOKENS_PER_CANDIDATE * len(hits))
    except (ModelError, ConnectorError) as exc:
        return RankAttempt(None, error=str(exc), latency_ms=(time.perf_counter() - started) * 1000), None
    payload, error = decode_json_content(reply.content)
    if error:
        violations = [Violation("(answer)", "json", error)]
    else:
        violations = check_model_ranking(payload, hits, settings, now)
    return RankAttempt(reply.content, violations, None, reply.latency_ms, reply.usage), payload


def rank_with_model(
    client: ChatClient,
    hits: Sequence[Hit],
    *,
    query: str,
    settings: RerankSettings,
    now: datetime,
    query_label: str | None = None,
    cache: RankCache | None = None,
    read_log: Path | None = None,
) -> RankOutcome:
    """The model's ranking of `hits`, validated, retried once, else the formula's.
    `query_label` replaces the query in the formula's JSON (a message id unless the
    user opted in to text). A cached answer is returned without a call."""
    formula = rerank(hits, now=now, settings=settings, query=query).to_json(query=query_label)
    messages = build_messages(query, hits, settings, now)
    key = cache_key(query, hits, settings, now, client.config.model)
    cached = cache.get(key) if cache is not None else None
    if cached is not None:
        outcome = _outcome_from_cache(cached, formula, messages, client.config.model)
    else:
        attempt, payload = _ask(client, messages, hits, settings, now)
        attempts = [attempt]
        if attempt.valid:
            status = VALID
        else:
            if attempt.content is not None:  # an answer that broke rules: say which, once
                messages = [*messages, {"role": "assistant", "content": attempt.content}, retry_message(attempt.violations)]
                attempt, payload = _ask(client, messages, hits, settings, now)
                attempts.append(attempt)
            status = RETRIED if attempt.valid else FALLBACK
        if status == FALLBACK:
            last = attempts[-1]
            why = last.error or "; ".join(str(v) for v in last.violations[:5])
            log.warning("LLM ranking fell back to the formula after %d attempt(s): %s", len(attempts), why)
            payload = formula
        outcome = RankOutcome(status, payload, formula, attempts, messages, client.config.model)
        if cache is not None and status != FALLBACK:
            cache.put(key, client.config.model, _cache_record(outcome))
    log_rank_read(outcome, query=query, candidate_count=len(hits), path=read_log)
    return outcome


# ------------------------------------------------------------------ cache and read log


def cache_key(query: str, hits: Sequence[Hit], settings: RerankSettings, now: datetime, model: str) -> str:
    """The query's hash, the candidates' ids and scores, the settings and clock the
    prompt states, the prompt version and the model: any of them changing changes
    the answer a model should give."""
    blob = json.dumps(
        [
            text_hash(query),
            [[h.memory_id, h.score, relevance_of(h)[0], h.created_at.isoformat() if h.created_at else None] for h in hits],
            asdict(settings),
            now.astimezone(UTC).isoformat(timespec="seconds"),
            PROMPT_VERSION,
            model,
        ],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _cache_record(outcome: RankOutcome) -> dict[str, Any]:
    # The model's answers and the verdicts, not the prompt: the prompt holds memory
    # text and is rebuilt from the hits on a hit.
    return {
        "status": outcome.status,
        "payload": outcome.payload,
        "attempts": [
            {
                "content": a.content,
                "violations": [asdict(v) for v in a.violations],
                "latency_ms": a.latency_ms,
                "usage": [a.usage.prompt_tokens, a.usage.completion_tokens],
            }
            for a in outcome.attempts
        ],
        "retry_messages": outcome.messages[2:],
    }


def _outcome_from_cache(record: dict[str, Any], formula: dict[str, Any], messages: list[dict[str, str]], model: str) -> RankOutcome:
    attempts = [
        RankAttempt(
            a["content"],
            [Violation(**v) for v in a["violations"]],
            None,
            a["latency_ms"],
            TokenUsage(*a["usage"]),
        )
        for a in record["attempts"]
    ]
    return RankOutcome(
        record["status"], record["payload"], formula, attempts, messages + record["retry_messages"], model, cached=True
    )


class RankCache:
    """Model rankings by cache key, in one SQLite file in the data directory.

    A cache is a convenience: a damaged or locked file is logged once and the
    ranking runs without it (``problem`` says why), instead of failing every press."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else data_dir() / CACHE_NAME
        self.reads = 0
        self.hits = 0
        self.problem: str | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute(
                    "CREATE TABLE IF NOT EXISTS rankings (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                    "prompt_version TEXT NOT NULL, created_at TEXT NOT NULL, record TEXT NOT NULL)"
                )
        except (OSError, sqlite3.Error) as exc:
            self._give_up(exc)

    def _give_up(self, exc: BaseException) -> None:
        if self.problem is None:
            self.problem = f"the ranking cache {self.path.name} cannot be used ({type(exc).__name__}: {exc}); ranking without it"
            log.warning("%s", self.problem)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=3.0)

    def get(self, key: str) -> dict[str, Any] | None:
        if self.problem:
            return None
        try:
            with self._connect() as db:
                row = db.execute("SELECT record FROM rankings WHERE key = ?", (key,)).fetchone()
            record = json.loads(row[0]) if row is not None else None
        except (sqlite3.Error, ValueError, TypeError, RecursionError) as exc:
            self._give_up(exc)
            return None
        self.reads += 1
        if not isinstance(record, dict):
            return None
        self.hits += 1
        return record

    def put(self, key: str, model: str, record: dict[str, Any]) -> None:
        if self.problem:
            return
        try:
            with self._connect() as db:
                db.execute(
                    "INSERT OR REPLACE INTO rankings VALUES (?, ?, ?, ?, ?)",
                    (key, model, PROMPT_VERSION, datetime.now(UTC).isoformat(timespec="seconds"), json.dumps(record)),
                )
        except sqlite3.Error as exc:
            self._give_up(exc)


_log_lock = threading.Lock()


def log_rank_read(outcome: RankOutcome, *, query: str, candidate_count: int, path: Path | None = None) -> None:
    """One JSON line per ranking read (docs/domain.md: every read is logged): ids
    and numbers only. A write error is logged, never raised: the ranking stands."""
    target = path or data_dir() / READ_LOG_NAME
    top = [
        {"memory_id": r["entry_id"], "rank": i, "composite": r.get("composite_score")}
        for i, r in enumerate(outcome.payload.get("ranked_results", [])[:TOP_LOGGED], start=1)
    ]
    record = {
        "at": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "query_hash": text_hash(query),
        "model": outcome.model,
        "prompt_version": outcome.prompt_version,
        "candidate_count": candidate_count,
        "top_k": top,
        "latency_ms": round(outcome.latency_ms, 1),
        "status": outcome.status,
        "attempts": len(outcome.attempts),
        "cached": outcome.cached,
        "tokens": outcome.usage.total_tokens,
    }
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with _log_lock, target.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record) + "\n")
    except OSError as exc:
        log.warning("could not write the ranking read log %s: %s", target, exc.strerror or exc)
