"""A bootstrap over fewer turns than MIN_INTERVAL_TURNS gives no interval and says
why, naming the minimum and the count, in `memlens calibrate`'s table and JSON, for
the global floor as for each segment, by one rule (issue 53: two labels from one turn
got "95% interval 0.23-0.235 over 1000 resamples of turns")."""

from __future__ import annotations

import json

from dashboard.calibration.bootstrap import MIN_INTERVAL_TURNS
from dashboard.cli.main import main

ONE_TURN_REASON = f"no interval: the labels hold 1 turn, fewer than the {MIN_INTERVAL_TURNS} a bootstrap of turns needs"


def write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def two_labels_one_turn(tmp_path):
    return write(tmp_path / "two.jsonl", [
        {"message_id": "t1", "memory_id": "a", "score": 0.25, "label": "relevant"},
        {"message_id": "t1", "memory_id": "b", "score": 0.21, "label": "not_relevant"},
    ])  # fmt: skip


def test_the_cli_gives_no_interval_over_one_turn_and_says_why(tmp_path, capsys):
    path = two_labels_one_turn(tmp_path)
    assert main(["calibrate", path]) == 0
    recommended = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("recommended floor"))
    assert recommended == f"recommended floor 0.23 at cost ratio 1: keeps 0 irrelevant, drops 0 relevant; {ONE_TURN_REASON}"

    assert main(["calibrate", path, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)["recommended"]
    assert report["interval"] is None and report["interval_note"] == ONE_TURN_REASON


def test_the_floor_file_carries_the_reason_instead_of_an_interval(tmp_path, capsys):
    out = tmp_path / "floor.json"
    assert main(["calibrate", two_labels_one_turn(tmp_path), "--floor-config-out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["interval"] is None and document["interval_note"] == ONE_TURN_REASON


def test_a_segment_with_enough_relevant_labels_but_too_few_turns_gets_the_global_rule(tmp_path, capsys):
    rows = []
    # "big": 30 turns; "small": 4 turns of 5 relevant and 5 irrelevant hits (20 relevant labels,
    # enough for a stable floor by count, too few turns for an interval).
    for tag, turns in (("big", 30), ("small", 4)):
        for turn in range(turns):
            for rank in range(10):
                relevant = rank % 2 == 0
                score = round((0.6 if relevant else 0.4) + (turn * 10 + rank) / 2000, 5)
                rows.append({"message_id": f"{tag}-{turn}", "memory_id": f"{tag}-{turn}-{rank}", "score": score,
                             "label": "relevant" if relevant else "not_relevant", "tag": tag})
    assert main(["calibrate", write(tmp_path / "tags.jsonl", rows), "--segment-by", "tag", "--resamples", "100"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert next(line for line in lines if line.startswith("segment tag=big:")).count("95% interval") == 1
    assert "interval" not in next(line for line in lines if line.startswith("segment tag=small:"))
    assert (
        f"warning: segment tag=small: no interval: the labels hold 4 turns, fewer than the {MIN_INTERVAL_TURNS} "
        "a bootstrap of turns needs"
    ) in lines
