"""`memlens import`, `eval`, `runs` and `compare` end to end, in real processes, on a
generated judged set of 2,000 questions over 6,000 memories in 10 users, with the
real model. Every figure is checked against ranx on the run's own TREC export; a
run killed with SIGKILL is listed as incomplete and resumes to the same figures;
the CI gate fails a deliberately bad weighting and passes identical runs."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from ranx import Qrels, Run, evaluate

from benchmarks import _eval_data
from dashboard.evaluation.judged_sets import read_file

ROOT = Path(__file__).resolve().parents[3]
K = 10


def memlens(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "dashboard.cli.main", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    if check and result.returncode != 0:
        raise AssertionError(f"memlens {' '.join(args)} exited {result.returncode}:\n{result.stderr[-3000:]}")
    return result


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The generated files, the imported store and one uninterrupted run."""
    directory = tmp_path_factory.mktemp("eval_cli")
    memories, judged = _eval_data.write(directory)
    env = {**os.environ, "MEMLENS_DATA_DIR": str(directory / "data"), "PYTHONPATH": str(ROOT)}
    env.pop("MEMLENS_LABELS_URL", None)
    db = directory / "store.sqlite"
    imported = memlens("import", str(memories), "--db", str(db), env=env)
    trec = directory / "run.trec"
    evaluated = memlens("eval", str(judged), "--db", str(db), "--k", str(K), "--format", "json", "--trec-run", str(trec), env=env)
    return {
        "dir": directory,
        "env": env,
        "db": db,
        "judged": judged,
        "imported": imported,
        "trec": trec,
        "run": json.loads(evaluated.stdout),
    }


def test_import_reports_what_it_encoded(world):
    assert "imported 6000 memories" in world["imported"].stdout
    assert "encoding 6000/6000" in world["imported"].stderr


