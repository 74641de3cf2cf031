"""The one-way import rule of docs/architecture.md: views -> ui -> domain -> connectors.

One test per rule: it reads every file the rule covers and fails once, listing every
offending import as file:line, so a broken rule shows all its offenders at once and
the test count says how many rules there are, not how many files."""

import ast
from collections.abc import Callable, Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> dict[str, int]:
    """Every module (and every ``from X import name`` as ``X.name``) the file imports,
    with the line of its first import."""
    names: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        else:
            continue
        for name in found:
            names[name] = min(names.get(name, node.lineno), node.lineno)
    return names


def offences(paths: Iterable[Path], forbidden: Callable[[Path], Iterable[str]]) -> list[str]:
    """``file:line: module`` for each import ``forbidden`` picks out of a file, over
    every file of ``paths``."""
    found = []
    for path in paths:
        lines = imported_modules(path)
        found += [f"{path.relative_to(ROOT)}:{lines[module]}: {module}" for module in sorted(forbidden(path))]
    return found


def no_offences(found: list[str], rule: str) -> None:
    if found:  # raised, not asserted: the list reads as written, one offender a line
        raise AssertionError(f"{rule}; {len(found)} import(s) break it:\n" + "\n".join(found))


def modules(pattern: str) -> list[Path]:
    return sorted(ROOT.glob(pattern))


def domain_modules() -> list[Path]:
    """Every module of dashboard/ and its subpackages except the Streamlit layers
    (ui/, views/) and app.py, which serves the app."""
    return [
        p
        for p in modules("dashboard/**/*.py")
        if p.name != "app.py" and p.relative_to(ROOT / "dashboard").parts[0] not in ("ui", "views")
    ]


def domain_violations(path: Path) -> set[str]:
    imports = imported_modules(path)
    return {m for m in imports if m.split(".")[0] == "streamlit" or m.startswith(("dashboard.ui", "dashboard.views"))}


def test_the_domain_rule_covers_every_subpackage():
    packages = {p.relative_to(ROOT / "dashboard").parts[0] for p in domain_modules() if p.parent != ROOT / "dashboard"}
    assert {"labels", "calibration", "ranking", "logs", "evaluation", "cli"} <= packages


def test_domain_modules_do_not_import_streamlit_or_ui():
    no_offences(offences(domain_modules(), domain_violations), "domain modules import no Streamlit layer")


def test_connectors_never_import_dashboard_or_streamlit():
    def dashboard_or_streamlit(path: Path) -> set[str]:
        return {m for m in imported_modules(path) if m.split(".")[0] in ("dashboard", "streamlit")}

    no_offences(offences(modules("connectors/**/*.py"), dashboard_or_streamlit), "connectors import no dashboard code")


def test_ui_never_imports_views():
    def views(path: Path) -> set[str]:
        return {m for m in imported_modules(path) if m.startswith("dashboard.views")}

    no_offences(offences(modules("dashboard/ui/**/*.py"), views), "ui/ imports no page script")


def view_connector_imports(path: Path) -> set[str]:
    """The connector modules a page script imports beyond the contract."""
    allowed = {"connectors", "connectors.base"}
    return {
        m for m in imported_modules(path)
        if m.startswith("connectors") and m not in allowed and not m.startswith("connectors.base.")
    }


def test_views_do_not_open_connector_modules():
    no_offences(offences(modules("dashboard/views/*.py"), view_connector_imports), "page scripts open no connector module")


def test_only_the_cache_module_calls_st_cache():
    offenders = [
        str(p.relative_to(ROOT))
        for p in modules("dashboard/**/*.py")
        if p.name != "cache.py" and ("cache_resource" in p.read_text() or "cache_data" in p.read_text())
    ]
    assert offenders == []


def test_the_rule_itself_catches_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import streamlit as st\nfrom dashboard.ui import cache\nfrom dashboard.views import inspect\n")
    assert {"streamlit", "dashboard.ui", "dashboard.ui.cache", "dashboard.views"} <= domain_violations(bad)


