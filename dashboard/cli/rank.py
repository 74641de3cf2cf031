"""`memlens rank RUN --db FILE --send-text`: the LLM ranker over a saved run's
candidates, and how its order compares with the store's and the formula's.

    memlens rank run-20260301-abcd --db store.sqlite --send-text --k 3

For every question of the run, the memories it returned (text and creation time
read from the store by id) go through the ranking prompt with the re-rank
defaults (or --relevance-weight, --half-life, --threshold, --stale-after); the
answer is validated, retried once, and the formula's ranking used when it fails
(docs/judging.md). Printed: the validity rate (valid on the first answer), the
retry rate, the fallback rate, then precision@k, nDCG@k and MRR of the LLM order,
the store's and the formula's on the run's judged set (each order keeps only the
entries it returns), with a paired randomisation test of LLM vs each other order
as in `memlens compare`.

Exit status: 0 when it ran, 2 on unusable input (no model, no --send-text, no run).
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime
from typing import Any

import numpy as np

from dashboard.cli.arguments import non_negative, positive_int, positive_number, share

EXIT_UNUSABLE = 2
METRICS = ("precision", "ndcg", "reciprocal_rank")


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser("rank", help="run the LLM ranker over a saved run's candidates")
    parser.add_argument("run_id", metavar="RUN", help="a saved run's id (memlens runs list)")
    parser.add_argument("--send-text", action="store_true", help="allow the query and memory text to go to the configured model")
    parser.add_argument("--db", metavar="FILE", help="the embedded store's SQLite file (where memory text is read)")
    parser.add_argument("--store", default="embedded", help="store name in the registry (default embedded)")
    parser.add_argument("--config", metavar="FILE", help="the store's settings as a JSON object; secrets come from the environment")
    parser.add_argument("--k", type=positive_int, default=3, help="cut-off for the metrics (default 3)")
    parser.add_argument("--relevance-weight", type=share, default=0.7, help="the recency weight is 1 minus this (default 0.7)")
    parser.add_argument("--half-life", type=positive_number, default=72.0, help="recency half-life in hours (default 72)")
    parser.add_argument("--threshold", type=non_negative, default=0.3, help="relevance under this is excluded (default 0.3)")
    parser.add_argument("--stale-after", type=positive_number, default=None, help="hours after which a memory is stale (default: none)")
    parser.add_argument("--labels", default=None, help="a SQLite file or PostgreSQL URL (default: $MEMLENS_LABELS_URL, else the data directory)")
    # store_config reads eval's --weights and --as-of; this command ranks at the store's own defaults
    parser.set_defaults(handler=run, weights=None, as_of=None)
    return parser


def run(args: argparse.Namespace) -> int:
    from connectors.base import ConnectorError, Hit
    from connectors.common.paths import data_dir
    from connectors.registry import create_store
    from dashboard.cli.eval import store_config, with_secrets
    from dashboard.database import label_store_target, open_label_store
    from dashboard.evaluation.run_compare import paired_randomisation_p
    from dashboard.evaluation.storage import EvalStore
    from dashboard.judging.client import ChatClient, config_from_environ
    from dashboard.judging.ranker import FALLBACK, RETRIED, VALID, RankCache, rank_with_model
    from dashboard.ranking.metrics import evaluate_ranking
    from dashboard.ranking.rerank import RerankSettings

    try:
        model = config_from_environ(dict(os.environ))
    except ConnectorError as exc:
        print(f"memlens rank: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    if model is None:
        print("memlens rank: no model is configured: set MEMLENS_LLM_BASE_URL and MEMLENS_LLM_MODEL", file=sys.stderr)
        return EXIT_UNUSABLE
    if not args.send_text:
        print(f"memlens rank: the ranker would send query and memory text to {model.host} ({model.model}); pass --send-text to allow it", file=sys.stderr)
        return EXIT_UNUSABLE
    if args.relevance_weight > 1 or args.threshold > 1:
        print("memlens rank: --relevance-weight and --threshold must be at most 1", file=sys.stderr)
        return EXIT_UNUSABLE
    settings = RerankSettings.with_half_life(
        args.half_life, relevance_weight=args.relevance_weight, recency_weight=round(1 - args.relevance_weight, 10),
        relevance_threshold=args.threshold, staleness_cutoff_hours=args.stale_after,
    )
    labels = open_label_store(args.labels or label_store_target(dict(os.environ), data_dir()))
    try:
        evals = EvalStore(labels)
        info = evals.run(args.run_id)
        if info is None:
            print(f"memlens rank: no saved run {args.run_id!r} (memlens runs list)", file=sys.stderr)
            return EXIT_UNUSABLE
        judged = evals.load_set(info.set_name, info.set_hash)
        outcomes = evals.outcomes(args.run_id)
        store = create_store(args.store, with_secrets(args.store, store_config(args)))
    except (ValueError, ConnectorError) as exc:
        print(f"memlens rank: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    finally:
        labels.close()
    questions = {q.message_id: q for q in judged.questions} if judged else {}
    print(f"sending query and memory text to {model.host} ({model.model})", file=sys.stderr)
    client = ChatClient(model, send_text=True)
    cache = RankCache()
    now = datetime.now(UTC)
    statuses: list[str] = []
    retried = 0
    scores: dict[str, dict[str, list[float]]] = {order: {m: [] for m in METRICS} for order in ("llm", "store", "formula")}
    try:
        for number, outcome in enumerate(outcomes, start=1):
            question = questions.get(outcome.message_id)
            if question is None or not outcome.hits:
                continue
            hits = []
            for run_hit in sorted(outcome.hits, key=lambda h: h.rank):
                memory = store.get(run_hit.memory_id, user_id=outcome.user_id)
                hits.append(Hit(run_hit.memory_id, run_hit.rank, memory.text if memory else "", run_hit.score,
                                run_hit.raw_score, dict(run_hit.breakdown), dict(run_hit.weights),
                                memory.created_at if memory else None))
            ranked = rank_with_model(client, hits, query=question.query, settings=settings, now=now,
                                     query_label=outcome.message_id, cache=cache)
            statuses.append(ranked.status)
            retried += ranked.retried
            formula_order = [r["entry_id"] for r in ranked.formula["ranked_results"] if not r["excluded"] and not r["stale"]]
            for order, ids in (("llm", ranked.returned_order()), ("store", [h.memory_id for h in hits]), ("formula", formula_order)):
                figures = evaluate_ranking(outcome.message_id, ids, question.grades, args.k)
                for metric in METRICS:
                    value = getattr(figures, metric)
                    scores[order][metric].append(np.nan if value is None else float(value))
            print(f"\rquestions {number}/{len(outcomes)}", end="", file=sys.stderr, flush=True)
    finally:
        print(file=sys.stderr)
        client.close()
        store.close()
    total = len(statuses)
    if not total:
        print("memlens rank: no question of the run has both candidates and a judged set entry", file=sys.stderr)
        return EXIT_UNUSABLE
    print(f"run {args.run_id}: {total} question(s) ranked by {model.model}")
    print(f"valid on the first answer {statuses.count(VALID) / total:.1%}, retried {retried / total:.1%} "
          f"(valid after retry {statuses.count(RETRIED) / total:.1%}), fell back to the formula {statuses.count(FALLBACK) / total:.1%}")
    print(f"tokens: {client.usage.prompt_tokens} prompt + {client.usage.completion_tokens} completion")
    names = {"precision": f"precision@{args.k}", "ndcg": f"ndcg@{args.k}", "reciprocal_rank": f"mrr@{args.k}"}
    for metric in METRICS:
        llm = np.array(scores["llm"][metric])
        line = [f"{names[metric]:<14} llm {np.nanmean(llm):.4f}"]
        for other in ("store", "formula"):
            theirs = np.array(scores[other][metric])
            both = ~np.isnan(llm) & ~np.isnan(theirs)
            p = paired_randomisation_p(llm[both] - theirs[both]) if both.any() else float("nan")
            line.append(f"{other} {np.nanmean(theirs):.4f} (p {p:.3f})")
        print("  ".join(line))
    return 0
