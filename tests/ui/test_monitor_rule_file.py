"""A floor file holding a turn rule on the Monitor page (issue 54): the page counts each
turn by the rule's decisions, computed from its rows, as `memlens monitor --floor-config`
does on the same log, where it used to count every turn at the file's floor."""

from __future__ import annotations

import json
import random

from markdown_text import seen

from dashboard.cli.main import main
from dashboard.ui.pages.monitor import RULE_CHOICE, SLIDER_CHOICE, UPLOAD_CHOICE

# kept when 10 * score - 20 * gap_to_top >= 4: a turn's top hit from 0.40 on (the floor
# 0.35 keeps it from 0.35), the hits under it only close to it and high
RULE = {"kind": "learned", "features": ["score", "gap_to_top"], "coefficients": [10.0, -20.0], "intercept": -4.0, "cut": 0.5}
CONFIG = {"floor": 0.35, "rule": RULE}


def log_lines() -> bytes:
    """Three days of 100 turns of three memories, seeded scores, no decisions logged."""
    rng = random.Random(54)
    rows = []
    for day in range(3):
        for i in range(100):
            scores = sorted((round(rng.uniform(0.2, 0.7), 3) for _ in range(3)), reverse=True)
            for rank, score in enumerate(scores, start=1):
                rows.append({"message_id": f"d{day}-t{i}", "memory_id": f"m{i}-{rank}", "rank": rank, "score": score,
                             "timestamp": f"2026-01-0{day + 1}T10:{i % 60:02d}:00Z"})  # fmt: skip
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def test_the_page_counts_by_the_floor_files_rule_as_the_command_does(app, tmp_path, capsys):
    log, config = tmp_path / "log.jsonl", tmp_path / "memlens-floor.json"
    log.write_bytes(log_lines())
    config.write_text(json.dumps(CONFIG), encoding="utf-8")
    assert main(["monitor", str(log), "--floor-config", str(config), "--format", "json"]) == 0
    by_command = json.loads(capsys.readouterr().out)
    assert main(["monitor", str(log), "--floor", "0.35", "--format", "json"]) == 0
    at_floor = json.loads(capsys.readouterr().out)
    # the rule leaves more turns with no memory and keeps fewer memories than the floor alone
    assert by_command["baseline"]["no_memory_share"] > at_floor["baseline"]["no_memory_share"]
    assert all(r["kept_per_turn"] < f["kept_per_turn"] for r, f in zip(by_command["windows"], at_floor["windows"], strict=True))

    at = app()
    at.switch_page("monitor.py").run()
    at.radio(key="monitor_source").set_value(UPLOAD_CHOICE).run()
    at.file_uploader(key="monitor_upload").set_value(("log.jsonl", log.read_bytes(), "application/jsonl")).run()
    at.file_uploader(key="monitor_floor_config").set_value(("memlens-floor.json", config.read_bytes(), "application/json")).run()
    assert not at.exception, at.exception

    assert at.radio(key="monitor_floor_rule").value == RULE_CHOICE  # the uploaded rule is applied
    baseline = next(m for m in at.metric if m.label == "Baseline no memory").value
    assert baseline == f"{by_command['baseline']['no_memory_share']:.1%}"
    # the page's header words are the command's, naming the file as uploaded
    words = by_command["floor_rule"].replace(str(config), "memlens-floor.json")
    assert words.startswith("each turn by the learned rule (relevance cut 0.50) from memlens-floor.json, computed from its rows")
    assert any(f"every figure at {words}." in seen(caption.value) for caption in at.caption)
    # the picked window's turns: no memory and kept per turn as the command counts them
    day = next(w for w in by_command["windows"] if w["window"] == at.selectbox(key="monitor_window").value)
    turns = next(
        frame.value for frame in at.dataframe if "no memory" in frame.value.columns and "message_id" in frame.value.columns
    )
    assert len(turns) == day["turns"]
    assert int(turns["no memory"].sum()) == day["no_memory_turns"]
    assert int(turns["kept"].sum()) == round(day["kept_per_turn"] * day["turns"])
    assert any(f"{day['kept_per_turn']:.2f} kept per turn" in seen(caption.value) for caption in at.caption)

    # the slider is still "what if every turn were at this floor"
    at.radio(key="monitor_floor_rule").set_value(SLIDER_CHOICE).run()
    assert next(m for m in at.metric if m.label == "Baseline no memory").value == f"{at_floor['baseline']['no_memory_share']:.1%}"


def test_with_a_model_the_pages_judged_sample_keeps_what_the_rule_keeps(app, tmp_path, demo_store, data_dir, monkeypatch):
    """A log the agent side wrote under a largest-gap rule, its decisions taken out, and
    the floor file uploaded: the page grades exactly the agent's top 3 kept memories of
    each turn, where at the floor it graded memories the rule dropped."""
    from chat_model_server import ChatModelServer
    from demo_questions import demo_queries
    from judged_logs import demo_judge

    from dashboard.database import AppDatabase
    from memlens import FloorConfig, RetrievalLog, memory_for_prompt

    floor_file = tmp_path / "gap.json"
    floor_file.write_text(json.dumps({"floor": 0.2, "rule": {"kind": "largest-gap"}}), encoding="utf-8")
    path = tmp_path / "log.jsonl"
    log = RetrievalLog(path, include_query=True)
    kept = set()
    for query in demo_queries():
        turn = memory_for_prompt(demo_store, query["query"], user_id=query.get("user_id"), k=5, floor=FloorConfig.load(floor_file),
                                 log=log, message_id=query["message_id"])  # fmt: skip
        kept |= {(turn.message_id, hit.memory_id) for hit in sorted(turn.kept, key=lambda hit: hit.rank)[:3]}
    log.close()
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert any(
        not row["kept"] and row["score"] >= 0.2 and row["rank"] <= 3 for row in rows
    )  # the rule drops what the floor keeps
    bare = "".join(json.dumps({k: v for k, v in row.items() if k not in ("kept", "rule")}) + "\n" for row in rows).encode()

    texts = {m.memory_id: m.text for m in demo_store.list(user_id=None, limit=1000)}
    with ChatModelServer(demo_judge(texts)) as server:
        monkeypatch.setenv("MEMLENS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("MEMLENS_LLM_MODEL", "grader")
        at = app()
        at.switch_page("monitor.py").run()
        at.radio(key="monitor_source").set_value(UPLOAD_CHOICE).run()
        at.file_uploader(key="monitor_upload").set_value(("bare.jsonl", bare, "application/jsonl")).run()
        at.file_uploader(key="monitor_floor_config").set_value(("gap.json", floor_file.read_bytes(), "application/json")).run()
        at.number_input(key="monitor_judge_sample").set_value(100).run()
        assert at.radio(key="monitor_floor_rule").value == RULE_CHOICE
        at.checkbox(key="monitor_judge_send_text").check().run()
        at.button(key="monitor_judge_run").click().run()
        assert not at.exception, at.exception
        assert len(server.received) == len(kept)
    graded = {
        (j.message_id, j.memory_id)
        for j in AppDatabase(data_dir / "labels.sqlite").judge_labels.find(source="judge:umbrela@grader")
    }
    assert graded == kept
