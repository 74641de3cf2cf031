"""`memlens judge LOG_OR_SESSION_OR_RUN --judge CONFIG`: a judge grades every
(query, memory) pair, and each grade is saved as it arrives.

    memlens judge demo --judge umbrela.toml --db store.sqlite --send-text
    memlens judge retrievals.jsonl --judge ce.toml --db store.sqlite --limit 200
    memlens judge run-20260301-abcd --judge umbrela.toml --db store.sqlite --send-text

The target is a labelling session's name, a saved run's id, or a retrieval log
file (JSONL, CSV, Parquet, OTLP) with a ``query`` column. The query text comes
from the session (kept with it), the run's judged set, or the log; the memory text
from the store (--db for the embedded store, or --store and --config as for
`memlens eval`). Judge labels go to the label database ($MEMLENS_LABELS_URL, else
labels.sqlite in $MEMLENS_DATA_DIR, or --labels) in their own table, with the
source ``judge:<name>@<model>``.

An LLM judge sends the query and memory text to the configured model
(MEMLENS_LLM_BASE_URL): nothing is sent without --send-text, and the command says
which host receives it. A pair already graded by the same judge is skipped, so a
killed run picks up where it stopped. A progress line goes to stderr.

The run's grades are checked (dashboard/judging/run_check.py): one grade for every
pair, reasons that repeat the prompt's placeholder or are all the same, answers
that do not parse; each is a warning on stderr that names the problem and counts it.

Exit status: 0 when every pair was graded, 1 when some failed (run again to retry
them), 2 on unusable input, 3 when the whole run is degenerate (one grade for every
pair, every reason a placeholder or the same, or no answer that parses): its grades
are saved, and the Label page offers them as hints only.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connectors.common.errors import MemlensError
from dashboard.cli.arguments import positive_int
from dashboard.cli.errors import CommandError, warning
from dashboard.cli.store_options import add_store_options, open_store

EXIT_FAILED = 1
EXIT_DEGENERATE = 3


@dataclass(frozen=True)
class Pair:
    message_id: str
    memory_id: str
    rank: int | None
    score: float | None
    user_id: str | None
    query: str | None
    store: str | None = None  # the store the target names for this hit (None: the one opened)


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "judge", help="grade (query, memory) pairs with an LLM or cross-encoder judge",
        epilog="To measure a judge's prompt variants on people's labels: memlens judge align LABELS --judge CONFIG "
        "(memlens judge align --help).",
    )
    parser.add_argument("target", metavar="LOG_OR_SESSION_OR_RUN", help="a retrieval log file, a session's name or a run's id")
    parser.add_argument("--judge", required=True, metavar="CONFIG", help="the judge's config (TOML or JSON)")
    parser.add_argument("--limit", type=positive_int, default=None, help="grade at most this many pairs (not yet graded)")
    parser.add_argument("--send-text", action="store_true", help="allow the query and memory text to go to the configured model")
    add_store_options(parser, db_help="the embedded store's SQLite file (where memory text is read)")
    parser.add_argument("--labels", default=None, help="a SQLite file or PostgreSQL URL (default: $MEMLENS_LABELS_URL, else the data directory)")
    parser.set_defaults(handler=run)
    return parser


def target_pairs(target: str, db: Any) -> list[Pair]:
    """The pairs to grade, in the target's order; CommandError naming what is missing."""
    if Path(target).is_file():
        from dashboard.logs.retrieval_log import read_log

        imported = read_log(target, include_query=True)
        if imported.issues:
            first = imported.issues[0]
            warning(f"{len(imported.issues)} bad row(s) left out, first: {first}")
        rows = imported.rows
        if "query" not in rows.columns or rows["query"].isna().all():
            raise CommandError(f"{target}: the log has no query text (a `query` column), which a judge needs")
        return [
            Pair(str(r.message_id), str(r.memory_id), int(r.rank), float(r.score),
                 _text(r, "user_id"), None if r.query is None or r.query != r.query else str(r.query), _text(r, "store"))
            for r in rows.itertuples(index=False)
        ]
    session = db.sessions.get(target)
    if session is not None:
        items = db.sessions.items(target)
        if not any(item.query_text for item in items):
            raise CommandError(f"session {target!r} kept no query text (create it with the text kept), which a judge needs")
        return [
            Pair(i.message_id, i.memory_id, i.rank, i.score, i.user_id, i.query_text, i.store or session.store)
            for i in items
        ]

    info = db.runs.get(target)
    if info is None:
        raise CommandError(f"{target!r} is not a log file, a session or a saved run")
    judged = db.judged_sets.load(info.set_name, info.set_hash)
    queries = {q.message_id: q.query for q in judged.questions} if judged else {}
    return [
        Pair(o.message_id, h.memory_id, h.rank, h.score, o.user_id, queries.get(o.message_id), info.fingerprint)
        for o in db.runs.outcomes(target)
        for h in sorted(o.hits, key=lambda h: h.rank)
    ]


