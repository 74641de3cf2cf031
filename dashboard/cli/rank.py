"""`memlens rank RUN_OR_LOG --db FILE --send-text`: the LLM ranker over a saved run's
candidates, or over each turn of a retrieval log, and how its order compares with
the store's and the formula's.

    memlens rank run-20260301-abcd --db store.sqlite --send-text --k 3
    memlens rank retrievals.jsonl --db store.sqlite --send-text --judged judged.jsonl

For every question of the run (or turn of the log), the memories it returned (text
and creation time read from the store by id: a log holds ids and scores only) go
through the ranking prompt with the re-rank defaults (or --relevance-weight,
--half-life, --threshold, --stale-after); the answer is validated, retried once,
and the formula's ranking used when it fails (docs/judging.md). A log's query text
is its ``query`` column, else the judged set's question of the same message id; its
clock is the turn's ``timestamp`` when the log has one. Printed: the validity rate
(valid on the first answer), the retry rate, the fallback rate (turns that fell
back are counted apart from the model-ranked ones and left out of the "llm"
metrics: the formula ranked them), then precision@k,
nDCG@k and MRR of the LLM order, the store's and the formula's on the run's judged
set (a log's: --judged; each order keeps only the entries it returns), with a
paired randomisation test of LLM vs each other order as in `memlens compare`.

Exit status: 0 when it ran, 2 on unusable input (no model, no --send-text, no run
or log, no query text, memories the store does not hold).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from dashboard.cli.arguments import non_negative, positive_int, positive_number, share
from dashboard.cli.errors import CommandError, note, warning
from dashboard.cli.store_options import add_store_options, open_store

METRICS = ("precision", "ndcg", "reciprocal_rank")


@dataclass
class Turn:
    """One question of a run or one turn of a log: what the ranker is given."""

    message_id: str
    user_id: str | None
    query: str | None
    hits: list[Any]  # (memory_id, rank, score, raw_score, breakdown, weights) in the store's order
    grades: dict[str, int] | None  # the judged set's, None when the turn is not in one
    now: datetime | None = None  # the log's timestamp for the turn, if any


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser("rank", help="run the LLM ranker over a saved run's or a retrieval log's candidates")
    parser.add_argument(
        "run_id", metavar="RUN_OR_LOG",
        help="a saved run's id (memlens runs list) or a retrieval log file (JSONL, CSV, Parquet, OTLP)",
    )
    parser.add_argument("--send-text", action="store_true", help="allow the query and memory text to go to the configured model")
    add_store_options(parser, db_help="the embedded store's SQLite file (where memory text is read)")
    parser.add_argument("--k", type=positive_int, default=3, help="cut-off for the metrics (default 3)")
    parser.add_argument("--relevance-weight", type=share, default=0.7, help="the recency weight is 1 minus this (default 0.7)")
    parser.add_argument("--half-life", type=positive_number, default=72.0, help="recency half-life in hours (default 72)")
    parser.add_argument("--threshold", type=non_negative, default=0.3, help="relevance under this is excluded (default 0.3)")
    parser.add_argument("--stale-after", type=positive_number, default=None, help="hours after which a memory is stale (default: none)")
    parser.add_argument(
        "--judged", metavar="FILE_OR_NAME", default=None,
        help="for a log: a judged-set file (JSONL) or a kept set's name, for the metrics (a run uses its own)",
    )
    parser.add_argument("--labels", default=None, help="a SQLite file or PostgreSQL URL (default: $MEMLENS_LABELS_URL, else the data directory)")
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from connectors.common.paths import data_dir
    from dashboard.database import AppDatabase, app_database_target
    from dashboard.judging.client import ChatClient, ModelNotConfigured, TextNotAllowed, config_from_environ
    from dashboard.ranking.rerank import RerankSettings

    model = config_from_environ(dict(os.environ))
    if model is None:
        raise ModelNotConfigured("no model is configured: set MEMLENS_LLM_BASE_URL and MEMLENS_LLM_MODEL")
    if not args.send_text:
        raise TextNotAllowed(f"the ranker would send query and memory text to {model.host} ({model.model}); pass --send-text to allow it")
    if args.relevance_weight > 1 or args.threshold > 1:
        raise CommandError("--relevance-weight and --threshold must be at most 1")
    settings = RerankSettings.with_half_life(
        args.half_life, relevance_weight=args.relevance_weight, recency_weight=round(1 - args.relevance_weight, 10),
        relevance_threshold=args.threshold, staleness_cutoff_hours=args.stale_after,
    )
    is_log = Path(args.run_id).is_file()
    db = AppDatabase(args.labels or app_database_target(dict(os.environ), data_dir()))
    try:
        if is_log:
            turns, log_stores = _log_turns(Path(args.run_id), _judged_set(args.judged, db))
        else:
            turns = _run_turns(args.run_id, db)
            log_stores = set()
        store, opened = open_store(args)
    except OSError as exc:  # a bad log's MemlensError names its file and line and goes up as it is
        raise CommandError(str(exc)) from exc
    finally:
        db.close()
    if args.judged and not is_log:
        note("--judged is for a log; a run is scored on its own judged set")
    if log_stores - {opened}:
        warning(f"the log names the store(s) {', '.join(sorted(log_stores))}; memory text is read by id "
                f"from {opened} (--db / --store), which should be the store that answered")
    print(f"sending query and memory text to {model.host} ({model.model})", file=sys.stderr)
    client = ChatClient(model, send_text=True)
    try:
        ranked = _rank_turns(turns, store, client, settings, args.k, "turn" if is_log else "question")
    finally:
        print(file=sys.stderr)
        client.close()
        store.close()
    statuses, retried, scores, missing, judged_fallbacks = ranked
    total = len(statuses)
    what = "turn" if is_log else "question"
    if missing:
        first_turn, first_memory = missing[0]
        left_out = (f"{len(missing)} {what}(s) left out: memory {first_memory!r} of {first_turn!r} (and any "
                    f"others) is not in the store {opened}. The ranker needs each candidate's text, which a "
                    f"{'retrieval log does not carry' if is_log else 'run does not keep'}: it is read from the store by id, "
                    "so give the store that answered (--db FILE, or --store NAME --config FILE)")
        if not total:
            raise CommandError(left_out)
        warning(left_out)
    if not total:
        raise CommandError("no question of the run has both candidates and a judged set entry")
    from dashboard.judging.ranker import FALLBACK, RETRIED, VALID

    # A turn that fell back was ranked by the formula, not the model: counted apart,
    # and its "llm" metrics are left out rather than the formula's credited to the model.
    fell_back = statuses.count(FALLBACK)
    by_model = f"{total - fell_back} {what}(s) ranked by {model.model}, {fell_back} fell back to the formula"
    if is_log:
        print(f"log {Path(args.run_id).name}: {by_model}")
    else:
        print(f"run {args.run_id}: {by_model}")
    print(f"valid on the first answer {statuses.count(VALID) / total:.1%}, retried {retried / total:.1%} "
          f"(valid after retry {statuses.count(RETRIED) / total:.1%}), fell back to the formula {statuses.count(FALLBACK) / total:.1%}")
    print(f"tokens: {client.usage.prompt_tokens} prompt + {client.usage.completion_tokens} completion")
    if not scores["llm"]["precision"]:
        print("no judged set: pass --judged FILE_OR_NAME for precision, nDCG and MRR of the three orders")
        return 0
    _print_metrics(scores, args.k, total, judged_fallbacks)
    return 0


def _judged_set(judged: str | None, db: Any) -> Any:
    """--judged: a judged-set file, else a set kept in the app database; None without it."""
    if judged is None:
        return None
    from dashboard.evaluation import judged_sets

    found = judged_sets.file_or_kept(judged, db)
    if found is None:
        raise CommandError(f"--judged {judged}: neither a file nor a kept judged set")
    if found.issues:
        print(found.issue_report(), file=sys.stderr)
    return found


def _run_turns(run_id: str, db: Any) -> list[Turn]:

    info = db.runs.get(run_id)
    if info is None:
        raise CommandError(f"no saved run {run_id!r} (memlens runs list), and no file of that name")
    judged = db.judged_sets.load(info.set_name, info.set_hash)
    questions = {q.message_id: q for q in judged.questions} if judged else {}
    turns = []
    for outcome in db.runs.outcomes(run_id):
        question = questions.get(outcome.message_id)
        if question is None or not outcome.hits:
            continue
        hits = [(h.memory_id, h.rank, h.score, h.raw_score, dict(h.breakdown), dict(h.weights))
                for h in sorted(outcome.hits, key=lambda h: h.rank)]
        turns.append(Turn(outcome.message_id, outcome.user_id, question.query, hits, question.grades))
    return turns


def _log_turns(path: Path, judged: Any) -> tuple[list[Turn], set[str]]:
    """Each logged turn's candidates in rank order, with its query (the log's, else
    the judged set's), grades and clock; and the stores the log names."""
    from dashboard.logs.retrieval_log import read_log

    imported = read_log(path, include_query=True)
    if imported.issues:
        warning(f"{len(imported.issues)} bad row(s) left out, first: {imported.issues[0]}")
    rows = imported.rows
    questions = judged.by_id() if judged is not None else {}
    turns: list[Turn] = []
    no_query = 0
    for message_id, group in rows.groupby("message_id", sort=False):
        group = group.sort_values("rank")
        first = group.iloc[0]
        question = questions.get(str(message_id))
        query = _text(first.get("query")) or (question.query if question else None)
        if not query:
            no_query += 1
            continue
        hits: list[Any] = [(str(r.memory_id), int(r.rank), float(r.score), None, {}, {}) for r in group.itertuples(index=False)]
        turns.append(Turn(str(message_id), _text(first.get("user_id")), query, hits,
                          question.grades if question else None, _clock(first.get("timestamp"))))
    if not turns:
        raise CommandError(
            f"{path}: no turn has query text. The ranker needs each turn's message: a `query` column in the log "
            "(or gen_ai.retrieval.query.text in a trace), or --judged naming a judged set with the same message ids"
        )
    if no_query:
        warning(f"{no_query} turn(s) without query text left out (no `query` in the log"
                f"{' nor in the judged set' if judged is not None else '; --judged can supply it'})")
    stores = {str(v) for v in rows["store"].dropna().unique() if str(v)} if "store" in rows.columns else set()
    return turns, stores


