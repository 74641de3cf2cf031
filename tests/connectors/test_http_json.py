"""The generic HTTP JSON connector: its TOML file, its templates and dotted paths
(MockTransport), and a real service over loopback (the MemorySync look-alike,
described in TOML instead of spoken to by the MemorySync connector)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from demo_questions import THEME

from connectors.base import AuthFailed, BadResponse, InvalidRequest, ScoreKind, StoreUnavailable
from connectors.http.json_service import ConfigError, HttpJsonStore, fill, load_config, open_store, parse_config
from connectors.registry import create_store

MINIMAL: dict[str, Any] = {
    "base_url": "http://svc.test",
    "path": "/search",
    "request": {"body": {"q": "{query}", "limit": "{k}", "user": "{user_id}"}},
    "response": {"results": "data.hits", "id": "id", "text": "payload.text", "score": "score"},
}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "service.toml"
    path.write_text(text, encoding="utf-8")
    return path


def store_with(handler, config: dict | None = None, **options) -> HttpJsonStore:
    return HttpJsonStore(parse_config(config or MINIMAL), client=httpx.Client(transport=httpx.MockTransport(handler)), **options)


# ------------------------------------------------------------------ the file


def test_a_complete_file_loads(tmp_path):
    config = load_config(
        write(
            tmp_path,
            """
title = "Notes service"
base_url = "https://notes.internal"
method = "GET"
path = "/v2/search"
score_kind = "cosine_distance"
max_k = 20

[request.headers]
X-Team = "search"

[request.body]
q = "{query}"
n = "{k}"

[auth]
header = "Authorization"
prefix = "Bearer "

[response]
results = "results"
id = "doc.id"
text = "doc.body"
score = "distance"

