"""The link form of a store choice (dashboard/store_link.py): what goes into a link,
what comes back out, and what never goes in (secrets, stores that take one)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from connectors.registry import REGISTRY
from dashboard.evaluation.run_compare import inspect_link
from dashboard.store_link import RESERVED, cannot_link, settings_from_params, store_params

DEFAULTS = {"store": "embedded", "db_path": "", "weights": "semantic=0.6,recency=0.15,importance=0.15,usage=0.1",
            "half_life_hours": 72.0}
RECENCY_HEAVY = "semantic=0.05,recency=0.95,importance=0,usage=0"


def test_only_settings_that_differ_from_the_defaults_go_into_the_address_bar():
    assert store_params("embedded", dict(DEFAULTS), DEFAULTS, always=False) == {}
    assert store_params("embedded", {**DEFAULTS, "weights": RECENCY_HEAVY}, DEFAULTS, always=False) == {
        "store": "embedded", "weights": RECENCY_HEAVY,
    }
    # A run's link names its store even when it ran on the defaults.
    assert store_params("embedded", dict(DEFAULTS), DEFAULTS, always=True) == {"store": "embedded"}


def test_a_link_gives_back_the_settings_it_was_made_from():
    settings = {**DEFAULTS, "weights": RECENCY_HEAVY, "half_life_hours": 24.0, "db_path": "/data/team.sqlite"}
    link = inspect_link("Where does mel live?", "mel", 10, 0.3, store=store_params("embedded", settings, DEFAULTS, always=True))
    params = {key: values[0] for key, values in parse_qs(urlsplit(link).query, keep_blank_values=True).items()}
    assert {key: params[key] for key in ("query", "user", "k", "floor")} == {
        "query": "Where does mel live?", "user": "mel", "k": "10", "floor": "0.30",
    }
    store, restored, notes = settings_from_params(params)
    assert store == "embedded" and notes == []
    assert restored == {"weights": RECENCY_HEAVY, "half_life_hours": 24.0, "db_path": "/data/team.sqlite"}


def test_an_empty_setting_survives_the_link():
    # The demo data is an empty path; on a server whose default is a team file, the
    # link must say "empty", not leave the path out.
    link = inspect_link("q", "sam", 5, 0.35, store=store_params("embedded", {**DEFAULTS, "db_path": ""},
                                                             {**DEFAULTS, "db_path": "/srv/team.sqlite"}, always=True))
    params = parse_qs(urlsplit(link).query, keep_blank_values=True)
    assert params["db_path"] == [""]
    assert settings_from_params({k: v[0] for k, v in params.items()})[1] == {"db_path": ""}


@pytest.mark.parametrize("store", [name for name, spec in REGISTRY.items() if any(f.kind == "secret" for f in spec.fields)])
def test_a_store_that_takes_a_secret_never_goes_into_a_link(store):
    spec = REGISTRY[store]
    settings = {f.name: "sk-live-123" if f.kind == "secret" else f"value-{f.name}" for f in spec.fields}
    assert store_params(store, settings, {}, always=True) == {}
    assert "secret" in (cannot_link(store) or "")
    # A hand-made link naming it is refused, and says what to do instead.
    chosen, restored, [note] = settings_from_params({"store": store, "api_key": "sk-live-123"})
    assert chosen is None and restored == {} and "pick it and its settings in the sidebar" in note


def test_bad_parts_of_a_link_are_named_and_left_out():
    store, restored, notes = settings_from_params({"store": "embedded", "half_life_hours": "nan", "weights": RECENCY_HEAVY})
    assert store == "embedded" and restored == {"weights": RECENCY_HEAVY}
    assert notes == ["The link's half_life_hours 'nan' is not a finite number; the sidebar's value is used."]
    assert settings_from_params({"store": "../../etc"})[0] is None
    assert settings_from_params({"query": "no store here"}) == (None, {}, [])


def test_no_store_setting_shadows_a_link_parameter():
    for spec in REGISTRY.values():
        assert not {f.name for f in spec.fields} & {"query", "user", "k", "floor"}
    assert {"query", "user", "k", "floor", "store", "set"} <= RESERVED
