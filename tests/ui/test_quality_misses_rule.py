"""The Quality page's misses under a floor file's rule (issue 54), in AppTest on the
demo store: with a floor file holding a rule that reads the whole turn, a pair in
the run's top k is kept or under_floor as the rule decides on the question's hits
(the decision the agent side makes on the same hits), the page counts what
`memlens misses --floor-config` counts, and the page says what it counted under."""

from __future__ import annotations

import json
import os

from markdown_text import seen

from dashboard.cli.main import main
from dashboard.database import open_app_database
from dashboard.runtime import FloorConfig, memory_from_hits
from tests.ui.test_quality_misses_page import judged_upload, metric_values

RULE_FILE = {
    "floor": 0.2,
    "score_space": {"store": "embedded", "formula": "as sent", "setting": None},
    "rule": {"kind": "top-ratio", "cut": 0.9},  # the hits scoring at least 90% of the question's top one
}


def agent_kept_pairs(run_id: str, config: FloorConfig) -> int:
    """Relevant memories the agent side keeps, under the file, of each question's hits in the run."""
    db = open_app_database(dict(os.environ))
    info = db.runs.get(run_id)
    judged = db.judged_sets.load(info.set_name, info.set_hash)
    relevant = {q.message_id: set(q.relevant) for q in judged.questions}
    kept = 0
    for outcome in db.runs.outcomes(run_id):
        hits = [{"id": h.memory_id, "text": "", "score": h.score} for h in sorted(outcome.hits, key=lambda h: h.rank)]
        turn = memory_from_hits(hits, store_kind="embedded", floor=config)
        kept += sum(hit.memory_id in relevant[outcome.message_id] for hit in turn.kept)
    db.close()
    return kept


def test_misses_are_counted_under_the_floor_files_rule_as_the_cli_and_the_agent_count_them(app, data_dir, tmp_path, capsys):
    at = app()
    at.run()
    at.switch_page("quality.py").run()
    at.file_uploader(key="eval_upload").set_value(("gaps.jsonl", judged_upload(), "application/jsonl")).run()
    at.text_input(key="eval_upload_name").set_value("gaps").run()
    at.button(key="eval_keep_upload").click().run()
    at.number_input(key="eval_k").set_value(5).run()
    at.text_input(key="eval_as_of").set_value("2030-01-01").run()
    at.button(key="eval_start").click().run()
    at.slider(key="eval_floor").set_value(0.2).run()
    at.button(key="misses_find").click().run()
    assert not at.exception, at.exception
    run_id = at.session_state["eval_run"]
    under_the_floor = metric_values(at)

    at.file_uploader(key="misses_floor_file").set_value(("memlens-floor.json", json.dumps(RULE_FILE).encode(), "application/json")).run()
    assert not at.exception, at.exception
    under_the_rule = metric_values(at)
    assert any(
        seen(c.value).startswith("Counted under the floor file's top-ratio rule (0.90 of the turn's top score, with the floor) at its floor 0.20")
        for c in at.caption
    )
    # The rule drops hits the floor alone keeps (those well under the question's top score):
    # it moves pairs from kept to under_floor only; what was never returned stays where it was.
    assert under_the_rule["kept"] < under_the_floor["kept"]
    assert (under_the_rule["not_stored"], under_the_rule["past_k"]) == (under_the_floor["not_stored"], under_the_floor["past_k"])
    assert under_the_rule["kept"] + under_the_rule["under_floor"] == under_the_floor["kept"] + under_the_floor["under_floor"]

    path = tmp_path / "memlens-floor.json"
    path.write_text(json.dumps(RULE_FILE), encoding="utf-8")
    assert under_the_rule["kept"] == agent_kept_pairs(run_id, FloorConfig.load(path))
    capsys.readouterr()
    assert main(["misses", run_id, "--floor-config", str(path), "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["counts"] == under_the_rule and summary["rule"] == "top-ratio" and summary["floor"] == 0.2


def test_the_cli_names_a_bad_floor_file_and_refuses_it_beside_a_floor(data_dir, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"floor": 0.2, "rule": {"kind": "cliff"}}', encoding="utf-8")
    assert main(["misses", "some-run", "--floor-config", str(bad)]) == 2
    assert f"{bad}: field 'rule.kind'" in capsys.readouterr().err
    good = tmp_path / "good.json"
    good.write_text(json.dumps(RULE_FILE), encoding="utf-8")
    assert main(["misses", "some-run", "--floor-config", str(good), "--floor", "0.3"]) == 2
    assert "give --floor or --floor-config, not both" in capsys.readouterr().err
