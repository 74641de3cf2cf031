"""One error path (docs/architecture.md, "Errors"): every exception class of
dashboard/ and connectors/ derives from MemlensError, the exit status of unusable input
is defined once, no command turns every ValueError into a message, and `memlens`
prints a command's failure once, redacted, with the error's exit status."""

import argparse
import ast
import builtins
from pathlib import Path

import pytest

from connectors.base import ConnectorError
from connectors.common.errors import EXIT_UNUSABLE, MemlensError
from dashboard.cli.errors import CommandError
from dashboard.cli.main import main
from dashboard.database.model import LabelStoreError
from dashboard.judging.client import ModelError, ModelNotConfigured, ModelOutputError, TextNotAllowed

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*ROOT.glob("dashboard/**/*.py"), *ROOT.glob("connectors/**/*.py")])
BUILTIN_EXCEPTIONS = {name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)}
BASE = "MemlensError"
THE_ONE_DEFINITION = ROOT / "connectors" / "common" / "errors.py"


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):  # connectors.base.ConnectorError
        return node.attr
    return None


def class_bases(sources: list[tuple[str, str]]) -> dict[str, list[tuple[str, list[str]]]]:
    """Every class defined in `sources` ((where, text) pairs): name -> [(where, base names)]."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for where, text in sources:
        for node in ast.walk(ast.parse(text, filename=where)):
            if isinstance(node, ast.ClassDef):
                bases = [name for name in map(_base_name, node.bases) if name]
                found.setdefault(node.name, []).append((f"{where}:{node.lineno}", bases))
    return found


def outside_the_tree(sources: list[tuple[str, str]]) -> list[str]:
    """Public exception classes that do not derive from MemlensError. A class whose
    name starts with "_" is a module's own control flow and never reaches a user."""
    classes = class_bases(sources)
    tree, exceptions = {BASE}, BUILTIN_EXCEPTIONS | {BASE}

    def reaches(name: str, target: set[str], seen: frozenset[str] = frozenset()) -> bool:
        if name in target:
            return True
        if target is not tree and name not in classes and name.endswith(("Error", "Exception")):
            return True  # a library's exception (httpx.HTTPError ...) counts as one too
        if name in seen or name not in classes:
            return False
        return any(reaches(base, target, seen | {name}) for _, bases in classes[name] for base in bases)

    offenders = []
    for name, definitions in classes.items():
        if name == BASE or name.startswith("_"):
            continue
        for where, bases in definitions:
            is_exception = any(reaches(base, exceptions) for base in bases)
            if is_exception and not any(reaches(base, tree) for base in bases):
                offenders.append(f"{where} {name}")
    return offenders


def exit_unusable_definitions(sources: list[tuple[str, str]]) -> list[str]:
    found = []
    for where, text in sources:
        for node in ast.walk(ast.parse(text, filename=where)):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign):
                targets = [node.target]
            else:
                continue
            if any(isinstance(t, ast.Name) and t.id == "EXIT_UNUSABLE" for t in targets):
                found.append(f"{where}:{node.lineno}")
    return found


# What a narrow parse may call: a conversion of one text, and the text's own tidying.
NARROW_CALLS = {"int", "float", "Decimal", "fromisoformat", "Timestamp", "strip", "replace"}


def _narrow(body: list[ast.stmt]) -> bool:
    """One statement calling conversions only: ``value = float(text)``."""
    calls = [node for node in ast.walk(body[0]) if isinstance(node, ast.Call)] if len(body) == 1 else []
    return bool(calls) and all(_base_name(call.func) in NARROW_CALLS for call in calls)


def broad_value_error_handlers(sources: list[tuple[str, str]]) -> list[str]:
    """`except ValueError` around anything but a conversion of one text: a command that
    would turn any bug raising ValueError (in its own work, or in a function it calls)
    into a tidy message."""
    found = []
    for where, text in sources:
        for node in ast.walk(ast.parse(text, filename=where)):
            if not isinstance(node, ast.Try):
                continue
            for handler in node.handlers:
                caught = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
                if any(_base_name(c) == "ValueError" for c in caught if c is not None) and not _narrow(node.body):
                    found.append(f"{where}:{handler.lineno}")
    return found


def read(paths: list[Path]) -> list[tuple[str, str]]:
    return [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in paths]


# ------------------------------------------------------------------ the tree


def test_every_exception_class_in_dashboard_and_connectors_derives_from_memlens_error():
    assert outside_the_tree(read(SOURCES)) == []