def _rank_turns(turns: list[Turn], store: Any, client: Any, settings: Any, k: int, what: str) -> tuple[Any, ...]:
    """Rank every turn whose memories the store holds; the statuses, retries, the
    metrics of each order (turns in a judged set) and the (turn, memory) left out."""
    from connectors.base import Hit
    from dashboard.judging.ranker import RankCache, rank_with_model
    from dashboard.ranking.metrics import evaluate_ranking

    cache = RankCache()
    started = datetime.now(UTC)
    statuses: list[str] = []
    retried = judged_fallbacks = 0
    missing: list[tuple[str, str]] = []
    scores: dict[str, dict[str, list[float]]] = {order: {m: [] for m in METRICS} for order in ("llm", "store", "formula")}
    for number, turn in enumerate(turns, start=1):
        hits: list[Hit] = []
        for memory_id, rank, score, raw_score, breakdown, weights in turn.hits:
            memory = store.get(memory_id, user_id=turn.user_id)
            if memory is None:
                break
            hits.append(Hit(memory_id, rank, memory.text, score, raw_score, breakdown, weights, memory.created_at))
        if len(hits) < len(turn.hits):  # ranking without a memory's text would judge an empty passage
            missing.append((turn.message_id, turn.hits[len(hits)][0]))
            continue
        ranked = rank_with_model(client, hits, query=turn.query or "", settings=settings, now=turn.now or started,
                                 query_label=turn.message_id, cache=cache)
        statuses.append(ranked.status)
        retried += ranked.retried
        if turn.grades is not None:
            judged_fallbacks += ranked.fell_back
            formula_order = [r["entry_id"] for r in ranked.formula["ranked_results"] if not r["excluded"] and not r["stale"]]
            for order, ids in (("llm", ranked.returned_order()), ("store", [h.memory_id for h in hits]), ("formula", formula_order)):
                figures = evaluate_ranking(turn.message_id, ids, turn.grades, k)
                for metric in METRICS:
                    value = getattr(figures, metric)
                    if order == "llm" and ranked.fell_back:
                        value = None  # the formula's order, not the model's: no llm figure for this turn
                    scores[order][metric].append(np.nan if value is None else float(value))
        print(f"\r{what}s {number}/{len(turns)}", end="", file=sys.stderr, flush=True)
    return statuses, retried, scores, missing, judged_fallbacks


