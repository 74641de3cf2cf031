"""The `memlens` command.

    memlens run [streamlit args]     start the dashboard (the demo store by default), on 127.0.0.1
    memlens --version                the installed version
    memlens calibrate FILE           the floor trade-off of a label file (see cli/calibrate.py)
    memlens agreement SESSION        reviewer agreement and disagreements of a labelling session (--judge NAME: a judge's too)
    memlens rank RUN --send-text     the LLM ranker over a saved run's candidates, against the store's and the formula's order
    memlens judge TARGET --judge C   grade a log's, session's or run's pairs with a judge, saved as they arrive
    memlens judge align LABELS ...   a judge's prompt variants measured on people's labels, held-out figures recorded
    memlens import MEMORIES --db F   build or update an embedded store file from memory JSONL
    memlens eval JUDGED --k K ...    run a judged set against a store, save the run, print its metrics
    memlens compare RUN_A RUN_B      two runs question by question; --fail-if-worse is a CI gate
    memlens runs list|export|resume  the saved runs
    memlens misses RUN_ID            where each relevant memory of a run was lost: not stored, past k, under the floor
    memlens write-audit CONV --store mem0 --config F   what Mem0's write path kept of each message
    memlens whatif RUN --metric M    other component weights searched on a saved run's candidates
    memlens logs check FILE          what a retrieval log (JSONL, CSV, Parquet, OTLP traces) holds
    memlens logs export --otlp FILE  the read log as OpenTelemetry spans (OTLP JSON)
    memlens monitor LOG... --floor F the shipped floor over production logs: windows, baseline, alerts
    memlens phoenix pull|push        a running Phoenix's retriever spans as a log; labels back as annotations
    memlens langfuse pull|push       Langfuse's RETRIEVER observations as a log; labels back as scores
    memlens labels import FILE ...   people's labels from a file (JSONL, CSV, TREC qrels) as a session
    memlens labels export|adjudicate|history   the label database: resolved export, adjudication, changes
    memlens sessions list|edit|reassign|archive|delete   manage labelling sessions
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys
from pathlib import Path
from typing import Any

from connectors.common.errors import MemlensError
from connectors.common.redaction import redact_text, terminal_text

APP = Path(__file__).resolve().parents[1] / "app.py"

# The extra that brings a library a command imports, for the one line a plain install
# (`pip install memlens`: the agent side alone) gets instead of a traceback. A library
# not named here comes with the dashboard's own extra.
EXTRA_OF_MODULE = {
    "phoenix": "phoenix",
    "langfuse": "langfuse",
    "mem0": "mem0",
    "yaml": "mem0",
    "qdrant_client": "qdrant",
    "chromadb": "chroma",
    "psycopg": "postgres",
    "pyarrow": "parquet",
    "ibis": "warehouse",
    "lancedb": "lancedb",
    "langgraph": "langgraph",
}
OUR_PACKAGES = {"memlens", "dashboard", "connectors"}


def missing_library(exc: ModuleNotFoundError, what: str) -> str | None:
    """The line saying what to install when `exc` is a library an extra brings
    (None when the missing module is memlens's own: that is a bug, not an install)."""
    top = (exc.name or "").split(".")[0]
    if not top or top in OUR_PACKAGES:
        return None
    extra = EXTRA_OF_MODULE.get(top, "app")
    return f"{what} needs {top}, which is not installed: pip install 'memlens[{extra}]'"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memlens")
    except PackageNotFoundError:  # a checkout run without an install
        return "unknown (not installed)"


def _run(args: argparse.Namespace) -> int:
    import importlib.util

    if importlib.util.find_spec("streamlit") is None:
        # The agent side installs without the dashboard; say what brings it, as httpx's CLI does.
        print("memlens run needs the dashboard: pip install 'memlens[app]'", file=sys.stderr)
        return 2
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    # The settings `make run` gives: no usage statistics sent. No source-file watcher,
    # as in .streamlit/config.toml (read only from the project root): it costs every
    # new browser session about half a second. A later `--server.fileWatcherType auto`
    # among the arguments turns it back on.
    command = [
        sys.executable, "-m", "streamlit", "run", str(APP),
        "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
        # Memory text is on every page: this machine only, unless an address is given
        # (`memlens run --server.address 0.0.0.0`; the later option wins).
        "--server.address", "127.0.0.1",
        *args.streamlit_args,
    ]  # fmt: skip
    # The server replaces this process rather than running as its child: a SIGTERM or
    # Ctrl-C to `memlens run` reaches Streamlit itself, which stops and frees its port
    # (a child was left serving, holding the port, when its parent was killed).
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, command, env)