# connectors/: the contract (base, the catalogue of stores, the registry) and
# app-wide helpers (common) at the bottom, the model runtime (embedding) above them, one sub-package per kind of
# store on top. A store package may use the HTTP boundary (http.base), never
# another store package; only the demo loader, a tool that fills several stores,
# reaches across them.
STORE_PACKAGES = ("embedded", "http", "vector", "mem0")


def connector_layer(module: str) -> str:
    """`connectors.vector.qdrant` -> "vector"; `connectors.base` -> "base"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def connector_violations(path: Path, root: Path = ROOT) -> set[str]:
    """What `path`, a module under `root`/connectors, imports against the layer rules."""
    own = path.relative_to(root / "connectors").parts
    layer = own[0] if len(own) > 1 else Path(own[0]).stem
    found = set()
    for module in imported_modules(path):
        if not module.startswith("connectors.") or module == "connectors":
            continue
        target = connector_layer(module)
        if layer in ("base", "common") and target not in ("base", "common"):
            found.add(module)
        elif layer == "embedding" and target not in ("base", "common", "embedding"):
            found.add(module)
        elif layer in STORE_PACKAGES and target in STORE_PACKAGES and target != layer and not module.startswith(("connectors.http.base", "connectors.http.outbound")):
            found.add(module)
        elif layer in ("registry", "catalog") and target not in ("base", "catalog", "common"):
            found.add(module)
    return found


def connector_modules() -> list[Path]:
    return [p for p in modules("connectors/**/*.py") if p.name != "demo_loader.py"]


def test_connectors_are_sub_packages_by_kind():
    flat = {p.stem for p in modules("connectors/*.py")} - {"__init__", "base", "catalog", "registry", "demo_loader"}
    assert flat == set(), f"store or helper modules at the top of connectors/: {sorted(flat)}"
    assert {p.name for p in (ROOT / "connectors").iterdir() if p.is_dir() and p.name != "__pycache__"} == {
        "common", "embedding", *STORE_PACKAGES
    }


def test_connector_layers_import_one_way():
    no_offences(offences(connector_modules(), connector_violations), "connector layers import one way")


def test_the_connector_rule_catches_a_store_importing_another(tmp_path):
    # The probes go in a copy of the layout under tmp_path, never into connectors/:
    # the suite runs in several processes, and another test walking connectors/ must
    # never meet a file that vanishes as it reads it.
    bad = tmp_path / "connectors" / "vector" / "_probe_bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from connectors.mem0.library import Mem0LibraryStore\nfrom connectors.http.base import HttpBoundary\n")
    assert connector_violations(bad, tmp_path) == {"connectors.mem0.library", "connectors.mem0.library.Mem0LibraryStore"}
    bad = tmp_path / "connectors" / "common" / "_probe_bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from connectors.embedded.store import EmbeddedStore\n")
    assert "connectors.embedded.store" in connector_violations(bad, tmp_path)


# connectors.http.base and connectors.http.outbound are the HTTP boundary (deadlines,
# redirects, retries, redaction, typed errors), not a store: the chat-model client and
# the webhook speak through it too.
DOMAIN_CONNECTOR_IMPORTS = (
    "connectors.base", "connectors.catalog", "connectors.registry", "connectors.common", "connectors.http.base", "connectors.http.outbound",
)


def store_module_imports(path: Path) -> set[str]:
    """The connector modules a domain module imports beyond the contract, the
    registry and the app-wide helpers: a store module, or the model runtime."""
    return {
        m
        for m in imported_modules(path)
        if m.startswith("connectors.") and not m.startswith(DOMAIN_CONNECTOR_IMPORTS)
    }


def test_domain_modules_import_no_store_module():
    no_offences(
        offences(domain_modules(), store_module_imports),
        "domain modules import no store module (open stores through connectors.registry)",
    )


def test_the_store_rule_catches_a_domain_module_opening_a_store(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from connectors.embedded.factories import open_demo_store\nfrom connectors.registry import create_store\n")
    assert store_module_imports(bad) == {"connectors.embedded.factories", "connectors.embedded.factories.open_demo_store"}


def dashboard_unit(module: str) -> str | None:
    """The package (or top-level module) of dashboard/ a dotted name belongs to:
    `dashboard.labels.export` -> "labels", `dashboard.floor` -> "floor"."""
    parts = module.split(".")
    if parts[0] != "dashboard" or len(parts) < 2:
        return None
    return parts[1] if (ROOT / "dashboard" / parts[1]).is_dir() or (ROOT / "dashboard" / f"{parts[1]}.py").exists() else None


def package_graph(paths: list[Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in paths:
        parts = path.relative_to(ROOT / "dashboard").parts
        source = parts[0] if len(parts) > 1 else path.stem
        for module in imported_modules(path):
            target = dashboard_unit(module)
            if target and target != source:
                graph.setdefault(source, set()).add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path [a, b, ..., a], or None."""
    state: dict[str, str] = {}

    def visit(node: str, trail: list[str]) -> list[str] | None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*trail[trail.index(nxt):], nxt] if nxt in trail else [*trail, nxt]
            if nxt not in state and (found := visit(nxt, [*trail, nxt])):
                return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start, [start])):
            return found
    return None