[get]
path = "/v2/notes/{id}"
item = "note"
""",
        )
    )
    assert (config.title, config.method, config.score_kind, config.max_k) == ("Notes service", "GET", "cosine_distance", 20)
    assert config.auth_header == "Authorization" and config.get_path == "/v2/notes/{id}"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('path = "/x"\n[response]\nresults="r"\nid="i"\ntext="t"\n', "field 'base_url' is required"),
        ('base_url = "svc.test"\n[response]\nresults="r"\nid="i"\ntext="t"\n', "must start with http:// or https://"),
        ('base_url = "http://s"\nmethod = "PUT"\n[response]\nresults="r"\nid="i"\ntext="t"\n', "'method' must be GET or POST"),
        ('base_url = "http://s"\n[response]\nid="i"\ntext="t"\n', "field 'response.results' is required"),
        ('base_url = "http://s"\n[request.body]\nq = "{question}"\n[response]\nresults="r"\nid="i"\ntext="t"\n', "'request.body.q': unknown placeholder {question}"),
        ('base_url = "http://s"\ntimeout = -1\n[response]\nresults="r"\nid="i"\ntext="t"\n', "'timeout' must be a number of seconds above 0"),
        ('base_url = "http://s"\nscore_kind = "bm25"\n[response]\nresults="r"\nid="i"\ntext="t"\n', "'score_kind' must be one of"),
        ('base_url = "http://s"\n[get]\npath = "/m"\n[response]\nresults="r"\nid="i"\ntext="t"\n', "'get.path' must contain {id}"),
        ('base_url = "http://s"\n[response]\nresults = "r"\nid = 3\ntext="t"\n', "'response.id' must be a non-empty string"),
        ('base_url = "http://s"\n\n[response\nresults="r"\n', "not valid TOML"),
    ],
)
def test_bad_files_name_the_file_and_the_field(tmp_path, text, fragment):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(path) in str(caught.value) and fragment in str(caught.value)


def test_toml_syntax_errors_give_the_line(tmp_path):
    with pytest.raises(ConfigError, match=r"line 3"):
        load_config(write(tmp_path, 'base_url = "http://s"\n\n[response\n'))


def test_missing_file_and_unset_path_are_clear(tmp_path):
    with pytest.raises(ConfigError, match="Cannot read the HTTP JSON store config"):
        load_config(tmp_path / "absent.toml")
    with pytest.raises(StoreUnavailable, match="MEMLENS_HTTP_JSON_CONFIG"):
        open_store(config_path="")


# ------------------------------------------------------------------ templates and paths


def test_fill_keeps_types_for_whole_placeholders_and_text_inside_strings():
    template = {"q": "{query}", "k": "{k}", "u": "{user_id}", "label": "user {user_id} wants {k}", "keep": 3, "list": ["{k}"]}
    assert fill(template, {"query": 'say "hi" {k}', "k": 5, "user_id": None}) == {
        "q": 'say "hi" {k}',  # the value is not re-expanded
        "k": 5,
        "u": None,
        "label": "user  wants 5",
        "keep": 3,
        "list": [5],
    }


def test_post_body_is_json_built_from_the_template_even_with_quotes_and_braces():
    seen: list[httpx.Request] = []

    def handler(request):
        seen.append(request)
        return httpx.Response(200, json={"data": {"hits": [{"id": 7, "payload": {"text": "t"}, "score": 0.4}]}})

    result = store_with(handler).query('the "pizza" {query} }{', user_id="sam", k=4)
    assert json.loads(seen[0].content) == {"q": 'the "pizza" {query} }{', "limit": 4, "user": "sam"}
    assert seen[0].url.path == "/search"
    assert [(h.memory_id, h.text, h.score) for h in result.hits] == [("7", "t", 0.4)]


def test_get_sends_the_template_as_query_params_and_drops_a_missing_user():
    seen: list[httpx.Request] = []

    def handler(request):
        seen.append(request)
        return httpx.Response(200, json={"data": {"hits": []}})

    store_with(handler, {**MINIMAL, "method": "GET"}).query("pizza", user_id=None, k=3)
    assert dict(seen[0].url.params) == {"q": "pizza", "limit": "3"}


def test_dotted_paths_reach_into_lists_and_nested_breakdowns():
    config = {
        **MINIMAL,
        "response": {
            "results": "data.0.matches",
            "id": "meta.ids.0",
            "text": "payload.text",
            "score": "scores.final",
            "breakdown": "scores",
            "created_at": "payload.when",
            "context": "data.0.prompt",
        },
    }
    body = {
        "data": [
            {
                "prompt": "Memories:\n- Likes tea",
                "matches": [
                    {"meta": {"ids": ["a1"]}, "payload": {"text": "Likes tea", "when": "2025-01-02T03:04:05Z"}, "scores": {"final": 0.7, "dense": {"cos": 0.8}, "note": "x"}},
                    {"meta": {"ids": []}, "payload": {"text": "no id"}, "scores": {"final": 0.2}},
                    {"meta": {"ids": ["a3"]}, "payload": {}, "scores": {"final": "n/a"}},
                ],
            }
        ]
    }
    result = store_with(lambda r: httpx.Response(200, json=body), config).query("tea?", user_id=None, k=5)
    assert [h.memory_id for h in result.hits] == ["a1", "a3"]
    first, second = result.hits
    assert first.breakdown == {"final": 0.7, "dense.cos": 0.8}
    assert first.created_at.year == 2025 and result.context.startswith("Memories")
    assert second.score is None and second.text == ""
    notes = "\n".join(result.notes)
    assert "data.0.matches[1]: no id at 'meta.ids.0'; left out." in notes
    assert "data.0.matches[2] (a3): no number at 'scores.final'" in notes
    assert "breakdown values that are not numbers left out: note" in notes


def test_results_path_missing_or_not_a_list_is_a_bad_response_naming_the_path():
    with pytest.raises(BadResponse, match=r"no results at 'data.hits' \(missing step 'data.hits'"):
        store_with(lambda r: httpx.Response(200, json={"data": {}})).query("q", user_id=None, k=5)
    with pytest.raises(BadResponse, match="'data.hits' in the response is a dict, not a list"):
        store_with(lambda r: httpx.Response(200, json={"data": {"hits": {}}})).query("q", user_id=None, k=5)


def test_cosine_distances_are_turned_into_similarities_and_the_raw_value_kept():
    config = {**MINIMAL, "score_kind": "cosine_distance"}
    body = {"data": {"hits": [{"id": "a", "payload": {"text": "t"}, "score": 0.25}]}}
    result = store_with(lambda r: httpx.Response(200, json=body), config).query("q", user_id=None, k=1)
    assert result.score_kind is ScoreKind.DISTANCE and result.raw_score_kind == "cosine distances"
    assert (result.hits[0].score, result.hits[0].raw_score) == (0.75, 0.25)


def test_without_a_score_path_nothing_is_compared_to_a_floor():
    config = {**MINIMAL, "response": {k: v for k, v in MINIMAL["response"].items() if k != "score"}}
    body = {"data": {"hits": [{"id": "a", "payload": {"text": "t"}}]}}
    result = store_with(lambda r: httpx.Response(200, json=body), config).query("q", user_id=None, k=1)
    assert result.score_kind is ScoreKind.NONE and result.hits[0].score is None


def test_k_is_clamped_to_max_k_with_a_note():
    seen = []

    def handler(request):
        seen.append(json.loads(request.content))
        return httpx.Response(200, json={"data": {"hits": []}})

    result = store_with(handler, {**MINIMAL, "max_k": 10}).query("q", user_id=None, k=99)
    assert seen[0]["limit"] == 10 and any("asked for k=10" in n for n in result.notes)


def test_auth_header_carries_the_key_and_a_missing_key_is_refused():
    seen = []

    def handler(request):
        seen.append(request)
        return httpx.Response(401, json={"detail": "bad token"})

    config = {**MINIMAL, "auth": {"header": "Authorization", "prefix": "Bearer "}}
    with pytest.raises(AuthFailed, match="bad token"):
        store_with(handler, config, api_key="tok-123").query("q", user_id=None, k=1)
    assert seen[0].headers["Authorization"] == "Bearer tok-123"
    with pytest.raises(InvalidRequest, match="MEMLENS_HTTP_JSON_API_KEY"):
        store_with(handler, config)


# ------------------------------------------------------------------ over loopback


def memorysync_as_toml(tmp_path: Path, url: str) -> Path:
    return write(
        tmp_path,
        f"""
