"""`memlens eval JUDGED --db FILE --k K`: run a judged set against a store and save the run.

    memlens eval judged.jsonl --db store.sqlite --k 10
    memlens eval judged.jsonl --db store.sqlite --k 10 --weights semantic=1,recency=0 --name cosine
    memlens eval qrels.txt --topics topics.tsv --store http_json --config service.toml --k 10
    memlens eval judged.jsonl --db store.sqlite --k 10 --format json --trec-run run.txt
    memlens eval judged.jsonl --db store.sqlite --k 10 --as-of 2023-05-08T13:00:00Z

JUDGED is a judged-set file (JSONL; TREC qrels with --topics) or the name of a
judged set already kept in the label database. The run is saved there
($MEMLENS_LABELS_URL, else labels.sqlite in $MEMLENS_DATA_DIR).

table (default): one `metric value` line per metric, four decimals
(`recall@10 0.3708`). json: one object with run_id, complete and metrics (keyed
the same way). --trec-run also writes the run as `qid Q0 docid rank score tag`
lines for trec_eval or ranx. --as-of sets the clock the embedded store's recency
is computed at (ISO 8601; kept with the run, reused by `memlens runs resume`; see
docs/evaluation.md). Progress goes to stderr.

Exit status: 0 when the run completed, 1 when it stopped early or some questions
failed (the run is kept, incomplete; `memlens runs resume RUN_ID` asks the missing
and failed questions again), 2 on unusable input. A failed question (the store
timed out, sent an unreadable body, kept failing after retries, refused the key)
counts as returning nothing in the figures; the run says how many failed and of
which kind on stderr (json: ``failed`` and ``failures``). With --allow-failures a
run that asked every question exits 0 even when some failed.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dashboard.cli.arguments import finite, positive_int
from dashboard.cli.errors import CommandError, note
from dashboard.cli.run_report import add_allow_failures, print_progress, report
from dashboard.cli.store_options import add_store_options, open_configured, store_config


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser("eval", help="run a judged set against a store and save the run")
    parser.add_argument("judged", metavar="JUDGED", help="judged-set file (JSONL, or TREC qrels with --topics) or a kept set's name")
    parser.add_argument("--topics", metavar="FILE", help="TREC topics: message_id<TAB>query[<TAB>user_id]")
    add_store_options(parser)
    parser.add_argument("--weights", help="embedded store weights, e.g. semantic=1,recency=0")
    parser.add_argument("--as-of", metavar="TIME", default=None,
                        help="rank as of this time (ISO 8601, e.g. 2023-05-08T13:00:00Z): the clock of the embedded "
                        "store's recency; default now")
    parser.add_argument("--k", type=positive_int, required=True, help="memories asked for per question")
    parser.add_argument("--name", default="", help="the run's name")
    parser.add_argument("--set-name", default=None, help="name to keep the judged set under (default: the file's stem)")
    parser.add_argument("--floor", type=finite, default=None, help="also report the figures at this score floor")
    parser.add_argument("--keep-text", action="store_true", help="keep the query text with the run (off: ids and scores only)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--trec-run", metavar="FILE", help="also write the run in TREC run format")
    add_allow_failures(parser)
    parser.set_defaults(handler=run)
    return parser


def print_clock(store: Any) -> None:
    """Say what a clock (--as-of) leaves out of the store: memories created after it
    are not returned (connectors/embedded/clock.py), and a clock before every memory
    leaves every question empty."""
    counted = getattr(store, "clock_count", None)
    clock = counted() if callable(counted) else None
    if clock is not None:
        said = clock.note("the store's") or f"Ranked as of {clock.as_of.isoformat()}: every memory existed by then."
        note(said)


def run(args: argparse.Namespace) -> int:
    from connectors.base import ConnectorError
    from connectors.registry import fingerprint, public_config
    from dashboard.database import open_app_database
    from dashboard.evaluation import judged_sets
    from dashboard.evaluation.runs import RunRequest, RunStopped, start_run

    config = store_config(args, weights=args.weights, as_of=args.as_of)
    db = open_app_database(dict(os.environ))
    loaded = judged_sets.file_or_kept(args.judged, db, name=args.set_name, topics=args.topics)
    if loaded is None:
        raise CommandError(f"{args.judged} is neither a file nor a kept judged set")
    judged = loaded
    if judged.issues:  # a kept set has none: its file's bad lines were reported when it was kept
        print(judged.issue_report(), file=sys.stderr)
        print(f"{judged.source}: {len(judged.issues)} line(s) skipped; running the other {len(judged.questions)}", file=sys.stderr)
    try:
        store = open_configured(args.store, config)
    except ConnectorError as exc:
        raise CommandError(f"cannot open the store: {exc}") from exc
    request = RunRequest(
        judged=judged,
        store_name=args.store,
        fingerprint=fingerprint(args.store, config),
        settings=public_config(args.store, config),
        k=args.k,
        name=args.name,
        keep_text=args.keep_text,
    )
    print_clock(store)
    try:
        info = start_run(store, db, request, progress=print_progress)
        run_id = info.run_id
    except RunStopped as exc:  # what was answered is saved: its figures follow
        print(f"memlens eval: {exc}", file=sys.stderr)
        run_id = exc.run_id
    finally:
        store.close()
    return report(db, run_id, args.format, args.floor, args.trec_run, allow_failures=args.allow_failures)
