"""The LangGraph store connector against a real InMemoryStore with the real MiniLM
embedding, built by a factory named as `module:function` the way a user names theirs."""

from __future__ import annotations

import pytest
from demo_judgments import relevant_ids
from demo_questions import PIZZA, THEME
from langgraph_factory import demo_store

from connectors.base import InvalidRequest, ScoreKind, StoreUnavailable
from connectors.demo_loader import demo_rows
from connectors.embedding import model_loader as embedding
from connectors.registry import create_store
from connectors.vector.langgraph_store import allowed_factories, open_store, parse_namespace

THEME_ID = relevant_ids("demo-q04")[0]
FACTORY = "langgraph_factory:demo_store"
TEST_FACTORIES = ",".join(
    f"langgraph_factory:{name}"
    for name in ("demo_store", "missing", "not_a_store", "no_index_store", "wrong_dims_store")
) + ",langgraph_factory,no_such_module:build"


@pytest.fixture(autouse=True, scope="module")
def operator_allows_the_test_factories():
    """The allowlist an operator would set for these factories (nothing else runs)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MEMLENS_LANGGRAPH_FACTORIES", TEST_FACTORIES)
        yield


@pytest.fixture(scope="module")
def store():
    return open_store(FACTORY, namespace='("memories", "{user_id}")', text_field="text")


def test_theme_question_puts_the_theme_memory_first(store):
    result = store.query(THEME, user_id="sam", k=5)
    assert result.hits[0].memory_id == THEME_ID
    assert result.hits[0].text == "Prefers light UI theme"
    assert {h.metadata["user_id"] for h in result.hits} == {"sam"}
    assert result.score_kind is ScoreKind.SIMILARITY


@pytest.mark.parametrize("question", [THEME, PIZZA, "How does the user get to work?"])
def test_scores_and_order_are_the_stores_own(store, question):
    own = demo_store().search(("memories", "sam"), query=question, limit=10)
    result = store.query(question, user_id="sam", k=10)
    assert [h.memory_id for h in result.hits] == [item.key for item in own]
    assert [h.raw_score for h in result.hits] == [item.score for item in own]
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    assert [h.rank for h in result.hits] == list(range(1, 11))


def test_the_score_is_minilms_cosine_similarity(store):
    rows, _ = demo_rows()
    texts = {r["id"]: r["text"] for r in rows}
    query = embedding.encode([THEME])[0]
    for hit in store.query(THEME, user_id="sam", k=5).hits:
        assert hit.score == pytest.approx(float(query @ embedding.encode([texts[hit.memory_id]])[0]), abs=1e-4)


def test_pizza_scores_under_a_floor_the_theme_answer_clears(store):
    assert store.query(PIZZA, user_id="sam", k=5).hits[0].score < 0.35
    assert store.query(THEME, user_id="sam", k=5).hits[0].score > 0.6


def test_nested_text_field_get_list_and_users():
    store = open_store(FACTORY, namespace="memories,{user_id}", text_field="note.body")
    assert store.query(THEME, user_id="sam", k=1).hits[0].text == "Prefers light UI theme"
    assert store.get(THEME_ID, user_id="sam").text == "Prefers light UI theme"
    assert store.get(THEME_ID).user_id == "sam"
    assert store.get(THEME_ID, user_id="someone-else") is None
    rows, _ = demo_rows()
    assert {m.memory_id for m in store.list(user_id="sam", limit=500)} == {r["id"] for r in rows if r["user_id"] == "sam"}
    assert store.users() == sorted({r["user_id"] for r in rows})


def test_registry_opens_it():
    store = create_store("langgraph", {"factory": FACTORY, "namespace": "memories,{user_id}", "text_field": "text"})
    assert store.query(THEME, user_id="sam", k=1).hits[0].memory_id == THEME_ID


@pytest.mark.parametrize(
    "settings,error,named",
    [
        ({"factory": "no_such_module:build"}, StoreUnavailable, "setting factory = 'no_such_module:build'"),
        ({"factory": "langgraph_factory:missing"}, InvalidRequest, "has no function 'missing'"),
        ({"factory": "langgraph_factory"}, InvalidRequest, "must be module:function"),
        ({"factory": "langgraph_factory:not_a_store"}, InvalidRequest, "returned a dict, not a BaseStore"),
        ({"factory": "langgraph_factory:no_index_store"}, InvalidRequest, "no embedding index"),
        ({"factory": "langgraph_factory:wrong_dims_store"}, InvalidRequest, "dims=768 but its embed function returns 384"),
        ({"namespace": "('memories', 3"}, InvalidRequest, "setting namespace"),
    ],
)
def test_bad_settings_name_the_setting(settings, error, named):
    with pytest.raises(error, match=None) as raised:
        open_store(**{"factory": FACTORY, **settings})
    assert named in str(raised.value)


def test_a_missing_text_field_names_the_setting_and_the_fields_there_are():
    store = open_store(FACTORY, text_field="content")
    with pytest.raises(InvalidRequest, match=r"setting text_field = 'content'.*its value has: note, text"):
        store.query(THEME, user_id="sam", k=3)


@pytest.mark.parametrize(
    "template,parts",
    [("memories,{user_id}", ("memories", "{user_id}")), ('("memories", "{user_id}")', ("memories", "{user_id}")),
     ("('agent', 'user-{user_id}', 'facts')", ("agent", "user-{user_id}", "facts"))],
)
def test_namespace_templates(template, parts):
    assert parse_namespace(template) == parts


# ------------------------------------------------------------------ only the operator names code


@pytest.mark.parametrize("typed", ["tempfile:mkdtemp", "os:getpid", " os:abort ", "this:x", ""])
def test_a_factory_the_operator_did_not_allow_is_refused_before_anything_runs(typed, tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where mkdtemp would create its directory
    with pytest.raises(InvalidRequest) as raised:
        open_store(typed)
    assert "is not a factory the operator allowed" in str(raised.value)
    assert "MEMLENS_LANGGRAPH_FACTORIES" in str(raised.value)
    assert list(tmp_path.iterdir()) == []


def test_the_registry_refuses_it_too_and_says_what_is_allowed(monkeypatch):
    monkeypatch.delenv("MEMLENS_LANGGRAPH_FACTORIES")
    monkeypatch.setenv("MEMLENS_LANGGRAPH_FACTORY", FACTORY)
    with pytest.raises(InvalidRequest, match=r"not a factory the operator allowed \(allowed here: langgraph_factory:demo_store\)"):
        create_store("langgraph", {"factory": "tempfile:mkdtemp"})
    with pytest.raises(InvalidRequest, match="not one the operator allowed"):
        create_store("langgraph", {"factory": "tempfile:mkdtemp"}, visitor_environ={"MEMLENS_LANGGRAPH_FACTORY": FACTORY})
    assert create_store("langgraph", {"factory": FACTORY}).query(THEME, user_id="sam", k=1).hits[0].memory_id == THEME_ID


def test_the_allowlist_is_the_configured_factory_then_the_comma_separated_list():
    environ = {"MEMLENS_LANGGRAPH_FACTORY": "a:b", "MEMLENS_LANGGRAPH_FACTORIES": " c:d, ,a:b,e:f "}
    assert allowed_factories(environ) == ("a:b", "c:d", "e:f")
    assert allowed_factories({}) == ()
