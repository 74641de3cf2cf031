"""`memlens monitor --connect URL --table NAME`: the monitor on the team's own engine.

The per-window aggregates run where the log lives (dashboard.monitoring.warehouse,
on ibis: the `memlens[warehouse]` extra); only per-window summaries come back, and
the baseline, the alerts, the output and the exit status are the file run's
(dashboard.cli.monitor), and so is the shadow side by side where the table carries
a shadow config's decisions (counted in the engine too). The URL, which may hold a password, comes from --connect or
$MEMLENS_MONITOR_CONNECT (better for cron: a command line is visible to every user
of the machine) and is never printed: errors name the engine by its scheme only.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connectors.common.redaction import redact_text
from dashboard.cli.errors import CommandError, warning
from dashboard.monitoring import report, turn_floor
from dashboard.monitoring.alerts import MonitorResult, Settings, assess
from dashboard.monitoring.windows import LOGGED_DECISIONS

if TYPE_CHECKING:
    from dashboard.monitoring.decisions import ShadowReport

CONNECT_ENV = "MEMLENS_MONITOR_CONNECT"


@dataclass
class Found:
    result: MonitorResult
    source: str  # "table NAME (engine)", for the header line
    document: dict[str, Any]  # the JSON report
    shadow: ShadowReport | None = None  # the shipped config and the candidate, where the table carries a shadow's decisions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    engine = parser.add_argument_group("on the team's engine (pip install 'memlens[warehouse]')")
    engine.add_argument(
        "--connect",
        metavar="URL",
        help=f"the engine holding the log: postgresql://..., duckdb:///file.db, ... (default ${CONNECT_ENV}); never printed",
    )
    engine.add_argument("--table", metavar="NAME", help="the table or view with the log's columns (schema.table allowed)")
    engine.add_argument(
        "--column",
        action="append",
        metavar="FIELD=COLUMN",
        help="read a log field from another column, e.g. timestamp=created_at (fields: message_id, memory_id, score, "
        "timestamp, and floor, floor_segment for each turn's logged floor, kept, rule for the agent's logged decisions, "
        "shadow_rule, shadow_kept for a shadow config's)",
    )


def wanted(args: argparse.Namespace) -> bool:
    """Whether this run reads an engine's table rather than log files."""
    return bool(args.connect or args.table or args.column)


def run(args: argparse.Namespace, settings: Settings) -> Found:
    """The result of a run on the engine; CommandError (exit status 2) saying why not."""
    from dashboard.monitoring import warehouse  # ibis only for a run that connects

    url = args.connect or os.environ.get(CONNECT_ENV, "")
    if not url:
        raise CommandError(f"--table needs an engine: --connect URL or ${CONNECT_ENV}")
    if not args.table:
        raise CommandError("--connect needs --table NAME: the table or view with the log's columns")
    # no floor: each turn at the floor its rows logged, as a file run without one
    floor = settings.floor
    engine = url.partition("://")[0].lower() or "?"
    try:
        columns = warehouse.parse_columns(args.column)
        con = warehouse.connect(url)
        try:
            table = warehouse.open_table(con, args.table, columns, logged=floor is None)
            summary = warehouse.summarize(table, floor, settings.window, columns, args.table)
        finally:
            con.disconnect()
    except warehouse.WarehouseError as exc:
        # the module redacts what it raises; the URL's parts once more, whatever the engine
        # said (and not chained: the engine's own exception may name them)
        raise CommandError(redact_text(str(exc), warehouse.url_secrets(url))) from None
    # named as the file run names a bad row (file, line, field), a table having no lines
    issues = [
        f"table {args.table}: {count:,} row(s), field {name!r}: {warehouse.PROBLEMS[name]}" for name, count in summary.bad_fields.items()
    ]
    for line in issues:
        print(f"  {line}", file=sys.stderr)
    if summary.bad_rows:
        warning(f"{summary.bad_rows:,} bad row(s) skipped; the other rows are used")
    if summary.floors is not None:
        settings.floor_words = turn_floor.describe_floors(summary.floors, "its logged floor")
    if summary.decisions is not None:
        # the agent's own kept or dropped per row, in the file run's words
        settings.counting, settings.floor_words = LOGGED_DECISIONS, summary.decisions.words()
    if not summary.windows:
        raise CommandError(f"no turn with a timestamp in table {args.table} ({summary.counts['turns']:,} turns read): nothing to watch")
    result = assess(summary.windows, settings, lambda windows: summary.histograms)
    document = report.as_json(result, files=[], issues=issues, counts=summary.counts)
    document["engine"] = {"kind": engine, "table": args.table, "summary_rows": summary.summary_rows}
    return Found(result, f"table {args.table} ({engine})", document, summary.shadow)
