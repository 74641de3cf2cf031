"""`memlens monitor` counts each turn at the floor applied to it: the floor the agent
logged (`floor`, `floor_segment`), or the floor config's for the turn's user, as the
agent applies it; `--floor X` is "what if the floor were X"; a log without the column
and neither flag exits 2. The same on an engine's table: test_monitor_connect_parity.py."""

from __future__ import annotations

import json

import pyarrow.json as pa_json
import pyarrow.parquet as pq
import pytest

from dashboard.cli.main import main

# 40 turns of user sam filtered at 0.28 (top-1 0.30: kept), 30 others at 0.35 with a
# top-1 of 0.40 (kept) and 30 at 0.35 with 0.32 (no memory): 30% with no memory at
# each turn's floor, 70% at one floor of 0.35, none at 0.28.
AT_EACH_TURNS_FLOOR, AT_035, AT_028 = 30, 70, 0


def _rows(with_floor: bool = True) -> list[dict]:
    rows = []

    def turn(i: int, user: str, floor: float, segment: str, top1: float) -> None:
        for rank, score in enumerate((top1, top1 - 0.1), start=1):
            row = {"message_id": f"t{i}", "memory_id": f"m{i}-{rank}", "rank": rank, "score": score, "user_id": user,
                   "timestamp": f"2026-01-01T{10 + i // 60:02d}:{i % 60:02d}:00Z", "store": "embedded"}  # fmt: skip
            if with_floor:
                row |= {"floor": floor, "floor_segment": segment}
            rows.append(row)

    for i in range(40):
        turn(i, "sam", 0.28, "user=sam", 0.30)
    for i in range(40, 70):
        turn(i, "ana", 0.35, "global", 0.40)
    for i in range(70, 100):
        turn(i, "ana", 0.35, "global", 0.32)
    return rows


def _jsonl(path, rows, tail: str = "") -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows) + tail)
    return str(path)


@pytest.fixture(params=["jsonl", "parquet", "jsonl with a torn last line"])
def segment_log(request, tmp_path):
    """The log in each way the monitor reads one: DuckDB over JSONL and Parquet, and
    the validating reader (a torn line DuckDB will not parse)."""
    if request.param == "parquet":
        source = _jsonl(tmp_path / "rows.jsonl", _rows())
        pq.write_table(pa_json.read_json(source), tmp_path / "log.parquet")
        return str(tmp_path / "log.parquet")
    tail = '{"message_id": "t999", "memory_' if "torn" in request.param else ""
    return _jsonl(tmp_path / "log.jsonl", _rows(), tail)


def _report(args, capsys) -> tuple[dict, str]:
    assert main(["monitor", *args, "--format", "json"]) == 0
    out = capsys.readouterr().out
    return json.loads(out), out


def test_each_turn_is_counted_at_its_logged_floor_and_the_output_says_so(segment_log, capsys):
    report, _ = _report([segment_log], capsys)
    assert report["windows"][0]["turns"] == 100
    assert report["windows"][0]["no_memory_turns"] == AT_EACH_TURNS_FLOOR
    assert report["floor"] is None
    assert report["floor_rule"].startswith("each turn at its logged floor (0.35 global: 60 turns; 0.28 user=sam: 40 turns)")
    assert main(["monitor", segment_log]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("each turn at its logged floor (0.35 global: 60 turns; 0.28 user=sam")


def test_floor_x_is_what_if_the_floor_were_x(segment_log, capsys):
    for floor, expected in (("0.35", AT_035), ("0.28", AT_028)):
        report, _ = _report([segment_log, "--floor", floor], capsys)
        assert report["windows"][0]["no_memory_turns"] == expected
        assert report["floor"] == float(floor) and report["floor_rule"] == f"floor {floor}"


def test_a_floor_config_applies_its_floors_per_user_to_a_log_without_floors(tmp_path, capsys):
    log = _jsonl(tmp_path / "old.jsonl", _rows(with_floor=False))
    config = tmp_path / "memlens-floor.json"
    config.write_text(json.dumps({"floor": 0.35, "segments": {"user": {"sam": 0.28}, "tag": {"billing": 0.5}},
                                  "score_space": {"store": "embedded", "formula": "as sent", "setting": None}}))  # fmt: skip
    report, _ = _report([log, "--floor-config", str(config)], capsys)
    assert report["windows"][0]["no_memory_turns"] == AT_EACH_TURNS_FLOOR
    assert f"each turn at its floor from {config} (0.35 global: 60 turns; 0.28 user=sam: 40 turns)" == report["floor_rule"]
    assert any("floor(s) per tag are not applied: a log has no tag" in note for note in report["notes"])


def test_a_floor_config_from_another_score_space_is_refused(segment_log, tmp_path, capsys):
    config = tmp_path / "memlens-floor.json"
    config.write_text(json.dumps({"floor": 0.35, "score_space": {"store": "chroma", "formula": "1 - d/2", "setting": "l2"}}))
    assert main(["monitor", segment_log, "--floor-config", str(config)]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the torn line's, where there is one
    assert last.startswith("memlens monitor: the floor 0.35 from ")
    assert "was calibrated in chroma (l2)" in last and "hold turns of embedded" in last


def test_a_log_without_a_floor_column_and_no_flag_exits_2_saying_what_to_give(tmp_path, capsys):
    log = _jsonl(tmp_path / "old.jsonl", _rows(with_floor=False))
    assert main(["monitor", log]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"memlens monitor: {log}: the turns carry no floor per turn")
    assert "give --floor X or --floor-config FILE" in err


def test_a_log_where_some_turns_carry_no_floor_exits_2_counting_them(tmp_path, capsys):
    rows = _rows()
    for row in rows[:10]:  # five turns of an older writer
        del row["floor"], row["floor_segment"]
    log = _jsonl(tmp_path / "mixed.jsonl", rows)
    assert main(["monitor", log]) == 2
    assert "5 of 100 turns with a memory" in capsys.readouterr().err
