"""The Browse and Compare pages, and the Inspect page on distance-returning
collections, in AppTest against real Qdrant (local) and Chroma (persistent)
folders loaded with the demo memories."""

from __future__ import annotations

import pytest
from demo_questions import THEME
from markdown_text import error_texts, seen

from connectors.demo_loader import demo_rows, load_chroma, load_qdrant
from connectors.vector.chroma import persistent_client
from connectors.vector.qdrant import local_client

SEARCH = "FormSubmitter:query_form-Search"
CHECK = "FormSubmitter:browse_check_form-Check"
COMPARE = "FormSubmitter:compare_form-Compare"


@pytest.fixture(scope="session")
def vector_dirs(tmp_path_factory):
    rows, _ = demo_rows()
    qdrant_dir, chroma_dir = tmp_path_factory.mktemp("ui-qdrant"), tmp_path_factory.mktemp("ui-chroma")
    for distance in ("cosine", "euclid"):
        load_qdrant(local_client(qdrant_dir), f"demo_{distance}", rows, distance=distance)
    for space in ("l2", "cosine"):
        load_chroma(persistent_client(chroma_dir), f"demo-{space}", rows, space=space)
    return qdrant_dir, chroma_dir


@pytest.fixture
def stores_env(vector_dirs, monkeypatch):
    """The store settings a deployment would set, read by the settings widgets."""
    qdrant_dir, chroma_dir = vector_dirs
    monkeypatch.setenv("MEMLENS_QDRANT_PATH", str(qdrant_dir))
    monkeypatch.setenv("MEMLENS_QDRANT_COLLECTION", "demo_cosine")
    monkeypatch.setenv("MEMLENS_QDRANT_ID_FIELD", "memory_id")
    monkeypatch.setenv("MEMLENS_CHROMA_PATH", str(chroma_dir))
    monkeypatch.setenv("MEMLENS_CHROMA_COLLECTION", "demo-l2")
    return vector_dirs


def frame(at, index=0):
    return at.dataframe[index].value


# ------------------------------------------------------------------ Inspect: the raw kind


@pytest.mark.parametrize(
    "store,collection_env,collection,raw_kind,formula",
    [
        ("chroma", "MEMLENS_CHROMA_COLLECTION", "demo-l2", "squared l2 distance", "score = 1 - d/2"),
        ("chroma", "MEMLENS_CHROMA_COLLECTION", "demo-cosine", "cosine distance", "score = 1 - d "),
        ("qdrant", "MEMLENS_QDRANT_COLLECTION", "demo_euclid", "euclidean distance", "score = 1 - d²/2"),
    ],
)
def test_inspect_shows_the_raw_kind_beside_normalised_scores(
    app, stores_env, monkeypatch, store, collection_env, collection, raw_kind, formula
):
    monkeypatch.setenv(collection_env, collection)
    at = app(store=store, user="sam")
    at.run()
    at.text_input(key="query").input(THEME)
    at.button(key=SEARCH).click().run()
    assert not at.exception
    assert any(raw_kind in info.value for info in at.info), [i.value for i in at.info]
    hits = frame(at)
    assert hits.iloc[0]["memory id"] == "sam-02"
    assert "raw score" in hits.columns
    assert list(hits["score"]) == sorted(hits["score"], reverse=True)
    assert list(hits["raw score"]) == sorted(hits["raw score"])  # the store's distances, nearest first
    # Beside the raw column: the formula, and the floor as a rule on the raw value (issue 34).
    said = next(seen(c.value) for c in at.caption if c.value.startswith("Raw score column: "))
    assert formula in said and "to apply the floor 0.35 to d, keep a hit when d <=" in said


# ------------------------------------------------------------------ Browse


def open_browse(app, **state):
    at = app(**state)
    at.switch_page("browse.py").run()
    assert not at.exception
    return at


def test_browse_lists_a_users_memories_and_filters_without_reading_again(app, stores_env):
    at = open_browse(app, store="qdrant", user="sam")
    listing = frame(at)
    assert len(listing) == 22 and set(listing["user"]) == {"sam"}
    calls = at.session_state["browse_store_calls"]
    at.text_input(key="browse_filter").input("lisbon").run()
    filtered = frame(at)
    assert len(filtered) >= 1 and all("lisbon" in t.lower() for t in filtered["text"])
    assert at.session_state["browse_store_calls"] == calls


def test_browse_says_a_stored_memory_is_stored_and_a_missing_one_was_never_stored(app, stores_env):
    at = open_browse(app, store="chroma", user="sam")
    at.text_input(key="browse_expected").input("prefers light UI theme.")
    at.button(key=CHECK).click().run()
    assert not at.exception
    assert at.success and "Stored as written (sam-02)" in seen(at.success[0].value)
    assert "ranks it #1" in seen(at.success[0].value)
    at.text_input(key="browse_expected").input("Is allergic to peanuts")
    at.button(key=CHECK).click().run()
    assert at.error and "probably never stored" in error_texts(at)[0]
    assert "22 memories of sam" in error_texts(at)[0]
    nearest = next(df.value for df in at.dataframe if "rank" in df.value.columns)
    assert len(nearest) == 5 and "raw score" in nearest.columns