def run(args: argparse.Namespace) -> int:
    from connectors.common.paths import data_dir
    from dashboard.database import AppDatabase, app_database_target
    from dashboard.database.model import LabelStoreError
    from dashboard.judging.client import bounded_map
    from dashboard.judging.judges import JudgeError, UnusableAnswer, open_judge
    from dashboard.judging.run_check import check_run

    judge, client = open_judge(args.judge, os.environ, send_text=args.send_text)
    try:
        db = AppDatabase(args.labels or app_database_target(dict(os.environ), data_dir()))
    except (LabelStoreError, OSError) as exc:
        raise CommandError(f"cannot open the label database: {exc}") from exc
    try:
        pairs = target_pairs(args.target, db)
        done = {(j.message_id, j.memory_id) for j in db.judge_labels.find(source=judge.source)}
        todo = [p for p in pairs if (p.message_id, p.memory_id) not in done and p.query]
        no_query = sum(1 for p in pairs if not p.query)
        if args.limit is not None:
            todo = todo[: args.limit]
        store, opened = open_store(args)
        record = db.judge_labels.record(judge.source)
    except MemlensError:
        db.close()
        raise
    if client is not None:
        print(f"sending query and memory text to {client.config.host} ({client.config.model})", file=sys.stderr)
    if record:  # what its suggestions are worth, as measured (memlens judge align)
        kappa = record.get("kappa")
        print(f"{judge.source}: recorded agreement with people: held-out kappa "
              f"{'undefined' if kappa is None else format(kappa, '.3f')} over {record.get('count')} label(s)", file=sys.stderr)
    else:
        print(f"{judge.source}: no agreement with people recorded yet (memlens agreement, memlens judge align)", file=sys.stderr)
    print(
        f"{judge.source}: {len(todo)} pair(s) to grade, {len(done & {(p.message_id, p.memory_id) for p in pairs})} "
        f"already graded" + (f", {no_query} without query text left out" if no_query else ""),
        file=sys.stderr,
    )

    def grade(pair: Pair):
        memory = store.get(pair.memory_id, user_id=pair.user_id)
        if memory is None:
            raise JudgeError(f"memory {pair.memory_id!r} is not in the store")
        return judge.grade(pair.query or "", memory.text)

    graded = failed = unparseable = 0
    answers: list[tuple[int, str]] = []
    first_error = None
    limit = client.config.concurrency if client is not None else 1
    try:
        for pair, judgment, error in bounded_map(grade, todo, limit):
            if error is None and judgment is not None:
                try:
                    db.judge_labels.save(
                        message_id=pair.message_id, memory_id=pair.memory_id, source=judge.source, grade=judgment.grade,
                        reason=judgment.reason, score=judgment.score, rank=pair.rank, store_score=pair.score,
                        store=pair.store or opened,  # as a person's label names it, so a store filter keeps it
                    )
                except LabelStoreError as exc:
                    # the grades before this one are saved, and a second run skips them
                    print(f"\nmemlens judge: {exc}", file=sys.stderr)
                    raise CommandError(f"stopped; {graded} grade(s) of this run were saved before it. Run the same "
                                       "`memlens judge` command again to resume: the pairs already graded are skipped.") from exc
                graded += 1
                answers.append((judgment.grade, judgment.reason))
                unparseable += judgment.attempts > 1  # the first answer was unusable
            else:
                failed += 1
                unparseable += isinstance(error, UnusableAnswer)
                first_error = first_error or f"{pair.message_id} {pair.memory_id}: {error}"
            print(f"\rgraded {graded + failed}/{len(todo)} ({failed} failed)", end="", file=sys.stderr, flush=True)
    finally:
        print(file=sys.stderr)
        store.close()
        db.close()
        if client is not None:
            client.close()
    if client is not None:
        print(f"tokens: {client.usage.prompt_tokens} prompt + {client.usage.completion_tokens} completion", file=sys.stderr)
    print(f"{judge.source}: graded {graded} pair(s), {failed} failed")
    if first_error:
        print(f"first failure: {first_error}", file=sys.stderr)
    check = check_run(judge.source, answers, unparseable=unparseable, answered=graded + failed)
    for said in check.warnings():
        warning(said)
    if check.degenerate:
        print(f"{judge.source}: degenerate run: its grades say nothing about these pairs; "
              "do not use them as suggestions until the judge is fixed", file=sys.stderr)
        return EXIT_DEGENERATE
    return EXIT_FAILED if failed else 0


def _text(row: Any, column: str) -> str | None:
    """A log row's optional text column, None when absent or empty."""
    value = getattr(row, column, None)
    return None if value is None or value != value or value == "" else str(value)

