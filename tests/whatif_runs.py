"""Saved runs for the what-if and calibration tests: a run whose store already ranks every answer
first (nothing can beat its weights) and whose usage component is 0 for every
memory (so all weight on usage ties every candidate), kept in a real label database."""

from __future__ import annotations

import random

from dashboard.database import AppDatabase
from dashboard.database.model import utc_now
from dashboard.database.runs import QueryOutcome, RunHit, RunInfo
from dashboard.evaluation.judged_sets import JudgedSet
from dashboard.judged import JudgedQuestion

OWN_WEIGHTS = {"semantic": 0.6, "recency": 0.15, "importance": 0.15, "usage": 0.1}
QUESTIONS = 20
HITS = 5


def perfect_run(db: AppDatabase, run_id: str = "perfect-run", store: str = "embedded") -> RunInfo:
    """Every question's one relevant memory is the store's rank 1, by a clear
    semantic margin; importance is 0.5 and usage 0 throughout."""
    rng = random.Random(5)
    questions, outcomes = [], []
    for q in range(QUESTIONS):
        message_id = f"q{q:02d}"
        hits = []
        for h in range(HITS):
            breakdown = {
                "semantic": 0.9 if h == 0 else round(rng.uniform(0.2, 0.5), 3),
                "recency": round(rng.uniform(0.0, 1.0), 3),
                "importance": 0.5,
                "usage": 0.0,
            }
            score = sum(OWN_WEIGHTS[c] * v for c, v in breakdown.items())
            hits.append((f"{message_id}-m{h}", score, breakdown))
        hits.sort(key=lambda hit: -hit[1])
        questions.append(JudgedQuestion(message_id, "u1", f"question {q}", {f"{message_id}-m0": 1}, ("one",)))
        outcomes.append(
            QueryOutcome(
                message_id, q, "u1",
                [RunHit(m, rank, s, s, b, dict(OWN_WEIGHTS)) for rank, (m, s, b) in enumerate(hits, start=1)],
            )
        )
    judged = JudgedSet("perfect", questions)
    digest = db.judged_sets.save(judged)
    info = RunInfo(run_id, "perfect ranking", "perfect", digest, store, f"{store}:test", {}, HITS, utc_now(), None, QUESTIONS)
    db.runs.start(info)
    db.runs.save_outcomes(run_id, outcomes)
    db.runs.finish(run_id)
    return info


def rare_relevant_run(db: AppDatabase, run_id: str = "rare-run") -> RunInfo:
    """Every question is answerable (the judged set names its relevant memory), but
    only half the runs' questions fetched it: 10 relevant hits among 200 (5%). Two
    users and two tags, as a benchmark's categories."""
    rng = random.Random(9)
    questions, outcomes = [], []
    for q in range(20):
        message_id = f"r{q:02d}"
        fetched = q % 2 == 0
        hits = []
        for h in range(10):
            relevant = fetched and h == 0
            score = round(rng.uniform(0.55, 0.8) if relevant else rng.uniform(0.1, 0.6), 4)
            hits.append((f"{message_id}-m{h}", score))
        hits.sort(key=lambda hit: -hit[1])
        relevant_id = f"{message_id}-m0" if fetched else f"{message_id}-elsewhere"
        user, tag = f"user{q % 2}", ("single-hop", "temporal")[q // 10]
        questions.append(JudgedQuestion(message_id, user, f"question {q}", {relevant_id: 1}, (tag,)))
        outcomes.append(QueryOutcome(message_id, q, user, [RunHit(m, rank, s) for rank, (m, s) in enumerate(hits, start=1)]))
    digest = db.judged_sets.save(JudgedSet("benchmark", questions))
    info = RunInfo(run_id, "benchmark run", "benchmark", digest, "embedded", "embedded:test", {}, 10, utc_now(), None, 20)
    db.runs.start(info)
    db.runs.save_outcomes(run_id, outcomes)
    db.runs.finish(run_id)
    return info


def noise_run(db: AppDatabase, run_id: str = "noise-run", questions_count: int = 60) -> RunInfo:
    """Components that say nothing about relevance: each question's one relevant
    memory sits at a random rank of 10 and every component is random. A search over
    hundreds of weightings still finds one that edges the store on the search split by
    chance; on the held-out questions that edge is noise (issue 34)."""
    rng = random.Random(17)
    questions, outcomes = [], []
    for q in range(questions_count):
        message_id = f"n{q:02d}"
        relevant_at = rng.randrange(10)
        hits = []
        for h in range(10):
            breakdown = {c: round(rng.random(), 3) for c in OWN_WEIGHTS}
            score = sum(OWN_WEIGHTS[c] * v for c, v in breakdown.items())
            hits.append((f"{message_id}-m{h}", score, breakdown))
        hits.sort(key=lambda hit: -hit[1])
        relevant_id = hits[relevant_at][0]
        questions.append(JudgedQuestion(message_id, "u1", f"question {q}", {relevant_id: 1}, ("one",)))
        outcomes.append(
            QueryOutcome(
                message_id, q, "u1",
                [RunHit(m, rank, s, s, b, dict(OWN_WEIGHTS)) for rank, (m, s, b) in enumerate(hits, start=1)],
            )
        )
    digest = db.judged_sets.save(JudgedSet("noise", questions))
    info = RunInfo(run_id, "noise", "noise", digest, "embedded", "embedded:test", {}, 10, utc_now(), None, questions_count)
    db.runs.start(info)
    db.runs.save_outcomes(run_id, outcomes)
    db.runs.finish(run_id)
    return info
