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


def post(url: str, payload: dict[str, Any], *, client: httpx.Client | None = None) -> str | None:
    """Post `payload` as JSON; None when the hook took it, else what went wrong
    (without the URL, which httpx's own messages may quote)."""
    import httpx

    own = client is None
    client = client or httpx.Client(timeout=TIMEOUT_SECONDS)
    try:
        response = client.post(url, json=payload)
    except httpx.TimeoutException:
        return "the webhook did not answer in time"
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        return f"the webhook could not be reached ({type(exc).__name__})"
    finally:
        if own:
            client.close()
    if response.status_code >= 400:
        return f"the webhook refused the post (HTTP {response.status_code})"
    return None
