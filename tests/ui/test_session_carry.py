"""What one browser session carries from page to page, in AppTest: the store's
settings (set in Quality's sidebar, they rank on Inspect), a run comparison's link
that reproduces run B's ranking on Inspect, the judged set Quality was on, a link's
unknown user, and one reviewer name on Inspect and Label."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from demo_questions import THEME
from markdown_text import markdown_table, seen

DEMO_QUERIES = Path(__file__).resolve().parents[2] / "demo_data" / "queries.jsonl"
SEARCH = "FormSubmitter:query_form-Search"
RECENCY_HEAVY = "semantic=0.05,recency=0.95,importance=0,usage=0"


def open_page(app, page: str | None = None, params: dict[str, str] | None = None, **state):
    at = app(**state)
    if params:
        at.query_params.update(params)
    at.run()
    if params and params.get("query"):
        # A link's first view shows its result without the controls; the run the
        # browser asks for once it is painted (AppTest has none: this run) draws them.
        at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def hit_ids(at) -> list[str]:
    """The hits' ids in the order the page shows them: the interactive table, or on a
    shared link's first view the Markdown table drawn before it."""
    table = next((d.value for d in at.dataframe if "semantic" in d.value.columns), None)
    if table is not None:
        return list(table["memory id"])
    return [row["memory id"] for row in markdown_table(at)]


def keep_team_set(at, name: str = "team") -> None:
    at.file_uploader(key="eval_upload").set_value((f"{name}.jsonl", DEMO_QUERIES.read_bytes(), "application/jsonl")).run()
    at.text_input(key="eval_upload_name").set_value(name).run()
    at.button(key="eval_keep_upload").click().run()
    assert not at.exception, at.exception


# ------------------------------------------------------------------ store settings


def test_weights_set_in_qualitys_sidebar_rank_on_inspect(app):
    at = open_page(app, "quality.py")
    at.text_input(key="cfg_embedded_weights").set_value(RECENCY_HEAVY).run()
    # Through a page that draws no store picker at all, then to Inspect.
    at.switch_page("calibrate.py").run()
    at.switch_page("inspect.py").run()
    assert not at.exception, at.exception
    assert at.text_input(key="cfg_embedded_weights").value == RECENCY_HEAVY
    at.text_input(key="query").input(THEME)
    at.button(key=SEARCH).click().run()
    # The address bar carries the settings, so the link reproduces this ranking.
    assert at.query_params["store"] in ("embedded", ["embedded"])
    assert at.query_params["weights"] in (RECENCY_HEAVY, [RECENCY_HEAVY])
    recency_order = hit_ids(at)

    # A new browser session from that link ranks the same; the default weights do not.
    link = {key: value[0] if isinstance(value, list) else value for key, value in at.query_params.items()}
    again = open_page(app, params=link)
    assert again.text_input(key="cfg_embedded_weights").value == RECENCY_HEAVY
    assert hit_ids(again) == recency_order
    plain = open_page(app, params={key: v for key, v in link.items() if key not in ("store", "weights")})
    assert hit_ids(plain) != recency_order


def test_a_run_comparisons_link_opens_inspect_on_run_bs_store_and_ranking(app, data_dir):
    from dashboard.database import AppDatabase

    at = open_page(app, "quality.py")
    at.number_input(key="eval_k").set_value(5).run()
    at.text_input(key="eval_run_name").set_value("default weights").run()
    at.button(key="eval_start").click().run()
    at.text_input(key="cfg_embedded_weights").set_value(RECENCY_HEAVY).run()
    at.text_input(key="eval_run_name").set_value("recency heavy").run()
    at.button(key="eval_start").click().run()
    assert not at.exception, at.exception
    # The caption no longer says both "against the store it ran on" and "pick the
    # same store and settings in the sidebar": the link does it.
    assert not any("pick the same store and settings" in c.value for c in at.caption)
    assert any("with run B's store and settings" in m.value for m in at.markdown)
    worst = next(d.value for d in at.dataframe if "inspect" in d.value.columns)
    message_id, href = worst["message_id"].iloc[0], worst["inspect"].iloc[0]
    params = {key: values[0] for key, values in parse_qs(urlsplit(href).query).items()}
    assert params["weights"] == RECENCY_HEAVY and params["k"] == "5"

    db = AppDatabase(data_dir / "labels.sqlite")
    run_b = next(r for r in db.runs.all() if r.name == "recency heavy")
    [outcome] = [o for o in db.runs.outcomes(run_b.run_id) if o.message_id == message_id]
    db.close()
    inspect = open_page(app, params=params)  # a new browser session, as a click on the link opens
    assert not inspect.exception, inspect.exception
    assert hit_ids(inspect) == outcome.ranking()

    # Weights applied with What-if's "Use ... weights" are Inspect's too.
    at.selectbox(key="eval_run").set_value(run_b.run_id).run()
    at.selectbox(key="whatif_metric").set_value("mrr").run()
    at.button(key="whatif_search").click().run()
    at.button(key="whatif_apply").click().run()
    applied = at.session_state["cfg_embedded_weights"]
    assert applied != RECENCY_HEAVY
    at.switch_page("inspect.py").run()
    assert at.text_input(key="cfg_embedded_weights").value == applied


