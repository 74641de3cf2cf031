"""A floor config to Monitor, page and command line (issue 34): Calibrate's floor is
0.36577, and the page's figures must be the ones `memlens monitor --floor-config`
gives for the same file on the same log, not the ones at the slider's 0.37."""

from __future__ import annotations

import json

import pytest

from dashboard.cli.main import main
from dashboard.monitoring.synthetic import DEMO_LOG, synthetic_log, write_daily

FLOOR = 0.36577


@pytest.fixture(scope="module")
def demo_days(tmp_path_factory):
    folder = tmp_path_factory.mktemp("monitor_demo")
    return write_daily(synthetic_log(**DEMO_LOG), folder)  # type: ignore[arg-type]  # the page's demo log, as files; DEMO_LOG holds ints only


def cli_baseline(days, config, capsys) -> float:
    assert main(["monitor", *map(str, days), "--floor-config", str(config), "--format", "json"]) == 0  # no --fail-on-alert
    return json.loads(capsys.readouterr().out)["baseline"]["no_memory_share"]


def test_the_page_and_the_command_agree_at_the_shipped_floor(app, demo_days, tmp_path, capsys):
    config = tmp_path / "memlens-floor.json"
    config.write_text(json.dumps({"floor": FLOOR}), encoding="utf-8")
    expected = cli_baseline(demo_days, config, capsys)
    rounded = tmp_path / "rounded.json"
    rounded.write_text(json.dumps({"floor": round(FLOOR, 2)}), encoding="utf-8")
    assert f"{cli_baseline(demo_days, rounded, capsys):.1%}" != f"{expected:.1%}"  # 0.37 is another answer

    at = app()
    at.run()
    at.switch_page("monitor.py").run()
    upload = config.read_bytes()
    at.file_uploader(key="monitor_floor_config").set_value(("memlens-floor.json", upload, "application/json")).run()
    assert not at.exception, at.exception
    assert at.slider(key="monitor_floor").value == FLOOR
    baseline = next(m for m in at.metric if m.label == "Baseline no memory")
    assert baseline.value == f"{expected:.1%}"
    assert any(f"every figure at the floor {FLOOR:g}" in c.value for c in at.caption)


def cli_document(days, *floor_args: str, capsys) -> dict:
    assert main(["monitor", *map(str, days), *floor_args, "--format", "json"]) == 0  # no --fail-on-alert
    return json.loads(capsys.readouterr().out)


def test_the_command_watches_the_config_floor_to_the_last_digit(demo_days, tmp_path, capsys):
    """`memlens monitor --floor-config` on a floor off the 0.01 grid computes every window
    at that floor: the same document as `--floor 0.36577`, another one than `--floor 0.37`."""
    config = tmp_path / "memlens-floor.json"
    config.write_text(json.dumps({"floor": FLOOR}), encoding="utf-8")
    from_config = cli_document(demo_days, "--floor-config", str(config), capsys=capsys)
    exact = cli_document(demo_days, "--floor", str(FLOOR), capsys=capsys)
    grid = cli_document(demo_days, "--floor", "0.37", capsys=capsys)
    assert from_config["floor"] == FLOOR
    assert from_config["baseline"] == exact["baseline"]
    assert from_config["windows"] == exact["windows"]
    assert from_config["baseline"]["no_memory_share"] != grid["baseline"]["no_memory_share"]
    assert [w["no_memory_share"] for w in from_config["windows"]] != [w["no_memory_share"] for w in grid["windows"]]
