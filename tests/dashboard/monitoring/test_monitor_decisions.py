"""The monitor counts the decisions the agent logged per row, recomputes a floor
file's rule from a log without them, and shows a shadow config beside the shipped
one (issue 54). Logs written by the real agent side over the real embedded demo
store, read by the real `memlens monitor`."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from demo_questions import demo_queries

from connectors.base import Hit
from dashboard.cli.main import main
from dashboard.logs.writer import RetrievalLog as WriterLog
from dashboard.monitoring.decisions import mcnemar_p
from dashboard.runtime import FloorConfig, RetrievalLog, memory_for_prompt
from dashboard.turn_rule import LARGEST_GAP, TOP_RATIO

SPACE = {"store": "embedded", "formula": "as sent", "setting": None}


def _floor_file(path, floor, rule=None):
    path.write_text(json.dumps({"floor": floor, "score_space": SPACE, **({"rule": rule} if rule else {})}), encoding="utf-8")
    return path


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _monitor_json(capsys, *args):
    assert main(["monitor", *map(str, args), "--format", "json", "--min-turns", "1"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_shadow_run_on_the_demo_store_is_shown_side_by_side(tmp_path, demo_store, capsys):
    # the shipped floor 0.3 and, in shadow, a top-ratio candidate: the agent's block is
    # the shipped floor's, the log holds both decisions per row
    shipped = FloorConfig.load(_floor_file(tmp_path / "shipped.json", 0.3))
    candidate = FloorConfig.load(_floor_file(tmp_path / "candidate.json", 0.2, {"kind": TOP_RATIO, "cut": 0.95}))
    path = tmp_path / "log.jsonl"
    log = RetrievalLog(path)
    for query in demo_queries():
        memory_for_prompt(demo_store, query["query"], user_id=query.get("user_id"), k=5, floor=shipped, log=log,
                          shadow=candidate, message_id=query["message_id"])  # fmt: skip
    log.close()
    rows = _rows(path)
    turns = {row["message_id"] for row in rows}
    # the candidate's no-memory share, from the log's rows alone
    candidate_none = sum(1 for turn in turns if not any(r["shadow_kept"] for r in rows if r["message_id"] == turn))
    shipped_none = sum(1 for turn in turns if not any(r["kept"] for r in rows if r["message_id"] == turn))
    assert candidate_none != shipped_none  # the two configs differ on this traffic

    document = _monitor_json(capsys, path)
    shadow = document["shadow"]
    assert (shadow["shipped_rule"], shadow["candidate_rule"]) == ("floor", TOP_RATIO)
    [window] = shadow["windows"]  # the run took seconds: one day
    assert window["turns"] == len(turns)
    assert window["candidate_no_memory_share"] == pytest.approx(candidate_none / len(turns))
    assert window["shipped_no_memory_share"] == pytest.approx(shipped_none / len(turns))
    disagree = window["only_shipped_no_memory"] + window["only_candidate_no_memory"]
    assert disagree >= abs(candidate_none - shipped_none)
    assert window["mcnemar_p"] == pytest.approx(mcnemar_p(window["only_shipped_no_memory"], window["only_candidate_no_memory"]))
    # the shipped side is what the monitor's own windows count: the agent's logged decisions
    assert document["windows"][0]["no_memory_turns"] == shipped_none
    assert document["floor_rule"].startswith("each turn by its logged decisions")

    assert main(["monitor", str(path), "--min-turns", "1"]) == 0
    text = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(text) if line.startswith("shadow: the shipped floor against the candidate top-ratio"))
    day = text[head + 2].split()
    assert day[1] == str(len(turns))
    assert day[2] == f"{shipped_none / len(turns):.1%}" and day[3] == f"{candidate_none / len(turns):.1%}"
    assert text[head + 3].startswith("all windows")


def test_the_logged_decisions_decide_which_turns_have_memory(tmp_path, demo_store, capsys):
    # a largest-gap rule at a floor of 0: it keeps something on every turn, so the
    # logged decisions leave no turn without memory, where the floor alone would
    config = FloorConfig.load(_floor_file(tmp_path / "gap.json", 0.0, {"kind": LARGEST_GAP}))
    path = tmp_path / "log.jsonl"
    log = RetrievalLog(path)
    for query in demo_queries():
        memory_for_prompt(demo_store, query["query"], user_id=query.get("user_id"), k=5, floor=config, log=log, message_id=query["message_id"])
    log.close()
    rows = _rows(path)
    document = _monitor_json(capsys, path)
    assert document["floor_rule"] == f"each turn by its logged decisions, kept or dropped per row ({LARGEST_GAP}: {len(demo_queries())} turns)"
    assert document["windows"][0]["no_memory_turns"] == 0
    assert document["windows"][0]["kept_per_turn"] == pytest.approx(sum(r["kept"] for r in rows) / len(demo_queries()))
    # --floor still means "what if the floor were X": every score under 0.99
    assert _monitor_json(capsys, path, "--floor", "0.99")["windows"][0]["no_memory_turns"] == len(demo_queries())
    assert "shadow" not in document


def test_a_log_without_decisions_keeps_its_output_lines(tmp_path, capsys):
    path = tmp_path / "old.jsonl"
    at = datetime(2026, 1, 5, 10, tzinfo=UTC)
    lines = [
        {"message_id": f"t{i}", "memory_id": "m", "rank": 1, "score": 0.2 + 0.1 * (i % 4), "floor": 0.35,
         "floor_segment": "global", "timestamp": (at + timedelta(minutes=i)).isoformat()}
        for i in range(8)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert main(["monitor", str(path), "--min-turns", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "each turn at its logged floor (0.35 global: 8 turns), 1d windows, 1 window(s) from 1 file(s)"
    assert not any(line.startswith("shadow:") for line in out)


def _log_with_decisions(path, turns, config):
    """A log of `turns` (lists of scores) as the agent side writes it under `config`."""
    from dashboard.runtime import memory_from_hits

    log = WriterLog(path)
    for number, scores in enumerate(turns):
        hits = [(f"m{i}", "", score) for i, score in enumerate(scores)]
        memory_from_hits(hits, store_kind="embedded", floor=config, log=log, message_id=f"t{number}")
    log.close()


@pytest.mark.parametrize(
    "rule",
    [
        {"kind": LARGEST_GAP},
        {"kind": TOP_RATIO, "cut": 0.85},
        {"kind": "learned", "features": ["score", "rank", "gap_to_top", "z_score", "percentile"],
         "coefficients": [4.0, -0.3, -3.0, 0.4, 1.2], "intercept": -2.0, "cut": 0.35},
    ],
    ids=lambda rule: rule["kind"],
)  # fmt: skip
def test_the_monitor_keeps_what_the_agent_kept_for_1000_turns(tmp_path, capsys, rule):
    """The logged decisions, and the decisions recomputed from the rule file in the
    monitor's query, give the agent side's kept count on each of 1,000 turns."""
    import random

    rng = random.Random(54)
    turns = [[round(rng.uniform(0.0, 0.9), rng.choice((2, 3, 6))) for _ in range(rng.randint(0, 8))] for _ in range(1000)]
    floor_file = _floor_file(tmp_path / "rule.json", 0.3, rule)
    config = FloorConfig.load(floor_file)
    path = tmp_path / "log.jsonl"
    _log_with_decisions(path, turns, config)
    rows = _rows(path)
    agent_kept = {f"t{n}": 0 for n in range(len(turns))}
    for row in rows:
        agent_kept[row["message_id"]] += bool(row["kept"])

    from dashboard.monitoring.relation import open_logs

    logged = open_logs([str(path)], scores=False)
    assert dict(logged.con.execute("SELECT message_id, logged_kept FROM turns").fetchall()) == agent_kept
    # the same log with its decisions taken out: the rule file recomputes them in SQL
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({k: v for k, v in row.items() if k not in ("kept", "rule")}) + "\n" for row in rows), encoding="utf-8")
    recomputed = open_logs([str(bare)], scores=False, floor=0.3, decide=config.rule)
    assert dict(recomputed.con.execute("SELECT message_id, rule_kept FROM turns").fetchall()) == agent_kept

    # and the command's windows count the same turns without memory either way
    none = sum(1 for count in agent_kept.values() if count == 0)
    assert _monitor_json(capsys, path)["windows"][0]["no_memory_turns"] == none
    by_rule = _monitor_json(capsys, bare, "--floor-config", floor_file)
    assert by_rule["windows"][0]["no_memory_turns"] == none
    assert by_rule["floor_rule"].startswith(f"each turn by the {config.rule.describe()} from {floor_file}, computed from its rows")


def test_a_rule_reading_the_stores_parts_is_refused_on_a_log(tmp_path, capsys):
    path = tmp_path / "log.jsonl"
    log = WriterLog(path)
    log.write_turn("t1", [Hit("m", 1, "", 0.5)], timestamp=datetime(2026, 1, 5, tzinfo=UTC))
    log.close()
    rule = {"kind": "learned", "features": ["score", "part.semantic"], "coefficients": [1.0, 1.0], "intercept": 0.0, "cut": 0.5}
    assert main(["monitor", str(path), "--floor-config", str(_floor_file(tmp_path / "parts.json", 0.3, rule))]) == 2
    assert "score parts (part.semantic)" in capsys.readouterr().err


def test_a_rule_file_on_connect_says_it_is_applied_to_log_files_only(tmp_path, capsys):
    floor_file = _floor_file(tmp_path / "gap.json", 0.3, {"kind": LARGEST_GAP})
    status = main(["monitor", "--connect", f"duckdb:///{tmp_path / 'logs.duckdb'}", "--table", "retrievals", "--floor-config", str(floor_file)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1
    assert "is applied to log files only" in err[0]