def test_a_link_with_a_bad_setting_says_which_and_keeps_the_rest(app):
    at = open_page(app, params={"query": THEME, "store": "embedded", "weights": RECENCY_HEAVY, "half_life_hours": "soon"})
    assert at.text_input(key="cfg_embedded_weights").value == RECENCY_HEAVY
    # Drawn inert (the note quotes the link's own text): read as the browser shows it.
    assert any(seen(w.value).startswith("The link's half_life_hours 'soon' is not a number") for w in at.warning)


# ------------------------------------------------------------------ the judged set


def test_quality_remembers_the_judged_set_across_pages_sessions_and_links(app):
    at = open_page(app, "quality.py")
    keep_team_set(at)
    assert at.selectbox(key="eval_set").value == "team"
    keep_team_set(at, "week 48")
    at.selectbox(key="eval_set").set_value("team").run()
    assert at.query_params["set"] in ("team", ["team"])  # the address bar names it
    at.switch_page("inspect.py").run()
    at.switch_page("quality.py").run()
    assert at.selectbox(key="eval_set").value == "team"

    # A new browser session: the set the link names; without a link, the newest
    # set kept, not the bundled demo.
    assert open_page(app, "quality.py").selectbox(key="eval_set").value == "week 48"
    linked = app()
    linked.switch_page("quality.py")  # the link opens Quality itself: /quality?set=team
    linked.query_params["set"] = "team"
    linked.run()
    assert linked.selectbox(key="eval_set").value == "team"


# ------------------------------------------------------------------ the user in a link


def test_a_link_to_an_unknown_user_says_so_and_does_not_add_it(app):
    at = open_page(app, params={"query": "hello", "user": "nobody"})
    user = at.selectbox(key="user")
    assert "nobody" not in user.options and user.value == "sam"
    [warning] = [w.value for w in at.warning if "not in this store" in w.value]
    assert "'nobody'" in warning and "3 user(s): leo, priya, sam" in warning
    assert "The store returned no memories for this query." not in [i.value for i in at.info]


# ------------------------------------------------------------------ the reviewer


@pytest.fixture
def no_reviewer_env(monkeypatch):
    monkeypatch.delenv("MEMLENS_REVIEWER", raising=False)


def test_inspect_asks_for_a_name_before_labelling_and_never_labels_as_reviewer(app, data_dir, no_reviewer_env):
    from dashboard.database import AppDatabase

    at = open_page(app, query=THEME)
    assert at.text_input(key="reviewer").value == ""
    assert not [b for b in at.button if (b.key or "").startswith("relevant_")]
    assert any("Who is labelling?" in i.value for i in at.info)

    at.text_input(key="reviewer").input("ana").run()
    at.button(key="relevant_sam-02").click().run()
    # The name given on Inspect is the Label page's too: it does not ask again.
    at.switch_page("label.py").run()
    assert not at.exception, at.exception
    assert "label_reviewer_input" not in [w.key for w in at.text_input]
    assert any("Labelling as **ana**" in c.value for c in at.sidebar.caption)
    db = AppDatabase(data_dir / "labels.sqlite")
    assert {row.reviewer for row in db.labels.find()} == {"ana"}
    db.close()


def test_a_name_given_on_label_reaches_inspect_and_back(app, no_reviewer_env):
    at = open_page(app, "label.py")
    at.text_input(key="label_reviewer_input").input("ben")
    at.button(key="FormSubmitter:reviewer_form-Start labelling").click().run()
    at.switch_page("inspect.py").run()
    assert at.text_input(key="reviewer").value == "ben"
    # Changed on Inspect, it is the Label page's name as well.
    at.text_input(key="reviewer").input("carla").run()
    at.switch_page("label.py").run()
    assert any("Labelling as **carla**" in c.value for c in at.sidebar.caption)
    # "Change reviewer" asks again, with the current name filled in.
    at.button(key="label_change_reviewer").click().run()
    assert at.text_input(key="label_reviewer_input").value == "carla"


def test_memlens_reviewer_names_labels_without_asking(app, monkeypatch):
    monkeypatch.setenv("MEMLENS_REVIEWER", "teambot")
    at = open_page(app, query=THEME)
    assert at.text_input(key="reviewer").value == "teambot"
    assert [b for b in at.button if (b.key or "").startswith("relevant_")]
    at.switch_page("label.py").run()
    assert any("Labelling as **teambot**" in c.value for c in at.sidebar.caption)
