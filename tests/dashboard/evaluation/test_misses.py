"""`memlens misses RUN_ID`: every (question, relevant memory) pair of a run gets one
cause, and the counts are what the judged set, the store's contents and a deep run
say they must be.

The world: a generated judged set over an embedded store (real model, real SQLite)
from which known evidence memories were removed after the set was written. A run
at k=3 is analysed; a second run of the same set at a depth that returns every
memory of each user gives each pair's true rank. Both rank at one fixed clock,
which `misses` must take from the run's settings for its deeper queries. A store over
HTTP (the loopback MemorySync look-alike) is looked up by id, and a look-up that
fails leaves its pair unknown."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import pytest

from benchmarks import _eval_data
from connectors.embedded.store import EmbeddedStore
from connectors.http.memorysync import open_store
from dashboard.cli.main import main
from dashboard.database import AppDatabase, open_app_database
from dashboard.database.runs import QueryOutcome, RunHit
from dashboard.evaluation.judged_sets import JudgedSet, demo_set, read_file
from dashboard.evaluation.misses import CAUSES, UNKNOWN, judged_pairs, locate
from dashboard.evaluation.runs import RunRequest, start_run
from dashboard.judged import JudgedQuestion

K = 3
API_KEY = "msk-live-TESTKEY-7f3a9c21e4b8d6"  # the loopback MemorySync server's key
DEPTH = 20  # the deeper query's cap: some stored pairs rank below it
PER_USER = 150
AS_OF = "2026-11-01T00:00:00Z"
# Semantic similarity alone ranks these generated questions' answers first; with
# recency and importance weighing more, some stored answers fall past k.
WEIGHTS = "semantic=0.3,recency=0.35,importance=0.35,usage=0"
REMOVED_EVERY = 9  # every 9th evidence memory is deleted from the store


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    directory = tmp_path_factory.mktemp("misses")
    memories, questions = _eval_data.generate(users=2, memories_per_user=PER_USER, questions_per_user=60, seed=11)
    judged_path, memory_path = directory / "judged.jsonl", directory / "memories.jsonl"
    judged_path.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    memory_path.write_text("".join(json.dumps(m) + "\n" for m in memories), encoding="utf-8")
    db = directory / "store.sqlite"
    store = EmbeddedStore(db)
    assert store.import_jsonl(memory_path).imported == len(memories)
    evidence = sorted({m for q in read_file(judged_path).questions for m in q.relevant})
    removed = set(evidence[::REMOVED_EVERY])
    assert store.delete_except([m["id"] for m in memories if m["id"] not in removed]) == len(removed)
    store.close()
    created = {m["id"]: m["created_at"] for m in memories}
    return {"dir": directory, "db": db, "judged": judged_path, "removed": removed, "created": created}


@pytest.fixture
def cli_env(world, monkeypatch):
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(world["dir"] / "data"))
    monkeypatch.delenv("MEMLENS_LABELS_URL", raising=False)
    monkeypatch.delenv("MEMORY_SCORE_FLOOR", raising=False)
    return world


@pytest.fixture(scope="module")
def runs(world, tmp_path_factory):
    """The run under study (k=3) and the deep run (every memory of each user)."""
    patch = pytest.MonkeyPatch()
    patch.setenv("MEMLENS_DATA_DIR", str(world["dir"] / "data"))
    patch.delenv("MEMLENS_LABELS_URL", raising=False)
    try:
        ids = []
        for k in (K, PER_USER):
            code = main(["eval", str(world["judged"]), "--db", str(world["db"]), "--k", str(k), "--as-of", AS_OF,
                         "--weights", WEIGHTS, "--format", "json", "--trec-run", str(world["dir"] / f"run{k}.trec")])
            assert code == 0
            db = open_app_database({"MEMLENS_DATA_DIR": str(world["dir"] / "data")})
            ids.append(db.runs.all()[-1].run_id)
    finally:
        patch.undo()
    return ids


def _stored_ids(db: Path) -> set[str]:
    with sqlite3.connect(db) as connection:
        return {row[0] for row in connection.execute("SELECT id FROM memories")}


def _expected(world, deep_run: str, floor: float) -> list[dict]:
    """Each pair's cause and rank from the judged set, the store's contents and the deep run alone."""
    db = open_app_database({"MEMLENS_DATA_DIR": str(world["dir"] / "data")})
    deep = {o.message_id: {h.memory_id: h for h in o.hits} for o in db.runs.outcomes(deep_run)}
    stored = _stored_ids(world["db"])
    expected = []
    for q in read_file(world["judged"]).questions:
        for memory_id in q.relevant:
            hit = deep[q.message_id].get(memory_id)
            if memory_id not in stored:
                cause, rank = "not_stored", None
            elif hit.rank > K:
                cause, rank = "past_k", hit.rank if hit.rank <= DEPTH else None
            else:
                cause, rank = ("kept" if hit.score >= floor else "under_floor"), hit.rank
            expected.append({"message_id": q.message_id, "memory_id": memory_id, "cause": cause, "rank": rank,
                             "tags": list(q.tags)})
    return expected


def _floor_between(world, deep_run: str) -> float:
    """A floor that splits the top-k relevant hits, so kept and under_floor both occur."""
    db = open_app_database({"MEMLENS_DATA_DIR": str(world["dir"] / "data")})
    grades = {q.message_id: q.grades for q in read_file(world["judged"]).questions}
    scores = sorted(h.score or 0.0 for o in db.runs.outcomes(deep_run) for h in o.hits
                    if h.rank <= K and grades[o.message_id].get(h.memory_id, 0) > 0)
    return round(scores[len(scores) // 2], 4)


def test_the_four_counts_equal_the_judged_set_the_store_and_a_deep_run(cli_env, runs, capsys, tmp_path):
    world = cli_env
    run_id, deep_run = runs
    floor = _floor_between(world, deep_run)
    expected = _expected(world, deep_run, floor)
    counts = {c: sum(1 for e in expected if e["cause"] == c) for c in CAUSES}
    assert all(counts[c] > 0 for c in CAUSES), counts  # the world exercises every cause
    assert counts["not_stored"] == sum(1 for e in expected if e["memory_id"] in world["removed"])
    ranks = sorted(e["rank"] or 999 for e in expected if e["cause"] == "past_k")
    assert any(e["cause"] == "past_k" and e["rank"] is None for e in expected), ranks  # below the deeper query's cap

    pairs_csv, pairs_jsonl = tmp_path / "pairs.csv", tmp_path / "pairs.jsonl"
    assert main(["misses", run_id, "--floor", str(floor), "--depth", str(DEPTH), "--format", "json",
                 "--pairs", str(pairs_jsonl)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"] == counts
    assert summary["unknown"] == 0 and summary["pairs"] == len(expected) and summary["skipped_questions"] == 0
    assert summary["as_of"] == "2026-11-01T00:00:00+00:00" and summary["k"] == K and summary["depth"] == DEPTH
    for tag in ("one", "two"):
        tagged = [e for e in expected if tag in e["tags"]]
        assert summary["by_tag"][tag] == {c: sum(1 for e in tagged if e["cause"] == c) for c in CAUSES}

    rows = [json.loads(line) for line in pairs_jsonl.read_text().splitlines()]
    got = [{k: r[k] for k in ("message_id", "memory_id", "cause", "rank", "tags")} for r in rows]
    assert got == expected  # one line per pair, each with its cause and rank (the deep run's, capped)
    assert all(set(r) == {"run_id", "message_id", "user_id", "memory_id", "grade", "cause", "rank", "score", "floor",
                          "k", "stored", "ranked_by", "tags"} for r in rows)  # ids and numbers: no text

    assert main(["misses", run_id, "--floor", str(floor), "--depth", str(DEPTH), "--pairs", str(pairs_csv)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["scope", *CAUSES, "pairs"]
    assert table[1].split() == ["(all)", *(str(counts[c]) for c in CAUSES), str(len(expected))]
    assert [line.split()[0] for line in table[2:]] == ["tag:one", "tag:two"]
    with pairs_csv.open(newline="", encoding="utf-8") as handle:
        csv_rows = list(csv.DictReader(handle))
    assert [(r["message_id"], r["memory_id"], r["cause"]) for r in csv_rows] == [
        (e["message_id"], e["memory_id"], e["cause"]) for e in expected
    ]


def test_the_floor_moves_pairs_between_kept_and_under_floor_only(cli_env, runs, capsys):
    run_id, _ = runs
    results = []
    for floor in ("0", "1"):
        assert main(["misses", run_id, "--floor", floor, "--depth", "0", "--format", "json"]) == 0
        results.append(json.loads(capsys.readouterr().out))
    low, high = (r["counts"] for r in results)
    assert low["under_floor"] == 0 and high["kept"] == 0
    assert low["kept"] == high["under_floor"]
    assert (low["not_stored"], low["past_k"]) == (high["not_stored"], high["past_k"])
    assert results[0]["deep_queries"] == 0  # --depth 0: stored or not still comes from the look-up


def test_a_memory_created_after_the_runs_clock_was_not_stored_yet(cli_env, capsys):
    """Ranked as of 2026-06-01, a store of memories from January to October held only
    the earlier ones: a later evidence memory the run did not return is not_stored."""
    world = cli_env
    clock = "2026-06-01T00:00:00+00:00"
    assert main(["eval", str(world["judged"]), "--db", str(world["db"]), "--k", str(K), "--as-of", clock,
                 "--weights", WEIGHTS, "--format", "json"]) == 0
    evaluated = capsys.readouterr()
    run_id = json.loads(evaluated.out)["run_id"]
    assert main(["misses", run_id, "--depth", "0", "--format", "json"]) == 0
    captured = capsys.readouterr()
    # What the clock left out informs: `note:`, never the error's `memlens COMMAND:` prefix (issue 53).
    for err in (evaluated.err, captured.err):
        assert not any(line.startswith(("memlens eval:", "memlens misses:")) for line in err.splitlines()), err
    assert any(line.startswith("note: Ranked as of") for line in evaluated.err.splitlines()), evaluated.err
    db = open_app_database({"MEMLENS_DATA_DIR": str(world["dir"] / "data")})
    returned = {(o.message_id, h.memory_id) for o in db.runs.outcomes(run_id) for h in o.hits}
    stored = _stored_ids(world["db"])
    pairs = [(q.message_id, m) for q in read_file(world["judged"]).questions for m in q.relevant]
    later = [p for p in pairs if p not in returned and p[1] in stored and world["created"][p[1]] > clock]
    absent = [p for p in pairs if p not in returned and (p[1] not in stored or world["created"][p[1]] > clock)]
    assert later  # the clock leaves some evidence out
    assert json.loads(captured.out)["counts"]["not_stored"] == len(absent)
    said = f"note: {len(later)} pair(s)' memories were created after the run's clock ({clock})"
    assert any(line.startswith(said) for line in captured.err.splitlines()), captured.err


def test_an_unknown_run_or_a_bad_floor_is_refused(cli_env, capsys):
    assert main(["misses", "no-such-run"]) == 2
    assert "memlens misses: no run 'no-such-run'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:
        main(["misses", "x", "--floor", "1.5"])
    assert refused.value.code == 2
    assert "'1.5' is outside [0, 1]" in capsys.readouterr().err


def test_a_failed_question_is_left_out_and_a_pair_with_no_score_is_under_the_floor():
    questions = [
        JudgedQuestion("q1", "u", "a", {"m1": 1, "m2": 2}, ("one",)),
        JudgedQuestion("q2", "u", "b", {"m3": 1}),
        JudgedQuestion("q3", "u", "c", {}),  # unanswerable: no pair
    ]
    outcomes = [
        QueryOutcome("q1", 0, "u", [RunHit("m1", 1, None)]),
        QueryOutcome("q2", 1, "u", [], error="StoreTimeout: slow"),
        QueryOutcome("q3", 2, "u", [RunHit("m9", 1, 0.9)]),
    ]
    pairs, skipped = judged_pairs(questions, outcomes)
    assert [(p.message_id, p.memory_id, p.run_rank) for p in pairs] == [("q1", "m1", 1), ("q1", "m2", None)]
    assert skipped == 1
    assert pairs[0].cause(0.0) == "under_floor"  # no score: dropped, as apply_floor drops it


@pytest.fixture
def evals(tmp_path):
    db = AppDatabase(tmp_path / "labels.sqlite")
    yield db
    db.close()


def test_an_http_store_is_looked_up_by_id_and_a_failed_look_up_is_unknown(memorysync_server, evals):
    """MemorySync over loopback: its GET /memory/{id} says what is stored; when that
    look-up fails for one memory, the pair is unknown (named), never not_stored."""
    judged = demo_set()
    questions = [
        JudgedQuestion(q.message_id, q.user_id, q.query, {**q.grades, "sam-404": 1} if q.message_id == "demo-q03" else q.grades)
        for q in judged.questions
    ]
    judged = JudgedSet("gaps", questions)
    store = open_store(base_url=memorysync_server.url, api_key=API_KEY, max_retries=0)
    try:
        info = start_run(store, evals, RunRequest(judged, "memorysync", "memorysync:test", {"base_url": memorysync_server.url}, k=1))
        outcomes = evals.runs.outcomes(info.run_id)
        found = locate(store, info, judged.questions, outcomes, depth=50)
        counts = found.counts(0.0)
        assert counts["not_stored"] == 1 and UNKNOWN not in counts
        assert counts["past_k"] > 0 and counts["under_floor"] == 0
        assert all(r["rank"] and r["rank"] > 1 for r in found.rows(0.0) if r["cause"] == "past_k")
        assert any("only the embedded store's is exact" in n for n in found.notes)
        assert any("counts usage on every query" in n for n in found.notes)

        memorysync_server.inject(503, route="/memory/sam-404", times=5)
        unsure = locate(store, info, judged.questions, outcomes, depth=50)
    finally:
        store.close()
    assert unsure.counts(0.0) == {**counts, "not_stored": 0, UNKNOWN: 1}
    assert unsure.summary(0.0)["unknown"] == 1 and unsure.summary(0.0)["counts"]["not_stored"] == 0
    assert any("look-up by id failed for 1 pair(s)" in n for n in unsure.notes)
    [row] = [r for r in unsure.rows(0.0) if r["memory_id"] == "sam-404"]
    assert row["cause"] == UNKNOWN and row["stored"] is None
