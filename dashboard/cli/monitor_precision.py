"""`memlens monitor ... --judge JUDGE.toml --send-text --sample N`: the precision side
of the monitor (dashboard/monitoring/precision.py), its options and its output.

    memlens monitor LOG... --floor-config F --judge umbrela.toml --send-text --sample 20
        (--db FILE | --store NAME --config FILE) [--precision-target 0.85] [--precision-margin 0.1]
        [--seed 0] [--max-pairs N] [--labels DB]

Per window, N sampled turns' top 3 kept memories are graded (query text from the
log's ``query`` column, memory text read from the store by id); grades are cached in
the app database, so a second run on the same logs sends no request.

The sample's grades, cached and new, go through the checks `memlens judge` runs
(dashboard/judging/run_check.py). A judge that fails them (one grade for every pair,
every reason the prompt's placeholder or the same, no usable answer) has its kept
precision shown as untrusted, compared with nothing, and the run exits 3 with the
reason (``EXIT_DEGENERATE``, as `memlens judge`'s), after the rest of the report.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from dashboard.cli.arguments import positive_int, share
from dashboard.cli.store_options import add_store_options, open_store
from dashboard.monitoring.precision import DEFAULT_PRECISION_MARGIN, DEFAULT_SEED, TOP, PrecisionAlert
from dashboard.monitoring.windows import window_label


def add_arguments(parser: argparse.ArgumentParser) -> None:
    judged = parser.add_argument_group("the precision side (a judge grades a sample of kept memories per window)")
    judged.add_argument("--judge", metavar="JUDGE.toml", help="the judge's config (as `memlens judge` takes); without it relevance is not watched")
    judged.add_argument("--send-text", action="store_true", help="allow query and memory text to go to the judge's model")
    judged.add_argument("--sample", type=positive_int, default=20, metavar="N", help="turns judged per window (default 20)")
    judged.add_argument("--precision-target", type=share, metavar="P", help="also alert when a window's kept precision is surely under P, e.g. 0.85")
    judged.add_argument(
        "--precision-margin", type=share, default=DEFAULT_PRECISION_MARGIN,
        help="kept-precision drop that matters, as a share (default 0.1: 10 points)",
    )
    judged.add_argument("--seed", type=int, default=DEFAULT_SEED, help="the sample's seed (default 0): the same sample every run")
    judged.add_argument("--max-pairs", type=positive_int, metavar="N", help="grade at most N new pairs this run (the rest next run)")
    judged.add_argument(
        "--stale-after", type=positive_int, metavar="DAYS",
        help="count kept memories older than DAYS at the turn that the judge rates relevant (stale but convincing)",
    )
    add_store_options(judged, db_help="the embedded store's SQLite file (where memory text is read)")
    judged.add_argument("--labels", default=None, help="the app database: a SQLite file or PostgreSQL URL (default: $MEMLENS_LABELS_URL, else the data directory)")


@dataclass
class JudgedResult:
    lines: list[str] = field(default_factory=list)
    alerts: list[PrecisionAlert] = field(default_factory=list)
    document: dict[str, Any] = field(default_factory=dict)
    tested: int = 0  # windows tested for kept precision
    why: str = ""  # why the others were not, in parentheses ("" when it needs no word)
    untrusted: str | None = None  # the judge failed its checks: why (the run exits 3)


def run_judged(args: argparse.Namespace, logs: Any, result: Any, shadow: Any = None) -> JudgedResult:
    """The judged sample per window; with `shadow` (decisions.ShadowReport), each
    side's kept precision on its own sample too, written into the report
    (shadow_precision.judge_sides), the union of both sides' pairs graded once."""
    from connectors.common.errors import MemlensError
    from connectors.common.paths import data_dir
    from dashboard.cli.errors import CommandError, warning
    from dashboard.database import AppDatabase, app_database_target
    from dashboard.database.model import LabelStoreError
    from dashboard.judging.judges import open_judge
    from dashboard.monitoring import precision, sample_grades, shadow_precision
    from dashboard.monitoring.relation import turn_queries

    settings = result.settings
    client = None
    try:
        judge, client = open_judge(args.judge, os.environ, send_text=args.send_text)
        store, store_id = open_store(args)
    except MemlensError:
        if client is not None:
            client.close()
        raise
    try:
        db = AppDatabase(args.labels or app_database_target(dict(os.environ), data_dir()))
    except (LabelStoreError, OSError) as exc:
        store.close()
        raise CommandError(f"cannot open the app database: {exc}") from exc
    try:
        # the sample keeps what the windows keep: the floor, the logged decisions or the floor file's rule
        sampled, eligible = precision.sample_turns(
            logs.con, settings.floor, settings.window, args.sample, args.seed, turns=settings.turns, counting=settings.counting, rule=settings.rule
        )
        shadowed = shadow_precision.shadow_sample(logs.con, settings.floor, settings.window, args.sample, args.seed) if shadow is not None else []
        if client is not None:
            print(f"sending query and memory text to {client.config.host} ({client.config.model})", file=sys.stderr)
        run = sample_grades.grade_sample(
            sampled + shadowed, lambda ids: turn_queries(logs.con, ids), judge=judge, db=db, store=store, store_id=store_id,
            concurrency=client.config.concurrency if client is not None else 1, max_pairs=args.max_pairs,
        )
        created = sample_grades.creation_times(run, sampled, store, client.config.concurrency if client is not None else 1) if args.stale_after else None
        from dashboard.labels.counted import counted

        found = counted(db, environ=dict(os.environ))  # people's labels by the one rule, adjudications applied
        agreement = None
        if found.raw:
            from dashboard.judging.judge_agreement import judge_agreement

            agreement = judge_agreement(
                found.raw, db.judge_labels.find(source=judge.source), judge.source, resamples=200, resolved=found.labels
            )
    finally:
        store.close()
        db.close()
        if client is not None:
            client.close()
    stale_after = timedelta(days=args.stale_after) if args.stale_after else None
    windows = precision.window_precision(
        sampled, eligible, run.grades, lambda start: window_label(start, settings.window), stale_after=stale_after, created=created
    )
    check = run.check(judge.source)
    for problem in check.problems:
        if not problem.whole_run:  # a problem in part of the run is a warning, as `memlens judge` says it
            warning(problem.message)
    out = JudgedResult()
    if check.degenerate:
        # grades that say nothing are no baseline: nothing is compared, nothing alerts
        out.untrusted = "; ".join(p.message for p in check.problems if p.whole_run)
        for w in windows:
            w.in_baseline = w.start in {b.start for b in result.baseline.windows}
        baseline = None
        out.why = " (its judge failed its checks)"
    else:
        baseline, out.alerts = precision.precision_alerts(
            windows, [w.start for w in result.baseline.windows], margin=args.precision_margin, alpha=settings.alpha, target=args.precision_target
        )
        out.tested = sum(w.tested for w in windows)
        if baseline is None:
            out.why = " (no graded pair in the baseline)"
    out.lines = _lines(judge.source, args, windows, baseline, run, agreement, out.untrusted, precision.eligible_words(settings.counting))
    if shadow is not None:
        sides = shadow_precision.judge_sides(shadow, shadowed, run.grades, seed=args.seed, trusted=out.untrusted is None)
        shadow.judged = {"judge": judge.source, "trusted": out.untrusted is None, "sample": args.sample, "seed": args.seed, "top": TOP}
        shadow.judged_lines = shadow_precision.shadow_precision_lines(
            shadow, sides, judge.source, args.sample, args.seed, out.untrusted
        )
    out.document = {
        "judge": judge.source,
        "trusted": out.untrusted is None,
        "problems": check.warnings(),
        "sample": args.sample,
        "seed": args.seed,
        "top": TOP,
        "stale_after_days": args.stale_after,
        "windows": [_window_dict(w, out.untrusted) for w in windows],
        "baseline": baseline.as_dict() if baseline is not None else None,
        "grading": {"graded": run.graded, "cached": run.cached, "failed": run.failed, "over_budget": run.over_budget, "no_query": run.no_query},
        "agreement": agreement.headline() if agreement is not None else None,
        "alerts": [a.as_dict() for a in out.alerts],
    }
    return out


