"""`memlens calibrate` on labels that overlap: the target-recall, target-precision and
F-beta lines, the diagnosis and its `warning:` lines, answerable turns apart, the
floors per segment, and the JSON carrying the mode, target and warnings."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from dashboard.calibration.label_files import read_label_file
from tests.dashboard.calibration.test_calibrate_cli import DEMO_LABELS, memlens

CATEGORIES = ("temporal", "multi-hop", "single-hop", "open")


def write_rare_labels(path, rows=3000, relevant_share=0.04, seed=11):
    """Rare relevant hits (about 4%) whose scores overlap the irrelevant ones', ten
    hits a turn, a question category per turn, and one category of only 60 hits.
    The best score of all is an irrelevant hit, as off-topic near-duplicates often are."""
    rng = np.random.default_rng(seed)
    relevant = rng.random(rows) < relevant_share
    scores = np.round(np.where(relevant, rng.normal(0.47, 0.1, rows), rng.normal(0.40, 0.1, rows)), 5)
    relevant[0], scores[0] = False, 0.99
    with path.open("w") as out:
        for i in range(rows):
            turn = i // 10
            tag = "rare-category" if i >= rows - 60 else CATEGORIES[turn % len(CATEGORIES)]
            label = "relevant" if relevant[i] else "not_relevant"
            row = {"message_id": f"turn-{turn}", "memory_id": f"mem-{i}", "score": float(scores[i]), "label": label, "tag": tag}
            out.write(json.dumps(row) + "\n")
    return scores, relevant


@pytest.fixture(scope="module")
def rare(tmp_path_factory):
    path = tmp_path_factory.mktemp("labels") / "rare.jsonl"
    scores, relevant = write_rare_labels(path)
    return path, scores, relevant


def test_cost_ratio_1_on_rare_overlapping_labels_is_called_out(rare):
    path, scores, relevant = rare
    done = memlens("calibrate", str(path), "--resamples", "100")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    recommended = next(line for line in lines if line.startswith("recommended floor "))
    dropped = int(re.search(r"drops (\d+) relevant", recommended).group(1))
    assert dropped > relevant.sum() / 2  # the arithmetic's answer drops most relevant memories...
    warnings = [line for line in lines if line.startswith("warning: ")]
    # ... and the output says so, in plain sentences with the numbers.
    assert any(f"drops {dropped} of {relevant.sum()} relevant memories" in w and "choose a target recall" in w for w in warnings)
    assert any(w.startswith("warning: At every floor that keeps 90% of relevant memories, at least ") for w in warnings)
    assert any("of answerable turns (turns with a relevant memory) with no memory at all" in w for w in warnings)
    diagnosis = next(line for line in lines if line.startswith("diagnosis: "))
    auc, ap = map(float, re.search(r"ROC AUC (\d\.\d\d), average precision (\d\.\d\d)", diagnosis).groups())
    assert auc == round(roc_auc_score(relevant, scores), 2)
    assert ap == round(average_precision_score(relevant, scores), 2)
    # The existing lines keep their shapes.
    assert lines[6] == "no separating band: some irrelevant memory scores at or above some relevant one"
    # Below the recommendation: the target-recall 0.90 line the default falls back to,
    # why (test_the_default_line_does_not_empty_most_prompts), then the line itself.
    assert lines[8].startswith("target recall 0.90: floor ") and lines[9].startswith("MEMORY_SCORE_FLOOR follows")
    assert re.fullmatch(r"MEMORY_SCORE_FLOOR=\d\.\d\d+", lines[10])


def test_each_mode_asked_for_prints_one_line_and_the_first_sets_the_exported_floor(rare):
    path, scores, relevant = rare
    done = memlens(
        "calibrate", str(path), "--target-recall", "0.9", "--target-precision", "0.8", "--fbeta", "1", "--resamples", "0"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("recommended floor "))
    recall, precision, fbeta, snippet = lines[at + 1 : at + 5]
    match = re.fullmatch(r"target recall 0\.90: floor (\d\.\d+) keeps (\d+) irrelevant, drops (\d+) relevant, precision (\d\.\d\d)", recall)
    assert match, recall
    floor = float(match.group(1))
    kept = scores >= floor
    assert int(match.group(2)) == int((kept & ~relevant).sum()) and int(match.group(3)) == int((~kept & relevant).sum())
    assert (kept & relevant).sum() >= 0.9 * relevant.sum()
    best = re.fullmatch(r"target precision 0\.80: no floor reaches it \(best (0\.\d\d) at floor (\d\.\d+)\)", precision)
    assert best, precision
    precisions = [relevant[scores >= f].mean() for f in np.unique(scores)]
    assert max(precisions) < 0.8 and best.group(1) == f"{max(precisions):.2f}"
    assert relevant[scores >= float(best.group(2))].mean() == max(precisions)
    assert re.fullmatch(r"max F1: floor \d\.\d+ keeps \d+ irrelevant, drops \d+ relevant, precision \d\.\d\d, recall \d\.\d\d", fbeta)
    assert snippet == f"MEMORY_SCORE_FLOOR={match.group(1)}"


def test_answerable_and_unanswerable_turns_are_reported_apart(rare):
    path, scores, relevant = rare
    done = memlens("calibrate", str(path), "--target-recall", "0.9", "--resamples", "0")
    line = next(line for line in done.stdout.splitlines() if line.startswith("at floor "))
    floor = float(re.match(r"at floor (\d\.\d+):", line).group(1))
    turns = np.arange(len(scores)) // 10
    answerable = {t for t in set(turns.tolist()) if relevant[turns == t].any()}
    empty = {t for t in set(turns.tolist()) if not (scores[turns == t] >= floor).any()}
    others = set(turns.tolist()) - answerable
    assert (
        f"no memory in {len(empty & answerable) / len(answerable):.0%} of {len(answerable)} answerable turns (a loss), "
        f"{len(empty & others) / len(others):.0%} of {len(others)} turns with no relevant memory labelled "
        "(unknown whether right: the labels do not say whether their question had an answer)"
    ) in line
    # A label file says nothing about answerability: its turns are never called right (issue 34).
    assert "(right)" not in done.stdout


def test_floors_per_tag_with_intervals_and_a_warning_for_the_small_segment(rare):
    path, _, _ = rare
    done = memlens("calibrate", str(path), "--target-recall", "0.9", "--segment-by", "tag", "--resamples", "200")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    segments = [line for line in lines if line.startswith(("segment tag=", "all tag segments"))]
    assert segments[0].startswith("all tag segments: floor ")
    assert {re.match(r"segment tag=([\w-]+):", line).group(1) for line in segments[1:]} == {*CATEGORIES, "rare-category"}
    # Every segment of ten turns or more has its interval; the rare category (60 hits,
    # 6 turns) has none, and its warning says why with the minimum and the count (issue 53).
    with_interval = [line for line in segments if not line.startswith("segment tag=rare-category:")]
    assert all(re.search(r"\(95% interval \d\.\d+-\d\.\d+\) over \d+ labels", line) for line in with_interval)
    rare_line = next(line for line in segments if line.startswith("segment tag=rare-category:"))
    assert "interval" not in rare_line
    warning = next(line for line in lines if line.startswith("warning: segment tag=rare-category: "))
    assert warning.startswith("warning: segment tag=rare-category: too few labels for a stable floor: 2 relevant")
    assert warning.endswith("; no interval: the labels hold 6 turns, fewer than the 10 a bootstrap of turns needs")


def test_json_carries_the_mode_target_floor_and_warnings(rare):
    path, _, _ = rare
    done = memlens("calibrate", str(path), "--format", "json", "--target-recall", "0.9", "--segment-by", "tag", "--resamples", "50")
    report = json.loads(done.stdout)
    advice = report["advice"]
    assert (advice["mode"], advice["target"], advice["name"]) == ("target_recall", 0.9, "target recall 0.90")
    assert advice["snippet"] == advice["choices"]["target_recall"]["snippet"]
    assert advice["floor"] == advice["choices"]["target_recall"]["floor"]
    assert any(w.startswith("At every floor that keeps 90%") for w in advice["warnings"])
    assert 0.5 < advice["diagnosis"]["roc_auc"] < 1
    assert report["segments"]["by"] == "tag" and report["segments"]["floors"][0]["segment"] == "(all segments)"
    assert report["recommended"]["snippet"].startswith("MEMORY_SCORE_FLOOR=")  # the cost-ratio report stays


def test_separating_demo_labels_print_no_warning_and_no_diagnosis():
    done = memlens("calibrate", str(DEMO_LABELS))
    assert "warning:" not in done.stdout and "diagnosis:" not in done.stdout


def test_bad_targets_are_refused():
    for flag, value in (("--target-recall", "0"), ("--target-precision", "1.2"), ("--fbeta", "-1")):
        done = memlens("calibrate", str(DEMO_LABELS), flag, value)
        assert done.returncode == 2 and value in done.stderr


def test_label_files_read_user_and_tag_columns(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("score,label,user_id,category\n0.4,relevant,sam,temporal\n0.2,not_relevant,ana,3\n0.3,relevant,,\n")
    rows = read_label_file(path).rows
    assert [(r.user, r.tag) for r in rows] == [("sam", "temporal"), ("ana", "3"), (None, None)]


def test_segments_by_a_column_the_labels_lack_say_so():
    done = memlens("calibrate", str(DEMO_LABELS), "--segment-by", "tag", "--resamples", "0")
    assert done.returncode == 0, done.stderr
    assert "warning: no floors per tag: the labels carry no tag (or category) column with two values or more" in done.stdout
    assert "segment tag=" not in done.stdout


def _snippet_floor(lines: list[str]) -> float:
    return float(next(line for line in lines if line.startswith("MEMORY_SCORE_FLOOR=")).split("=", 1)[1])


def test_the_default_line_does_not_empty_most_prompts(rare):
    # Issue 34: the cost-ratio floor drops most relevant memories here, and the line a
    # team copies was that floor. At the default cost ratio it now follows target
    # recall 0.90, says why, and names the cost-ratio floor; asked for, the cost ratio wins.
    path, scores, relevant = rare
    default = memlens("calibrate", str(path), "--resamples", "0")
    assert default.returncode == 0, default.stderr
    lines = default.stdout.splitlines()
    recommended = next(line for line in lines if line.startswith("recommended floor "))
    cost_floor = float(re.match(r"recommended floor (\d\.\d+) at cost ratio 1:", recommended).group(1))
    dropped = int(re.search(r"drops (\d+) relevant", recommended).group(1))
    floor = _snippet_floor(lines)
    assert (scores[relevant] >= floor).mean() >= 0.9  # the line keeps 90% of the relevant memories
    asked = memlens("calibrate", str(path), "--resamples", "0", "--target-recall", "0.9")
    assert floor == _snippet_floor(asked.stdout.splitlines())
    why = lines[next(i for i, line in enumerate(lines) if line.startswith("MEMORY_SCORE_FLOOR=")) - 1]
    assert why.startswith("MEMORY_SCORE_FLOOR follows target recall 0.90: the cost-ratio floor ")
    assert f"{cost_floor:.2f} (cost ratio 1) drops {dropped:,} of {int(relevant.sum()):,} relevant memories" in why

    explicit = memlens("calibrate", str(path), "--resamples", "0", "--cost-ratio", "1")
    assert _snippet_floor(explicit.stdout.splitlines()) == cost_floor
    assert not any(line.startswith("MEMORY_SCORE_FLOOR follows") for line in explicit.stdout.splitlines())

    report = json.loads(memlens("calibrate", str(path), "--resamples", "0", "--format", "json").stdout)
    assert report["advice"]["mode"] == "target_recall" and report["advice"]["floor"] == pytest.approx(floor, abs=0.005)
    assert report["advice"]["fallback"].startswith("MEMORY_SCORE_FLOOR follows target recall 0.90")
