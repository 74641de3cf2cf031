"""`memlens write-audit CONVERSATIONS.jsonl --store mem0 --config FILE`: what the store's
write path kept of each message.

    memlens write-audit chats.jsonl --store mem0 --config mem0.yaml
    memlens write-audit chats.jsonl --store mem0 --config default.yaml --compare custom.yaml --compare raw.yaml
    memlens write-audit chats.jsonl --store mem0 --config mem0.yaml --judged judged.jsonl --format json

Each configuration replays the messages into a fresh store of its own (a new local
Qdrant collection in a temporary folder; the team's store is never written), with
the config's LLM, embedder and prompts, ``infer`` as the file's top-level ``infer``
key says (default true). Mem0 sends the messages to that LLM as it does in the
agent; nothing else leaves the machine. The output holds ids, events and counts;
``--include-text`` adds each stored memory's text. ``--judged``: a judged set whose
relevant ids are message ids, for storage recall (dashboard/evaluation/write_audit.py).

Exit status: 0; 2 when the conversations, a config or the judged set cannot be used,
or Mem0 (or its LLM) failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dashboard.cli.errors import CommandError, warning


def add_parser(commands: Any) -> argparse.ArgumentParser:
    from connectors.registry import WRITE_AUDIT_MODULES

    parser = commands.add_parser("write-audit", help="what a store's write path kept of each message of a conversation")
    parser.add_argument("conversations", metavar="CONVERSATIONS.jsonl",
                        help="one message a line: message_id, user_id, content, optional role and timestamp")
    parser.add_argument("--store", choices=tuple(WRITE_AUDIT_MODULES), required=True, help="the store whose write path is audited")
    parser.add_argument("--config", metavar="FILE", required=True,
                        help="the Mem0 config (YAML/JSON); a top-level infer: false stores messages as they are")
    parser.add_argument("--compare", metavar="FILE2", action="append", default=[],
                        help="another config run on the same messages, side by side (repeatable)")
    parser.add_argument("--judged", metavar="JUDGED.jsonl",
                        help="a judged set whose relevant ids are message ids: storage recall per config")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--include-text", action="store_true",
                        help="also show the text of each stored memory (off: ids, events and counts only)")
    parser.set_defaults(handler=run)
    return parser


def _progress(name: str) -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        print(f"\r{name}: messages {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    return show


def _names(paths: list[str]) -> list[str]:
    """A short, distinct name per config: its file name, or its path when two share one."""
    stems = [Path(p).name for p in paths]
    return [p if stems.count(s) > 1 else s for p, s in zip(paths, stems, strict=True)]


def run(args: argparse.Namespace) -> int:
    from connectors.base import ConnectorError
    from connectors.registry import write_audit
    from dashboard.browse import nearest_by_embedding
    from dashboard.evaluation import write_audit as audit
    from dashboard.judged import read_questions

    messages, issues = audit.read_conversations(args.conversations)
    for issue in issues:
        warning(str(issue))
    if not messages:
        raise CommandError(f"{args.conversations}: no usable message")
    questions = None
    if args.judged:
        questions, problems = read_questions(args.judged)
        for problem in problems:
            warning(str(problem))
        if not questions:
            raise CommandError(f"{args.judged}: no usable question")
    paths = [args.config, *args.compare]
    configs = [write_audit(args.store, "audit_config")(path) for path in paths]
    rows = [(m.message_id, m.user_id, m.role, m.content) for m in messages]
    audits = []
    for name, (config, infer) in zip(_names(paths), configs, strict=True):
        with tempfile.TemporaryDirectory(prefix="memlens-write-audit-") as folder:
            try:
                replayed, store = write_audit(args.store, "replay")(config, infer, rows, Path(folder), progress=_progress(name))
            except ConnectorError as exc:
                raise CommandError(f"{name}: {exc}") from exc
            try:
                result = audit.ConfigAudit(name, infer, replayed)
                if questions is not None:

                    def nearest(message: audit.Message, store: Any = store) -> float | None:
                        found = nearest_by_embedding(None, store.query(message.content, user_id=message.user_id, k=1))
                        return found.similarity if found else None

                    result.recall = audit.storage_recall(questions, messages, result, nearest)
            except ConnectorError as exc:
                raise CommandError(f"{name}: {exc}") from exc
            finally:
                store.close()
        audits.append(result)
    if args.format == "json":
        print(json.dumps({"conversations": len(messages), "skipped_lines": len(issues),
                          "configs": [a.summary(args.include_text) for a in audits]}))
    else:
        print("\n".join(audit.table_lines(audits, args.include_text)))
    for result in audits:
        if result.recall is not None and result.recall.missing_ids:
            warning(f"{len(result.recall.missing_ids)} relevant id(s) of the judged set are no "
                    f"message of {args.conversations}")
            break
    return 0
