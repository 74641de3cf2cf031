"""The agent side with a rule that reads the whole turn (issue 54), on the real
embedded demo store: a floor file holding a rule decides each hit by it, the log
records the rule and its decision per row, and a shadow config is logged beside the
shipped one without changing the block. `memlens logs check` reads every such row."""

from __future__ import annotations

import json

import pytest
from demo_questions import PIZZA, THEME

from dashboard.cli.main import main
from dashboard.logs.retrieval_log import read_log
from dashboard.runtime import FloorConfig, RetrievalLog, RetrievalSpans, memory_for_prompt, memory_from_hits
from dashboard.turn_rule import LARGEST_GAP, TurnRule, kept_mask

SPACE = {"store": "embedded", "formula": "as sent", "setting": None}
QUESTIONS = (THEME, PIZZA, "What does the user do for work?", "Where does the user live?")


def _floor_file(tmp_path, name, floor, rule=None):
    path = tmp_path / name
    path.write_text(json.dumps({"floor": floor, "score_space": SPACE, **({"rule": rule} if rule else {})}), encoding="utf-8")
    return FloorConfig.load(path)


def _ids(hits):
    return [hit.memory_id for hit in hits]


def _rows(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_rule_file_decides_each_hit_and_the_log_records_the_decision(tmp_path, demo_store):
    config = _floor_file(tmp_path, "gap.json", 0.2, {"kind": LARGEST_GAP})
    log = RetrievalLog(tmp_path / "log.jsonl")
    turns = [memory_for_prompt(demo_store, q, user_id="sam", k=5, floor=config, log=log, message_id=f"t{i}") for i, q in enumerate(QUESTIONS)]
    log.close()
    for turn in turns:
        hits = sorted(turn.kept + turn.dropped, key=lambda hit: hit.rank)
        expected = kept_mask([hit.score for hit in hits], TurnRule(LARGEST_GAP), 0.2)
        assert [hit in turn.kept for hit in hits] == expected
        assert turn.rule == LARGEST_GAP
    # the rule drops hits the floor alone would keep: the turn's own scores decide
    assert any(hit.score >= 0.2 for turn in turns for hit in turn.dropped)
    rows = _rows(tmp_path / "log.jsonl")
    assert {row["rule"] for row in rows} == {LARGEST_GAP}
    kept_ids = {(turn.message_id, hit.memory_id) for turn in turns for hit in turn.kept}
    assert {(row["message_id"], row["memory_id"]) for row in rows if row["kept"]} == kept_ids
    assert all("shadow_rule" not in row for row in rows)


def test_a_floor_without_a_rule_logs_floor_and_its_decision(tmp_path, demo_store):
    log = RetrievalLog(tmp_path / "log.jsonl")
    turn = memory_for_prompt(demo_store, THEME, user_id="sam", k=5, floor=0.3, log=log)
    log.close()
    rows = _rows(tmp_path / "log.jsonl")
    assert {row["rule"] for row in rows} == {"floor"}
    assert [row["kept"] for row in rows] == [row["score"] >= 0.3 for row in rows]
    assert sum(row["kept"] for row in rows) == len(turn.kept)


def test_a_shadow_config_is_logged_and_never_changes_the_block(tmp_path, demo_store):
    shipped = _floor_file(tmp_path, "shipped.json", 0.3)
    candidate = _floor_file(tmp_path, "candidate.json", 0.2, {"kind": "top-ratio", "cut": 0.9})
    log = RetrievalLog(tmp_path / "log.jsonl")
    for i, question in enumerate(QUESTIONS):
        plain = memory_for_prompt(demo_store, question, user_id="sam", k=5, floor=shipped)
        shadowed = memory_for_prompt(demo_store, question, user_id="sam", k=5, floor=shipped, log=log, shadow=candidate, message_id=f"t{i}")
        alone = memory_for_prompt(demo_store, question, user_id="sam", k=5, floor=candidate)
        # (the demo store's recency moves with the clock: the same question's scores differ in the last digits)
        assert (shadowed.block, _ids(shadowed.kept), shadowed.source) == (plain.block, _ids(plain.kept), plain.source)
        hits = sorted(alone.kept + alone.dropped, key=lambda hit: hit.rank)
        assert shadowed.shadow_kept == [hit in alone.kept for hit in hits]
    log.close()
    rows = _rows(tmp_path / "log.jsonl")
    assert {(row["rule"], row["shadow_rule"]) for row in rows} == {("floor", "top-ratio")}
    # the candidate decides differently from the shipped floor on some hit: the log shows where
    assert any(row["kept"] != row["shadow_kept"] for row in rows)


def test_memory_from_hits_applies_the_rule_to_the_teams_own_hits(tmp_path):
    config = FloorConfig(floor=0.1, rule=TurnRule("top-ratio", cut=0.8))
    turn = memory_from_hits([("a", "x", 0.9), ("b", "y", 0.7), ("c", "z", 0.74)], store_kind="embedded", floor=config)
    assert [hit.memory_id for hit in turn.kept] == ["a", "c"] and turn.rule == "top-ratio"
    nothing = memory_from_hits([("a", "x", 0.05)], store_kind="embedded", floor=config)
    assert nothing.kept == [] and nothing.reason.startswith("all 1 dropped by the top-ratio rule")


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_logs_check_reads_rule_and_shadow_rows_with_no_bad_row(tmp_path, demo_store, capsys, suffix):
    config = FloorConfig(floor=0.2, rule=TurnRule(LARGEST_GAP))
    shadow = FloorConfig(floor=0.35)
    path = tmp_path / f"log{suffix}"
    log = RetrievalLog(path)
    for i, question in enumerate(QUESTIONS):
        memory_for_prompt(demo_store, question, user_id="sam", k=5, floor=config, log=log, shadow=shadow, message_id=f"t{i}")
    memory_from_hits([], store_kind="embedded", floor=config, log=log, shadow=shadow, message_id="empty")
    log.close()
    assert main(["logs", "check", str(path)]) == 0
    summary = capsys.readouterr().out.splitlines()[0]
    assert "imported 20 rows in 5 turns from 21 read; 0 bad row(s)" in summary
    assert len(read_log(path).empty_turns) == 1


def test_spans_carry_the_rule_and_are_read_with_no_bad_row(tmp_path, demo_store, capsys):
    from tests.dashboard.logs.test_otlp import collector_json_lines, tracer_and_exporter

    tracer, exporter = tracer_and_exporter()
    spans = RetrievalSpans(tracer)
    config = FloorConfig(floor=0.2, rule=TurnRule(LARGEST_GAP))
    turn = memory_for_prompt(demo_store, THEME, user_id="sam", k=5, floor=config, log=spans, shadow=FloorConfig(floor=0.35))
    attributes = exporter.get_finished_spans()[0].attributes
    assert attributes["memlens.rule"] == LARGEST_GAP and attributes["memlens.shadow_rule"] == "floor"
    kept = [attributes[f"retrieval.documents.{i}.document.memlens.kept"] for i in range(5)]
    assert sum(kept) == len(turn.kept)
    path = tmp_path / "traces.json"
    path.write_bytes(collector_json_lines(exporter.get_finished_spans()))
    assert main(["logs", "check", str(path)]) == 0
    assert "0 bad row(s)" in capsys.readouterr().out.splitlines()[0]