def test_dashboard_packages_import_each_other_without_a_cycle():
    cycle = find_cycle(package_graph(modules("dashboard/**/*.py")))
    assert cycle is None, "packages of dashboard/ import each other in a cycle: " + " -> ".join(cycle or [])


def test_the_cycle_rule_catches_a_cycle():
    assert find_cycle({"labels": {"database"}, "database": {"labels"}}) in (["labels", "database", "labels"], ["database", "labels", "database"])
    assert find_cycle({"labels": {"database"}, "evaluation": {"database", "labels"}}) is None


# One page's modules are that page's alone: ui/pages/<page>.py and the panels only
# that page shows, ui/pages/<page>_*.py. What pages share (the store choice, the
# reviewer, the Inspect floor, the model warm-up) lives in ui/widgets/, not in another
# page's module.
PAGES_PACKAGE = "dashboard.ui.pages."


def page_of(stem: str) -> str:
    """`quality_runs` -> "quality": the page a module of ui/pages/ belongs to."""
    return stem.split("_")[0]


def pages_imported(path: Path) -> set[str]:
    """The pages whose modules `path` imports."""
    return {page_of(m.removeprefix(PAGES_PACKAGE).split(".")[0]) for m in page_module_imports(path)}


def page_module_imports(path: Path, allowed: frozenset[str] = frozenset()) -> set[str]:
    """The imports of ui/pages/ modules in `path` (a module, or a name in it), but
    those of the `allowed` pages."""
    return {
        m for m in imported_modules(path)
        if m.startswith(PAGES_PACKAGE) and page_of(m.removeprefix(PAGES_PACKAGE).split(".")[0]) not in allowed
    }


def test_a_page_module_imports_only_its_own_page():
    no_offences(
        offences(modules("dashboard/ui/pages/*.py"), lambda path: page_module_imports(path, frozenset({page_of(path.stem)}))),
        "a module of ui/pages/ reaches into no other page's module",
    )


def test_no_widget_imports_a_page_module():
    no_offences(
        offences(modules("dashboard/ui/widgets/*.py"), page_module_imports),
        "ui/widgets/ is shared by pages and reaches into no page's module",
    )


def test_each_page_imports_only_its_own_page_module():
    no_offences(
        offences(modules("dashboard/views/*.py"), lambda path: page_module_imports(path, frozenset({path.stem}))),
        "a page script imports no other page's module",
    )


