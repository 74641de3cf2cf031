"""docs/architecture.md is "the whole map": it fails here when the code grows a part the
map does not show. Every package (a folder with __init__.py) in dashboard/ and
connectors/ has a line of its own in the map's layout, every module over 150 lines is
placed (a line of its own, or named as `name.py` on its folder's line), every page
script in dashboard/views/ is named on the views/ line (`monitor` or `monitor.py`), and
every Protocol class of the contract (connectors/base.py and connectors/common/) is
named in the connector contract. And no doc in docs/ is linked from nowhere: the README
or another doc leads to each one."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
ARCHITECTURE = "docs/architecture.md"
PACKAGES = ("connectors", "dashboard")
VIEWS = ROOT / "dashboard" / "views"
BASE = ROOT / "connectors" / "base.py"
# Where the contract's Protocols live: base.py and the helpers every side shares
# (HasScoreSpace, in common/score_spaces.py).
CONTRACT = ("connectors/base.py", "connectors/common/*.py")
# A module longer than this is big enough to own something a newcomer looks for.
PLACED_OVER_LINES = 150
# In the layout block a name starts a line indented two spaces per level; its
# description, and the lines that carry it on, start at this column or later.
DESCRIPTION_COLUMN = 20
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def architecture_text() -> str:
    return (ROOT / ARCHITECTURE).read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The part of a Markdown page from `heading` up to the next heading of its level."""
    level = heading.split(" ", 1)[0]
    assert heading + "\n" in text, f"{ARCHITECTURE} has no heading {heading!r}: this test reads the map under it"
    start = text.index(heading + "\n")
    end = re.search(rf"^{level} ", text[start + len(heading) :], re.MULTILINE)
    return text[start : start + len(heading) + end.start()] if end else text[start:]


def layout(text: str) -> dict[str, str]:
    """The layout block under "## Layout" as {path: its line and the lines carrying it
    on}: `dashboard/monitoring/` for a `monitoring/` line under `dashboard/`."""
    block = section(text, "## Layout").split("```", 2)[1]
    entries: dict[str, str] = {}
    folders: list[str] = []  # the folder at each depth above the current line
    current = None
    for line in block.splitlines()[1:]:
        indent = len(line) - len(line.lstrip(" "))
        if not line.strip():
            continue
        if indent >= DESCRIPTION_COLUMN and current is not None:
            entries[current] += "\n" + line.strip()
            continue
        depth = indent // 2
        name = line.split()[0]
        del folders[depth:]
        current = "".join(folders) + name
        entries[current] = line.strip()
        if name.endswith("/"):
            folders.append(name)
    return entries


def packages() -> list[str]:
    return sorted(
        str(init.parent.relative_to(ROOT)) + "/"
        for package in PACKAGES
        for init in (ROOT / package).rglob("__init__.py")
        if "__pycache__" not in init.parts
    )


def pages() -> list[str]:
    return sorted(path.name for path in VIEWS.glob("*.py"))


def protocols() -> dict[str, str]:
    """{Protocol class: the file it is in} over the contract's files."""
    found: dict[str, str] = {}
    for path in sorted(p for pattern in CONTRACT for p in ROOT.glob(pattern)):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found |= {
            node.name: str(path.relative_to(ROOT))
            for node in tree.body
            if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "Protocol" for b in node.bases)
        }
    return found


def big_modules() -> list[str]:
    """The modules of dashboard/ and connectors/ over PLACED_OVER_LINES lines (a package's
    __init__.py is placed by its package's line)."""
    return sorted(
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
        and len(path.read_text(encoding="utf-8").splitlines()) > PLACED_OVER_LINES
    )


def placed(module: str, entries: dict[str, str]) -> bool:
    """Whether the layout has a line for `module`, or names it as `name.py` on its folder's line."""
    folder, name = module.rsplit("/", 1)
    return module in entries or bool(re.search(rf"(?<![\w/]){re.escape(name)}\b", entries.get(folder + "/", "")))


def missing_from_map(text: str) -> list[str]:
    """What a contributor must add to docs/architecture.md, one line per part."""
    entries = layout(text)
    problems = [
        f"{package} is a package but {ARCHITECTURE} has no line for it in its layout: "
        f"add `{Path(package).name}/` under `{Path(package).parent}/`"
        for package in packages()
        if package not in entries
    ]
    problems += [
        f"{module} is over {PLACED_OVER_LINES} lines but {ARCHITECTURE} does not place it: give `{Path(module).name}` "
        f"and what it owns a line under `{Path(module).parent}/` in its layout, or name them on that folder's line"
        for module in big_modules()
        if not placed(module, entries)
    ]
    views = entries.get("dashboard/views/", "")
    problems += [
        f"dashboard/views/{page} is a page but {ARCHITECTURE} does not name it on the `views/` line (as `{Path(page).stem}` or `{page}`)"
        for page in pages()
        if not re.search(rf"(?<![\w/]){re.escape(Path(page).stem)}(\.py)?\b", views)
    ]
    contract = section(text, "## The connector contract (connectors/base.py)")
    problems += [
        f"{name} is a Protocol in {path} but {ARCHITECTURE} does not name it under "
        "\"The connector contract\""
        for name, path in protocols().items()
        if f"`{name}`" not in contract
    ]
    return problems


