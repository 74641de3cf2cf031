"""`memlens monitor LOG...`: the shipped floor over production retrieval logs, for cron and CI.

    memlens monitor logs/2026-01-*.parquet [--floor-config memlens-floor.json | --floor X] [--window 1h|1d|1w]
        [--baseline FROM..TO | --baseline-windows N] [--format table|json] [--fail-on-alert] [--webhook URL]
        [--judge JUDGE.toml --send-text --sample N (--db FILE | --store NAME --config FILE) ...]
    memlens monitor --connect URL --table NAME [--column FIELD=COLUMN ...] [every flag above but --judge]

The second form runs the per-window aggregates on the team's own engine (PostgreSQL,
DuckDB, Spark, ClickHouse, BigQuery, Snowflake, Trino through ibis: the
`memlens[warehouse]` extra) and brings back only per-window summaries
(dashboard/cli/monitor_connect.py); everything after that is the same.

The floor each turn is counted at (dashboard/monitoring/turn_floor.py): with no
--floor and no --floor-config, the floor the agent logged for the turn (the log's
`floor` column; a log without it exits 2 asking for one of the two); with
--floor-config, the config's floor for the turn's user or store, else its global
floor, as the agent applies it (its score space checked against the log's stores);
with --floor X, X for every turn ("what if the floor were X").

Per window: turns, rows, the share of turns with no memory at the floor, memories
kept per turn, the top-1 quantiles, the share of turns whose top-1 is near the floor,
and the top-1 drift against the baseline; then `note:` lines (a window with too few
turns is said, not tested) and one `alert:` line per alert (docs/monitoring.md). With
--judge, the kept precision of a judged sample per window too (monitor_precision.py);
without, a note says once that relevance is not being watched.

Bad rows go to stderr named by file, line and field, and the good rows are used.
Exit status: 0 no alert (or alerts without --fail-on-alert), 1 alerts with
--fail-on-alert, 2 unusable input (no such file, an unreadable file or floor config,
no turn with a timestamp), 3 a judge whose grades fail the checks `memlens judge`
runs (its kept precision is then shown as untrusted, after the rest of the report).
A webhook (--webhook, $MEMLENS_MONITOR_WEBHOOK or the secrets file) gets one JSON
message when there are alerts; its URL is never printed, and a failed post is
reported on stderr without changing the exit status.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dashboard.cli import monitor_connect, monitor_precision
from dashboard.cli.arguments import finite, positive_int, share
from dashboard.cli.errors import CommandError, note, warning
from dashboard.floor_config import FloorConfig
from dashboard.monitoring import decisions, report, rule_sql, turn_floor, webhook
from dashboard.monitoring.alerts import (
    DEFAULT_ALPHA,
    DEFAULT_BASELINE_WINDOWS,
    DEFAULT_MARGIN,
    DEFAULT_MIN_TURNS,
    BaselineRangeError,
    MonitorResult,
    Settings,
    monitor,
    parse_range,
)
from dashboard.monitoring.precision import NOT_WATCHED
from dashboard.monitoring.relation import TURNS, count_at_config, expand_paths, open_logs, score_direction
from dashboard.monitoring.windows import LOGGED_DECISIONS, RULE_DECISIONS, WINDOWS

EXIT_ALERT = 1
EXIT_UNTRUSTED_JUDGE = 3  # as `memlens judge` exits on a degenerate run (dashboard/cli/judge.py)
MAX_ISSUES_PRINTED = 100


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser(
        "monitor",
        help="watch a shipped floor over production logs: no-memory share and top-1 drift per window, with alerts",
        description="Windows of turns from retrieval logs (JSONL, CSV, Parquet, OTLP JSON, the app's read log) "
        "against a baseline; alert when the share of turns with no memory jumps or the top-1 score drifts.",
    )
    parser.add_argument("logs", nargs="*", metavar="LOG", help="log files, folders or globs (quote a glob for cron)")
    monitor_connect.add_arguments(parser)
    floor = parser.add_mutually_exclusive_group()
    floor.add_argument("--floor", type=finite, help="count every turn at this floor: what if the floor were X")
    floor.add_argument(
        "--floor-config",
        metavar="FLOOR.json",
        help="the floor file Calibrate or `memlens calibrate --floor-config-out` writes: each turn at its user's or "
        "store's floor, else the global one (default without either: each turn at the floor the log says was applied)",
    )
    parser.add_argument("--window", choices=tuple(WINDOWS), default="1d", help="window width (default 1d)")
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument("--baseline", metavar="FROM..TO", help="baseline dates, e.g. 2026-01-01..2026-01-07 (UTC)")
    baseline.add_argument(
        "--baseline-windows",
        type=positive_int,
        metavar="N",
        help=f"baseline: the first N windows (default {DEFAULT_BASELINE_WINDOWS}, when the floor config's label dates "
        "are not in the log)",
    )
    parser.add_argument(
        "--margin", type=share, default=DEFAULT_MARGIN, help="no-memory share rise that matters, as a share (default 0.05: 5 points)"
    )
    parser.add_argument("--alpha", type=share, default=DEFAULT_ALPHA, help="family-wise significance level (default 0.05)")
    parser.add_argument(
        "--min-turns", type=positive_int, default=DEFAULT_MIN_TURNS, help=f"fewest turns a window needs to be tested (default {DEFAULT_MIN_TURNS})"
    )
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("--fail-on-alert", action="store_true", help="exit 1 when a window alerts")
    parser.add_argument(
        "--webhook", metavar="URL", help=f"post the alerts here (default ${webhook.WEBHOOK_ENV} or the secrets file); never printed"
    )
    monitor_precision.add_arguments(parser)
    parser.set_defaults(handler=run)
    return parser


def run(args: argparse.Namespace) -> int:
    if not args.logs and not monitor_connect.wanted(args):
        raise CommandError("give log files (LOG...) or an engine's table (--connect URL --table NAME)")
    config = FloorConfig.load(args.floor_config) if args.floor_config else None
    rule = turn_floor.from_config(config) if config is not None else None
    if args.floor is not None:
        floor: float | None = float(args.floor)
    elif config is not None:
        floor = None if rule is not None else config.floor
    else:
        floor = None  # each turn at its logged floor
        rule = turn_floor.LOGGED
    try:
        baseline_range = parse_range(args.baseline) if args.baseline else None
    except BaselineRangeError as exc:
        raise CommandError(f"--baseline {exc}") from exc
    settings = Settings(
        floor=floor,
        window=args.window,
        margin=args.margin,
        alpha=args.alpha,
        min_turns=args.min_turns,
        baseline_windows=args.baseline_windows or DEFAULT_BASELINE_WINDOWS,
        baseline_range=baseline_range,
        config_range=config.label_range if config is not None and not args.baseline_windows else None,
    )
    # a floor file's turn rule: each turn's decisions computed from its rows (rule_sql.py)
    decide = config.rule if config is not None and args.floor is None else None
    if monitor_connect.wanted(args):
        if args.logs:
            raise CommandError("give log files or --connect, not both")
        if args.judge:
            raise CommandError("--judge grades a sample of the log's rows: give log files, not --connect")
        if decide is not None:
            raise CommandError(
                f"the floor file's {decide.describe()} is applied to log files only (its turn features are DuckDB window "
                "functions over the files): run on the log files, or give --floor"
            )
        notes: list[str] = turn_floor.config_notes(config) if config is not None else []
        if floor is None and config is not None:
            # the engine's summary is one floor's: said, not hidden
            settings.floor = config.floor
            notes.append(
                f"the floor config's floors per user and store are not applied on --connect: every turn is counted at "
                f"its global floor {config.floor!r}; run on the log files to count each turn at its own"
            )
        found = monitor_connect.run(args, settings)
        found.result.notes[:0] = notes
        found.result.notes.append(NOT_WATCHED)  # as a file run without --judge says it
        return emit(args, found.result, found.source, found.document, None, found.shadow)
    files = expand_paths(args.logs)
    # the command watches one floor per turn: count what each turn keeps while
    # building the turns, instead of keeping every score for a floor that never moves
    if decide is not None:
        try:
            rule_sql.check_loggable(decide)
        except rule_sql.RuleNotInLog as exc:
            raise CommandError(str(exc)) from None
    logs = open_logs(files, scores=False, floor=floor, turn_floor=rule, decide=decide)
    issues = [str(issue) for issue in logs.issues]
    for line in issues[:MAX_ISSUES_PRINTED]:
        print(f"  {line}", file=sys.stderr)
    if len(issues) > MAX_ISSUES_PRINTED:
        print(f"  ... and {len(issues) - MAX_ISSUES_PRINTED:,} more: `memlens logs check FILE` lists every one", file=sys.stderr)
    if issues:
        warning(f"{logs.bad_rows:,} bad row(s) skipped; the other rows are used")
    where = f"{len(files):,} log file(s)" if len(files) != 1 else files[0]
    notes = []
    if config is not None:
        # the turns were built with the config's floors and rule above; the page applies it the same way
        counted = count_at_config(logs.con, config, where, turns=TURNS)
        notes, settings.floor_words = counted.notes, counted.words
        if counted.decide is not None:
            # the judged sample keeps what the windows keep: the rule's decisions (precision.sample_turns)
            settings.counting, settings.rule = RULE_DECISIONS, counted.decide
    elif floor is None:
        logged = decisions.logged_decisions(logs.con, TURNS)
        if logged is None or logged.without:
            floors = turn_floor.logged_floors(logs.con, TURNS, where)
            settings.floor_words = turn_floor.describe_floors(floors, "its logged floor")
        if logged is not None:
            # the agent's own kept or dropped per row, not a score against the floor
            settings.counting, settings.floor_words = LOGGED_DECISIONS, logged.words()
    result = monitor(logs.con, settings)
    result.notes[:0] = notes
    if said := score_direction(logs.con).warning():
        warning(said)
    counts = logs.counts()
    if not result.windows:
        raise CommandError(f"no turn with a timestamp in {len(files)} file(s) ({counts['turns']:,} turns read): nothing to watch")
    shadow = decisions.shadow_windows(logs.con, settings.window) if decisions.has_shadow(logs.con, TURNS) else None
    judged = None
    if args.judge:
        # with a shadow config, the judge grades what either side kept, and each side's kept precision is compared
        judged = monitor_precision.run_judged(args, logs, result, shadow)
    else:
        result.notes.append(NOT_WATCHED)  # said once, in the notes of the table and of the JSON
    document = report.as_json(result, files=files, issues=issues, counts=counts)
    return emit(args, result, len(files), document, judged, shadow)


def emit(
    args: argparse.Namespace, result: MonitorResult, source: int | str, document: dict[str, Any], judged: Any,
    shadow: decisions.ShadowReport | None = None,
) -> int:
    """The report (table or JSON), the webhook and the exit status: the same for log
    files (`source` their count) and an engine's table (`source` in words)."""
    precision_alerts = judged.alerts if judged is not None else []
    if args.format == "json":
        document["precision"] = judged.document if judged is not None else None
        document["alerts"] += [alert.as_dict() for alert in precision_alerts]
        if shadow is not None:  # only where the rows carry a shadow config's decisions
            document["shadow"] = shadow.as_dict()
        print(json.dumps(document, indent=2, default=str))
    else:
        lines = report.text_lines(result, source)
        if shadow is not None:  # under the windows' table, before the notes and alerts
            below_table = len(report.header_lines(result, source)) + len(report.table_lines(result))
            lines[below_table:below_table] = decisions.shadow_lines(shadow)
        if judged is not None:
            if not result.alerts:
                lines.pop()  # "no alert: ..." goes last, counting both sides, if still true
            lines += judged.lines + [alert.line() for alert in precision_alerts]
            if not result.alerts and not precision_alerts:
                lines.append(report.closing_line(result, (judged.tested, judged.why)))
        print("\n".join(lines))
    alerts = len(result.alerts) + len(precision_alerts)
    url = webhook.webhook_url(args.webhook)
    if url and alerts:
        problem = webhook.post(url, report.webhook_message(result, source, precision_alerts))
        if problem:
            warning(f"webhook: {problem}; the alerts are above")
        else:
            note(f"webhook: posted {alerts} alert(s)")
    if judged is not None and judged.untrusted is not None:
        # after the report and the webhook: the no-memory side's figures and alerts still stand
        raise CommandError(f"{judged.untrusted}; its kept precision is untrusted", exit_status=EXIT_UNTRUSTED_JUDGE)
    return EXIT_ALERT if alerts and args.fail_on_alert else 0
