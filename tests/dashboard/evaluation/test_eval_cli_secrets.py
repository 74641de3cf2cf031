"""`memlens eval` sends the environment's API key only to the host it was configured
for, exactly as the app's settings do (one rule: connectors.registry
with_configured_secrets): a --config file naming another base_url does not get it.
Two MemorySync look-alikes on loopback stand for the configured host and another."""

from __future__ import annotations

import json

import pytest

from dashboard.cli.main import main
from dashboard.judged import DEMO_QUERIES

OTHER_KEY = "msk-other-host-key-0000"


@pytest.fixture
def other_host(memorysync_module, demo_dir, tmp_path):
    server = memorysync_module.serve_copy_of(demo_dir / "demo.sqlite", tmp_path, api_key=OTHER_KEY)
    yield server
    server.stop()


def eval_with_config(tmp_path, monkeypatch, settings: dict) -> int:
    monkeypatch.setenv("MEMLENS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("MEMLENS_LABELS_URL", raising=False)
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps(settings), encoding="utf-8")
    return main(["eval", str(DEMO_QUERIES), "--store", "memorysync", "--config", str(config), "--k", "3"])


def test_the_environment_key_is_not_sent_to_a_base_url_from_the_config_file(
    ms_env, other_host, tmp_path, monkeypatch, capsys
):
    code = eval_with_config(tmp_path, monkeypatch, {"base_url": other_host.url, "end_user_id": "sam", "max_retries": 0})
    assert ms_env.api_key not in [r.headers.get("X-API-Key") for r in other_host.requests_to("/")]
    assert ms_env.requests_to("/") == []
    err = capsys.readouterr().err
    assert code != 0
    assert "MEMORYSYNC_API_KEY is not sent with these settings: it goes only to the base_url it was configured with" in err
    assert ms_env.api_key not in err


def test_a_key_of_the_other_hosts_own_in_the_config_file_is_used_there(ms_env, other_host, tmp_path, monkeypatch):
    settings = {"base_url": other_host.url, "api_key": OTHER_KEY, "end_user_id": "sam"}
    assert eval_with_config(tmp_path, monkeypatch, settings) == 0
    assert {r.headers.get("X-API-Key") for r in other_host.requests_to("/")} == {OTHER_KEY}
    assert ms_env.requests_to("/") == []


def test_the_environment_key_goes_to_the_host_it_was_configured_for(ms_env, tmp_path, monkeypatch, capsys):
    # the same host, another route spelling: the key belongs to the host, not the text
    code = eval_with_config(tmp_path, monkeypatch, {"base_url": ms_env.url + "/", "end_user_id": "sam"})
    assert code == 0, capsys.readouterr().err
    sent = {r.headers.get("X-API-Key") for r in ms_env.requests_to("/")}
    assert sent == {ms_env.api_key}
