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
import json
import os
import sys
from pathlib import Path
from typing import Any

from connectors.common import inbound
from dashboard.cli.arguments import finite, positive_int
from dashboard.cli.errors import CommandError, note

EXIT_STOPPED = 1


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser("eval", help="run a judged set against a store and save the run")
    parser.add_argument("judged", metavar="JUDGED", help="judged-set file (JSONL, or TREC qrels with --topics) or a kept set's name")
    parser.add_argument("--topics", metavar="FILE", help="TREC topics: message_id<TAB>query[<TAB>user_id]")
    parser.add_argument("--db", metavar="FILE", help="the embedded store's SQLite file")
    parser.add_argument("--store", default="embedded", help="store name in the registry (default embedded)")
    parser.add_argument("--config", metavar="FILE", help="the store's settings as a JSON object; secrets come from the environment")
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


def add_allow_failures(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-failures", action="store_true",
        help="exit 0 when every question was asked even if the store failed some (they count as empty answers)",
    )


def read_store_config(path: str) -> dict[str, Any]:
    """A store's settings file (--config): a JSON object read through the inbound
    boundary (a regular file of config size, JSON of sane depth and numbers), or
    CommandError naming the file."""
    try:
        loaded = inbound.load_json(inbound.read_small(path, "store config").decode("utf-8"), path)
    except inbound.InboundError as exc:
        raise CommandError(f"--config {exc}") from None
    except UnicodeDecodeError as exc:
        raise CommandError(f"--config {path}: not UTF-8 text ({exc})") from None
    if not isinstance(loaded, dict):
        raise CommandError(f"--config {path}: expected a JSON object of settings")
    return loaded


inbound.register_reader(
    inbound.Reader(
        "store config", read_store_config, (CommandError,), ".json", {"db_path": "memories.sqlite", "weights": "semantic=1"},
        rows=False, qualname=f"{__name__}.read_store_config",
    )
)  # fmt: skip


def store_config(args: argparse.Namespace) -> dict[str, Any]:
    """The store's settings from --config, --db and --weights (later ones win)."""
    config: dict[str, Any] = {}
    if args.config:
        config.update(read_store_config(args.config))
    if args.db:
        config["db_path"] = str(Path(args.db).resolve())
    if args.weights:
        config["weights"] = args.weights
    if args.as_of:
        config["as_of"] = as_of_setting(args.store, args.as_of)
    if args.store == "embedded" and not config.get("db_path"):
        raise CommandError("--db FILE is required for the embedded store (build one with `memlens import`)")
    return config


def as_of_setting(store: str, text: str) -> str:
    """--as-of as the store setting a run keeps (UTC ISO 8601); CommandError naming the
    flag when the time is unreadable or the store keeps its own clock."""
    from connectors.base import InvalidRequest, parse_as_of
    from connectors.registry import REGISTRY

    spec = REGISTRY.get(store)
    if spec is not None and not spec.clock:
        raise CommandError(f"--as-of: the {store} store computes recency itself; only the embedded store takes a clock")
    try:
        return parse_as_of(text).isoformat()
    except InvalidRequest as exc:
        raise CommandError(str(exc).replace("as_of:", "--as-of", 1)) from None


def with_secrets(name: str, config: dict[str, Any]) -> dict[str, Any]:
    """Secret fields filled from their environment variables (never from a flag),
    each only when the settings send it to the host it was configured for: a
    --config file naming another base_url does not get the environment's key."""
    from connectors.registry import REGISTRY, with_configured_secrets

    full = with_configured_secrets(name, config, os.environ)
    spec = REGISTRY.get(name)
    for field in spec.fields if spec else ():
        if field.kind == "secret" and field.env and os.environ.get(field.env) and not full.get(field.name):
            print(
                f"memlens: {field.env} is not sent with these settings: it goes only to the {field.bound_to} "
                "it was configured with",
                file=sys.stderr,
            )
    return full


def print_clock(store: Any) -> None:
    """Say what a clock (--as-of) leaves out of the store: memories created after it
    are not returned (connectors/embedded/clock.py), and a clock before every memory
    leaves every question empty."""
    counted = getattr(store, "clock_count", None)
    clock = counted() if callable(counted) else None
    if clock is not None:
        said = clock.note("the store's") or f"Ranked as of {clock.as_of.isoformat()}: every memory existed by then."
        note(said)


def print_progress(done: int, total: int) -> None:
    print(f"\rquestions {done}/{total}", end="" if done < total else "\n", file=sys.stderr, flush=True)


def report(db: Any, run_id: str, fmt: str, floor: float | None, trec_run: str | None, *,
           allow_failures: bool = False, command: str = "memlens eval") -> int:
    from dashboard.evaluation.export import trec_lines
    from dashboard.evaluation.run_figures import run_figures, table_lines
    from dashboard.evaluation.runs import failure_kinds, failure_summary

    info = db.runs.get(run_id)
    judged = db.judged_sets.load(info.set_name, info.set_hash)
    outcomes = db.runs.outcomes(run_id)
    figures = run_figures(judged.questions, outcomes, info.k, floor)
    if trec_run:
        Path(trec_run).write_text("".join(line + "\n" for line in trec_lines(info, outcomes)), encoding="utf-8")
    if fmt == "json":
        body = {"run_id": run_id, "complete": info.complete, "metrics": figures.overall}
        if not info.complete:
            body["progress"] = {"done": info.answered, "total": info.total}
        if info.failed:
            body["failed"] = info.failed
            body["failures"] = failure_kinds(o.error for o in outcomes)
        print(json.dumps(body))
    else:
        print(f"run {run_id} {info.status}", file=sys.stderr)
        print("\n".join(table_lines(figures)))
    if info.failed:
        print(
            f"{command}: {failure_summary(info, (o.error for o in outcomes))}; they count as returning nothing in these figures;"
            f" `memlens runs resume {run_id}` asks them again",
            file=sys.stderr,
        )
    if info.complete or (allow_failures and info.finished):
        return 0
    return EXIT_STOPPED


def run(args: argparse.Namespace) -> int:
    from connectors.base import ConnectorError
    from connectors.registry import create_store, fingerprint, public_config
    from dashboard.database import open_app_database
    from dashboard.evaluation import judged_sets
    from dashboard.evaluation.runs import RunRequest, RunStopped, start_run

    config = store_config(args)
    db = open_app_database(dict(os.environ))
    loaded = judged_sets.file_or_kept(args.judged, db, name=args.set_name, topics=args.topics)
    if loaded is None:
        raise CommandError(f"{args.judged} is neither a file nor a kept judged set")
    judged = loaded
    if judged.issues:  # a kept set has none: its file's bad lines were reported when it was kept
        print(judged.issue_report(), file=sys.stderr)
        print(f"{judged.source}: {len(judged.issues)} line(s) skipped; running the other {len(judged.questions)}", file=sys.stderr)
    try:
        store = create_store(args.store, with_secrets(args.store, config))
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
