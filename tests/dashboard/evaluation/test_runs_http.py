"""Runs against an HTTP store (the loopback MemorySync look-alike): a 429's
retry_after pauses every worker and the run still completes; a store that fails
mid-run leaves the run incomplete with its progress, and resuming finishes it."""

from __future__ import annotations

import os

import pytest

from connectors.http.memorysync import open_store
from dashboard.database import AppDatabase
from dashboard.evaluation.judged_sets import demo_set
from dashboard.evaluation.runs import CONCURRENCY, RunRequest, RunStopped, resume_run, start_run

API_KEY = "msk-live-TESTKEY-7f3a9c21e4b8d6"
QUERY = "/memory/query"


@pytest.fixture
def evals(tmp_path):
    db = AppDatabase(tmp_path / "labels.sqlite")
    yield db
    db.close()


def request_for(server) -> RunRequest:
    return RunRequest(demo_set(), "memorysync", "memorysync:test", {"base_url": server.url}, k=5)


def deployment_env(server, data_dir, root) -> dict[str, str]:
    """The environment of a deployment whose operator configured this MemorySync:
    the key is bound to MEMORYSYNC_BASE_URL, so the CLI sends it only there."""
    return {
        **os.environ,
        "MEMLENS_DATA_DIR": str(data_dir),
        "MEMORYSYNC_BASE_URL": server.url,
        "MEMORYSYNC_API_KEY": API_KEY,
        "PYTHONPATH": str(root),
    }


def test_a_429_pauses_every_worker_for_retry_after(memorysync_server, evals):
    store = open_store(base_url=memorysync_server.url, api_key=API_KEY, max_retries=0)
    memorysync_server.inject(
        429, {"error": {"code": "rate_limited", "message": "slow down", "details": {"retry_after": 0.6}}}, route=QUERY
    )
    info = start_run(store, evals, request_for(memorysync_server))
    store.close()
    assert info.complete and not any(o.error for o in evals.runs.outcomes(info.run_id))
    arrivals = [r.at for r in memorysync_server.requests_to(QUERY)]
    assert len(arrivals) == 38 + 1  # every question once, plus the one that was asked to wait
    limited = min(arrivals)  # the first request is the one answered 429
    # Inside the pause arrive only requests the other workers had sent before the 429
    # came back (at most one each, or two if one was just finishing): without the
    # shared pause they would go on sending the rest of the set.
    inside = [a for a in arrivals if limited < a < limited + 0.5]
    assert len(inside) <= 2 * (CONCURRENCY - 1)
    assert any("slow down 1 time(s) (429)" in note for note in info.notes)
    # The hits keep the store's breakdown, ready for what-if weights.
    assert evals.runs.outcomes(info.run_id)[2].hits[0].breakdown


def test_a_store_failing_mid_run_leaves_it_incomplete_and_resume_finishes_it(memorysync_server, evals):
    store = open_store(base_url=memorysync_server.url, api_key=API_KEY, max_retries=0)
    memorysync_server.inject(503, {"error": {"code": "unavailable", "message": "down"}}, route=QUERY, times=20)
    with pytest.raises(RunStopped, match="the store failed 8 times in a row") as stopped:
        start_run(store, evals, request_for(memorysync_server))
    run_id = stopped.value.run_id
    partial = evals.runs.get(run_id)
    assert not partial.complete and 0 < partial.done < 38
    assert partial.status == f"incomplete ({partial.done} of 38)"
    assert not any(o.error for o in evals.runs.outcomes(run_id))  # failures are not kept as answers
    finished = resume_run(store, evals, run_id)
    store.close()
    assert finished.complete and finished.done == 38


def test_memlens_eval_on_a_hosted_store_keeps_no_secret_and_no_text(memorysync_server, tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    config = tmp_path / "memorysync.json"
    config.write_text(json.dumps({"base_url": memorysync_server.url, "max_retries": 0}))
    env = deployment_env(memorysync_server, tmp_path, root)
    env.pop("MEMLENS_LABELS_URL", None)

    def memlens(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "dashboard.cli.main", *args], env=env, cwd=root,
                              capture_output=True, text=True, timeout=600)

    evaluated = memlens("eval", str(root / "demo_data" / "queries.jsonl"), "--store", "memorysync",
                        "--config", str(config), "--k", "5", "--format", "json")
    assert evaluated.returncode == 0, evaluated.stderr
    run = json.loads(evaluated.stdout)
    assert run["complete"] is True and run["metrics"]["recall@5"] > 0.5
    exported = memlens("runs", "export", run["run_id"], "--format", "jsonl").stdout
    listing = memlens("runs", "list").stdout
    rows = [json.loads(line) for line in exported.splitlines()]
    assert len(rows) == 38 and rows[2]["hits"][0]["breakdown"]
    assert all("query" not in row for row in rows)  # no text unless --keep-text
    # The label database (and its write-ahead log) holds the store's public settings only.
    database = b"".join(p.read_bytes() for p in tmp_path.glob("labels.sqlite*"))
    for place in (exported, listing, evaluated.stdout, evaluated.stderr, database.decode("latin-1")):
        assert API_KEY not in place
    assert "Where does the user live?" not in exported


