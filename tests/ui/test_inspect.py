"""The Inspect page in AppTest: the pizza loop, the floor, labels, the URL."""

from __future__ import annotations

import json

import pytest
from demo_questions import PIZZA, THEME
from markdown_text import error_texts, markdown_table

from connectors.base import StoreTimeout
from connectors.registry import REGISTRY, StoreSpec

# Labels here are saved under a named reviewer, as a deployment names one (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("named_reviewer")


SEARCH = "FormSubmitter:query_form-Search"


class CountingStore:
    """The demo store, counting every call that reaches it."""

    name = "counting"

    def __init__(self):
        from connectors.embedded.factories import open_demo_store

        self.inner = open_demo_store()
        self.score_kind = self.inner.score_kind
        self.calls: list[str] = []

    def query(self, text, *, user_id, k):
        self.calls.append("query")
        return self.inner.query(text, user_id=user_id, k=k)

    def get(self, memory_id, *, user_id=None):
        self.calls.append("get")
        return self.inner.get(memory_id, user_id=user_id)

    def list(self, *, user_id, limit, offset=0):
        self.calls.append("list")
        return self.inner.list(user_id=user_id, limit=limit, offset=offset)

    def users(self):
        return self.inner.users()

    @property
    def default_user(self):
        return "sam"

    def close(self):
        pass


OPENED: list[CountingStore] = []


def open_counting() -> CountingStore:
    OPENED.append(CountingStore())
    return OPENED[-1]


class TimingOutStore(CountingStore):
    def query(self, text, *, user_id, k):
        self.calls.append("query")
        raise StoreTimeout("The store did not answer within 5.0 s", request_id="req-42")


def open_timing_out() -> TimingOutStore:
    store = TimingOutStore()
    OPENED.append(store)
    return store


@pytest.fixture
def test_stores():
    for spec in (
        StoreSpec("test-counting", "Counting demo", f"{__name__}:open_counting"),
        StoreSpec("test-timeout", "Timing out", f"{__name__}:open_timing_out"),
    ):
        REGISTRY[spec.name] = spec
    OPENED.clear()
    yield OPENED
    REGISTRY.pop("test-counting")
    REGISTRY.pop("test-timeout")


def ask(at, query: str):
    if not at.text_input:  # not run yet
        at.run()
    at.text_input(key="query").input(query)
    at.button(key=SEARCH).click().run()
    assert not at.exception, at.exception
    return at


def table(at):
    return at.dataframe[0].value


def statuses(at) -> dict[str, str]:
    frame = table(at)
    return dict(zip(frame["memory id"], frame["status"], strict=True))


def test_first_open_shows_demo_defaults(app):
    at = app()
    at.run()
    assert not at.exception
    assert at.selectbox(key="store").value == "embedded"
    assert at.selectbox(key="user").value == "sam"
    assert at.number_input(key="k").value == 5
    assert at.slider(key="floor").value == pytest.approx(0.35)
    assert "Type a message" in at.info[0].value


def test_pizza_scenario(app):
    at = ask(app(), PIZZA)
    frame = table(at)
    assert len(frame) == 5
    assert {"rank", "memory id", "text", "score", "semantic", "recency", "importance", "usage", "status"} <= set(frame)
    assert "Prefers light UI theme" in list(frame["text"])
    assert frame["semantic"].max() < 0.3
    # Under the default floor nothing is kept: the prompt says so.
    assert set(frame["status"]) == {"dropped"}
    assert at.code[0].value.startswith("No stored memory is relevant to this message.")
    # Slide the floor under the theme memory: it reaches the prompt block.
    theme_score = float(frame.loc[frame["text"] == "Prefers light UI theme", "score"].iloc[0])
    at.slider(key="floor").set_value(round(theme_score - 0.01, 2)).run()
    assert statuses(at)[frame.loc[frame["text"] == "Prefers light UI theme", "memory id"].iloc[0]] == "kept"
    assert "Prefers light UI theme" in at.code[0].value
    assert "sam-02" in list(table(at)["memory id"])  # the interactive table has replaced it
    # The chart is drawn with the floor on it.
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert any(shape.get("x0") == pytest.approx(round(theme_score - 0.01, 2)) for shape in figure["layout"]["shapes"])
    assert {trace["name"].split(" ")[0] for trace in figure["data"]} == {"semantic", "recency", "importance", "usage"}


