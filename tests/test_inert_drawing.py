"""Every text a page draws as Markdown is a literal or passed through an inert renderer.

Store ids, log lines, link parameters, model answers and other reviewers' names are
anyone's text; Streamlit draws the body of `markdown`, `warning`, `info`, `error`,
`success`, `caption`, `write`, `header` and `subheader` as Markdown (`title` too, left
out only because `str.title()` reads the same), so such a text drawn raw becomes a live
link, an image or maths. This test reads every module of dashboard/ that imports
streamlit (the only ones that may draw: tests/test_import_direction.py) and checks
each call of one of those methods, on any object (`st`, `st.sidebar`, a column, a
container), except a module's `logging` logger.

The rule. Every positional argument and `body=` must be *inert*:
- a string literal (or a number literal);
- a call of an inert renderer: a function of dashboard/display.py listed in
  INERT_RENDERERS, which escapes every outside character it draws;
- a call of a number formatter listed in NUMBER_FORMATTERS (their output is only
  digits, a point, a sign, an exponent: test_number_formatters_only_write_numbers);
- an f-string whose every `{value}` is inert or is formatted as a number or a date:
  a spec ending in a number type (`:d`, `:,`, `:.2f`, `:.1%`, `:g`...) or made of
  strftime codes (`:%Y-%m-%d`), which a string refuses with a ValueError, so a text
  cannot get through one by accident;
- `a + b` and `a if test else b` of inert parts; `"literal".join(items)` where items
  is a list, a tuple or a comprehension of inert texts;
- a module-level constant (a name assigned once at module level, here or in the
  dashboard module it is imported from) whose value is inert, or an item of a
  module-level dict whose values all are;
- a local variable whose every assignment in its function (`=`, `+=`, `:=`, and
  `.append`/`.extend` for a list) is inert; one bound any other way (a parameter,
  a loop variable, unpacking) is not;
- a call of a module-level function of dashboard/ whose every `return` is inert
  by these rules (its parameters are outside text).
Anything else is not: an attribute, a method's result, a session-state value, a
`!r` or `!s` conversion, a bare `{value}` of unknown type. The test cannot know
where it came from, so the call site wraps it, `st.warning(inert_markdown(note))`.

Also refused: one of those methods used as a value (`(st.success if ok else
st.warning)(text)` escapes the check; call each directly), `st.html` or
`unsafe_allow_html` with anything but text written in the source, and escaping twice (an inert renderer or `show_error`,
which escapes its message, given an argument that was escaped already: the page
then shows the backslashes, `http\\:⁠//127\\.0\\.0\\.1`).
"""

from __future__ import annotations

import ast
import math
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "dashboard"
# Streamlit draws Markdown in headers too; `title` is left out, as str.title() reads the same
DRAWING = {"markdown", "warning", "info", "error", "success", "caption", "write", "header", "subheader"}
INERT_RENDERERS = {
    "dashboard.display.inert_markdown",
    "dashboard.display.code_span",
    "dashboard.display.hits_markdown_table",
    "dashboard.display.inert_list",
    "dashboard.display.inert_link",
}
NUMBER_FORMATTERS = {
    "dashboard.floor.floor_text",
    "dashboard.calibration.sweep.format_floor",
}
# Functions that escape their message themselves (the inert renderers that take text, and
# the error boxes of dashboard/ui): an argument already escaped would be escaped twice.
ESCAPING_NAMES = tuple(sorted(INERT_RENDERERS - {"dashboard.display.hits_markdown_table"}))
ESCAPING_ERRORS = (".show_error", ".show_store_error")
# A format spec (fill, align, sign, z, #, 0, width, grouping, precision, type) that a
# string refuses: a number type, or grouping with no type.
STRFTIME_SPEC = re.compile(r"(?:%[A-Za-z]|[-:./ T])+")  # a date's format: a string refuses it too
FORMAT_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?\d*(?P<group>[,_])?(?:\.\d+)?(?P<type>[bdeEfFgGnoxX%])?")


