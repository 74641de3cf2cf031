"""The outbound boundary (connectors/http/outbound.py) on real loopback sockets: a total
deadline against a server that drips, redirects only within one origin and never
with a key, credentials out of every message, keys with control characters refused
when configured, and outside text made terminal-safe. The model client, the webhook
and the HTTP stores each meet the same server."""

from __future__ import annotations

import pytest
from hostile_server import HostileServer
from ports import closed_port

from connectors.base import ConnectorError, InvalidRequest, StoreTimeout, StoreUnavailable
from connectors.common.redaction import terminal_line, terminal_text
from connectors.http import outbound
from connectors.http.base import HttpBoundary
from dashboard.judging.client import ChatClient, ModelConfig
from dashboard.monitoring import webhook

KEY = "sk-live-AAAA1111BBBB2222"


def _model(url: str, key: str | None = KEY, timeout: float = 1.0) -> ChatClient:
    return ChatClient(ModelConfig(base_url=url, model="m", api_key=key, timeout=timeout, max_retries=0), send_text=True)


def test_a_server_that_drips_is_cut_off_at_the_total_deadline():
    # one byte every 0.25 s: each read is well inside the 1 s read timeout, so only
    # a deadline on the whole request ends it (the server finishes after 30 s)
    with HostileServer(mode="drip", interval=0.25) as server:
        client = _model(server.url() + "/v1")
        with pytest.raises(StoreTimeout, match="did not answer POST /chat/completions within 1 s"):
            client.complete([{"role": "user", "content": "hi"}])
        client.close()


def test_the_webhook_is_cut_off_at_its_deadline_too():
    with HostileServer(mode="drip", interval=0.25) as server:
        problem = webhook.post(server.url() + "/hooks/s3cr3t", {"text": "alert"}, deadline=1.0)
    assert problem == "the webhook did not answer within 1 s"


def test_a_redirect_to_another_host_is_a_failure_naming_that_host_and_the_key_stays_home():
    with HostileServer(mode="ok") as elsewhere:
        moved = elsewhere.url("localhost") + "/v1/chat/completions"
        with HostileServer(mode="redirect", location=moved) as server:
            client = _model(server.url() + "/v1")
            with pytest.raises(ConnectorError, match=r"answered 307, moving it to localhost") as caught:
                client.complete([{"role": "user", "content": "hi"}])
            client.close()
        assert elsewhere.received == []  # not followed at all
    assert KEY not in str(caught.value)


def test_a_same_origin_redirect_is_followed_without_a_key_and_refused_with_one():
    # the server redirects every request to a path of its own origin
    with HostileServer(mode="redirect", status=308) as server:
        server.location = server.url() + "/elsewhere"
        # without a key: followed (to /elsewhere, which redirects again, up to the limit)
        keyless = HttpBoundary(store_title="Hook", base_url=server.url(), timeout=1.0, max_retries=0)
        with pytest.raises(ConnectorError, match="redirected more than 5 times"):
            keyless.send("POST", "/x", json={})
        keyless.close()
        assert [seen.path for seen in server.received] == ["/x"] + ["/elsewhere"] * outbound.MAX_REDIRECTS
        # with a key: not followed, the key is sent once, to the configured address only
        server.received.clear()
        keyed = _model(server.url() + "/v1")
        with pytest.raises(ConnectorError, match="never resends a key after a redirect"):
            keyed.complete([{"role": "user", "content": "hi"}])
        keyed.close()
        assert [seen.path for seen in server.received] == ["/v1/chat/completions"]


def test_a_webhook_that_moved_is_not_counted_as_delivered():
    with HostileServer(mode="redirect", status=301, location="https://hooks.moved.example/new") as server:
        problem = webhook.post(server.url() + "/hooks/s3cr3t", {"text": "alert"})
    assert problem is not None and "hooks.moved.example" in problem
    assert "s3cr3t" not in problem


def test_a_password_in_the_base_url_never_reaches_the_message(unused_port):
    url = f"http://user:hunter2pw@127.0.0.1:{unused_port}/v1"
    client = _model(url, key=None)
    with pytest.raises(StoreUnavailable) as caught:
        client.complete([{"role": "user", "content": "hi"}])
    client.close()
    assert "hunter2pw" not in str(caught.value) and "hunter2pw" not in repr(client)
    assert f"127.0.0.1:{unused_port}" in str(caught.value)
    assert outbound.public_url(url) == f"http://127.0.0.1:{unused_port}/v1"


@pytest.mark.parametrize("key", ["sk-AAAA\nBBBB", "sk-AAAA\rBBBB", "sk-\x1b[31mAAAA", "sk-AAAA\x00"])
def test_a_key_with_a_control_character_is_refused_when_configured_without_quoting_it(key):
    with pytest.raises(InvalidRequest, match="control character") as caught:
        ModelConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key=key)
    assert "AAAA" not in str(caught.value)
    with pytest.raises(InvalidRequest, match="control character"):
        HttpBoundary(store_title="Store", base_url="http://127.0.0.1:9", secrets=[key])