def test_every_package_page_and_protocol_is_on_the_map():
    problems = missing_from_map(architecture_text())
    assert not problems, "\n".join(problems)


def test_the_scan_finds_nested_packages_every_page_and_the_optional_protocols():
    """The scan itself, so the test above cannot pass by finding nothing."""
    found = packages()
    assert {"dashboard/", "dashboard/monitoring/", "dashboard/judging/", "connectors/common/"} <= set(found)
    assert "dashboard/views/" not in found  # scripts Streamlit runs, not a package
    assert {"inspect.py", "monitor.py", "navigation.py"} <= set(pages())
    assert {"MemoryStore", "SupportsHistory", "ScoresPerResultSet", "HasScoreSpace"} <= set(protocols())
    assert "Hit" not in protocols()  # a dataclass, not a Protocol
    entries = layout(architecture_text())
    assert "connectors/common/lines.py" in entries and "connectors/common/" in entries
    assert "dashboard/floor.py" in entries and "dashboard/views/" in entries
    big = big_modules()
    assert {"connectors/base.py", "dashboard/logs/columnar.py", "dashboard/ui/pages/inspect.py"} <= set(big)
    assert "connectors/common/paths.py" not in big  # a short module
    assert placed("dashboard/floor_config.py", entries)  # a line of its own
    assert placed("connectors/embedded/store.py", entries)  # named on its folder's line
    assert not placed("connectors/embedded/storefront.py", entries)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "  monitoring/        the shipped floor",
            "                     the shipped floor",
            f"dashboard/monitoring/ is a package but {ARCHITECTURE} has no line for it in its layout: "
            "add `monitoring/` under `dashboard/`",
        ),
        ("quality.py, monitor.py", "quality.py", f"dashboard/views/monitor.py is a page but {ARCHITECTURE} does not name it"),
        (
            "`SupportsHistory` (`history`",
            "history (`history`",
            f"SupportsHistory is a Protocol in connectors/base.py but {ARCHITECTURE} does not name it",
        ),
        (
            "log_import.py (",
            "log_import (",
            f"dashboard/logs/log_import.py is over {PLACED_OVER_LINES} lines but {ARCHITECTURE} does not place it",
        ),
    ],
    ids=["package", "page", "protocol", "module"],
)
def test_a_part_taken_off_the_map_fails_with_its_name(old, new, message):
    """What a contributor sees: the map as it is, less one line or one name."""
    text = architecture_text()
    assert old in text  # the map still reads as this test expects
    before = missing_from_map(text)  # what the map lacks already is another test's failure
    problems = [problem for problem in missing_from_map(text.replace(old, new)) if problem not in before]
    assert any(problem.startswith(message) for problem in problems), problems


# ------------------------------------------------------------------- unlinked docs


def linked_docs(page: Path) -> set[Path]:
    """The docs/ files a page links to (anchors dropped; links to itself left out)."""
    found = set()
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+://|mailto:", target):
            continue
        file_part = target.partition("#")[0]
        if file_part:
            linked = (page.parent / file_part).resolve()
            if linked != page.resolve() and linked.is_relative_to(DOCS.resolve()):
                found.add(linked)
    return found


def unlinked_docs() -> list[str]:
    docs = sorted(DOCS.rglob("*.md"))
    reached = set().union(*(linked_docs(page) for page in [ROOT / "README.md", *docs]))
    return [str(doc.relative_to(ROOT)) for doc in docs if doc.resolve() not in reached]


def test_every_doc_is_linked_from_the_readme_or_another_doc():
    orphans = unlinked_docs()
    assert not orphans, "\n".join(
        f"{doc} is linked from nowhere: link it from README.md's reference table or a doc that covers its subject"
        for doc in orphans
    )


def test_a_doc_linked_only_from_itself_is_found(monkeypatch, tmp_path):
    """docs/ as it is, plus one page that links to itself and that nothing links to."""
    for path in DOCS.rglob("*.md"):
        copy = tmp_path / "docs" / path.relative_to(DOCS)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "docs" / "lonely.md").write_text("# Lonely\n\n[top](lonely.md#lonely)\n", encoding="utf-8")
    (tmp_path / "README.md").write_text((ROOT / "README.md").read_text(encoding="utf-8"), encoding="utf-8")
    module = sys.modules[__name__]
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "DOCS", tmp_path / "docs")
    assert unlinked_docs() == ["docs/lonely.md"]