def _print_metrics(scores: dict[str, dict[str, list[float]]], k: int, total: int, fell_back: int = 0) -> None:
    from dashboard.evaluation.run_compare import paired_randomisation_p

    judged = len(scores["llm"]["precision"])
    if judged < total:
        print(f"metrics over the {judged} of {total} ranked in the judged set")
    if fell_back:
        print(f"llm metrics over the {judged - fell_back} model-ranked of them; {fell_back} fell back to the formula "
              "and are left out of the llm column (the formula's own column has them)")
    names = {"precision": f"precision@{k}", "ndcg": f"ndcg@{k}", "reciprocal_rank": f"mrr@{k}"}
    for metric in METRICS:
        llm = np.array(scores["llm"][metric], dtype=float)
        mean = f"{np.nanmean(llm):.4f}" if (~np.isnan(llm)).any() else "n/a"
        line = [f"{names[metric]:<14} llm {mean}"]
        for other in ("store", "formula"):
            theirs = np.array(scores[other][metric])
            both = ~np.isnan(llm) & ~np.isnan(theirs)
            p = paired_randomisation_p(llm[both] - theirs[both]) if both.any() else float("nan")
            line.append(f"{other} {np.nanmean(theirs):.4f} (p {p:.3f})")
        print("  ".join(line))


def _text(value: Any) -> str | None:
    """A log cell as text, None when absent, empty or NaN."""
    return None if value is None or value != value or value == "" else str(value)


def _clock(value: Any) -> datetime | None:
    """The turn's logged time as the ranker's clock (UTC when the log gives no zone)."""
    text = _text(value)
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
