"""The Quality page's miss anatomy, in AppTest, on the demo store: a judged set whose
one evidence memory was never stored (`sam-404`) is run at k=1 at a fixed clock; the
panel beside the run's metrics counts the four causes exactly as `memlens misses`
does for the same run, re-counts them when the floor moves without asking the store
again, and lists each cause's questions with Inspect links that carry the run's
store, settings, k and floor (and its clock, or say that Inspect cannot take it).
With other settings in the sidebar it still asks the store as the run was made."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from dashboard.cli.main import main

DEMO_QUERIES = Path(__file__).resolve().parents[2] / "demo_data" / "queries.jsonl"
AS_OF = "2030-01-01T00:00:00+00:00"


def judged_upload() -> bytes:
    rows = []
    for line in DEMO_QUERIES.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        row.pop("answerable", None)
        if row["message_id"] == "demo-q03":
            row["relevant"] = [*row["relevant"], "sam-404"]  # evidence the store never got
        rows.append(json.dumps(row))
    return ("\n".join(rows) + "\n").encode()


def cli_counts(run_id: str, floor: str, capsys) -> dict[str, int]:
    capsys.readouterr()
    assert main(["misses", run_id, "--floor", floor, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["counts"]


def metric_values(at) -> dict[str, int]:
    return {m.label: int(m.value) for m in at.metric if m.label in ("not_stored", "past_k", "under_floor", "kept")}


def test_the_panel_counts_what_the_cli_counts_and_links_each_cause_to_inspect(app, data_dir, capsys):
    at = app()
    at.run()
    at.switch_page("quality.py").run()
    at.file_uploader(key="eval_upload").set_value(("gaps.jsonl", judged_upload(), "application/jsonl")).run()
    at.text_input(key="eval_upload_name").set_value("gaps").run()
    at.button(key="eval_keep_upload").click().run()
    at.number_input(key="eval_k").set_value(1).run()
    at.text_input(key="eval_as_of").set_value("2030-01-01").run()
    at.button(key="eval_start").click().run()
    assert not at.exception, at.exception
    run_id = at.session_state["eval_run"]
    assert not at.metric or not metric_values(at)  # nothing is asked before the button

    at.slider(key="eval_floor").set_value(0.5).run()
    at.button(key="misses_find").click().run()
    assert not at.exception, at.exception
    shown = metric_values(at)
    assert shown == cli_counts(run_id, "0.5", capsys)
    assert shown["not_stored"] == 1 and all(shown[c] > 0 for c in ("past_k", "under_floor", "kept"))

    # The floor moves pairs between kept and under_floor only, and the store is not asked again.
    at.slider(key="eval_floor").set_value(0.35).run()
    moved = metric_values(at)
    assert moved == cli_counts(run_id, "0.35", capsys)
    assert (moved["not_stored"], moved["past_k"]) == (shown["not_stored"], shown["past_k"])
    assert moved["kept"] + moved["under_floor"] == shown["kept"] + shown["under_floor"]

    at.radio(key="misses_cause").set_value("not_stored").run()
    listed = next(d.value for d in at.dataframe if "memory_id" in d.value.columns and "inspect" in d.value.columns)
    assert list(listed["message_id"]) == ["demo-q03"] and list(listed["memory_id"]) == ["sam-404"]
    link = urlsplit(listed["inspect"].iloc[0])
    params = parse_qs(link.query)
    assert link.path == "/inspect"
    assert params["query"] == ["Where does the user live?"] and params["user"] == ["sam"]
    assert params["k"] == ["1"] and params["floor"] == ["0.35"] and params["store"] == ["embedded"]
    # The clock travels with the link: Inspect ranks the store as the run saw it.
    assert params["as_of"] == [AS_OF]

    at.radio(key="misses_cause").set_value("past_k").run()
    listed = next(d.value for d in at.dataframe if "memory_id" in d.value.columns and "inspect" in d.value.columns)
    assert len(listed) == moved["past_k"] and (listed["rank"] > 1).all()
    ranks = list(zip(listed["message_id"], listed["memory_id"], listed["rank"], strict=True))

    downloads = {b.key: b for b in at.get("download_button")}
    assert {"misses_download_jsonl", "misses_download_csv"} <= set(downloads)

    # The sidebar now ranks by recency alone: the panel still asks the run's own store
    # (its saved settings and clock): the deeper query ranks each past_k memory where
    # the run's weights put it, not where recency alone would.
    at.session_state["cfg_embedded_weights"] = "semantic=0,recency=1,importance=0,usage=0"
    at.run()
    at.button(key="misses_find").click().run()
    assert not at.exception, at.exception
    assert metric_values(at) == moved
    listed = next(d.value for d in at.dataframe if "memory_id" in d.value.columns and "inspect" in d.value.columns)
    assert list(zip(listed["message_id"], listed["memory_id"], listed["rank"], strict=True)) == ranks
