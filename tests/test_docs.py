"""The reference in docs/ covers what a deployment can set: every environment variable
the code reads, every store setting the registry fills from one, and every `memlens`
subcommand and flag. A new one that is not written down fails here, with the name and
the docs file to add it to; the README and docs/ links lead to files and headings that
exist (the screenshots included)."""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from connectors.registry import REGISTRY
from dashboard.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CODE = ("connectors", "dashboard")
# The names of this project and of the stores it reads: a string that is one of these
# words is an environment variable (or the secret of the same name) wherever it stands.
PROJECT_VARIABLE = re.compile(r"^(MEMLENS|MEMORYSYNC|MEM0|QDRANT)_[A-Z0-9_]+$|^MEMORY_SCORE_FLOOR$")
READERS = {"get", "getenv", "setdefault", "pop"}


@dataclass(frozen=True)
class Variable:
    name: str
    where: str  # file:line of one place that reads it
    docs_file: str  # where a missing one belongs


def docs_text() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(DOCS.rglob("*.md")))


def mentions(text: str, word: str) -> bool:
    """`word` stands in `text` as a whole word (MEMLENS_QDRANT_URL is not a mention of
    MEMLENS_QDRANT), a flag as a whole flag (--format is not --format-x)."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


def _string_constants(tree: ast.Module) -> dict[str, str]:
    """Module-level NAME = "literal", so os.environ.get(DATA_DIR_ENV) is resolved."""
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    constants[target.id] = node.value.value
    return constants


def _is_environ(node: ast.expr) -> bool:
    """os.environ, environ (a parameter or an import), or os itself for os.getenv."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id in ("environ", "os")
    )


def variables_read_in(path: Path) -> list[Variable]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    constants = _string_constants(tree)
    where = str(path.relative_to(ROOT))

    def literal(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return constants.get(node.id)
        return None

    found = []
    for node in ast.walk(tree):
        name = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            if node.func.attr in READERS and _is_environ(node.func.value):
                name = literal(node.args[0])
        elif isinstance(node, ast.Subscript) and _is_environ(node.value):
            name = literal(node.slice)
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In) for op in node.ops):
            if any(_is_environ(c) for c in node.comparators):
                name = literal(node.left)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and PROJECT_VARIABLE.match(node.value):
            name = node.value
        if name and re.fullmatch(r"[A-Z][A-Z0-9_]+", name):
            found.append(Variable(name, f"{where}:{getattr(node, 'lineno', 0)}", "docs/configuration.md"))
    return found


def variables() -> dict[str, Variable]:
    """Every variable read in connectors/ and dashboard/, first place first; a store
    setting's variable belongs in docs/stores.md, any other in docs/configuration.md."""
    found: dict[str, Variable] = {}
    for spec in REGISTRY.values():
        for field in spec.fields:
            if field.env:
                where = f"connectors/catalog.py ({spec.name}.{field.name})"
                found.setdefault(field.env, Variable(field.env, where, "docs/stores.md"))
    for package in CODE:
        for path in sorted((ROOT / package).rglob("*.py")):
            for variable in variables_read_in(path):
                found.setdefault(variable.name, variable)
    return found


@dataclass(frozen=True)
class Command:
    words: str  # "memlens runs export"
    flags: tuple[str, ...]