title = "MemorySync via TOML"
base_url = "{url}"
method = "POST"
path = "/memory/query"
max_k = 50

[request.headers]
X-End-User-ID = "{{user_id}}"

[request.body]
query = "{{query}}"
k = "{{k}}"

[auth]
header = "X-API-Key"

[response]
results = "memories"
id = "id"
text = "text"
score = "score"
breakdown = "scoring_breakdown"
created_at = "created_at"
context = "context"

[get]
path = "/memory/{{id}}"
item = ""

[list]
path = "/memory/export"
results = "memories"
params = {{ limit = "{{limit}}", offset = "{{offset}}" }}
""",
    )


def test_a_toml_description_of_a_real_service_reads_it_like_the_dedicated_connector(tmp_path, memorysync_server, monkeypatch):
    path = memorysync_as_toml(tmp_path, memorysync_server.url)
    generic = create_store("http_json", {"config_path": str(path), "api_key": memorysync_server.api_key})
    from connectors.http.memorysync import MemorySyncStore

    dedicated = MemorySyncStore(memorysync_server.url, memorysync_server.api_key, end_user_id="sam")
    mine = generic.query(THEME, user_id="sam", k=5)
    theirs = dedicated.query(THEME, user_id="sam", k=5)
    assert [h.memory_id for h in mine.hits] == [h.memory_id for h in theirs.hits]
    # The semantic part is untouched by the usage bump between the two queries.
    for a, b in zip(mine.hits, theirs.hits, strict=True):
        assert a.breakdown["raw.semantic"] == pytest.approx(b.breakdown["raw.semantic"])
    assert mine.context.startswith("Relevant memories")
    assert memorysync_server.requests_to("/memory/query")[0].headers["X-API-Key"] == memorysync_server.api_key
    assert generic.get("sam-02", user_id="sam").text == "Prefers light UI theme"
    assert generic.get("nope", user_id="sam") is None
    assert len(generic.list(user_id="sam", limit=5, offset=5)) == 5
    with pytest.raises(InvalidRequest, match="400"):
        generic.query(THEME, user_id=None, k=5)  # no end user: the header is left out and the store says 400
