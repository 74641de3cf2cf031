"""`memlens calibrate`, run as the installed console script on the demo labels."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DEMO_LABELS = ROOT / "demo_data" / "demo_labels.jsonl"
MEMLENS = Path(sys.executable).parent / "memlens"
FLOOR_LINE = re.compile(
    r"^floor (\d\.\d\d+): keeps (\d+) irrelevant, drops (\d+) relevant, "
    r"precision (\d\.\d\d|n/a), recall (\d\.\d\d), no memory in (\d+)% of turns$"
)


def memlens(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(MEMLENS), *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def demo_rows() -> list[dict]:
    return [json.loads(line) for line in DEMO_LABELS.read_text().splitlines() if line.strip()]


def counted_by_hand(floor: float) -> tuple[int, int, float]:
    rows = demo_rows()
    kept_irrelevant = sum(r["score"] >= floor and r["label"] == "not_relevant" for r in rows)
    dropped_relevant = sum(r["score"] < floor and r["label"] == "relevant" for r in rows)
    turns = {r["message_id"] for r in rows}
    empty = turns - {r["message_id"] for r in rows if r["score"] >= floor}
    return kept_irrelevant, dropped_relevant, len(empty) / len(turns)


def band_by_hand() -> tuple[float, float] | None:
    """(best irrelevant score, worst relevant score) when every relevant memory
    scores above every irrelevant one, else None."""
    rows = demo_rows()
    best_irrelevant = max(r["score"] for r in rows if r["label"] == "not_relevant")
    worst_relevant = min(r["score"] for r in rows if r["label"] == "relevant")
    return (best_irrelevant, worst_relevant) if worst_relevant > best_irrelevant else None


def cheapest_floors_by_hand(cost_ratio: float) -> tuple[float, float, float]:
    """The lowest range of floors (low, high] with the least cost_ratio * kept
    irrelevant + dropped relevant, tried at every distinct score (a floor between two
    scores keeps what the floor at the upper one keeps), and that cost."""
    scores = sorted({r["score"] for r in demo_rows()})
    candidates = [*scores, scores[-1] + 1]
    costs = [cost_ratio * counted_by_hand(f)[0] + counted_by_hand(f)[1] for f in candidates]
    best = costs.index(min(costs))  # the first: ties go to the floors that keep the most
    low = candidates[best - 1] if best else float("-inf")
    return low, candidates[best], costs[best]


def recommended_by_hand(cost_ratio: float) -> str:
    """The floor to paste: the middle of the cheapest range, at two decimals (the
    demo labels' range is wide enough for that)."""
    low, high, _ = cheapest_floors_by_hand(cost_ratio)
    floor = round((low + high) / 2, 2)
    assert low < floor <= high, "two decimals do not fit in the cheapest range; the helper needs more"
    return f"{floor:.2f}"


def test_table_prints_one_line_per_floor_then_band_and_recommendation():
    done = memlens("calibrate", str(DEMO_LABELS))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    floor_lines = [FLOOR_LINE.match(line) for line in lines[:6]]
    assert all(floor_lines), lines[:6]
    assert [m.group(1) for m in floor_lines] == ["0.15", "0.20", "0.25", "0.30", "0.35", "0.40"]
    for match in floor_lines:
        kept, dropped, empty_share = counted_by_hand(float(match.group(1)))
        assert (int(match.group(2)), int(match.group(3))) == (kept, dropped)
        assert int(match.group(6)) == round(empty_share * 100)
    band = band_by_hand()
    assert band is not None, "the demo labels have a separating band; the checks below assume one"
    assert lines[6].startswith(
        f"separating band: any floor above {band[0]:.3f} and up to {band[1]:.3f} keeps every relevant memory "
        "and drops every irrelevant one"
    ), lines[6]
    floor = recommended_by_hand(1.0)
    kept, dropped, _ = counted_by_hand(float(floor))
    assert cheapest_floors_by_hand(1.0)[2] == kept + dropped == 0  # a band: the floor loses nothing
    assert lines[7].startswith(f"recommended floor {floor} at cost ratio 1: keeps {kept} irrelevant, drops {dropped} relevant")
    assert lines[8] == f"MEMORY_SCORE_FLOOR={floor}"
    rows = demo_rows()
    assert f"{len(rows)} labelled rows" in lines[9]


def test_custom_floors_and_cost_ratio():
    done = memlens("calibrate", str(DEMO_LABELS), "--floors", "0.3,0.33", "--cost-ratio", "4")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("floor 0.30: ") and lines[1].startswith("floor 0.33: ")
    floor = recommended_by_hand(4.0)
    assert f"recommended floor {floor} at cost ratio 4: " in done.stdout
    assert f"MEMORY_SCORE_FLOOR={floor}" in done.stdout.splitlines()


def test_csv_is_the_full_sweep():
    done = memlens("calibrate", str(DEMO_LABELS), "--format", "csv", "--floors", "0.123456")
    assert done.returncode == 0, done.stderr
    table = list(csv.DictReader(io.StringIO(done.stdout)))
    distinct = {r["score"] for r in demo_rows()}
    assert len(table) == len(distinct) + (0.123456 not in distinct)
    assert [row["floor"] for row in table if row["requested"] == "True"] == ["0.123456"]
    assert list(table[0]) == [
        "floor", "requested", "kept_relevant", "kept_irrelevant", "dropped_relevant", "dropped_irrelevant",
        "precision", "recall", "f1", "no_memory_share", "mean_kept_per_turn",
        "no_memory_share_answerable", "no_memory_share_unanswerable",
    ]  # fmt: skip


def test_json_has_floors_band_recommendation_and_label_counts():
    done = memlens("calibrate", str(DEMO_LABELS), "--format", "json", "--floors", "0.35")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    rows = demo_rows()
    assert report["labels"]["rows"] == len(rows)
    assert report["labels"]["relevant"] == sum(r["label"] == "relevant" for r in rows)
    assert report["labels"]["reviewers"] == ["demo-judgments"]
    assert report["floors"][0]["floor"] == 0.35
    assert report["floors"][0]["kept_irrelevant"] == counted_by_hand(0.35)[0]
    low, high, cost = cheapest_floors_by_hand(1.0)
    assert (report["recommended"]["low"], report["recommended"]["high"], report["recommended"]["cost"]) == (low, high, cost)
    assert report["recommended"]["snippet"] == f"MEMORY_SCORE_FLOOR={recommended_by_hand(1.0)}"


def test_bad_lines_go_to_stderr_with_line_numbers_and_the_rest_is_used(tmp_path):
    rows = demo_rows()
    relevant = [r for r in rows if r["label"] == "relevant"][:10]
    irrelevant = [r for r in rows if r["label"] == "not_relevant"][:10]
    text = [json.dumps(r) for r in relevant + irrelevant]
    text.insert(3, "{not json")
    text.insert(7, json.dumps({**rows[0], "memory_id": "x", "label": "maybe"}))
    path = tmp_path / "partly-bad.jsonl"
    path.write_text("\n".join(text) + "\n")
    done = memlens("calibrate", str(path))
    assert "line 4, field '(line)': not valid JSON" in done.stderr
    assert "line 8, field 'label': unknown label 'maybe'" in done.stderr
    assert done.returncode == 0
    assert "20 labelled rows (10 relevant, 10 not relevant)" in done.stdout


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"score": 0.3, "label": "relevant"}\n{"score": 0.5, "label": "relevant"}\n', "All 2 labelled rows are 'relevant'"),
        ("", "No labelled rows"),
        ("id,relevance\nm1,1\n", "must name the columns 'score' and 'label'"),
    ],
)
def test_unusable_input_exits_non_zero_with_a_clear_message(tmp_path, content, message):
    path = tmp_path / ("labels.csv" if content.startswith("id,") else "labels.jsonl")
    path.write_text(content)
    done = memlens("calibrate", str(path))
    assert done.returncode == 2
    assert message in done.stderr and done.stdout == ""