def test_questions_a_flaky_store_failed_leave_the_run_incomplete_and_resume_asks_them_again(memorysync_server, evals):
    from dashboard.evaluation.runs import failure_kinds

    store = open_store(base_url=memorysync_server.url, api_key=API_KEY, max_retries=0)
    memorysync_server.inject(200, "<html>proxy error</html>", route=QUERY, times=2, content_type="text/html")
    memorysync_server.inject(503, {"error": {"code": "unavailable", "message": "down"}}, route=QUERY, times=2)
    memorysync_server.inject(401, {"error": {"code": "unauthorized", "message": "bad key"}}, route=QUERY, times=1)
    info = start_run(store, evals, request_for(memorysync_server))
    assert not info.complete and info.finished
    assert info.failed == 5 and info.status == "incomplete (33 of 38; 5 failed)"
    outcomes = evals.runs.outcomes(info.run_id)
    assert failure_kinds(o.error for o in outcomes) == {"BadResponse": 4, "AuthFailed": 1}
    failed = {o.message_id for o in outcomes if o.error}
    asked_before = len(memorysync_server.requests_to(QUERY))
    finished = resume_run(store, evals, info.run_id)
    store.close()
    assert finished.complete and finished.failed == 0 and finished.done == 38
    assert len(memorysync_server.requests_to(QUERY)) == asked_before + 5  # only the failed ones, again
    assert all(o.hits for o in evals.runs.outcomes(info.run_id) if o.message_id in failed)


def test_a_store_refusing_the_key_fails_the_eval_and_the_gate_until_resumed(memorysync_server, tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    config = tmp_path / "memorysync.json"
    config.write_text(json.dumps({"base_url": memorysync_server.url, "max_retries": 0}))
    env = deployment_env(memorysync_server, tmp_path, root)
    env.pop("MEMLENS_LABELS_URL", None)
    queries = str(root / "demo_data" / "queries.jsonl")

    def memlens(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "dashboard.cli.main", *args], env=env, cwd=root,
                              capture_output=True, text=True, timeout=600)

    good = memlens("eval", queries, "--store", "memorysync", "--config", str(config), "--k", "5", "--format", "json")
    assert good.returncode == 0, good.stderr
    memorysync_server.inject(401, {"error": {"code": "unauthorized", "message": "bad key"}}, route=QUERY, times=38)
    refused = memlens("eval", queries, "--store", "memorysync", "--config", str(config), "--k", "5", "--format", "json")
    assert refused.returncode == 1
    body = json.loads(refused.stdout)
    assert body["complete"] is False and body["failed"] == 38 and body["failures"] == {"AuthFailed": 38}
    assert body["progress"] == {"done": 0, "total": 38}
    bad_run = body["run_id"]
    assert "38 of 38 questions failed (AuthFailed 38)" in refused.stderr
    assert f"`memlens runs resume {bad_run}` asks them again" in refused.stderr
    assert "incomplete (0 of 38; 38 failed)" in memlens("runs", "list").stdout
    good_run = json.loads(good.stdout)["run_id"]
    # the CI gate refuses a run the store failed: an outage is not a regression
    gate = memlens("compare", good_run, bad_run, "--fail-if-worse", "0.01")
    assert gate.returncode == 2 and "38 of 38 questions failed (AuthFailed 38)" in gate.stderr
    assert "--allow-failures" in gate.stderr
    assert memlens("compare", good_run, bad_run, "--fail-if-worse", "0.01", "--allow-failures").returncode == 1
    assert memlens("compare", good_run, bad_run).returncode == 0  # no gate: figures only
    # the key works again: resume asks the 38 again and the run is complete
    resumed = memlens("runs", "resume", bad_run, "--format", "json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["complete"] is True
    assert memlens("compare", good_run, bad_run, "--fail-if-worse", "0.01").returncode == 0


def test_allow_failures_lets_a_finished_run_with_failures_exit_0(memorysync_server, tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    config = tmp_path / "memorysync.json"
    config.write_text(json.dumps({"base_url": memorysync_server.url, "max_retries": 0}))
    env = deployment_env(memorysync_server, tmp_path, root)
    env.pop("MEMLENS_LABELS_URL", None)
    memorysync_server.inject(401, {"error": {"code": "unauthorized", "message": "bad key"}}, route=QUERY, times=3)
    done = subprocess.run([sys.executable, "-m", "dashboard.cli.main", "eval", str(root / "demo_data" / "queries.jsonl"),
                           "--store", "memorysync", "--config", str(config), "--k", "5", "--allow-failures"],
                          env=env, cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "incomplete (35 of 38; 3 failed)" in done.stderr and "3 of 38 questions failed (AuthFailed 3)" in done.stderr
    assert any(line.startswith("recall@5 ") for line in done.stdout.splitlines())  # the figures as before
