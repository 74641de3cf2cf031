"""`memlens agreement SESSION_OR_FILE`: how far a session's reviewers agree, and on what not.

    $ memlens agreement demo
    session demo: 40 rows in 8 turns, reviewers ana, ben
    Cohen's kappa 0.780 over 12 row(s) labelled by two or more reviewers (raw agreement 91.7%)
    1 disagreement(s):
      demo-q03 sam-02 rank 2 score 0.412: ana relevant, ben not_relevant
    pairwise kappa:
      ana-ben: kappa 0.780 over 12 row(s), raw agreement 92%
    relevant labels per reviewer:
      ana: 40% relevant of 25 label(s); on 12 row(s) shared with others 42% relevant against the others' 33%
      ...
    Rule: adjudicated label first, else the majority of reviewers; a tie is unresolved and left out.
    ...

Only the reviewers on the session's list are compared (names matched
case-insensitively); labels from other names are counted in the last lines and
left out, as in every figure.

With --judge NAME it also prints how far that judge (its labels from `memlens
judge`) agrees with the session's people: Cohen's kappa with a bootstrap
interval, raw agreement, TPR, TNR, the confusion matrix and the same per reviewer;
for a cross-encoder judge, the cut-off these people's labels calibrate.

People's labels can come from a file instead of a session: a label JSONL or CSV
export, or TREC qrels (dashboard/labels/people_files.py), so labels that already
exist measure a judge without relabelling them:

    $ memlens agreement people.qrels --judge umbrela

Reads the label database the app uses ($MEMLENS_LABELS_URL, else labels.sqlite in
$MEMLENS_DATA_DIR) unless --labels names one. Exits 1 when the session does not
exist or the database cannot be opened, 2 when the label file cannot be read at
all, with the reason on standard error.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from connectors.common.paths import data_dir
from dashboard.cli.errors import CommandError, warning
from dashboard.database import AppDatabase, app_database_target
from dashboard.database.model import LabelStoreError
from dashboard.labels.counted import counted
from dashboard.labels.people_files import FORMATS, read_people_labels
from dashboard.labels.resolution import counted_labels, lookalike_notes, resolve
from dashboard.labels.reviewer_agreement import agreement

SHOWN_ISSUES = 20


def add_parser(commands) -> None:
    parser = commands.add_parser("agreement", help="reviewer agreement of a labelling session")
    parser.add_argument(
        "session", metavar="SESSION_OR_FILE",
        help="the labelling session's name, or a file of people's labels (label JSONL or CSV export, TREC qrels)",
    )
    parser.add_argument("--format", choices=FORMATS, default=None, help="the label file's format (default: from its name and first line)")
    parser.add_argument(
        "--labels",
        default=None,
        help="a SQLite file or PostgreSQL URL (default: $MEMLENS_LABELS_URL, else the data directory)",
    )
    parser.add_argument(
        "--judge",
        default=None,
        metavar="NAME",
        help="also compare this judge's labels with the people's (a judge name or its judge:<name>@<model> source)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    target = args.labels or app_database_target(dict(os.environ), data_dir())
    try:
        db = AppDatabase(target)
    except (LabelStoreError, OSError) as exc:
        raise CommandError(f"cannot open the label database: {exc}", exit_status=1) from exc
    except Exception as exc:  # a driver error: its text may hold the URL, so name the type only
        raise CommandError(f"cannot open the label database ({type(exc).__name__})", exit_status=1) from None
    try:
        session = db.sessions.get(args.session)
        if session is None and Path(args.session).exists():
            found = read_people_labels(args.session, fmt=getattr(args, "format", None))
            for issue in found.issues[:SHOWN_ISSUES]:
                warning(str(issue))
            session_labels = found.labels
            resolved, resolution = None, resolve(session_labels).lines()  # a file holds no adjudication
            messages = {label.message_id for label in session_labels}
            title = f"{found.summary()}: {len({(lab.message_id, lab.memory_id) for lab in session_labels})} rows in {len(messages)} turns"
        elif session is None:
            known = ", ".join(s.name for s in db.sessions.all()) or "none"
            raise CommandError(f"no session named {args.session!r} (sessions: {known}), and no file of that name", exit_status=1)
        else:
            items = db.sessions.items(session.name)
            team = counted(db, session=session.name, environ=dict(os.environ))
            # The reviewers whose labels count (the session's list): a mistyped name's labels are flagged, not compared.
            session_labels = counted_labels(team.raw, team.resolution.listed)[0]
            resolved, resolution = team.labels, team.resolution.lines()
            messages = {item.message_id for item in items}
            title = f"session {session.name}: {len(items)} rows in {len(messages)} turns"
        report = agreement(session_labels)
        judge_lines = (
            judge_report(db, args.judge, session_labels, messages, resolved) if getattr(args, "judge", None) else []
        )
    finally:
        db.close()
    print(f"{title}, reviewers {', '.join(report.reviewers) or 'none yet'}")
    for note in lookalike_notes(label.reviewer for label in session_labels):
        print(note)  # look-alike names from other scripts: flagged, not merged
    print(report.headline())
    print(f"{len(report.disagreements)} disagreement(s)" + (":" if report.disagreements else ""))
    for disagreement in report.disagreements:
        print(f"  {disagreement.describe()}")
    print(f"pairwise kappa{':' if report.pairwise else ': none (no two reviewers labelled the same row)'}")
    for pair in report.pairwise:
        print(f"  {pair.line()}")
    print("relevant labels per reviewer:")
    for rate in report.rates:
        print(f"  {rate.line()}")
    for line in resolution:
        print(line)
    if judge_lines is None:
        raise CommandError(f"no judge labels from {args.judge!r} (run `memlens judge` first)", exit_status=1)
    for line in judge_lines:
        print(line)
    return 0


def judge_report(db, name: str, session_labels, messages: set[str], resolved=None) -> list[str] | None:
    """The judge-vs-people lines for every source of judge `name` (None: no such judge)."""
    from dashboard.database.judge_labels import source_name
    from dashboard.database.model import RELEVANT
    from dashboard.judging.judge_agreement import judge_agreement
    from dashboard.judging.judges import calibrate_cutoff

    sources = [s for s in db.judge_labels.sources() if s == name or source_name(s) == name]
    if not sources:
        return None
    lines: list[str] = []
    for source in sources:
        judged = db.judge_labels.find(source=source, message_ids=messages)
        figures = judge_agreement(session_labels, judged, source, resolved=resolved)
        lines.append(figures.headline())
        if figures.count:
            lines += [f"  {line}" for line in figures.confusion_lines()]
            lines += [f"  {line}" for line in figures.label_lines()]
        for reviewer, mine in figures.per_reviewer.items():
            lines.append(f"  {reviewer}: {mine.headline().split(' vs people: ', 1)[-1]}")
        record = db.judge_labels.record(source)
        if record:
            kappa = record.get("kappa")
            lines.append(
                f"  recorded by {record.get('measured_by', 'an alignment')}: variant {record.get('variant')}, held-out kappa "
                f"{'undefined' if kappa is None else format(kappa, '.3f')} over {record.get('count')} pair(s) ({record.get('updated_at', '')[:10]})"
            )
        scored = {(j.message_id, j.memory_id): j.score for j in judged if j.score is not None}
        pairs = [(scored[(lab.message_id, lab.memory_id)], lab.label == RELEVANT) for lab in session_labels if (lab.message_id, lab.memory_id) in scored]
        if pairs and len({r for _, r in pairs}) == 2:
            cutoff = calibrate_cutoff([s for s, _ in pairs], [r for _, r in pairs])
            lines.append(f"  cut-off these labels calibrate for its scores: {cutoff:g} (set cutoff = {cutoff:g} in the judge config)")
    return lines
