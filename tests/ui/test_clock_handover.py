"""The clock and the floor travel from Compare to Inspect (issue 34): run B ranked the
demo store as it was 40 days ago, so the memories written since did not exist for it.
Compare's "open on Inspect" link for a question B lost must open Inspect on the
store as run B saw it (the same hits, in the same order), at the floor Compare was
at, to the last digit; dropped, either one shows another retrieval than run B's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from markdown_text import seen

from dashboard.database import open_app_database

FLOOR = 0.36577  # a calibrated floor: not on the 0.01 grid of a slider


# Labels here are saved under a named reviewer, as a deployment names one (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("named_reviewer")


def _run(at, name: str, as_of: str) -> None:
    at.text_input(key="eval_as_of").set_value(as_of).run()
    at.text_input(key="eval_run_name").set_value(name).run()
    at.button(key="eval_start").click().run()
    assert not at.exception, at.exception


def _inspect(app, params: dict[str, str]):
    at = app()
    at.query_params.update(params)
    at.run()
    at.run()  # a link's controls come in the run after its first view
    assert not at.exception, at.exception
    return at


def test_compare_to_inspect_keeps_run_bs_clock_and_the_floor(app, data_dir):
    at = app()
    at.run()
    at.switch_page("quality.py").run()
    at.number_input(key="eval_k").set_value(5).run()
    clock = (datetime.now(UTC) - timedelta(days=40)).replace(microsecond=0).isoformat()
    _run(at, "today", "")
    _run(at, "40 days ago", clock)
    at.session_state["eval_floor"] = FLOOR
    at.selectbox(key="eval_compare_metric").set_value("mrr").run()
    assert not at.exception, at.exception
    worst = next(d.value for d in at.dataframe if "inspect" in d.value.columns)
    link = parse_qs(urlsplit(worst["inspect"].iloc[0]).query)
    params = {key: values[0] for key, values in link.items()}
    assert params["as_of"] == clock and float(params["floor"]) == FLOOR

    db = open_app_database({"MEMLENS_DATA_DIR": str(data_dir)})
    run_b = next(info for info in db.runs.all() if info.name == "40 days ago")
    outcome = next(o for o in db.runs.outcomes(run_b.run_id) if o.message_id == worst["message_id"].iloc[0])
    seen_by_b = [hit.memory_id for hit in outcome.hits]

    inspect = _inspect(app, params)
    assert inspect.slider(key="floor").value == FLOOR  # not 0.37
    assert [str(v) for v in inspect.dataframe[0].value["memory id"]] == seen_by_b
    assert any("were created later and are left out" in w.value for w in inspect.warning)
    assert any(f"Ranked as of {clock}" in seen(i.value) for i in inspect.sidebar.info)
    assert inspect.query_params["as_of"] in (clock, [clock])  # the address bar keeps it

    # Without the clock, Inspect shows today's store: another retrieval than run B's.
    today = _inspect(app, {key: value for key, value in params.items() if key != "as_of"})
    assert [str(v) for v in today.dataframe[0].value["memory id"]] != seen_by_b


def test_quality_misses_to_inspect_keeps_the_runs_clock_and_the_floor(app, data_dir):
    """Quality's per-question lists (the miss anatomy beside a run's metrics) link each
    question to Inspect: the link opens the store as the run saw it, at the page's floor
    to the last digit, so Inspect shows the run's own hits in the run's order."""
    at = app()
    at.run()
    at.switch_page("quality.py").run()
    at.number_input(key="eval_k").set_value(5).run()
    clock = (datetime.now(UTC) - timedelta(days=40)).replace(microsecond=0).isoformat()
    _run(at, "40 days ago", clock)
    at.session_state["eval_floor"] = FLOOR
    at.button(key="misses_find").click().run()
    assert not at.exception, at.exception
    counts = {m.label: int(m.value) for m in at.metric if m.label in ("past_k", "under_floor", "kept")}
    cause = next(c for c in ("kept", "under_floor", "past_k") if counts.get(c))
    at.radio(key="misses_cause").set_value(cause).run()
    listed = next(d.value for d in at.dataframe if "memory_id" in d.value.columns and "inspect" in d.value.columns)
    link = parse_qs(urlsplit(listed["inspect"].iloc[0]).query)
    params = {key: values[0] for key, values in link.items()}
    assert params["as_of"] == clock and float(params["floor"]) == FLOOR

    db = open_app_database({"MEMLENS_DATA_DIR": str(data_dir)})
    run = next(info for info in db.runs.all() if info.name == "40 days ago")
    outcome = next(o for o in db.runs.outcomes(run.run_id) if o.message_id == listed["message_id"].iloc[0])
    seen_by_run = [hit.memory_id for hit in outcome.hits]

    inspect = _inspect(app, params)
    assert inspect.slider(key="floor").value == FLOOR  # not 0.37
    assert [str(v) for v in inspect.dataframe[0].value["memory id"]] == seen_by_run
    assert any(f"Ranked as of {clock}" in seen(i.value) for i in inspect.sidebar.info)
