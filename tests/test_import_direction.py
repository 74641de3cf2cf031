"""The one-way import rule of DESIGN.md: views -> ui -> domain -> connectors."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def modules(pattern: str) -> list[Path]:
    return sorted(ROOT.glob(pattern))


def domain_modules() -> list[Path]:
    """Every module of dashboard/ and its subpackages except the Streamlit layers
    (ui/, views/) and app.py, the one script that builds the navigation."""
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


@pytest.mark.parametrize("path", domain_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_domain_modules_do_not_import_streamlit_or_ui(path):
    assert domain_violations(path) == set(), f"{path.relative_to(ROOT)} imports a Streamlit layer"


@pytest.mark.parametrize("path", modules("connectors/**/*.py"), ids=lambda p: p.name)
def test_connectors_never_import_dashboard_or_streamlit(path):
    imports = imported_modules(path)
    assert not {m for m in imports if m.split(".")[0] in ("dashboard", "streamlit")}


@pytest.mark.parametrize("path", modules("dashboard/ui/*.py"), ids=lambda p: p.name)
def test_ui_never_imports_views(path):
    assert not {m for m in imported_modules(path) if m.startswith("dashboard.views")}


@pytest.mark.parametrize("path", modules("dashboard/views/*.py"), ids=lambda p: p.name)
def test_views_do_not_open_connector_modules(path):
    imports = imported_modules(path)
    allowed = {"connectors", "connectors.base"}
    assert not {m for m in imports if m.startswith("connectors") and m.split(":")[0] not in allowed and not m.startswith("connectors.base.")}


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


# One page's module is that page's alone: what pages share (the store choice, the
# reviewer, the Inspect floor, the model warm-up) lives in ui/session.py,
# ui/sidebar.py and ui/reviewer.py, not in another page's module.
PAGE_MODULES = {p.stem for p in modules("dashboard/ui/*_view.py")}


def page_modules_imported(path: Path) -> set[str]:
    parts = (m.split(".") for m in imported_modules(path) if m.startswith("dashboard.ui."))
    return {p[2] for p in parts} & PAGE_MODULES


@pytest.mark.parametrize("path", modules("dashboard/ui/*.py"), ids=lambda p: p.name)
def test_no_ui_module_imports_a_page_module(path):
    assert page_modules_imported(path) <= {path.stem}, f"{path.name} reaches into another page's module"


@pytest.mark.parametrize("path", modules("dashboard/views/*.py"), ids=lambda p: p.name)
def test_each_page_imports_only_its_own_page_module(path):
    assert page_modules_imported(path) <= {f"{path.stem}_view"}, f"{path.name} reaches into another page's module"
