"""The Browse page on the embedded demo store: the verdict uses the store's own
embedding neighbours as well as text (docs/browse-verdict.md)."""

from __future__ import annotations

import json

from markdown_text import seen

from dashboard.display import MISSING_CELL, SCORE_FORMAT

CHECK = "FormSubmitter:browse_check_form-Check"


def check(app, expected: str):
    at = app(user="sam")
    at.switch_page("browse.py").run()
    assert not at.exception, at.exception
    at.text_input(key="browse_expected").input(expected)
    at.button(key=CHECK).click().run()
    assert not at.exception, at.exception
    return at


def test_a_reworded_memory_is_stored_in_other_words_naming_the_nearest_and_its_cosine(app):
    at = check(app, "He has a collie called Pixel")
    assert not at.error, [e.value for e in at.error]  # was: "probably never stored"
    verdict = next(seen(w.value) for w in at.warning if "Stored in other words" in seen(w.value))
    assert "sam-14" in verdict and "0.844" in verdict
    neighbours = next(df.value for df in at.dataframe if "cosine" in df.value.columns)
    assert neighbours.iloc[0]["memory id"] == "sam-14" and len(neighbours) == 5


def test_an_off_topic_memory_is_still_never_stored(app):
    at = check(app, "Is allergic to shellfish")
    assert at.error and "probably never stored" in seen(at.error[0].value)
    assert "under 0.40" in seen(at.error[0].value)


def column_config(table) -> dict:
    return json.loads(table.proto.columns)


def test_scores_are_shown_with_the_projects_decimals_and_missing_cells_as_a_dash(app):
    at = check(app, "He has a collie called Pixel")
    assert at.dataframe
    for table in at.dataframe:
        assert table.proto.placeholder == MISSING_CELL  # not Streamlit's "None"
    nearest = next(t for t in at.dataframe if "rank" in t.value.columns)
    neighbours = next(t for t in at.dataframe if "cosine" in t.value.columns)
    for table, column in ((nearest, "score"), (neighbours, "cosine")):
        config = column_config(table)[column]
        assert config["type_config"]["format"] == SCORE_FORMAT == "%.3f"  # 0.587, never "0.5"
        assert config["width"] == "small"


def test_a_link_to_browse_opens_on_its_user_and_the_address_bar_keeps_it(app):
    # Issue 34: Browse ignored ?user= and opened on the store's default user.
    at = app()
    at.query_params["user"] = "leo"
    at.switch_page("browse.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="user").value == "leo"
    listing = next(d.value for d in at.dataframe if "user" in d.value.columns)
    assert set(listing["user"]) == {"leo"}
    assert at.query_params["user"] in ("leo", ["leo"])