def _window_dict(window: Any, untrusted: str | None) -> dict[str, Any]:
    shown = window.as_dict()
    if untrusted is not None:  # a consumer of the JSON must not read the judge's 0.0% as a measurement
        shown.update(precision=None, interval=None, tested=False, p_value=None)
    return shown


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _lines(
    source: str, args: argparse.Namespace, windows: list, baseline: Any, run: Any, agreement: Any, untrusted: str | None,
    eligible: str,
) -> list[str]:
    """`eligible`: the turns the sample is drawn from, in words (precision.eligible_words)."""
    lines = [
        "",
        f"kept precision, judged by {source}: the top {TOP} kept memories of {args.sample} sampled turn(s) per window "
        f"(stratified by top-1 band, seed {args.seed}), drawn from its kept turns ({eligible}, where the table above "
        "counts every turn)",
    ]
    if untrusted is not None:
        lines.append(f"UNTRUSTED (not measurements: nothing is compared with them or alerted on): {untrusted}")
    # `kept turns`, not `turns`: the table above has a `turns` column of every turn in the window
    lines.append(f"{'window':<17}{'kept turns':>11}{'sampled':>9}{'pairs':>7}{'relevant':>10}{'precision':>11}{'95% interval':>16}")
    if args.stale_after:
        lines[-1] += f"{'stale':>7}"
    for w in windows:
        interval = w.interval
        shown = f"{interval[0]:.1%}-{interval[1]:.1%}" if interval else "-"
        role = "baseline" if w.in_baseline else ("" if w.tested else "not tested")
        figure = _share(w.precision)
        if untrusted is not None:  # the judge's counts stay visible; no share of them reads as a measurement
            figure, shown, role = "untrusted", "-", ("baseline" if w.in_baseline else "")
        stale = f"{w.stale or 0:>7,}" if args.stale_after else ""
        lines.append(
            f"{w.label:<17}{w.eligible:>11,}{w.sampled:>9,}{w.pairs:>7,}{w.relevant:>10,}{figure:>11}{shown:>16}{stale}  {role}".rstrip()
        )
    if args.stale_after:
        lines.append(
            f"stale: {sum(w.stale or 0 for w in windows):,} relevant pair(s) whose memory was older than {args.stale_after} day(s) "
            "at its turn (an old memory rated relevant may no longer be true: check it)"
        )
    if untrusted is not None:
        lines.append(f"baseline kept precision: untrusted ({source} failed its checks), so no window is compared with it")
    elif baseline is not None:
        low, high = baseline.interval
        lines.append(f"baseline kept precision {baseline.precision:.1%} (95% interval {low:.1%}-{high:.1%}) over {baseline.pairs:,} pair(s)")
    else:
        lines.append("note: no graded pair in the baseline: kept precision is not compared")
    lines.append(run.line(source))
    lines.append(agreement.headline() if agreement is not None else f"{source}: no people's labels in the app database, so the judge's agreement with people is unknown")
    return lines
