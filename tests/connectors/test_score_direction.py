"""Score direction where scores enter (issue 34): a team logs Chroma's raw l2 distance
(lower is better, rising with rank) as the score. `memlens logs check` and `memlens
monitor` warn naming the likely cause; `memlens calibrate` refuses unless told the
direction. The same log with memlens's normalised score passes every check. Real
Chroma, the demo memories and the demo judgments."""

from __future__ import annotations

import json

import pytest
from demo_judgments import demo_queries
from markdown_text import seen

from connectors.demo_loader import demo_rows, load_chroma
from connectors.vector.chroma import ChromaStore, persistent_client
from dashboard.cli.main import main
from dashboard.score_direction import check_direction

DISTANCE = "look like a store's raw distance, not memlens's score"


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """(raw-distance log, memlens-score log), each also a label file (with `label`)."""
    rows, report = demo_rows()
    assert not report.issues, report.summary()
    folder = tmp_path_factory.mktemp("direction")
    load_chroma(persistent_client(folder / "chroma"), "demo", rows, space="l2")  # Chroma's default space
    store = ChromaStore("demo", path=folder / "chroma")
    raw, normalised = [], []
    for day, q in enumerate(demo_queries()):
        for hit in store.query(q["query"], user_id=q["user_id"], k=5).hits:
            row = {"message_id": q["message_id"], "memory_id": hit.memory_id, "rank": hit.rank,
                   "timestamp": f"2026-01-{day % 28 + 1:02d}T10:00:00Z",
                   "label": "relevant" if hit.memory_id in q["relevant"] else "not_relevant"}
            raw.append({**row, "score": hit.raw_score})
            normalised.append({**row, "score": hit.score})
    paths = []
    for name, lines in (("raw.jsonl", raw), ("memlens.jsonl", normalised)):
        path = folder / name
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        paths.append(path)
    return paths


def test_chromas_l2_distance_rises_with_rank_and_leaves_0_to_1():
    check = check_direction([0.4, 0.9, 1.3, 0.2, 0.7], ["a", "a", "a", "b", "b"], [1, 2, 3, 1, 2])
    assert check.rising == 2 and check.falling == 0 and check.outside == 1
    assert check_direction([0.9, 0.5, 0.8, 0.8], ["a", "a", "b", "b"], [1, 2, 1, 2]).warning() is None


def test_logs_check_warns_of_a_raw_distance(logs, capsys):
    raw, normalised = logs
    assert main(["logs", "check", str(raw)]) == 0
    out = capsys.readouterr().out
    assert "warning: scores rise with rank in" in out and DISTANCE in out
    assert main(["logs", "check", str(normalised)]) == 0
    assert "warning:" not in capsys.readouterr().out


def test_calibrate_refuses_a_raw_distance_unless_told_the_direction(logs, capsys):
    raw, normalised = logs
    assert main(["calibrate", str(raw), "--resamples", "0"]) == 2
    err = capsys.readouterr().err
    assert DISTANCE in err and "Calibration refused: if higher is better in this file, say so with --score-direction higher" in err
    assert main(["calibrate", str(raw), "--resamples", "0", "--score-direction", "lower"]) == 2
    assert "convert them to memlens's score first" in capsys.readouterr().err
    assert main(["calibrate", str(raw), "--resamples", "0", "--score-direction", "higher"]) == 0
    captured = capsys.readouterr()
    assert "Calibrated as given (--score-direction higher)" in captured.err and "MEMORY_SCORE_FLOOR=" in captured.out
    assert main(["calibrate", str(normalised), "--resamples", "0"]) == 0
    assert DISTANCE not in capsys.readouterr().err


def test_monitor_warns_of_a_raw_distance(logs, capsys):
    raw, normalised = logs
    main(["monitor", str(raw), "--floor", "0.35", "--window", "1d"])
    assert "warning: scores rise with rank in" in capsys.readouterr().err
    main(["monitor", str(normalised), "--floor", "0.35", "--window", "1d"])
    assert "warning:" not in capsys.readouterr().err


def test_the_calibrate_page_refuses_a_raw_distance_until_told(logs, app):
    from tests.ui.test_calibrate_page import open_calibrate

    raw, _ = logs
    at = open_calibrate(app, calibrate_source="Upload a file")
    at.file_uploader(key="calibrate_upload").set_value((raw.name, raw.read_bytes(), "application/jsonl")).run()
    assert not at.exception, at.exception
    assert any(DISTANCE in e.value and "Calibration is refused" in e.value for e in at.error)
    assert not [m for m in at.metric if m.label.startswith("Recommended floor")]
    at.checkbox(key="calibrate_scores_higher").check().run()
    assert not at.exception, at.exception
    assert [m for m in at.metric if m.label.startswith("Recommended floor")]


def test_the_monitor_page_warns_of_a_raw_distance_log_but_not_of_its_demo(logs, app):
    """The demo's synthetic scores stay in [0, 1] (a low top-1 minus its steps went below
    0: "61 of 35,196 scores outside [0, 1]" on the demo, a false warning); the raw
    Chroma distances uploaded on the same page are still called a raw distance."""
    from tests.ui.test_monitor_page import open_monitor

    at = open_monitor(app)
    shown = [seen(w.value) for w in at.warning]  # as the reader sees them, not the escaped source
    assert not [text for text in shown if DISTANCE in text or "outside [0, 1]" in text]
    raw, normalised = logs
    at.radio(key="monitor_source").set_value("Upload log files").run()
    at.file_uploader(key="monitor_upload").set_value([(raw.name, raw.read_bytes(), "application/jsonl")]).run()
    assert not at.exception, at.exception
    warned = [seen(w.value) for w in at.warning if DISTANCE in seen(w.value)]
    assert len(warned) == 1 and "scores rise with rank in" in warned[0] and "outside [0, 1]" in warned[0]
    at.file_uploader(key="monitor_upload").set_value([(normalised.name, normalised.read_bytes(), "application/jsonl")]).run()
    assert not at.exception, at.exception
    assert not [w.value for w in at.warning if DISTANCE in w.value]


def test_the_monitor_demo_log_is_memlens_scores():
    from dashboard.monitoring.synthetic import DEMO_LOG, synthetic_log

    table = synthetic_log(**DEMO_LOG)  # type: ignore[arg-type]  # DEMO_LOG holds ints only
    check = check_direction(table.column("score").drop_null().to_numpy())
    assert check.scores > 30_000 and check.outside == 0