def test_the_page_rule_sees_a_page_and_its_panels():
    """The scan itself, so the rules above cannot pass by finding nothing."""
    assert pages_imported(ROOT / "dashboard" / "views" / "quality.py") == {"quality"}
    assert pages_imported(ROOT / "dashboard" / "ui" / "pages" / "quality_runs.py") == {"quality"}
    assert {page_of(p.stem) for p in modules("dashboard/ui/pages/*.py") if p.stem != "__init__"} == {
        p.stem for p in modules("dashboard/views/*.py") if p.stem != "navigation"
    }


def test_a_broken_rule_names_every_offending_import_by_file_and_line(tmp_path, monkeypatch):
    """The report a broken rule gives: every offender at once, as file:line."""
    monkeypatch.setitem(globals(), "ROOT", tmp_path)  # offences() names files from ROOT
    first, second = tmp_path / "dashboard" / "labels" / "a.py", tmp_path / "dashboard" / "b.py"
    first.parent.mkdir(parents=True)
    first.write_text('"""A domain module."""\n\nimport streamlit as st\n')
    second.write_text("import json\nfrom dashboard.ui import cache\n")
    found = offences([first, second], domain_violations)
    assert found == [
        "dashboard/labels/a.py:3: streamlit",
        "dashboard/b.py:2: dashboard.ui",
        "dashboard/b.py:2: dashboard.ui.cache",
    ]
    try:
        no_offences(found, "domain modules import no Streamlit layer")
    except AssertionError as failure:
        assert str(failure).startswith("domain modules import no Streamlit layer; 3 import(s) break it:\ndashboard/labels/a.py:3")
    else:
        raise AssertionError("a rule with offenders passed")


# dashboard/judged.py is the one model of a judged question, read by ranking,
# evaluation and the demo tools: it imports no other part of dashboard/, so any of
# them can build on it without a cycle.
def dashboard_imports(path: Path) -> set[str]:
    return {m for m in imported_modules(path) if m.split(".")[0] == "dashboard"}


def test_the_judged_question_model_is_a_leaf():
    assert dashboard_imports(ROOT / "dashboard" / "judged.py") == set()


def test_the_leaf_rule_catches_an_import_of_dashboard(tmp_path):
    bad = tmp_path / "judged.py"
    bad.write_text("from connectors.common.lines import LineIssue\nfrom dashboard.ranking.metrics import grades_from_labels\n")
    assert dashboard_imports(bad) == {"dashboard.ranking.metrics", "dashboard.ranking.metrics.grades_from_labels"}


# ------------------------------------------------- commands share through shared modules
# A command module adds a command or an action to the parser (it has an `add_parser`,
# or, for `memlens judge align`, a `build_parser`). What commands share (the store
# options, a run's report, argument types, errors) lives in a module that adds no
# command, so changing one command never reaches into another. Only main.py, the
# command table, imports the commands.
CLI = ROOT / "dashboard" / "cli"
COMMAND_TABLE = "main.py"


def defines_a_command(path: Path) -> bool:
    """Whether the module binds `add_parser` or `build_parser` at its top level (a
    function of its own, or one imported under that name)."""
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        if isinstance(node, ast.FunctionDef) and node.name in ("add_parser", "build_parser"):
            return True
        if isinstance(node, ast.ImportFrom) and any(a.asname in ("add_parser", "build_parser") for a in node.names):
            return True
    return False


def command_modules(folder: Path = CLI) -> set[str]:
    """The dotted names of the command modules of `folder` (dashboard/cli)."""
    return {f"dashboard.cli.{p.stem}" for p in sorted(folder.glob("*.py")) if p.name != COMMAND_TABLE and defines_a_command(p)}


def command_imports(path: Path, commands: set[str]) -> set[str]:
    """The command modules `path` imports (a module, or a name in it), itself left out."""
    own = f"dashboard.cli.{path.stem}"
    return {m for m in imported_modules(path) if m != own and (m in commands or m.rpartition(".")[0] in commands)}


