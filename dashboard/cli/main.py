"""The `memlens` command.

    memlens run [streamlit args]     start the dashboard (the demo store by default)
    memlens calibrate FILE           the floor trade-off of a label file (see cli/calibrate.py)
    memlens agreement SESSION        reviewer agreement and disagreements of a labelling session (--judge NAME: a judge's too)
    memlens rank RUN_OR_LOG --send-text  the LLM ranker over a saved run's or a log's candidates, against the store's and the formula's order
    memlens judge TARGET --judge C   grade a log's, session's or run's pairs with a judge, saved as they arrive
    memlens import MEMORIES --db F   build or update an embedded store file from memory JSONL
    memlens eval JUDGED --k K ...    run a judged set against a store, save the run, print its metrics
    memlens compare RUN_A RUN_B      two runs question by question; --fail-if-worse is a CI gate
    memlens runs list|export|resume  the saved runs
    memlens whatif RUN --metric M    other component weights searched on a saved run's candidates
    memlens logs check FILE          what a retrieval log (JSONL, CSV, Parquet, OTLP traces) holds
    memlens logs export --otlp FILE  the read log as OpenTelemetry spans (OTLP JSON)
    memlens monitor LOG... --floor F the shipped floor over production logs: windows, baseline, alerts
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app.py"


def _run(args: argparse.Namespace) -> int:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    command = [sys.executable, "-m", "streamlit", "run", str(APP), "--server.headless", "true", *args.streamlit_args]
    return subprocess.call(command, env=env)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memlens", description="Inspect and calibrate agent memory retrieval.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="start the dashboard")
    run.add_argument("streamlit_args", nargs=argparse.REMAINDER, help="passed to `streamlit run`")
    run.set_defaults(handler=_run)
    from dashboard.cli import calibrate as calibrate_cli  # memlens calibrate FILE

    calibrate_cli.add_parser(commands)
    from dashboard.cli import agreement as agreement_cli  # memlens agreement SESSION

    agreement_cli.add_parser(commands)
    from dashboard.cli import compare as compare_cli  # memlens compare RUN_A RUN_B
    from dashboard.cli import eval as eval_cli  # memlens eval JUDGED --k K
    from dashboard.cli import import_memories as import_cli  # memlens import MEMORIES.jsonl --db FILE
    from dashboard.cli import runs as runs_cli  # memlens runs list|export|resume

    import_cli.add_parser(commands)
    eval_cli.add_parser(commands)
    compare_cli.add_parser(commands)
    runs_cli.add_parser(commands)
    from dashboard.cli import whatif as whatif_cli  # memlens whatif RUN_ID --metric M

    whatif_cli.add_parser(commands)
    from dashboard.cli import logs as logs_cli  # memlens logs check FILE / logs export --otlp FILE

    logs_cli.add_parser(commands)
    from dashboard.cli import judge as judge_cli  # memlens judge LOG_OR_SESSION_OR_RUN --judge CONFIG

    judge_cli.add_parser(commands)
    from dashboard.cli import rank as rank_cli  # memlens rank RUN_OR_LOG --send-text

    rank_cli.add_parser(commands)
    from dashboard.cli import monitor as monitor_cli  # memlens monitor LOG... --floor F | --floor-config FLOOR.json

    monitor_cli.add_parser(commands)
    return parser


def _monitor_parser() -> argparse.ArgumentParser:
    """The parser of `memlens monitor` alone (the same arguments, usage and errors).
    A cron job runs the command every hour or day; importing every other command's
    modules with it took a second longer than reading a day's log."""
    from dashboard.cli import monitor as monitor_cli

    parser = argparse.ArgumentParser(prog="memlens", description="Inspect and calibrate agent memory retrieval.")
    monitor_cli.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser


def main(argv: list[str] | None = None) -> int:
    from dashboard.database.model import LabelStoreError

    argv = sys.argv[1:] if argv is None else argv
    parser = _monitor_parser() if argv[:1] == ["monitor"] else build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except LabelStoreError as exc:
        # MEMLENS_LABELS_URL names no database, or it cannot be reached: a message
        # (already free of passwords), not a traceback.
        print(f"memlens: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # `memlens calibrate FILE | head` closed the pipe: not an error worth a
        # traceback. Point stdout at devnull so the interpreter's flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
