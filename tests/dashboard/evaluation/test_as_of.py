"""`memlens eval --as-of TIME`: the clock the embedded store's recency is computed at,
kept with the run (settings, `runs list`, the JSONL export) and reused by
`memlens runs resume`. On a store of 2023 memories ranked from today, every
memory's recency is about 0; ranked as of 2023-05-08 a day-old memory's is 0.79."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pytest

from connectors.base import InvalidRequest, parse_as_of
from connectors.embedded.factories import open_store
from connectors.embedded.store import EmbeddedStore
from dashboard.cli.main import main
from dashboard.database import open_app_database
from dashboard.evaluation.judged_sets import JudgedSet
from dashboard.evaluation.runs import RunRequest, RunStopped, start_run
from dashboard.judged import JudgedQuestion

AS_OF = datetime(2023, 5, 8, tzinfo=UTC)
HALF_LIFE = 72.0
QUESTIONS = 70  # more than one batch of 64, so a run can stop half way


def expected_recency(created: datetime) -> float:
    hours = (AS_OF - created).total_seconds() / 3600
    return math.exp(-hours * math.log(2) / HALF_LIFE)


@pytest.fixture(scope="module")
def old_store(tmp_path_factory):
    directory = tmp_path_factory.mktemp("as_of")
    path = directory / "store.sqlite"
    store = EmbeddedStore(path)
    rows = [
        {"id": f"m{i}", "user_id": "u", "text": f"Visited city number {i} on a trip", "importance": 0.5,
         "created_at": AS_OF - timedelta(hours=6 * (i + 1)), "usage_count": 0, "metadata": {}}
        for i in range(20)
    ]
    store.import_rows(rows)
    store.close()
    created = {row["id"]: row["created_at"] for row in rows}
    return path, created


def judged_file(directory):
    lines = [
        json.dumps({"message_id": f"q{i}", "user_id": "u", "query": f"Which city number {i % 20} did the user visit?",
                    "relevant": [f"m{i % 20}"]})
        for i in range(QUESTIONS)
    ]
    path = directory / "judged.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_parse_as_of_takes_dates_and_times_and_names_a_bad_one():
    assert parse_as_of("2023-05-08") == AS_OF
    assert parse_as_of("2023-05-08T02:00:00+02:00") == AS_OF
    assert parse_as_of("2023-05-08T00:00:00Z") == AS_OF
    with pytest.raises(InvalidRequest, match="as_of: 'last tuesday' is not an ISO 8601 time"):
        parse_as_of("last tuesday")


def test_the_store_ranks_at_its_as_of_clock(old_store):
    path, created = old_store
    store = open_store(str(path), as_of="2023-05-08")
    hit = store.query("city number 3", user_id="u", k=1).hits[0]
    assert hit.breakdown["recency"] == pytest.approx(expected_recency(created[hit.memory_id]), rel=1e-6)
    today = open_store(str(path)).query("city number 3", user_id="u", k=1).hits[0]
    assert today.breakdown["recency"] < 1e-6  # from 2026, a 2023 memory is old


@pytest.fixture
def cli_env(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MEMLENS_LABELS_URL", raising=False)
    return tmp_path


def _recency_matches(evals, run_id, created):
    for outcome in evals.runs.outcomes(run_id):
        for hit in outcome.hits:
            assert hit.breakdown["recency"] == pytest.approx(expected_recency(created[hit.memory_id]), rel=1e-6)


def test_eval_as_of_is_kept_listed_exported_and_used(old_store, cli_env, capsys):
    path, created = old_store
    judged = judged_file(cli_env)
    assert main(["eval", str(judged), "--db", str(path), "--k", "3", "--as-of", "2023-05-08", "--format", "json"]) == 0
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    db = open_app_database({"MEMLENS_DATA_DIR": str(cli_env / "data")})
    info = db.runs.get(run_id)
    assert info.as_of == "2023-05-08T00:00:00+00:00" and info.settings["as_of"] == info.as_of
    _recency_matches(db, run_id, created)
    assert main(["runs", "list"]) == 0
    assert capsys.readouterr().out.rstrip("\n").endswith("\tas_of=2023-05-08T00:00:00+00:00")
    assert main(["runs", "export", run_id, "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == QUESTIONS and {row["as_of"] for row in rows} == {"2023-05-08T00:00:00+00:00"}


def test_resume_ranks_at_the_runs_clock(old_store, cli_env, capsys):
    path, created = old_store
    db = open_app_database({"MEMLENS_DATA_DIR": str(cli_env / "data")})
    judged = JudgedSet("old", [JudgedQuestion(f"q{i}", "u", f"city number {i % 20}", {f"m{i % 20}": 1}) for i in range(QUESTIONS)])
    as_of = "2023-05-08T00:00:00+00:00"
    settings: dict[str, object] = {"db_path": str(path), "as_of": as_of}
    asked = iter([False, True])  # stop before the second batch
    with pytest.raises(RunStopped) as stopped:
        start_run(open_store(str(path), as_of=as_of), db, RunRequest(judged, "embedded", "embedded:x", settings, 3),
                  cancelled=lambda: next(asked))
    run_id = stopped.value.run_id
    assert db.runs.get(run_id).done == 64
    assert main(["runs", "resume", run_id]) == 0
    assert db.runs.get(run_id).complete
    _recency_matches(db, run_id, created)  # the last 6 questions too, not ranked from today


def test_a_bad_time_or_a_store_without_a_clock_is_refused(old_store, cli_env, capsys):
    path, _ = old_store
    judged = judged_file(cli_env)
    assert main(["eval", str(judged), "--db", str(path), "--k", "3", "--as-of", "yesterday"]) == 2
    assert "memlens eval: --as-of 'yesterday' is not an ISO 8601 time" in capsys.readouterr().err
    assert main(["eval", str(judged), "--store", "memorysync", "--k", "3", "--as-of", "2023-05-08"]) == 2
    assert "--as-of: the memorysync store computes recency itself" in capsys.readouterr().err


# The store as it was at the clock (issue 34): memories created after it did not
# exist yet. The fixture's memories are 6 h to 120 h before AS_OF; m0 is the newest.


def test_memories_created_after_the_clock_are_not_returned(old_store):
    path, created = old_store
    clock = AS_OF - timedelta(hours=60)  # m0..m8 (6 h to 54 h before AS_OF) are later
    later = {memory_id for memory_id, when in created.items() if when > clock}
    assert len(later) == 9
    result = open_store(str(path), as_of=clock.isoformat()).query("city number 3", user_id="u", k=20)
    returned = {hit.memory_id for hit in result.hits}
    assert returned == set(created) - later
    for hit in result.hits:  # each at its age at the clock, none "brand new" from the future
        hours = (clock - created[hit.memory_id]).total_seconds() / 3600
        assert hours >= 0 and hit.breakdown["recency"] == pytest.approx(math.exp(-hours * math.log(2) / HALF_LIFE))
    assert "9 of this user's 20 memories were created later and are left out" in " ".join(result.notes)
    # Without the clock the same question gets m3 first; ranked before m3 existed it cannot.
    assert open_store(str(path)).query("city number 3", user_id="u", k=1).hits[0].memory_id == "m3"
    assert result.hits[0].memory_id != "m3"


def test_a_clock_before_every_memory_returns_nothing_and_says_so(old_store):
    path, _ = old_store
    store = open_store(str(path), as_of="2020-01-01")
    result = store.query("city number 3", user_id="u", k=10)
    assert result.hits == []
    assert any("before every one of this user's 20 memories" in note for note in result.notes)
    (answer,) = store.query_many(["city number 3"], ["u"], k=10)
    assert answer.hits == []


def test_eval_before_every_memory_scores_nothing_and_says_why(old_store, cli_env, capsys):
    path, _ = old_store
    judged = judged_file(cli_env)
    assert main(["eval", str(judged), "--db", str(path), "--k", "3", "--as-of", "2020-01-01", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "before every one of the store's 20 memories: none existed yet" in captured.err
    run_id = json.loads(captured.out)["run_id"]
    db = open_app_database({"MEMLENS_DATA_DIR": str(cli_env / "data")})
    assert all(outcome.hits == [] for outcome in db.runs.outcomes(run_id))


def test_eval_counts_the_memories_its_clock_leaves_out(old_store, cli_env, capsys):
    path, created = old_store
    judged = judged_file(cli_env)
    clock = (AS_OF - timedelta(hours=60)).isoformat()
    assert main(["eval", str(judged), "--db", str(path), "--k", "20", "--as-of", clock, "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert "9 of the store's 20 memories were created later and are left out" in captured.err
    run_id = json.loads(captured.out)["run_id"]
    db = open_app_database({"MEMLENS_DATA_DIR": str(cli_env / "data")})
    when = datetime.fromisoformat(clock)
    returned = [hit.memory_id for outcome in db.runs.outcomes(run_id) for hit in outcome.hits]
    assert returned and all(created[memory_id] <= when for memory_id in returned)
