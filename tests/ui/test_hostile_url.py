"""Links that are too long, malformed or hostile: the page opens, falls back to a sane
value, and says what it did with the part of the link it could not use."""

from __future__ import annotations

import pytest
from demo_questions import PIZZA
from markdown_it import MarkdownIt
from markdown_text import seen

from dashboard.ui.pages.inspect import MAX_QUERY_CHARS

SEARCH = "FormSubmitter:query_form-Search"
RENDER = MarkdownIt("commonmark")


def follow(app, params: dict[str, str]):
    """Open the link, then the run the browser asks for once the link's result is
    painted (AppTest has no browser: the next run stands in for its request). The
    first view has the result and no controls; this returns the whole page."""
    at = app()
    at.query_params.update(params)
    at.run()
    assert not at.exception, at.exception
    at.run()
    assert not at.exception, at.exception
    return at


def hits(at) -> list[str]:
    """The memory ids of the hit table."""
    return list(at.dataframe[0].value["memory id"]) if at.dataframe else []


def warnings(at) -> list[str]:
    """The warnings about the link (other panels may warn about the result)."""
    return [seen(w.value) for w in at.warning if "link" in w.value]


@pytest.mark.parametrize(
    "raw_k",
    ["many", "500", "0", "-1", "2.5", "", "1e3", "５", "[5](javascript:alert(1))", "9" * 5000],
)
def test_a_bad_k_in_the_link_falls_back_to_5_and_says_so(app, raw_k):
    at = follow(app, {"query": PIZZA, "k": raw_k, "floor": "0.20"})
    assert at.number_input(key="k").value == 5
    [warning] = warnings(at)
    assert warning.startswith("The link's k ") and warning.endswith("is not a whole number from 1 to 50; using 5.")
    assert len(warning) < 200  # a 5,000-digit value is quoted cut, not pasted whole
    assert "<a " not in RENDER.render(warning)  # the value is shown as text, never as a link
    # The rest of the link still works: query and floor are taken, the search runs.
    assert at.text_input(key="query").value == PIZZA
    assert at.slider(key="floor").value == pytest.approx(0.20)
    assert len(hits(at)) == 5


@pytest.mark.parametrize("raw_floor", ["high", "nan", "inf", "-inf", "-0.1", "1.01", "1e309", "0,35", ""])
def test_a_bad_floor_in_the_link_falls_back_to_the_default_and_says_so(app, raw_floor):
    at = follow(app, {"query": PIZZA, "k": "3", "floor": raw_floor})
    assert at.slider(key="floor").value == pytest.approx(0.35)
    assert at.number_input(key="k").value == 3
    assert any(
        w.startswith("The link's floor ") and w.endswith("is not a number from 0 to 1; using 0.35.") for w in warnings(at)
    ), warnings(at)
    assert len(hits(at)) == 3


def test_a_good_link_shows_no_warning_and_keeps_the_floor_at_full_precision(app):
    # A calibrated floor (0.2345) is the floor: snapped to the slider's 0.23, the page
    # would keep memories the shipped floor drops (issue 34).
    at = follow(app, {"query": PIZZA, "user": "sam", "k": "4", "floor": "0.2345"})
    assert not warnings(at)
    assert at.slider(key="floor").value == 0.2345
    assert at.query_params["floor"] in ("0.2345", ["0.2345"])
    assert at.number_input(key="k").value == 4


def test_a_query_longer_than_the_limit_is_cut_with_a_warning(app):
    at = follow(app, {"query": "where does the user live? " * 400})
    query = at.text_input(key="query").value
    assert len(query) == MAX_QUERY_CHARS
    assert f"The query in the link was longer than {MAX_QUERY_CHARS} characters and was cut." in warnings(at)
    # The cut query is what ran, and what the address bar now carries.
    assert len(hits(at)) == 5
    assert at.query_params["query"] in (query, [query])


@pytest.mark.parametrize(
    "query",
    [
        "<script>alert(1)</script> **pizza**",
        "ما هو طبق البيتزا المفضل لدى المستخدم؟",
        "מה התוספת האהובה על המשתמש?",
        "pizza\u202e?gnippot\u202c 🍕 cafe\u0301",
        "a & b = c; d?e#f %20 +plus",
    ],
)
def test_unusual_queries_in_the_link_arrive_and_go_back_into_it_unchanged(app, query):
    at = follow(app, {"query": query, "k": "5"})
    assert at.text_input(key="query").value == query
    assert not warnings(at)
    assert len(hits(at)) == 5
    assert at.query_params["query"] in (query, [query])


def test_a_blank_query_in_the_link_asks_for_a_message(app):
    at = follow(app, {"query": "   \t ", "floor": "0.5"})
    assert "Type a message" in at.info[0].value
    assert at.slider(key="floor").value == pytest.approx(0.5)


def test_an_unknown_user_and_unknown_parameters_do_not_break_the_page(app):
    at = follow(app, {"query": PIZZA, "user": "nobody-" + "x" * 500, "utm_source": "mail", "store": "../../etc"})
    # The store lists its users and this one is not among them: it is not added to
    # the list, and the page says so, naming the users the store holds.
    user = at.selectbox(key="user")
    assert not any(option.startswith("nobody-") for option in user.options) and user.value == "sam"
    [unknown] = [w.value for w in at.warning if "is not in this store" in w.value]
    assert "nobody\\-" in unknown and "leo, priya, sam" in unknown and len(unknown) < 400  # quoted inert, cut short
    assert any("user in the link" in w for w in warnings(at)), warnings(at)
    assert any(w.startswith("The link's store '../../etc' is not one memlens knows") for w in warnings(at))
    # Parameters the page does not know are dropped from the address bar.
    assert "utm_source" not in at.query_params and "store" not in at.query_params