def test_floor_moves_change_kept_dropped_and_the_prompt_block(app):
    at = ask(app(), THEME)
    assert statuses(at)["sam-02"] == "kept"
    kept_at_default = list(statuses(at).values()).count("kept")
    block_default = at.code[0].value
    at.slider(key="floor").set_value(0.0).run()
    assert set(statuses(at).values()) == {"kept"}
    assert at.code[0].value.startswith("Relevant memories about the user:")
    assert at.code[0].value.count("\n- ") == 5  # nothing dropped: the store's own block, all five
    assert any("store's own context block is used" in c.value for c in at.caption)
    at.slider(key="floor").set_value(1.0).run()
    assert set(statuses(at).values()) == {"dropped"}
    assert at.code[0].value.startswith("No stored memory is relevant")
    at.slider(key="floor").set_value(0.35).run()
    assert list(statuses(at).values()).count("kept") == kept_at_default
    assert at.code[0].value == block_default
    assert "Prefers light UI theme" in block_default


def test_store_is_queried_once_across_floor_moves_and_labels(app, test_stores):
    at = app(store="test-counting")
    ask(at, PIZZA)
    for floor in (0.1, 0.2, 0.05):
        at.slider(key="floor").set_value(floor).run()
    first, second = table(at)["memory id"][:2]
    at.button(key=f"relevant_{first}").click().run()
    at.button(key=f"not_relevant_{second}").click().run()
    assert not at.exception
    [store] = test_stores
    assert store.calls.count("query") == 1
    assert at.session_state["store_calls"] == 1


def test_labels_are_written_by_id_and_survive_a_new_session(app, data_dir):
    at = ask(app(), PIZZA)
    theme_id = table(at).set_index("text").loc["Prefers light UI theme", "memory id"]
    at.button(key=f"not_relevant_{theme_id}").click().run()
    assert any("❌ not relevant" in m.value for m in at.markdown)
    # A new browser session (a new AppTest) on the same data dir sees the label.
    again = ask(app(), PIZZA)
    assert any("❌ not relevant" in m.value for m in again.markdown)
    labels = again.dataframe[1].value
    assert list(labels["memory_id"]) == [theme_id]
    assert list(labels["label"]) == ["not_relevant"]
    assert "memory_text" not in labels.columns
    # One message id per result: the label carries the id the re-rank JSON names.
    [rerank_json] = [body for body in (json.loads(e.value) for e in again.json) if "ranked_results" in body]
    assert list(labels["message_id"]) == [rerank_json["query"]] and rerank_json["query"].startswith("live-")
    # The file on disk holds ids, not text.
    import sqlite3

    with sqlite3.connect(data_dir / "labels.sqlite") as db:
        rows = db.execute("SELECT * FROM labels").fetchall()
    assert len(rows) == 1
    assert not any(isinstance(v, str) and ("pizza" in v or "theme" in v.lower()) for v in rows[0])


def test_opt_in_stores_text_with_the_label(app):
    at = app(store_text=True)
    ask(at, THEME)
    at.button(key="relevant_sam-02").click().run()
    labels = at.dataframe[1].value
    assert list(labels["memory_text"]) == ["Prefers light UI theme"]
    assert list(labels["query_text"]) == [THEME]


def test_url_carries_query_user_k_and_floor(app):
    at = ask(app(), THEME)
    at.slider(key="floor").set_value(0.5).run()
    assert at.query_params["query"] == [THEME] or at.query_params["query"] == THEME
    shared = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert shared["user"] == "sam" and shared["k"] == "5" and shared["floor"] == "0.50"
    # Following the link in a new session reproduces the view without typing.
    follow = app()
    follow.query_params.update(shared)
    follow.run()
    assert not follow.exception
    # The link's first view shows the same memories (as a light table; the grid follows).
    assert [row["memory id"] for row in markdown_table(follow)] == list(table(at)["memory id"])
    follow.run()  # the run the browser asks for once that is painted: the controls
    assert follow.text_input(key="query").value == THEME
    assert follow.slider(key="floor").value == pytest.approx(0.5)
    assert list(table(follow)["memory id"]) == list(table(at)["memory id"])


@pytest.mark.parametrize(
    "params",
    [
        {"k": "many", "floor": "high"},
        {"k": "500", "floor": "-3"},
        {"query": "x" * 5000},
    ],
)
def test_malformed_url_falls_back_to_defaults(app, params):
    at = app()
    at.query_params.update(params)
    at.run()
    at.run()  # a link's controls come in the run after its first view
    assert not at.exception
    assert 1 <= at.number_input(key="k").value <= 50
    assert 0.0 <= at.slider(key="floor").value <= 1.0
    assert len(at.text_input(key="query").value or "") <= 2000


def test_memory_score_floor_sets_the_default(app, monkeypatch):
    monkeypatch.setenv("MEMORY_SCORE_FLOOR", "0.12")
    at = app()
    at.run()
    assert at.slider(key="floor").value == pytest.approx(0.12)


