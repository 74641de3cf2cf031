"""The Calibrate page's turn rules in AppTest (issue 54): beside the single floor, the
rules that read the whole turn compared held out on the same labels; on the bundled
demo the single floor is recommended, where the turn carries the signal the learned
rule is; both held-out precision-recall curves in one chart; and the floor file the
page downloads is the one `memlens calibrate --rule R --floor-config-out` writes,
which the agent side applies."""

from __future__ import annotations

import json

import pytest
from markdown_text import seen
from turn_labels_data import as_jsonl, signal_turns

from dashboard.calibration.label_files import read_label_file
from dashboard.calibration.turn_fit import compare_rules, turn_labels
from dashboard.cli.main import main
from dashboard.demo import DEMO_LABELS
from dashboard.runtime import FloorConfig, memory_from_hits
from tests.ui.test_calibrate_page import figures, open_calibrate

# What says where and when a file was made, not what it ships: the page names the
# upload (or the demo) and the filters it used, the command the path it was given.
PROVENANCE = ("generated_at", "source", "filters", "demo")


def shipped(at) -> dict:
    """The floor file the page downloads (the expander shows the same document)."""
    return json.loads(at.json[0].value) if isinstance(at.json[0].value, str) else at.json[0].value


def cli_file(tmp_path, labels_path, *args: str) -> dict:
    out = tmp_path / "cli-floor.json"
    assert main(["calibrate", str(labels_path), *args, "--floor-config-out", str(out), "--format", "json"]) == 0
    return json.loads(out.read_text(encoding="utf-8"))


def without_provenance(document: dict) -> dict:
    return {key: value for key, value in document.items() if key not in PROVENANCE}


def recommendation(at) -> str:
    boxes = [seen(box.value).replace("**", "") for box in (*at.info, *at.success)]
    return next(box for box in boxes if box.startswith("Recommended: "))


def rule_curves(at) -> dict:
    return next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("Held-out precision and recall"))


def test_on_the_demo_labels_the_page_recommends_the_single_floor_and_downloads_the_cli_file(app, tmp_path, capsys):
    at = open_calibrate(app)
    said = recommendation(at)
    assert said.startswith("Recommended: single floor.")
    assert "No rule beats it beyond the interval" in said and said.endswith("the single floor is as good and simpler.")
    frame = next(d.value for d in at.dataframe if "turns with no memory" in d.value.columns)
    assert list(frame["rule"]) == ["single floor (recommended)", "learned rule", "largest-gap cut + floor", "top-ratio cut + floor"]
    assert frame["precision"][0].startswith("1.000")  # one floor separates every demo label
    assert at.radio(key="calibrate_rule").value == "floor"
    # both curves, the single floor's and the rules', in one chart
    names = [trace["name"] for trace in rule_curves(at)["data"] if trace["mode"] == "lines"]
    assert names == ["single floor (recommended)", "learned rule", "largest-gap cut + floor", "top-ratio cut + floor"]

    page = shipped(at)
    assert "rule" not in page  # the single floor ships no rule
    assert without_provenance(page) == without_provenance(cli_file(tmp_path, DEMO_LABELS))

    # picking a rule the comparison did not recommend ships it, as `--rule` does, and says so
    at.radio(key="calibrate_rule").set_value("largest-gap").run()
    assert not at.exception, at.exception
    assert any("recommends the single floor" in seen(w.value) for w in at.warning)
    page = shipped(at)
    assert page["rule"]["kind"] == "largest-gap" and page["rule"]["recommended"] == "floor"
    assert without_provenance(page) == without_provenance(cli_file(tmp_path, DEMO_LABELS, "--rule", "largest-gap"))


@pytest.fixture
def signal_labels(tmp_path):
    path = tmp_path / "signal.jsonl"
    path.write_text(as_jsonl(signal_turns()), encoding="utf-8")
    return path


def test_where_the_turn_carries_the_signal_the_page_ships_the_learned_rule_the_agent_applies(app, tmp_path, signal_labels):
    at = open_calibrate(app, calibrate_source="Upload a file")
    at.file_uploader(key="calibrate_upload").set_value((signal_labels.name, signal_labels.read_bytes(), "application/jsonl")).run()
    at.radio(key="floor_mode").set_value("target_recall").run()
    assert not at.exception, at.exception
    said = recommendation(at)
    assert said.startswith("Recommended: learned rule.")
    assert "beats the single floor beyond the interval" in said
    assert at.radio(key="calibrate_rule").value == "learned"  # the pick starts at the recommendation

    page = shipped(at)
    assert page["rule"]["kind"] == "learned"
    assert without_provenance(page) == without_provenance(
        cli_file(tmp_path, signal_labels, "--rule", "learned", "--target-recall", "0.9")
    )

    # The downloaded file, applied by the agent side to each labelled turn, keeps at
    # least the target recall the page chose it for, at the held-out precision the
    # page showed for the learned rule, well above the single floor's.
    path = tmp_path / "memlens-floor.json"
    path.write_text(json.dumps(page), encoding="utf-8")
    config = FloorConfig.load(path)
    turns: dict[str, list[dict]] = {}
    for row in signal_turns():
        turns.setdefault(row["message_id"], []).append(row)
    relevant_kept = kept = relevant = 0
    for rows in turns.values():
        rows.sort(key=lambda row: row["rank"])
        hits = [{"id": row["memory_id"], "text": "", "score": row["score"]} for row in rows]
        turn = memory_from_hits(hits, store_kind="embedded", floor=config)
        labels = {row["memory_id"]: row["label"] == "relevant" for row in rows}
        kept += len(turn.kept)
        relevant_kept += sum(labels[hit.memory_id] for hit in turn.kept)
        relevant += sum(labels.values())
    comparison = compare_rules(turn_labels(read_label_file(signal_labels)), "target_recall", 0.9, resamples=0)
    assert relevant_kept / relevant >= 0.9
    learned, floor = page["rule"]["held_out"], page["rule"]["held_out_floor"]
    assert learned["precision"] == pytest.approx(comparison.figures["learned"].precision)
    assert relevant_kept / kept >= learned["precision_interval"][0] > floor["precision"]


def test_labels_without_turns_say_why_no_rule_is_compared(app):
    at = open_calibrate(app, calibrate_source="Upload a file")
    rows = "".join(json.dumps({"score": s / 40, "label": "relevant" if s > 20 else "not_relevant"}) + "\n" for s in range(40))
    at.file_uploader(key="calibrate_upload").set_value(("scores.jsonl", rows.encode(), "application/jsonl")).run()
    assert not at.exception, at.exception
    assert any(c.value.startswith("No turn rules: they read each hit's place among its turn's hits") for c in at.caption)
    assert "rule" not in shipped(at)
    assert not any(f["layout"]["title"]["text"].startswith("Held-out") for f in figures(at))