class Module:
    """One parsed module: its import aliases and its module-level assignments."""

    def __init__(self, name: str, tree: ast.Module):
        self.name, self.tree = name, tree
        self.aliases: dict[str, str] = {}  # local name -> dotted name
        self.assigned: dict[str, list[ast.expr]] = {}
        for node in ast.walk(tree):  # imports inside functions too (pages import lazily)
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    self.aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        self.assigned.setdefault(target.id, []).append(node.value)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.aliases.setdefault(node.name, f"{name}.{node.name}")
        self.loggers = {
            target for target, values in self.assigned.items()
            if len(values) == 1 and isinstance(values[0], ast.Call) and ast.unparse(values[0].func).endswith(("getLogger", "get_logger"))
        }

    def dotted(self, node: ast.expr) -> str | None:
        """The dotted name `node` refers to (`inert_markdown` -> dashboard.display.inert_markdown)."""
        if isinstance(node, ast.Name):
            if node.id in self.aliases:
                return self.aliases[node.id]
            return f"{self.name}.{node.id}" if node.id in self.assigned else None
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None


PROBES: dict[str, Module] = {}  # modules the rule's own tests write


@cache
def module(name: str) -> Module | None:
    if name in PROBES:
        return PROBES[name]
    path = ROOT / Path(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return Module(name, ast.parse(candidate.read_text(encoding="utf-8")))
    return None


def resolve(dotted: str, depth: int = 0) -> tuple[ast.expr, Module] | None:
    """The value of a dashboard module-level name assigned once, and its module
    (following a name one module imports from another)."""
    module_name, _, attr = dotted.rpartition(".")
    found = module(module_name) if module_name.startswith("dashboard") else None
    if found is None or depth > 8:
        return None
    if found.aliases.get(attr, dotted) != dotted:
        return resolve(found.aliases[attr], depth + 1)
    values = found.assigned.get(attr, [])
    return (values[0], found) if len(values) == 1 else None


Locals = dict[str, "list[tuple[str, ast.expr]] | None"]


def local_names(function: ast.AST | None) -> Locals:
    """How each name of a function gets its value: ("value", expr) for `name = expr`
    and `name += expr`, ("item", expr) for `name.append(expr)`, ("items", expr) for
    `name.extend(expr)`; None for a name bound any other way (a parameter, a loop,
    `with ... as`, unpacking, `name[i] = ...`), whose value the rule cannot follow."""
    names: Locals = {}
    if function is None:
        return names

    def add(name: str, how: str, value: ast.expr) -> None:
        if name in names and names[name] is None:
            return
        names.setdefault(name, []).append((how, value))

    def unusable(target: ast.AST) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                names[node.id] = None
            elif isinstance(node, ast.arg):
                names[node.arg] = None

    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    add(target.id, "value", node.value)
                else:
                    unusable(target)
        elif isinstance(node, ast.AugAssign):
            if isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add):
                add(node.target.id, "value", node.value)
            else:
                unusable(node.target)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            add(node.target.id, "value", node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            unusable(node.target)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            unusable(node.optional_vars)
        elif isinstance(node, ast.NamedExpr):
            add(node.target.id, "value", node.value)
        elif isinstance(node, ast.arguments):
            unusable(node)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names[node.name] = None
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                names[name] = None
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            list_name, method = node.func.value.id, node.func.attr
            if method in ("append", "insert") and node.args:
                add(list_name, "item", node.args[-1])
            elif method == "extend" and len(node.args) == 1:
                add(list_name, "items", node.args[0])
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store):
            unusable(node.value)
    return names


