"""`streamlit run` behind OpenID Connect sign-in, for the sign-in browser tests: an
[auth] section pointing at a local provider (oidc-provider-mock on loopback), in a
secrets file of the test's own, on a port the redirect URI names."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from conftest import Server, running_streamlit
from oidc_provider_mock import run_server_in_thread
from ports import free_port


@contextlib.contextmanager
def streamlit_behind_sign_in(tmp_path: Path) -> Iterator[Server]:
    """The app served from `tmp_path`/data, asking every visitor to sign in at the
    local provider first; provider and server are stopped when the block ends."""
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()  # the redirect URI must name it before the server starts
    with run_server_in_thread() as provider:
        secrets = tmp_path / "secrets.toml"
        secrets.write_text(
            "[auth]\n"
            f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
            'cookie_secret = "memlens-e2e-cookie-secret-0123456789"\n'
            'client_id = "memlens"\n'
            'client_secret = "memlens-e2e-client-secret"\n'
            f'server_metadata_url = "http://localhost:{provider.server_port}/.well-known/openid-configuration"\n'
        )
        args = ("--secrets.files", str(secrets))
        with running_streamlit(data, tmp_path / "streamlit.log", extra_args=args, port=port) as app:
            assert app.url.endswith(f":{port}")
            yield app