def test_the_tree_check_finds_a_class_outside_it():
    source = (
        "class MemlensError(Exception): ...\n"
        "class StoreDown(MemlensError): ...\n"
        "class Deeper(StoreDown): ...\n"
        "class Stray(ValueError): ...\n"
        "class StrayChild(Stray): ...\n"
        "class _Signal(Exception): ...\n"
        "class Upstream(httpx.HTTPError): ...\n"
        "class Plain: ...\n"
    )
    assert [o.split()[-1] for o in outside_the_tree([("bad.py", source)])] == ["Stray", "StrayChild", "Upstream"]


def test_model_errors_are_a_branch_of_their_own_not_a_store_failure():
    for error in (ModelNotConfigured, TextNotAllowed, ModelOutputError):
        assert issubclass(error, ModelError) and issubclass(error, MemlensError)
        assert not issubclass(error, ConnectorError)
    assert issubclass(ConnectorError, MemlensError) and issubclass(LabelStoreError, MemlensError)


# ------------------------------------------------------------------ one exit status, no broad catch


def test_the_unusable_exit_status_is_defined_once():
    found = exit_unusable_definitions(read(SOURCES))
    assert [where.partition(":")[0] for where in found] == [str(THE_ONE_DEFINITION.relative_to(ROOT))]
    assert MemlensError.exit_status == EXIT_UNUSABLE == 2


def test_no_command_catches_every_value_error():
    assert broad_value_error_handlers(read(sorted(ROOT.glob("dashboard/cli/*.py")))) == []


def test_the_static_checks_find_a_copy_and_a_broad_catch():
    source = (
        "EXIT_UNUSABLE = 2\n"
        "def run(args):\n"
        "    try:\n"
        "        config = load(args)\n"
        "        return go(config)\n"
        "    except (OSError, ValueError) as exc:\n"
        "        print(exc)\n"
        "        return EXIT_UNUSABLE\n"
        "def parse(text):\n"
        "    try:\n"
        "        return float(text.strip())\n"
        "    except ValueError:\n"
        "        return None\n"
        "def config(args):\n"
        "    try:\n"
        "        return store_config(args)\n"
        "    except ValueError:\n"
        "        return None\n"
    )
    assert exit_unusable_definitions([("bad.py", source)]) == ["bad.py:1"]
    assert broad_value_error_handlers([("bad.py", source)]) == ["bad.py:6", "bad.py:17"]


# ------------------------------------------------------------------ printed once, by main


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("MEMLENS_LABELS_URL", raising=False)
    return tmp_path


def test_a_command_failure_is_one_line_naming_the_command_and_its_action(data_dir, capsys):
    assert main(["whatif", "nosuch", "--metric", "recall"]) == 2
    assert capsys.readouterr().err.splitlines() == ["memlens whatif: no run 'nosuch'"]
    assert main(["runs", "export", "nosuch"]) == 2
    assert capsys.readouterr().err.splitlines() == ["memlens runs export: no run 'nosuch'"]
    assert main(["sessions", "archive", "nosuch"]) == 2
    assert capsys.readouterr().err.splitlines() == ["memlens sessions archive: no labelling session named 'nosuch'"]


def test_a_command_exits_with_the_status_its_error_carries(data_dir, tmp_path, capsys):
    broken = tmp_path / "broken.parquet"
    broken.write_text("junk", encoding="utf-8")
    code = main(["logs", "check", str(broken)])  # exit 1: the file cannot be read at all (docs/cli.md)
    err = capsys.readouterr().err.splitlines()
    assert code == 1 and len(err) == 1 and err[0].startswith(f"memlens logs check: {broken}: not a readable Parquet file")


def _failing_with(monkeypatch, error: BaseException) -> None:
    def handler(args: argparse.Namespace) -> int:
        raise error

    import dashboard.cli.whatif

    monkeypatch.setattr(dashboard.cli.whatif, "run", handler)


def test_the_message_is_redacted_once_in_the_one_catch(data_dir, monkeypatch, capsys):
    _failing_with(monkeypatch, CommandError("cannot reach postgresql://memlens:hunter2-secret@db:5432/labels"))
    assert main(["whatif", "r1", "--metric", "recall"]) == 2
    err = capsys.readouterr().err
    assert err == "memlens whatif: cannot reach postgresql://memlens:***@db:5432/labels\n"


def test_a_bug_is_a_traceback_not_a_tidy_message(data_dir, monkeypatch):
    _failing_with(monkeypatch, ValueError("a bug: this was never meant for the user"))
    with pytest.raises(ValueError, match="a bug"):
        main(["whatif", "r1", "--metric", "recall"])
