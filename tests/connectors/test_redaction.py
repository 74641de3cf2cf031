"""Secrets never reach a message: echoed as a request id, straddling the cut of a
long message, inside a URL (user:password@, ?password=, several hosts) or an
exception chain. Client logic through httpx.MockTransport with a real MemorySync
connector."""

from __future__ import annotations

import httpx
import pytest

from connectors.base import AuthFailed, BadResponse
from connectors.common.redaction import exception_text, redact_text
from connectors.http.memorysync import MemorySyncStore

KEY = "sk-live-0123456789abcdefghijklmnopqrst"  # 36 characters
BASE = "https://api.memorysync.test/v1"


def store_answering(response: httpx.Response) -> MemorySyncStore:
    client = httpx.Client(transport=httpx.MockTransport(lambda request: response))
    return MemorySyncStore(BASE, KEY, end_user_id="sam", client=client, max_retries=0)


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(401, json={"error": {"code": "bad_key", "message": "no"}}, headers={"X-Request-ID": KEY}),
        httpx.Response(401, json={"error": {"code": "bad_key", "message": "no"}, "request_id": f"req-{KEY}"}),
        httpx.Response(500, json={"error": "boom", "request_id": KEY}),
    ],
    ids=["header", "body", "server-error"],
)
def test_a_key_echoed_as_the_request_id_is_not_shown(response):
    with pytest.raises((AuthFailed, BadResponse)) as caught:
        store_answering(response).query("q", user_id=None, k=5)
    shown = str(caught.value)
    assert "request id" in shown
    assert KEY not in shown and KEY[:12] not in shown and "***" in shown


def test_a_key_straddling_the_cut_of_a_long_message_leaves_no_prefix():
    filler = "x" * 285  # the key starts 15 characters before the 300-character cut
    response = httpx.Response(401, json={"error": {"message": f"{filler} {KEY} was revoked"}})
    with pytest.raises(AuthFailed) as caught:
        store_answering(response).query("q", user_id=None, k=5)
    shown = str(caught.value)
    assert KEY[:8] not in shown


def test_a_long_request_id_with_the_key_past_its_cut_leaves_no_prefix():
    request_id = "r" * 90 + KEY
    response = httpx.Response(401, json={"error": "bad_key"}, headers={"X-Request-ID": request_id})
    with pytest.raises(AuthFailed) as caught:
        store_answering(response).query("q", user_id=None, k=5)
    assert KEY[:8] not in str(caught.value)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("postgresql://memlens:hunter2secret@db.internal:5432/labels", "hunter2secret"),
        ("postgresql://db.internal/labels?user=memlens&password=hunter2secret", "hunter2secret"),
        ("postgresql://memlens:hunter2secret@db1:5432,db2:5433/labels", "hunter2secret"),
        ("host=db1 user=memlens password=hunter2secret dbname=labels", "hunter2secret"),
        ("https://api.example/?api_key=hunter2secret&k=5", "hunter2secret"),
    ],
)
def test_passwords_in_urls_and_connection_strings_are_redacted(text, secret):
    shown = redact_text(f"could not connect to {text}: refused")
    assert secret not in shown and "***" in shown and "refused" in shown


def test_an_exception_chain_is_redacted_at_every_link():
    try:
        try:
            raise OSError(f"connect to postgresql://u:hunter2secret@h1,h2/db failed with {KEY}")
        except OSError as inner:
            raise RuntimeError("label store failed") from inner
    except RuntimeError as outer:
        shown = exception_text(outer, [KEY])
    assert "label store failed" in shown and "OSError" in shown
    assert "hunter2secret" not in shown and KEY not in shown


# Issue 52: the forms memlens derives from a secret, and a secret broken up.
_PUBLIC, _SECRET = "pk-lf-PUBLIC-1234", "sk-lf-SECRET-5678"


@pytest.mark.parametrize("form", [
    "Basic " + __import__("base64").b64encode(f"{_PUBLIC}:{_SECRET}".encode()).decode(),  # the header memlens builds
    __import__("base64").b64encode(f"{_PUBLIC}:{_SECRET}".encode()).decode(),  # its credentials alone
    __import__("base64").b64encode(_SECRET.encode()).decode(),
    __import__("base64").urlsafe_b64encode(("x" + _SECRET).encode()).decode(),
    _SECRET[::-1],
    __import__("urllib.parse").parse.quote(f"{_PUBLIC}:{_SECRET}", safe=""),
    _SECRET[:6] + "\n" + _SECRET[6:],
    _SECRET[:6] + "\\n" + _SECRET[6:],
    _SECRET[:3] + "\\u000a" + _SECRET[3:],
    "Basic cGstbGYtUFVC",  # a header a server echoed cut short
])
def test_every_form_memlens_derives_from_a_secret_is_redacted(form):
    from connectors.common.redaction import redact_text

    text = redact_text(f"401: Received {form} (end)", [_PUBLIC, _SECRET])
    assert "***" in text and text.endswith(" (end)"), text
    for secret in (_PUBLIC, _SECRET, _SECRET[::-1], _SECRET[6:]):
        assert secret not in text, text


def test_ordinary_words_after_basic_or_bearer_are_kept():
    from connectors.common.redaction import redact_text

    text = "Basic authentication failed; send a Bearer token"
    assert redact_text(text, []) == text