def test_eval_starts_without_the_other_commands_libraries(world, tmp_path):
    """`memlens eval` builds its own command's parser only: what `logs`, `monitor`
    and `judge` need (pandas, DuckDB, httpx), the dashboard's Streamlit and Plotly,
    and torch are never imported, so none of them slows its start."""
    small = tmp_path / "small.jsonl"
    small.write_text("".join(world["judged"].read_text().splitlines(keepends=True)[:5]))
    heavy = ("pandas", "duckdb", "httpx", "streamlit", "plotly", "torch")
    code = (
        "import sys; from dashboard.cli.main import main; code = main(sys.argv[1:]); "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules), file=sys.stderr); sys.exit(code)"
    )
    env = {**world["env"], "MEMLENS_DATA_DIR": str(tmp_path / "data")}
    done = subprocess.run(
        [sys.executable, "-c", code, "eval", str(small), "--db", str(world["db"]), "--k", "3", "--format", "json"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["complete"] is True
    assert done.stderr.splitlines()[-1] == "[]"


def test_every_metric_agrees_with_ranx_on_the_runs_own_trec_export(world):
    run = world["run"]
    assert run["complete"] is True and set(run["metrics"]) >= {f"recall@{K}", "mrr", f"ndcg@{K}"}
    exported = memlens("runs", "export", run["run_id"], "--format", "trec", env=world["env"]).stdout
    assert exported == world["trec"].read_text()
    judged = read_file(world["judged"])
    answerable = [q for q in judged.questions if q.answerable]
    assert len(judged.questions) == 2000 and len(answerable) == 1800
    qrels = Qrels({q.message_id: {m: g for m, g in q.grades.items() if g > 0} for q in answerable})
    ranx_run = Run.from_file(str(world["trec"]), kind="trec")
    names = {f"precision@{K}": f"precision@{K}", f"recall@{K}": f"recall@{K}", "mrr": f"mrr@{K}",
             f"ndcg@{K}": f"ndcg@{K}", f"hit_rate@{K}": f"hit_rate@{K}"}
    expected = evaluate(qrels, ranx_run, list(names.values()), make_comparable=True)
    for ours, theirs in names.items():
        assert run["metrics"][ours] == pytest.approx(expected[theirs], abs=1e-9), ours
    # Abstention: the unanswerable questions the store returned nothing for (none:
    # a store always answers, which is why the floor exists).
    returned = {line.split()[0] for line in exported.splitlines()}
    unanswerable = [q.message_id for q in judged.questions if not q.answerable]
    assert run["metrics"]["abstention"] == sum(q not in returned for q in unanswerable) / len(unanswerable)
    # The table format prints the same figures, one `metric value` line each (a
    # complete run's report, without running it again).
    table = memlens("runs", "resume", run["run_id"], env=world["env"]).stdout.splitlines()
    assert table[1] == f"recall@{K} {run['metrics'][f'recall@{K}']:.4f}"
    assert all(re.fullmatch(r"\S+ (\d\.\d{4}|n/a)", line) for line in table)


def test_a_killed_run_is_incomplete_and_resumes_to_the_same_figures(world):
    env = world["env"]
    before = set(memlens("runs", "list", env=env).stdout.splitlines())
    process = subprocess.Popen(
        [sys.executable, "-m", "dashboard.cli.main", "eval", str(world["judged"]), "--db", str(world["db"]), "--k", str(K)],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    # Kill it once it has saved a batch or two, well before the last of 32.
    progress = ""
    while not re.search(r"questions (6[4-9]|[1-9]\d\d+)/2000", progress):
        character = process.stderr.read(1)
        assert character, f"eval ended before it could be killed: {process.stderr.read()}"
        progress += character
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    process.stdout.close()
    process.stderr.close()
    listing = [line for line in memlens("runs", "list", env=env).stdout.splitlines() if line not in before]
    assert len(listing) == 1
    run_id, status = listing[0].split("\t")[:2]
    done = int(re.fullmatch(r"incomplete \((\d+) of 2000\)", status).group(1))
    assert 0 < done < 2000
    # Not complete means not shown as complete anywhere: eval's own report and compare say so.
    resumed = json.loads(memlens("runs", "resume", run_id, "--format", "json", env=env).stdout)
    assert resumed["complete"] is True and resumed["run_id"] == run_id
    for name, value in world["run"]["metrics"].items():
        assert resumed["metrics"][name] == pytest.approx(value, abs=1e-9), name
    assert f"{run_id}\tcomplete" in memlens("runs", "list", env=env).stdout


def test_the_ci_gate_fails_a_bad_weighting_and_passes_identical_runs(world):
    env = world["env"]
    bad = json.loads(
        memlens(
            "eval", str(world["judged"]), "--db", str(world["db"]), "--k", str(K), "--weights",
            "semantic=0.02,recency=0.49,importance=0.49,usage=0", "--name", "bad weights", "--format", "json", env=env,
        ).stdout
    )
    good = world["run"]["run_id"]
    gate = memlens("compare", good, bad["run_id"], "--metric", f"recall@{K}", "--fail-if-worse", "0.02", env=env, check=False)
    assert gate.returncode == 1, gate.stderr
    assert f"REGRESSION: recall@{K} fell by" in gate.stderr
    worst = re.search(r"worst questions: (.+)", gate.stderr).group(1).split(", ")
    assert worst and all(re.fullmatch(r"u\d\d-q\d{3}", message_id) for message_id in worst)
    assert all(message_id in gate.stdout for message_id in worst)  # the printed list names them too
    same = memlens("compare", good, good, "--fail-if-worse", "0", env=env, check=False)
    assert same.returncode == 0 and "losses 0" in same.stdout


def test_import_exits_1_when_nothing_could_be_imported(tmp_path, world):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "m1", "user_id": "u", "text": ""}\nnot json\n')
    result = memlens("import", str(bad), "--db", str(tmp_path / "s.sqlite"), env=world["env"], check=False)
    assert result.returncode == 1
    assert "line 1, field 'text'" in result.stderr and "line 2, field '(line)'" in result.stderr


def test_import_refuses_a_fifo_before_opening_it(tmp_path, world):
    fifo = tmp_path / "memories.jsonl"
    os.mkfifo(fifo)  # read whole, it would wait for a writer for ever
    result = memlens("import", str(fifo), "--db", str(tmp_path / "s.sqlite"), env=world["env"], check=False)
    assert result.returncode == 1, result.stderr  # nothing imported (docs/cli.md), said in one line
    assert "not a regular file" in result.stderr and "Traceback" not in result.stderr


def test_import_exits_2_when_lines_were_rejected_and_imports_the_good_ones(tmp_path):
    lines = tmp_path / "some-bad.jsonl"
    lines.write_text(
        '{"id": "m1", "user_id": "u", "text": "Lives in Lisbon", "age_days": 1}\n'
        '{"id": "m2", "user_id": "u", "text": ""}\n'
        "not json\n"
        '{"id": "m3", "user_id": "u", "text": "Prefers light UI theme", "age_days": 2}\n'
        '{"id": "m4", "user_id": "u"}\n'
    )
    env = {**os.environ, "MEMLENS_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)}
    db = tmp_path / "s.sqlite"
    result = memlens("import", str(lines), "--db", str(db), env=env, check=False)
    assert result.returncode == 2, result.stderr
    assert "imported 2 memories" in result.stdout and "3 line(s) rejected" in result.stdout
    assert "the other lines were imported; exit status 2" in result.stderr
    from connectors.embedded.store import EmbeddedStore

    store = EmbeddedStore(db)
    try:
        assert sorted(m.memory_id for m in store.list(user_id="u")) == ["m1", "m3"]
    finally:
        store.close()


@pytest.mark.parametrize("action", ["export", "resume"])
def test_a_run_id_that_was_never_saved_is_named_and_exits_2(world, action):
    result = memlens("runs", action, "no-such-run", env=world["env"], check=False)
    assert result.returncode == 2
    assert result.stderr.strip() == f"memlens runs {action}: no run 'no-such-run'"
    assert result.stdout == ""
