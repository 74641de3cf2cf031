"""Each store's settings are declared once (connectors/catalog.py) and must be the
settings its factory takes: a declared setting the factory does not accept would fail
only when a reviewer opens the store, and a default the sidebar starts from that
differs from the factory's would give the page and the CLI two different stores."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from connectors.catalog import STORES, ConfigField, StoreSpec

# Settings a factory takes that are not the store's settings: what the app passes
# at run time (the clock, a progress bar, usage counting), an injected client, and the
# mark the registry sets on an address a visitor typed.
RUN_PARAMETERS = {"as_of", "progress", "count_usage", "client", "typed_address"}
# A factory default that means "not given" (the store then uses its own default or
# the preset's): the declared default may be any value there.
UNSET = (None, "")


def settings_mismatches(spec: StoreSpec) -> list[str]:
    """What is wrong between the store's declared settings and its factory's
    signature, one line each (empty: they match)."""
    parameters = inspect.signature(spec.load_factory()).parameters
    named = {n: p for n, p in parameters.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    declared = {f.name: f for f in spec.fields}
    problems = []
    for field in spec.fields:
        if field.name not in named:
            problems.append(f"{spec.name}: setting {field.name!r} is not a parameter of {spec.factory}")
            continue
        default = named[field.name].default
        if default is not inspect.Parameter.empty and default not in UNSET and default != field.default:
            problems.append(
                f"{spec.name}: setting {field.name!r} starts at {field.default!r}, {spec.factory} at {default!r}"
            )
    for name, parameter in named.items():
        if parameter.default is inspect.Parameter.empty and name not in declared:
            problems.append(f"{spec.name}: {spec.factory} requires {name!r}, which is not a declared setting")
    return problems


@pytest.mark.parametrize("spec", STORES, ids=lambda s: s.name)
def test_each_store_declares_the_settings_its_factory_takes(spec):
    assert settings_mismatches(spec) == []


def test_every_declared_setting_reaches_its_factory_or_is_a_run_setting():
    """The other way round: a factory parameter that is neither declared nor a run
    setting can be given on the command line but never on the page."""
    undeclared = {
        f"{spec.name}.{name}"
        for spec in STORES
        for name, p in inspect.signature(spec.load_factory()).parameters.items()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        and name not in {f.name for f in spec.fields} | RUN_PARAMETERS
    }
    # Known today: settings only the command line and tests give (the embedded
    # store's model, which the demo fixes; the Qdrant client's own timeout).
    assert undeclared == {"embedded.model", "qdrant.timeout"}


def _spec_with(field: ConfigField, factory: str = "connectors.vector.chroma:open_store") -> StoreSpec:
    return StoreSpec(name="probe", title="Probe", factory=factory, fields=(field,))


def test_the_check_names_a_setting_the_factory_does_not_take():
    spec = _spec_with(ConfigField("colection", "Collection", default="memories"))
    assert settings_mismatches(spec) == [
        "probe: setting 'colection' is not a parameter of connectors.vector.chroma:open_store"
    ]


def test_the_check_names_a_default_that_differs_from_the_factory():
    spec = _spec_with(ConfigField("text_field", "Text", default="text"))
    assert settings_mismatches(spec) == [
        "probe: setting 'text_field' starts at 'text', connectors.vector.chroma:open_store at 'document'"
    ]


def required(name: str, /, collection: str = "memories") -> Any:  # a factory with a required setting
    return name, collection


def test_the_check_names_a_required_parameter_no_setting_declares():
    spec = _spec_with(ConfigField("collection", "Collection", default="memories"), factory=f"{__name__}:required")
    assert settings_mismatches(spec) == [f"probe: {__name__}:required requires 'name', which is not a declared setting"]


def test_shared_settings_are_one_row_for_every_store_that_has_them():
    """A setting several stores share is built by one function, so it reads the same
    in every store's sidebar: the embedding model, the collection, a server URL."""
    def rows(name: str) -> set[tuple[str, str, Any]]:
        return {(f.label, f.kind, f.default) for spec in STORES for f in spec.fields if f.name == name}

    assert rows("model") == {("Embedding model (empty: packaged all-MiniLM-L6-v2)", "text", "")}
    assert rows("collection") == {("Collection", "text", "memories")}
    assert {spec.name for spec in STORES for f in spec.fields if f.name == "model"} == {
        "qdrant", "chroma", "pgvector", "lancedb"
    }
    urls = [f for spec in STORES for f in spec.fields if f.name in ("url", "base_url") and f.kind == "text"]
    assert urls and all(f.address for f in urls)

