"""`memlens calibrate --floor-config-out FILE`: the floor file the Calibrate page
downloads, written from the command line, read back by FloorConfig.load and by
`memlens monitor --floor-config`, its floor the one printed as MEMORY_SCORE_FLOOR=."""

from __future__ import annotations

import json
import re

from dashboard.cli.main import main
from dashboard.floor_config import FloorConfig
from tests.dashboard.calibration.test_segments import mixed_rows


def _labels(path) -> str:
    rows = mixed_rows()
    for i, row in enumerate(rows):
        row["store"] = "embedded:1a2b3c4d"
        row["created_at"] = f"2026-01-{1 + i % 5:02d}T10:00:00+00:00"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def test_the_floor_file_holds_the_printed_floor_the_space_the_segments_and_the_dates(tmp_path, capsys):
    labels, out = _labels(tmp_path / "labels.jsonl"), tmp_path / "memlens-floor.json"
    args = ["calibrate", labels, "--target-recall", "0.9", "--segment-by", "user", "--resamples", "0"]
    assert main([*args, "--floor-config-out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"floor config written to {out}" in printed
    shipped = float(re.search(r"^MEMORY_SCORE_FLOOR=(\S+)$", printed, re.MULTILINE).group(1))
    document = json.loads(out.read_text())
    assert document["floor"] == shipped and document["snippet"] == f"MEMORY_SCORE_FLOOR={printed.split('MEMORY_SCORE_FLOOR=')[1].split()[0]}"
    assert document["mode"] == "target_recall" and document["target"] == 0.9
    assert document["date_range"] == {"from": "2026-01-01T10:00:00+00:00", "to": "2026-01-05T10:00:00+00:00"}
    config = FloorConfig.load(out)
    assert config.floor == shipped
    assert config.score_space is not None and config.score_space.store == "embedded" and config.notes == []
    assert set(config.segments["user"]) == {"ana", "ben"} and config.segments["user"]["ana"] < config.segments["user"]["ben"]
    assert config.label_range is not None and f"{config.label_range[0]:%Y-%m-%d}" == "2026-01-01"
    # JSON output keeps stdout for the data; the path goes to stderr
    assert main([*args, "--format", "json", "--floor-config-out", str(out)]) == 0
    done = capsys.readouterr()
    assert json.loads(done.out)["advice"]["floor"] == shipped and f"floor config written to {out}" in done.err


def test_memlens_monitor_reads_the_file_back(tmp_path, capsys):
    out = tmp_path / "memlens-floor.json"
    assert main(["calibrate", _labels(tmp_path / "labels.jsonl"), "--resamples", "0", "--floor-config-out", str(out)]) == 0
    shipped = FloorConfig.load(out).floor
    capsys.readouterr()
    log = tmp_path / "log.jsonl"
    log.write_text("".join(
        json.dumps({"message_id": f"t{i}", "memory_id": "m1", "rank": 1, "score": 0.9 if i % 2 else 0.01,
                    "timestamp": f"2026-01-02T10:{i:02d}:00Z", "store": "embedded:1a2b3c4d"}) + "\n"
        for i in range(20)
    ))  # fmt: skip
    assert main(["monitor", str(log), "--floor-config", str(out), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["floor"] == shipped and report["windows"][0]["no_memory_turns"] == 10


def test_a_floor_file_that_cannot_be_written_is_one_line_and_exit_2(tmp_path, capsys):
    out = tmp_path / "missing" / "memlens-floor.json"
    assert main(["calibrate", _labels(tmp_path / "labels.jsonl"), "--resamples", "0", "--floor-config-out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"memlens calibrate: --floor-config-out {out}: cannot write the file (")
    assert not out.exists()
