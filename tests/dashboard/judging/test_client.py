"""The chat-model client against a real loopback OpenAI-compatible server, and its
request logic with httpx.MockTransport."""

from __future__ import annotations

import json
import logging
import threading

import httpx
import pytest
from chat_model_server import ChatModelServer, Reply

from connectors.base import AuthFailed, BadResponse, RateLimited, StoreTimeout, StoreUnavailable
from dashboard.judging.client import (
    ChatClient,
    ModelConfig,
    ModelOutputError,
    ModelSettingsError,
    TextNotAllowed,
    bounded_map,
    config_from_environ,
    decode_json_content,
)

KEY = "sk-test-very-secret-key-123456"
SCHEMA = {"type": "object", "properties": {"grade": {"type": "integer"}}, "required": ["grade"]}


@pytest.fixture
def server():
    with ChatModelServer() as running:
        yield running


def client_for(server, *, send_text=True, **config):
    sleeps: list[float] = []
    cfg = ModelConfig(base_url=server.url, model="tiny", api_key=KEY, **config)
    return ChatClient(cfg, send_text=send_text, sleep=sleeps.append), sleeps


def test_a_reply_comes_back_with_its_tokens_and_the_request_asks_for_the_schema(server):
    server.script.append(Reply(content='{"grade": 2}', usage=(30, 5)))
    client, _ = client_for(server)
    reply = client.complete([{"role": "user", "content": "grade this"}], schema=SCHEMA, schema_name="grade")
    assert decode_json_content(reply.content) == ({"grade": 2}, None)
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (30, 5, 35)
    assert client.usage.total_tokens == 35 and client.requests == 1
    sent = server.received[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    assert sent.body["model"] == "tiny" and sent.body["temperature"] == 0
    assert sent.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "grade", "schema": SCHEMA, "strict": True},
    }


def test_wrong_json_from_the_model_is_named_with_line_and_column(server):
    server.script.append(Reply(content='{"grade": 2,\n "reason": oops}'))
    client, _ = client_for(server)
    reply = client.complete([{"role": "user", "content": "x"}], schema=SCHEMA)
    payload, error = decode_json_content(reply.content)
    assert payload is None
    assert error is not None and "line 2" in error and "not valid JSON" in error


def test_a_fenced_answer_is_read_as_json():
    assert decode_json_content('```json\n{"grade": 1}\n```') == ({"grade": 1}, None)
    assert decode_json_content("  ")[1] == "the model's answer is empty"


def test_429_waits_what_retry_after_says_then_succeeds(server):
    server.script += [Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "7"}), Reply(content="{}")]
    client, sleeps = client_for(server)
    reply = client.complete([{"role": "user", "content": "x"}])
    assert sleeps == [7.0]
    assert reply.attempts == 2 and len(server.received) == 2


def test_429_that_asks_for_too_long_a_wait_is_a_rate_limit_error(server):
    server.script.append(Reply(status=429, body={"error": {"message": "quota"}}, headers={"Retry-After": "3600"}))
    client, sleeps = client_for(server)
    with pytest.raises(RateLimited) as caught:
        client.complete([{"role": "user", "content": "x"}])
    assert caught.value.retry_after == 3600 and sleeps == []


def test_500_is_retried_then_reported(server):
    server.script += [Reply(status=500, body={"error": {"message": "boom"}})] * 3
    client, sleeps = client_for(server)
    with pytest.raises(BadResponse) as caught:
        client.complete([{"role": "user", "content": "x"}])
    assert "500" in str(caught.value) and "boom" in str(caught.value)
    assert len(server.received) == 3 and len(sleeps) == 2


def test_a_500_then_an_answer_is_an_answer(server):
    server.script += [Reply(status=503, body={"error": "busy"}), Reply(content='{"grade": 0}')]
    client, _ = client_for(server)
    assert client.complete([{"role": "user", "content": "x"}]).attempts == 2


def test_a_slow_answer_is_a_timeout_naming_the_host(server):
    server.script.append(Reply(content="{}", delay=2.0))
    client, _ = client_for(server, timeout=0.2)
    with pytest.raises(StoreTimeout) as caught:
        client.complete([{"role": "user", "content": "x"}])
    assert "127.0.0.1" in str(caught.value) and "0.2 s" in str(caught.value)


def test_the_key_never_leaks_into_errors_logs_or_repr(server, caplog):
    caplog.set_level(logging.INFO)  # httpcore's DEBUG trace prints raw response headers; no app runs at that level
    # A server that echoes the rejected key back, as some do.
    server.script.append(Reply(status=401, body={"error": {"message": f"invalid key {KEY}"}}, headers={"X-Request-ID": f"req-{KEY}"}))
    client, _ = client_for(server)
    with pytest.raises(AuthFailed) as caught:
        client.complete([{"role": "user", "content": "x"}])
    shown = " ".join([str(caught.value), repr(caught.value), caplog.text, repr(client), repr(client.config), str(caught.value.request_id)])
    assert KEY not in shown
    assert "401" in str(caught.value)


