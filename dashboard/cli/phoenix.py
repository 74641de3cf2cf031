"""`memlens phoenix pull|push`: a running Arize Phoenix as a log source, and labels back.

    memlens phoenix pull --project P [--url URL] [--from T] [--to T] [--limit N] --out LOG.jsonl
    memlens phoenix push --project P [--url URL] [--labels DB] [--people-only | --judges-only]

`pull` writes the project's retriever spans in [--from, --to) as a JSONL retrieval log
(one span a turn, one document a row, a span with no documents an empty turn): the
Label page, `memlens judge`, `memlens eval` and `memlens monitor` read it like any log.
`push` writes the label database's labels of those spans back to Phoenix as document
annotations `relevance` (people HUMAN, judges LLM); a re-run replaces them.
dashboard/logs/phoenix.py has the rules. The URL comes from --url or
$MEMLENS_PHOENIX_URL, the API key (when the server wants one) from $PHOENIX_API_KEY
only, and it is never printed. Exit status: 0 done, 2 unusable (Phoenix unreachable or
refusing, an answer that is not Phoenix's span table, --out not writable, no such label
database, a bad time).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dashboard.cli.errors import CommandError
from dashboard.cli.trace_labels import add_push_flags, labels_to_push, time_flag

URL_ENV = "MEMLENS_PHOENIX_URL"
API_KEY_ENV = "PHOENIX_API_KEY"


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "phoenix", help="read retriever spans from a running Phoenix as a log; write labels back as document annotations"
    )
    actions = parser.add_subparsers(dest="action", required=True)
    pull = actions.add_parser("pull", help="a project's retriever spans as a JSONL retrieval log")
    push = actions.add_parser("push", help="labels of a project's spans as Phoenix document annotations (name relevance)")
    for sub in (pull, push):
        sub.add_argument("--project", required=True, help="the Phoenix project (name or id)")
        sub.add_argument("--url", help=f"the Phoenix server, e.g. http://localhost:6006 (default ${URL_ENV}); key from ${API_KEY_ENV}")
    pull.add_argument("--from", dest="start", metavar="TIME", help="first span start to read (ISO 8601, UTC when no zone)")
    pull.add_argument("--to", dest="end", metavar="TIME", help="read spans starting before this time")
    pull.add_argument("--limit", type=int, default=100_000, help="most spans read (default 100000)")
    pull.add_argument("--out", required=True, metavar="LOG.jsonl", help="the retrieval log to write")
    add_push_flags(push)
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from dashboard.logs import phoenix

    url = args.url or os.environ.get(URL_ENV, "")
    if not url:
        raise CommandError(f"give the Phoenix server: --url URL or ${URL_ENV}")
    key = os.environ.get(API_KEY_ENV) or None
    secrets = [key]
    server = phoenix.client(url, key)
    if args.action == "pull":
        return _pull(args, server, secrets)
    return _push(args, server, secrets)


def _pull(args: argparse.Namespace, server: Any, secrets: list[str | None]) -> int:
    from dashboard.logs import phoenix

    start, end = time_flag(args.start, "--from"), time_flag(args.end, "--to")
    rows = phoenix.read_spans(server, args.project, start=start, end=end, limit=args.limit, secrets=secrets)
    pulled = phoenix.write_log(rows, args.out)
    print(
        f"phoenix pull: {pulled.turns:,} turn(s) ({pulled.empty_turns:,} with no document), {pulled.rows:,} row(s) "
        f"from project {args.project} -> {args.out}"
    )
    if pulled.no_id:
        print(f"phoenix pull: {pulled.no_id:,} document(s) without an id written as bad rows; "
              f"`memlens logs check {args.out}` names them", file=sys.stderr)
    return 0


def _push(args: argparse.Namespace, server: Any, secrets: list[str | None]) -> int:
    from dashboard.database.judge_labels import RELEVANT_GRADE
    from dashboard.logs import phoenix

    people, judges, span_ids = labels_to_push(args)
    positions = phoenix.document_positions(server, args.project, span_ids, secrets)
    rows, pushed = phoenix.label_annotations(people, judges, positions, relevant_grade=RELEVANT_GRADE)
    phoenix.push_annotations(server, rows, secrets)
    print(
        f"phoenix push: {pushed.human + pushed.llm:,} annotation(s) '{phoenix.ANNOTATION}' on {pushed.spans:,} span(s) "
        f"of project {args.project} ({pushed.human:,} HUMAN, {pushed.llm:,} LLM)"
    )
    if pushed.not_found:
        print(
            f"phoenix push: {len(pushed.not_found):,} label(s) not sent: their pair is no document of a retriever span of "
            f"project {args.project}",
            file=sys.stderr,
        )
    return 0
