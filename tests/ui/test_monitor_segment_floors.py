"""A floor config with floors per user and per store on the Monitor page (issue 51):
the page counts each turn at its user's or store's floor, as `memlens monitor
--floor-config` does on the same log, where it used to count every turn at the
config's global floor and say the others were not applied."""

from __future__ import annotations

import json

from dashboard.cli.main import main
from dashboard.ui.pages.monitor import CONFIG_CHOICE, SLIDER_CHOICE, UPLOAD_CHOICE

CONFIG = {"floor": 0.35, "segments": {"user": {"sam": 0.28}, "store": {"qdrant": 0.45}}}


def log_lines() -> bytes:
    """Three days of 100 turns, no logged floor. Of every ten turns: four of user sam
    with a top-1 of 0.30 (kept at sam's 0.28, not at 0.35), two on store qdrant with
    0.40 (not kept at qdrant's 0.45, kept at 0.35), two with 0.40 and two with 0.32.
    So 40% of turns have no memory at the config's floors, 60% at 0.35 for every turn."""
    rows = []
    for day in range(3):
        for i in range(100):
            kind = i % 10
            user, store, top1 = ("sam", "embedded", 0.30) if kind < 4 else ("ana", "qdrant", 0.40) if kind < 6 else (
                "ana", "embedded", 0.40 if kind < 8 else 0.32)  # fmt: skip
            for rank, score in ((1, top1), (2, top1 - 0.1)):
                rows.append({"message_id": f"d{day}-t{i}", "memory_id": f"m{i}-{rank}", "rank": rank, "score": score,
                             "user_id": user, "store": store, "timestamp": f"2026-01-0{day + 1}T10:{i % 60:02d}:00Z"})  # fmt: skip
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def test_the_page_applies_the_configs_floors_per_user_and_store_as_the_command_does(app, tmp_path, capsys):
    log, config = tmp_path / "log.jsonl", tmp_path / "memlens-floor.json"
    log.write_bytes(log_lines())
    config.write_text(json.dumps(CONFIG), encoding="utf-8")
    assert main(["monitor", str(log), "--floor-config", str(config), "--format", "json"]) == 0
    by_command = json.loads(capsys.readouterr().out)
    assert f"{by_command['baseline']['no_memory_share']:.1%}" == "40.0%"

    at = app()
    at.run()
    at.switch_page("monitor.py").run()
    at.radio(key="monitor_source").set_value(UPLOAD_CHOICE).run()
    at.file_uploader(key="monitor_upload").set_value(("log.jsonl", log.read_bytes(), "application/jsonl")).run()
    at.file_uploader(key="monitor_floor_config").set_value(("memlens-floor.json", config.read_bytes(), "application/json")).run()
    assert not at.exception, at.exception

    def baseline() -> str:
        return next(m for m in at.metric if m.label == "Baseline no memory").value

    assert at.radio(key="monitor_floor_rule").value == CONFIG_CHOICE  # the uploaded config is applied
    assert baseline() == "40.0%"
    # the page names the floors as the command's header does (its captions escape Markdown)
    words = "each turn at its floor from memlens-floor.json (0.28 user=sam: 120 turns; 0.35 global: 120 turns; 0.45 store=qdrant: 60 turns)"
    assert by_command["floor_rule"] == words.replace("memlens-floor.json", str(config))
    assert any(f"every figure at {words}." in caption.value.replace("\\", "") for caption in at.caption)
    # and the slider is still "what if every turn were at this floor"
    at.radio(key="monitor_floor_rule").set_value(SLIDER_CHOICE).run()
    assert baseline() == "60.0%"
