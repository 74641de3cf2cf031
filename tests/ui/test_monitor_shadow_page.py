"""The Monitor page shows a shadow config beside the shipped one, window by window,
with the figures `memlens monitor` prints for the same log (issue 54)."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

from connectors.base import Hit
from dashboard.cli.main import main
from dashboard.logs.writer import RetrievalLog


def _shadow_log(path) -> None:
    """Three days of 40 turns: the shipped floor 0.4 and a candidate at 0.3, in shadow."""
    rng = random.Random(7)
    log = RetrievalLog(path)
    for day in range(3):
        for turn in range(40):
            scores = [rng.uniform(0.1, 0.6) for _ in range(3)]
            hits = [Hit(f"m{i}", i + 1, "", score) for i, score in enumerate(scores)]
            log.write_turn(
                f"d{day}-t{turn}", hits, timestamp=datetime(2026, 1, 5 + day, 9, tzinfo=UTC) + timedelta(minutes=turn),
                floor=0.4, floor_segment="global", rule="floor", kept=[s >= 0.4 for s in scores],
                shadow_rule="floor", shadow_kept=[s >= 0.3 for s in scores],
            )  # fmt: skip
    log.close()


def test_the_page_shows_shipped_and_candidate_side_by_side_as_the_command_does(app, tmp_path, capsys):
    path = tmp_path / "shadow.jsonl"
    _shadow_log(path)
    assert main(["monitor", str(path), "--format", "json"]) == 0
    shadow = json.loads(capsys.readouterr().out)["shadow"]

    at = app()
    at.switch_page("monitor.py").run()
    at.radio(key="monitor_source").set_value("Upload log files").run()
    at.file_uploader(key="monitor_upload").set_value([("shadow.jsonl", path.read_bytes(), "application/json")]).run()
    assert not at.exception, at.exception
    assert "Shipped and candidate, side by side" in [h.value for h in at.subheader]
    table = next(frame.value for frame in at.dataframe if "candidate no memory" in frame.value.columns)
    assert list(table["window"]) == [w["window"] for w in shadow["windows"]] + ["all windows"]
    assert list(table["shipped no memory"][:-1]) == [w["shipped_no_memory_share"] for w in shadow["windows"]]
    assert list(table["candidate no memory"][:-1]) == [w["candidate_no_memory_share"] for w in shadow["windows"]]
    # the candidate's lower floor leaves fewer turns without memory, every day
    assert all(w["candidate_no_memory_share"] < w["shipped_no_memory_share"] for w in shadow["windows"])