def test_missing_file_and_bad_arguments_exit_non_zero(tmp_path):
    done = memlens("calibrate", str(tmp_path / "nope.jsonl"))
    assert done.returncode == 2 and "Cannot read" in done.stderr
    done = memlens("calibrate", str(DEMO_LABELS), "--floors", "0.2,abc")
    assert done.returncode == 2 and "'abc' is not a number" in done.stderr
    done = memlens("calibrate", str(DEMO_LABELS), "--cost-ratio", "0")
    assert done.returncode == 2 and "must be a number above 0" in done.stderr


def test_the_label_pages_export_of_a_two_reviewer_session_is_not_called_duplicates(tmp_path):
    from dashboard.database import AppDatabase
    from dashboard.labels import export

    db = AppDatabase(tmp_path / "labels.sqlite")
    for reviewer, label in (("ana", "relevant"), ("ben", "not_relevant")):
        db.labels.save(message_id="m1", memory_id="a", label=label, reviewer=reviewer, store="embedded:1", rank=1, score=0.6)
        db.labels.save(message_id="m1", memory_id="b", label="not_relevant", reviewer=reviewer, store="embedded:1", rank=2, score=0.2)
    db.labels.save(message_id="m2", memory_id="c", label="relevant", reviewer="ana", store="embedded:1", rank=1, score=0.5)
    path = tmp_path / "session.jsonl"
    path.write_text(export.to_jsonl(db.labels.find()))
    db.close()
    done = memlens("calibrate", str(path), "--format", "json")
    assert "duplicate" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # m1/a is a tie (ana relevant, ben not): unresolved and left out, and said so;
    # m1/b and m2/c count once each.
    assert report["labels"]["rows"] == 2 and report["labels"]["relevant"] == 1, report["labels"]
    assert any("1 pair(s) tied" in note for note in report["notes"])


@pytest.mark.parametrize("floors, named", [("0.2,2", "'2' is outside [0, 1]"), ("-1,0.3", "'-1' is outside [0, 1]")])
def test_floors_outside_zero_to_one_are_refused_naming_the_value(floors, named):
    done = memlens("calibrate", str(DEMO_LABELS), f"--floors={floors}")  # "=": argparse reads "-1" as an option
    assert done.returncode == 2 and named in done.stderr and done.stdout == ""