def test_nothing_is_sent_until_the_user_agrees(server):
    client, _ = client_for(server, send_text=False)
    with pytest.raises(TextNotAllowed) as caught:
        client.complete([{"role": "user", "content": "a memory"}])
    assert server.url.rsplit("/", 1)[0].replace("http://", "") in str(caught.value)
    assert server.received == []


def test_a_refused_connection_is_store_unavailable():
    client = ChatClient(ModelConfig(base_url="http://127.0.0.1:9/v1", model="m"), send_text=True)
    with pytest.raises(StoreUnavailable):
        client.complete([{"role": "user", "content": "x"}])


def test_the_key_goes_only_to_its_configured_host():
    config = ModelConfig(base_url="https://api.example.com/v1", model="m", api_key=KEY)
    assert config.with_base_url("https://api.example.com/v2").api_key == KEY
    assert config.with_base_url("https://evil.example/v1").api_key is None
    assert config.with_base_url("http://api.example.com/v1").api_key is None


def test_config_comes_from_the_environment_and_bad_values_are_named():
    assert config_from_environ({}) is None
    assert config_from_environ({"MEMLENS_LLM_BASE_URL": "http://h/v1"}) is None
    config = config_from_environ(
        {"MEMLENS_LLM_BASE_URL": "http://h:8080/v1", "MEMLENS_LLM_MODEL": "m", "MEMLENS_LLM_API_KEY": KEY, "MEMLENS_LLM_CONCURRENCY": "8"}
    )
    assert config is not None and config.concurrency == 8 and config.host == "http://h:8080" and config.api_key == KEY
    with pytest.raises(ModelSettingsError, match="MEMLENS_LLM_TIMEOUT"):
        config_from_environ({"MEMLENS_LLM_BASE_URL": "http://h/v1", "MEMLENS_LLM_MODEL": "m", "MEMLENS_LLM_TIMEOUT": "soon"})
    with pytest.raises(ModelSettingsError, match="MEMLENS_LLM_JSON_MODE"):
        config_from_environ({"MEMLENS_LLM_BASE_URL": "http://h/v1", "MEMLENS_LLM_MODEL": "m", "MEMLENS_LLM_JSON_MODE": "xml"})


# ------------------------------------------------------------------ MockTransport


def mock_client(handler, **config) -> ChatClient:
    cfg = ModelConfig(base_url="http://model.test/v1", model="m", **config)
    return ChatClient(cfg, send_text=True, client=httpx.Client(transport=httpx.MockTransport(handler)), sleep=lambda s: None)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("schema", "json_schema"), ("object", "json_object"), ("none", None)],
)
def test_the_json_mode_decides_the_response_format(mode, expected):
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json={"choices": [{"message": {"content": "{}"}}]})

    mock_client(handler, json_mode=mode).complete([{"role": "user", "content": "x"}], schema=SCHEMA)
    assert (seen[0].get("response_format") or {}).get("type") == expected
    assert "Authorization" not in str(seen)  # no key configured: no header


@pytest.mark.parametrize(
    "body",
    [{"choices": []}, {"choices": [{"message": {}}]}, {"error": "nothing"}, [1, 2]],
    ids=["no choices", "no content", "error object", "a list"],
)
def test_an_answer_without_a_message_is_a_model_output_error(body):
    client = mock_client(lambda request: httpx.Response(200, json=body))
    with pytest.raises(ModelOutputError, match="without a message"):
        client.complete([{"role": "user", "content": "x"}])


def test_a_body_that_is_not_json_is_a_bad_response():
    client = mock_client(lambda request: httpx.Response(200, text="<html>gateway</html>"))
    with pytest.raises(BadResponse, match="not JSON"):
        client.complete([{"role": "user", "content": "x"}])


def test_bounded_map_never_has_more_than_the_limit_in_flight_and_returns_every_item():
    in_flight = 0
    most = 0
    lock = threading.Lock()
    gate = threading.Barrier(3)

    def work(item: int) -> int:
        nonlocal in_flight, most
        with lock:
            in_flight += 1
            most = max(most, in_flight)
        if item < 3:
            gate.wait(timeout=10)  # the first three must run together: the limit allows 3
        with lock:
            in_flight -= 1
        if item == 7:
            raise ValueError("seven")
        return item * 2

    results = list(bounded_map(work, range(20), 3))
    assert most == 3
    assert sorted(item for item, _, _ in results) == list(range(20))
    errors = {item: str(error) for item, _, error in results if error is not None}
    assert errors == {7: "seven"}
    assert {item: value for item, value, error in results if error is None} == {i: i * 2 for i in range(20) if i != 7}