def test_no_command_module_imports_another():
    commands = command_modules()
    no_offences(
        offences([p for p in modules("dashboard/cli/*.py") if p.name != COMMAND_TABLE], lambda path: command_imports(path, commands)),
        "no module of dashboard/cli/ but main.py imports a command module (share through a module that adds no command)",
    )


def test_the_command_rule_sees_the_commands_and_catches_one_importing_another(tmp_path):
    """The scan itself, so the rule above cannot pass by finding nothing."""
    commands = command_modules()
    assert {"dashboard.cli.eval", "dashboard.cli.judge", "dashboard.cli.judge_align", "dashboard.cli.labels_export"} <= commands
    assert not {"dashboard.cli.main", "dashboard.cli.arguments", "dashboard.cli.errors", "dashboard.cli.store_options"} & commands
    bad = tmp_path / "judge.py"
    bad.write_text("from dashboard.cli.eval import store_config\nfrom dashboard.cli.store_options import open_store\n")
    assert command_imports(bad, commands) == {"dashboard.cli.eval", "dashboard.cli.eval.store_config"}


# ------------------------------------------------------- one-way imports, public names
# The import graph of dashboard/ and connectors/, module by module: every import a
# module makes, at its top, inside a function or under TYPE_CHECKING, since each says
# the module needs the other. A circle means neither can be read, tested or moved
# without the other; a private name (`_name`) is its module's own business.
GRAPHED = ("dashboard", "connectors")


