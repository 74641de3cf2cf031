"""`memlens import MEMORIES.jsonl --db FILE`: build or update an embedded store file.

    memlens import memories.jsonl --db store.sqlite

One memory per line (id, user_id, text, created_at or age_days, optional
importance, usage_count, metadata). Progress of the encoding goes to stderr, and
every bad line is named there (file, line, field); the good lines are imported, an
unchanged text is not encoded again. Exit status 1 when nothing could be imported,
2 when some lines were rejected (the good lines are imported all the same, as
`memlens logs check` exits 2 for bad rows), 0 when every line was imported.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from dashboard.cli.errors import CommandError

EXIT_NOTHING = 1
EXIT_REJECTED = 2  # some lines rejected, the others imported


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "import",
        help="build or update an embedded store file from memory JSONL",
        description="Import memories (JSONL) into an embedded store file, encoding new or changed texts.",
    )
    parser.add_argument("memories", metavar="MEMORIES.jsonl", help="memory JSONL file")
    parser.add_argument("--db", required=True, metavar="FILE", help="the embedded store's SQLite file (created if missing)")
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    from connectors.base import ConnectorError
    from connectors.registry import open_embedded_file

    def progress(done: int, total: int) -> None:
        print(f"\rencoding {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)

    try:
        store = open_embedded_file(args.db)
        try:
            report = store.import_jsonl(args.memories, progress=progress)
        finally:
            store.close()
    except ConnectorError as exc:  # nothing imported: exit 1, as for a file with no usable line
        raise CommandError(str(exc), exit_status=EXIT_NOTHING) from exc
    for issue in report.issues:
        print(issue, file=sys.stderr)  # "FILE: line N, field F: what was wrong"
    print(
        f"imported {report.imported} memories into {args.db} ({report.reencoded} encoded)"
        + (f"; {len(report.issues)} line(s) rejected" if report.issues else "")
    )
    if not report.imported:
        return EXIT_NOTHING
    if report.issues:
        print(
            f"memlens import: {len(report.issues)} line(s) rejected (listed above); the other lines were "
            f"imported; exit status {EXIT_REJECTED}",
            file=sys.stderr,
        )
        return EXIT_REJECTED
    return 0