def is_inert(node: ast.expr, where: Module, local: Locals | None = None, depth: int = 0) -> bool:
    if depth > 12:
        return False
    local = local or {}
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.JoinedStr):
        return all(isinstance(part, ast.Constant) or formatted_inert(part, where, local, depth) for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return is_inert(node.left, where, local, depth + 1) and is_inert(node.right, where, local, depth + 1)
    if isinstance(node, ast.IfExp):
        return is_inert(node.body, where, local, depth + 1) and is_inert(node.orelse, where, local, depth + 1)
    if isinstance(node, ast.Call):
        called = where.dotted(node.func) if not (isinstance(node.func, ast.Name) and node.func.id in local) else None
        if called in INERT_RENDERERS or called in NUMBER_FORMATTERS:
            return True
        if called and returns_inert(called):
            return True
        if isinstance(node.func, ast.Attribute) and node.func.attr == "join" and len(node.args) == 1:
            separator = node.func.value
            return (
                isinstance(separator, ast.Constant) and isinstance(separator.value, str)
                and inert_items(node.args[0], where, local, depth + 1)
            )
        return False
    if isinstance(node, ast.Name) and node.id in local:
        entries = local[node.id]
        return bool(entries) and all(
            how == "value" and is_inert(value, where, local, depth + 1) for how, value in entries or []
        )
    if isinstance(node, (ast.Name, ast.Attribute)):
        dotted = where.dotted(node)
        found = resolve(dotted) if dotted else None
        return found is not None and is_inert(found[0], found[1], None, depth + 1)
    if isinstance(node, ast.Subscript):
        dotted = where.dotted(node.value)
        found = resolve(dotted) if dotted and not (isinstance(node.value, ast.Name) and node.value.id in local) else None
        if found is None or not isinstance(found[0], ast.Dict):
            return False
        return all(value is not None and is_inert(value, found[1], None, depth + 1) for value in found[0].values)
    return False


CHECKED_FUNCTIONS: dict[str, bool] = {}


def returns_inert(dotted: str) -> bool:
    """Whether `dotted` names a module-level function of dashboard/ whose every
    `return` gives an inert text (or None): its parameters are outside text."""
    if dotted in CHECKED_FUNCTIONS:
        return CHECKED_FUNCTIONS[dotted]
    CHECKED_FUNCTIONS[dotted] = False  # while it is being checked: a recursive function is not followed
    module_name, _, attr = dotted.rpartition(".")
    home = module(module_name) if module_name.startswith("dashboard") else None
    if home is not None and home.aliases.get(attr, dotted) != dotted:
        CHECKED_FUNCTIONS[dotted] = returns_inert(home.aliases[attr])
        return CHECKED_FUNCTIONS[dotted]
    function = next(
        (node for node in (home.tree.body if home else []) if isinstance(node, ast.FunctionDef) and node.name == attr), None
    )
    if function is None or home is None:
        return False
    local = local_names(function)
    returned = [
        node.value for node in ast.walk(function)
        if isinstance(node, ast.Return) and node.value is not None
        and not (isinstance(node.value, ast.Constant) and node.value.value is None)
    ]
    CHECKED_FUNCTIONS[dotted] = bool(returned) and all(is_inert(value, home, local) for value in returned)
    return CHECKED_FUNCTIONS[dotted]


def inert_items(
node: ast.expr, where: Module, local: Locals, depth: int) -> bool:
    """A list (or comprehension, or a local list built by appends) of inert texts."""
    if depth > 12:
        return False
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(is_inert(item, where, local, depth + 1) for item in node.elts)
    if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
        return is_inert(node.elt, where, local, depth + 1)
    if isinstance(node, ast.Name) and local.get(node.id):
        return all(
            is_inert(value, where, local, depth + 1) if how == "item" else inert_items(value, where, local, depth + 1)
            for how, value in local[node.id] or []
        )
    return False


def is_literal(node: ast.expr, where: Module, depth: int = 0) -> bool:
    """Text written in the source: a string literal, an f-string of literals, or a
    module-level constant that is one (what HTML may be drawn from)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return all(
            isinstance(part, ast.Constant)
            or (isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None and is_literal(part.value, where, depth + 1))
            for part in node.values
        )
    if isinstance(node, (ast.Name, ast.Attribute)) and depth < 8:
        dotted = where.dotted(node)
        found = resolve(dotted) if dotted else None
        return found is not None and is_literal(found[0], found[1], depth + 1)
    return False


def formatted_inert(part: ast.expr, where: Module, local: Locals, depth: int) -> bool:
    """One `{value}` of an f-string: inert itself, or formatted as a number."""
    assert isinstance(part, ast.FormattedValue)
    if part.conversion != -1:
        return False  # !r / !s / !a turn anything into text
    if is_inert(part.value, where, local, depth + 1):
        return True
    spec = part.format_spec
    if not isinstance(spec, ast.JoinedStr) or not spec.values:
        return False
    written = ""
    for piece in spec.values:  # a nested {value} (a width, a precision) must be a constant number
        if isinstance(piece, ast.Constant):
            written += str(piece.value)
        elif isinstance(piece, ast.FormattedValue) and is_inert(piece.value, where, local, depth + 1):
            written += "1"
        else:
            return False
    match = FORMAT_SPEC.fullmatch(written)
    return bool(match and (match["type"] or match["group"])) or bool(STRFTIME_SPEC.fullmatch(written) and "%" in written)


def problems(source: str, name: str, path: str) -> list[str]:
    """Every drawing call in `source` that breaks the rule, as `path:line: code`."""
    tree = ast.parse(source)
    where = module(name) if name in PROBES else Module(name, tree)
    assert where is not None
    found = []

    def report(node: ast.AST, why: str) -> None:
        found.append(f"{path}:{getattr(node, 'lineno', 0)}: {why}: {ast.unparse(node)[:160]}")

    def escapes(call: ast.Call) -> bool:
        called = where.dotted(call.func) or ""
        return called in ESCAPING_NAMES or (called.startswith("dashboard.ui.") and called.endswith(ESCAPING_ERRORS))

    enclosing: dict[int, ast.AST] = {}  # node -> the function it is in
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(function):
                enclosing[id(inner)] = function  # an inner function's nodes are overwritten later: ast.walk is breadth-first
    scopes: dict[int, Locals] = {}

    def local_of(node: ast.AST) -> Locals:
        function = enclosing.get(id(node))
        if function is None:
            return {}
        if id(function) not in scopes:
            scopes[id(function)] = local_names(function)
        return scopes[id(function)]

    calls = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in DRAWING | {"html"} and id(node) not in calls:
            if (where.dotted(node) or "").startswith("streamlit."):
                report(node, "a drawing method used as a value (call it directly)")
            continue
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if escapes(node):
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if any(isinstance(inner, ast.Call) and escapes(inner) for argument in arguments for inner in ast.walk(argument)):
                report(node, "escaped twice")
        if not (isinstance(func, ast.Attribute) and func.attr in DRAWING | {"html"}):
            continue
        if isinstance(func.value, ast.Name) and func.value.id in where.loggers:
            continue
        bodies = [*node.args, *(k.value for k in node.keywords if k.arg == "body")]
        unsafe = [k for k in node.keywords if k.arg == "unsafe_allow_html"]
        literal_only = func.attr == "html" or any(
            not (isinstance(k.value, ast.Constant) and k.value.value is False) for k in unsafe
        )
        for body in bodies:
            if literal_only and not is_literal(body, where):
                report(node, "HTML drawn from anything but a literal")
            elif not is_inert(body, where, local_of(node)):
                report(node, "outside text drawn without an inert renderer")
    return found


def drawing_modules() -> list[Path]:
    paths = []
    for path in sorted(DASHBOARD.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        if any(name == "streamlit" or name.startswith("streamlit.") for name in imported):
            paths.append(path)
    return paths


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_every_drawn_text_is_a_literal_or_inert():
    paths = drawing_modules()
    assert len(paths) >= 30, paths  # the pages and their parts: the scan did not lose them
    found = []
    for path in paths:
        found += problems(path.read_text(encoding="utf-8"), module_name(path), str(path.relative_to(ROOT)))
    assert not found, f"{len(found)} drawing call(s) break the rule (see this module's docstring):\n" + "\n".join(found)


def check(source: str) -> list[str]:
    header = "import logging\nimport streamlit as st\nfrom dashboard.display import inert_markdown, code_span\n"
    header += "from dashboard.ui.errors import show_error\nfrom dashboard.floor import floor_text\nlog = logging.getLogger(__name__)\n"
    header += "TITLE = 'Scores'\nNOTES = {'a': 'one', 'b': f'two {TITLE}'}\nSAID = {'a': 'one', 'b': None}\n"
    source = header + source
    name = f"dashboard.ui.probe_{abs(hash(source))}"
    PROBES[name] = Module(name, ast.parse(source))
    return problems(source, name, "probe.py")


@pytest.mark.parametrize(
    "line",
    [
        "st.warning(note)",
        "st.warning(f'Store {name} is down')",
        "st.caption(f'{session.name!r} saved')",
        "st.info(f'{name:>10}')",
        "st.info(f'{name:.3}')",
        "st.sidebar.warning(note)",
        "cols = st.columns(2)\ncols[0].markdown(row.text)",
        "(st.success if ok else st.warning)(text)",
        "show = {'ok': st.success}",
        "st.markdown('- ' + '\\n- '.join(lines))",
        "st.markdown(', '.join(f'[{m}]({link})' for m, link in links))",
        "st.markdown(SAID['b'])",
        "st.markdown(body=text)",
        "st.markdown(inert_markdown(text), unsafe_allow_html=True)",
        "st.html(f'<b>{TITLE}</b><i>{name}</i>')",
        "show_error(inert_markdown(message))",
        "st.warning(inert_markdown(f'{code_span(x)} failed'))",
        "st.caption(str(n))",
        "st.caption(text.upper())",
        "def f(note):\n    st.warning(note)",
        "def f(notes):\n    for note in notes:\n        st.warning(note)",
        "def f(x):\n    text = 'a'\n    text += x\n    st.caption(text)",
        "def f(xs):\n    parts = []\n    parts.append(xs[0])\n    st.caption('; '.join(parts))",
        "def f(xs):\n    parts = ['a']\n    parts.extend(xs)\n    st.caption('; '.join(parts))",
        "def f(x):\n    text = 'a'\n    text, other = x\n    st.caption(text)",
        "def said(x):\n    return f'{x} rows'\ndef f(x):\n    st.caption(said(x))",
        "def said(x):\n    return x.title()\ndef f(x):\n    if note := said(x):\n        st.warning(note)",
        "def f():\n    st.success(st.session_state['message'])",
    ],
)
def test_the_rule_refuses_outside_text(line):
    assert check(line), line


@pytest.mark.parametrize(
    "line",
    [
        "st.warning('The store is down.')",
        "st.warning(inert_markdown(note))",
        "st.caption(f'{len(rows):,} rows, {share:.1%} kept, floor {floor_text(f)}, {code_span(m)}')",
        "st.caption(f'{n:d} of {total:{width}d} rows')",
        "st.caption(f'labelled {start:%Y-%m-%d}..{end:%Y-%m-%d %H:%M}')",
        "st.markdown(NOTES[kind])",
        "st.markdown(f'**{TITLE}**' + (' (demo)' if demo else ''))",
        "st.markdown('\\n'.join(f'- {inert_markdown(line)}' for line in lines))",
        "log.warning('store %s down', name)",
        "show_error(f'Cannot open {path}')",
        "st.markdown('<br>', unsafe_allow_html=True)",
        "st.html(f'<b>{TITLE}</b>')",
        "st.write()",
        "def f(x, n):\n    text = 'a' if x else f'{n:d} b'\n    text += f' {inert_markdown(x)}'\n    st.caption(text)",
        "def f(xs):\n    parts = []\n    parts.append(f'**{len(xs):,}** rows')\n    st.caption('; '.join(parts))",
        "def f(xs):\n    shown = [f'- {inert_markdown(x)}' for x in xs]\n    st.warning('\\n'.join(shown))",
        "def said(x):\n    if not x:\n        return None\n    return f'{len(x):d} rows of {inert_markdown(x[0])}'\n"
        "def f(x):\n    if note := said(x):\n        st.warning(note)",
    ],
)
def test_the_rule_accepts_literals_and_inert_text(line):
    assert check(line.replace("{width}", "{3}")) == [], line


@pytest.mark.parametrize("name", sorted(NUMBER_FORMATTERS))
def test_number_formatters_only_write_numbers(name):
    """The number formatters the rule trusts write a number and nothing Markdown acts
    on beyond a point and a sign, whatever float they are given."""
    import importlib

    module_name, _, attr = name.rpartition(".")
    formatter = getattr(importlib.import_module(module_name), attr)
    values = [0.0, 0.5, 0.585, -0.25, 1e-12, 0.1 + 0.2, 123456789.125, 1e300, math.inf, -math.inf, math.nan, 5e-324]
    for value in values:
        assert re.fullmatch(r"-?(?:\d+\.?\d*(?:e[-+]\d+)?|inf|nan)", formatter(value)), (value, formatter(value))