def test_browse_shows_a_store_error_in_the_page(app, stores_env, monkeypatch, tmp_path):
    monkeypatch.setenv("MEMLENS_QDRANT_PATH", str(tmp_path / "no-such-folder"))
    at = open_browse(app, store="qdrant", user="sam")
    assert at.error and "No Qdrant folder" in error_texts(at)[0]


# ------------------------------------------------------------------ Compare


def open_compare(app, **state):
    at = app(**state)
    at.switch_page("compare.py").run()
    assert not at.exception
    return at


def test_compare_two_stores_side_by_side_and_floors_do_not_requery(app, stores_env):
    at = open_compare(app, compare_a_store="chroma", compare_b_store="qdrant", user="sam")
    assert at.session_state["compare_match_by"] == "text"  # two stores: ids differ in general
    at.text_input(key="compare_query").input(THEME)
    at.button(key=COMPARE).click().run()
    assert not at.exception
    table = frame(at)
    first = table.iloc[0]
    assert first["memory"] == "Prefers light UI theme"
    assert (first["A id"], first["B id"]) == ("sam-02", "sam-02")
    assert (first["A rank"], first["B rank"], first["verdict"]) == (1, 1, "kept by both")
    assert first["A score"] == pytest.approx(first["B score"], abs=1e-4)  # both give the cosine
    assert any("squared l2 distance" in info.value for info in at.info)
    calls = at.session_state["compare_store_calls"]
    assert calls == 2
    # Both reads are in the read log (ids and hashes, no text), like Inspect's.
    import json

    from dashboard.logs.read_log import read_log_path

    reads = [json.loads(line) for line in read_log_path().read_text().splitlines()]
    assert [r["source"] for r in reads] == ["compare", "compare"]
    assert THEME not in read_log_path().read_text()
    at.slider(key="compare_b_floor").set_value(0.95).run()
    assert at.session_state["compare_store_calls"] == calls
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Kept by A only"] == "1" and metrics["Kept by both"] == "0"
    assert frame(at).iloc[0]["verdict"] == "kept by A only"


def test_compare_two_configurations_of_one_store_matches_by_id(app, stores_env):
    at = open_compare(app, compare_a_store="qdrant", compare_b_store="qdrant", user="sam")
    at.text_input(key="compare_b_cfg_qdrant_collection").set_value("demo_euclid")
    at.text_input(key="compare_query").input(THEME)
    at.button(key=COMPARE).click().run()
    assert not at.exception
    assert at.session_state["compare_match_by"] == "id"
    table = frame(at)
    assert "A id" not in table.columns and table.iloc[0]["memory id"] == "sam-02"
    assert list(table["A rank"]) == list(table["B rank"])  # same order on both collections
    assert set(table["verdict"]) <= {"kept by both", "kept by neither"}
    assert any("different kinds" in w.value for w in at.warning)


def test_compare_shows_a_side_that_cannot_open_without_crashing(app, stores_env, tmp_path):
    at = open_compare(app, compare_a_store="chroma", compare_b_store="qdrant", user="sam")
    at.text_input(key="compare_b_cfg_qdrant_path").set_value(str(tmp_path / "gone"))
    at.text_input(key="compare_query").input(THEME)
    at.button(key=COMPARE).click().run()
    assert not at.exception
    assert any("B could not answer" in e and "No Qdrant folder" in e for e in error_texts(at))


@pytest.mark.parametrize("page", ["browse.py", "compare.py"])
def test_pages_with_memory_text_ask_for_the_password_when_one_is_set(app, stores_env, monkeypatch, page):
    monkeypatch.setenv("MEMLENS_PASSWORD", "correct horse")
    at = app(store="qdrant", user="sam")
    at.switch_page(page).run()
    assert not at.exception
    assert any("Enter the memlens password" in i.value for i in at.info)
    assert not at.dataframe  # no memory text before the password


def test_compare_shows_the_verdict_beside_the_memory_and_missing_cells_as_a_dash(app, stores_env):
    import json

    from dashboard.display import MISSING_CELL

    at = open_compare(app, compare_a_store="chroma", compare_b_store="qdrant", user="sam")
    at.text_input(key="compare_query").input(THEME)
    at.button(key=COMPARE).click().run()
    assert not at.exception
    table = at.dataframe[0]
    assert list(table.proto.column_order[:2]) == ["memory", "verdict"]  # not cut off at the far right
    config = json.loads(table.proto.columns)
    assert all(config[name]["width"] == "small" for name in ("A rank", "A score", "B rank", "B score"))
    assert table.proto.placeholder == MISSING_CELL  # a side that did not return a memory: "-", not "None"


# ------------------------------------------------------------------ the operator's default store


def test_the_operators_default_store_opens_in_every_new_session(app, stores_env, monkeypatch):
    # Issue 34: the default was hard-coded (embedded); a team on Chroma got the demo store
    # in every new tab. An unknown name falls back to the embedded store.
    monkeypatch.setenv("MEMLENS_DEFAULT_STORE", "chroma")
    at = app(user="sam")
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="store").value == "chroma"
    at.text_input(key="query").input(THEME)
    at.button(key=SEARCH).click().run()
    assert frame(at).iloc[0]["memory id"] == "sam-02" and "raw score" in frame(at).columns
    assert "store" not in at.query_params  # the default store is left out of the address bar
    monkeypatch.setenv("MEMLENS_DEFAULT_STORE", "no-such-store")
    fresh = app()
    fresh.run()
    assert fresh.selectbox(key="store").value == "embedded"
