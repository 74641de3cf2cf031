"""The one-way import rule of DESIGN.md: pages -> ui -> domain -> connectors."""

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


@pytest.mark.parametrize("path", modules("dashboard/*.py"), ids=lambda p: p.name)
def test_domain_modules_do_not_import_streamlit_or_ui(path):
    if path.name == "app.py":
        return  # app.py builds the navigation: it is the one Streamlit script here
    imports = imported_modules(path)
    assert not {m for m in imports if m.split(".")[0] == "streamlit"}, f"{path.name} imports streamlit"
    assert not {m for m in imports if m.startswith(("dashboard.ui", "dashboard.pages"))}


@pytest.mark.parametrize("path", modules("connectors/*.py"), ids=lambda p: p.name)
def test_connectors_never_import_dashboard_or_streamlit(path):
    imports = imported_modules(path)
    assert not {m for m in imports if m.split(".")[0] in ("dashboard", "streamlit")}


@pytest.mark.parametrize("path", modules("dashboard/ui/*.py"), ids=lambda p: p.name)
def test_ui_never_imports_pages(path):
    assert not {m for m in imported_modules(path) if m.startswith("dashboard.pages")}


@pytest.mark.parametrize("path", modules("dashboard/pages/*.py"), ids=lambda p: p.name)
def test_pages_do_not_open_connector_modules(path):
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
    bad = tmp_path / "floor.py"
    bad.write_text("import streamlit as st\nfrom dashboard.ui import cache\n")
    assert {"streamlit", "dashboard.ui", "dashboard.ui.cache"} <= imported_modules(bad)
