"""The Monitor page shows a shadow config beside the shipped one, window by window,
with the figures `memlens monitor` prints for the same log (issue 54)."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest

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


def _gap_log(path) -> None:
    """Three days of 40 turns the agent decided with a largest-gap rule over a floor of
    0.4 it logged: the rule keeps rank 1 of every turn whose top-1 is at least 0.3, so
    turns with a top-1 in [0.3, 0.4) have memory by the decisions and none at the floor."""
    rng = random.Random(11)
    log = RetrievalLog(path)
    for day in range(3):
        for turn in range(40):
            scores = sorted((rng.uniform(0.1, 0.6) for _ in range(3)), reverse=True)
            hits = [Hit(f"m{i}", i + 1, "", score) for i, score in enumerate(scores)]
            log.write_turn(
                f"d{day}-t{turn}", hits, timestamp=datetime(2026, 1, 5 + day, 9, tzinfo=UTC) + timedelta(minutes=turn),
                floor=0.4, floor_segment="global", rule="largest-gap", kept=[i == 0 and s >= 0.3 for i, s in enumerate(scores)],
            )  # fmt: skip
    log.close()


def test_the_page_counts_by_the_logged_decisions_by_default_as_the_command_does(app, tmp_path, capsys):
    from markdown_text import seen

    path = tmp_path / "gap.jsonl"
    _gap_log(path)
    assert main(["monitor", str(path), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["floor_rule"] == "each turn by its logged decisions, kept or dropped per row (largest-gap: 120 turns)"
    # the logged floor alone would leave more turns with no memory: the page must not count by it
    at_floor = json.loads((main(["monitor", str(path), "--floor", "0.4", "--format", "json"]), capsys.readouterr().out)[1])
    assert at_floor["baseline"]["no_memory_share"] > document["baseline"]["no_memory_share"]

    at = app()
    at.switch_page("monitor.py").run()
    at.radio(key="monitor_source").set_value("Upload log files").run()
    at.file_uploader(key="monitor_upload").set_value([("gap.jsonl", path.read_bytes(), "application/json")]).run()
    assert not at.exception, at.exception
    assert at.radio(key="monitor_floor_rule").value.startswith("Its logged floor")  # the default
    assert at.metric[2].value == f"{document['baseline']['no_memory_share']:.1%}"  # baseline no memory: every day
    assert any(f"every figure at {document['floor_rule']}." in seen(c.value) for c in at.caption)
    # the picked window's turns say no memory where the agent kept nothing
    day = next(w for w in document["windows"] if w["window"] == at.selectbox(key="monitor_window").value)
    turns = next(frame.value for frame in at.dataframe if "no memory" in frame.value.columns and "message_id" in frame.value.columns)
    assert int(turns["no memory"].sum()) == day["no_memory_turns"]


def test_with_a_model_the_page_compares_each_sides_kept_precision_as_the_command_does(app, tmp_path, capsys, monkeypatch, demo_store, demo_dir):
    """A shadow log with the question's text (tests/judged_logs.py): the shipped floor
    keeps ranks 1 and 2, the candidate rank 1 only; a loopback judge grading by the demo
    judgments. The page's table holds the command's figures, from the same function."""
    from chat_model_server import ChatModelServer
    from judged_logs import DAYS, SWAP_DAY, demo_judge, log_text, user_memories

    rows = [json.loads(line) for line in log_text(user_memories(demo_store), SWAP_DAY).splitlines()]
    for row in rows:
        row |= {"floor": 0.35, "floor_segment": "global", "rule": "floor", "kept": row["score"] >= 0.35,
                "shadow_rule": "top-ratio", "shadow_kept": row["rank"] == 1}  # fmt: skip
    path = tmp_path / "shadow-judged.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    texts = {m.memory_id: m.text for m in demo_store.list(user_id=None, limit=1000)}
    with ChatModelServer(demo_judge(texts)) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("MEMLENS_LLM_MODEL", "grader")
        judge = tmp_path / "umbrela.toml"
        judge.write_text('name = "umbrela"\nkind = "llm"\n', encoding="utf-8")
        main(["monitor", str(path), "--judge", str(judge), "--send-text", "--sample", "12", "--db", str(demo_dir / "demo.sqlite"),
              "--labels", str(tmp_path / "cli.sqlite"), "--format", "json"])  # fmt: skip
        shadow = json.loads(capsys.readouterr().out)["shadow"]
        sent_by_cli = len(server.received)

        at = app()
        at.switch_page("monitor.py").run()
        at.radio(key="monitor_source").set_value("Upload log files").run()
        at.file_uploader(key="monitor_upload").set_value([("shadow.jsonl", path.read_bytes(), "application/json")]).run()
        at.number_input(key="monitor_judge_sample").set_value(12).run()
        # both sides' pairs, each once: the candidate's rank 1 is among the shipped side's
        assert f"of {DAYS * 12 * 2:,} pair(s)" in at.checkbox(key="monitor_judge_send_text").label
        at.checkbox(key="monitor_judge_send_text").check().run()
        at.button(key="monitor_judge_run").click().run()
        assert not at.exception, at.exception
        assert len(server.received) - sent_by_cli == sent_by_cli == DAYS * 12 * 2
    table = next(frame.value for frame in at.dataframe if "candidate kept precision" in frame.value.columns)
    shown = [*shadow["windows"], shadow["total"]]
    assert list(table["window"]) == [w["window"] for w in shown]
    for key, column in (("shipped_kept_precision", "shipped kept precision"), ("candidate_kept_precision", "candidate kept precision"),
                        ("kept_precision_difference", "difference"), ("precision_p", "p")):  # fmt: skip
        assert list(table[column]) == pytest.approx([w[key] for w in shown])
    assert list(table["candidate kept precision"][:SWAP_DAY]) == [1.0] * SWAP_DAY
