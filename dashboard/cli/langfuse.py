"""`memlens langfuse pull|push`: Langfuse's RETRIEVER observations as a log, and labels back.

    memlens langfuse pull [--url URL] [--from T] [--to T] --out LOG.jsonl
    memlens langfuse push [--url URL] [--labels DB] [--people-only | --judges-only]

`pull` writes the RETRIEVER observations started in [--from, --to) as a JSONL retrieval
log (an observation a turn, a document of its output a row, no document an empty
turn). `push` writes the label database's labels of those observations' documents
back as scores `relevance` on the observation, the memory id in their metadata; a
re-run replaces them. dashboard/logs/langfuse.py has the rules. The URL comes from
--url or $LANGFUSE_HOST, the keys from $LANGFUSE_PUBLIC_KEY and $LANGFUSE_SECRET_KEY
only, and neither key is ever printed. Exit status: 0 done, 2 unusable.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from dashboard.cli.errors import CommandError
from dashboard.cli.trace_labels import add_push_flags, labels_to_push, time_flag

URL_ENV = "LANGFUSE_HOST"
PUBLIC_KEY_ENV = "LANGFUSE_PUBLIC_KEY"
SECRET_KEY_ENV = "LANGFUSE_SECRET_KEY"


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser("langfuse", help="read RETRIEVER observations from Langfuse as a log; write labels back as scores")
    actions = parser.add_subparsers(dest="action", required=True)
    pull = actions.add_parser("pull", help="RETRIEVER observations as a JSONL retrieval log")
    push = actions.add_parser("push", help="labels of those observations' documents as Langfuse scores (name relevance)")
    for sub in (pull, push):
        sub.add_argument("--url", help=f"the Langfuse server (default ${URL_ENV}); keys from ${PUBLIC_KEY_ENV} and ${SECRET_KEY_ENV}")
    pull.add_argument("--from", dest="start", metavar="TIME", help="first observation start to read (ISO 8601, UTC when no zone)")
    pull.add_argument("--to", dest="end", metavar="TIME", help="read observations starting before this time")
    pull.add_argument("--out", required=True, metavar="LOG.jsonl", help="the retrieval log to write")
    add_push_flags(push)
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from dashboard.logs import langfuse
    from dashboard.logs.phoenix import write_log

    url = args.url or os.environ.get(URL_ENV, "")
    public, secret = os.environ.get(PUBLIC_KEY_ENV, ""), os.environ.get(SECRET_KEY_ENV, "")
    if not url:
        raise CommandError(f"give the Langfuse server: --url URL or ${URL_ENV}")
    if not public or not secret:
        raise CommandError(f"set ${PUBLIC_KEY_ENV} and ${SECRET_KEY_ENV} (the project's API keys)")
    secrets: list[str | None] = [public, secret]
    api = langfuse.client(url, public, secret)
    if args.action == "pull":
        rows = langfuse.read_observations(api, start=time_flag(args.start, "--from"), end=time_flag(args.end, "--to"), secrets=secrets)
        pulled = write_log(rows, args.out)
        print(f"langfuse pull: {pulled.turns:,} turn(s) ({pulled.empty_turns:,} with no document), {pulled.rows:,} row(s) -> {args.out}")
        if pulled.no_id:
            print(f"langfuse pull: {pulled.no_id:,} document(s) without an id written as bad rows; "
                  f"`memlens logs check {args.out}` names them", file=sys.stderr)
        return 0
    return _push(args, api, secrets)


def _push(args: argparse.Namespace, api: Any, secrets: list[str | None]) -> int:
    from dashboard.database.judge_labels import RELEVANT_GRADE
    from dashboard.logs import langfuse

    people, judges, ids = labels_to_push(args)
    observations = langfuse.lookup(api, ids, secrets)
    scores, pushed = langfuse.label_scores(people, judges, observations, relevant_grade=RELEVANT_GRADE)
    langfuse.push_scores(api, scores, secrets)
    print(
        f"langfuse push: {pushed.human + pushed.llm:,} score(s) '{langfuse.SCORE}' on {pushed.observations:,} observation(s) "
        f"({pushed.human:,} from people, {pushed.llm:,} from judges)"
    )
    if pushed.not_found:
        print(f"langfuse push: {len(pushed.not_found):,} label(s) not sent: their pair is no document of a RETRIEVER observation", file=sys.stderr)
    return 0
