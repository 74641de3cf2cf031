"""One fingerprint for a store's public settings, however they were gathered: the
sidebar sends every field (defaults included, paths as typed), `memlens eval` only
what its flags set (an absolute --db path). Identical settings must hash alike."""

from __future__ import annotations

from pathlib import Path

from connectors.registry import canonical_config, fingerprint

PAGE_DEFAULTS = {"weights": "semantic=0.6,recency=0.15,importance=0.15,usage=0.1", "half_life_hours": 72.0}


def test_the_pages_full_settings_and_the_clis_flags_give_one_fingerprint(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    page = {"db_path": "bench.sqlite", **PAGE_DEFAULTS}  # as typed in the sidebar
    cli = {"db_path": str(Path("bench.sqlite").resolve())}  # memlens eval --db bench.sqlite
    assert fingerprint("embedded", page) == fingerprint("embedded", cli)
    assert canonical_config("embedded", cli) == {
        "db_path": str(tmp_path / "bench.sqlite"), "half_life_hours": 72.0,
        "weights": "semantic=0.6,recency=0.15,importance=0.15,usage=0.1",
    }


def test_weights_written_two_ways_are_one_setting_and_other_weights_are_not():
    short = fingerprint("embedded", {"db_path": "/s.sqlite", "weights": "semantic=1"})
    full = fingerprint("embedded", {"db_path": "/s.sqlite", "weights": " semantic=2, recency=0,importance=0,usage=0"})
    other = fingerprint("embedded", {"db_path": "/s.sqlite", "weights": "semantic=0.5,recency=0.5"})
    assert short == full != other
    assert fingerprint("embedded", {"db_path": "/s.sqlite", "half_life_hours": "24"}) == fingerprint(
        "embedded", {"db_path": "/s.sqlite", "half_life_hours": 24.0}
    )


def test_secrets_and_the_ranking_clock_stay_out():
    config = {"base_url": "https://m.example", "api_key": "sk-secret"}
    assert "api_key" not in canonical_config("memorysync", config)
    assert fingerprint("memorysync", config) == fingerprint("memorysync", {**config, "api_key": "other"})
    at = {"db_path": "/s.sqlite", "as_of": "2023-05-08T00:00:00+00:00"}
    assert fingerprint("embedded", at) == fingerprint("embedded", {"db_path": "/s.sqlite"})


def test_unreadable_weights_are_kept_as_text_not_an_error():
    assert canonical_config("embedded", {"weights": "semantic=lots"})["weights"] == "semantic=lots"
