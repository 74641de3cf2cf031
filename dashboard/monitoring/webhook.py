"""Posting a run's alerts to a webhook (Slack's incoming webhooks, or anything taking
JSON). The URL is a secret: it is never printed, logged or put in a message, and a
failed post is reported as what went wrong, not where. Pure (httpx, no streamlit)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when a post is made: most runs have no alert to post
    import httpx

WEBHOOK_ENV = "MEMLENS_MONITOR_WEBHOOK"
TIMEOUT_SECONDS = 10.0


def webhook_url(given: str | None, environ: dict[str, str] | None = None, secrets_files: list[Path] | None = None) -> str | None:
    """--webhook, else $MEMLENS_MONITOR_WEBHOOK, else MEMLENS_MONITOR_WEBHOOK in the
    Streamlit secrets file (./.streamlit/secrets.toml, then ~/.streamlit/secrets.toml)."""
    if given:
        return given
    environ = dict(os.environ) if environ is None else environ
    if environ.get(WEBHOOK_ENV, "").strip():
        return environ[WEBHOOK_ENV].strip()
    files = secrets_files if secrets_files is not None else [Path.cwd() / ".streamlit" / "secrets.toml", Path.home() / ".streamlit" / "secrets.toml"]
    for path in files:
        try:
            secrets = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        value = secrets.get(WEBHOOK_ENV)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def post(url: str, payload: dict[str, Any], *, client: httpx.Client | None = None, deadline: float = TIMEOUT_SECONDS) -> str | None:
    """Post `payload` as JSON through the outbound boundary (connectors/http/outbound:
    a total deadline, redirects only within the hook's own host); None when the hook
    took it (a 2xx), else what went wrong, without the URL. A 3xx is not a delivery:
    the hook moved, and the message names the host it moved to."""
    from connectors.base import ConnectorError, StoreTimeout, StoreUnavailable
    from connectors.http.outbound import outbound_client, request, terminal_line

    own = client is None
    client = client or outbound_client()
    try:
        response = request(client, "POST", url, what="the webhook", timeout=deadline, json=payload, secrets=[url])
    except StoreTimeout:
        return f"the webhook did not answer within {deadline:g} s"
    except StoreUnavailable as exc:
        cause = exc.__cause__
        return f"the webhook could not be reached ({type(cause).__name__ if cause else 'unknown error'})"
    except ConnectorError as exc:
        return terminal_line(str(exc))
    finally:
        if own:
            client.close()
    if not 200 <= response.status_code < 300:
        return f"the webhook refused the post (HTTP {response.status_code})"
    return None


def _probe(url: str, deadline: float) -> None:
    """One post through this module (the outbound registry's probe); a problem raises."""
    from connectors.base import BadResponse

    problem = post(url, {"text": "probe"}, deadline=deadline)
    if problem:
        raise BadResponse(problem)


def _register() -> None:
    from connectors.http.outbound import register_client

    register_client("webhook", _probe, __name__)


_register()