def test_a_failing_store_shows_a_message_and_the_page_keeps_running(app, test_stores):
    at = app(store="test-timeout")
    ask(at, PIZZA)
    assert any("did not answer within 5.0 s" in e and "req-42" in e for e in error_texts(at))
    at.slider(key="floor").set_value(0.2).run()  # no retry storm on a floor move
    assert not at.exception
    assert test_stores[0].calls.count("query") == 1
    at.button(key="retry_query").click().run()
    assert test_stores[0].calls.count("query") == 2


def test_an_unreachable_label_database_is_a_message_not_a_traceback(app, monkeypatch):
    # Port 1 on loopback refuses at once; the password must not reach the page.
    monkeypatch.setenv("MEMLENS_LABELS_URL", "postgresql://memlens:s3cret-pw@127.0.0.1:1/labels")
    at = ask(app(), THEME)
    assert not at.exception
    errors = error_texts(at)
    assert any(e.startswith("Labelling is unavailable") for e in errors)
    assert any(e.startswith("Cannot read the labels") for e in errors)
    assert not any("s3cret-pw" in e for e in errors)
    # The retrieval itself is still shown: the table, the prompt block.
    assert "sam-02" in list(table(at)["memory id"])
    assert "Prefers light UI theme" in at.code[0].value
    assert "sam-02" in list(table(at)["memory id"])  # the interactive table has replaced it


def test_a_link_whose_query_fails_shows_the_whole_page_at_once(app, test_stores):
    # No result to show first: the controls (where the store's settings are mended)
    # and the message come in the link's first view, and the failing store is asked once.
    at = app(store="test-timeout")
    at.query_params.update({"query": PIZZA, "k": "5"})
    at.run()
    assert not at.exception
    assert any("did not answer within 5.0 s" in e for e in error_texts(at))
    assert at.sidebar.selectbox(key="store").value == "test-timeout"
    assert at.number_input(key="k").value == 5 and at.text_input(key="query").value == PIZZA
    assert test_stores[0].calls.count("query") == 1


def test_breakdown_columns_are_numbers_shown_to_three_decimals(app):
    at = ask(app(), PIZZA)
    frame = table(at)
    assert frame["recency"].dtype.kind == "f"
    config = json.loads(at.dataframe[0].proto.columns)
    assert config["recency"]["type_config"]["format"] == "%.3f"


def test_the_page_says_queries_are_embedded_without_torch(app):
    at = ask(app(), THEME)
    captions = [c.value for c in at.caption]
    assert any("ONNX Runtime" in c and "no torch" in c for c in captions), captions



def test_the_hit_table_fits_its_breakdown_columns_and_shows_missing_cells_as_a_dash(app):
    from dashboard.display import MISSING_CELL, SCORE_FORMAT

    at = ask(app(), PIZZA)
    hits = at.dataframe[0]
    config = json.loads(hits.proto.columns)
    # Every number column narrow and the text medium: importance and usage are on
    # screen beside the text instead of cut off at the right edge.
    for column in ("semantic", "recency", "importance", "usage", "score", "rank"):
        assert config[column]["width"] == "small", column
    assert config["text"]["width"] == "medium"
    assert config["importance"]["type_config"]["format"] == SCORE_FORMAT
    assert hits.proto.placeholder == MISSING_CELL


def test_a_shared_link_shows_the_result_first_and_the_rest_on_the_next_run(app):
    # A link's first run draws the result (metrics, table) and holds the chart, the
    # prompt block and the labels back until the browser has painted it (a component
    # asks; AppTest has no browser, so the next run stands in for its request).
    at = app()
    at.query_params.update({"query": THEME, "user": "sam", "k": "5"})
    at.run()
    assert not at.exception
    assert [m.label for m in at.metric][:4] == ["Returned", "Kept", "Dropped", "Latency"]
    # The result's memories are on screen, in a Markdown table that needs no grid code.
    assert "sam-02" in [row["memory id"] for row in markdown_table(at)]
    assert any(c.value.startswith("Loading the score chart") for c in at.caption)
    assert not at.code and not at.get("plotly_chart") and not at.dataframe
    assert not [b for b in at.button if (b.key or "").startswith("relevant_")]
    # The controls ran (the query used the link's user and k) but reached the browser
    # as empty places: the code of each kind of control held the result back.
    assert not at.sidebar.selectbox and not at.sidebar.number_input and not at.sidebar.text_input
    assert not at.text_input and not at.slider and not at.button
    at.run()
    assert not at.exception
    # The next run draws them, with the link's values.
    assert at.selectbox(key="user").value == "sam" and at.number_input(key="k").value == 5
    assert at.text_input(key="query").value == THEME
    assert "Prefers light UI theme" in at.code[0].value
    assert "sam-02" in list(table(at)["memory id"])  # the interactive table has replaced it
    assert at.get("plotly_chart")
    assert [b for b in at.button if (b.key or "").startswith("relevant_")]
    assert not any(c.value.startswith("Loading the score chart") for c in at.caption)