# Each command and the module that adds it, in the order `memlens --help` lists them.
COMMANDS = (
    ("calibrate", "dashboard.cli.calibrate"),  # memlens calibrate FILE
    ("agreement", "dashboard.cli.agreement"),  # memlens agreement SESSION
    ("import", "dashboard.cli.import_memories"),  # memlens import MEMORIES.jsonl --db FILE
    ("eval", "dashboard.cli.eval"),  # memlens eval JUDGED --k K
    ("compare", "dashboard.cli.compare"),  # memlens compare RUN_A RUN_B
    ("runs", "dashboard.cli.runs"),  # memlens runs list|export|resume
    ("misses", "dashboard.cli.misses"),  # memlens misses RUN_ID [--floor X] [--format table|json]
    ("write-audit", "dashboard.cli.write_audit"),  # memlens write-audit CONVERSATIONS.jsonl --store mem0 --config FILE
    ("whatif", "dashboard.cli.whatif"),  # memlens whatif RUN_ID --metric M
    ("logs", "dashboard.cli.logs"),  # memlens logs check FILE / logs export --otlp FILE
    ("judge", "dashboard.cli.judge"),  # memlens judge LOG_OR_SESSION_OR_RUN --judge CONFIG
    ("rank", "dashboard.cli.rank"),  # memlens rank RUN_OR_LOG --send-text
    ("monitor", "dashboard.cli.monitor"),  # memlens monitor LOG... --floor F | --floor-config FLOOR.json
    ("phoenix", "dashboard.cli.phoenix"),  # memlens phoenix pull|push --project P
    ("langfuse", "dashboard.cli.langfuse"),  # memlens langfuse pull|push
    ("labels", "dashboard.cli.labels"),  # memlens labels import|export|adjudicate|history
    ("sessions", "dashboard.cli.sessions"),  # memlens sessions list|edit|reassign|archive|delete
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only` (a command's name) just that command's, so
    `memlens eval` does not import what `memlens logs` or `memlens monitor` need
    (pandas, DuckDB, httpx: about a second of every start). A command's own
    arguments, help and errors are the same either way."""
    parser = argparse.ArgumentParser(prog="memlens", description="Inspect and calibrate agent memory retrieval.")
    commands = parser.add_subparsers(dest="command", required=True)
    if only in (None, "run"):
        run = commands.add_parser("run", help="start the dashboard")
        run.add_argument("streamlit_args", nargs=argparse.REMAINDER, help="passed to `streamlit run`")
        run.set_defaults(handler=_run)
    for name, module in COMMANDS:
        if only in (None, name):
            importlib.import_module(module).add_parser(commands)
    return parser


class SafeOutput(io.TextIOBase):
    """A command's stdout or stderr, as the terminal gets it: control characters from
    outside text (a model's error body, an id in a log) written as escapes, and, on
    stderr, connection strings and keys redacted. Every line every subcommand prints
    goes through it, so a new message needs no care of its own."""

    def __init__(self, inner: Any, *, redacting: bool):
        self._inner = inner
        self._redacting = redacting

    def write(self, text: str) -> int:
        safe = terminal_text(redact_text(text) if self._redacting else text)
        self._inner.write(safe)
        return len(text)

    def write_data(self, text: str) -> int:
        """Data a command writes (an export to a file or a pipe): as it is, so what
        is read back is what was stored; to a terminal, shown as every other line."""
        if self._inner.isatty():
            return self.write(text)
        self._inner.write(text)
        return len(text)

    def flush(self) -> None:
        self._inner.flush()

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding ...
        return getattr(self._inner, name)


def write_data(text: str) -> None:
    """Write an export to stdout as data, not as a message (SafeOutput.write_data):
    ids with escapes, bidi marks or padding come out exactly as stored."""
    out = sys.stdout
    (getattr(out, "write_data", None) or out.write)(text)


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    if words == ["--version"]:
        # Answered before any command is imported, so a plain install answers it too.
        print(f"memlens {_version()}")
        return 0
    if words[:1] == ["run"]:
        # Every word after `run` is streamlit's (`memlens run --server.port 8600`):
        # argparse's REMAINDER refuses one that starts with "--" in that place.
        return _run(argparse.Namespace(streamlit_args=words[1:]))
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = SafeOutput(stdout, redacting=False), SafeOutput(stderr, redacting=True)
    try:
        return _main(words, argv)
    finally:
        sys.stdout, sys.stderr = stdout, stderr


def _main(words: list[str], argv: list[str] | None) -> int:
    named = words[0] if words and words[0] in {"run", *(name for name, _ in COMMANDS)} else None
    what = f"memlens {named}" if named else "memlens"
    try:
        args = _parse(words, argv, named)
    except ModuleNotFoundError as exc:
        return _not_installed(exc, what)
    try:
        return args.handler(args)
    except ModuleNotFoundError as exc:
        return _not_installed(exc, what)
    except MemlensError as exc:
        # The one place a command's failure is said: a message, not a traceback, on
        # stderr (where SafeOutput redacts connection strings and keys), and the
        # error's exit status. Anything else is a bug and keeps its traceback.
        print(f"{error_prefix(args, exc)}: {exc}", file=sys.stderr)
        return exc.exit_status
    except BrokenPipeError:
        # `memlens calibrate FILE | head` closed the pipe: not an error worth a
        # traceback. Point stdout at devnull so the interpreter's flush is quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _parse(words: list[str], argv: list[str] | None, named: str | None) -> argparse.Namespace:
    if words[:2] == ["judge", "align"]:
        # `memlens judge TARGET` takes any target, so the align action has its own parser.
        from dashboard.cli import judge_align

        args = judge_align.build_parser().parse_args(words[2:])
        args.handler = judge_align.run
        return args
    return build_parser(named).parse_args(argv)


def _not_installed(exc: ModuleNotFoundError, what: str) -> int:
    """One line and exit 2 for a library the install left out; memlens's own module
    missing is a bug and keeps its traceback."""
    line = missing_library(exc, what)
    if line is None:
        raise exc
    print(line, file=sys.stderr)
    return 2


def error_prefix(args: argparse.Namespace, exc: MemlensError) -> str:
    """``memlens COMMAND`` (with its action where the command names it, as ``memlens
    labels import``); just ``memlens`` for an error that is no one command's, such as
    the app database's setting."""
    if not exc.names_command:
        return "memlens"
    return f"memlens {getattr(args, 'command_label', None) or args.command}"


if __name__ == "__main__":
    sys.exit(main())