def test_an_error_body_with_terminal_escapes_is_shown_escaped():
    with HostileServer(mode="control") as server:
        client = _model(server.url() + "/v1", key=None)
        with pytest.raises(ConnectorError) as caught:
            client.complete([{"role": "user", "content": "hi"}])
        client.close()
    shown = terminal_line(str(caught.value))
    assert "\x1b" not in shown and "\x07" not in shown and "\\x1b]0;pwned" in shown


def test_terminal_text_keeps_lines_and_escapes_the_rest():
    assert terminal_text("a\x1b[31mb\nc\td\x07\u202e") == "a\\x1b[31mb\nc\td\\x07\\u202e"
    assert terminal_line("one\ntwo") == "one\\ntwo"


def test_a_client_library_s_client_follows_a_same_origin_redirect_only_without_a_key():
    with HostileServer(mode="redirect", status=308) as server:
        server.location = server.url() + "/elsewhere"
        keyless = outbound.library_client(server.url(), what="Tracer", timeout=1.0, deadline=5.0)
        with pytest.raises(ConnectorError, match="Tracer GET /x failed: TooManyRedirects"):
            keyless.get("/x")
        keyless.close()
        assert [seen.path for seen in server.received] == ["/x"] + ["/elsewhere"] * outbound.MAX_REDIRECTS
        server.received.clear()
        keyed = outbound.library_client(
            server.url(), what="Tracer", timeout=1.0, deadline=5.0, headers={"Authorization": f"Bearer {KEY}"}, secrets=[KEY]
        )
        with pytest.raises(outbound.RedirectRefused, match="never resends a key after a redirect") as caught:
            keyed.get("/x")
        keyed.close()
        assert [seen.path for seen in server.received] == ["/x"]
    assert KEY not in f"{caught.value} {caught.value!r}"


def test_a_client_library_s_client_is_cut_off_at_the_total_deadline_and_decodes_a_body_once():
    import gzip
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Gzipped(BaseHTTPRequestHandler):
        def do_GET(self):
            body = gzip.compress(json.dumps({"spans": [1, 2, 3]}).encode())
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Gzipped)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = outbound.library_client(f"http://127.0.0.1:{server.server_address[1]}", what="Tracer", timeout=1.0, deadline=5.0)
    assert client.get("/v1/spans").json() == {"spans": [1, 2, 3]}
    client.close()
    server.shutdown()
    server.server_close()
    with HostileServer(mode="drip", interval=0.25) as dripping:
        client = outbound.library_client(dripping.url(), what="Tracer", timeout=1.0, deadline=1.0)
        with pytest.raises(StoreTimeout, match="Tracer did not answer GET /v1/spans within 1 s"):
            client.get("/v1/spans")
        client.close()


def test_a_client_library_s_client_refuses_a_header_key_with_a_control_character():
    with pytest.raises(InvalidRequest, match="the Authorization header holds a control character") as caught:
        outbound.library_client("http://127.0.0.1:9", what="Tracer", timeout=1.0, deadline=1.0, headers={"Authorization": "Bearer a\nb"})
    assert "Bearer" not in str(caught.value)


@pytest.fixture
def unused_port():
    return closed_port()


# Every body memlens's own clients read is capped before and after decompression
# (issue 52): a gzip bomb (2 MB on the wire, 2 GB inside) and an 80 MB answer stop at
# outbound.MAX_BODY_BYTES with one line naming the host, exit 2, never the key.
CAPPED = {"bomb": "decompresses to more than", "oversized": "a body larger than"}


@pytest.mark.parametrize("mode", list(CAPPED))
def test_the_model_client_stops_reading_a_bomb_or_an_oversized_answer_at_the_cap(mode):
    with HostileServer(mode=mode) as server:
        port = server.port
        client = _model(server.url() + "/v1", timeout=30.0)
        with pytest.raises(ConnectorError) as caught:
            client.complete([{"role": "user", "content": "hi"}])
        client.close()
    message = str(caught.value)
    assert CAPPED[mode] in message and f"{outbound.MAX_BODY_BYTES:,} bytes" in message, message
    assert f"127.0.0.1:{port}" in message and KEY not in message
    assert caught.value.exit_status == 2


@pytest.mark.parametrize("mode", list(CAPPED))
def test_an_http_store_stops_reading_a_bomb_or_an_oversized_answer_at_the_cap(mode, tmp_path):
    # the store as the agent side and every command open it: through the registry
    from connectors.registry import create_store

    with HostileServer(mode=mode) as server:
        port = server.port
        service = tmp_path / "service.toml"
        service.write_text(
            f'title = "Team memory"\nbase_url = "{server.url()}"\npath = "/search"\ntimeout = 30\nmax_retries = 0\n'
            '[request.body]\nquery = "{query}"\nk = "{k}"\n'
            '[response]\nresults = "results"\nid = "id"\ntext = "text"\nscore = "score"\n',
            encoding="utf-8",
        )
        store = create_store("http_json", {"config_path": str(service)})
        with pytest.raises(ConnectorError) as caught:
            store.query("what tea does sam like?", user_id=None, k=3)
        store.close()
    message = str(caught.value)
    assert message.startswith("Team memory at http://127.0.0.1:") and f":{port} answered POST /search with" in message, message
    assert CAPPED[mode] in message and caught.value.exit_status == 2
