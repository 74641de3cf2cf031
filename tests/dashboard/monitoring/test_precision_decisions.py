"""The judged sample keeps what the monitor's windows keep (issue 54: a hit's kept or
dropped is the same in the agent and in the monitor). On a log the real agent side
writes over the real embedded demo store with a turn rule, `memlens monitor --judge`
sends the judge exactly the memories the agent put in the prompt (the top 3 kept per
turn, by rank): counted by the decisions the agent logged, and recomputed from the
floor file's rule on the same log without them. The judge is the real loopback model
server the other precision tests use; the grades land in a real SQLite app database."""

from __future__ import annotations

import json

import pytest
from chat_model_server import ChatModelServer
from demo_questions import demo_queries
from judged_logs import demo_judge

from dashboard.cli.main import main
from dashboard.database import AppDatabase
from memlens import FloorConfig, RetrievalLog, memory_for_prompt

SPACE = {"store": "embedded", "formula": "as sent", "setting": None}
FLOOR = 0.2
TOP = 3
RULES = {
    # the largest drop of each turn, with the floor: drops hits the floor alone keeps
    "largest-gap": {"kind": "largest-gap"},
    # keeps the top hit and near ties, whatever the floor: keeps turns the floor leaves empty
    "learned": {
        "kind": "learned",
        "features": ["score", "gap_to_top"],
        "coefficients": [1.0, -40.0],
        "intercept": 0.0,
        "cut": 0.5,
    },
}


@pytest.fixture(scope="module")
def judge_server(demo_store):
    texts = {m.memory_id: m.text for m in demo_store.list(user_id=None, limit=1000)}
    with ChatModelServer(demo_judge(texts)) as server:
        yield server


@pytest.fixture
def judged(tmp_path, monkeypatch, judge_server, demo_dir):
    monkeypatch.setenv("MEMLENS_LLM_BASE_URL", judge_server.url)
    monkeypatch.setenv("MEMLENS_LLM_MODEL", "grader")
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path))
    config = tmp_path / "umbrela.toml"
    config.write_text('name = "umbrela"\nkind = "llm"\n', encoding="utf-8")
    # a sample larger than the log's turns: every eligible turn is judged
    return ["--judge", str(config), "--send-text", "--sample", "100", "--db", str(demo_dir / "demo.sqlite"), "--min-turns", "1"]


def _agent_log(tmp_path, demo_store, rule):
    """The demo questions through memory_for_prompt under a floor file holding `rule`,
    logged with their text; the agent's top kept memories per turn, by rank."""
    floor_file = tmp_path / "rule.json"
    floor_file.write_text(json.dumps({"floor": FLOOR, "score_space": SPACE, "rule": rule}), encoding="utf-8")
    path = tmp_path / "log.jsonl"
    log = RetrievalLog(path, include_query=True)
    kept = set()
    for query in demo_queries():
        turn = memory_for_prompt(
            demo_store,
            query["query"],
            user_id=query.get("user_id"),
            k=5,
            floor=FloorConfig.load(floor_file),
            log=log,
            message_id=query["message_id"],
        )
        kept |= {(turn.message_id, hit.memory_id) for hit in sorted(turn.kept, key=lambda hit: hit.rank)[:TOP]}
    log.close()
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    # what a sample at the floor would grade: the top 3 scoring at or above it
    at_floor = set()
    for message_id in {row["message_id"] for row in rows}:
        above = sorted((r["rank"], r["memory_id"]) for r in rows if r["message_id"] == message_id and r["score"] >= FLOOR)
        at_floor |= {(message_id, memory_id) for _, memory_id in above[:TOP]}
    assert kept != at_floor  # the rule keeps other memories than the floor: the test tells the two apart
    return path, floor_file, rows, kept


def _graded_pairs(capsys, judge_server, args, labels):
    before = len(judge_server.received)
    status = main(["monitor", *map(str, args), "--labels", str(labels), "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert status in (0, 1), document  # a judge that passes its checks; alerts are not the point here
    graded = {(j.message_id, j.memory_id) for j in AppDatabase(labels).judge_labels.find(source="judge:umbrela@grader")}
    assert len(judge_server.received) - before == len(graded)  # each pair sent once
    return document, graded


@pytest.mark.parametrize("kind", list(RULES))
def test_the_judge_grades_the_memories_the_agent_logged_as_kept(tmp_path, demo_store, capsys, judge_server, judged, kind):
    path, _, rows, kept = _agent_log(tmp_path, demo_store, RULES[kind])
    document, graded = _graded_pairs(capsys, judge_server, [path, *judged], tmp_path / "app.sqlite")
    assert document["floor_rule"].startswith("each turn by its logged decisions")
    assert graded == kept
    turns_kept = len({message_id for message_id, _ in kept})
    assert sum(w["eligible_turns"] for w in document["precision"]["windows"]) == turns_kept
    assert sum(w["sampled_turns"] for w in document["precision"]["windows"]) == turns_kept
    assert sum(w["pairs"] for w in document["precision"]["windows"]) == len(kept)

    assert main(["monitor", str(path), *judged, "--labels", str(tmp_path / "app.sqlite")]) in (0, 1)
    out = capsys.readouterr().out
    assert "drawn from its kept turns (turns where the agent's logged decisions kept a memory" in out


@pytest.mark.parametrize("kind", list(RULES))
def test_the_judge_grades_what_the_floor_files_rule_keeps_on_a_log_without_decisions(
    tmp_path, demo_store, capsys, judge_server, judged, kind
):
    _, floor_file, rows, kept = _agent_log(tmp_path, demo_store, RULES[kind])
    bare = tmp_path / "bare.jsonl"
    bare.write_text(
        "".join(json.dumps({k: v for k, v in row.items() if k not in ("kept", "rule")}) + "\n" for row in rows), encoding="utf-8"
    )
    document, graded = _graded_pairs(capsys, judge_server, [bare, "--floor-config", floor_file, *judged], tmp_path / "app.sqlite")
    assert document["floor_rule"].startswith("each turn by the ")
    assert graded == kept
    assert sum(w["sampled_turns"] for w in document["precision"]["windows"]) == len({message_id for message_id, _ in kept})