def commands(parser: argparse.ArgumentParser, words: str = "memlens") -> list[Command]:
    """Every subcommand of the parser, nested ones included, with its own flags."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                flags = tuple(
                    option
                    for sub_action in sub._actions
                    if not isinstance(sub_action, argparse._HelpAction)
                    for option in sub_action.option_strings
                )
                found.append(Command(f"{words} {name}", flags))
                found += commands(sub, f"{words} {name}")
    return found


def test_every_variable_the_code_reads_is_in_docs():
    text = docs_text()
    missing = [v for v in variables().values() if not mentions(text, v.name)]
    assert not missing, "\n".join(
        f"{v.name} (read in {v.where}) is not documented in docs/: add it to {v.docs_file}" for v in missing
    )


def test_the_scan_finds_the_variables_of_each_kind_of_read():
    """The scan itself: a literal, a module constant, a parameter named environ, a
    registry field; and a project name that only stands in a string (a secret's name)."""
    found = variables()
    assert found["MEMORY_SCORE_FLOOR"].where.startswith("dashboard/floor.py")  # (environ or os.environ).get("...")
    assert found["XDG_CACHE_HOME"].where.startswith("connectors/embedding/onnx_export.py")  # os.environ.get("...")
    assert found["MEMLENS_MODEL_CACHE"].where.startswith("connectors/embedding/")  # a module constant
    assert found["MEMORYSYNC_PROJECT_ID"].docs_file == "docs/stores.md"  # the registry's field
    assert found["OPENAI_API_KEY"].where.startswith("connectors/mem0/")


def test_every_subcommand_and_flag_is_in_docs():
    """Each `memlens` subcommand is named in docs/, and each of its flags stands in a
    docs file that names the subcommand (a flag of one command documented under another
    does not count)."""
    pages = {path.name: path.read_text(encoding="utf-8") for path in sorted(DOCS.rglob("*.md"))}
    problems = []
    for command in commands(build_parser()):
        naming = [text for text in pages.values() if command.words in text]
        if not naming:
            problems.append(f"`{command.words}` is not documented in docs/: add it to docs/cli.md")
            continue
        for flag in command.flags:
            if not any(mentions(text, flag) for text in naming):
                problems.append(f"`{command.words} {flag}` is not documented in docs/: add the flag to docs/cli.md")
    assert not problems, "\n".join(problems)


def cli_sections() -> dict[str, str]:
    """docs/cli.md's sections by heading: "memlens eval" -> its text."""
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    return {part.split("\n", 1)[0].strip(): part for part in re.split(r"(?m)^## ", text)[1:]}


def test_every_flag_of_every_command_is_in_its_section_of_cli_md():
    """docs/cli.md is the one reference of the command: each top-level command has a
    section, and each flag of the command (its actions' included) stands in it (issue
    53: `eval --as-of` and `--allow-failures` were documented nowhere in it)."""
    sections = cli_sections()
    problems = []
    for command in commands(build_parser()):
        top = " ".join(command.words.split()[:2])
        section = sections.get(top)
        if section is None:
            problems.append(f"docs/cli.md has no `## {top}` section")
            continue
        problems += [
            f"`{command.words} {flag}` is not in the `## {top}` section of docs/cli.md"
            for flag in command.flags
            if not mentions(section, flag)
        ]
    assert not problems, "\n".join(sorted(set(problems)))


def test_the_command_table_lists_every_subcommand():
    """docs/cli.md says it lists every subcommand: its table names each top-level one
    (issue 34: monitor and whatif were missing)."""
    table = [line for line in (DOCS / "cli.md").read_text(encoding="utf-8").splitlines() if line.startswith("| `memlens ")]
    named = {line.split("`memlens ", 1)[1].split()[0].rstrip("`") for line in table}
    top = {command.words.split()[1] for command in commands(build_parser())}
    assert top <= named, f"missing from the table in docs/cli.md: {sorted(top - named)}"


def test_the_parser_walk_reaches_nested_subcommands():
    found = {c.words: c.flags for c in commands(build_parser())}
    assert "--otlp" in found["memlens logs export"] and "--read-log" in found["memlens logs export"]
    assert found["memlens runs export"] == ("--format",)
    assert "--fail-if-worse" in found["memlens compare"]


def test_a_variable_removed_from_docs_fails_with_its_name_and_file(monkeypatch, tmp_path):
    """What a contributor sees when a variable goes undocumented: docs/ as it is, but
    with MEMLENS_QDRANT_URL written nowhere."""
    for path in DOCS.rglob("*.md"):
        copy = tmp_path / path.relative_to(DOCS)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(path.read_text(encoding="utf-8").replace("MEMLENS_QDRANT_URL", "(removed)"), encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "DOCS", tmp_path)
    with pytest.raises(AssertionError) as failure:
        test_every_variable_the_code_reads_is_in_docs()
    assert "MEMLENS_QDRANT_URL (read in connectors/catalog.py (qdrant.url)) is not documented in docs/: add it to docs/stores.md" in str(failure.value)


# ------------------------------------------------------------------- links

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))], ids=lambda p: p.name)
def test_links_lead_to_files_and_headings_that_exist(page):
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            broken.append(f"{target}: no file {linked.relative_to(ROOT) if linked.is_relative_to(ROOT) else linked}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    assert not broken, f"{page.relative_to(ROOT)}:\n" + "\n".join(broken)