def module_name(path: Path, root: Path | None = None) -> str:
    """`dashboard/logs/otlp.py` -> "dashboard.logs.otlp", a package's __init__ as the package."""
    parts = path.relative_to(root or ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(paths: list[Path], root: Path | None = None) -> dict[str, set[str]]:
    """{module: the modules of `paths` it imports}. ``from package import module`` is
    an import of the module; ``from module import name``, of the module."""
    known = {module_name(p, root) for p in paths}

    def imported(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        if not node.module or node.level:
            return []
        return [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module for a in node.names]

    graph: dict[str, set[str]] = {}
    for path in paths:
        source = module_name(path, root)
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            for name in imported(node) if isinstance(node, (ast.Import, ast.ImportFrom)) else []:
                while name and name not in known:
                    name = name.rpartition(".")[0]
                if name and name != source:
                    graph.setdefault(source, set()).add(name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every group of modules that import each other round a circle (the graph's
    strongly connected components of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def graphed_modules() -> list[Path]:
    return [p for package in GRAPHED for p in modules(f"{package}/**/*.py")]


def test_dashboard_and_connectors_import_without_a_circle():
    found = cycles(import_graph(graphed_modules()))
    assert not found, "modules import each other round a circle; split them so the imports run one way:\n" + "\n".join(
        " <-> ".join(group) for group in found
    )


def test_the_circle_rule_finds_a_circle_through_type_checking_and_a_function(tmp_path):
    package = tmp_path / "dashboard" / "db"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from dashboard.db.model import labels\n")
    (package / "schema.py").write_text("from dashboard.db.labels import TABLES\n")
    (package / "labels.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from dashboard.db.connection import Connection\n")
    (package / "connection.py").write_text("def open():\n    from dashboard.db import schema\n")
    (package / "model.py").write_text("from dashboard.db import labels\n")  # the module, not the package
    graph = import_graph(sorted(package.glob("*.py")), tmp_path)
    assert cycles(graph) == [["dashboard.db.connection", "dashboard.db.labels", "dashboard.db.schema"]]
    assert len(graph) >= 4  # the scan itself finds the imports


def private_imports(path: Path) -> set[str]:
    """``module._name`` for each private name `path` takes from another module."""
    own = module_name(path)
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module != own:
            found |= {f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_") and not a.name.startswith("__")}
    return found


def test_no_module_takes_a_private_name_from_another():
    no_offences(
        offences([p for package in (*GRAPHED, "memlens") for p in modules(f"{package}/**/*.py")], private_imports),
        "no module imports another module's private name (make it public, or move it where it belongs)",
    )


def test_the_private_name_rule_catches_one(tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "ROOT", tmp_path)  # module_name() reads names from ROOT
    bad = tmp_path / "dashboard" / "logs" / "fast.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from __future__ import annotations\nfrom dashboard.logs.rows import LogImport, _empty_turns\n")
    assert private_imports(bad) == {"dashboard.logs.rows._empty_turns"}


# ------------------------------------------------------------ the agent side sits low
# What an agent imports (memlens/, dashboard/runtime.py and every module of
# dashboard/ and connectors/ they reach, imports inside functions counted) stands
# on the floor, the score spaces, the file boundary and the log writer: never on
# the monitor, labels, the app database, the pages, the commands or the offline
# tools, so an agent process loads none of them and none of them can break it.
AGENT_SIDE = ("memlens", "dashboard.runtime")
ABOVE_THE_AGENT = tuple(  # each with its dot: dashboard.labels, not dashboard.labels_x
    f"dashboard.{part}."
    for part in ("monitoring", "labels", "database", "ui", "views", "cli", "calibration", "evaluation", "judging", "ranking")
)


def reached_from(graph: dict[str, set[str]], roots: Iterable[str]) -> dict[str, list[str]]:
    """{module: the chain of imports from a root to it} for every module the roots
    reach. Importing `a.b.c` runs the packages `a` and `a.b` first, so they count."""
    chains: dict[str, list[str]] = {}
    todo = [[root] for root in roots]
    while todo:
        chain = todo.pop()
        if chain[-1] in chains:
            continue
        chains[chain[-1]] = chain
        parts = chain[-1].split(".")
        parents = {".".join(parts[:i]) for i in range(1, len(parts))}
        todo += [[*chain, nxt] for nxt in sorted(graph.get(chain[-1], set()) | (parents & set(graph)))]
    return chains


def above_the_agent(chains: dict[str, list[str]]) -> list[str]:
    """Each module above the agent side that it reaches, as its chain of imports."""
    return sorted(" -> ".join(chain) for module, chain in chains.items() if f"{module}.".startswith(ABOVE_THE_AGENT))


def agent_graph(root: Path | None = None) -> dict[str, set[str]]:
    base = root or ROOT
    paths = [p for package in (*GRAPHED, "memlens") for p in sorted(base.glob(f"{package}/**/*.py"))]
    return import_graph(paths, base)


def test_the_agent_side_imports_nothing_above_it():
    chains = reached_from(agent_graph(), AGENT_SIDE)
    found = above_the_agent(chains)
    assert not found, "the agent side reaches a module above it (move what it needs beside dashboard/floor.py):\n" + "\n".join(found)


def test_the_agent_rule_sees_the_agent_side_and_catches_an_offender(tmp_path):
    """The scan itself: it reaches what the agent stands on, and an import of the
    monitor two hops away, inside a function, is named with its chain."""
    chains = reached_from(agent_graph(), AGENT_SIDE)
    assert {"dashboard.runtime", "dashboard.floor", "dashboard.floor_config", "dashboard.logs.writer"} <= set(chains)
    (tmp_path / "memlens").mkdir()
    (tmp_path / "memlens" / "__init__.py").write_text("from dashboard.runtime import memory_for_prompt\n")
    (tmp_path / "dashboard" / "logs").mkdir(parents=True)
    (tmp_path / "dashboard" / "runtime.py").write_text("from dashboard.logs.writer import RetrievalLog\n")
    (tmp_path / "dashboard" / "logs" / "writer.py").write_text("def rotate():\n    from dashboard.monitoring.relation import open_logs\n")
    (tmp_path / "dashboard" / "monitoring").mkdir()
    (tmp_path / "dashboard" / "monitoring" / "relation.py").write_text("import duckdb\n")
    found = above_the_agent(reached_from(agent_graph(tmp_path), AGENT_SIDE))
    assert found == ["dashboard.runtime -> dashboard.logs.writer -> dashboard.monitoring.relation"]
