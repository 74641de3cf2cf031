"""A key configured for one host never goes to another: a visitor who changes the
store URL in the sidebar must enter a key of their own. Real loopback servers
record every request, so the test sees what reached the other host."""

from __future__ import annotations

import pytest
from demo_questions import THEME

from connectors.base import AuthFailed
from connectors.mem0.platform import open_platform
from connectors.registry import REGISTRY, configured_secret_allowed


@pytest.fixture
def other_host(demo_dir, tmp_path, memorysync_module):
    """A second server, standing in for a host the visitor controls."""
    server = memorysync_module.serve_copy_of(demo_dir / "demo.sqlite", tmp_path, api_key="visitor-own-key")
    yield server
    server.stop()


def keys_received(server) -> set[str]:
    return {r.headers.get("X-API-Key", "") for r in server.requests}


def test_changing_the_url_does_not_send_the_configured_key_there(app, ms_env, other_host):
    at = app(store="memorysync", query=THEME)
    at.run()
    assert at.session_state["result"].hits  # the configured host works with its key
    at.text_input(key="cfg_memorysync_base_url").input(other_host.url).run()
    assert ms_env.api_key not in keys_received(other_host)
    assert not at.exception
    # The page asks for a key for the new host instead, and says why.
    key_input = at.text_input(key="cfg_memorysync_api_key")
    assert key_input.proto.type == key_input.proto.PASSWORD
    assert any("sent only to the Base URL it was configured with" in c.value for c in at.sidebar.caption)
    key_input.input("visitor-own-key").run()
    assert keys_received(other_host) <= {"visitor-own-key"} and other_host.requests_to("/memory/query")
    assert ms_env.api_key not in keys_received(other_host)


def test_the_same_host_on_another_path_keeps_the_configured_key(ms_env):
    spec = REGISTRY["memorysync"]
    [secret] = [f for f in spec.fields if f.kind == "secret"]
    environ = {"MEMORYSYNC_BASE_URL": ms_env.url}
    assert configured_secret_allowed(spec, secret, ms_env.url + "/v2/", environ)
    assert not configured_secret_allowed(spec, secret, "http://127.0.0.1:1/", environ)
    assert not configured_secret_allowed(spec, secret, ms_env.url.replace("127.0.0.1", "localhost"), environ)


def test_the_quality_page_sends_nothing_to_a_remote_store_until_asked(app, ms_env):
    at = app(store="memorysync")
    at.run()
    at.switch_page("quality.py").run()
    assert not at.exception
    assert ms_env.requests_to("/memory/query") == []
    at.button(key="quality_run_demo").click().run()
    assert ms_env.requests_to("/memory/query")


def test_mem0_platform_takes_the_environment_key_only_for_its_configured_url(monkeypatch):
    monkeypatch.setenv("MEM0_API_KEY", "m0-configured-key")
    monkeypatch.delenv("MEMLENS_MEM0_URL", raising=False)
    with pytest.raises(AuthFailed, match="needs an API key"):
        open_platform(base_url="http://127.0.0.1:9/")
    open_platform(base_url="https://api.mem0.ai/").close()  # the configured host keeps its key
