"""Runs against an HTTP store (the loopback MemorySync look-alike): a 429's
retry_after pauses every worker and the run still completes; a store that fails
mid-run leaves the run incomplete with its progress, and resuming finishes it."""

from __future__ import annotations

import pytest

from connectors.memorysync import open_store
from dashboard.evaluation.judged_sets import demo_set
from dashboard.evaluation.runs import CONCURRENCY, RunRequest, RunStopped, resume_run, start_run
from dashboard.evaluation.storage import EvalStore
from dashboard.labels import open_label_store

API_KEY = "msk-live-TESTKEY-7f3a9c21e4b8d6"
QUERY = "/memory/query"


@pytest.fixture
def evals(tmp_path):
    labels = open_label_store(tmp_path / "labels.sqlite")
    yield EvalStore(labels)
    labels.close()


def request_for(server) -> RunRequest:
    return RunRequest(demo_set(), "memorysync", "memorysync:test", {"base_url": server.url}, k=5)


def test_a_429_pauses_every_worker_for_retry_after(memorysync_server, evals):
    store = open_store(base_url=memorysync_server.url, api_key=API_KEY, max_retries=0)
    memorysync_server.inject(
        429, {"error": {"code": "rate_limited", "message": "slow down", "details": {"retry_after": 0.6}}}, route=QUERY
    )
    info = start_run(store, evals, request_for(memorysync_server))
    store.close()
    assert info.complete and not any(o.error for o in evals.outcomes(info.run_id))
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
    assert evals.outcomes(info.run_id)[2].hits[0].breakdown


def test_a_store_failing_mid_run_leaves_it_incomplete_and_resume_finishes_it(memorysync_server, evals):
    store = open_store(base_url=memorysync_server.url, api_key=API_KEY, max_retries=0)
    memorysync_server.inject(503, {"error": {"code": "unavailable", "message": "down"}}, route=QUERY, times=20)
    with pytest.raises(RunStopped, match="the store failed 8 times in a row") as stopped:
        start_run(store, evals, request_for(memorysync_server))
    run_id = stopped.value.run_id
    partial = evals.run(run_id)
    assert not partial.complete and 0 < partial.done < 38
    assert partial.status == f"incomplete ({partial.done} of 38)"
    assert not any(o.error for o in evals.outcomes(run_id))  # failures are not kept as answers
    finished = resume_run(store, evals, run_id)
    store.close()
    assert finished.complete and finished.done == 38
